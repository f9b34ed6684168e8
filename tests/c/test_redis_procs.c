/*
 * The Redis backend across processes: each worker is a forked process with
 * a store of its own on the same server and prefix, and they start
 * together (a pipe they all wait on). Exact counts, one winner, every
 * message acked once, fencing under lease contention, one claim per
 * schedule occurrence, and wake-ups that cross processes.
 *
 * The server: $BITT_TEST_REDIS_URL (scripts/test starts one). Every test
 * uses a prefix of its own. Workers report through their exit status and
 * through files under $BITT_TEST_TMP (or /tmp).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "bitt.h"

#define WORKER_DEADLINE_S 300 /* a worker still running after this is killed */

static const char *g_url;
static char g_dir[512];

static int need_server(void **state)
{
    (void)state;
    g_url = getenv("BITT_TEST_REDIS_URL");
    if (!g_url || !*g_url) {
        fprintf(stderr, "test_redis_procs: BITT_TEST_REDIS_URL is not set. Start a server with "
                        "scripts/redis-test-server start DIR and export the URL it prints "
                        "(scripts/test does both).\n");
        return -1;
    }
    const char *tmp = getenv("BITT_TEST_TMP");
    if (tmp && *tmp)
        mkdir(tmp, 0777);
    snprintf(g_dir, sizeof g_dir, "%s/redis_procs_%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    mkdir(g_dir, 0777);
    return 0;
}

static int cleanup(void **state)
{
    (void)state;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char g_prefix[96];

static void fresh_prefix(const char *name)
{
    static int serial;
    snprintf(g_prefix, sizeof g_prefix, "trp_%ld_%s_%d", (long)getpid(), name, serial++);
}

/* Opens the test's store (in a worker: NULL on failure). */
static bitt_store *open_store(void)
{
    char url[512];
    snprintf(url, sizeof url, "%s?prefix=%s", g_url, g_prefix);
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s)) {
        fprintf(stderr, "open %s: %s\n", url, bitt_error_last());
        return NULL;
    }
    return s;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static FILE *worker_file(int i, const char *mode)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s.%d", g_dir, g_prefix, i);
    return fopen(path, mode);
}

typedef int (*worker_fn)(int index);

/* Forks n workers that start together; statuses[i] gets worker i's exit
 * status (-1 when it did not exit normally). */
static void run_workers(int n, worker_fn fn, int *statuses)
{
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    assert_non_null(pids);
    fflush(NULL);
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(gate[1]);
            char c;
            while (read(gate[0], &c, 1) > 0) {
            }
            _exit(fn(i));
        }
    }
    close(gate[0]);
    close(gate[1]); /* everybody starts */
    time_t deadline = time(NULL) + WORKER_DEADLINE_S;
    for (int left = n; left;) {
        int late = time(NULL) > deadline;
        for (int i = 0; i < n; i++) {
            if (!pids[i])
                continue;
            if (late)
                kill(pids[i], SIGKILL); /* a worker that hangs fails the test */
            int st;
            pid_t p = waitpid(pids[i], &st, late ? 0 : WNOHANG);
            if (p == 0)
                continue;
            statuses[i] = p == pids[i] && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            pids[i] = 0;
            left--;
        }
        if (left)
            sleep_ms(5);
    }
    free(pids);
}

/* ---- 8 x 10,000 increments --------------------------------------------------- */

#define INC_WORKERS 8
#define INC_EACH 10000

