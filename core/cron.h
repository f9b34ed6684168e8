/*
 * core/cron.h: 5-field cron expressions (UTC), parsed into bitsets and
 * stepped to their next occurrence. Pure functions: no clock, no store,
 * no time zone.
 *
 * Syntax (everything else is refused with BITT_EINVAL and a message that
 * names the field and the bad text):
 *   - five fields separated by spaces or tabs:
 *       minute (0-59) hour (0-23) day-of-month (1-31)
 *       month (1-12 or JAN-DEC) day-of-week (0-7, 0 and 7 are Sunday, or SUN-SAT);
 *     names are the three-letter English ones, in any case;
 *   - each field a comma list of items: `*`, `N`, `A-B` (A <= B, no
 *     wrap-around); `*` and `A-B` may be followed by `/S` (every S-th value
 *     from the start), and `N/S` means N-max/S;
 *   - day rule (Vixie cron): a day-of-month or day-of-week field that starts
 *     with `*` is unrestricted; when both are restricted a day matches if
 *     either matches, otherwise it must match both;
 *   - the macros @yearly and @annually (0 0 1 1 *), @monthly (0 0 1 * *),
 *     @weekly (0 0 * * 0), @daily and @midnight (0 0 * * *), @hourly (0 * * * *).
 * Refused: seconds or year fields (6 or 7 fields), L W # ?, @reboot, empty
 * items, reversed ranges, step 0 or wider than the field, names outside the
 * month and day-of-week fields, text over 256 bytes, and an expression that
 * can never fire ("0 0 30 2 *").
 *
 * Internal (hidden) API, like every bitt__ name.
 */
#ifndef BITT_CRON_H
#define BITT_CRON_H

#include <stdint.h>

/* The longest expression accepted, in bytes. */
#define BITT_CRON_MAX_LEN 256

/* The values each field allows, bit v set for value v. */
typedef struct bitt_cron {
    uint64_t minutes; /* bits 0-59 */
    uint32_t hours;   /* bits 0-23 */
    uint32_t mdays;   /* bits 1-31 */
    uint16_t months;  /* bits 1-12 */
    uint8_t wdays;    /* bits 0-6, 0 = Sunday */
    int mday_star;    /* the day-of-month field starts with '*' */
    int wday_star;    /* the day-of-week field starts with '*' */
} bitt_cron;

/* Parses expr into *out: BITT_OK, or BITT_EINVAL through bitt__fail (with
 * *out unspecified). */
int bitt__cron_parse(const char *expr, bitt_cron *out);

/* The first occurrence strictly after after_ms (ms since the Unix epoch,
 * UTC; occurrences are whole minutes), or INT64_MAX when there is none up
 * to the end of year 9999. */
int64_t bitt__cron_next(const bitt_cron *c, int64_t after_ms);

#endif
