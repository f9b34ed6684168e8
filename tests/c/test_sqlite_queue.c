/*
 * The SQLite backend's version-2 modules (core/sqlite/queue.c, lease.c,
 * outbox.c, pubsub.c, budget.c, schedule.c) beyond the contract: the
 * in-place migration of a version-1 file, foreign version-2 tables,
 * several processes on one file (each message acked once, stale fenced
 * commits refused, each schedule occurrence claimed once), prefixes as
 * byte ranges, failed SQLite allocations in every call (a clean error,
 * nothing half-done), and a differential run of random queue, lease, outbox,
 * budget, schedule and pubsub calls against the memory backend on one
 * manual clock (every status and every field must be the same).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "bitt.h"
#include "sqlite_files.h"
#include "scale.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- migration ------------------------------------------------------------- */

static const char v1_schema[] =
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL, "
    "version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID;"
    "CREATE INDEX kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;"
    "INSERT INTO meta VALUES ('versionstamp', 41), ('schema_version', 1);"
    "INSERT INTO kv VALUES (x'6b', x'7631', 0, 41, NULL);";

static void test_migrate_v1(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("v1.db", path, sizeof path);
    ts_raw_exec(path, v1_schema);

    /* without auto_migrate, the version-1 file is refused until migrated */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?auto_migrate=0", path), BITT_OK);
    bitt_entry *e;
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_ESCHEMA);
    ts_expect_message("not migrated");
    assert_int_equal(bitt_queue_enqueue(s, "t", "x", 1, 0, NULL, NULL), BITT_ESCHEMA);
    assert_int_equal(bitt_store_migrate(s), BITT_OK);
    assert_int_equal(bitt_store_migrate(s), BITT_OK);
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_OK);
    assert_int_equal(bitt_entry_version(e), 41);
    bitt_entry_free(e);
    uint64_t id, v;
    assert_int_equal(bitt_queue_enqueue(s, "t", "x", 1, 0, NULL, &id), BITT_OK);
    assert_int_equal(id, 1);
    assert_int_equal(bitt_kv_set(s, "k2", 2, "v", 1, 0, 0, &v), BITT_OK);
    assert_int_equal(v, 43); /* the enqueue's commit took 42 */
    bitt_store_close(s);
    assert_int_equal(ts_raw_int(path, "SELECT value FROM meta WHERE name = 'schema_version'"), 4);

    /* several processes migrating one version-1 file at once */
    ts_fresh_path("v1many.db", path, sizeof path);
    ts_raw_exec(path, v1_schema);
    ts_processes_enqueue(path, 6);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM queue"), 6);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM kv"), 1);
}

static void test_foreign_tables(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("foreign2.db", path, sizeof path);
    ts_raw_exec(path, "CREATE TABLE f_queue (id INTEGER PRIMARY KEY, body TEXT);"
                      "CREATE TABLE g_schedule (key TEXT, interval_ms INTEGER, payload BLOB, "
                      "kind INTEGER, next_run_at INTEGER);");
    assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=f_", path), BITT_ESCHEMA);
    ts_expect_message("\"f_queue\"");
    /* a version-2 table of the right shape without bitt's meta */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=g_", path), BITT_ESCHEMA);
    ts_expect_message("\"g_schedule\"");
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM pragma_table_info('f_queue')"), 2);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'f%'"),
                     1);
}

/* ---- several processes ---------------------------------------------------------- */

#define JOBS (ts_scaled(16, 1) * 500) /* enqueued 500 a commit; BITT_TEST_SCALE */
#define WORKERS 4

/* Each worker dequeues batches until the queue stays empty, acks every
 * message and writes the acked ids to its pipe. */
