/* 5-field cron expressions: parsing into bitsets, and the next occurrence
 * by integer calendar arithmetic (the syntax is stated in cron.h). */
#include <stdio.h>
#include <string.h>

#include "cron.h"
#include "internal.h"

/* ---- calendar ------------------------------------------------------------ */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return q - (a % b != 0 && (a < 0) != (b < 0));
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil): no libc, so no time zone and no time_t range. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int64_t y, int m)
{
    static const int days[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
        return 29;
    return days[m];
}

/* ---- parsing ------------------------------------------------------------- */

typedef struct field_spec {
    const char *name;
    int lo, hi;          /* the values written */
    int star_hi;         /* where '*' ends (day-of-week: 6, as 7 is 0 again) */
    const char *names;   /* 3-letter names for lo, lo+1, ..., or NULL */
    const char *a_names; /* how the names are listed in a message */
} field_spec;

static const field_spec fields[5] = {
    {"minute", 0, 59, 59, NULL, NULL},
    {"hour", 0, 23, 23, NULL, NULL},
    {"day-of-month", 1, 31, 31, NULL, NULL},
    {"month", 1, 12, 12, "JANFEBMARAPRMAYJUNJULAUGSEPOCTNOVDEC", "JAN-DEC"},
    {"day-of-week", 0, 7, 6, "SUNMONTUEWEDTHUFRISAT", "SUN-SAT"},
};

/* One field's text while it is parsed, for the messages. */
typedef struct field_text {
    const field_spec *spec;
    const char *start;
    size_t len;
} field_text;

static int field_fail(const field_text *f, const char *problem)
{
    return bitt__fail(BITT_EINVAL, "cron: %s field \"%.*s\": %s", f->spec->name, (int)f->len,
                      f->start, problem);
}

static int upper(int c)
{
    return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

static int is_alpha(int c)
{
    return upper(c) >= 'A' && upper(c) <= 'Z';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Whether the n bytes at p spell word (len bytes), in any case. */
static int same_word(const char *p, size_t n, const char *word, size_t len)
{
    if (n != len)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (upper(p[i]) != upper(word[i]))
            return 0;
    return 1;
}

/* The message for a character no item may hold here: the Quartz and
 * cronie extensions get their own, so the reader knows it is a choice. */
static int unexpected(const field_text *f, const char *p)
{
    char problem[96];
    switch (upper(*p)) {
    case 'L': return field_fail(f, "L (last day) is not supported");
    case 'W': return field_fail(f, "W (nearest weekday) is not supported");
    case '#': return field_fail(f, "# (nth weekday of the month) is not supported");
    case '?': return field_fail(f, "? is not supported (use *)");
    }
    if (*p == '\0' || *p == ',')
        return field_fail(f, "a value is missing");
    snprintf(problem, sizeof problem, "unexpected '%c' at offset %d of the field", *p,
             (int)(p - f->start));
    return field_fail(f, problem);
}

/* Reads a value (a number, or a name where the field has names) at *pp. */
static int read_value(const field_text *f, const char **pp, int *out)
{
    const char *p = *pp;
    char problem[96];
    if (is_digit(*p)) {
        long v = 0;
        while (is_digit(*p)) {
            if (v < 1000)
                v = v * 10 + (*p - '0');
            p++;
        }
        if (v < f->spec->lo || v > f->spec->hi) {
            snprintf(problem, sizeof problem, "%.*s is out of range %d-%d", (int)(p - *pp), *pp,
                     f->spec->lo, f->spec->hi);
            return field_fail(f, problem);
        }
        *pp = p;
        *out = (int)v;
        return BITT_OK;
    }
    if (!is_alpha(*p))
        return unexpected(f, p);
    while (is_alpha(*p))
        p++;
    size_t n = (size_t)(p - *pp);
    for (int k = 0; f->spec->names && f->spec->names[3 * k]; k++) {
        if (same_word(*pp, n, f->spec->names + 3 * k, 3)) {
            *pp = p;
            *out = f->spec->lo + k;
            return BITT_OK;
        }
    }
    if (same_word(*pp, n, "L", 1) || same_word(*pp, n, "W", 1) || same_word(*pp, n, "LW", 2))
        return unexpected(f, *pp);
    if (f->spec->names)
        snprintf(problem, sizeof problem, "unknown name \"%.*s\" (names are %s)", (int)n, *pp,
                 f->spec->a_names);
    else
        snprintf(problem, sizeof problem,
                 "\"%.*s\" is not a number (names are only for months "
                 "and days of the week)",
                 (int)n, *pp);
    return field_fail(f, problem);
}

/* Reads "/S" at *pp, if there, into *step (else leaves it 1). */
static int read_step(const field_text *f, const char **pp, int *step)
{
    const char *p = *pp;
    char problem[96];
    if (*p != '/')
        return BITT_OK;
    p++;
    if (!is_digit(*p)) {
        if (*p == '\0' || *p == ',')
            return field_fail(f, "a step is missing after '/'");
        return unexpected(f, p);
    }
    const char *digits = p;
    long v = 0;
    while (is_digit(*p)) {
        if (v < 1000)
            v = v * 10 + (*p - '0');
        p++;
    }
    int widest = f->spec->star_hi - f->spec->lo + 1;
    if (v == 0)
        return field_fail(f, "step 0 never advances");
    if (v > widest) {
        snprintf(problem, sizeof problem, "step %.*s is out of range 1-%d", (int)(p - digits),
                 digits, widest);
        return field_fail(f, problem);
    }
    *step = (int)v;
    *pp = p;
    return BITT_OK;
}

/* Parses one item at *pp into *set. */
static int parse_item(const field_text *f, const char **pp, uint64_t *set)
{
    const char *p = *pp;
    int a, b, step = 1, rc;
    char problem[96];
    if (*p == '*') {
        p++;
        a = f->spec->lo;
        b = f->spec->star_hi;
        if ((rc = read_step(f, &p, &step)) != BITT_OK)
            return rc;
    } else {
        if ((rc = read_value(f, &p, &a)) != BITT_OK)
            return rc;
        b = a;
        if (*p == '-') {
            p++;
            if ((rc = read_value(f, &p, &b)) != BITT_OK)
                return rc;
            if (b < a) {
                snprintf(problem, sizeof problem, "range %.*s is reversed (no wrap-around)",
                         (int)(p - *pp), *pp);
                return field_fail(f, problem);
            }
        }
        if (*p == '/') {
            if (b == a) /* N/S: from N to the field's end */
                b = f->spec->star_hi < a ? a : f->spec->star_hi;
            if ((rc = read_step(f, &p, &step)) != BITT_OK)
                return rc;
        }
    }
    if (*p != ',' && *p != '\0')
        return unexpected(f, p);
    /* A value past star_hi (day-of-week 7) is the field's first again. */
    for (int v = a; v <= b; v += step)
        *set |= (uint64_t)1 << (v > f->spec->star_hi ? f->spec->lo : v);
    *pp = p;
    return BITT_OK;
}

/* Parses one field (a NUL-terminated copy) into *set. */
static int parse_field(const field_spec *spec, const char *text, uint64_t *set, int *star)
{
    field_text f = {spec, text, strlen(text)};
    const char *p = text;
    *set = 0;
    *star = *p == '*';
    for (;;) {
        if (*p == ',' || *p == '\0')
            return field_fail(&f, "an item is empty");
        int rc = parse_item(&f, &p, set);
        if (rc != BITT_OK)
            return rc;
        if (*p == '\0')
            return BITT_OK;
        p++; /* the comma */
    }
}

static const struct {
    const char *name;
    const char *fields;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

static int is_blank(int c)
{
    return c == ' ' || c == '\t';
}

static int parse_fields(const char *expr, const char *text, bitt_cron *out);

static int parse_macro(const char *expr, const char *p, bitt_cron *out)
{
    const char *end = p;
    while (*end && !is_blank(*end))
        end++;
    size_t n = (size_t)(end - p);
    const char *rest = end;
    while (is_blank(*rest))
        rest++;
    for (size_t k = 0; k < sizeof macros / sizeof macros[0]; k++) {
        const char *name = macros[k].name;
        if (!same_word(p, n, name, strlen(name)))
            continue;
        if (*rest)
            return bitt__fail(BITT_EINVAL, "cron: %s takes no fields, found \"%s\" after it", name,
                              rest);
        return parse_fields(expr, macros[k].fields, out);
    }
    if (same_word(p, n, "@reboot", 7))
        return bitt__fail(BITT_EINVAL, "cron: @reboot is not supported: a schedule has no boot "
                                       "to run at");
    return bitt__fail(BITT_EINVAL,
                      "cron: unknown macro \"%.*s\" (supported: @yearly @annually @monthly "
                      "@weekly @daily @midnight @hourly)",
                      (int)n, p);
}

/* Whether some day can match: with the OR rule any day of the week does
 * (every month has each); else a chosen day of the month must exist in a
 * chosen month (Feb 29 does, in leap years). */
static int can_fire(const bitt_cron *c)
{
    if (!c->mday_star && !c->wday_star)
        return 1;
    for (int m = 1; m <= 12; m++) {
        int longest = m == 2 ? 29 : days_in_month(1, m);
        uint32_t possible = (uint32_t)(((uint64_t)1 << (longest + 1)) - 2);
        if ((c->months >> m & 1) && (c->mdays & possible))
            return 1;
    }
    return 0;
}

/* Splits text (the fields) at blanks and parses each; expr is the whole
 * expression, for the messages. */
static int parse_fields(const char *expr, const char *text, bitt_cron *out)
{
    char copy[BITT_CRON_MAX_LEN + 1];
    const char *field[8];
    int count = 0;
    size_t len = strlen(text);
    memcpy(copy, text, len + 1);
    for (char *p = copy; *p;) {
        while (is_blank(*p))
            *p++ = '\0';
        if (!*p)
            break;
        if (count < 8)
            field[count] = p;
        count++;
        while (*p && !is_blank(*p))
            p++;
    }
    if (count == 0)
        return bitt__fail(BITT_EINVAL, "cron: the expression is empty");
    if (count == 6 || count == 7)
        return bitt__fail(BITT_EINVAL,
                          "cron: \"%s\" has %d fields: only the 5 of minute hour day-of-month "
                          "month day-of-week are supported (no seconds or year field)",
                          expr, count);
    if (count != 5)
        return bitt__fail(BITT_EINVAL,
                          "cron: \"%s\" has %d field%s, expected 5 (minute hour day-of-month "
                          "month day-of-week)",
                          expr, count, count == 1 ? "" : "s");
    uint64_t set[5];
    int star[5], rc;
    for (int k = 0; k < 5; k++)
        if ((rc = parse_field(&fields[k], field[k], &set[k], &star[k])) != BITT_OK)
            return rc;
    out->minutes = set[0];
    out->hours = (uint32_t)set[1];
    out->mdays = (uint32_t)set[2];
    out->months = (uint16_t)set[3];
    out->wdays = (uint8_t)set[4];
    out->mday_star = star[2];
    out->wday_star = star[4];
    if (!can_fire(out))
        return bitt__fail(BITT_EINVAL,
                          "cron: \"%s\" never occurs: none of its days of the month exists in "
                          "its months",
                          expr);
    return BITT_OK;
}

int bitt__cron_parse(const char *expr, bitt_cron *out)
{
    if (!expr)
        return bitt__fail(BITT_EINVAL, "cron: the expression is NULL");
    size_t len = strnlen(expr, BITT_CRON_MAX_LEN + 1);
    if (len > BITT_CRON_MAX_LEN)
        return bitt__fail(BITT_EINVAL, "cron: the expression is longer than %d bytes",
                          BITT_CRON_MAX_LEN);
    /* Only printable ASCII and tabs, so every message quotes plain text. */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)expr[i];
        if ((c < 0x20 && c != '\t') || c >= 0x7f)
            return bitt__fail(BITT_EINVAL, "cron: byte 0x%02x at offset %zu is not printable ASCII",
                              c, i);
    }
    const char *p = expr;
    while (is_blank(*p))
        p++;
    if (*p == '@')
        return parse_macro(expr, p, out);
    return parse_fields(expr, expr, out);
}

/* ---- the next occurrence ------------------------------------------------- */

/* The lowest bit of set at or above from, or -1. */
static int next_bit(uint64_t set, int from)
{
    for (int b = from; b < 64; b++)
        if (set >> b & 1)
            return b;
    return -1;
}

static int day_matches(const bitt_cron *c, int64_t days, int mday)
{
    int wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday (4) */
    int dom = (int)(c->mdays >> mday & 1);
    int dow = c->wdays >> wday & 1;
    if (c->mday_star || c->wday_star)
        return dom && dow;
    return dom || dow;
}

/* Moves a date to the next day. */
static void next_day(int64_t *y, int *m, int *d)
{
    if (++*d <= days_in_month(*y, *m))
        return;
    *d = 1;
    if (++*m > 12)
        *m = 1, ++*y;
}

int64_t bitt__cron_next(const bitt_cron *c, int64_t after_ms)
{
    int64_t minute = floor_div(after_ms, 60000) + 1;
    int64_t days = floor_div(minute, 1440);
    int rest = (int)(minute - days * 1440), m, d;
    int64_t y;
    civil_from_days(days, &y, &m, &d);
    /* The first day tried starts at after's next minute, every later one at
     * 00:00. Months that do not match are skipped whole and days one step
     * each, so a year costs at most 12 + 366 steps. */
    for (int from = rest; y <= 9999; from = 0) {
        if (!(c->months >> m & 1)) {
            d = 1;
            if (++m > 12)
                m = 1, y++;
            continue;
        }
        int64_t day = days_from_civil(y, m, d);
        if (day_matches(c, day, d)) {
            int h = from / 60;
            int hour = next_bit(c->hours, h);
            int at = hour == h ? next_bit(c->minutes, from % 60) : -1;
            if (at < 0 && hour >= 0) { /* the first minute of a later hour */
                hour = next_bit(c->hours, hour == h ? hour + 1 : hour);
                at = next_bit(c->minutes, 0);
            }
            if (hour >= 0)
                return ((day * 24 + hour) * 60 + at) * 60000;
        }
        next_day(&y, &m, &d);
    }
    return INT64_MAX;
}
