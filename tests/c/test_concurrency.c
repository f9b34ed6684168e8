/*
 * tests/c/test_concurrency.c: contention across threads and processes
 * (reliability.md, scenario 5). No sleeps and no timing assertions: only
 * counts.
 *
 *  - 50 threads, each with its own handle on one SQLite file, add one key:
 *    exactly one BITT_OK and 49 BITT_EXISTS.
 *  - the same 50 adds on one shared memory: handle.
 *  - 8 processes x 10,000 increments of one key in one SQLite file (each
 *    child opens its own handle after fork): exactly 80,000.
 *  - 8 processes open one fresh SQLite file at once (racing the schema
 *    creation) and add one key: exactly one wins.
 *  - 8 threads (own SQLite handles, or one shared memory: handle) write
 *    with set, increment and commit: every versionstamp is unique, each
 *    thread's increase, and a get reads back the one its write returned.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bitt.h"
#include "contract.h"
#include "scale.h"

#define ADDERS 50
#define PROCESSES 8
#define INCREMENTS ts_scaled(10000, 200) /* per process; BITT_TEST_SCALE */

static char db_path[4096];
static char db_url[4200];

static void remove_db(const char *path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    char p[4200];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
}

static void fresh_db(const char *name)
{
    snprintf(db_path, sizeof db_path, "%s/concurrency-%s-%ld.db", ct_tmpdir(), name,
             (long)getpid());
    remove_db(db_path);
    snprintf(db_url, sizeof db_url, "sqlite:%s?busy_timeout=60000", db_path);
}

/* ---- threads adding one key ------------------------------------------------------------ */

typedef struct adder {
    bitt_store *store;
    pthread_barrier_t *barrier;
    int rc;
    char message[256];
} adder;

static void *adder_main(void *arg)
{
    adder *a = arg;
    pthread_barrier_wait(a->barrier);
    a->rc = bitt_kv_add(a->store, "k", 1, "x", 1, BITT_KIND_BYTES, BITT_TTL_NONE, NULL);
    if (a->rc < 0)
        snprintf(a->message, sizeof a->message, "%s", bitt_error_last());
    return NULL;
}

/* Runs ADDERS threads on stores[i] and checks one OK, the rest EXISTS. */
static void race_adds(bitt_store **stores)
{
    adder a[ADDERS];
    pthread_t tids[ADDERS];
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, ADDERS), 0);
    for (int i = 0; i < ADDERS; i++) {
        a[i] = (adder){.store = stores[i], .barrier = &barrier};
        assert_int_equal(pthread_create(&tids[i], NULL, adder_main, &a[i]), 0);
    }
    for (int i = 0; i < ADDERS; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&barrier);
    int ok = 0, exists = 0;
    for (int i = 0; i < ADDERS; i++) {
        if (a[i].rc == BITT_OK)
            ok++;
        else if (a[i].rc == BITT_EXISTS)
            exists++;
        else
            print_error("adder %d: status %d (%s): %s\n", i, a[i].rc, bitt_strerror(a[i].rc),
                        a[i].message);
    }
    assert_int_equal(ok, 1);
    assert_int_equal(exists, ADDERS - 1);

    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(stores[0], "k", 1, &e), BITT_OK);
    size_t len;
    const uint8_t *v = bitt_entry_value(e, &len);
    assert_int_equal(len, 1);
    assert_memory_equal(v, "x", 1);
    bitt_entry_free(e);
}

static void test_sqlite_file_50_handles_add(void **state)
{
    (void)state;
    bitt_store *stores[ADDERS] = {0};
    fresh_db("add");
    /* Create the schema first, so the race is only about the add. */
    assert_int_equal(bitt_store_open(db_url, &stores[0]), BITT_OK);
    for (int i = 1; i < ADDERS; i++)
        assert_int_equal(bitt_store_open(db_url, &stores[i]), BITT_OK);
    race_adds(stores);
    for (int i = 0; i < ADDERS; i++)
        bitt_store_close(stores[i]);
    remove_db(db_path);
}

static void test_memory_shared_handle_add(void **state)
{
    (void)state;
    bitt_store *store = NULL;
    assert_int_equal(bitt_store_open("memory:", &store), BITT_OK);
    bitt_store *stores[ADDERS];
    for (int i = 0; i < ADDERS; i++)
        stores[i] = store;
    race_adds(stores);
    bitt_store_close(store);
}