static void test_processes_queue(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("procq.db", path, sizeof path);
    assert_int_equal(ts_open_url(&s, "sqlite:%s", path), BITT_OK);
    for (int i = 0; i < JOBS;) {
        bitt_txn *txn;
        assert_int_equal(bitt_txn_begin(s, &txn), BITT_OK);
        for (int j = 0; j < 500; j++, i++)
            assert_int_equal(bitt_txn_enqueue(txn, "work", &i, sizeof i, 0, NULL), BITT_OK);
        assert_int_equal(bitt_txn_commit(txn, NULL), BITT_OK);
        bitt_txn_free(txn);
    }
    bitt_store_close(s);

    int fds[WORKERS][2];
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        assert_int_equal(pipe(fds[w]), 0);
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            close(fds[w][0]);
            bitt_store *c;
            if (ts_open_url(&c, "sqlite:%s?busy_timeout=60000", path) != BITT_OK)
                _exit(1);
            bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
            unsigned seed = (unsigned)getpid();
            for (int empty = 0; empty < 3;) {
                o.limit = 1 + rand_r(&seed) % 20;
                bitt_messages *list;
                if (bitt_queue_dequeue(c, "work", &o, &list) != BITT_OK)
                    _exit(2);
                size_t n = bitt_messages_count(list);
                empty = n ? 0 : empty + 1;
                for (size_t i = 0; i < n; i++) {
                    const bitt_message *m = bitt_messages_at(list, i);
                    uint64_t id = bitt_message_id(m);
                    if (bitt_queue_ack(c, "work", id, bitt_message_token(m)) != BITT_OK ||
                        write(fds[w][1], &id, sizeof id) != (ssize_t)sizeof id)
                        _exit(3);
                }
                bitt_messages_free(list);
            }
            bitt_store_close(c);
            _exit(0);
        }
        close(fds[w][1]);
    }
    unsigned char *seen = calloc(JOBS + 1, 1);
    assert_non_null(seen);
    size_t total = 0;
    int busy_workers = 0;
    for (int w = 0; w < WORKERS; w++) {
        uint64_t id;
        size_t mine = 0;
        while (read(fds[w][0], &id, sizeof id) == (ssize_t)sizeof id) {
            assert_true(id >= 1 && id <= (uint64_t)JOBS);
            if (seen[id]++)
                fail_msg("message %llu was acked twice", (unsigned long long)id);
            mine++;
        }
        close(fds[w][0]);
        total += mine;
        busy_workers += mine > 0;
        int st;
        waitpid(pids[w], &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    free(seen);
    assert_int_equal(total, JOBS);
    /* How the work splits depends on the scheduler (under ASan one worker
     * can take it all): reported, not asserted. */
    print_message("queue: %d of %d workers acked messages\n", busy_workers, WORKERS);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM queue"), 0);
}

/* Workers contend for one lease; each holder makes a fenced commit at once
 * (it must succeed), and now and then another after its lease ran out (it
 * must fail, whoever holds the lease then). */
static void test_processes_fence(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("procl.db", path, sizeof path);
    assert_int_equal(ts_open_url(&s, "sqlite:%s", path), BITT_OK);
    bitt_store_close(s);
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            bitt_store *c;
            char owner[32];
            snprintf(owner, sizeof owner, "worker-%d", w);
            if (ts_open_url(&c, "sqlite:%s?busy_timeout=60000", path) != BITT_OK)
                _exit(1);
            for (int round = 0; round < 12; round++) {
                uint64_t epoch;
                int64_t until;
                int rc;
                while ((rc = bitt_lease_acquire(c, "leader", owner, 400, &epoch, &until)) ==
                       BITT_EXISTS)
                    sleep_ms(2);
                if (rc != BITT_OK)
                    _exit(2);
                bitt_txn *txn;
                bitt_txn_begin(c, &txn);
                bitt_txn_fence(txn, "leader", owner, epoch);
                bitt_txn_sum(txn, "fenced", 6, 1);
                rc = bitt_txn_commit(txn, NULL);
                bitt_txn_free(txn);
                if (rc != BITT_OK)
                    _exit(3); /* a live holder's commit must pass */
                if (round % 3 == 0) {
                    sleep_ms(450); /* a paused holder */
                    bitt_txn_begin(c, &txn);
                    bitt_txn_fence(txn, "leader", owner, epoch);
                    bitt_txn_sum(txn, "stale", 5, 1);
                    rc = bitt_txn_commit(txn, NULL);
                    bitt_txn_free(txn);
                    if (rc != BITT_ELEASELOST)
                        _exit(4);
                    if (bitt_lease_release(c, "leader", owner, epoch) != BITT_ELEASELOST)
                        _exit(5);
                } else if (bitt_lease_release(c, "leader", owner, epoch) != BITT_OK) {
                    _exit(6);
                }
            }
            bitt_store_close(c);
            _exit(0);
        }
    }
    for (int w = 0; w < WORKERS; w++) {
        int st;
        waitpid(pids[w], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("worker %d exited with %d", w, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    assert_int_equal(ts_raw_int(path, "SELECT CAST(value AS INTEGER) FROM kv WHERE key = "
                                      "CAST('fenced' AS BLOB)"),
                     WORKERS * 12);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM kv WHERE key = CAST('stale' AS BLOB)"),
                     0);
    /* every acquisition took a new epoch */
    assert_int_equal(ts_raw_int(path, "SELECT epoch FROM lease WHERE name = 'leader'"),
                     WORKERS * 12);
}

/* Workers claim one fast schedule for a while; no occurrence twice. */
static void test_processes_schedule(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("procs.db", path, sizeof path);
    assert_int_equal(ts_open_url(&s, "sqlite:%s", path), BITT_OK);
    int64_t now;
    assert_int_equal(bitt_clock_now(s, &now), BITT_OK);
    assert_int_equal(bitt_schedule_upsert(s, "tick", 5, "p", 1, 0, now), BITT_OK);
    bitt_store_close(s);
    int fds[WORKERS][2];
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        assert_int_equal(pipe(fds[w]), 0);
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            close(fds[w][0]);
            bitt_store *c;
            if (ts_open_url(&c, "sqlite:%s?busy_timeout=60000", path) != BITT_OK)
                _exit(1);
            int64_t start, t;
            bitt_clock_now(c, &start);
            do {
                bitt_schedule *sc;
                int rc = bitt_schedule_claim(c, NULL, &sc);
                if (rc == BITT_OK) {
                    int64_t occ = bitt_schedule_occurrence(sc);
                    if (write(fds[w][1], &occ, sizeof occ) != (ssize_t)sizeof occ)
                        _exit(2);
                    bitt_schedule_free(sc);
                } else if (rc != BITT_NOTFOUND) {
                    _exit(3);
                }
                bitt_clock_now(c, &t);
            } while (t - start < 800);
            bitt_store_close(c);
            _exit(0);
        }
        close(fds[w][1]);
    }
    int64_t *occs = malloc(100000 * sizeof *occs);
    assert_non_null(occs);
    size_t n = 0;
    for (int w = 0; w < WORKERS; w++) {
        int64_t occ;
        while (n < 100000 && read(fds[w][0], &occ, sizeof occ) == (ssize_t)sizeof occ)
            occs[n++] = occ;
        close(fds[w][0]);
        int st;
        waitpid(pids[w], &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    assert_true(n > 10);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal((occs[i] - now) % 5, 0);
        for (size_t j = i + 1; j < n; j++)
            if (occs[i] == occs[j])
                fail_msg("occurrence %lld claimed twice", (long long)occs[i]);
    }
    free(occs);
}

