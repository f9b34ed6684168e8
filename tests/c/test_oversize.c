/*
 * test_oversize.c: a size over a limit is refused before anything is read,
 * copied or allocated for it (scenario 8). Every call gets a 16-byte buffer
 * with a length of 4 TiB (or a count of 2^40 keys): a library that copied or
 * allocated first would crash, or answer BITT_ENOMEM, and an ASan build
 * aborts on the allocation itself. The answer must be BITT_ETOOLARGE with a
 * message, on every backend: memory, SQLite (in memory and a file),
 * PostgreSQL and Redis ($BITT_TEST_POSTGRES_URL, $BITT_TEST_REDIS_URL).
 * The value one byte over the limit is the contract's (kv_limits.json).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cmocka.h>

#include "bitt.h"

#define HUGE_LEN ((size_t)1 << 42)
#define HUGE_COUNT ((size_t)1 << 40)

static char g_file_url[1100];

static void expect_too_large(int rc, const char *call, const char *url)
{
    if (rc != BITT_ETOOLARGE)
        fail_msg("%s on %s: status %d, expected BITT_ETOOLARGE: %s", call, url, rc,
                 bitt_error_last());
    assert_int_equal(bitt_error_last_code(), BITT_ETOOLARGE);
    assert_true(bitt_error_last()[0] != '\0');
}

static void check_store(const char *url)
{
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s) != BITT_OK)
        fail_msg("open %s: %s", url, bitt_error_last());
    const char small[16] = "0123456789abcdef";
    expect_too_large(bitt_kv_set(s, "k", 1, small, HUGE_LEN, BITT_KIND_BYTES, 0, NULL),
                     "kv_set value", url);
    expect_too_large(bitt_kv_set(s, small, HUGE_LEN, "v", 1, BITT_KIND_BYTES, 0, NULL),
                     "kv_set key", url);
    bitt_entry *e = NULL;
    expect_too_large(bitt_kv_get(s, small, HUGE_LEN, &e), "kv_get key", url);
    assert_null(e);
    const void *keys[2] = {"a", "b"};
    const size_t lens[2] = {1, 1};
    bitt_entries *many = NULL;
    expect_too_large(bitt_kv_get_many(s, keys, lens, HUGE_COUNT, &many), "kv_get_many count", url);
    assert_null(many);

    bitt_txn *t = NULL;
    assert_int_equal(bitt_txn_begin(s, &t), BITT_OK);
    int rc = bitt_txn_set(t, "k", 1, small, HUGE_LEN, BITT_KIND_BYTES, 0);
    if (rc == BITT_OK)
        rc = bitt_txn_commit(t, NULL);
    expect_too_large(rc, "txn_set value", url);
    bitt_txn_free(t);

    expect_too_large(bitt_queue_enqueue(s, "t", small, HUGE_LEN, BITT_KIND_BYTES, NULL, NULL),
                     "queue_enqueue payload", url);
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = UINT32_MAX;
    bitt_messages *m = NULL;
    expect_too_large(bitt_queue_dequeue(s, "t", &o, &m), "queue_dequeue limit", url);
    assert_null(m);
    expect_too_large(bitt_outbox_append(s, "o", small, HUGE_LEN, BITT_KIND_BYTES, NULL),
                     "outbox_append event", url);
    expect_too_large(bitt_pubsub_publish(s, "c", small, HUGE_LEN), "pubsub_publish data", url);
    expect_too_large(bitt_schedule_upsert(s, "s", 1000, small, HUGE_LEN, BITT_KIND_BYTES, 0),
                     "schedule_upsert payload", url);

    /* Nothing was written by any of it. */
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_NOTFOUND);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    assert_int_equal(st.pending, 0);
    bitt_store_close(s);
}

static void test_memory(void **state)
{
    (void)state;
    check_store("memory:");
}

static void test_sqlite(void **state)
{
    (void)state;
    check_store("sqlite::memory:");
    check_store(g_file_url);
}

/* The server named by $env, in a namespace of this run (option=ovs<pid>). */
static void check_server(const char *env, const char *option)
{
    const char *base = getenv(env);
    if (!base)
        fail_msg("%s is not set (scripts/test starts the server)", env);
    char url[1024];
    snprintf(url, sizeof url, "%s?%s=ovs%ld", base, option, (long)getpid());
    check_store(url);
}

static void test_postgres(void **state)
{
    (void)state;
    check_server("BITT_TEST_POSTGRES_URL", "table_prefix");
}

static void test_redis(void **state)
{
    (void)state;
    check_server("BITT_TEST_REDIS_URL", "prefix");
}

int main(void)
{
    const char *tmp = getenv("BITT_TEST_TMP");
    if (tmp)
        mkdir(tmp, 0755); /* the first test program to run makes it */
    snprintf(g_file_url, sizeof g_file_url, "sqlite:%s/oversize-%ld.db", tmp ? tmp : "/tmp",
             (long)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_sqlite),
        cmocka_unit_test(test_postgres),
        cmocka_unit_test(test_redis),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(g_file_url + strlen("sqlite:"));
    return failed;
}
