/*
 * bench/queue_bench.c: queue throughput of bitt, a job being one enqueue ->
 * dequeue -> ack cycle, on memory and on a SQLite file (WAL,
 * synchronous=NORMAL), one job at a time and in batches of 100 (one commit
 * of 100 enqueues, one dequeue of up to 100, then 100 acks; "batchmany":
 * the same with the 100 acks in one bitt_queue_ack_many), with 1 and 4
 * workers: threads sharing one handle on memory, forked processes with a
 * store each on SQLite. Beside the single-worker SQLite cases, in the same
 * run, raw sqlite3 does the same work two ways:
 *
 *   raw     the SQL the SQLite backend runs for each call (same schema,
 *           pragmas and statements: BEGIN IMMEDIATE, versionstamp, insert;
 *           sweep, merge-select, per-row lease update; sweep, delete), so
 *           bitt/raw is what the engine and the ABI cost on top of it
 *   minimal an autocommit insert, one UPDATE ... RETURNING claim and an
 *           autocommit delete: the least SQL a queue on SQLite can do
 *
 *   queue_bench [-c CASE] [-r ROUNDS] [SECONDS]
 *     SECONDS  time per cell (default 2)
 *     -c CASE  only cells whose name contains CASE (memory, sqlite, raw,
 *              single, batch, batchmany, 1w, 4w)
 *     -r R     split the single-worker SQLite cells into R alternating
 *              slices of bitt and raw (default 3), so drift hits both alike
 *
 * Prints jobs/s per cell and the ratios. No figure is asserted anywhere.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bitt.h"

#define PAYLOAD_SIZE 64
#define BATCH 100
#define WORKERS 4
#define TOPIC "jobs"

static double g_seconds = 2.0;
static int g_rounds = 3;
static uint8_t g_payload[PAYLOAD_SIZE];
static int g_ack_many; /* bitt acks a batch with one bitt_queue_ack_many */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "queue_bench: %s: %s\n", what, msg);
    exit(1);
}

static void check(int rc, const char *what)
{
    if (rc < 0)
        die(what, bitt_error_last());
}

/* ---- bitt: one cycle of `batch` jobs ---------------------------------------- */

static uint64_t bitt_cycle(bitt_store *s, uint32_t batch)
{
    if (batch == 1) {
        check(bitt_queue_enqueue(s, TOPIC, g_payload, PAYLOAD_SIZE, BITT_KIND_BYTES, NULL, NULL),
              "enqueue");
    } else {
        bitt_txn *txn;
        check(bitt_txn_begin(s, &txn), "txn begin");
        for (uint32_t i = 0; i < batch; i++)
            check(bitt_txn_enqueue(txn, TOPIC, g_payload, PAYLOAD_SIZE, BITT_KIND_BYTES, NULL),
                  "txn enqueue");
        check(bitt_txn_commit(txn, NULL), "txn commit");
        bitt_txn_free(txn);
    }
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = batch;
    bitt_messages *list;
    check(bitt_queue_dequeue(s, TOPIC, &o, &list), "dequeue");
    size_t n = bitt_messages_count(list);
    uint64_t ids[BATCH];
    const char *tokens[BATCH];
    for (size_t i = 0; i < n; i++) {
        const bitt_message *m = bitt_messages_at(list, i);
        ids[i] = bitt_message_id(m);
        tokens[i] = bitt_message_token(m);
        if (!g_ack_many)
            check(bitt_queue_ack(s, TOPIC, ids[i], tokens[i]), "ack");
    }
    size_t acked = 0;
    if (g_ack_many && n) {
        check(bitt_queue_ack_many(s, TOPIC, ids, tokens, n, NULL, &acked), "ack_many");
        if (acked != n)
            die("ack_many", "a delivery was not acked");
    }
    bitt_messages_free(list);
    return n;
}

/* ---- raw sqlite3 ----------------------------------------------------------------- */

enum {
    R_BEGIN_IMM,
    R_COMMIT,
    R_STAMP,
    R_INSERT,
    R_SWEEP,
    R_CLAIM,
    R_LEASE,
    R_ACK,
    R_MIN_INSERT,
    R_MIN_CLAIM,
    R_MIN_ACK,
    R_COUNT
};