/* ---- prefixes are byte ranges ----------------------------------------------------- */

static void test_schedule_prefix(void **state)
{
    (void)state;
    bitt_store *s;
    assert_int_equal(bitt_store_open("sqlite::memory:", &s), BITT_OK);
    assert_int_equal(bitt_clock_set_manual(s, 1000), BITT_OK);
    static const char *const keys[] = {"a",
                                       "ab",
                                       "a%",
                                       "a_",
                                       "a_1",
                                       "\xc3\xbf",
                                       "\xc3\xbf"
                                       "z",
                                       "\xc4\x80",
                                       "b"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        assert_int_equal(bitt_schedule_upsert(s, keys[i], 10, "", 0, 0, 500 + (int64_t)i), BITT_OK);
    static const struct {
        const char *prefix;
        const char *expect[4];
    } cases[] = {
        {"a_", {"a_", "a_1", NULL}},
        {"a%", {"a%", NULL}},
        {"\xc3\xbf",
         {"\xc3\xbf",
          "\xc3\xbf"
          "z",
          NULL}},
        {"b", {"b", NULL}},
        {"c", {NULL}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        for (size_t k = 0; cases[c].expect[k]; k++) {
            bitt_schedule *sc;
            assert_int_equal(bitt_schedule_claim(s, cases[c].prefix, &sc), BITT_OK);
            assert_string_equal(bitt_schedule_key(sc), cases[c].expect[k]);
            bitt_schedule_free(sc);
        }
        bitt_schedule *sc;
        assert_int_equal(bitt_schedule_claim(s, cases[c].prefix, &sc), BITT_NOTFOUND);
    }
    bitt_store_close(s);
}

/* ---- failed SQLite allocations ------------------------------------------------ */

static sqlite3_mem_methods g_mem;
static long g_countdown = -1; /* fail the allocation that brings it to 0 */

static void *fail_malloc(int n)
{
    if (g_countdown > 0 && --g_countdown == 0)
        return NULL;
    return g_mem.xMalloc(n);
}

static void *fail_realloc(void *p, int n)
{
    if (g_countdown > 0 && --g_countdown == 0)
        return NULL;
    return g_mem.xRealloc(p, n);
}

static int g_run_failed; /* a call of this run failed: later ones may find state missing */

static void fault_check(int rc, long n, const char *what)
{
    if (g_run_failed && (rc == BITT_ELEASELOST || rc == BITT_ETOKEN))
        return;
    if (rc == BITT_ENOMEM || rc == BITT_EBACKEND)
        g_run_failed = 1;
    if (rc < 0 && rc != BITT_ENOMEM && rc != BITT_EBACKEND)
        fail_msg("allocation %ld, %s: unexpected status %d (%s)", n, what, rc, bitt_error_last());
    if (rc < 0 && bitt_error_last()[0] == '\0')
        fail_msg("allocation %ld, %s: status %d without a message", n, what, rc);
}

static int fault_call(int rc, long n, const char *what)
{
    fault_check(rc, n, what);
    return rc;
}

static bitt_queue_stats stats_of(bitt_store *s, const char *topic)
{
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, topic, &st), BITT_OK);
    return st;
}

/* One run of every version-2 call with SQLite's n-th allocation failing:
 * each call succeeds or fails cleanly, and a failed one changed nothing. */
