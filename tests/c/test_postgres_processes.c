/*
 * The PostgreSQL backend across processes: every child is forked and opens
 * its own store (its own connections) on one schema, and the children
 * start together behind a process-shared barrier.
 *
 *   8 processes x 10,000 increments of one key = exactly 80,000
 *   50 processes add one key at once: exactly one wins
 *   4 processes consume 20,000 messages (two one by one, two in batches):
 *     each acknowledged exactly once, none lost, none dead; then 6,000
 *     messages of three topics and three priorities, claimed over all
 *     three topics at once, likewise
 *   4 processes contend for one lease and write fenced commits; after a
 *     pause past the lease each tries a stale commit: every stale one is
 *     rejected, and in versionstamp order the epochs never go back
 *   4 processes claim a schedule at each of 200 occurrences: each
 *     occurrence is claimed exactly once
 *   8 processes migrate one schema at once (on open, and with
 *     bitt_store_migrate)
 *
 * The server: $BITT_TEST_POSTGRES_URL. Each test has a schema of its own
 * (t_<pid>_<n>), dropped at the end. Every child has an alarm, so nothing
 * waits forever; no assertion is about timing.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "bitt.h"

#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#define HAVE_LIBPQ 1
#endif

#define CHILD_ALARM_S 400 /* no child outlives this */

static const char *g_url;

static int need_server(void **state)
{
    (void)state;
#ifndef HAVE_LIBPQ
    fprintf(stderr, "test_postgres_processes: this build has no libpq (the PostgreSQL backend "
                    "is not built): nothing to test against\n");
    return -1;
#else
    g_url = getenv("BITT_TEST_POSTGRES_URL");
    if (!g_url || !*g_url || strchr(g_url, '?')) {
        fprintf(stderr, "test_postgres_processes: BITT_TEST_POSTGRES_URL is not set (or has "
                        "options). Start a server with scripts/postgres-test-server start DIR "
                        "and export the URL it prints (scripts/test does both).\n");
        return -1;
    }
    return 0;
#endif
}

#ifdef HAVE_LIBPQ

/* ---- shared memory, children, schemas ------------------------------------------ */

typedef struct shared {
    pthread_barrier_t barrier;
    int failed;      /* a child recorded an error */
    char error[512]; /* the first one */
    uint64_t count[8];
    unsigned char data[]; /* per test */
} shared;

static shared *g_sh;
static size_t g_sh_size;

static void shared_new(size_t data, unsigned children)
{
    g_sh_size = sizeof *g_sh + data;
    g_sh = mmap(NULL, g_sh_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(g_sh != MAP_FAILED);
    memset(g_sh, 0, g_sh_size);
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    assert_int_equal(pthread_barrier_init(&g_sh->barrier, &a, children), 0);
    pthread_barrierattr_destroy(&a);
}

static void shared_free(void)
{
    pthread_barrier_destroy(&g_sh->barrier);
    munmap(g_sh, g_sh_size);
    g_sh = NULL;
}

/* Records the first error of any child. */
static void child_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void child_error(const char *fmt, ...)
{
    if (__atomic_exchange_n(&g_sh->failed, 1, __ATOMIC_SEQ_CST))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_sh->error, sizeof g_sh->error, fmt, ap);
    va_end(ap);
}

static void bump(uint64_t *counter)
{
    __atomic_add_fetch(counter, 1, __ATOMIC_SEQ_CST);
}

static void barrier(void)
{
    pthread_barrier_wait(&g_sh->barrier);
}

static char g_schemas[16][64];
static int g_nschemas;

static char *fresh_url(char *url, size_t size, const char *extra)
{
    static int serial;
    assert_true(g_nschemas < 16);
    char *s = g_schemas[g_nschemas++];
    snprintf(s, 64, "t_%ld_%d", (long)getpid(), serial++);
    /* The children connect all at once; under valgrind (scripts/test-valgrind)
     * that can take longer than the default connect_timeout of 10 s. */
    snprintf(url, size, "%s?schema=%s&connect_timeout=300%s%s", g_url, s, extra ? "&" : "",
             extra ? extra : "");
    return url;
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static int drop_schemas(void **state)
{
    (void)state;
    if (!g_url || !*g_url)
        return 0;
    PGconn *c = PQconnectdb(g_url);
    PQsetNoticeProcessor(c, quiet, NULL);
    for (int i = 0; i < g_nschemas && PQstatus(c) == CONNECTION_OK; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS \"%s\" CASCADE", g_schemas[i]);
        PQclear(PQexec(c, sql));
    }
    PQfinish(c);
    return 0;
}