#define R_COLS                                                                                     \
    "id, payload, kind, attempts, max_attempts, last_error, created_at, due_at, failed_at, token"

static const char *const raw_sql[R_COUNT] = {
    [R_BEGIN_IMM] = "BEGIN IMMEDIATE",
    [R_COMMIT] = "COMMIT",
    [R_STAMP] = "UPDATE \"meta\" SET value = value + 1 WHERE name = 'versionstamp' "
                "RETURNING value",
    [R_INSERT] = "INSERT INTO \"queue\" (topic, state, due_at, attempts, max_attempts, payload, "
                 "kind, created_at, failed_at, dedup_key) VALUES (?1, 0, ?2, 0, ?3, ?4, ?5, ?6, "
                 "0, ?7)",
    [R_SWEEP] = "UPDATE \"queue\" SET state = 2, failed_at = due_at, last_error = ?3, "
                "token = NULL WHERE topic = ?1 AND state = 1 AND due_at <= ?2 AND "
                "attempts >= max_attempts",
    [R_CLAIM] = "SELECT " R_COLS " FROM \"queue\" WHERE topic = ?1 AND state = 0 AND "
                "due_at <= ?2 UNION ALL SELECT " R_COLS " FROM \"queue\" WHERE topic = ?1 AND "
                "state = 1 AND due_at <= ?2 ORDER BY due_at, id LIMIT ?3",
    [R_LEASE] = "UPDATE \"queue\" SET state = 1, attempts = attempts + 1, token = ?2, "
                "due_at = ?3 WHERE id = ?1",
    [R_ACK] = "DELETE FROM \"queue\" WHERE id = ?1 AND topic = ?2 AND state = 1 AND "
              "token = ?3 AND due_at > ?4",
    [R_MIN_INSERT] = "INSERT INTO \"queue\" (topic, state, due_at, attempts, max_attempts, "
                     "payload, kind, created_at, failed_at) VALUES (?1, 0, ?2, 0, 3, ?3, 0, ?2, "
                     "0)",
    [R_MIN_CLAIM] = "UPDATE \"queue\" SET state = 1, attempts = attempts + 1, token = ?4, "
                    "due_at = ?2 + 30000 WHERE id IN (SELECT id FROM \"queue\" WHERE topic = ?1 "
                    "AND state = 0 AND due_at <= ?2 ORDER BY due_at LIMIT ?3) "
                    "RETURNING id, payload",
    [R_MIN_ACK] = "DELETE FROM \"queue\" WHERE id = ?1 AND token = ?2",
};

/* The tables and indexes of the SQLite backend's schema version 2 that a
 * queue touches (core/sqlite/schema.c). */
static const char raw_schema[] =
    "CREATE TABLE IF NOT EXISTS \"meta\" (name TEXT PRIMARY KEY, value INTEGER NOT NULL) "
    "WITHOUT ROWID;"
    "INSERT OR IGNORE INTO \"meta\" (name, value) VALUES ('versionstamp', 0);"
    "CREATE TABLE IF NOT EXISTS \"queue\" (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "topic TEXT NOT NULL, state INTEGER NOT NULL, due_at INTEGER NOT NULL, "
    "attempts INTEGER NOT NULL, max_attempts INTEGER NOT NULL, token TEXT, last_error TEXT, "
    "payload BLOB NOT NULL, kind INTEGER NOT NULL, created_at INTEGER NOT NULL, "
    "failed_at INTEGER NOT NULL, dedup_key BLOB);"
    "CREATE INDEX IF NOT EXISTS \"queue_claim\" ON \"queue\" (topic, state, due_at);"
    "CREATE INDEX IF NOT EXISTS \"queue_dead\" ON \"queue\" (topic, id) WHERE state = 2;"
    "CREATE UNIQUE INDEX IF NOT EXISTS \"queue_dedup\" ON \"queue\" (topic, dedup_key) "
    "WHERE dedup_key IS NOT NULL AND state <> 2;";

typedef struct raw_db {
    sqlite3 *db;
    sqlite3_stmt *st[R_COUNT];
    uint64_t rng;
} raw_db;

static void raw_fail(raw_db *r, const char *what)
{
    die(what, sqlite3_errmsg(r->db));
}