static void fault_run(const char *url, long n, int *hit)
{
    bitt_store *s = NULL;
    g_countdown = n;
    g_run_failed = 0;
    int rc = bitt_store_open(url, &s);
    fault_check(rc, n, "open");
    if (rc != BITT_OK) {
        g_countdown = -1;
        *hit = 1;
        return;
    }
    bitt_clock_set_manual(s, 1000);
    long saved;
#define PAUSE() (saved = g_countdown, g_countdown = -1)
#define RESUME() (g_countdown = saved)
#define CALL(what, call) (rc = fault_call((call), n, what))
    bitt_enqueue_options eo = BITT_ENQUEUE_OPTIONS_INIT;
    eo.dedup_key = "d";
    eo.dedup_key_len = 1;
    eo.max_attempts = 1;
    CALL("enqueue", bitt_queue_enqueue(s, "t", "p", 1, 0, &eo, NULL));
    CALL("enqueue", bitt_queue_enqueue(s, "t", "q", 1, 0, NULL, NULL));

    bitt_messages *l = NULL;
    PAUSE();
    bitt_queue_stats before = stats_of(s, "t");
    RESUME();
    if (CALL("dequeue", bitt_queue_dequeue(s, "t", NULL, &l)) != BITT_OK) {
        PAUSE();
        bitt_queue_stats after = stats_of(s, "t");
        assert_int_equal(after.processing, before.processing); /* nothing leased */
        RESUME();
    } else if (bitt_messages_count(l)) {
        const bitt_message *m = bitt_messages_at(l, 0);
        CALL("extend", bitt_queue_extend(s, "t", bitt_message_id(m), bitt_message_token(m), 10));
        CALL("nack", bitt_queue_nack(s, "t", bitt_message_id(m), bitt_message_token(m), "e", -1));
        if (rc != BITT_OK)
            CALL("ack", bitt_queue_ack(s, "t", bitt_message_id(m), bitt_message_token(m)));
    }
    bitt_messages_free(l);
    l = NULL;
    bitt_dequeue_options dq = BITT_DEQUEUE_OPTIONS_INIT;
    dq.limit = 5;
    dq.lease_ms = 10;
    CALL("dequeue", bitt_queue_dequeue(s, "t", &dq, &l));
    bitt_messages_free(l);
    l = NULL;
    bitt_clock_advance(s, 100);
    CALL("dead list", bitt_queue_dead_list(s, "t", 0, 0, &l));
    bitt_messages_free(l);
    l = NULL;
    uint64_t count;
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    CALL("stats", bitt_queue_stats_get(s, "t", &st));
    CALL("dead retry", bitt_queue_dead_retry(s, "t", 0, &count));
    CALL("dead delete", bitt_queue_dead_delete(s, "t", 0, &count));

    uint64_t epoch = 0;
    int64_t until;
    bitt_buf owner = BITT_BUF_INIT;
    char lease[32]; /* the file persists from run to run: a lease of this run's own */
    snprintf(lease, sizeof lease, "l%ld", n);
    CALL("lease acquire", bitt_lease_acquire(s, lease, "o", 1000, &epoch, &until));
    CALL("lease renew", bitt_lease_renew(s, lease, "o", epoch, 1000, &until));
    CALL("lease get", bitt_lease_get(s, lease, &owner, NULL, NULL));
    bitt_buf_dispose(&owner);

    /* all or nothing: compare the counts around the commit */
    char key[32];
    int key_len = snprintf(key, sizeof key, "x%ld", n); /* a key of this run's own */
    uint64_t pending0 = 0, pending1 = 0, parked;
    PAUSE();
    uint64_t queued0 = stats_of(s, "tq").pending;
    assert_int_equal(bitt_outbox_counts(s, "s", &pending0, &parked), BITT_OK);
    RESUME();
    bitt_txn *txn;
    bitt_txn_begin(s, &txn);
    bitt_txn_fence(txn, lease, "o", epoch);
    bitt_txn_set(txn, key, (size_t)key_len, "v", 1, 0, 0);
    bitt_txn_enqueue(txn, "tq", "m", 1, 0, NULL);
    bitt_txn_outbox_append(txn, "s", "e", 1, 0);
    CALL("commit", bitt_txn_commit(txn, NULL));
    bitt_txn_free(txn);
    PAUSE();
    int committed = rc == BITT_OK;
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, key, (size_t)key_len, &e), committed ? BITT_OK : BITT_NOTFOUND);
    bitt_entry_free(e);
    assert_int_equal(stats_of(s, "tq").pending, queued0 + (uint64_t)committed);
    assert_int_equal(bitt_outbox_counts(s, "s", &pending1, &parked), BITT_OK);
    assert_int_equal(pending1, pending0 + (uint64_t)committed);
    RESUME();
    CALL("lease release", bitt_lease_release(s, lease, "o", epoch));

    uint64_t seq = 0, acked;
    CALL("outbox append", bitt_outbox_append(s, "s", "f", 1, 0, &seq));
    CALL("outbox pending", bitt_outbox_pending(s, "s", 0, &l));
    bitt_messages_free(l);
    l = NULL;
    CALL("outbox fail", bitt_outbox_fail(s, "s", seq, "e", 5));
    CALL("outbox park", bitt_outbox_park(s, "s", seq, BITT_PARK_POISON, "e"));
    CALL("outbox parked", bitt_outbox_parked(s, "s", 0, 0, &l));
    bitt_messages_free(l);
    l = NULL;
    CALL("outbox retry", bitt_outbox_retry(s, "s", NULL, 0, &count));
    CALL("outbox ack", bitt_outbox_ack(s, "s", &seq, 1, &acked));
    CALL("outbox discard", bitt_outbox_discard(s, "s", NULL, 0, &count));
    uint64_t p, k;
    CALL("outbox counts", bitt_outbox_counts(s, "s", &p, &k));

    bitt_sub *sub = NULL;
    bitt_message *m = NULL;
    CALL("subscribe", bitt_pubsub_subscribe(s, "c", &sub));
    CALL("publish", bitt_pubsub_publish(s, "c", "hi", 2));
    if (sub) {
        CALL("next", bitt_pubsub_next(sub, 0, &m));
        bitt_message_free(m);
        bitt_pubsub_close(sub);
    }
    int64_t wait;
    CALL("budget", bitt_budget_take(s, "b", 10, 1, 1000, 3, &wait));

    bitt_schedule *sc = NULL, **list = NULL;
    size_t nlist = 0;
    CALL("schedule upsert", bitt_schedule_upsert(s, "k", 10, "p", 1, 0, 500));
    CALL("schedule claim", bitt_schedule_claim(s, "k", &sc));
    bitt_schedule_free(sc);
    sc = NULL;
    CALL("schedule get", bitt_schedule_get(s, "k", &sc));
    bitt_schedule_free(sc);
    CALL("schedule list", bitt_schedule_list(s, &list, &nlist));
    bitt_schedule_list_free(list, nlist);
    CALL("schedule delete", bitt_schedule_delete(s, "k"));
#undef CALL
#undef PAUSE
#undef RESUME
    *hit = g_countdown == 0;
    g_countdown = -1;
    /* the store still works: no transaction was left open */
    assert_int_equal(bitt_queue_enqueue(s, "t", "z", 1, 0, NULL, NULL), BITT_OK);
    bitt_store_close(s);
}

static void test_failed_allocations(void **state)
{
    (void)state;
    char path[1200], url[1300];
    ts_fresh_path("faults2.db", path, sizeof path);
    snprintf(url, sizeof url, "sqlite:%s", path);
    const char *urls[2] = {"sqlite::memory:", url};
    for (int u = 0; u < 2; u++) {
        long n;
        for (n = 1; n < 50000; n += ts_stride()) { /* BITT_TEST_SCALE */
            int hit = 0;
            fault_run(urls[u], n, &hit);
            if (!hit)
                break; /* every allocation of the run has failed once */
        }
        assert_true(n > 100);
    }
}

/* ---- differential run against the memory backend --------------------------------- */

