/*
 * The SQLite backend (core/sqlite/) beyond the contract: URL options, the
 * schema checks (foreign tables, newer versions, auto_migrate=0), busy
 * databases, several processes on one file, persistence, failed SQLite
 * allocations, and a differential run of random operations against the
 * memory backend (tests/c/support/diff.h: every status, entry, list page,
 * versionstamp, message, lease, event and schedule must be the same).
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
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "bitt.h"
#include "diff.h"
#include "sqlite_files.h"
#include "scale.h"

/* ---- helpers ------------------------------------------------------------- */

static int64_t counter_of(bitt_store *s, const char *key)
{
    bitt_entry *e;
    assert_int_equal(bitt_kv_get(s, key, strlen(key), &e), BITT_OK);
    int64_t v;
    assert_int_equal(bitt_entry_counter(e, &v), BITT_OK);
    bitt_entry_free(e);
    return v;
}

/* ---- options --------------------------------------------------------------- */

static void test_options(void **state)
{
    (void)state;
    bitt_store *s;
    assert_int_equal(bitt_store_open("sqlite::memory:", &s), BITT_OK);
    assert_string_equal(bitt_store_backend(s), "sqlite");
    bitt_store_close(s);
    assert_int_equal(bitt_store_open("sqlite::memory:?busy_timeout=0&synchronous=off&"
                                     "cache_size=0&table_prefix=",
                                     &s),
                     BITT_OK);
    bitt_store_close(s);
    assert_int_equal(bitt_store_open("sqlite::memory:?synchronous=full&table_prefix="
                                     "Az09_aaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                     &s),
                     BITT_OK);
    bitt_store_close(s);

    static const char *const bad[] = {
        "sqlite::memory:?table_prefix=a-b",
        "sqlite::memory:?table_prefix=a%22b",
        "sqlite::memory:?table_prefix=a%20b",
        "sqlite::memory:?table_prefix=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 33 */
        "sqlite::memory:?synchronous=fast",
        "sqlite::memory:?synchronous=",
        "sqlite::memory:?busy_timeout=-1",
        "sqlite::memory:?busy_timeout=abc",
        "sqlite::memory:?cache_size=-5",
        "sqlite::memory:?no_such_option=1",
        "sqlite:",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        s = (bitt_store *)&s;
        if (bitt_store_open(bad[i], &s) != BITT_EURL)
            fail_msg("%s was not refused with BITT_EURL: %s", bad[i], bitt_error_last());
        assert_null(s);
        assert_true(bitt_error_last()[0] != '\0');
    }
    assert_int_equal(bitt_store_open("sqlite::memory:?table_prefix=a.b", &s), BITT_EURL);
    ts_expect_message("table_prefix");

    /* A refused URL creates nothing: every option is checked before the
     * file is opened. */
    char made[1200];
    ts_fresh_path("never_made.db", made, sizeof made);
    static const char *const typos[] = {"busy_timout=5", "synchronous=fast", "max_key_size=0",
                                        "queue_lease=0", "schema=x"};
    for (size_t i = 0; i < sizeof typos / sizeof *typos; i++) {
        assert_int_equal(ts_open_url(&s, "sqlite:%s?%s", made, typos[i]), BITT_EURL);
        if (access(made, F_OK) == 0)
            fail_msg("sqlite:%s?%s was refused but left a file behind", made, typos[i]);
    }

    char path[1200];
    snprintf(path, sizeof path, "%s/no/such/dir/x.db", ts_dir);
    assert_int_equal(ts_open_url(&s, "sqlite:%s", path), BITT_EBACKEND);
    ts_expect_message("cannot open");

    ts_fresh_path("not_a_db.db", path, sizeof path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 64; i++)
        fputs("this is not an SQLite database. ", f);
    fclose(f);
    assert_int_equal(ts_open_url(&s, "sqlite:%s", path), BITT_EBACKEND);
    ts_expect_message("not a database");
}

/* ---- schema ------------------------------------------------------------------ */

static void test_schema_refusals(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("schema.db", path, sizeof path);
    ts_raw_exec(path, "CREATE TABLE kv (a, b);"
                      "CREATE TABLE m_meta (x, y);"
                      "CREATE TABLE n_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
                      "INSERT INTO n_meta VALUES ('schema_version', 7), ('versionstamp', 5);"
                      "CREATE TABLE u_meta (name TEXT, value INTEGER, note TEXT);"
                      "CREATE TABLE o_kv (key BLOB PRIMARY KEY, value BLOB, kind INTEGER, "
                      "version INTEGER, expires_at INTEGER);");

    /* a foreign kv table: refused and left alone */
    assert_int_equal(ts_open_url(&s, "sqlite:%s", path), BITT_ESCHEMA);
    ts_expect_message("\"kv\"");
    assert_null(s);
    /* a foreign meta table */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=m_", path), BITT_ESCHEMA);
    ts_expect_message("\"m_meta\"");
    /* a meta table of the right shape that bitt did not make */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=u_", path), BITT_ESCHEMA);
    ts_expect_message("\"u_meta\"");
    /* a kv table of the right shape without bitt's meta */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=o_", path), BITT_ESCHEMA);
    ts_expect_message("\"o_kv\"");
    /* a newer schema: the message names both versions */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=n_", path), BITT_ESCHEMA);
    ts_expect_message("version 7");
    ts_expect_message("version 4"); /* BITT_SQ_SCHEMA_VERSION */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=n_&auto_migrate=0", path), BITT_OK);
    bitt_entry *e;
    assert_int_equal(bitt_kv_get(s, "a", 1, &e), BITT_ESCHEMA);
    ts_expect_message("newer");
    assert_int_equal(bitt_store_migrate(s), BITT_ESCHEMA);
    bitt_store_close(s);

    /* nothing was altered */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info('kv')", -1, &st, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 2);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT (SELECT count(*) FROM u_meta) + (SELECT count(*) "
                                        "FROM sqlite_schema WHERE name LIKE 'u\\_%' ESCAPE "
                                        "'\\' OR name LIKE 'o\\_%' ESCAPE '\\')",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 2); /* u_meta (still empty) and o_kv */
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* another prefix in the same file is fine */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=bitt_", path), BITT_OK);
    assert_int_equal(bitt_kv_set(s, "k", 1, "v", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    bitt_store_close(s);
}

static void test_not_migrated(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("unmigrated.db", path, sizeof path);
    assert_int_equal(ts_open_url(&s, "sqlite:%s?auto_migrate=0", path), BITT_OK);

    bitt_entry *e = NULL;
    bitt_entries *es = NULL;
    uint64_t removed;
    const void *keys[2] = {"a", "b"};
    size_t lens[2] = {1, 1};
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    assert_int_equal(bitt_kv_get(s, "a", 1, &e), BITT_ESCHEMA);
    ts_expect_message("not migrated");
    assert_int_equal(bitt_kv_get_many(s, keys, lens, 2, &es), BITT_ESCHEMA);
    assert_int_equal(bitt_kv_list(s, &o, &es), BITT_ESCHEMA);
    assert_int_equal(bitt_kv_set(s, "a", 1, "v", 1, 0, 0, NULL), BITT_ESCHEMA);
    ts_expect_message("not migrated");
    assert_int_equal(bitt_kv_increment(s, "n", 1, 1, 0, NULL, NULL), BITT_ESCHEMA);
    assert_int_equal(bitt_kv_purge_expired(s, &removed), BITT_ESCHEMA);

    assert_int_equal(bitt_store_migrate(s), BITT_OK);
    assert_int_equal(bitt_store_migrate(s), BITT_OK); /* idempotent */
    uint64_t v1, v2;
    assert_int_equal(bitt_kv_set(s, "a", 1, "v", 1, 0, 0, &v1), BITT_OK);
    assert_int_equal(v1, 1);
    assert_int_equal(bitt_kv_get(s, "a", 1, &e), BITT_OK);
    bitt_entry_free(e);
    bitt_store_close(s);

    /* another handle without auto_migrate now finds the schema */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?auto_migrate=0", path), BITT_OK);
    assert_int_equal(bitt_kv_set(s, "a", 1, "w", 1, 0, 0, &v2), BITT_OK);
    assert_true(v2 > v1);
    bitt_store_close(s);
}

/* ---- persistence ------------------------------------------------------------- */

static void test_persistence(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("persist.db", path, sizeof path);
    uint64_t last = 0, v;
    for (int round = 0; round < 3; round++) {
        assert_int_equal(ts_open_url(&s, "sqlite:%s?table_prefix=p_&synchronous=full", path),
                         BITT_OK);
        if (round > 0) {
            assert_int_equal(counter_of(s, "n"), round * 10);
            bitt_entry *e;
            assert_int_equal(bitt_kv_get(s, "bin\0key", 7, &e), BITT_OK);
            size_t n;
            const uint8_t *p = bitt_entry_value(e, &n);
            assert_int_equal(n, 4);
            assert_memory_equal(p, "\0\xff\0\x01", 4);
            assert_int_equal(bitt_entry_kind(e), BITT_KIND_BYTES);
            bitt_entry_free(e);
        }
        for (int i = 0; i < 10; i++) {
            assert_int_equal(bitt_kv_increment(s, "n", 1, 1, 0, NULL, &v), BITT_OK);
            assert_true(v > last); /* versions keep increasing across handles */
            last = v;
        }
        assert_int_equal(bitt_kv_set(s, "bin\0key", 7, "\0\xff\0\x01", 4, 0, 0, &v), BITT_OK);
        last = v;
        bitt_store_close(s);
    }
}

/* ---- busy ------------------------------------------------------------------------ */

static void test_busy(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("busy.db", path, sizeof path);
    assert_int_equal(ts_open_url(&s, "sqlite:%s?busy_timeout=30", path), BITT_OK);
    assert_int_equal(bitt_kv_set(s, "a", 1, "1", 1, 0, 0, NULL), BITT_OK);

    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);

    uint64_t removed;
    bitt_entry *e;
    assert_int_equal(bitt_kv_set(s, "a", 1, "2", 1, 0, 0, NULL), BITT_EBUSY);
    ts_expect_message("locked");
    assert_int_equal(bitt_kv_increment(s, "n", 1, 1, 0, NULL, NULL), BITT_EBUSY);
    assert_int_equal(bitt_kv_purge_expired(s, &removed), BITT_EBUSY);
    /* WAL: reads go on while another connection writes */
    assert_int_equal(bitt_kv_get(s, "a", 1, &e), BITT_OK);
    bitt_entry_free(e);
    /* and so does opening the file: a current schema is only read, the
     * write lock is not needed (nor waited for) */
    bitt_store *other;
    if (ts_open_url(&other, "sqlite:%s?busy_timeout=30", path) != BITT_OK)
        fail_msg("opening a current file while another connection writes: %s", bitt_error_last());
    assert_int_equal(bitt_kv_get(other, "a", 1, &e), BITT_OK);
    bitt_entry_free(e);
    assert_int_equal(bitt_kv_set(other, "a", 1, "2", 1, 0, 0, NULL), BITT_EBUSY);
    bitt_store_close(other);
    /* a file that needs its tables still waits for the lock, and says so */
    char fresh[1200];
    ts_fresh_path("busy_fresh.db", fresh, sizeof fresh);
    sqlite3 *db2;
    assert_int_equal(sqlite3_open(fresh, &db2), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db2,
                                  "PRAGMA journal_mode=WAL; CREATE TABLE t(x); BEGIN IMMEDIATE",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(ts_open_url(&other, "sqlite:%s?busy_timeout=30", fresh), BITT_EBUSY);
    ts_expect_message("migrate");
    assert_null(other);
    sqlite3_exec(db2, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db2);

    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    /* nothing was left open by the failures */
    assert_int_equal(bitt_kv_set(s, "a", 1, "3", 1, 0, 0, NULL), BITT_OK);
    assert_int_equal(bitt_kv_get(s, "a", 1, &e), BITT_OK);
    size_t n;
    assert_memory_equal(bitt_entry_value(e, &n), "3", 1);
    bitt_entry_free(e);
    bitt_store_close(s);
}

/* ---- processes --------------------------------------------------------------- */

enum { NPROC = 4 };
#define PER_PROC ts_scaled(300, 20) /* BITT_TEST_SCALE */

static void child_work(const char *path, int id)
{
    bitt_store *s;
    if (ts_open_url(&s, "sqlite:%s?busy_timeout=20000", path) != BITT_OK)
        _exit(10);
    uint64_t last = 0, v;
    for (int j = 0; j < PER_PROC; j++) {
        if (bitt_kv_increment(s, "n", 1, 1, 0, NULL, &v) != BITT_OK)
            _exit(11);
        if (v <= last)
            _exit(12); /* versions only go up */
        last = v;
        char val[32];
        int len = snprintf(val, sizeof val, "%d/%d", id, j);
        int rc = bitt_kv_add(s, "once", 4, val, (size_t)len, 0, 0, &v);
        if (rc != BITT_OK && rc != BITT_EXISTS)
            _exit(13);
        if (rc == BITT_OK)
            last = v;
    }
    bitt_store_close(s);
    _exit(0);
}

static void test_processes(void **state)
{
    (void)state;
    char path[1200];
    ts_fresh_path("procs.db", path, sizeof path);
    /* every process opens (and migrates) the fresh file at once */
    pid_t pids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            child_work(path, i);
    }
    for (int i = 0; i < NPROC; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) != 0)
            fail_msg("child %d exited with %d", i, WEXITSTATUS(st));
    }
    bitt_store *s;
    assert_int_equal(ts_open_url(&s, "sqlite:%s", path), BITT_OK);
    assert_int_equal(counter_of(s, "n"), NPROC * PER_PROC);
    /* one versionstamp per successful commit: the increments and one add */
    bitt_entry *e;
    assert_int_equal(bitt_kv_get(s, "n", 1, &e), BITT_OK);
    uint64_t vn = bitt_entry_version(e);
    bitt_entry_free(e);
    assert_int_equal(bitt_kv_get(s, "once", 4, &e), BITT_OK);
    uint64_t vo = bitt_entry_version(e);
    bitt_entry_free(e);
    assert_int_equal(vn > vo ? vn : vo, NPROC * PER_PROC + 1);
    bitt_store_close(s);
}