static const char *g_child_url;

/* Forks n children running fn(i) (each exits with _exit), waits for all;
 * fails the test when one exited badly or recorded an error. */
static void run_children(int n, void (*fn)(int))
{
    pid_t pids[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            alarm(CHILD_ALARM_S);
            fn(i);
            _exit(g_sh->failed ? 1 : 0);
        }
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int st = 0;
        waitpid(pids[i], &st, 0);
        bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    if (g_sh->failed)
        fail_msg("a child failed: %s", g_sh->error);
    if (bad)
        fail_msg("%d children did not exit cleanly", bad);
}

/* Opens the test's store in a child, or records why not (NULL). */
static bitt_store *child_open(void)
{
    bitt_store *s = NULL;
    int rc = bitt_store_open(g_child_url, &s);
    if (rc)
        child_error("open: %d %s", rc, bitt_error_last());
    return s;
}

static bitt_store *parent_open(const char *url)
{
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("open: %d %s", rc, bitt_error_last());
    return s;
}

static int64_t counter_of(bitt_store *s, const char *key)
{
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(s, key, strlen(key), &e);
    if (rc)
        fail_msg("get %s: %d %s", key, rc, bitt_error_last());
    int64_t v = 0;
    assert_int_equal(bitt_entry_counter(e, &v), BITT_OK);
    bitt_entry_free(e);
    return v;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- 8 x 10,000 increments ------------------------------------------------------------ */

#define INC_CHILDREN 8
#define INC_EACH 10000

static void child_increment(int i)
{
    (void)i;
    bitt_store *s = child_open();
    barrier();
    for (int k = 0; s && k < INC_EACH; k++) {
        int rc = bitt_kv_increment(s, "n", 1, 1, 0, NULL, NULL);
        if (rc) {
            child_error("increment %d: %d %s", k, rc, bitt_error_last());
            break;
        }
        bump(&g_sh->count[0]);
    }
    bitt_store_close(s);
}

static void test_increments(void **state)
{
    (void)state;
    char url[512];
    g_child_url = fresh_url(url, sizeof url, NULL);
    bitt_store_close(parent_open(url)); /* migrated once, before the race */
    shared_new(0, INC_CHILDREN);
    run_children(INC_CHILDREN, child_increment);
    assert_int_equal(g_sh->count[0], INC_CHILDREN * INC_EACH);
    bitt_store *s = parent_open(url);
    assert_int_equal(counter_of(s, "n"), INC_CHILDREN * INC_EACH);
    bitt_store_close(s);
    shared_free();
}

/* ---- 50 concurrent adds ----------------------------------------------------------------- */

#define ADD_CHILDREN 50

static void child_add(int i)
{
    bitt_store *s = child_open();
    char value[16];
    snprintf(value, sizeof value, "child-%d", i);
    barrier();
    if (!s)
        return;
    int rc = bitt_kv_add(s, "k", 1, value, strlen(value), BITT_KIND_BYTES, 0, NULL);
    if (rc == BITT_OK) {
        bump(&g_sh->count[0]);
        g_sh->count[2] = (uint64_t)i;
    } else if (rc == BITT_EXISTS) {
        bump(&g_sh->count[1]);
    } else {
        child_error("add: %d %s", rc, bitt_error_last());
    }
    bitt_store_close(s);
}

static void test_adds(void **state)
{
    (void)state;
    char url[512];
    g_child_url = fresh_url(url, sizeof url, NULL);
    bitt_store_close(parent_open(url));
    shared_new(0, ADD_CHILDREN);
    run_children(ADD_CHILDREN, child_add);
    assert_int_equal(g_sh->count[0], 1);
    assert_int_equal(g_sh->count[1], ADD_CHILDREN - 1);
    bitt_store *s = parent_open(url);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_OK);
    char winner[16];
    snprintf(winner, sizeof winner, "child-%d", (int)g_sh->count[2]);
    size_t len;
    const uint8_t *v = bitt_entry_value(e, &len);
    assert_int_equal(len, strlen(winner));
    assert_memory_equal(v, winner, len);
    bitt_entry_free(e);
    bitt_store_close(s);
    shared_free();
}

/* ---- 4 consumers, 20,000 messages --------------------------------------------------------- */

#define Q_CHILDREN 4
#define Q_MESSAGES 20000
#define Q_BATCH 500
#define Q_TOPICS 3

/* How many messages the consumers take, and over how many topics ("jobs"
 * alone, or message k in topic jobs<k % 3> at priority k % 3 and each
 * dequeue over the three). */