#define STEPS_MAX 6000
#define STEPS ts_scaled(STEPS_MAX, 300) /* BITT_TEST_SCALE */
#define MAXID (STEPS_MAX + 8)

typedef struct side {
    const char *name;
    bitt_store *s;
    bitt_sub *sub;
    char tok[MAXID][32 + 1]; /* each id's latest token */
    char old[MAXID][32 + 1]; /* and the one before */
} side;

static side g_side[2];
static uint64_t g_rng, g_last_id, g_last_epoch[2], g_last_seq;
static uint64_t g_recent[8]; /* ids dequeued lately: most acks, nacks, extends go to them */
static int g_step;

static uint32_t rnd(uint32_t n)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

static void same_status(int a, int b, const char *what)
{
    if (a != b)
        fail_msg("step %d (%s): memory gave %d, sqlite gave %d (%s)", g_step, what, a, b,
                 bitt_error_last());
}

static void same_i64(int64_t a, int64_t b, const char *what)
{
    if (a != b)
        fail_msg("step %d (%s): memory %lld, sqlite %lld", g_step, what, (long long)a,
                 (long long)b);
}

static void same_str(const char *a, const char *b, const char *what)
{
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
        fail_msg("step %d (%s): memory \"%s\", sqlite \"%s\"", g_step, what, a ? a : "(null)",
                 b ? b : "(null)");
}

static void same_message(const bitt_message *a, const bitt_message *b)
{
    size_t la, lb;
    const uint8_t *pa = bitt_message_payload(a, &la), *pb = bitt_message_payload(b, &lb);
    same_i64((int64_t)bitt_message_id(a), (int64_t)bitt_message_id(b), "message id");
    same_str(bitt_message_topic(a), bitt_message_topic(b), "message topic");
    same_i64((int64_t)la, (int64_t)lb, "payload length");
    if (la && memcmp(pa, pb, la))
        fail_msg("step %d: payloads differ", g_step);
    same_i64(bitt_message_kind(a), bitt_message_kind(b), "kind");
    same_i64(bitt_message_attempts(a), bitt_message_attempts(b), "attempts");
    same_i64(bitt_message_max_attempts(a), bitt_message_max_attempts(b), "max_attempts");
    same_str(bitt_message_last_error(a), bitt_message_last_error(b), "last_error");
    same_i64(bitt_message_created_at(a), bitt_message_created_at(b), "created_at");
    same_i64(bitt_message_due_at(a), bitt_message_due_at(b), "due_at");
    same_i64(bitt_message_failed_at(a), bitt_message_failed_at(b), "failed_at");
    same_i64(bitt_message_park_reason(a), bitt_message_park_reason(b), "park_reason");
    same_i64(bitt_message_token(a) != NULL, bitt_message_token(b) != NULL, "has a token");
}

static void same_messages(int ra, bitt_messages *a, int rb, bitt_messages *b, const char *what)
{
    same_status(ra, rb, what);
    if (ra == BITT_OK) {
        same_i64((int64_t)bitt_messages_count(a), (int64_t)bitt_messages_count(b), what);
        for (size_t i = 0; i < bitt_messages_count(a); i++)
            same_message(bitt_messages_at(a, i), bitt_messages_at(b, i));
    }
    bitt_messages_free(a);
    bitt_messages_free(b);
}

static void same_schedule(const bitt_schedule *a, const bitt_schedule *b)
{
    size_t la, lb;
    same_str(bitt_schedule_key(a), bitt_schedule_key(b), "schedule key");
    same_i64(bitt_schedule_interval(a), bitt_schedule_interval(b), "interval");
    bitt_schedule_payload(a, &la);
    bitt_schedule_payload(b, &lb);
    same_i64((int64_t)la, (int64_t)lb, "schedule payload");
    same_i64(bitt_schedule_kind(a), bitt_schedule_kind(b), "schedule kind");
    same_i64(bitt_schedule_next_run_at(a), bitt_schedule_next_run_at(b), "next_run_at");
    same_i64(bitt_schedule_occurrence(a), bitt_schedule_occurrence(b), "occurrence");
}

static const char *const g_topics[] = {"t1", "t2"};
static const char *const g_names[] = {"n1", "n2"};
static const char *const g_owners[] = {"o1", "o2"};
static const char *const g_keys[] = {"s1", "s2", "x1"};
static const char *const g_prefixes[] = {"", "s", "x", "s2"};
static const char g_bad_token[] = "0123456789abcdef0123456789abcdef";

/* The token side i uses for id: its latest, its previous, or a wrong one. */
static const char *pick_token(int i, uint64_t id, uint32_t how)
{
    side *sd = &g_side[i];
    const char *t = how == 0 ? sd->tok[id] : how == 1 ? sd->old[id] : g_bad_token;
    return *t ? t : g_bad_token;
}

static void remember_tokens(int i, bitt_messages *list)
{
    for (size_t k = 0; list && k < bitt_messages_count(list); k++) {
        const bitt_message *m = bitt_messages_at(list, k);
        uint64_t id = bitt_message_id(m);
        assert_true(id < MAXID);
        memcpy(g_side[i].old[id], g_side[i].tok[id], sizeof g_side[i].tok[id]);
        g_recent[id % 8] = id;
        snprintf(g_side[i].tok[id], sizeof g_side[i].tok[id], "%s", bitt_message_token(m));
    }
}

