/*
 * tests/c/test_redis_batch.c: bitt_batch_run, many calls of one thread in
 * flight at once (core/batch.c).
 *
 *  - memory: 200 tasks (more than BITT_BATCH_AT_ONCE) each run exactly
 *    once, one after the other (a memory call never waits), and write
 *    what they should;
 *  - Redis (private server, pool=1): 64 tasks overlap (task 1 starts
 *    before task 0 ends: task 0 was suspended on the network), sets, gets
 *    and increments are exact, and the tasks' 64 calls went out on a few
 *    shared connections; failing tasks (increment of a bytes value) each
 *    read their own message while other tasks ran in between; the sets of
 *    40 tasks go out in a few script calls (core/redis/set_group.c), each
 *    with its own versionstamp, expiry and index entry, and the set the
 *    server refuses (a key of another type) fails alone; a paused server
 *    fails every set of a group with the timeout, none left waiting;
 *  - PostgreSQL (BITT_TEST_POSTGRES_URL): tasks run one after the other through
 *    the store's pool without deadlock, values exact;
 *  - arguments: NULL fn, n = 0, a nested call from a task, a batch on a
 *    thread that then exits (its kept stacks are freed: ASan/valgrind).
 * No timing assertions.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "bitt.h"
#include "private_redis.h"

#define MAX_TASKS 256

typedef struct task_rec {
    int runs;
    int start, end; /* sequence numbers: the order tasks began and ended */
    int rc;
    char message[256];
} task_rec;

typedef struct run {
    bitt_store *store;
    task_rec t[MAX_TASKS];
    int seq;
} run;

static void record_failure(task_rec *r, int rc)
{
    r->rc = rc;
    snprintf(r->message, sizeof r->message, "%s", bitt_error_last());
}

static int value_of(char *buf, size_t size, size_t i)
{
    return snprintf(buf, size, "task %zu wrote this", i);
}

/* Task i: set k<i>, increment "n", read k<i> back. */
static int writer(void *arg, size_t i)
{
    run *r = arg;
    task_rec *me = &r->t[i];
    me->runs++;
    me->start = r->seq++;
    char key[16], value[32];
    int kn = snprintf(key, sizeof key, "k%03zu", i);
    int vn = value_of(value, sizeof value, i);
    uint64_t version = 0;
    int rc = bitt_kv_set(r->store, key, (size_t)kn, value, (size_t)vn, BITT_KIND_BYTES,
                         BITT_TTL_NONE, &version);
    if (rc == BITT_OK)
        rc = bitt_kv_increment(r->store, "n", 1, 1, BITT_TTL_NONE, NULL, NULL);
    bitt_entry *e = NULL;
    if (rc == BITT_OK)
        rc = bitt_kv_get(r->store, key, (size_t)kn, &e);
    if (rc != BITT_OK) {
        record_failure(me, rc);
    } else {
        size_t len = 0;
        const void *v = bitt_entry_value(e, &len);
        if (len != (size_t)vn || memcmp(v, value, len) || bitt_entry_version(e) != version)
            rc = 999; /* not a bitt status: check_writers says which */
        me->rc = rc;
        bitt_entry_free(e);
    }
    me->end = r->seq++;
    return rc;
}

static bitt_store *open_url(const char *fmt, ...)
{
    char url[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(url, sizeof url, fmt, ap);
    va_end(ap);
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("open %s: %d %s", url, rc, bitt_error_last());
    return s;
}

static void check_writers(run *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (r->t[i].runs != 1 || r->t[i].rc != BITT_OK)
            fail_msg("task %zu: ran %d times, rc %d %s", i, r->t[i].runs, r->t[i].rc,
                     r->t[i].message);
    }
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(r->store, "n", 1, &e), BITT_OK);
    int64_t count = 0;
    assert_int_equal(bitt_entry_counter(e, &count), BITT_OK);
    assert_int_equal(count, (int64_t)n);
    bitt_entry_free(e);
}

