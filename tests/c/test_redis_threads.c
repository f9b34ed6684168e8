/*
 * tests/c/test_redis_threads.c: many threads on ONE Redis store handle.
 *
 * The Redis backend is called without the store's mutex, each command on a
 * connection of the store's pool (core/redis/pool.c), so these check what a
 * pool could break: no lost update, no mixed-up replies, no versionstamp
 * handed out twice, the key index in step, scripts loaded once by racing
 * threads, and connections killed by the server replaced. On a private
 * server (FUNCTION FLUSH and CLIENT KILL would disturb the shared one). No
 * timing assertions: only counts and values.
 *
 *  - THREADS threads, pool=3 (so callers wait for connections), after a
 *    FUNCTION FLUSH: each increments one shared counter, sets its own keys
 *    and reads each back (value and versionstamp), deletes every 4th,
 *    enqueues every 10th. Then: counter = THREADS x WRITES, every
 *    versionstamp unique, each thread's keys listed, the queue's count.
 *  - the same with the default pool (16: a connection per thread).
 *  - CLIENT KILL of every connection between two rounds: the reads of the
 *    second round all succeed (a dead idle connection is replaced).
 *  - pool=0 and pool=257 are refused, naming the option.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <pthread.h>

#include "bitt.h"
#include "expect.h"
#include "private_redis.h"
#include "scale.h"

#define THREADS 16
#define WRITES ts_scaled(400, 40) /* per thread; BITT_TEST_SCALE */
#define WRITES_MAX 400

static ts_server g_srv;
static redisContext *g_raw;

static int start_server(void **state)
{
    (void)state;
    return ts_redis_start(&g_srv, "rthr", &g_raw);
}

static int stop_server(void **state)
{
    (void)state;
    ts_redis_stop(&g_srv, &g_raw, "test_redis_threads");
    return 0;
}

static void raw(const char *cmd)
{
    redisReply *r = redisCommand(g_raw, cmd);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", cmd, r->str);
    freeReplyObject(r);
}

static bitt_store *open_store(const char *prefix, const char *options)
{
    char url[512];
    snprintf(url, sizeof url, "%s?prefix=%s%s", g_srv.url, prefix, options);
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("open %s: %d %s", url, rc, bitt_error_last());
    return s;
}

typedef struct worker {
    bitt_store *store;
    pthread_barrier_t *barrier;
    int id, writes, reads_only;
    uint64_t versions[2 * WRITES_MAX];
    size_t nversions;
    int failures;
    char message[300];
} worker;

static void failed(worker *w, const char *what, int i, int rc)
{
    if (w->failures++ == 0)
        snprintf(w->message, sizeof w->message, "%s %d: %d %s", what, i, rc, bitt_error_last());
}

/* The value thread id writes to key i: it names both, so a reply handed to
 * the wrong caller shows. */
static int value_of(char *buf, size_t size, int id, int i)
{
    return snprintf(buf, size, "value of thread %d, write %d", id, i);
}

