/* Unit tests of the arithmetic every backend shares: the token bucket,
 * schedule advance, retry backoff and ack tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static const bitt_budget_params ten_per_second = {.capacity = 10, .refill = 10, .period_ms = 1000};

static void test_budget_starts_full_and_denies_with_exact_wait(void **state)
{
    (void)state;
    bitt_budget_state s = {0};
    int64_t wait = -1;
    for (int i = 0; i < 10; i++)
        assert_int_equal(bitt__budget_apply(&s, &ten_per_second, 1000, 1, &wait), BITT_OK);
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, 1000, 1, &wait), BITT_DENIED);
    assert_int_equal(wait, 100); /* one token per 100 ms */
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, 1099, 1, &wait), BITT_DENIED);
    assert_int_equal(wait, 1);
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, 1100, 1, &wait), BITT_OK);
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, 1100, 3, &wait), BITT_DENIED);
    assert_int_equal(wait, 300);
}

static void test_budget_refills_to_capacity_only(void **state)
{
    (void)state;
    bitt_budget_state s = {0};
    int64_t wait;
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, 0, 10, &wait), BITT_OK);
    /* A year later: full, not more, and no overflow. */
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, INT64_C(31536000000), 10, &wait),
                     BITT_OK);
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, INT64_C(31536000000), 1, &wait),
                     BITT_DENIED);
    /* A clock that steps back refills nothing and breaks nothing. */
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, 5, 1, &wait), BITT_DENIED);
    assert_int_equal(wait, 100);
}

static void test_budget_odd_rates_are_exact(void **state)
{
    (void)state;
    /* 3 tokens every 7 ms: after 7 ms exactly 3 tokens, never 2.99. */
    bitt_budget_params p = {.capacity = 5, .refill = 3, .period_ms = 7};
    bitt_budget_state s = {0};
    int64_t wait;
    assert_int_equal(bitt__budget_apply(&s, &p, 100, 5, &wait), BITT_OK);
    assert_int_equal(bitt__budget_apply(&s, &p, 100, 3, &wait), BITT_DENIED);
    assert_int_equal(wait, 7);
    assert_int_equal(bitt__budget_apply(&s, &p, 106, 3, &wait), BITT_DENIED);
    assert_int_equal(wait, 1);
    assert_int_equal(bitt__budget_apply(&s, &p, 107, 3, &wait), BITT_OK);
}

static void test_budget_period_change_keeps_tokens(void **state)
{
    (void)state;
    bitt_budget_state s = {0};
    int64_t wait;
    assert_int_equal(bitt__budget_apply(&s, &ten_per_second, 0, 6, &wait), BITT_OK); /* 4 left */
    bitt_budget_params per_minute = {.capacity = 10, .refill = 10, .period_ms = 60000};
    assert_int_equal(bitt__budget_apply(&s, &per_minute, 0, 4, &wait), BITT_OK);
    assert_int_equal(bitt__budget_apply(&s, &per_minute, 0, 1, &wait), BITT_DENIED);
    assert_int_equal(wait, 6000);
}

static void test_schedule_advance_skips_missed_occurrences(void **state)
{
    (void)state;
    assert_int_equal(bitt__schedule_advance(1000, 100, 999), 1000);
    assert_int_equal(bitt__schedule_advance(1000, 100, 1000), 1100);
    assert_int_equal(bitt__schedule_advance(1000, 100, 1099), 1100);
    assert_int_equal(bitt__schedule_advance(1000, 100, 1100), 1200);
    assert_int_equal(bitt__schedule_advance(1000, 100, 1950), 2000);
    assert_int_equal(bitt__schedule_advance(0, INT64_C(1) << 40, INT64_MAX - 1), INT64_MAX);
}

static void test_backoff_list_and_exponential(void **state)
{
    (void)state;
    bitt_backoff b;
    assert_int_equal(bitt__backoff_parse("100,250,1000", &b), BITT_OK);
    assert_int_equal(bitt__backoff_delay(&b, 1), 100);
    assert_int_equal(bitt__backoff_delay(&b, 2), 250);
    assert_int_equal(bitt__backoff_delay(&b, 3), 1000);
    assert_int_equal(bitt__backoff_delay(&b, 40), 1000);
    assert_int_equal(bitt__backoff_parse("exp:1000:5000", &b), BITT_OK);
    assert_int_equal(bitt__backoff_delay(&b, 1), 1000);
    assert_int_equal(bitt__backoff_delay(&b, 2), 2000);
    assert_int_equal(bitt__backoff_delay(&b, 3), 4000);
    assert_int_equal(bitt__backoff_delay(&b, 4), 5000);
    assert_int_equal(bitt__backoff_delay(&b, 4000000000u), 5000);
    const char *bad[] = {"",     ",",        "1,",       "a",         "-5",
                         "exp:", "exp:0:10", "exp:10:5", "exp:1:2:3", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(bitt__backoff_parse(bad[i], &b), BITT_EURL);
        assert_true(strstr(bitt_error_last(), "queue_backoff") != NULL);
    }
}

static void test_tokens_are_hex_and_distinct(void **state)
{
    (void)state;
    char a[BITT_TOKEN_LEN + 1], b[BITT_TOKEN_LEN + 1];
    bitt__token_new(a);
    bitt__token_new(b);
    assert_int_equal(strlen(a), BITT_TOKEN_LEN);
    assert_int_equal(strspn(a, "0123456789abcdef"), BITT_TOKEN_LEN);
    assert_string_not_equal(a, b);
}

/* Two processes forked from one that already made tokens must not hand
 * out the same ones. */
static void test_tokens_differ_across_fork(void **state)
{
    (void)state;
    char parent[BITT_TOKEN_LEN + 1], child[BITT_TOKEN_LEN + 1] = "";
    bitt__token_new(parent);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char t[BITT_TOKEN_LEN + 1];
        bitt__token_new(t);
        _exit(write(fds[1], t, sizeof t) == (ssize_t)sizeof t ? 0 : 1);
    }
    bitt__token_new(parent);
    assert_int_equal(read(fds[0], child, sizeof child), (ssize_t)sizeof child);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    assert_string_not_equal(parent, child);
}

static void test_names(void **state)
{
    (void)state;
    char long_name[BITT_NAME_MAX + 2];
    memset(long_name, 'a', sizeof long_name);
    long_name[BITT_NAME_MAX] = '\0';
    assert_int_equal(bitt__check_name(long_name, "topic"), BITT_OK);
    long_name[BITT_NAME_MAX] = 'a';
    long_name[BITT_NAME_MAX + 1] = '\0';
    assert_int_equal(bitt__check_name(long_name, "topic"), BITT_EINVAL);
    assert_int_equal(bitt__check_name("", "topic"), BITT_EINVAL);
    assert_int_equal(bitt__check_name(NULL, "topic"), BITT_EINVAL);
    assert_int_equal(bitt__check_name("\xc0\xaf", "topic"), BITT_EINVAL);
    assert_int_equal(bitt__check_name("caf\xc3\xa9 %_*", "topic"), BITT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_starts_full_and_denies_with_exact_wait),
        cmocka_unit_test(test_budget_refills_to_capacity_only),
        cmocka_unit_test(test_budget_odd_rates_are_exact),
        cmocka_unit_test(test_budget_period_change_keeps_tokens),
        cmocka_unit_test(test_schedule_advance_skips_missed_occurrences),
        cmocka_unit_test(test_backoff_list_and_exponential),
        cmocka_unit_test(test_tokens_are_hex_and_distinct),
        cmocka_unit_test(test_tokens_differ_across_fork),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