static int increment_worker(int i)
{
    bitt_store *s = open_store();
    FILE *f = worker_file(i, "wb");
    if (!s || !f)
        return 2;
    int bad = 0;
    for (int k = 0; k < INC_EACH; k++) {
        uint64_t version = 0;
        int rc = bitt_kv_increment(s, "n", 1, 1, 0, NULL, &version);
        if (rc) {
            fprintf(stderr, "increment: %s\n", bitt_error_last());
            bad = 1;
            break;
        }
        fwrite(&version, sizeof version, 1, f);
    }
    fclose(f);
    bitt_store_close(s);
    return bad;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void test_increments(void **state)
{
    (void)state;
    fresh_prefix("inc");
    int st[INC_WORKERS];
    run_workers(INC_WORKERS, increment_worker, st);
    for (int i = 0; i < INC_WORKERS; i++)
        assert_int_equal(st[i], 0);
    bitt_store *s = open_store();
    assert_non_null(s);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "n", 1, &e), BITT_OK);
    int64_t v = 0;
    assert_int_equal(bitt_entry_counter(e, &v), BITT_OK);
    bitt_entry_free(e);
    assert_int_equal(v, INC_WORKERS * INC_EACH);
    bitt_store_close(s);
    /* Every increment got a versionstamp of its own. */
    uint64_t *all = malloc(sizeof *all * INC_WORKERS * INC_EACH);
    assert_non_null(all);
    size_t n = 0;
    for (int i = 0; i < INC_WORKERS; i++) {
        FILE *f = worker_file(i, "rb");
        assert_non_null(f);
        n += fread(all + n, sizeof *all, INC_EACH, f);
        fclose(f);
    }
    assert_int_equal(n, INC_WORKERS * INC_EACH);
    qsort(all, n, sizeof *all, cmp_u64);
    for (size_t i = 1; i < n; i++)
        if (all[i] == all[i - 1])
            fail_msg("versionstamp %llu handed out twice", (unsigned long long)all[i]);
    free(all);
}

/* ---- 50 concurrent adds ------------------------------------------------------------ */

#define ADD_WORKERS 50

static int add_worker(int i)
{
    bitt_store *s = open_store();
    if (!s)
        return 3;
    char value[16];
    int len = snprintf(value, sizeof value, "w%d", i);
    int rc = bitt_kv_add(s, "k", 1, value, (size_t)len, BITT_KIND_BYTES, 0, NULL);
    bitt_store_close(s);
    return rc == BITT_OK ? 0 : rc == BITT_EXISTS ? 1 : 2;
}

static void test_one_add_wins(void **state)
{
    (void)state;
    fresh_prefix("add");
    int st[ADD_WORKERS];
    run_workers(ADD_WORKERS, add_worker, st);
    int won = -1, lost = 0;
    for (int i = 0; i < ADD_WORKERS; i++) {
        if (st[i] == 0) {
            assert_int_equal(won, -1);
            won = i;
        } else {
            assert_int_equal(st[i], 1);
            lost++;
        }
    }
    assert_true(won >= 0);
    assert_int_equal(lost, ADD_WORKERS - 1);
    bitt_store *s = open_store();
    assert_non_null(s);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_OK);
    char want[16];
    snprintf(want, sizeof want, "w%d", won);
    size_t len;
    const uint8_t *v = bitt_entry_value(e, &len);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(v, want, len);
    bitt_entry_free(e);
    bitt_store_close(s);
}

/* ---- 20,000 messages, 4 consumers, each acked once ---------------------------------- */

#define Q_MESSAGES 20000
#define Q_WORKERS 4

static int queue_worker(int i)
{
    bitt_store *s = open_store();
    FILE *f = worker_file(i, "wb");
    if (!s || !f)
        return 2;
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = i < 2 ? 1 : 64; /* two take one at a time, two in batches */
    o.lease_ms = 600000;
    o.wait_ms = 200;
    int bad = 0;
    for (long loops = 0; loops < 4 * Q_MESSAGES && !bad; loops++) {
        bitt_messages *list = NULL;
        if (bitt_queue_dequeue(s, "jobs", &o, &list)) {
            fprintf(stderr, "dequeue: %s\n", bitt_error_last());
            bad = 1;
            break;
        }
        size_t n = bitt_messages_count(list);
        for (size_t k = 0; k < n; k++) {
            const bitt_message *m = bitt_messages_at(list, k);
            uint64_t id = bitt_message_id(m);
            if (bitt_queue_ack(s, "jobs", id, bitt_message_token(m))) {
                fprintf(stderr, "ack %llu: %s\n", (unsigned long long)id, bitt_error_last());
                bad = 1;
            }
            fwrite(&id, sizeof id, 1, f);
        }
        bitt_messages_free(list);
        if (!n) {
            bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
            if (bitt_queue_stats_get(s, "jobs", &st))
                bad = 1;
            else if (!st.pending && !st.delayed && !st.processing)
                break;
        }
    }
    fclose(f);
    bitt_store_close(s);
    return bad;
}