static void diff_queue(uint32_t op)
{
    const char *topic = g_topics[rnd(2)];
    int r[2];
    if (op == 0) { /* enqueue */
        bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
        static const int64_t delays[] = {0, 0, 0, 100, 5000};
        o.delay_ms = delays[rnd(5)];
        o.max_attempts = rnd(4);
        static const char *const dk[] = {NULL, NULL, "k1", "k2", ""};
        const char *key = dk[rnd(5)];
        o.dedup_key = key;
        o.dedup_key_len = key ? strlen(key) : 0;
        char payload[16];
        int len = snprintf(payload, sizeof payload, "p%d", g_step);
        uint64_t id[2] = {0, 0};
        for (int i = 0; i < 2; i++)
            r[i] = bitt_queue_enqueue(g_side[i].s, topic, payload, (size_t)len, 0, &o, &id[i]);
        same_status(r[0], r[1], "enqueue");
        same_i64((int64_t)id[0], (int64_t)id[1], "enqueue id");
        if (id[0] > g_last_id)
            g_last_id = id[0];
    } else if (op == 1) { /* dequeue */
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        static const int64_t leases[] = {0, 100, 1000, 40000};
        o.limit = 1 + rnd(3);
        o.lease_ms = leases[rnd(4)];
        bitt_messages *l[2] = {NULL, NULL};
        for (int i = 0; i < 2; i++) {
            r[i] = bitt_queue_dequeue(g_side[i].s, topic, &o, &l[i]);
            remember_tokens(i, l[i]);
        }
        same_messages(r[0], l[0], r[1], l[1], "dequeue");
    } else if (op <= 4) { /* ack, nack, extend */
        uint64_t id = g_recent[rnd(8)];
        if (!id || rnd(5) == 0)
            id = 1 + rnd((uint32_t)g_last_id + 1);
        uint32_t how = rnd(5) < 3 ? 0 : rnd(3);
        static const int64_t delays[] = {-1, -1, 0, 200};
        static const int64_t leases[] = {0, 50, 2000};
        int64_t delay = delays[rnd(4)], lease = leases[rnd(3)];
        const char *err = rnd(2) ? "boom" : NULL;
        for (int i = 0; i < 2; i++) {
            const char *tok = pick_token(i, id, how);
            r[i] = op == 2   ? bitt_queue_ack(g_side[i].s, topic, id, tok)
                   : op == 3 ? bitt_queue_nack(g_side[i].s, topic, id, tok, err, delay)
                             : bitt_queue_extend(g_side[i].s, topic, id, tok, lease);
        }
        same_status(r[0], r[1], op == 2 ? "ack" : op == 3 ? "nack" : "extend");
    } else if (op == 5) { /* dead list */
        bitt_messages *l[2];
        uint64_t after = rnd(3) ? 0 : rnd((uint32_t)g_last_id + 1);
        uint32_t limit = 1 + rnd(5);
        for (int i = 0; i < 2; i++)
            r[i] = bitt_queue_dead_list(g_side[i].s, topic, after, limit, &l[i]);
        same_messages(r[0], l[0], r[1], l[1], "dead list");
    } else if (op <= 7) { /* dead retry, delete */
        uint64_t id = rnd(3) ? 1 + rnd((uint32_t)g_last_id + 1) : 0, n[2] = {0, 0};
        for (int i = 0; i < 2; i++)
            r[i] = op == 6 ? bitt_queue_dead_retry(g_side[i].s, topic, id, &n[i])
                           : bitt_queue_dead_delete(g_side[i].s, topic, id, &n[i]);
        same_status(r[0], r[1], "dead retry/delete");
        same_i64((int64_t)n[0], (int64_t)n[1], "dead retry/delete count");
    } else { /* stats */
        bitt_queue_stats st[2];
        for (int i = 0; i < 2; i++) {
            st[i] = (bitt_queue_stats){.version = BITT_QUEUE_STATS_VERSION};
            r[i] = bitt_queue_stats_get(g_side[i].s, topic, &st[i]);
        }
        same_status(r[0], r[1], "stats");
        same_i64((int64_t)st[0].pending, (int64_t)st[1].pending, "stats pending");
        same_i64((int64_t)st[0].delayed, (int64_t)st[1].delayed, "stats delayed");
        same_i64((int64_t)st[0].processing, (int64_t)st[1].processing, "stats processing");
        same_i64((int64_t)st[0].dead, (int64_t)st[1].dead, "stats dead");
        same_i64(st[0].oldest_pending_at, st[1].oldest_pending_at, "stats oldest");
    }
}

static void diff_lease(uint32_t op)
{
    uint32_t n = rnd(2);
    const char *name = g_names[n], *owner = g_owners[rnd(2)];
    uint64_t epoch = rnd(4) ? g_last_epoch[n] : g_last_epoch[n] - 1;
    static const int64_t ttls[] = {100, 1000, 50000};
    int64_t ttl = ttls[rnd(3)];
    int r[2];
    uint64_t e[2] = {0, 0};
    int64_t x[2] = {0, 0};
    bitt_buf who[2] = {BITT_BUF_INIT, BITT_BUF_INIT};
    for (int i = 0; i < 2; i++) {
        bitt_store *s = g_side[i].s;
        r[i] = op == 0   ? bitt_lease_acquire(s, name, owner, ttl, &e[i], &x[i])
               : op == 1 ? bitt_lease_renew(s, name, owner, epoch, ttl, &x[i])
               : op == 2 ? bitt_lease_release(s, name, owner, epoch)
                         : bitt_lease_get(s, name, &who[i], &e[i], &x[i]);
    }
    same_status(r[0], r[1], "lease");
    same_i64((int64_t)e[0], (int64_t)e[1], "lease epoch");
    same_i64(x[0], x[1], "lease expiry");
    if (op == 3 && r[0] == BITT_OK)
        same_str((const char *)who[0].ptr, (const char *)who[1].ptr, "lease owner");
    if (op == 0 && r[0] == BITT_OK)
        g_last_epoch[n] = e[0];
    bitt_buf_dispose(&who[0]);
    bitt_buf_dispose(&who[1]);
}