/* ---- failed SQLite allocations --------------------------------------------- */

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

static void check_fault_status(int rc, long n)
{
    if (rc < 0 && rc != BITT_ENOMEM && rc != BITT_EBACKEND)
        fail_msg("allocation %ld failed: unexpected status %d (%s)", n, rc, bitt_error_last());
    if (rc < 0 && bitt_error_last()[0] == '\0')
        fail_msg("allocation %ld failed: status %d without a message", n, rc);
}

static void fault_run(const char *url, long n, int *hit)
{
    bitt_store *s = NULL;
    g_countdown = n;
    int rc = bitt_store_open(url, &s);
    check_fault_status(rc, n);
    if (rc != BITT_OK) {
        g_countdown = -1;
        *hit = 1;
        return;
    }
    bitt_clock_set_manual(s, 1000);
    int results[9];
    bitt_entry *e = NULL;
    bitt_entries *es = NULL;
    bitt_txn *t;
    uint64_t removed;
    const void *keys[2] = {"a", "c"};
    size_t lens[2] = {1, 1};
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
#define FAULT_CALL(i, call)                                                                        \
    do {                                                                                           \
        results[i] = (call);                                                                       \
        check_fault_status(results[i], n);                                                         \
    } while (0)
    FAULT_CALL(0, bitt_kv_set(s, "a", 1, "1", 1, BITT_KIND_COUNTER, 10, NULL));
    FAULT_CALL(1, bitt_kv_increment(s, "a", 1, 2, 0, NULL, NULL));
    FAULT_CALL(2, bitt_kv_get(s, "a", 1, &e));
    bitt_entry_free(e);
    bitt_txn_begin(s, &t);
    bitt_txn_check(t, "x", 1, 0);
    bitt_txn_set(t, "b", 1, "v", 1, 0, 0);
    bitt_txn_sum(t, "c", 1, 1);
    bitt_txn_delete(t, "a", 1);
    FAULT_CALL(3, bitt_txn_commit(t, NULL));
    bitt_txn_free(t);
    e = NULL;
    FAULT_CALL(4, bitt_kv_take(s, "b", 1, &e));
    bitt_entry_free(e);
    FAULT_CALL(5, bitt_kv_get_many(s, keys, lens, 2, &es));
    bitt_entries_free(es);
    es = NULL;
    FAULT_CALL(6, bitt_kv_list(s, &o, &es));
    bitt_entries_free(es);
    bitt_clock_advance(s, 100000);
    FAULT_CALL(7, bitt_kv_purge_expired(s, &removed));
    FAULT_CALL(8, bitt_kv_delete(s, "c", 1));
#undef FAULT_CALL
    *hit = g_countdown == 0;
    g_countdown = -1;

    /* the store still works: a failed call left no transaction open, and
     * the txn either fully happened or not at all */
    assert_int_equal(bitt_kv_set(s, "z", 1, "z", 1, 0, 0, NULL), BITT_OK);
    if (results[3] != BITT_OK) {
        assert_int_equal(bitt_kv_get(s, "x", 1, &e), BITT_NOTFOUND);
    }
    bitt_store_close(s);
}

