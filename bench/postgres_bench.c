/*
 * bench/postgres_bench.c: bitt on PostgreSQL, side by side with raw libpq
 * running the same SQL the backend runs for each operation (same tables,
 * same prepared statements, same pipelines: advisory locks, versionstamp,
 * upsert), in one run; then queue throughput in jobs/s with 1 and 4
 * workers, one message at a time and in batches.
 *
 *   postgres_bench [-o OP] [-r ROUNDS] [-s SECONDS] [-j JOBS] [URL]
 *     URL      postgres://user:password@host:port/db (default: the
 *              environment's BITT_BENCH_POSTGRES_URL, else
 *              BITT_TEST_POSTGRES_URL); two schemas, bench_bitt and
 *              bench_raw, are dropped and made again
 *     -o OP    only this operation (get, set, increment, commit, queue)
 *     -r R     each KV measurement in R alternating slices of bitt and raw
 *              (default 3), so drift hits both alike
 *     -s S     seconds per KV operation and side (default 2)
 *     -j N     jobs per queue measurement (default 4000)
 *
 * No figure is asserted anywhere: compare the columns of one run.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "bitt.h"

#define VALUE_SIZE 64
#define KEYS 10000
#define COUNTERS 1000

static double g_seconds = 2.0;
static int g_rounds = 3;
static int g_jobs = 4000;
static const char *g_url;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "postgres_bench: %s: %s\n", what, msg);
    exit(1);
}

static size_t key_of(char *buf, const char *tag, uint64_t i)
{
    return (size_t)snprintf(buf, 32, "%s:%08" PRIu64, tag, i);
}

static uint8_t g_value[VALUE_SIZE];

static void check(int rc, const char *what)
{
    if (rc < 0)
        die(what, bitt_error_last());
}

static bitt_store *open_schema(const char *schema)
{
    char url[1024];
    snprintf(url, sizeof url, "%s%cschema=%s", g_url, strchr(g_url, '?') ? '&' : '?', schema);
    bitt_store *s = NULL;
    check(bitt_store_open(url, &s), "open");
    return s;
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* ---- raw libpq: the statements the backend runs -------------------------------- */

#define T(name) "\"bench_raw\".\"" name "\""
#define NOW(n)                                                                                     \
    "COALESCE($" #n "::int8, floor(extract(epoch FROM statement_timestamp()) * 1000)::int8)"
#define AFTER(a, b)                                                                                \
    "(CASE WHEN (" b ") > 9223372036854775807 - (" a ") THEN 9223372036854775807 ELSE (" a         \
    ") + (" b ") END)"
#define LIVE(n) "(expires_at IS NULL OR expires_at > " NOW(n) ")"

enum { R_BEGIN, R_COMMIT, R_LOCK, R_GET, R_CHECK, R_STAMP, R_SET, R_SUM, R_PLAIN, R_COUNT };