static int g_q_messages = Q_MESSAGES;
static int g_q_topics = 1;
static const char *const g_topic_names[Q_TOPICS] = {"jobs0", "jobs1", "jobs2"};

static const char *topic_of(int index)
{
    return g_q_topics == 1 ? "jobs" : g_topic_names[index % Q_TOPICS];
}

static void child_consume(int i)
{
    bitt_store *s = child_open();
    uint64_t *acked = (uint64_t *)g_sh->data;
    const char *one = "jobs";
    const char *const *topics = g_q_topics == 1 ? &one : g_topic_names;
    barrier();
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = i % 2 ? 1 : 10; /* two consumers one by one, two in batches */
    o.lease_ms = 120000;
    o.wait_ms = 200;
    time_t until = time(NULL) + 300;
    while (s && __atomic_load_n(&g_sh->count[0], __ATOMIC_SEQ_CST) < (uint64_t)g_q_messages) {
        if (time(NULL) > until) {
            child_error("consumer %d: only %llu of %d acked in time", i,
                        (unsigned long long)g_sh->count[0], g_q_messages);
            break;
        }
        bitt_messages *list = NULL;
        int rc = bitt_queue_dequeue_topics(s, topics, (size_t)g_q_topics, &o, NULL, &list);
        if (rc) {
            child_error("dequeue: %d %s", rc, bitt_error_last());
            break;
        }
        for (size_t k = 0; k < bitt_messages_count(list); k++) {
            const bitt_message *m = bitt_messages_at(list, k);
            size_t len;
            const uint8_t *p = bitt_message_payload(m, &len);
            long index = strtol((const char *)p, NULL, 10);
            rc =
                bitt_queue_ack(s, bitt_message_topic(m), bitt_message_id(m), bitt_message_token(m));
            if (rc) {
                child_error("ack %ld: %d %s", index, rc, bitt_error_last());
                break;
            }
            if (index < 0 || index >= g_q_messages ||
                strcmp(bitt_message_topic(m), topic_of((int)index))) {
                child_error("a payload out of range: %ld", index);
                break;
            }
            bump(&acked[index]);
            bump(&g_sh->count[0]);
        }
        bitt_messages_free(list);
        if (g_sh->failed)
            break;
    }
    bitt_store_close(s);
}

/* Enqueues the messages (in commits of Q_BATCH), lets the children
 * consume them, and checks that each was acked once and none is left. */
static void consume_all(int messages, int topics)
{
    g_q_messages = messages;
    g_q_topics = topics;
    char url[512];
    g_child_url = fresh_url(url, sizeof url, NULL);
    bitt_store *s = parent_open(url);
    for (int b = 0; b < messages / Q_BATCH; b++) {
        bitt_txn *txn = NULL;
        assert_int_equal(bitt_txn_begin(s, &txn), BITT_OK);
        for (int k = 0; k < Q_BATCH; k++) {
            int index = b * Q_BATCH + k;
            char payload[16];
            snprintf(payload, sizeof payload, "%d", index);
            bitt_enqueue_options eo = BITT_ENQUEUE_OPTIONS_INIT;
            eo.priority = topics == 1 ? 0 : index % Q_TOPICS;
            assert_int_equal(bitt_txn_enqueue(txn, topic_of(index), payload, strlen(payload),
                                              BITT_KIND_BYTES, &eo),
                             BITT_OK);
        }
        int rc = bitt_txn_commit(txn, NULL);
        if (rc)
            fail_msg("enqueue batch: %d %s", rc, bitt_error_last());
        bitt_txn_free(txn);
    }
    bitt_store_close(s);
    shared_new((size_t)messages * sizeof(uint64_t), Q_CHILDREN);
    run_children(Q_CHILDREN, child_consume);
    const uint64_t *acked = (const uint64_t *)g_sh->data;
    for (int k = 0; k < messages; k++)
        if (acked[k] != 1)
            fail_msg("message %d was acked %llu times", k, (unsigned long long)acked[k]);
    assert_int_equal(g_sh->count[0], messages);
    s = parent_open(url);
    for (int k = 0; k < topics; k++) {
        bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
        assert_int_equal(bitt_queue_stats_get(s, topic_of(k), &st), BITT_OK);
        assert_int_equal(st.pending + st.delayed + st.processing + st.dead, 0);
    }
    bitt_store_close(s);
    shared_free();
}

static void test_queue_consumers(void **state)
{
    (void)state;
    consume_all(Q_MESSAGES, 1);
}

/* Claims over several topics lock rows of each topic that they may not
 * take: concurrent ones still never share or lose a message. */