static void test_failed_allocations(void **state)
{
    (void)state;
    char path[1200], url[1300];
    ts_fresh_path("faults.db", path, sizeof path);
    snprintf(url, sizeof url, "sqlite:%s", path);
    const char *urls[2] = {"sqlite::memory:", url};
    for (int u = 0; u < 2; u++) {
        long n;
        for (n = 1; n < 20000; n += ts_stride()) { /* BITT_TEST_SCALE */
            int hit = 0;
            fault_run(urls[u], n, &hit);
            if (!hit)
                break; /* every allocation of the sequence has failed once */
        }
        assert_true(n > 100);
    }
}

/* ---- differential: sqlite against memory ------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

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

/* The same random steps (tests/c/support/diff.h) on memory, an in-memory
 * SQLite database and a SQLite file: every outcome must match memory's. */
static void test_differential(void **state)
{
    (void)state;
    char path[1200], url[1300];
    ts_fresh_path("diff.db", path, sizeof path);
    snprintf(url, sizeof url, "sqlite:%s?table_prefix=d_&queue_backoff=5,10,20", path);
    const char *urls[3] = {"memory:?queue_backoff=5,10,20", "sqlite::memory:?queue_backoff=5,10,20",
                           url};
    const char *names[3] = {"memory", "sqlite::memory:", "sqlite file"};
    diff_ctx c;
    assert_int_equal(diff_init(&c, 3, rnd, &g_rng, fail_test), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(bitt_store_open(urls[i], &c.s[i]), BITT_OK);
        c.names[i] = names[i];
    }
    diff_manual_clock(&c, 1000000);
    diff_subscribe(&c);
    const int steps = ts_scaled(6000, 300); /* BITT_TEST_SCALE */
    for (c.step = 0; c.step < steps; c.step++) {
        if (rnd(&g_rng, 3))
            diff_kv_step(&c);
        else
            diff_module_step(&c);
        if (rnd(&g_rng, 8) == 0)
            diff_advance(&c, rnd(&g_rng, 40));
    }
    diff_report(&c, stderr, "test_sqlite_backend (differential)");
    diff_free(&c);
    for (int i = 0; i < 3; i++)
        bitt_store_close(c.s[i]);
}

int main(void)
{
    const char *tmp = getenv("BITT_TEST_TMP");
    snprintf(ts_dir, sizeof ts_dir, "%s/sqlite_backend", tmp && *tmp ? tmp : "/tmp");
    if (tmp && *tmp)
        mkdir(tmp, 0777);
    mkdir(ts_dir, 0777);

    /* Route SQLite's allocations through a wrapper that can fail on cue
     * (before SQLite initialises, so every connection uses it). */
    sqlite3_config(SQLITE_CONFIG_GETMALLOC, &g_mem);
    sqlite3_mem_methods m = g_mem;
    m.xMalloc = fail_malloc;
    m.xRealloc = fail_realloc;
    sqlite3_config(SQLITE_CONFIG_MALLOC, &m);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_schema_refusals),
        cmocka_unit_test(test_not_migrated),
        cmocka_unit_test(test_persistence),
        cmocka_unit_test(test_busy),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_failed_allocations),
        cmocka_unit_test(test_differential),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