static const char *const raw_sql[R_COUNT] = {
    [R_BEGIN] = "BEGIN",
    [R_COMMIT] = "COMMIT",
    [R_LOCK] = "SELECT count(pg_advisory_xact_lock(h)) FROM unnest($1::int8[]) AS u(h)",
    [R_GET] = "SELECT value, kind, version, expires_at FROM " T("kv") " WHERE key = $1::bytea "
                                                                      "AND " LIVE(2),
    [R_CHECK] = "SELECT version FROM " T("kv") " WHERE key = $1::bytea AND " LIVE(2) " FOR UPDATE",
    [R_STAMP] = "SELECT nextval('" T("versionstamp") "')",
    [R_SET] = "INSERT INTO " T(
        "kv") " AS t (key, value, kind, version, expires_at) VALUES "
              "($1::bytea, $2::bytea, $3::int4, currval('" T(
                  "versionstamp") "'), CASE WHEN "
                                  "$4::int8 = 0 THEN NULL ELSE " AFTER(
                                      NOW(5), "$4::int8") " END) ON CONFLICT (key) "
                                                          "DO UPDATE SET value = excluded.value, "
                                                          "kind = excluded.kind, "
                                                          "version = excluded.version, expires_at "
                                                          "= excluded.expires_at",
    [R_SUM] = "INSERT INTO " T(
        "kv") " AS t (key, value, kind, version, expires_at) VALUES "
              "($1::bytea, convert_to($2::int8::text, 'UTF8'), 2, currval('" T(
                  "versionstamp") "'), "
                                  "CASE WHEN $3::int8 = 0 THEN NULL ELSE " AFTER(
                                      NOW(4),
                                      "$3::int8") " END) "
                                                  "ON CONFLICT (key) DO UPDATE SET value = CASE "
                                                  "WHEN (t.expires_at IS NOT NULL AND "
                                                  "t.expires_at <= " NOW(
                                                      4) ") THEN excluded.value ELSE "
                                                         "convert_to(((CASE WHEN "
                                                         "t.kind = 2 THEN convert_from(t.value, "
                                                         "'UTF8') ELSE 'bitt: not a counter: ' || "
                                                         "t.kind END)::int8 + $2::int8)::text, "
                                                         "'UTF8') END, kind = 2, "
                                                         "version = excluded.version, expires_at = "
                                                         "CASE WHEN (t.expires_at IS NOT NULL AND "
                                                         "t.expires_at <= " NOW(
                                                             4) ") THEN excluded.expires_at ELSE "
                                                                "t.expires_at END "
                                                                "RETURNING value",
    /* A reference point, not bitt's work: one upsert, no lock, no stamp. */
    [R_PLAIN] =
        "INSERT INTO " T("kv") " (key, value, kind, version, expires_at) VALUES "
                               "($1::bytea, $2::bytea, 0, 1, NULL) ON CONFLICT (key) DO UPDATE SET "
                               "value = excluded.value",
};

typedef struct raw_db {
    PGconn *c;
} raw_db;

static raw_db *raw_open(void)
{
    raw_db *r = calloc(1, sizeof *r);
    r->c = PQconnectdb(g_url);
    if (PQstatus(r->c) != CONNECTION_OK)
        die("raw connect", PQerrorMessage(r->c));
    PQsetNoticeProcessor(r->c, quiet, NULL);
    /* The session bitt sets up: the same timeouts. */
    PQclear(PQexec(r->c, "SET statement_timeout = 30000"));
    PQclear(PQexec(r->c, "SET idle_in_transaction_session_timeout = 30000"));
    for (int i = 0; i < R_COUNT; i++) {
        char name[8];
        snprintf(name, sizeof name, "r%d", i);
        PGresult *res = PQprepare(r->c, name, raw_sql[i], 0, NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            die(raw_sql[i], PQresultErrorMessage(res));
        PQclear(res);
    }
    return r;
}

static void raw_close(raw_db *r)
{
    PQfinish(r->c);
    free(r);
}

/* One statement of a raw pipeline, in binary format like bitt's. */
typedef struct raw_stmt {
    int id;
    int n;
    const char *values[6];
    int lengths[6];
    int formats[6];
    unsigned char ints[6][8];
} raw_stmt;

static void p_bytes(raw_stmt *s, const void *p, size_t n)
{
    s->values[s->n] = n ? p : "";
    s->lengths[s->n] = (int)n;
    s->formats[s->n++] = 1;
}

static void p_i64(raw_stmt *s, int64_t v)
{
    for (int i = 7; i >= 0; i--, v = (int64_t)((uint64_t)v >> 8))
        s->ints[s->n][i] = (unsigned char)v;
    p_bytes(s, s->ints[s->n], 8);
}

static void p_i32(raw_stmt *s, int32_t v)
{
    for (int i = 3; i >= 0; i--, v = (int32_t)((uint32_t)v >> 8))
        s->ints[s->n][i] = (unsigned char)v;
    p_bytes(s, s->ints[s->n], 4);
}

static void p_null(raw_stmt *s)
{
    s->values[s->n] = NULL;
    s->lengths[s->n] = 0;
    s->formats[s->n++] = 1;
}

static void p_text(raw_stmt *s, const char *t)
{
    s->values[s->n] = t;
    s->lengths[s->n] = (int)strlen(t);
    s->formats[s->n++] = 0;
}

/* Runs the statements as one pipeline (one round trip, one implicit
 * transaction unless they hold BEGIN/COMMIT). */
static void raw_pipeline(raw_db *r, raw_stmt *st, int n)
{
    if (!PQenterPipelineMode(r->c))
        die("pipeline", PQerrorMessage(r->c));
    for (int i = 0; i < n; i++) {
        char name[8];
        snprintf(name, sizeof name, "r%d", st[i].id);
        if (!PQsendQueryPrepared(r->c, name, st[i].n, st[i].values, st[i].lengths, st[i].formats,
                                 1))
            die("send", PQerrorMessage(r->c));
    }
    PQpipelineSync(r->c);
    for (int i = 0; i < n; i++) {
        PGresult *res = PQgetResult(r->c);
        ExecStatusType s = PQresultStatus(res);
        if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK)
            die(raw_sql[st[i].id], PQresultErrorMessage(res));
        PQclear(res);
        PQclear(PQgetResult(r->c)); /* the NULL after each */
    }
    PQclear(PQgetResult(r->c)); /* the sync */
    PQexitPipelineMode(r->c);
}

