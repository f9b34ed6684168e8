/*
 * test_cron: the cron arithmetic of core/cron.c past what the contract's
 * clock reaches: leap years, month and year ends, the end of year 9999,
 * negative times, and the messages of refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cron.h"
#include "internal.h"

#define MIN 60000LL
#define DAY (1440 * MIN)

static int64_t next_of(const char *expr, int64_t after)
{
    bitt_cron c;
    assert_int_equal(bitt__cron_parse(expr, &c), BITT_OK);
    return bitt__cron_next(&c, after);
}

/* Days since 1970-01-01 of 2000-02-28, 2000-02-29 (a leap century), ... */
static void test_calendar_edges(void **state)
{
    (void)state;
    const int64_t d2000_02_28 = 11015, d2100_02_28 = 47540;
    /* 2000 is a leap year (divisible by 400), 2100 is not */
    assert_int_equal(next_of("0 0 29 2 *", d2000_02_28 * DAY), (d2000_02_28 + 1) * DAY);
    assert_int_equal(next_of("0 0 29 2 *", d2100_02_28 * DAY), 49001 * DAY); /* 2104-02-29 */
    /* the last minute of a year, then the first of the next */
    const int64_t d1971 = 365;
    assert_int_equal(next_of("59 23 31 12 *", 0), (d1971 - 1) * DAY + 1439 * MIN);
    assert_int_equal(next_of("* * * * *", d1971 * DAY - MIN), d1971 * DAY);
    /* strictly after: an occurrence at `after` itself is not it */
    assert_int_equal(next_of("0 * * * *", 0), 60 * MIN);
    assert_int_equal(next_of("0 * * * *", 1), 60 * MIN);
    /* before 1970: 1969-12-31 was a Wednesday */
    assert_int_equal(next_of("0 0 * * 3", -DAY - 1), -DAY);
}

static void test_end_of_time(void **state)
{
    (void)state;
    /* 9999 is not a leap year: no Feb 29 is left after 9996's */
    const int64_t d9999 = 2932532; /* 9999-01-01 */
    assert_int_equal(next_of("0 0 29 2 *", d9999 * DAY), INT64_MAX);
    assert_int_equal(next_of("* * * * *", INT64_MAX - 1), INT64_MAX);
    assert_int_equal(next_of("59 23 31 12 *", d9999 * DAY), (d9999 + 364) * DAY + 1439 * MIN);
}

static void test_refusals_name_the_field(void **state)
{
    (void)state;
    static const struct {
        const char *expr, *said;
    } cases[] = {
        {"61 * * * *", "minute field \"61\": 61 is out of range 0-59"},
        {"* * * FOO *", "unknown name \"FOO\" (names are JAN-DEC)"},
        {"* * L * *", "L (last day) is not supported"},
        {"0 0 * * * *", "has 6 fields"},
        {"@reboot", "@reboot is not supported"},
        {"0 0 30 2 *", "never occurs"},
        {"*/0 * * * *", "step 0 never advances"},
        {"3-1 * * * *", "range 3-1 is reversed"},
        {"* * * * \x01", "is not printable ASCII"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bitt_cron c;
        assert_int_equal(bitt__cron_parse(cases[i].expr, &c), BITT_EINVAL);
        if (!strstr(bitt_error_last(), cases[i].said))
            fail_msg("\"%s\": message \"%s\" does not say \"%s\"", cases[i].expr, bitt_error_last(),
                     cases[i].said);
    }
    char longer[BITT_CRON_MAX_LEN + 2];
    memset(longer, '1', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    bitt_cron c;
    assert_int_equal(bitt__cron_parse(longer, &c), BITT_EINVAL);
    assert_int_equal(bitt__cron_parse(NULL, &c), BITT_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calendar_edges),
        cmocka_unit_test(test_end_of_time),
        cmocka_unit_test(test_refusals_name_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
