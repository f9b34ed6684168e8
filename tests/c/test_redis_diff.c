/*
 * The Redis backend against the memory backend: the same random operations
 * on both (tests/c/support/diff.h), with manual clocks moving together, and
 * every status, entry, list page, versionstamp, message, lease, outbox
 * event, budget answer and schedule must be the same. Keys include NUL,
 * 0xff and pattern bytes; values include counters at the int64 edges. Ack
 * tokens are random per backend, so each side uses the token its own
 * delivery gave.
 *
 * The server: $BITT_TEST_REDIS_URL (scripts/test starts one). The run is
 * the same every time; $BITT_TEST_SEED picks another one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bitt.h"
#include "diff.h"

static const char *g_url;
static uint64_t g_rng = 0x2545f4914f6cdd1dULL;
static diff_ctx g_kv, g_modules; /* kept for the report at the end */

static uint32_t rnd(void *rng, uint32_t n)
{
    uint64_t *x = rng;
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (uint32_t)(*x % n);
}

static void fail_test(const char *msg)
{
    fail_msg("%s", msg);
}

static int need_server(void **state)
{
    (void)state;
    g_url = getenv("BITT_TEST_REDIS_URL");
    if (!g_url || !*g_url) {
        fprintf(stderr, "test_redis_diff: BITT_TEST_REDIS_URL is not set. Start a server with "
                        "scripts/redis-test-server start DIR and export the URL it prints "
                        "(scripts/test does both).\n");
        return -1;
    }
    const char *seed = getenv("BITT_TEST_SEED"); /* to replay or vary a run */
    if (seed && *seed)
        g_rng = strtoull(seed, NULL, 0) | 1;
    return 0;
}

static void open_pair(diff_ctx *c, const char *name, const char *options)
{
    assert_int_equal(diff_init(c, 2, rnd, &g_rng, fail_test), 0);
    char url[512];
    snprintf(url, sizeof url, "memory:%s%s", options[0] ? "?" : "", options);
    assert_int_equal(bitt_store_open(url, &c->s[0]), BITT_OK);
    snprintf(url, sizeof url, "%s?prefix=trd_%ld_%s%s%s", g_url, (long)getpid(), name,
             options[0] ? "&" : "", options);
    if (bitt_store_open(url, &c->s[1]))
        fail_msg("open %s: %s", url, bitt_error_last());
    c->names[0] = "memory";
    c->names[1] = "redis";
    diff_manual_clock(c, 1000000);
}

static void close_pair(diff_ctx *c)
{
    for (int i = 0; i < c->n; i++)
        bitt_pubsub_close(c->subs[i]), c->subs[i] = NULL;
    for (int i = 0; i < c->n; i++)
        bitt_store_close(c->s[i]);
}

static int report(void **state)
{
    (void)state;
    diff_report(&g_kv, stderr, "test_redis_diff (kv)");
    diff_report(&g_modules, stderr, "test_redis_diff (modules)");
    diff_free(&g_kv);
    diff_free(&g_modules);
    return 0;
}

static void test_kv(void **state)
{
    (void)state;
    diff_ctx *c = &g_kv;
    open_pair(c, "kv", "");
    for (c->step = 0; c->step < 4000; c->step++) {
        diff_kv_step(c);
        if (rnd(&g_rng, 8) == 0)
            diff_advance(c, rnd(&g_rng, 40));
    }
    close_pair(c);
}

static void test_modules(void **state)
{
    (void)state;
    diff_ctx *c = &g_modules;
    open_pair(c, "modules", "queue_backoff=5,10,20&pubsub_retention=200");
    diff_subscribe(c);
    for (c->step = 0; c->step < 5000; c->step++) {
        diff_module_step(c);
        if (rnd(&g_rng, 6) == 0)
            diff_advance(c, rnd(&g_rng, 4) == 0 ? rnd(&g_rng, 300) : rnd(&g_rng, 20));
    }
    close_pair(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv),
        cmocka_unit_test(test_modules),
    };
    return cmocka_run_group_tests(tests, need_server, report);
}