/* The lock statement: keys as an int8[] (text form: '{k1,k2}'), sorted. */
static void lock_stmt(raw_stmt *s, char *text, size_t size, int64_t a, int64_t b, int64_t c, int n)
{
    int64_t k[3] = {a, b, c};
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (k[j] < k[i]) {
                int64_t t = k[i];
                k[i] = k[j];
                k[j] = t;
            }
    if (n == 1)
        snprintf(text, size, "{%" PRId64 "}", k[0]);
    else
        snprintf(text, size, "{%" PRId64 ",%" PRId64 ",%" PRId64 "}", k[0], k[1], k[2]);
    *s = (raw_stmt){.id = R_LOCK};
    p_text(s, text);
}

static int64_t hash_key(const char *k, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 0x100000001b3ULL;
    return (int64_t)h;
}

/* ---- the KV operations --------------------------------------------------------------- */

typedef struct ctx {
    bitt_store *store;
    raw_db *raw;
    uint64_t rng;
} ctx;

typedef void (*op_fn)(ctx *);

static void bitt_get(ctx *c)
{
    char k[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % KEYS);
    bitt_entry *e;
    if (bitt_kv_get(c->store, k, n, &e) != BITT_OK)
        die("get", bitt_error_last());
    bitt_entry_free(e);
}

static void bitt_set(ctx *c)
{
    char k[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % KEYS);
    check(bitt_kv_set(c->store, k, n, g_value, VALUE_SIZE, BITT_KIND_BYTES, 0, NULL), "set");
}

static void bitt_increment(ctx *c)
{
    char k[32];
    size_t n = key_of(k, "ctr", rng_next(&c->rng) % COUNTERS);
    check(bitt_kv_increment(c->store, k, n, 1, 0, NULL, NULL), "increment");
}

static void bitt_commit(ctx *c)
{
    char k[32], ck[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % KEYS);
    size_t cn = key_of(ck, "ctr", rng_next(&c->rng) % COUNTERS);
    bitt_txn *txn;
    check(bitt_txn_begin(c->store, &txn), "txn begin");
    check(bitt_txn_check(txn, "absent", 6, 0), "txn check");
    check(bitt_txn_set(txn, k, n, g_value, VALUE_SIZE, BITT_KIND_BYTES, 0), "txn set");
    check(bitt_txn_sum(txn, ck, cn, 1), "txn sum");
    check(bitt_txn_commit(txn, NULL), "txn commit");
    bitt_txn_free(txn);
}

static void raw_get(ctx *c)
{
    char k[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % KEYS);
    raw_stmt s = {.id = R_GET};
    p_bytes(&s, k, n);
    p_null(&s);
    PGresult *res = PQexecPrepared(c->raw->c, "r3", s.n, s.values, s.lengths, s.formats, 1);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        die("raw get", PQresultErrorMessage(res));
    PQclear(res);
}