static void test_queue_each_acked_once(void **state)
{
    (void)state;
    fresh_prefix("queue");
    bitt_store *s = open_store();
    assert_non_null(s);
    for (int i = 0; i < Q_MESSAGES;) {
        bitt_txn *txn = NULL;
        assert_int_equal(bitt_txn_begin(s, &txn), BITT_OK);
        for (int k = 0; k < 500; k++, i++) {
            char payload[16];
            int len = snprintf(payload, sizeof payload, "m%d", i);
            assert_int_equal(
                bitt_txn_enqueue(txn, "jobs", payload, (size_t)len, BITT_KIND_BYTES, NULL),
                BITT_OK);
        }
        assert_int_equal(bitt_txn_commit(txn, NULL), BITT_OK);
        bitt_txn_free(txn);
    }
    int st[Q_WORKERS];
    run_workers(Q_WORKERS, queue_worker, st);
    for (int i = 0; i < Q_WORKERS; i++)
        assert_int_equal(st[i], 0);
    unsigned char *seen = calloc(Q_MESSAGES + 1, 1);
    assert_non_null(seen);
    size_t total = 0;
    for (int i = 0; i < Q_WORKERS; i++) {
        FILE *f = worker_file(i, "rb");
        assert_non_null(f);
        uint64_t id;
        while (fread(&id, sizeof id, 1, f) == 1) {
            if (id < 1 || id > Q_MESSAGES)
                fail_msg("unknown message id %llu", (unsigned long long)id);
            if (seen[id]++)
                fail_msg("message %llu delivered twice", (unsigned long long)id);
            total++;
        }
        fclose(f);
    }
    free(seen);
    assert_int_equal(total, Q_MESSAGES);
    bitt_queue_stats stats = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "jobs", &stats), BITT_OK);
    assert_int_equal(stats.pending + stats.delayed + stats.processing + stats.dead, 0);
    bitt_store_close(s);
}

/* ---- lease contention and fencing ------------------------------------------------ */

#define L_WORKERS 4
#define L_ROUNDS 40
#define L_TTL_MS 40

typedef struct fenced {
    uint64_t version;
    uint64_t epoch;
} fenced;

/* A commit fenced by (owner, epoch): BITT_OK with its versionstamp. */
static int fenced_commit(bitt_store *s, const char *owner, uint64_t epoch, uint64_t *version)
{
    bitt_txn *txn = NULL;
    int rc = bitt_txn_begin(s, &txn);
    if (!rc)
        rc = bitt_txn_fence(txn, "L", owner, epoch);
    if (!rc)
        rc = bitt_txn_sum(txn, "writes", 6, 1);
    if (!rc)
        rc = bitt_txn_commit(txn, version);
    bitt_txn_free(txn);
    return rc;
}

static int lease_worker(int i)
{
    bitt_store *s = open_store();
    FILE *f = worker_file(i, "wb");
    if (!s || !f)
        return 2;
    char owner[16];
    snprintf(owner, sizeof owner, "p%d", i);
    int stale_accepted = 0, failures = 0;
    time_t deadline = time(NULL) + 120;
    for (int round = 0; round < L_ROUNDS && time(NULL) < deadline;) {
        uint64_t epoch = 0;
        int rc = bitt_lease_acquire(s, "L", owner, L_TTL_MS, &epoch, NULL);
        if (rc == BITT_EXISTS) {
            sleep_ms(2);
            continue;
        }
        if (rc) {
            failures++;
            break;
        }
        round++;
        for (int k = 0; k < 3; k++) {
            fenced rec = {0, epoch};
            rc = fenced_commit(s, owner, epoch, &rec.version);
            if (rc == BITT_OK)
                fwrite(&rec, sizeof rec, 1, f);
            else if (rc != BITT_ELEASELOST)
                failures++;
        }
        /* A paused holder: its lease has run out, so its epoch is stale,
         * whether or not someone else took the lease meanwhile. */
        sleep_ms(L_TTL_MS + 20);
        fenced rec = {0, epoch};
        rc = fenced_commit(s, owner, epoch, &rec.version);
        if (rc == BITT_OK) {
            stale_accepted++;
            fwrite(&rec, sizeof rec, 1, f);
        } else if (rc != BITT_ELEASELOST) {
            failures++;
        }
        if (bitt_lease_renew(s, "L", owner, epoch, L_TTL_MS, NULL) != BITT_ELEASELOST)
            stale_accepted++;
    }
    fclose(f);
    bitt_store_close(s);
    if (stale_accepted)
        fprintf(stderr, "lease worker %d: %d stale writes accepted\n", i, stale_accepted);
    return stale_accepted ? 1 : failures ? 2 : 0;
}