static void test_memory_runs_each_task_once_in_turn(void **state)
{
    (void)state;
    static run r;
    memset(&r, 0, sizeof r);
    r.store = open_url("memory:");
    size_t n = 200;
    assert_true(n > BITT_BATCH_AT_ONCE);
    assert_int_equal(bitt_batch_run(writer, &r, n), BITT_OK);
    check_writers(&r, n);
    for (size_t i = 1; i < n; i++) /* nothing waits: one task after the other */
        assert_true(r.t[i].start > r.t[i - 1].end);
    bitt_store_close(r.store);
}

static void test_arguments(void **state)
{
    (void)state;
    assert_int_equal(bitt_batch_run(NULL, NULL, 3), BITT_EINVAL);
    assert_non_null(strstr(bitt_error_last(), "fn"));
    static run r;
    memset(&r, 0, sizeof r);
    assert_int_equal(bitt_batch_run(writer, &r, 0), BITT_OK);
    assert_int_equal(r.seq, 0);
}

static int nested(void *arg, size_t i)
{
    run *r = arg;
    r->t[i].runs++;
    int rc = bitt_batch_run(writer, r, 1);
    record_failure(&r->t[i], rc);
    return rc;
}

static void test_nested_call_is_refused(void **state)
{
    (void)state;
    static run r;
    memset(&r, 0, sizeof r);
    assert_int_equal(bitt_batch_run(nested, &r, 2), BITT_EUSAGE); /* task 0's */
    assert_non_null(strstr(bitt_error_last(), "from a running task"));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r.t[i].runs, 1);
        assert_int_equal(r.t[i].rc, BITT_EUSAGE);
        assert_non_null(strstr(r.t[i].message, "from a running task"));
    }
    /* the thread is usable as before */
    r.store = open_url("memory:");
    assert_int_equal(bitt_batch_run(writer, &r, 2), BITT_OK);
    bitt_store_close(r.store);
}

static void *batch_thread(void *arg)
{
    run *r = arg;
    r->t[MAX_TASKS - 1].rc = bitt_batch_run(writer, r, 8);
    return NULL;
}

static void test_thread_exit_frees_kept_stacks(void **state)
{
    (void)state;
    static run r;
    memset(&r, 0, sizeof r);
    r.store = open_url("memory:");
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, batch_thread, &r), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(r.t[MAX_TASKS - 1].rc, BITT_OK);
    check_writers(&r, 8);
    bitt_store_close(r.store);
}

/* ---- Redis --------------------------------------------------------------------------- */
static ts_server g_redis;
static redisContext *g_raw;
static int g_redis_up;

static long long redis_stat(const char *field)
{
    redisReply *rep = redisCommand(g_raw, "INFO stats");
    assert_non_null(rep);
    const char *p = strstr(rep->str, field);
    assert_non_null(p);
    long long v = atoll(p + strlen(field));
    freeReplyObject(rep);
    return v;
}

static void test_redis_tasks_overlap_on_shared_connections(void **state)
{
    (void)state;
    if (!g_redis_up)
        g_redis_up = ts_redis_start(&g_redis, "batch", &g_raw) == 0;
    assert_true(g_redis_up);
    static run r;
    memset(&r, 0, sizeof r);
    r.store = open_url("%s?prefix=batch&pool=1", g_redis.url);
    long long before = redis_stat("total_connections_received:");
    size_t n = BITT_BATCH_AT_ONCE;
    assert_int_equal(bitt_batch_run(writer, &r, n), BITT_OK);
    long long made = redis_stat("total_connections_received:") - before;
    check_writers(&r, n);
    assert_true(r.t[1].start < r.t[0].end); /* task 0 was suspended on its socket */
    if (!(made >= 1 && made < (long long)n / 4))
        fail_msg("%lld connections for %zu tasks", made, n);
    bitt_store_close(r.store);
}

/* Odd tasks increment a bytes value (the server refuses); even ones set. */
static int mixed(void *arg, size_t i)
{
    run *r = arg;
    task_rec *me = &r->t[i];
    me->runs++;
    int rc;
    if (i % 2) {
        rc = bitt_kv_increment(r->store, "bytes", 5, 1, BITT_TTL_NONE, NULL, NULL);
    } else {
        char key[16];
        int kn = snprintf(key, sizeof key, "m%03zu", i);
        rc = bitt_kv_set(r->store, key, (size_t)kn, "v", 1, BITT_KIND_BYTES, BITT_TTL_NONE, NULL);
    }
    record_failure(me, rc);
    return rc;
}