static void test_queue_consumers_over_topics(void **state)
{
    (void)state;
    consume_all(6000, Q_TOPICS);
}

/* ---- lease contention and fencing ---------------------------------------------------------- */

#define L_CHILDREN 4
#define L_ACQUIRES 6 /* per child */
#define L_TTL 300
#define L_LOG 1024

typedef struct fence_log {
    uint64_t epoch;
    uint64_t version;
    int status;
    int stale; /* attempted after a pause past the lease */
} fence_log;

static void log_fence(uint64_t epoch, uint64_t version, int status, int stale)
{
    fence_log *log = (fence_log *)g_sh->data;
    uint64_t at = __atomic_fetch_add(&g_sh->count[0], 1, __ATOMIC_SEQ_CST);
    if (at < L_LOG)
        log[at] = (fence_log){epoch, version, status, stale};
}

static int fenced_commit(bitt_store *s, const char *owner, uint64_t epoch, uint64_t *version)
{
    bitt_txn *txn = NULL;
    int rc = bitt_txn_begin(s, &txn);
    if (!rc)
        rc = bitt_txn_fence(txn, "L", owner, epoch);
    if (!rc)
        rc = bitt_txn_sum(txn, "writes", 6, 1);
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)epoch);
    if (!rc)
        rc = bitt_txn_set(txn, "last", 4, text, strlen(text), BITT_KIND_BYTES, 0);
    *version = 0;
    if (!rc)
        rc = bitt_txn_commit(txn, version);
    bitt_txn_free(txn);
    return rc;
}

static void child_lease(int i)
{
    bitt_store *s = child_open();
    char owner[16];
    snprintf(owner, sizeof owner, "p%d", i);
    barrier();
    time_t until = time(NULL) + 120;
    for (int got = 0; s && got < L_ACQUIRES && time(NULL) < until && !g_sh->failed;) {
        uint64_t epoch = 0;
        int rc = bitt_lease_acquire(s, "L", owner, L_TTL, &epoch, NULL);
        if (rc == BITT_EXISTS) {
            sleep_ms(10);
            continue;
        }
        if (rc) {
            child_error("acquire: %d %s", rc, bitt_error_last());
            break;
        }
        got++;
        bump(&g_sh->count[1]);
        for (int k = 0; k < 3; k++) {
            uint64_t version;
            rc = fenced_commit(s, owner, epoch, &version);
            if (rc != BITT_OK && rc != BITT_ELEASELOST) {
                child_error("fenced commit: %d %s", rc, bitt_error_last());
                break;
            }
            log_fence(epoch, version, rc, 0);
        }
        if (got % 2) {
            /* A pause past the lease, then a stale write. */
            sleep_ms(L_TTL + 150);
            uint64_t version;
            rc = fenced_commit(s, owner, epoch, &version);
            log_fence(epoch, version, rc, 1);
        } else {
            rc = bitt_lease_release(s, "L", owner, epoch);
            if (rc != BITT_OK && rc != BITT_ELEASELOST)
                child_error("release: %d %s", rc, bitt_error_last());
        }
    }
    bitt_store_close(s);
}

static int by_version(const void *a, const void *b)
{
    const fence_log *x = a, *y = b;
    return (x->version > y->version) - (x->version < y->version);
}

static void test_lease_fencing(void **state)
{
    (void)state;
    char url[512];
    g_child_url = fresh_url(url, sizeof url, NULL);
    bitt_store_close(parent_open(url));
    shared_new(L_LOG * sizeof(fence_log), L_CHILDREN);
    run_children(L_CHILDREN, child_lease);
    fence_log *log = (fence_log *)g_sh->data;
    size_t n = g_sh->count[0] < L_LOG ? g_sh->count[0] : L_LOG, landed = 0, stale = 0;
    assert_true(g_sh->count[1] >= L_CHILDREN); /* everyone got the lease at least once */
    for (size_t k = 0; k < n; k++) {
        if (log[k].stale) {
            stale++;
            if (log[k].status != BITT_ELEASELOST)
                fail_msg("a stale commit with epoch %llu gave %d", (unsigned long long)log[k].epoch,
                         log[k].status);
        }
        landed += log[k].status == BITT_OK;
    }
    assert_true(stale > 0);
    /* In commit (versionstamp) order, epochs never go back. */
    fence_log *ok = calloc(n + 1, sizeof *ok);
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (log[k].status == BITT_OK)
            ok[m++] = log[k];
    qsort(ok, m, sizeof *ok, by_version);
    for (size_t k = 1; k < m; k++)
        if (ok[k].epoch < ok[k - 1].epoch)
            fail_msg("epoch %llu landed after epoch %llu", (unsigned long long)ok[k].epoch,
                     (unsigned long long)ok[k - 1].epoch);
    free(ok);
    bitt_store *s = parent_open(url);
    assert_int_equal(counter_of(s, "writes"), (int64_t)landed);
    bitt_store_close(s);
    shared_free();
}