static int cmp_fenced(const void *a, const void *b)
{
    const fenced *x = a, *y = b;
    return (x->version > y->version) - (x->version < y->version);
}

static void test_lease_fencing(void **state)
{
    (void)state;
    fresh_prefix("lease");
    int st[L_WORKERS];
    run_workers(L_WORKERS, lease_worker, st);
    for (int i = 0; i < L_WORKERS; i++)
        assert_int_equal(st[i], 0);
    fenced *all = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < L_WORKERS; i++) {
        FILE *f = worker_file(i, "rb");
        assert_non_null(f);
        fenced rec;
        while (fread(&rec, sizeof rec, 1, f) == 1) {
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                all = realloc(all, cap * sizeof *all);
                assert_non_null(all);
            }
            all[n++] = rec;
        }
        fclose(f);
    }
    /* In commit order, the epochs never go back: no holder wrote after a
     * newer one had taken the lease. */
    qsort(all, n, sizeof *all, cmp_fenced);
    for (size_t i = 1; i < n; i++) {
        assert_true(all[i].version > all[i - 1].version);
        if (all[i].epoch < all[i - 1].epoch)
            fail_msg("a write with epoch %llu landed after one with epoch %llu",
                     (unsigned long long)all[i].epoch, (unsigned long long)all[i - 1].epoch);
    }
    bitt_store *s = open_store();
    assert_non_null(s);
    bitt_entry *e = NULL;
    int64_t writes = 0;
    if (n) {
        assert_int_equal(bitt_kv_get(s, "writes", 6, &e), BITT_OK);
        assert_int_equal(bitt_entry_counter(e, &writes), BITT_OK);
        bitt_entry_free(e);
    }
    assert_int_equal(writes, n);
    uint64_t epoch = 0;
    assert_int_equal(bitt_lease_acquire(s, "L", "last", 1000, &epoch, NULL), BITT_OK);
    assert_int_equal(epoch, L_WORKERS * L_ROUNDS + 1); /* one epoch per acquisition */
    bitt_store_close(s);
    free(all);
}

/* ---- one claim per schedule occurrence ---------------------------------------- */

#define S_WORKERS 4
#define S_ROUNDS 200
#define S_INTERVAL 1000

static int64_t counter_of(bitt_store *s, const char *key)
{
    bitt_entry *e = NULL;
    int64_t v = 0;
    if (bitt_kv_get(s, key, strlen(key), &e) == BITT_OK)
        bitt_entry_counter(e, &v);
    bitt_entry_free(e);
    return v;
}

/* Rounds in lockstep: in round k every worker claims with its clock at
 * k * interval + interval / 2, when occurrence k * interval is due; the
 * last one to finish a round opens the next. */
static int schedule_worker(int i)
{
    bitt_store *s = open_store();
    FILE *f = worker_file(i, "wb");
    if (!s || !f)
        return 2;
    int bad = 0;
    time_t deadline = time(NULL) + 200;
    for (int64_t k = 1; k <= S_ROUNDS && !bad; k++) {
        while (counter_of(s, "round") < k - 1) {
            if (time(NULL) > deadline) {
                bad = 3;
                break;
            }
            sleep_ms(1);
        }
        if (bad || bitt_clock_set_manual(s, k * S_INTERVAL + S_INTERVAL / 2)) {
            bad = bad ? bad : 2;
            break;
        }
        bitt_schedule *got = NULL;
        int rc = bitt_schedule_claim(s, "job", &got);
        if (rc == BITT_OK) {
            int64_t occurrence = bitt_schedule_occurrence(got);
            fwrite(&occurrence, sizeof occurrence, 1, f);
            bitt_schedule_free(got);
        } else if (rc != BITT_NOTFOUND) {
            bad = 2;
        }
        char done[32];
        snprintf(done, sizeof done, "done/%lld", (long long)k);
        int64_t finished = 0;
        if (bitt_kv_increment(s, done, strlen(done), 1, 0, &finished, NULL))
            bad = 2;
        else if (finished == S_WORKERS && bitt_kv_increment(s, "round", 5, 1, 0, NULL, NULL))
            bad = 2;
    }
    fclose(f);
    bitt_store_close(s);
    return bad;
}