static void diff_outbox(uint32_t op)
{
    const char *stream = g_topics[rnd(2)];
    int r[2];
    uint64_t seqs[3];
    size_t count = rnd(4);
    for (size_t k = 0; k < count; k++)
        seqs[k] = 1 + rnd((uint32_t)g_last_seq + 1);
    if (op == 0) { /* append */
        uint64_t seq[2] = {0, 0};
        for (int i = 0; i < 2; i++)
            r[i] = bitt_outbox_append(g_side[i].s, stream, "{}", 2, BITT_KIND_JSON, &seq[i]);
        same_status(r[0], r[1], "outbox append");
        same_i64((int64_t)seq[0], (int64_t)seq[1], "outbox seq");
        if (seq[0] > g_last_seq)
            g_last_seq = seq[0];
    } else if (op == 1 || op == 2) { /* pending, parked */
        bitt_messages *l[2];
        int reason = (int)rnd(3);
        uint32_t limit = 1 + rnd(4);
        for (int i = 0; i < 2; i++)
            r[i] = op == 1 ? bitt_outbox_pending(g_side[i].s, stream, limit, &l[i])
                           : bitt_outbox_parked(g_side[i].s, stream, reason, limit, &l[i]);
        same_messages(r[0], l[0], r[1], l[1], "outbox pending/parked");
    } else if (op <= 5) { /* ack, retry, discard */
        uint64_t n[2] = {0, 0};
        if (op == 3 && !count)
            count = 1, seqs[0] = 1;
        for (int i = 0; i < 2; i++)
            r[i] =
                op == 3 ? bitt_outbox_ack(g_side[i].s, stream, seqs, count, &n[i])
                : op == 4
                    ? bitt_outbox_retry(g_side[i].s, stream, count ? seqs : NULL, count, &n[i])
                    : bitt_outbox_discard(g_side[i].s, stream, count ? seqs : NULL, count, &n[i]);
        same_status(r[0], r[1], "outbox ack/retry/discard");
        same_i64((int64_t)n[0], (int64_t)n[1], "outbox ack/retry/discard count");
    } else if (op <= 7) { /* fail, park */
        uint64_t seq = 1 + rnd((uint32_t)g_last_seq + 1);
        const char *err = rnd(2) ? "bad" : NULL;
        int reason = 1 + (int)rnd(2);
        int64_t next = rnd(2) ? 0 : 12345;
        for (int i = 0; i < 2; i++)
            r[i] = op == 6 ? bitt_outbox_fail(g_side[i].s, stream, seq, err, next)
                           : bitt_outbox_park(g_side[i].s, stream, seq, reason, err);
        same_status(r[0], r[1], "outbox fail/park");
    } else { /* counts */
        uint64_t p[2] = {0, 0}, k[2] = {0, 0};
        for (int i = 0; i < 2; i++)
            r[i] = bitt_outbox_counts(g_side[i].s, stream, &p[i], &k[i]);
        same_status(r[0], r[1], "outbox counts");
        same_i64((int64_t)p[0], (int64_t)p[1], "outbox pending count");
        same_i64((int64_t)k[0], (int64_t)k[1], "outbox parked count");
    }
}

/* A commit mixing a fence or a check, a set, an enqueue and an append. */
static void diff_txn(void)
{
    uint32_t n = rnd(2);
    const char *owner = g_owners[rnd(2)];
    uint64_t epoch = g_last_epoch[n] - rnd(2);
    int with_fence = rnd(2), with_check = rnd(3) == 0, dedup = rnd(2);
    int r[2];
    uint64_t v[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        bitt_txn *txn;
        assert_int_equal(bitt_txn_begin(g_side[i].s, &txn), BITT_OK);
        if (with_check)
            bitt_txn_check(txn, "k", 1, 0);
        bitt_txn_set(txn, "k", 1, "v", 1, 0, 0);
        if (with_fence)
            bitt_txn_fence(txn, g_names[n], owner, epoch);
        bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
        o.dedup_key = dedup ? "k1" : NULL;
        o.dedup_key_len = dedup ? 2 : 0;
        bitt_txn_enqueue(txn, "t1", "txn", 3, 0, &o);
        bitt_txn_outbox_append(txn, "t1", "e", 1, 0);
        r[i] = bitt_txn_commit(txn, &v[i]);
        bitt_txn_free(txn);
    }
    same_status(r[0], r[1], "txn commit");
    same_i64((int64_t)v[0], (int64_t)v[1], "txn version");
    if (r[0] == BITT_OK) {
        g_last_id += 1; /* at most one more id: the ids compared later tell */
        g_last_seq += 1;
    }
}