static void raw_set(ctx *c)
{
    char k[32], locks[64];
    size_t n = key_of(k, "key", rng_next(&c->rng) % KEYS);
    raw_stmt st[3];
    lock_stmt(&st[0], locks, sizeof locks, hash_key(k, n), 0, 0, 1);
    st[1] = (raw_stmt){.id = R_STAMP};
    st[2] = (raw_stmt){.id = R_SET};
    p_bytes(&st[2], k, n);
    p_bytes(&st[2], g_value, VALUE_SIZE);
    p_i32(&st[2], BITT_KIND_BYTES);
    p_i64(&st[2], 0);
    p_null(&st[2]);
    raw_pipeline(c->raw, st, 3);
}

static void sum_stmt(raw_stmt *s, const char *k, size_t n)
{
    *s = (raw_stmt){.id = R_SUM};
    p_bytes(s, k, n);
    p_i64(s, 1);
    p_i64(s, 0);
    p_null(s);
}

static void raw_increment(ctx *c)
{
    char k[32], locks[64];
    size_t n = key_of(k, "ctr", rng_next(&c->rng) % COUNTERS);
    raw_stmt st[3];
    lock_stmt(&st[0], locks, sizeof locks, hash_key(k, n), 0, 0, 1);
    st[1] = (raw_stmt){.id = R_STAMP};
    sum_stmt(&st[2], k, n);
    raw_pipeline(c->raw, st, 3);
}

static void raw_commit(ctx *c)
{
    char k[32], ck[32], locks[96];
    size_t n = key_of(k, "key", rng_next(&c->rng) % KEYS);
    size_t cn = key_of(ck, "ctr", rng_next(&c->rng) % COUNTERS);
    raw_stmt st[4];
    st[0] = (raw_stmt){.id = R_BEGIN};
    lock_stmt(&st[1], locks, sizeof locks, hash_key("absent", 6), hash_key(k, n), hash_key(ck, cn),
              3);
    st[2] = (raw_stmt){.id = R_CHECK};
    p_bytes(&st[2], "absent", 6);
    p_null(&st[2]);
    raw_pipeline(c->raw, st, 3);
    st[0] = (raw_stmt){.id = R_STAMP};
    st[1] = (raw_stmt){.id = R_SET};
    p_bytes(&st[1], k, n);
    p_bytes(&st[1], g_value, VALUE_SIZE);
    p_i32(&st[1], BITT_KIND_BYTES);
    p_i64(&st[1], 0);
    p_null(&st[1]);
    sum_stmt(&st[2], ck, cn);
    st[3] = (raw_stmt){.id = R_COMMIT};
    raw_pipeline(c->raw, st, 4);
}

static void raw_plain_upsert(ctx *c)
{
    char k[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % KEYS);
    raw_stmt s = {.id = R_PLAIN};
    p_bytes(&s, k, n);
    p_bytes(&s, g_value, VALUE_SIZE);
    PGresult *res = PQexecPrepared(c->raw->c, "r8", s.n, s.values, s.lengths, s.formats, 1);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        die("raw plain upsert", PQresultErrorMessage(res));
    PQclear(res);
}

/* Calls fn for secs seconds; returns calls and time. */
static void run_for(op_fn fn, ctx *c, double secs, double *calls, double *elapsed)
{
    double start = now_s(), end = start + secs;
    long n = 0;
    do {
        for (int i = 0; i < 16; i++)
            fn(c);
        n += 16;
    } while (now_s() < end);
    *calls += (double)n;
    *elapsed += now_s() - start;
}

static void preload(bitt_store *s)
{
    char k[32];
    for (size_t i = 0; i < KEYS;) {
        bitt_txn *txn;
        check(bitt_txn_begin(s, &txn), "preload");
        for (size_t j = 0; j < 1000 && i < KEYS; j++, i++) {
            size_t n = key_of(k, "key", i);
            check(bitt_txn_set(txn, k, n, g_value, VALUE_SIZE, BITT_KIND_BYTES, 0), "preload");
        }
        check(bitt_txn_commit(txn, NULL), "preload");
        bitt_txn_free(txn);
    }
}

