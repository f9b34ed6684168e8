/*
 * times.c: the store's times (ms since the Unix epoch, UTC) and durations
 * (ms) as people read them. Both are exact, so a reader loses nothing to
 * the human form; the arithmetic is in int64 days rather than gmtime(), so
 * every int64 time has a form (the end of time is 292 million years away).
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"

#define MS_PER_DAY INT64_C(86400000)

/* The proleptic Gregorian date of a day number (0 = 1970-01-01), after
 * Howard Hinnant's civil_from_days: eras of 400 years of 146097 days. */
static void civil_from_days(int64_t z, int64_t *year, unsigned *month, unsigned *day)
{
    z += 719468; /* days from 0000-03-01, when a leap day ends a year */
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *day = doy - (153 * mp + 2) / 5 + 1;
    *month = mp < 10 ? mp + 3 : mp - 9;
    *year = (int64_t)yoe + era * 400 + (*month <= 2);
}

void cli_format_time(int64_t ms, char out[CLI_TIME_LEN])
{
    int64_t days = ms / MS_PER_DAY, rem = ms % MS_PER_DAY;
    if (rem < 0) { /* floor, for times before 1970 */
        days -= 1;
        rem += MS_PER_DAY;
    }
    int64_t year;
    unsigned month, day;
    civil_from_days(days, &year, &month, &day);
    unsigned secs = (unsigned)(rem / 1000), milli = (unsigned)(rem % 1000);
    /* ISO 8601 writes a year past 9999 (or before 0) with a sign. */
    const char *yfmt = year >= 0 && year <= 9999 ? "%04" PRId64 : "%+05" PRId64;
    int n = snprintf(out, CLI_TIME_LEN, yfmt, year);
    snprintf(out + n, (size_t)(CLI_TIME_LEN - n), "-%02u-%02uT%02u:%02u:%02u.%03uZ", month, day,
             secs / 3600, secs / 60 % 60, secs % 60, milli);
}

void cli_format_duration(int64_t ms, char out[CLI_TIME_LEN])
{
    static const struct {
        uint64_t ms;
        char unit;
    } units[] = {{86400000, 'd'}, {3600000, 'h'}, {60000, 'm'}};
    /* In uint64, so that INT64_MIN has a magnitude. */
    uint64_t v = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    size_t n = 0;
    if (ms < 0)
        out[n++] = '-';
    if (v < 1000) {
        snprintf(out + n, CLI_TIME_LEN - n, "%" PRIu64 "ms", v);
        return;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (v >= units[i].ms)
            n += (size_t)snprintf(out + n, CLI_TIME_LEN - n, "%" PRIu64 "%c", v / units[i].ms,
                                  units[i].unit);
        v %= units[i].ms;
    }
    out[n] = '\0';
    if (v == 0)
        return;
    n += (size_t)snprintf(out + n, CLI_TIME_LEN - n, "%" PRIu64, v / 1000);
    if (v % 1000) {
        /* The milliseconds as a fraction without its trailing zeros. */
        unsigned frac = (unsigned)(v % 1000), digits = 3;
        while (frac % 10 == 0) {
            frac /= 10;
            digits--;
        }
        n += (size_t)snprintf(out + n, CLI_TIME_LEN - n, ".%0*u", (int)digits, frac);
    }
    snprintf(out + n, CLI_TIME_LEN - n, "s");
}