static void diff_schedule(uint32_t op)
{
    const char *key = g_keys[rnd(3)];
    int r[2];
    if (op == 0) {
        static const int64_t intervals[] = {100, 100, 1000, 7};
        int64_t first = rnd(2) ? 0 : 500000 + rnd(200000);
        int64_t interval = intervals[rnd(4)];
        for (int i = 0; i < 2; i++)
            r[i] = bitt_schedule_upsert(g_side[i].s, key, interval, "pl", 2, 0, first);
        same_status(r[0], r[1], "schedule upsert");
    } else if (op == 1 || op == 2) {
        bitt_schedule *sc[2] = {NULL, NULL};
        const char *prefix = rnd(4) ? g_prefixes[rnd(4)] : NULL;
        for (int i = 0; i < 2; i++)
            r[i] = op == 1 ? bitt_schedule_claim(g_side[i].s, prefix, &sc[i])
                           : bitt_schedule_get(g_side[i].s, key, &sc[i]);
        same_status(r[0], r[1], "schedule claim/get");
        if (r[0] == BITT_OK)
            same_schedule(sc[0], sc[1]);
        bitt_schedule_free(sc[0]);
        bitt_schedule_free(sc[1]);
    } else if (op == 3) {
        bitt_schedule **l[2];
        size_t n[2];
        for (int i = 0; i < 2; i++)
            r[i] = bitt_schedule_list(g_side[i].s, &l[i], &n[i]);
        same_status(r[0], r[1], "schedule list");
        same_i64((int64_t)n[0], (int64_t)n[1], "schedule count");
        for (size_t k = 0; k < n[0]; k++)
            same_schedule(l[0][k], l[1][k]);
        bitt_schedule_list_free(l[0], n[0]);
        bitt_schedule_list_free(l[1], n[1]);
    } else {
        for (int i = 0; i < 2; i++)
            r[i] = bitt_schedule_delete(g_side[i].s, key);
        same_status(r[0], r[1], "schedule delete");
    }
}

static void diff_misc(uint32_t op)
{
    int r[2];
    if (op == 0) { /* budget */
        int64_t w[2] = {-1, -1}, n = 1 + rnd(3);
        const char *name = g_names[rnd(2)];
        for (int i = 0; i < 2; i++)
            r[i] = bitt_budget_take(g_side[i].s, name, 5, 2, 1000, n, &w[i]);
        same_status(r[0], r[1], "budget take");
        same_i64(w[0], w[1], "budget wait");
    } else if (op == 1) { /* publish */
        char data[16];
        int len = snprintf(data, sizeof data, "m%d", g_step);
        const char *channel = rnd(3) ? "c" : "d";
        for (int i = 0; i < 2; i++)
            r[i] = bitt_pubsub_publish(g_side[i].s, channel, data, (size_t)len);
        same_status(r[0], r[1], "publish");
    } else { /* next */
        bitt_message *m[2] = {NULL, NULL};
        for (int i = 0; i < 2; i++)
            r[i] = bitt_pubsub_next(g_side[i].sub, 0, &m[i]);
        same_status(r[0], r[1], "pubsub next");
        if (r[0] == BITT_OK)
            same_message(m[0], m[1]);
        bitt_message_free(m[0]);
        bitt_message_free(m[1]);
    }
}

static void test_differential(void **state)
{
    (void)state;
    const char *seed = getenv("BITT_DIFF_SEED");
    g_rng = seed ? strtoull(seed, NULL, 10) : 0x9e3779b97f4a7c15ull;
    if (!g_rng)
        g_rng = 1;
    char path[1200];
    ts_fresh_path("diff.db", path, sizeof path);
    g_side[0].name = "memory";
    g_side[1].name = "sqlite";
    assert_int_equal(
        bitt_store_open("memory:?queue_backoff=exp:100:1000&pubsub_retention=20000", &g_side[0].s),
        BITT_OK);
    assert_int_equal(ts_open_url(&g_side[1].s,
                                 "sqlite:%s?queue_backoff=exp:100:1000&pubsub_retention=20000",
                                 path),
                     BITT_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(bitt_clock_set_manual(g_side[i].s, 1000000), BITT_OK);
        assert_int_equal(bitt_pubsub_subscribe(g_side[i].s, "c", &g_side[i].sub), BITT_OK);
    }
    for (g_step = 0; g_step < STEPS; g_step++) {
        uint32_t what = rnd(100);
        if (what < 8) {
            static const int64_t steps[] = {1, 10, 50, 100, 1000, 30000, 70000};
            int64_t ms = steps[rnd(7)];
            for (int i = 0; i < 2; i++)
                assert_int_equal(bitt_clock_advance(g_side[i].s, ms), BITT_OK);
        } else if (what < 55) {
            static const uint32_t qops[] = {0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8};
            diff_queue(qops[rnd(15)]);
        } else if (what < 65) {
            diff_lease(rnd(4));
        } else if (what < 70) {
            diff_txn();
        } else if (what < 82) {
            diff_outbox(rnd(9));
        } else if (what < 90) {
            diff_schedule(rnd(5));
        } else {
            diff_misc(rnd(3));
        }
    }
    for (int i = 0; i < 2; i++) {
        bitt_pubsub_close(g_side[i].sub);
        bitt_store_close(g_side[i].s);
    }
}

int main(void)
{
    const char *tmp = getenv("BITT_TEST_TMP");
    snprintf(ts_dir, sizeof ts_dir, "%s/sqlite_queue", tmp && *tmp ? tmp : "/tmp/bitt-test");
    char parent[1100];
    snprintf(parent, sizeof parent, "%s", ts_dir);
    *strrchr(parent, '/') = '\0';
    mkdir(parent, 0777);
    mkdir(ts_dir, 0777);

    /* Route SQLite's allocations through a wrapper that can fail on cue
     * (before SQLite initialises, so every connection uses it). */
    sqlite3_config(SQLITE_CONFIG_GETMALLOC, &g_mem);
    sqlite3_mem_methods mm = g_mem;
    mm.xMalloc = fail_malloc;
    mm.xRealloc = fail_realloc;
    sqlite3_config(SQLITE_CONFIG_MALLOC, &mm);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrate_v1),      cmocka_unit_test(test_foreign_tables),
        cmocka_unit_test(test_schedule_prefix), cmocka_unit_test(test_failed_allocations),
        cmocka_unit_test(test_differential),    cmocka_unit_test(test_processes_queue),
        cmocka_unit_test(test_processes_fence), cmocka_unit_test(test_processes_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
