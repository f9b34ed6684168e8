/* Tests of value kinds, counters and TTL arithmetic (core/value.c,
 * core/clock.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define S(lit) (const uint8_t *)(lit), (sizeof(lit) - 1)

static int parse(const char *text, int64_t *out)
{
    /* An exact-size heap copy: the parser must not look past len. */
    size_t n = strlen(text);
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, text, n);
    int rc = bitt__counter_parse(copy, n, out);
    free(copy);
    return rc;
}

static void test_counter_parse(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t value;
    } ok[] = {
        {"0", 0},
        {"1", 1},
        {"-1", -1},
        {"-5", -5},
        {"10", 10},
        {"42", 42},
        {"9223372036854775807", INT64_MAX},
        {"-9223372036854775808", INT64_MIN},
        {"9223372036854775806", INT64_MAX - 1},
        {"-9223372036854775807", INT64_MIN + 1},
        {"1000000000000000000", INT64_C(1000000000000000000)},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        int64_t v = 12345;
        assert_int_equal(parse(ok[k].text, &v), BITT_OK);
        assert_true(v == ok[k].value);
    }
    static const char *const bad[] = {
        "",
        "-",
        "-0",
        "+1",
        "+0",
        "01",
        "00",
        "-01",
        " 1",
        "1 ",
        "1\n",
        "1a",
        "a",
        "1.0",
        "1e3",
        "0x10",
        "--1",
        "9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999",
        "18446744073709551616",
        "-18446744073709551616",
        "92233720368547758070",
        "\xd9\xa1" /* Arabic-Indic one */,
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int64_t v = 12345;
        if (parse(bad[k], &v) != BITT_EINVAL)
            fail_msg("\"%s\" was accepted", bad[k]);
        assert_true(v == 12345);
        assert_int_equal(bitt_error_last_code(), BITT_EINVAL);
        assert_non_null(strstr(bitt_error_last(), "counter"));
    }
    /* Embedded NUL: the length counts, not the C string. */
    int64_t v;
    assert_int_equal(bitt__counter_parse((const uint8_t *)"1\0", 2, &v), BITT_EINVAL);
    assert_int_equal(bitt__counter_parse(NULL, 0, &v), BITT_EINVAL);
}

static void test_counter_format(void **state)
{
    (void)state;
    static const int64_t values[] = {0,
                                     1,
                                     -1,
                                     9,
                                     -9,
                                     10,
                                     -10,
                                     42,
                                     INT64_MAX,
                                     INT64_MIN,
                                     INT64_MAX - 1,
                                     INT64_MIN + 1,
                                     INT64_C(1000000000000000000)};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        char buf[21];
        memset(buf, 'x', sizeof buf);
        size_t n = bitt__counter_format(values[k], buf);
        char want[32];
        snprintf(want, sizeof want, "%" PRId64, values[k]);
        assert_int_equal(n, strlen(want));
        assert_string_equal(buf, want); /* NUL-terminated */
        int64_t back;
        assert_int_equal(bitt__counter_parse((const uint8_t *)buf, n, &back), BITT_OK);
        assert_true(back == values[k]);
    }
    char buf[21];
    assert_int_equal(bitt__counter_format(INT64_MIN, buf), 20);
    assert_string_equal(buf, "-9223372036854775808");

    /* Round trip over a spread of values. */
    uint64_t x = 0x243F6A8885A308D3u;
    for (int k = 0; k < 100000; k++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        int64_t v = (int64_t)(x >> (x & 63));
        if (x & 1)
            v = -v;
        size_t n = bitt__counter_format(v, buf);
        int64_t back;
        assert_int_equal(bitt__counter_parse((const uint8_t *)buf, n, &back), BITT_OK);
        assert_true(back == v);
    }
}