static void read_back(worker *w, const char *key, int n, int i, uint64_t version)
{
    char want[64];
    int wn = value_of(want, sizeof want, w->id, i);
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(w->store, key, (size_t)n, &e);
    if (rc) {
        failed(w, "get", i, rc);
        return;
    }
    size_t len = 0;
    const uint8_t *v = bitt_entry_value(e, &len);
    if (len != (size_t)wn || memcmp(v, want, len) || (version && bitt_entry_version(e) != version))
        failed(w, "get read another value at", i, -1);
    bitt_entry_free(e);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->barrier);
    for (int i = 0; i < w->writes; i++) {
        char key[32], value[64];
        int n = snprintf(key, sizeof key, "w%02d/%04d", w->id, i);
        if (w->reads_only) {
            if (i % 4 != 3)
                read_back(w, key, n, i, 0);
            continue;
        }
        uint64_t version = 0;
        int rc = bitt_kv_increment(w->store, "n", 1, 1, BITT_TTL_NONE, NULL, &version);
        if (rc)
            failed(w, "increment", i, rc);
        else
            w->versions[w->nversions++] = version;
        int vn = value_of(value, sizeof value, w->id, i);
        rc = bitt_kv_set(w->store, key, (size_t)n, value, (size_t)vn, BITT_KIND_BYTES,
                         i % 2 ? 3600000 : BITT_TTL_NONE, &version);
        if (rc) {
            failed(w, "set", i, rc);
            continue;
        }
        w->versions[w->nversions++] = version;
        read_back(w, key, n, i, version);
        if (i % 4 == 3 && (rc = bitt_kv_delete(w->store, key, (size_t)n)) != BITT_OK)
            failed(w, "delete", i, rc);
        if (i % 10 == 0 && (rc = bitt_queue_enqueue(w->store, "jobs", value, (size_t)vn,
                                                    BITT_KIND_BYTES, NULL, NULL)) != BITT_OK)
            failed(w, "enqueue", i, rc);
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void run_workers(bitt_store *store, int threads, int reads_only)
{
    static worker w[THREADS];
    pthread_t tids[THREADS];
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, (unsigned)threads), 0);
    for (int i = 0; i < threads; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].store = store;
        w[i].barrier = &barrier;
        w[i].id = i;
        w[i].writes = WRITES;
        w[i].reads_only = reads_only;
        assert_int_equal(pthread_create(&tids[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&barrier);
    static uint64_t all[THREADS * 2 * WRITES_MAX];
    size_t count = 0;
    for (int i = 0; i < threads; i++) {
        if (w[i].failures)
            fail_msg("thread %d: %d failures, first: %s", i, w[i].failures, w[i].message);
        memcpy(all + count, w[i].versions, w[i].nversions * sizeof *all);
        count += w[i].nversions;
    }
    qsort(all, count, sizeof *all, cmp_u64);
    for (size_t i = 1; i < count; i++)
        if (all[i] == all[i - 1])
            fail_msg("versionstamp %llu was handed out twice", (unsigned long long)all[i]);
}

/* Every thread's live keys are listed: WRITES minus every 4th. */
static void expect_keys(bitt_store *store, int threads)
{
    int want = WRITES - WRITES / 4;
    for (int t = 0; t < threads; t++) {
        char prefix[16];
        int n = snprintf(prefix, sizeof prefix, "w%02d/", t);
        bitt_list_options o = BITT_LIST_OPTIONS_INIT;
        o.prefix = prefix;
        o.prefix_len = (size_t)n;
        o.limit = 1000;
        bitt_entries *list = NULL;
        assert_int_equal(bitt_kv_list(store, &o, &list), BITT_OK);
        if ((int)bitt_entries_count(list) != want)
            fail_msg("thread %d: %zu keys listed, want %d", t, bitt_entries_count(list), want);
        bitt_entries_free(list);
    }
}

static void expect_jobs(bitt_store *store, int threads)
{
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(store, "jobs", &st), BITT_OK);
    uint64_t want = (uint64_t)threads * (uint64_t)((WRITES + 9) / 10);
    if (st.pending != want)
        fail_msg("%llu jobs pending, want %llu", (unsigned long long)st.pending,
                 (unsigned long long)want);
}

static void test_small_pool_after_flush(void **state)
{
    (void)state;
    bitt_store *s = open_store("small", "&pool=3");
    /* Every thread's first call then finds no library: they race to load it. */
    raw("FUNCTION FLUSH");
    run_workers(s, THREADS, 0);
    ts_expect_counter(s, "n", (int64_t)THREADS * WRITES);
    expect_keys(s, THREADS);
    expect_jobs(s, THREADS);
    bitt_store_close(s);
}

static void test_default_pool(void **state)
{
    (void)state;
    bitt_store *s = open_store("dflt", "");
    run_workers(s, THREADS, 0);
    ts_expect_counter(s, "n", (int64_t)THREADS * WRITES);
    expect_keys(s, THREADS);
    bitt_store_close(s);
}

static void test_connections_killed(void **state)
{
    (void)state;
    bitt_store *s = open_store("kill", "&pool=4");
    run_workers(s, 8, 0);
    /* Every connection of the pool dies while idle; reads are sent again on
     * a new one, so none of the next round fails. */
    raw("CLIENT KILL TYPE normal SKIPME yes");
    run_workers(s, 8, 1);
    ts_expect_counter(s, "n", 8 * (int64_t)WRITES);
    bitt_store_close(s);
}

static void test_pool_option_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {"0", "257", "x", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char url[512];
        snprintf(url, sizeof url, "%s?pool=%s", g_srv.url, bad[i]);
        bitt_store *s = NULL;
        assert_int_equal(bitt_store_open(url, &s), BITT_EURL);
        assert_null(s);
        if (!strstr(bitt_error_last(), "pool"))
            fail_msg("pool=%s: the message does not name the option: %s", bad[i],
                     bitt_error_last());
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_pool_after_flush),
        cmocka_unit_test(test_default_pool),
        cmocka_unit_test(test_connections_killed),
        cmocka_unit_test(test_pool_option_refused),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