/* Steps a bound statement to its end and resets it. */
static void raw_run(raw_db *r, int id)
{
    sqlite3_stmt *st = r->st[id];
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        ;
    if (rc != SQLITE_DONE)
        raw_fail(r, raw_sql[id]);
    sqlite3_reset(st);
}

static void raw_token(raw_db *r, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (int half = 0; half < 2; half++) {
        uint64_t x = r->rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r->rng = x;
        for (int i = 0; i < 16; i++)
            out[half * 16 + i] = hex[(x >> (60 - 4 * i)) & 15];
    }
    out[32] = '\0';
}

typedef struct raw_msg {
    int64_t id;
    uint8_t payload[PAYLOAD_SIZE];
    char token[33];
} raw_msg;

static void raw_enqueue(raw_db *r, uint32_t batch, int64_t now)
{
    sqlite3_stmt *st = r->st[R_INSERT];
    raw_run(r, R_BEGIN_IMM);
    raw_run(r, R_STAMP);
    for (uint32_t i = 0; i < batch; i++) {
        sqlite3_bind_text(st, 1, TOPIC, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now);
        sqlite3_bind_int64(st, 3, 3);
        sqlite3_bind_blob(st, 4, g_payload, PAYLOAD_SIZE, SQLITE_STATIC);
        sqlite3_bind_int(st, 5, 0);
        sqlite3_bind_int64(st, 6, now);
        sqlite3_bind_null(st, 7);
        raw_run(r, R_INSERT);
    }
    raw_run(r, R_COMMIT);
}

static void raw_sweep(raw_db *r, int64_t now)
{
    sqlite3_stmt *st = r->st[R_SWEEP];
    sqlite3_bind_text(st, 1, TOPIC, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    sqlite3_bind_text(st, 3, "lease expired on the last attempt", -1, SQLITE_STATIC);
    raw_run(r, R_SWEEP);
}

static uint64_t raw_cycle(raw_db *r, uint32_t batch)
{
    static raw_msg msgs[BATCH];
    int64_t now = wall_ms();
    raw_enqueue(r, batch, now);

    /* claim */
    raw_run(r, R_BEGIN_IMM);
    raw_sweep(r, now);
    sqlite3_stmt *st = r->st[R_CLAIM];
    sqlite3_bind_text(st, 1, TOPIC, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    sqlite3_bind_int64(st, 3, batch);
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < BATCH) {
        raw_msg *m = &msgs[n++];
        m->id = sqlite3_column_int64(st, 0);
        int len = sqlite3_column_bytes(st, 1);
        memcpy(m->payload, sqlite3_column_blob(st, 1),
               len < PAYLOAD_SIZE ? (size_t)len : PAYLOAD_SIZE);
        for (int c = 2; c < 10; c++)
            (void)sqlite3_column_int64(st, c);
        raw_token(r, m->token);
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        raw_fail(r, "claim");
    sqlite3_reset(st);
    st = r->st[R_LEASE];
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int64(st, 1, msgs[i].id);
        sqlite3_bind_text(st, 2, msgs[i].token, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now + 30000);
        raw_run(r, R_LEASE);
    }
    raw_run(r, R_COMMIT);

    /* ack each */
    st = r->st[R_ACK];
    for (size_t i = 0; i < n; i++) {
        raw_run(r, R_BEGIN_IMM);
        raw_sweep(r, now);
        sqlite3_bind_int64(st, 1, msgs[i].id);
        sqlite3_bind_text(st, 2, TOPIC, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, msgs[i].token, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, now);
        raw_run(r, R_ACK);
        if (sqlite3_changes(r->db) != 1)
            die("raw ack", "not acked");
        raw_run(r, R_COMMIT);
    }
    return n;
}

static uint64_t raw_min_cycle(raw_db *r, uint32_t batch)
{
    static raw_msg msgs[BATCH];
    int64_t now = wall_ms();
    sqlite3_stmt *st = r->st[R_MIN_INSERT];
    if (batch > 1)
        raw_run(r, R_BEGIN_IMM);
    for (uint32_t i = 0; i < batch; i++) {
        sqlite3_bind_text(st, 1, TOPIC, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now);
        sqlite3_bind_blob(st, 3, g_payload, PAYLOAD_SIZE, SQLITE_STATIC);
        raw_run(r, R_MIN_INSERT);
    }
    if (batch > 1)
        raw_run(r, R_COMMIT);

    char token[33];
    raw_token(r, token); /* one token for the claim's rows: the least work */
    st = r->st[R_MIN_CLAIM];
    sqlite3_bind_text(st, 1, TOPIC, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    sqlite3_bind_int64(st, 3, batch);
    sqlite3_bind_text(st, 4, token, -1, SQLITE_STATIC);
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < BATCH) {
        raw_msg *m = &msgs[n++];
        m->id = sqlite3_column_int64(st, 0);
        int len = sqlite3_column_bytes(st, 1);
        memcpy(m->payload, sqlite3_column_blob(st, 1),
               len < PAYLOAD_SIZE ? (size_t)len : PAYLOAD_SIZE);
    }
    if (rc != SQLITE_DONE)
        raw_fail(r, "minimal claim");
    sqlite3_reset(st);
    st = r->st[R_MIN_ACK];
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int64(st, 1, msgs[i].id);
        sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
        raw_run(r, R_MIN_ACK);
    }
    return n;
}