static void test_counter_add(void **state)
{
    (void)state;
    int64_t r = 0;
    assert_int_equal(bitt__counter_add(1, 2, &r), BITT_OK);
    assert_true(r == 3);
    assert_int_equal(bitt__counter_add(INT64_MAX, 0, &r), BITT_OK);
    assert_true(r == INT64_MAX);
    assert_int_equal(bitt__counter_add(INT64_MAX - 1, 1, &r), BITT_OK);
    assert_true(r == INT64_MAX);
    assert_int_equal(bitt__counter_add(INT64_MIN + 1, -1, &r), BITT_OK);
    assert_true(r == INT64_MIN);
    assert_int_equal(bitt__counter_add(INT64_MAX, INT64_MIN, &r), BITT_OK);
    assert_true(r == -1);
    assert_int_equal(bitt__counter_add(INT64_MIN, INT64_MAX, &r), BITT_OK);
    assert_true(r == -1);

    r = 77;
    assert_int_equal(bitt__counter_add(INT64_MAX, 1, &r), BITT_EOVERFLOW);
    assert_int_equal(bitt_error_last_code(), BITT_EOVERFLOW);
    assert_non_null(strstr(bitt_error_last(), "overflow"));
    assert_int_equal(bitt__counter_add(INT64_MIN, -1, &r), BITT_EOVERFLOW);
    assert_int_equal(bitt__counter_add(INT64_MAX, INT64_MAX, &r), BITT_EOVERFLOW);
    assert_int_equal(bitt__counter_add(INT64_MIN, INT64_MIN, &r), BITT_EOVERFLOW);
    assert_int_equal(bitt__counter_add(1, INT64_MAX, &r), BITT_EOVERFLOW);
    assert_int_equal(bitt__counter_add(-2, INT64_MIN + 1, &r), BITT_EOVERFLOW);
    assert_true(r == 77);
}

static void test_sum_apply(void **state)
{
    (void)state;
    char text[21];
    size_t len = 0;
    int64_t result = 0;

    /* Absent key: the result is delta. */
    assert_int_equal(bitt__sum_apply(0, 0, NULL, 0, -7, text, &len, &result), BITT_OK);
    assert_true(result == -7);
    assert_int_equal(len, 2);
    assert_string_equal(text, "-7");
    /* found == 0 ignores whatever kind/value came along. */
    assert_int_equal(bitt__sum_apply(0, BITT_KIND_JSON, S("{}"), INT64_MIN, text, &len, &result),
                     BITT_OK);
    assert_string_equal(text, "-9223372036854775808");
    assert_int_equal(len, 20);

    /* A counter. */
    assert_int_equal(bitt__sum_apply(1, BITT_KIND_COUNTER, S("40"), 2, text, &len, &result),
                     BITT_OK);
    assert_true(result == 42);
    assert_string_equal(text, "42");
    assert_int_equal(bitt__sum_apply(1, BITT_KIND_COUNTER, S("5"), -5, text, &len, &result),
                     BITT_OK);
    assert_string_equal(text, "0");
    assert_int_equal(len, 1);
    assert_int_equal(
        bitt__sum_apply(1, BITT_KIND_COUNTER, S("9223372036854775806"), 1, text, &len, &result),
        BITT_OK);
    assert_true(result == INT64_MAX);

    /* Overflow: nothing is reported as a result. */
    result = 99;
    assert_int_equal(
        bitt__sum_apply(1, BITT_KIND_COUNTER, S("9223372036854775807"), 1, text, &len, &result),
        BITT_EOVERFLOW);
    assert_true(result == 99);
    assert_int_equal(bitt_error_last_code(), BITT_EOVERFLOW);
    assert_int_equal(
        bitt__sum_apply(1, BITT_KIND_COUNTER, S("-9223372036854775808"), -1, text, &len, &result),
        BITT_EOVERFLOW);

    /* Other kinds. */
    assert_int_equal(bitt__sum_apply(1, BITT_KIND_JSON, S("1"), 1, text, &len, &result),
                     BITT_ENOTCOUNTER);
    assert_string_equal(bitt_error_last(), "value of kind json is not a counter");
    assert_int_equal(bitt_error_last_code(), BITT_ENOTCOUNTER);
    assert_int_equal(bitt__sum_apply(1, BITT_KIND_BYTES, S("1"), 1, text, &len, &result),
                     BITT_ENOTCOUNTER);
    assert_string_equal(bitt_error_last(), "value of kind bytes is not a counter");
    assert_int_equal(bitt__sum_apply(1, 9, S("1"), 1, text, &len, &result), BITT_ENOTCOUNTER);
    assert_string_equal(bitt_error_last(), "value of kind 9 is not a counter");
    /* A stored counter that is not canonical (a damaged row). */
    assert_int_equal(bitt__sum_apply(1, BITT_KIND_COUNTER, S("01"), 1, text, &len, &result),
                     BITT_ENOTCOUNTER);
    assert_true(result == 99);
}