/* ---- versionstamps across handles ----------------------------------------------------- */

#define WRITERS 8
#define WRITES 500

typedef struct writer {
    bitt_store *store;
    pthread_barrier_t *barrier;
    int id;
    uint64_t versions[WRITES];
    int failures;
    char message[256];
} writer;

/* Each write is a set, an increment or a commit, on a key of its own. */
static void *writer_main(void *arg)
{
    writer *w = arg;
    pthread_barrier_wait(w->barrier);
    for (int i = 0; i < WRITES; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "w%d/%04d", w->id, i);
        int rc;
        if (i % 3 == 0) {
            rc = bitt_kv_set(w->store, key, (size_t)n, "v", 1, BITT_KIND_BYTES, 0, &w->versions[i]);
        } else if (i % 3 == 1) {
            rc = bitt_kv_increment(w->store, key, (size_t)n, 1, 0, NULL, &w->versions[i]);
        } else {
            bitt_txn *t = NULL;
            rc = bitt_txn_begin(w->store, &t);
            if (!rc)
                rc = bitt_txn_check(t, key, (size_t)n, 0);
            if (!rc)
                rc = bitt_txn_set(t, key, (size_t)n, "[]", 2, BITT_KIND_JSON, 0);
            if (!rc)
                rc = bitt_txn_commit(t, &w->versions[i]);
            bitt_txn_free(t);
        }
        if (rc && w->failures++ == 0)
            snprintf(w->message, sizeof w->message, "write %d: %d %s", i, rc, bitt_error_last());
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* WRITERS threads on stores[i]: every versionstamp is unique, increases per
 * thread, and is the one a get reads back. */
static void race_versions(bitt_store **stores)
{
    static writer w[WRITERS];
    pthread_t tids[WRITERS];
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, WRITERS), 0);
    for (int i = 0; i < WRITERS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].store = stores[i];
        w[i].barrier = &barrier;
        w[i].id = i;
        assert_int_equal(pthread_create(&tids[i], NULL, writer_main, &w[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&barrier);
    static uint64_t all[WRITERS * WRITES];
    for (int i = 0; i < WRITERS; i++) {
        if (w[i].failures)
            print_error("writer %d: %d failures, first: %s\n", i, w[i].failures, w[i].message);
        assert_int_equal(w[i].failures, 0);
        for (int j = 0; j < WRITES; j++) {
            assert_true(w[i].versions[j] >= 1);
            if (j)
                assert_true(w[i].versions[j] > w[i].versions[j - 1]);
            all[i * WRITES + j] = w[i].versions[j];
        }
    }
    qsort(all, WRITERS * WRITES, sizeof all[0], cmp_u64);
    for (int i = 1; i < WRITERS * WRITES; i++)
        if (all[i] == all[i - 1])
            fail_msg("versionstamp %llu was handed out twice", (unsigned long long)all[i]);
    for (int i = 0; i < WRITERS; i++) {
        for (int j = 0; j < WRITES; j += 37) {
            char key[32];
            int n = snprintf(key, sizeof key, "w%d/%04d", i, j);
            bitt_entry *e = NULL;
            assert_int_equal(bitt_kv_get(stores[(i + 1) % WRITERS], key, (size_t)n, &e), BITT_OK);
            assert_true(bitt_entry_version(e) == w[i].versions[j]);
            bitt_entry_free(e);
        }
    }
}

static void test_sqlite_file_versions_unique_across_handles(void **state)
{
    (void)state;
    bitt_store *stores[WRITERS] = {0};
    fresh_db("versions");
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(bitt_store_open(db_url, &stores[i]), BITT_OK);
    race_versions(stores);
    for (int i = 0; i < WRITERS; i++)
        bitt_store_close(stores[i]);
    remove_db(db_path);
}

static void test_memory_versions_unique_on_shared_handle(void **state)
{
    (void)state;
    bitt_store *store = NULL, *stores[WRITERS];
    assert_int_equal(bitt_store_open("memory:", &store), BITT_OK);
    for (int i = 0; i < WRITERS; i++)
        stores[i] = store;
    race_versions(stores);
    bitt_store_close(store);
}

/* ---- processes ----------------------------------------------------------------------- */

/* In a child: open a handle, increment INCREMENTS times; exit 0 only when
 * every call returned BITT_OK. */
static void child_increments(void)
{
    bitt_store *store = NULL;
    int rc = bitt_store_open(db_url, &store);
    if (rc) {
        fprintf(stderr, "child %ld: open: %d %s\n", (long)getpid(), rc, bitt_error_last());
        _exit(2);
    }
    long failures = 0;
    for (int i = 0; i < INCREMENTS; i++) {
        rc = bitt_kv_increment(store, "n", 1, 1, BITT_TTL_NONE, NULL, NULL);
        if (rc && failures++ == 0)
            fprintf(stderr, "child %ld: increment %d: %d (%s) %s\n", (long)getpid(), i, rc,
                    bitt_strerror(rc), bitt_error_last());
    }
    bitt_store_close(store);
    if (failures)
        fprintf(stderr, "child %ld: %ld of %d increments failed\n", (long)getpid(), failures,
                INCREMENTS);
    _exit(failures ? 1 : 0);
}

/* In a child: open the (fresh) file and add one key; exit 10 for OK, 11 for
 * EXISTS, 1 otherwise. */
static void child_add(void)
{
    bitt_store *store = NULL;
    int rc = bitt_store_open(db_url, &store);
    if (rc) {
        fprintf(stderr, "child %ld: open: %d %s\n", (long)getpid(), rc, bitt_error_last());
        _exit(2);
    }
    rc = bitt_kv_add(store, "k", 1, "x", 1, BITT_KIND_BYTES, BITT_TTL_NONE, NULL);
    if (rc < 0)
        fprintf(stderr, "child %ld: add: %d %s\n", (long)getpid(), rc, bitt_error_last());
    bitt_store_close(store);
    _exit(rc == BITT_OK ? 10 : rc == BITT_EXISTS ? 11 : 1);
}

/* Forks PROCESSES children running fn; returns how many exited with each
 * code 0..15 in counts (others count as 15). */
static void fork_children(void (*fn)(void), int counts[16])
{
    pid_t pids[PROCESSES];
    memset(counts, 0, 16 * sizeof counts[0]);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < PROCESSES; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            fn();
    }
    for (int i = 0; i < PROCESSES; i++) {
        int st = 0;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 15;
        if (!WIFEXITED(st))
            print_error("child %d ended by signal %d\n", i, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        counts[code < 16 ? code : 15]++;
    }
}

static void test_sqlite_file_8_processes_increment(void **state)
{
    (void)state;
    fresh_db("incr");
    bitt_store *store = NULL;
    assert_int_equal(bitt_store_open(db_url, &store), BITT_OK); /* creates the schema */
    bitt_store_close(store);

    int counts[16];
    fork_children(child_increments, counts);
    assert_int_equal(counts[0], PROCESSES);

    assert_int_equal(bitt_store_open(db_url, &store), BITT_OK);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(store, "n", 1, &e), BITT_OK);
    int64_t value = 0;
    assert_int_equal(bitt_entry_counter(e, &value), BITT_OK);
    assert_int_equal(value, (int64_t)PROCESSES * INCREMENTS);
    size_t len;
    const uint8_t *text = bitt_entry_value(e, &len);
    char want[32];
    snprintf(want, sizeof want, "%d", PROCESSES * INCREMENTS);
    assert_string_equal((const char *)text, want); /* canonical decimal */
    bitt_entry_free(e);
    bitt_store_close(store);
    remove_db(db_path);
}

static void test_sqlite_fresh_file_8_processes_add(void **state)
{
    (void)state;
    fresh_db("fresh");
    int counts[16];
    fork_children(child_add, counts);
    assert_int_equal(counts[10], 1);
    assert_int_equal(counts[11], PROCESSES - 1);
    remove_db(db_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sqlite_file_50_handles_add),
        cmocka_unit_test(test_memory_shared_handle_add),
        cmocka_unit_test(test_sqlite_file_versions_unique_across_handles),
        cmocka_unit_test(test_memory_versions_unique_on_shared_handle),
        cmocka_unit_test(test_sqlite_file_8_processes_increment),
        cmocka_unit_test(test_sqlite_fresh_file_8_processes_add),
    };
    return cmocka_run_group_tests_name("concurrency", tests, NULL, NULL);
}