static raw_db *raw_open(const char *path)
{
    raw_db *r = calloc(1, sizeof *r);
    if (!r)
        die("raw", "out of memory");
    r->rng = 88172645463325252ull;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &r->db, flags, NULL) != SQLITE_OK)
        raw_fail(r, "open");
    sqlite3_busy_timeout(r->db, 5000);
    const char *setup = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
                        "PRAGMA cache_size = -65536;";
    if (sqlite3_exec(r->db, setup, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(r->db, raw_schema, NULL, NULL, NULL) != SQLITE_OK)
        raw_fail(r, "setup");
    for (int i = 0; i < R_COUNT; i++)
        if (sqlite3_prepare_v3(r->db, raw_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &r->st[i], NULL) !=
            SQLITE_OK)
            raw_fail(r, raw_sql[i]);
    return r;
}

static void raw_close(raw_db *r)
{
    if (!r)
        return;
    for (int i = 0; i < R_COUNT; i++)
        sqlite3_finalize(r->st[i]);
    sqlite3_close(r->db);
    free(r);
}

/* ---- running cells -------------------------------------------------------------- */

typedef struct tally {
    uint64_t jobs;
    double secs;
} tally;

static double rate(const tally *t)
{
    return t->secs > 0 ? (double)t->jobs / t->secs : 0;
}

typedef uint64_t (*cycle_fn)(void *ctx, uint32_t batch);

static uint64_t bitt_cycle_fn(void *ctx, uint32_t batch)
{
    return bitt_cycle(ctx, batch);
}
static uint64_t raw_cycle_fn(void *ctx, uint32_t batch)
{
    return raw_cycle(ctx, batch);
}
static uint64_t raw_min_cycle_fn(void *ctx, uint32_t batch)
{
    return raw_min_cycle(ctx, batch);
}

/* Runs cycles for about secs seconds; adds to t. */
static void run_for(cycle_fn fn, void *ctx, uint32_t batch, double secs, tally *t)
{
    uint64_t n = 0;
    double start = now_s(), end = start + secs, now;
    do {
        n += fn(ctx, batch);
        now = now_s();
    } while (now < end);
    t->jobs += n;
    t->secs += now - start;
}

/* Memory, several threads on one handle. */
typedef struct thread_arg {
    bitt_store *store;
    uint32_t batch;
    pthread_barrier_t *start;
    tally result;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    pthread_barrier_wait(a->start);
    run_for(bitt_cycle_fn, a->store, a->batch, g_seconds, &a->result);
    return NULL;
}

static tally run_threads(bitt_store *s, uint32_t batch, int workers)
{
    pthread_t th[WORKERS];
    thread_arg args[WORKERS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)workers);
    for (int i = 0; i < workers; i++) {
        args[i] = (thread_arg){s, batch, &start, {0, 0}};
        if (pthread_create(&th[i], NULL, thread_main, &args[i]))
            die("pthread_create", strerror(errno));
    }
    tally total = {0, 0};
    for (int i = 0; i < workers; i++) {
        pthread_join(th[i], NULL);
        total.jobs += args[i].result.jobs;
        if (args[i].result.secs > total.secs)
            total.secs = args[i].result.secs;
    }
    pthread_barrier_destroy(&start);
    return total;
}

