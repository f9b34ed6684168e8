/*
 * tests/c/test_postgres_threads.c: many threads on ONE PostgreSQL store.
 *
 * The backend is called without the store's mutex, each call on a
 * connection of the store's pool (core/postgres/pool.c), so these check what
 * a pool could break: no lost update, no versionstamp handed out twice, no
 * reply read by the wrong caller, no more connections than `pool`, and
 * connections the server killed replaced. No timing assertions: only
 * counts and values.
 *
 *  - THREADS threads, pool=3 (callers wait for connections): each
 *    increments one shared counter, sets its own keys and reads each back
 *    (value and versionstamp), sets one key all threads set, enqueues every
 *    10th. Then: counter = THREADS x WRITES, every versionstamp unique, the
 *    shared key holds the value of the set with the highest versionstamp,
 *    the queue's count, and the server saw at most 3 sessions of the store.
 *  - the same with the default pool (16); and lone sets of threads that met
 *    shared transactions (core/postgres/set_group.c): fewer distinct xmin
 *    than rows among the keys each set once.
 *  - a group that fails fails each of its sets with the group's error, and
 *    writes none of them.
 *  - one thread keeps one connection (slots open as needed).
 *  - every session killed: each dead connection fails one call
 *    (BITT_EBACKEND), then its slot reconnects; all later calls succeed.
 *  - pool=0, pool=257 and pool=many are refused, naming the option.
 *
 * The server: $BITT_TEST_POSTGRES_URL. Each test uses a schema of its own,
 * dropped at the end.
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
#include <pthread.h>

#include "bitt.h"
#include "expect.h"
#include "scale.h"

#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#define HAVE_LIBPQ 1
#endif

#define THREADS 16
#define WRITES ts_scaled(150, 20) /* per thread; BITT_TEST_SCALE */
#define WRITES_MAX 150

static const char *g_url;

static int need_server(void **state)
{
    (void)state;
#ifndef HAVE_LIBPQ
    fprintf(stderr, "test_postgres_threads: this build has no libpq (the PostgreSQL backend is "
                    "not built): nothing to test against\n");
    return -1;
#else
    g_url = getenv("BITT_TEST_POSTGRES_URL");
    if (!g_url || !*g_url || strchr(g_url, '?')) {
        fprintf(stderr, "test_postgres_threads: BITT_TEST_POSTGRES_URL is not set (or has "
                        "options). Start a server with scripts/postgres-test-server start DIR and "
                        "export the URL it prints (scripts/test does both).\n");
        return -1;
    }
    return 0;
#endif
}

#ifdef HAVE_LIBPQ

static int g_serial;

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* A plain libpq connection for looking behind bitt's back. */
static PGconn *raw(void)
{
    PGconn *c = PQconnectdb(g_url);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("raw connection: %s", PQerrorMessage(c));
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

static int64_t raw_int(const char *sql)
{
    PGconn *c = raw();
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    int64_t v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return v;
}

/* A store on a schema and application_name of its own (the name lets the
 * server count its sessions); options are appended. */
typedef struct fixture {
    char schema[64];
    char app[64];
    bitt_store *store;
} fixture;

static bitt_store *store_open(const fixture *f, const char *options)
{
    char url[1024];
    /* connect_timeout=300: a pool of 16 opening at once under valgrind, on
     * a busy machine, can wait longer than the default 10 s for the server */
    snprintf(url, sizeof url, "%s?schema=%s&application_name=%s&connect_timeout=300%s", g_url,
             f->schema, f->app, options);
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("open %s: %d %s", url, rc, bitt_error_last());
    return s;
}

static void fixture_open(fixture *f, const char *options)
{
    snprintf(f->schema, sizeof f->schema, "thr_%ld_%d", (long)getpid(), g_serial);
    snprintf(f->app, sizeof f->app, "bitt_thr_%ld_%d", (long)getpid(), g_serial++);
    f->store = store_open(f, options);
}

static void fixture_close(fixture *f)
{
    bitt_store_close(f->store);
    char sql[128];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS \"%s\" CASCADE", f->schema);
    PGconn *c = raw();
    PQclear(PQexec(c, sql));
    PQfinish(c);
}

/* The server's sessions of f's store, or the pids killed with `how`. */
static int64_t sessions(const fixture *f, const char *how)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(%s) FROM pg_stat_activity WHERE application_name = '%s'",
             how ? how : "*", f->app);
    return raw_int(sql);
}

/* ---- workers ------------------------------------------------------------- */

typedef struct worker {
    bitt_store *store;
    pthread_barrier_t *barrier;
    int id;
    uint64_t versions[WRITES_MAX];
    uint64_t shared[WRITES_MAX]; /* versions of its sets of "shared" */
    char error[256];
} worker;