static void test_redis_each_task_keeps_its_error(void **state)
{
    (void)state;
    assert_true(g_redis_up);
    static run r;
    memset(&r, 0, sizeof r);
    r.store = open_url("%s?prefix=batcherr&pool=2", g_redis.url);
    assert_int_equal(bitt_kv_set(r.store, "bytes", 5, "x", 1, BITT_KIND_BYTES, BITT_TTL_NONE, NULL),
                     BITT_OK);
    size_t n = 40;
    /* task 1's failure is the run's, with its message */
    assert_int_equal(bitt_batch_run(mixed, &r, n), BITT_ENOTCOUNTER);
    assert_string_equal(bitt_error_last(), r.t[1].message);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(r.t[i].runs, 1);
        if (i % 2) {
            assert_int_equal(r.t[i].rc, BITT_ENOTCOUNTER);
            assert_true(r.t[i].message[0] != '\0');
        } else {
            assert_int_equal(r.t[i].rc, BITT_OK);
            assert_string_equal(r.t[i].message, "");
        }
    }
    bitt_store_close(r.store);
}

/* Task i sets g<i> (every 5th with a TTL); "bad" holds a plain string. */
static int grouped_setter(void *arg, size_t i)
{
    run *r = arg;
    task_rec *me = &r->t[i];
    me->runs++;
    char key[16];
    int kn = i == 7 ? snprintf(key, sizeof key, "bad") : snprintf(key, sizeof key, "g%03zu", i);
    uint64_t version = 0;
    int rc = bitt_kv_set(r->store, key, (size_t)kn, key, (size_t)kn, BITT_KIND_BYTES,
                         i % 5 ? BITT_TTL_NONE : 60000, &version);
    record_failure(me, rc);
    me->start = (int)version; /* the versionstamp, checked below */
    return rc;
}

static long long fcall_calls(void)
{
    redisReply *rep = redisCommand(g_raw, "INFO commandstats");
    assert_non_null(rep);
    const char *p = strstr(rep->str, "cmdstat_fcall:calls=");
    long long v = p ? atoll(p + strlen("cmdstat_fcall:calls=")) : 0;
    freeReplyObject(rep);
    return v;
}

/* Sets of tasks started together go out as one script call; each keeps its
 * own versionstamp, and the one the server refuses fails alone. */
static void test_redis_sets_of_a_batch_share_a_script_call(void **state)
{
    (void)state;
    assert_true(g_redis_up);
    static run r;
    memset(&r, 0, sizeof r);
    r.store = open_url("%s?prefix=grp", g_redis.url);
    redisReply *rep = redisCommand(g_raw, "SET {grp}:k:bad plain");
    assert_non_null(rep);
    freeReplyObject(rep);
    long long before = fcall_calls();
    size_t n = 40;
    assert_int_equal(bitt_batch_run(grouped_setter, &r, n), BITT_EBACKEND); /* task 7's */
    long long calls = fcall_calls() - before;
    if (calls < 1 || calls > 4)
        fail_msg("%lld script calls for %zu sets", calls, n);
    for (size_t i = 0; i < n; i++) {
        if (i == 7) {
            assert_int_equal(r.t[i].rc, BITT_EBACKEND);
            if (!strstr(r.t[i].message, "another type"))
                fail_msg("the refused set's message: %s", r.t[i].message);
            continue;
        }
        if (r.t[i].rc != BITT_OK)
            fail_msg("set %zu: %d %s", i, r.t[i].rc, r.t[i].message);
        for (size_t j = 0; j < i; j++) /* a versionstamp each */
            assert_true(j == 7 || r.t[j].start != r.t[i].start);
        char key[16];
        int kn = snprintf(key, sizeof key, "g%03zu", i);
        bitt_entry *e = NULL;
        assert_int_equal(bitt_kv_get(r.store, key, (size_t)kn, &e), BITT_OK);
        size_t len = 0;
        const void *v = bitt_entry_value(e, &len);
        assert_int_equal(len, (size_t)kn);
        assert_memory_equal(v, key, len);
        assert_int_equal(bitt_entry_version(e), (uint64_t)r.t[i].start);
        assert_int_equal(bitt_entry_expires_at(e) != 0, i % 5 == 0);
        bitt_entry_free(e);
    }
    bitt_entries *page = NULL; /* the key index has every new key */
    assert_int_equal(bitt_kv_list(r.store, NULL, &page), BITT_OK);
    assert_int_equal(bitt_entries_count(page), n - 1);
    bitt_entries_free(page);
    bitt_store_close(r.store);
}