/* SQLite, several processes with a store each on url: each child opens its
 * store, says it is ready, waits for the start, runs, and reports. */
static tally run_processes(const char *url, uint32_t batch, int workers)
{
    int ready[2], go[2], done[2];
    if (pipe(ready) || pipe(go) || pipe(done))
        die("pipe", strerror(errno));
    pid_t pids[WORKERS];
    for (int i = 0; i < workers; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            die("fork", strerror(errno));
        if (pids[i] == 0) {
            bitt_store *s;
            if (bitt_store_open(url, &s) != BITT_OK)
                die(url, bitt_error_last());
            char c = 'r';
            if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
                _exit(2);
            tally t = {0, 0};
            run_for(bitt_cycle_fn, s, batch, g_seconds, &t);
            bitt_store_close(s);
            if (write(done[1], &t, sizeof t) != (ssize_t)sizeof t)
                _exit(2);
            _exit(0);
        }
    }
    char c;
    for (int i = 0; i < workers; i++)
        if (read(ready[0], &c, 1) != 1)
            die("worker", "did not start");
    for (int i = 0; i < workers; i++)
        if (write(go[1], "g", 1) != 1)
            die("worker", "cannot start");
    tally total = {0, 0};
    for (int i = 0; i < workers; i++) {
        tally t;
        if (read(done[0], &t, sizeof t) != (ssize_t)sizeof t)
            die("worker", "failed");
        total.jobs += t.jobs;
        if (t.secs > total.secs)
            total.secs = t.secs;
    }
    for (int i = 0; i < workers; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            die("worker", "exited badly");
    }
    close(ready[0]), close(ready[1]), close(go[0]), close(go[1]), close(done[0]), close(done[1]);
    return total;
}

/* Checks that no delivery was left unacked or died: with several workers
 * a few jobs may still wait (a worker's dequeue can find its own enqueue
 * taken by another), but every dequeued job was acked. */
static void check_settled(bitt_store *s)
{
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    check(bitt_queue_stats_get(s, TOPIC, &st), "stats");
    if (st.processing || st.dead || st.delayed)
        die("after the run", "a delivery was left unacked");
}

static void check_settled_url(const char *url)
{
    bitt_store *s;
    if (bitt_store_open(url, &s) != BITT_OK)
        die(url, bitt_error_last());
    check_settled(s);
    bitt_store_close(s);
}