static void test_schedule_claimed_once(void **state)
{
    (void)state;
    fresh_prefix("sched");
    bitt_store *s = open_store();
    assert_non_null(s);
    assert_int_equal(
        bitt_schedule_upsert(s, "job", S_INTERVAL, "run", 3, BITT_KIND_BYTES, S_INTERVAL), BITT_OK);
    int st[S_WORKERS];
    run_workers(S_WORKERS, schedule_worker, st);
    for (int i = 0; i < S_WORKERS; i++)
        assert_int_equal(st[i], 0);
    int claims[S_ROUNDS + 1] = {0};
    int total = 0;
    for (int i = 0; i < S_WORKERS; i++) {
        FILE *f = worker_file(i, "rb");
        assert_non_null(f);
        int64_t occurrence;
        while (fread(&occurrence, sizeof occurrence, 1, f) == 1) {
            int64_t k = occurrence / S_INTERVAL;
            if (occurrence % S_INTERVAL || k < 1 || k > S_ROUNDS)
                fail_msg("unexpected occurrence %lld", (long long)occurrence);
            claims[k]++;
            total++;
        }
        fclose(f);
    }
    for (int k = 1; k <= S_ROUNDS; k++)
        if (claims[k] != 1)
            fail_msg("occurrence %d was claimed %d times", k * S_INTERVAL, claims[k]);
    assert_int_equal(total, S_ROUNDS);
    bitt_store_close(s);
}

/* ---- wake-ups across processes ------------------------------------------------- */

static int g_ready[2];
static int g_started[2];

static int waiting_worker(int i)
{
    bitt_store *s = open_store();
    if (!s)
        return 2;
    int bad = 0;
    if (i == 0) {
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        o.wait_ms = 20000;
        bitt_messages *list = NULL;
        if (write(g_ready[1], "q", 1) != 1)
            bad = 2;
        if (bitt_queue_dequeue(s, "wake", &o, &list) || bitt_messages_count(list) != 1)
            bad = 1;
        bitt_messages_free(list);
    } else {
        bitt_sub *sub = NULL;
        bitt_message *m = NULL;
        if (bitt_pubsub_subscribe(s, "news", &sub))
            bad = 2;
        if (write(g_ready[1], "s", 1) != 1)
            bad = 2;
        if (!bad && bitt_pubsub_next(sub, 20000, &m))
            bad = 1;
        if (!bad) {
            size_t len;
            const uint8_t *p = bitt_message_payload(m, &len);
            bad = len != 5 || memcmp(p, "hello", 5);
        }
        bitt_message_free(m);
        bitt_pubsub_close(sub);
    }
    bitt_store_close(s);
    return bad;
}

static void *publisher(void *arg)
{
    (void)arg;
    char c = 'p';
    /* up and about before the test forks: a fork while this thread was still
     * being set up (the allocator's lock held by its start) would hand the
     * children that lock held, and a child's first malloc would wait forever */
    if (write(g_started[1], &c, 1) != 1)
        return NULL;
    for (int got = 0; got < 2 && read(g_ready[0], &c, 1) == 1; got++) {
    }
    bitt_store *s = open_store();
    if (s) {
        bitt_queue_enqueue(s, "wake", "job", 3, BITT_KIND_BYTES, NULL, NULL);
        bitt_pubsub_publish(s, "news", "hello", 5);
        bitt_store_close(s);
    }
    return NULL;
}

static void test_wakeups_cross_processes(void **state)
{
    (void)state;
    fresh_prefix("wake");
    assert_int_equal(pipe(g_ready), 0);
    assert_int_equal(pipe(g_started), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, publisher, NULL), 0);
    char c;
    assert_int_equal(read(g_started[0], &c, 1), 1);
    close(g_started[0]);
    close(g_started[1]);
    int st[2];
    run_workers(2, waiting_worker, st);
    close(g_ready[1]);
    pthread_join(t, NULL);
    close(g_ready[0]);
    assert_int_equal(st[0], 0);
    assert_int_equal(st[1], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_increments),
        cmocka_unit_test(test_one_add_wins),
        cmocka_unit_test(test_queue_each_acked_once),
        cmocka_unit_test(test_lease_fencing),
        cmocka_unit_test(test_schedule_claimed_once),
        cmocka_unit_test(test_wakeups_cross_processes),
    };
    return cmocka_run_group_tests(tests, need_server, cleanup);
}