/* A paused server past the store's timeout: every set of the group fails
 * with the leader's timeout (none is left waiting), and the next batch
 * succeeds. */
static void test_redis_group_fails_together_on_timeout(void **state)
{
    (void)state;
    assert_true(g_redis_up);
    static run r;
    memset(&r, 0, sizeof r);
    /* A timeout only the pause reaches: the batches before and after it
     * run under valgrind on a busy machine too, where 300 ms is not enough
     * for an ordinary reply. The pause outlasts it by 7 s. */
    r.store = open_url("%s?prefix=grpto&timeout=3000", g_redis.url);
    size_t n = 12;
    assert_int_equal(bitt_batch_run(grouped_setter, &r, n), BITT_OK); /* connects */
    redisReply *rep = redisCommand(g_raw, "CLIENT PAUSE 10000 WRITE");
    assert_non_null(rep);
    freeReplyObject(rep);
    memset(&r.t, 0, sizeof r.t);
    assert_int_equal(bitt_batch_run(grouped_setter, &r, n), BITT_EBACKEND);
    assert_non_null(strstr(bitt_error_last(), "timeout"));
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(r.t[i].runs, 1);
        assert_int_equal(r.t[i].rc, BITT_EBACKEND);
        if (!strstr(r.t[i].message, "timeout"))
            fail_msg("set %zu: %s", i, r.t[i].message);
    }
    rep = redisCommand(g_raw, "CLIENT UNPAUSE");
    assert_non_null(rep);
    freeReplyObject(rep);
    memset(&r.t, 0, sizeof r.t);
    assert_int_equal(bitt_batch_run(grouped_setter, &r, n), BITT_OK);
    for (size_t i = 0; i < n; i++)
        if (i != 7 && r.t[i].rc != BITT_OK)
            fail_msg("set %zu after the pause: %d %s", i, r.t[i].rc, r.t[i].message);
    bitt_store_close(r.store);
}

/* ---- PostgreSQL ---------------------------------------------------------------------- */
static void test_postgres_tasks_run_in_turn(void **state)
{
    (void)state;
    const char *url = getenv("BITT_TEST_POSTGRES_URL");
    if (!url || !*url)
        fail_msg("BITT_TEST_POSTGRES_URL is not set (scripts/test starts a server and sets it)");
    static run r;
    memset(&r, 0, sizeof r);
    r.store = open_url("%s?schema=t_batch_%ld", url, (long)getpid());
    size_t n = 20;
    assert_int_equal(bitt_batch_run(writer, &r, n), BITT_OK);
    check_writers(&r, n);
    bitt_store_close(r.store);
}

static int teardown_group(void **state)
{
    (void)state;
    if (g_redis_up)
        ts_redis_stop(&g_redis, &g_raw, "test_redis_batch");
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_runs_each_task_once_in_turn),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_nested_call_is_refused),
        cmocka_unit_test(test_thread_exit_frees_kept_stacks),
        cmocka_unit_test(test_redis_tasks_overlap_on_shared_connections),
        cmocka_unit_test(test_redis_each_task_keeps_its_error),
        cmocka_unit_test(test_redis_sets_of_a_batch_share_a_script_call),
        cmocka_unit_test(test_redis_group_fails_together_on_timeout),
        cmocka_unit_test(test_postgres_tasks_run_in_turn),
    };
    return cmocka_run_group_tests(tests, NULL, teardown_group);
}