static void failed(worker *w, const char *what, int i, int rc)
{
    if (!w->error[0])
        snprintf(w->error, sizeof w->error, "thread %d, %s %d: %d %s", w->id, what, i, rc,
                 bitt_error_last());
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->barrier);
    for (int i = 0; i < WRITES && !w->error[0]; i++) {
        char key[32], value[32];
        int klen = snprintf(key, sizeof key, "t%d:%d", w->id, i);
        int vlen = snprintf(value, sizeof value, "v%d.%d", w->id, i);
        int rc = bitt_kv_increment(w->store, "n", 1, 1, 0, NULL, NULL);
        if (rc) {
            failed(w, "increment", i, rc);
            break;
        }
        rc = bitt_kv_set(w->store, key, (size_t)klen, value, (size_t)vlen, BITT_KIND_BYTES, 0,
                         &w->versions[i]);
        if (rc) {
            failed(w, "set", i, rc);
            break;
        }
        bitt_entry *e = NULL;
        rc = bitt_kv_get(w->store, key, (size_t)klen, &e);
        if (rc) {
            failed(w, "get", i, rc);
            break;
        }
        size_t len = 0;
        const uint8_t *got = bitt_entry_value(e, &len);
        if (len != (size_t)vlen || memcmp(got, value, len) ||
            bitt_entry_version(e) != w->versions[i])
            failed(w, "read back", i, -1);
        bitt_entry_free(e);
        rc = bitt_kv_set(w->store, "shared", 6, value, (size_t)vlen, BITT_KIND_BYTES, 0,
                         &w->shared[i]);
        if (rc)
            failed(w, "set shared", i, rc);
        if (i % 10 == 0 && (rc = bitt_queue_enqueue(w->store, "jobs", key, (size_t)klen,
                                                    BITT_KIND_BYTES, NULL, NULL)))
            failed(w, "enqueue", i, rc);
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* "shared" holds the value of the set that got the highest versionstamp. */
static void expect_last_shared(bitt_store *store, const worker *w, int threads)
{
    int last_t = 0, last_i = 0;
    for (int t = 0; t < threads; t++)
        for (int i = 0; i < WRITES; i++)
            if (w[t].shared[i] > w[last_t].shared[last_i])
                last_t = t, last_i = i;
    char value[32];
    int vlen = snprintf(value, sizeof value, "v%d.%d", last_t, last_i);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(store, "shared", 6, &e), BITT_OK);
    size_t len = 0;
    const uint8_t *got = bitt_entry_value(e, &len);
    if (bitt_entry_version(e) != w[last_t].shared[last_i] || len != (size_t)vlen ||
        memcmp(got, value, len))
        fail_msg("\"shared\" is %.*s at version %llu; the last set was %s at %llu", (int)len,
                 (const char *)got, (unsigned long long)bitt_entry_version(e), value,
                 (unsigned long long)w[last_t].shared[last_i]);
    bitt_entry_free(e);
}

static void run_workers(bitt_store *store, int threads)
{
    static worker w[THREADS];
    static uint64_t all[2 * THREADS * WRITES_MAX];
    pthread_t th[THREADS];
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, (unsigned)threads), 0);
    for (int t = 0; t < threads; t++) {
        memset(&w[t], 0, sizeof w[t]);
        w[t] = (worker){.store = store, .barrier = &barrier, .id = t};
        assert_int_equal(pthread_create(&th[t], NULL, worker_main, &w[t]), 0);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&barrier);
    size_t n = 0;
    for (int t = 0; t < threads; t++) {
        if (w[t].error[0])
            fail_msg("%s", w[t].error);
        for (int i = 0; i < WRITES; i++)
            all[n++] = w[t].versions[i];
    }
    expect_last_shared(store, w, threads);
    for (int t = 0; t < threads; t++)
        for (int i = 0; i < WRITES; i++)
            all[n++] = w[t].shared[i];
    qsort(all, n, sizeof *all, cmp_u64);
    for (size_t i = 1; i < n; i++)
        if (all[i] == all[i - 1])
            fail_msg("versionstamp %llu handed out twice", (unsigned long long)all[i]);

    ts_expect_counter(store, "n", (int64_t)threads * WRITES);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(store, "jobs", &st), BITT_OK);
    assert_int_equal(st.pending, (uint64_t)threads * (uint64_t)((WRITES + 9) / 10));
}

/* ---- tests --------------------------------------------------------------- */

static void test_small_pool(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, "&pool=3");
    run_workers(f.store, THREADS);
    int64_t n = sessions(&f, NULL);
    if (n < 1 || n > 3)
        fail_msg("pool=3, %d threads: the server saw %lld sessions", THREADS, (long long)n);
    fixture_close(&f);
}