static void test_value_check(void **state)
{
    (void)state;
    assert_int_equal(bitt__value_check(BITT_KIND_BYTES, NULL, 0), BITT_OK);
    assert_int_equal(bitt__value_check(BITT_KIND_BYTES, S("\xff\x00 anything")), BITT_OK);

    assert_int_equal(bitt__value_check(BITT_KIND_JSON, S("{\"a\":[1,2]}")), BITT_OK);
    assert_int_equal(bitt__value_check(BITT_KIND_JSON, S(" \"x\" ")), BITT_OK);
    assert_int_equal(bitt__value_check(BITT_KIND_JSON, S("{\"a\":[1,2]]")), BITT_EINVAL);
    assert_int_equal(bitt_error_last_code(), BITT_EINVAL);
    assert_string_equal(bitt_error_last(), "value is not valid JSON at byte 11");
    assert_int_equal(bitt__value_check(BITT_KIND_JSON, S("[1,")), BITT_EINVAL);
    assert_non_null(strstr(bitt_error_last(), "ends early"));
    assert_int_equal(bitt__value_check(BITT_KIND_JSON, NULL, 0), BITT_EINVAL);
    assert_non_null(strstr(bitt_error_last(), "empty"));

    assert_int_equal(bitt__value_check(BITT_KIND_COUNTER, S("-42")), BITT_OK);
    assert_int_equal(bitt__value_check(BITT_KIND_COUNTER, S("042")), BITT_EINVAL);
    assert_non_null(strstr(bitt_error_last(), "counter"));
    assert_int_equal(bitt__value_check(BITT_KIND_COUNTER, S("")), BITT_EINVAL);

    assert_int_equal(bitt__value_check(3, S("x")), BITT_EINVAL);
    assert_string_equal(bitt_error_last(), "unknown value kind 3");
    assert_int_equal(bitt__value_check(-1, S("x")), BITT_EINVAL);
    assert_string_equal(bitt_error_last(), "unknown value kind -1");
}

static void test_expiry(void **state)
{
    (void)state;
    assert_true(bitt__expiry(1000, BITT_TTL_NONE) == 0);
    assert_true(bitt__expiry(1000, 1) == 1001);
    assert_true(bitt__expiry(1700000000000, 60000) == 1700000060000);
    assert_true(bitt__expiry(0, 5) == 5);
    /* Saturation near 2^63. */
    assert_true(bitt__expiry(INT64_MAX - 10, 10) == INT64_MAX);
    assert_true(bitt__expiry(INT64_MAX - 10, 9) == INT64_MAX - 1);
    assert_true(bitt__expiry(INT64_MAX - 10, 11) == INT64_MAX);
    assert_true(bitt__expiry(INT64_MAX, 1) == INT64_MAX);
    assert_true(bitt__expiry(1700000000000, INT64_MAX) == INT64_MAX);
    assert_true(bitt__expiry(INT64_MAX, INT64_MAX) == INT64_MAX);
    assert_true(bitt__expiry(1, INT64_MAX - 1) == INT64_MAX);
    assert_true(bitt__expiry(2, INT64_MAX - 1) == INT64_MAX);
    /* A saturated expiry is live at every representable time but the last. */
    assert_true(bitt__live(bitt__expiry(INT64_MAX - 1, 5), INT64_MAX - 1));
    /* Times before the epoch (a manual clock): never lands on 0 = never. */
    assert_true(bitt__expiry(-5, 5) != 0);
    assert_true(bitt__expiry(-10, 5) == -5);
    assert_true(bitt__expiry(INT64_MIN, INT64_MAX) == -1);
    /* Liveness at the boundary: live while now < expiry. */
    int64_t at = bitt__expiry(1000, 10);
    assert_true(bitt__live(at, 1009));
    assert_false(bitt__live(at, 1010));
    assert_true(bitt__live(0, INT64_MAX));
}

static void test_system_now(void **state)
{
    (void)state;
    int64_t a = bitt__system_now();
    time_t secs = time(NULL);
    /* Within a few seconds of time(), and in ms. */
    assert_true(a / 1000 >= (int64_t)secs - 2 && a / 1000 <= (int64_t)secs + 2);
    assert_true(a > INT64_C(1600000000000));
    int64_t b = bitt__system_now();
    assert_true(b >= a - 1000); /* the wall clock may step, but not by much here */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_parse), cmocka_unit_test(test_counter_format),
        cmocka_unit_test(test_counter_add),   cmocka_unit_test(test_sum_apply),
        cmocka_unit_test(test_value_check),   cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_system_now),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