/* A memory cell, run in a child process that reports its tally. */
static tally run_memory_cell(uint32_t batch, int workers)
{
    int done[2];
    if (pipe(done))
        die("pipe", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork", strerror(errno));
    if (pid == 0) {
        bitt_store *s;
        if (bitt_store_open("memory:", &s) != BITT_OK)
            die("memory:", bitt_error_last());
        tally t = {0, 0};
        if (workers == 1)
            run_for(bitt_cycle_fn, s, batch, g_seconds, &t);
        else
            t = run_threads(s, batch, workers);
        check_settled(s);
        bitt_store_close(s);
        if (write(done[1], &t, sizeof t) != (ssize_t)sizeof t)
            _exit(2);
        _exit(0);
    }
    tally t;
    if (read(done[0], &t, sizeof t) != (ssize_t)sizeof t)
        die("memory cell", "failed");
    int status;
    waitpid(pid, &status, 0);
    close(done[0]), close(done[1]);
    return t;
}

static int want(const char *filter, const char *cell)
{
    return !filter || strstr(cell, filter);
}

static void remove_db(const char *path)
{
    char p[4300];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

static void usage(void)
{
    fprintf(stderr, "usage: queue_bench [-c CASE] [-r ROUNDS] [SECONDS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *filter = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "c:r:h")) != -1) {
        switch (opt) {
        case 'c': filter = optarg; break;
        case 'r':
            g_rounds = atoi(optarg);
            if (g_rounds < 1)
                usage();
            break;
        default: usage();
        }
    }
    if (optind < argc) {
        g_seconds = atof(argv[optind++]);
        if (!(g_seconds > 0))
            usage();
    }
    if (optind < argc)
        usage();
    for (int i = 0; i < PAYLOAD_SIZE; i++)
        g_payload[i] = (uint8_t)('a' + i % 26);

    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/bitt-queue-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        die("mkdtemp", strerror(errno));
    char bitt_path[4200], raw_path[4200], url[4300];
    snprintf(bitt_path, sizeof bitt_path, "%s/bitt.db", dir);
    snprintf(raw_path, sizeof raw_path, "%s/raw.db", dir);
    snprintf(url, sizeof url, "sqlite:%s?synchronous=normal", bitt_path);

    printf("queue_bench: bitt %s, SQLite %s; %d-byte payloads, %.2f s per cell\n", bitt_version(),
           sqlite3_libversion(), PAYLOAD_SIZE, g_seconds);
    printf("a job = enqueue -> dequeue -> ack; batch = 1 commit of %d enqueues, 1 dequeue of %d, "
           "%d acks\n",
           BATCH, BATCH, BATCH);
    printf("SQLite: a file in %s, WAL, synchronous=NORMAL; 4w = 4 processes (SQLite) or 4 "
           "threads on one handle (memory)\n\n",
           dir);
    printf("%-20s %12s %12s %12s %9s %9s\n", "cell", "bitt jobs/s", "raw jobs/s", "min jobs/s",
           "bitt/raw", "bitt/min");

    static const uint32_t batches[3] = {1, BATCH, BATCH};
    static const char *const batch_names[3] = {"single", "batch", "batchmany"};
    for (int b = 0; b < 3; b++) {
        g_ack_many = b == 2; /* raw still acks one row at a time */
        for (int workers = 1; workers <= WORKERS; workers += WORKERS - 1) {
            char cell[64];
            /* memory, in a child process: millions of messages allocated and
             * freed leave glibc's heap trimming and growing it on every large
             * allocation after (brk calls x6), which would slow the SQLite
             * cells that follow for reasons of no concern here */
            snprintf(cell, sizeof cell, "memory %s %dw", batch_names[b], workers);
            if (want(filter, cell)) {
                tally t = run_memory_cell(batches[b], workers);
                printf("%-20s %12.0f %12s %12s %9s %9s\n", cell, rate(&t), "-", "-", "-", "-");
                fflush(stdout);
            }
            /* sqlite, and raw beside the single-worker cells */
            snprintf(cell, sizeof cell, "sqlite %s %dw", batch_names[b], workers);
            int want_raw = workers == 1 && want(filter, "raw");
            if (!want(filter, cell) && !(workers == 1 && want_raw && want(filter, batch_names[b])))
                continue;
            remove_db(bitt_path);
            remove_db(raw_path);
            tally ts = {0, 0}, tr = {0, 0}, tm = {0, 0};
            if (workers == 1) {
                bitt_store *s;
                if (bitt_store_open(url, &s) != BITT_OK)
                    die(url, bitt_error_last());
                raw_db *r = raw_open(raw_path);
                double slice = g_seconds / g_rounds;
                for (int i = 0; i < g_rounds; i++) {
                    run_for(bitt_cycle_fn, s, batches[b], slice, &ts);
                    run_for(raw_cycle_fn, r, batches[b], slice, &tr);
                    run_for(raw_min_cycle_fn, r, batches[b], slice, &tm);
                }
                bitt_store_close(s);
                raw_close(r);
            } else {
                bitt_store *s; /* create the schema before the workers start */
                if (bitt_store_open(url, &s) != BITT_OK)
                    die(url, bitt_error_last());
                bitt_store_close(s);
                ts = run_processes(url, batches[b], workers);
            }
            check_settled_url(url);
            char r1[32] = "-", r2[32] = "-", c1[32] = "-", c2[32] = "-";
            if (workers == 1) {
                snprintf(c1, sizeof c1, "%.0f", rate(&tr));
                snprintf(c2, sizeof c2, "%.0f", rate(&tm));
                snprintf(r1, sizeof r1, "%.3f", rate(&ts) / rate(&tr));
                snprintf(r2, sizeof r2, "%.3f", rate(&ts) / rate(&tm));
            }
            printf("%-20s %12.0f %12s %12s %9s %9s\n", cell, rate(&ts), c1, c2, r1, r2);
            fflush(stdout);
        }
    }
    remove_db(bitt_path);
    remove_db(raw_path);
    rmdir(dir);
    return 0;
}