static void kv_benchmarks(const char *only)
{
    static const struct {
        const char *name;
        op_fn bitt, raw;
    } ops[] = {
        {"get", bitt_get, raw_get},
        {"set", bitt_set, raw_set},
        {"increment", bitt_increment, raw_increment},
        {"commit", bitt_commit, raw_commit},
    };
    bitt_store *s = open_schema("bench_bitt"), *r = open_schema("bench_raw");
    preload(s);
    preload(r); /* bitt makes the raw side's tables and rows too */
    bitt_store_close(r);
    ctx c = {.store = s, .rng = 0x9e3779b97f4a7c15ULL};
    c.raw = raw_open();
    printf("%-10s %14s %14s %8s\n", "op", "bitt ops/s", "raw ops/s", "bitt/raw");
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        if (only && strcmp(only, ops[i].name))
            continue;
        double bn = 0, bt = 0, rn = 0, rt = 0;
        for (int k = 0; k < g_rounds; k++) {
            run_for(ops[i].bitt, &c, g_seconds / g_rounds, &bn, &bt);
            if (ops[i].raw)
                run_for(ops[i].raw, &c, g_seconds / g_rounds, &rn, &rt);
        }
        double b = bn / bt, raw = rt > 0 ? rn / rt : 0;
        printf("%-10s %14.0f %14.0f %8.2f\n", ops[i].name, b, raw, raw > 0 ? b / raw : 0);
        fflush(stdout);
    }
    if (!only || !strcmp(only, "set")) {
        double n = 0, t = 0;
        run_for(raw_plain_upsert, &c, g_seconds / 2, &n, &t);
        printf("(reference: one raw upsert, without bitt's lock and versionstamp: %.0f ops/s)\n",
               n / t);
    }
    raw_close(c.raw);
    bitt_store_close(s);
}

/* ---- queue throughput ------------------------------------------------------------------ */

typedef struct worker {
    bitt_store *store;
    int mode; /* 0 enqueue one by one, 1 enqueue in txns of 100, 2 consume limit 1, 3 limit 32 */
    int jobs; /* enqueuers: this worker's share */
    int done;
    const char *topic; /* enqueuers */
} worker;

/* Consumers share one topic: they stop once all the jobs are acked. */
static int g_target, g_consumed;

static void *worker_main(void *arg)
{
    worker *w = arg;
    if (w->mode == 0) {
        for (int i = 0; i < w->jobs; i++, w->done++)
            check(bitt_queue_enqueue(w->store, w->topic, g_value, 32, BITT_KIND_BYTES, NULL, NULL),
                  "enqueue");
    } else if (w->mode == 1) {
        while (w->done < w->jobs) {
            bitt_txn *txn;
            check(bitt_txn_begin(w->store, &txn), "txn");
            int n = w->jobs - w->done < 100 ? w->jobs - w->done : 100;
            for (int i = 0; i < n; i++)
                check(bitt_txn_enqueue(txn, w->topic, g_value, 32, BITT_KIND_BYTES, NULL),
                      "txn enqueue");
            check(bitt_txn_commit(txn, NULL), "txn commit");
            bitt_txn_free(txn);
            w->done += n;
        }
    } else {
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        o.limit = w->mode == 2 ? 1 : 32;
        o.lease_ms = 60000;
        o.wait_ms = 100;
        for (int empty = 0;
             __atomic_load_n(&g_consumed, __ATOMIC_SEQ_CST) < g_target && empty < 100;) {
            bitt_messages *list;
            check(bitt_queue_dequeue(w->store, "bench", &o, &list), "dequeue");
            size_t got = bitt_messages_count(list);
            empty = got ? 0 : empty + 1;
            for (size_t i = 0; i < got; i++) {
                const bitt_message *m = bitt_messages_at(list, i);
                check(bitt_queue_ack(w->store, "bench", bitt_message_id(m), bitt_message_token(m)),
                      "ack");
                w->done++;
                __atomic_add_fetch(&g_consumed, 1, __ATOMIC_SEQ_CST);
            }
            bitt_messages_free(list);
        }
    }
    return NULL;
}