static void test_default_pool(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, "");
    run_workers(f.store, THREADS);
    int64_t n = sessions(&f, NULL);
    if (n < 1 || n > 16)
        fail_msg("default pool, %d threads: the server saw %lld sessions", THREADS, (long long)n);
    /* Each t<id>:<i> key was set once, by a transaction of its own unless
     * its set met others: rows - distinct xmin = sets that shared one. */
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) - count(DISTINCT xmin::text) FROM \"%s\".kv "
             "WHERE substr(key, 1, 1) = 't'::bytea",
             f.schema);
    if (raw_int(sql) < 1)
        fail_msg("%d threads setting keys: no two sets shared a transaction", THREADS);
    fixture_close(&f);
}

static void test_one_thread_one_connection(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, "");
    run_workers(f.store, 1);
    assert_int_equal(sessions(&f, NULL), 1);
    fixture_close(&f);
}

static void test_killed_sessions_replaced(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, "&pool=4");
    run_workers(f.store, THREADS);
    int64_t open = sessions(&f, NULL);
    assert_int_equal(sessions(&f, "pg_terminate_backend(pid)"), open);
    /* Each dead connection fails the one call that finds it, then its slot
     * connects again: at most `open` failures, then none. */
    int failures = 0;
    for (int i = 0; i < 12; i++) {
        int rc = bitt_kv_increment(f.store, "n", 1, 1, 0, NULL, NULL);
        if (rc == BITT_EBACKEND && i < open)
            failures++;
        else if (rc)
            fail_msg("call %d after the kill: %d %s", i, rc, bitt_error_last());
    }
    assert_true(failures <= open);
    /* A failed call wrote nothing; the others each added one. */
    ts_expect_counter(f.store, "n", (int64_t)THREADS * WRITES + 12 - failures);
    fixture_close(&f);
}

typedef struct blocked_set {
    bitt_store *store;
    pthread_barrier_t *barrier;
    int id, rc;
    char error[256];
} blocked_set;

static void *blocked_set_main(void *arg)
{
    blocked_set *b = arg;
    char key[32];
    int klen = snprintf(key, sizeof key, "b%d", b->id);
    pthread_barrier_wait(b->barrier);
    b->rc = bitt_kv_set(b->store, key, (size_t)klen, "v", 1, BITT_KIND_BYTES, 0, NULL);
    snprintf(b->error, sizeof b->error, "%s", bitt_error_last());
    return NULL;
}

static void test_failed_group_fails_each_set(void **state)
{
    (void)state;
    fixture f;
    /* The tables are made under the default timeout (that can take longer
     * than 300 ms on a busy disk), then the store opened again with 300. */
    fixture_open(&f, "");
    assert_int_equal(bitt_kv_set(f.store, "made", 4, "v", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    bitt_store_close(f.store);
    f.store = store_open(&f, "&statement_timeout=300");
    /* Every upsert waits for this lock until its statement times out. */
    PGconn *c = raw();
    char sql[128];
    snprintf(sql, sizeof sql, "BEGIN; LOCK TABLE \"%s\".kv IN ACCESS EXCLUSIVE MODE", f.schema);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    static blocked_set b[THREADS];
    pthread_t th[THREADS];
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, THREADS), 0);
    for (int t = 0; t < THREADS; t++) {
        b[t] = (blocked_set){.store = f.store, .barrier = &barrier, .id = t};
        assert_int_equal(pthread_create(&th[t], NULL, blocked_set_main, &b[t]), 0);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&barrier);
    PQclear(PQexec(c, "ROLLBACK"));
    PQfinish(c);
    for (int t = 0; t < THREADS; t++)
        if (b[t].rc != BITT_EBUSY || !strstr(b[t].error, "statement timeout"))
            fail_msg("set %d under the lock: %d \"%s\" (want BITT_EBUSY, the timeout)", t, b[t].rc,
                     b[t].error);
    /* None was written; the store works again. */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM \"%s\".kv", f.schema);
    assert_int_equal(raw_int(sql), 1);
    assert_int_equal(bitt_kv_set(f.store, "b0", 2, "w", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    fixture_close(&f);
}

static void test_pool_option_refused(void **state)
{
    (void)state;
    const char *bad[] = {"0", "257", "many"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char url[1024];
        snprintf(url, sizeof url, "%s?pool=%s", g_url, bad[i]);
        bitt_store *s = NULL;
        assert_int_equal(bitt_store_open(url, &s), BITT_EURL);
        assert_null(s);
        if (!strstr(bitt_error_last(), "pool"))
            fail_msg("pool=%s: the message \"%s\" does not name the option", bad[i],
                     bitt_error_last());
    }
}

#endif /* HAVE_LIBPQ */

int main(void)
{
#ifdef HAVE_LIBPQ
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_pool),
        cmocka_unit_test(test_default_pool),
        cmocka_unit_test(test_one_thread_one_connection),
        cmocka_unit_test(test_killed_sessions_replaced),
        cmocka_unit_test(test_failed_group_fails_each_set),
        cmocka_unit_test(test_pool_option_refused),
    };
    return cmocka_run_group_tests(tests, need_server, NULL);
#else
    return need_server(NULL) ? 1 : 0;
#endif
}