/* ---- one claim per schedule occurrence ------------------------------------------------------- */

#define S_CHILDREN 4
#define S_OCCURRENCES 200
#define S_START 1000000
#define S_INTERVAL 1000

static void child_claim(int i)
{
    (void)i;
    bitt_store *s = child_open();
    uint64_t *claimed = (uint64_t *)g_sh->data;
    for (int k = 0; k < S_OCCURRENCES; k++) {
        barrier(); /* everyone at occurrence k together */
        if (!s || g_sh->failed)
            continue;
        int64_t at = S_START + (int64_t)k * S_INTERVAL;
        bitt_clock_set_manual(s, at);
        bitt_schedule *sc = NULL;
        int rc = bitt_schedule_claim(s, "", &sc);
        if (rc == BITT_OK) {
            if (bitt_schedule_occurrence(sc) != at)
                child_error("claimed occurrence %lld at %lld",
                            (long long)bitt_schedule_occurrence(sc), (long long)at);
            bump(&claimed[k]);
        } else if (rc != BITT_NOTFOUND) {
            child_error("claim: %d %s", rc, bitt_error_last());
        }
        bitt_schedule_free(sc);
    }
    bitt_store_close(s);
}

static void test_schedule_claims(void **state)
{
    (void)state;
    char url[512];
    g_child_url = fresh_url(url, sizeof url, NULL);
    bitt_store *s = parent_open(url);
    assert_int_equal(bitt_schedule_upsert(s, "tick", S_INTERVAL, "t", 1, BITT_KIND_BYTES, S_START),
                     BITT_OK);
    bitt_store_close(s);
    shared_new(S_OCCURRENCES * sizeof(uint64_t), S_CHILDREN);
    run_children(S_CHILDREN, child_claim);
    const uint64_t *claimed = (const uint64_t *)g_sh->data;
    for (int k = 0; k < S_OCCURRENCES; k++)
        if (claimed[k] != 1)
            fail_msg("occurrence %d was claimed %llu times", k, (unsigned long long)claimed[k]);
    shared_free();
}

/* ---- 8 migrations at once ----------------------------------------------------------------------
 */

#define M_CHILDREN 8

static void child_migrate(int i)
{
    barrier();
    bitt_store *s = child_open(); /* auto_migrate: the race is in open */
    if (!s)
        return;
    int rc = bitt_store_migrate(s); /* and once more, explicitly */
    char key[16];
    snprintf(key, sizeof key, "k%d", i);
    if (!rc)
        rc = bitt_kv_set(s, key, strlen(key), "v", 1, BITT_KIND_BYTES, 0, NULL);
    if (rc)
        child_error("migrate or set: %d %s", rc, bitt_error_last());
    bitt_store_close(s);
}

static void test_migrations_at_once(void **state)
{
    (void)state;
    char url[512];
    g_child_url = fresh_url(url, sizeof url, NULL);
    shared_new(0, M_CHILDREN);
    run_children(M_CHILDREN, child_migrate);
    bitt_store *s = parent_open(url);
    bitt_entries *all = NULL;
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    assert_int_equal(bitt_kv_list(s, &o, &all), BITT_OK);
    assert_int_equal(bitt_entries_count(all), M_CHILDREN);
    bitt_entries_free(all);
    bitt_store_close(s);
    PGconn *c = PQconnectdb(g_url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT value FROM \"%s\".meta WHERE name = 'schema_version'",
             g_schemas[g_nschemas - 1]);
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(r), 1);
    assert_string_equal(PQgetvalue(r, 0, 0), "3"); /* BITT_PG_SCHEMA_VERSION */
    PQclear(r);
    PQfinish(c);
    shared_free();
}

#endif /* HAVE_LIBPQ */

int main(void)
{
#ifdef HAVE_LIBPQ
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_increments),
        cmocka_unit_test(test_adds),
        cmocka_unit_test(test_queue_consumers),
        cmocka_unit_test(test_queue_consumers_over_topics),
        cmocka_unit_test(test_lease_fencing),
        cmocka_unit_test(test_schedule_claims),
        cmocka_unit_test(test_migrations_at_once),
    };
    return cmocka_run_group_tests(tests, need_server, drop_schemas);
#else
    return need_server(NULL) ? 1 : 0;
#endif
}