/* Runs `workers` threads (a store each) of mode over jobs jobs in all;
 * returns jobs/s. */
static double queue_run(int mode, int workers, int jobs)
{
    worker w[4];
    pthread_t th[4];
    g_consumed = 0;
    for (int i = 0; i < workers; i++)
        w[i] = (worker){open_schema("bench_bitt"), mode, jobs / workers, 0, "bench_in"};
    double start = now_s();
    for (int i = 0; i < workers; i++)
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    int done = 0;
    for (int i = 0; i < workers; i++) {
        pthread_join(th[i], NULL);
        done += w[i].done;
    }
    double rate = done / (now_s() - start);
    for (int i = 0; i < workers; i++)
        bitt_store_close(w[i].store);
    return rate;
}

/* Puts jobs messages on the consumers' topic. */
static void fill_queue(int jobs)
{
    bitt_store *s = open_schema("bench_bitt");
    g_target = jobs;
    worker w = {s, 1, jobs, 0, "bench"};
    worker_main(&w);
    bitt_store_close(s);
}

static void queue_benchmarks(void)
{
    printf("\n%-36s %12s %12s\n", "queue (jobs/s)", "1 worker", "4 workers");
    double r1, r4;
    r1 = queue_run(0, 1, g_jobs);
    r4 = queue_run(0, 4, g_jobs);
    printf("%-36s %12.0f %12.0f\n", "enqueue, one per commit", r1, r4);
    r1 = queue_run(1, 1, g_jobs * 5);
    r4 = queue_run(1, 4, g_jobs * 5);
    printf("%-36s %12.0f %12.0f\n", "enqueue, 100 per commit", r1, r4);
    fill_queue(g_jobs);
    r1 = queue_run(2, 1, g_jobs);
    fill_queue(g_jobs);
    r4 = queue_run(2, 4, g_jobs);
    printf("%-36s %12.0f %12.0f\n", "dequeue 1 + ack", r1, r4);
    fill_queue(g_jobs);
    r1 = queue_run(3, 1, g_jobs);
    fill_queue(g_jobs);
    r4 = queue_run(3, 4, g_jobs);
    printf("%-36s %12.0f %12.0f\n", "dequeue 32 + ack each", r1, r4);
}

static void reset_schemas(void)
{
    PGconn *c = PQconnectdb(g_url);
    if (PQstatus(c) != CONNECTION_OK)
        die("connect", PQerrorMessage(c));
    PQsetNoticeProcessor(c, quiet, NULL);
    PQclear(PQexec(c, "DROP SCHEMA IF EXISTS bench_bitt CASCADE"));
    PQclear(PQexec(c, "DROP SCHEMA IF EXISTS bench_raw CASCADE"));
    PQfinish(c);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "o:r:s:j:")) != -1) {
        switch (opt) {
        case 'o': only = optarg; break;
        case 'r': g_rounds = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
        case 's': g_seconds = atof(optarg) > 0 ? atof(optarg) : 2.0; break;
        case 'j': g_jobs = atoi(optarg) > 0 ? atoi(optarg) : 4000; break;
        default:
            fprintf(stderr, "usage: postgres_bench [-o OP] [-r ROUNDS] [-s SECONDS] [-j JOBS] "
                            "[URL]\n");
            return 2;
        }
    }
    g_url = optind < argc ? argv[optind] : getenv("BITT_BENCH_POSTGRES_URL");
    if (!g_url || !*g_url)
        g_url = getenv("BITT_TEST_POSTGRES_URL");
    if (!g_url || !*g_url) {
        fprintf(stderr, "postgres_bench: give a URL (or set BITT_BENCH_POSTGRES_URL); "
                        "scripts/postgres-test-server start DIR prints one\n");
        return 2;
    }
    memset(g_value, 'v', sizeof g_value);
    reset_schemas();
    if (!only || strcmp(only, "queue"))
        kv_benchmarks(only);
    if (!only || !strcmp(only, "queue"))
        queue_benchmarks();
    reset_schemas();
    return 0;
}
