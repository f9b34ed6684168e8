/*
 * bench/redis_bench.c: bitt on Redis beside raw hiredis, in one run.
 *
 *   redis_bench [-s SECONDS] [-n JOBS] [-r ROUNDS] [URL]
 *     URL      redis://host:port/db (default $BITT_TEST_REDIS_URL, else
 *              redis://127.0.0.1:6379/0); the bench writes under the prefix
 *              bench_<pid> and deletes nothing else
 *     SECONDS  time per KV cell (default 1)
 *     JOBS     messages per queue run (default 20000)
 *     ROUNDS   slices each KV cell is split into, alternating bitt and raw
 *              so that drift hits both alike (default 3)
 *
 * 1. KV round trips: bitt_kv_get / bitt_kv_set against raw hiredis GET /
 *    SET of the same 64-byte values on one connection, one request at a
 *    time (the ratio is bitt / raw), and against raw hiredis doing the work
 *    bitt does: HMGET of the value's hash for get; for set, the same writes
 *    (versionstamp, value hash, key index) pipelined in one MULTI/EXEC.
 * 2. Queue throughput in jobs/s with 1 and 4 worker processes (a store
 *    each): enqueue one job per commit or 100 per commit; consume with
 *    dequeue limit 1 or 100, each job acked.
 *
 * No figure is asserted anywhere: compare the columns of one run. The raw
 * side calls hiredis through the symbols libbitt already loaded (dlsym),
 * so this program needs no link flags beyond libbitt's.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bitt.h"

#define VALUE_SIZE 64
#define KEYS 1000

static double g_seconds = 1.0;
static int g_jobs = 20000;
static int g_rounds = 3;
static const char *g_url;
static char g_prefix[64];

/* hiredis, found in the process (libbitt links it). */
static struct {
    redisContext *(*connect)(const char *, int);
    void *(*command_argv)(redisContext *, int, const char **, const size_t *);
    void (*free_reply)(void *);
    void (*free_ctx)(redisContext *);
    int (*append_argv)(redisContext *, int, const char **, const size_t *);
    int (*get_reply)(redisContext *, void **);
} hr;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "redis_bench: %s: %s\n", what, msg);
    exit(1);
}

static bitt_store *open_store(void)
{
    char url[512];
    snprintf(url, sizeof url, "%s%sprefix=%s", g_url, strchr(g_url, '?') ? "&" : "?", g_prefix);
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s))
        die("bitt_store_open", bitt_error_last());
    return s;
}

/* ---- KV --------------------------------------------------------------------- */

static uint8_t g_value[VALUE_SIZE];

typedef struct kv_ctx {
    bitt_store *store;
    redisContext *raw;
    uint64_t i;
} kv_ctx;

static void key_of(char *buf, uint64_t i)
{
    snprintf(buf, 32, "key:%06" PRIu64, i % KEYS);
}

static void raw_cmd(redisContext *c, int argc, const char **argv, const size_t *lens)
{
    redisReply *r = hr.command_argv(c, argc, argv, lens);
    if (!r || r->type == REDIS_REPLY_ERROR)
        die("hiredis", r ? r->str : c->errstr);
    hr.free_reply(r);
}

static void op_bitt_get(kv_ctx *c)
{
    char key[32];
    key_of(key, c->i++);
    bitt_entry *e = NULL;
    if (bitt_kv_get(c->store, key, strlen(key), &e) != BITT_OK)
        die("bitt_kv_get", bitt_error_last());
    bitt_entry_free(e);
}

static void op_bitt_set(kv_ctx *c)
{
    char key[32];
    key_of(key, c->i++);
    if (bitt_kv_set(c->store, key, strlen(key), g_value, VALUE_SIZE, BITT_KIND_BYTES, 0, NULL))
        die("bitt_kv_set", bitt_error_last());
}

static void op_raw_get(kv_ctx *c)
{
    char key[112];
    snprintf(key, sizeof key, "%s:raw:", g_prefix);
    key_of(key + strlen(key), c->i++);
    const char *argv[2] = {"GET", key};
    raw_cmd(c->raw, 2, argv, NULL);
}

static void op_raw_set(kv_ctx *c)
{
    char key[112];
    snprintf(key, sizeof key, "%s:raw:", g_prefix);
    key_of(key + strlen(key), c->i++);
    const char *argv[3] = {"SET", key, (const char *)g_value};
    size_t lens[3] = {3, strlen(key), VALUE_SIZE};
    raw_cmd(c->raw, 3, argv, lens);
}

static void op_raw_hmget(kv_ctx *c)
{
    char key[96];
    int n = snprintf(key, sizeof key, "{%s}:k:", g_prefix);
    key_of(key + n, c->i++);
    const char *argv[6] = {"HMGET", key, "v", "t", "s", "e"};
    raw_cmd(c->raw, 6, argv, NULL);
}

/* The writes bitt's set makes (versionstamp, value hash, key index) as one
 * MULTI/EXEC, pipelined: one round trip, atomic, but without Lua. */
static void op_raw_multi(kv_ctx *c)
{
    char key[112], meta[96];
    int n = snprintf(key, sizeof key, "{%s}:k:", g_prefix);
    key_of(key + n, c->i++);
    snprintf(meta, sizeof meta, "{%s}:meta", g_prefix);
    const char *multi[1] = {"MULTI"}, *exec[1] = {"EXEC"};
    const char *incr[4] = {"HINCRBY", meta, "vsraw", "1"};
    const char *hset[10] = {"HSET", key, "v", (const char *)g_value, "t", "0", "s", "1", "e", "0"};
    size_t hlens[10] = {4, strlen(key), 1, VALUE_SIZE, 1, 1, 1, 1, 1, 1};
    char idx[96];
    snprintf(idx, sizeof idx, "{%s}:kidx", g_prefix);
    const char *zadd[4] = {"ZADD", idx, "0", key + n};
    hr.append_argv(c->raw, 1, multi, NULL);
    hr.append_argv(c->raw, 4, incr, NULL);
    hr.append_argv(c->raw, 10, hset, hlens);
    hr.append_argv(c->raw, 4, zadd, NULL);
    hr.append_argv(c->raw, 1, exec, NULL);
    for (int i = 0; i < 5; i++) {
        void *r = NULL;
        if (hr.get_reply(c->raw, &r) != REDIS_OK)
            die("hiredis", c->raw->errstr);
        hr.free_reply(r);
    }
}

typedef void (*kv_op)(kv_ctx *);

/* ops/s of each of n ops over the cell's time, in alternating slices. */
static void measure(kv_ctx *c, const kv_op *ops, int n, double *rates)
{
    double spent[3] = {0};
    long done[3] = {0};
    for (int round = 0; round < g_rounds; round++) {
        for (int k = 0; k < n; k++) {
            double start = now_s(), end = start + g_seconds / g_rounds;
            long count = 0;
            for (double t = start; t < end; count += 64) {
                for (int j = 0; j < 64; j++)
                    ops[k](c);
                t = now_s();
            }
            spent[k] += now_s() - start;
            done[k] += count;
        }
    }
    for (int k = 0; k < n; k++)
        rates[k] = done[k] / spent[k];
}

static void kv_section(void)
{
    kv_ctx c = {.store = open_store()};
    char host[256];
    int port = 6379;
    if (sscanf(g_url, "redis://%255[^:/]:%d", host, &port) < 1)
        die("URL", "the raw side needs redis://host:port/db");
    c.raw = hr.connect(host, port);
    if (!c.raw || c.raw->err)
        die("redisConnect", c.raw ? c.raw->errstr : "out of memory");
    int db = 0;
    const char *slash = strchr(g_url + 8, '/');
    if (slash && slash[1] >= '0' && slash[1] <= '9')
        db = atoi(slash + 1);
    char dbs[16];
    snprintf(dbs, sizeof dbs, "%d", db);
    const char *select[2] = {"SELECT", dbs};
    raw_cmd(c.raw, 2, select, NULL);
    for (int i = 0; i < KEYS; i++) { /* both sides read keys that exist */
        c.i = (uint64_t)i;
        op_bitt_set(&c);
        c.i = (uint64_t)i;
        op_raw_set(&c);
    }
    printf("%-20s %11s %11s %8s   %s\n", "KV, one connection", "bitt ops/s", "raw ops/s", "ratio",
           "raw doing bitt's work");
    double get[3], set[3];
    kv_op get_ops[3] = {op_bitt_get, op_raw_get, op_raw_hmget};
    kv_op set_ops[3] = {op_bitt_set, op_raw_set, op_raw_multi};
    measure(&c, get_ops, 3, get);
    printf("%-20s %11.0f %11.0f %8.3f   HMGET %.0f/s (ratio %.3f)\n", "get (hit) vs GET", get[0],
           get[1], get[0] / get[1], get[2], get[0] / get[2]);
    measure(&c, set_ops, 3, set);
    printf("%-20s %11.0f %11.0f %8.3f   MULTI/EXEC %.0f/s (ratio %.3f)\n\n", "set vs SET", set[0],
           set[1], set[0] / set[1], set[2], set[0] / set[2]);
    hr.free_ctx(c.raw);
    bitt_store_close(c.store);
}

/* ---- queue -------------------------------------------------------------------- */

/* Runs fn in `workers` processes started together; the wall time. */
static double run_workers(int workers, int (*fn)(int, int, int), int batch)
{
    int gate[2];
    if (pipe(gate))
        die("pipe", "failed");
    pid_t pids[16];
    fflush(NULL);
    for (int i = 0; i < workers; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            die("fork", "failed");
        if (pids[i] == 0) {
            close(gate[1]);
            char ch;
            while (read(gate[0], &ch, 1) > 0) {
            }
            _exit(fn(i, workers, batch));
        }
    }
    close(gate[0]);
    double start = now_s();
    close(gate[1]);
    int failed = 0;
    for (int i = 0; i < workers; i++) {
        int st;
        if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
            failed = 1;
    }
    double took = now_s() - start;
    if (failed)
        die("a worker", "failed (see above)");
    return took;
}

static char g_topic[64];

static int producer(int index, int workers, int batch)
{
    bitt_store *s = open_store();
    int share = g_jobs / workers + (index < g_jobs % workers);
    for (int done = 0; done < share;) {
        bitt_txn *txn = NULL;
        if (bitt_txn_begin(s, &txn))
            die("txn", bitt_error_last());
        for (int k = 0; k < batch && done < share; k++, done++)
            if (bitt_txn_enqueue(txn, g_topic, "job-payload", 11, BITT_KIND_BYTES, NULL))
                die("enqueue", bitt_error_last());
        if (bitt_txn_commit(txn, NULL))
            die("commit", bitt_error_last());
        bitt_txn_free(txn);
    }
    bitt_store_close(s);
    return 0;
}

static int consumer(int index, int workers, int batch)
{
    (void)index;
    (void)workers;
    bitt_store *s = open_store();
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = (uint32_t)batch;
    o.lease_ms = 600000;
    for (long loops = 0; loops < 10L * g_jobs; loops++) {
        bitt_messages *list = NULL;
        if (bitt_queue_dequeue(s, g_topic, &o, &list))
            die("dequeue", bitt_error_last());
        size_t n = bitt_messages_count(list);
        for (size_t k = 0; k < n; k++) {
            const bitt_message *m = bitt_messages_at(list, k);
            if (bitt_queue_ack(s, g_topic, bitt_message_id(m), bitt_message_token(m)))
                die("ack", bitt_error_last());
        }
        bitt_messages_free(list);
        if (!n)
            break; /* the queue was filled before the consumers started */
    }
    bitt_store_close(s);
    return 0;
}

static void queue_section(void)
{
    printf("%-24s %12s %12s\n", "queue, jobs/s", "1 worker", "4 workers");
    static const struct {
        const char *name;
        int consume;
        int batch;
    } rows[] = {{"enqueue, 1 per commit", 0, 1},
                {"enqueue, 100 per commit", 0, 100},
                {"dequeue 1 + ack", 1, 1},
                {"dequeue 100 + ack each", 1, 100}};
    static const int counts[2] = {1, 4};
    double rate[4][2];
    for (int w = 0; w < 2; w++) {
        for (int b = 0; b < 2; b++) {
            snprintf(g_topic, sizeof g_topic, "jobs-%d-%d", w, b);
            double t = run_workers(counts[w], producer, rows[b].batch);
            rate[b][w] = g_jobs / t;
            t = run_workers(counts[w], consumer, rows[2 + b].batch);
            rate[2 + b][w] = g_jobs / t;
        }
    }
    for (int r = 0; r < 4; r++)
        printf("%-24s %12.0f %12.0f\n", rows[r].name, rate[r][0], rate[r][1]);
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "s:n:r:h")) != -1) {
        switch (opt) {
        case 's': g_seconds = atof(optarg); break;
        case 'n': g_jobs = atoi(optarg); break;
        case 'r': g_rounds = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: redis_bench [-s SECONDS] [-n JOBS] [-r ROUNDS] [URL]\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    if (g_seconds <= 0 || g_jobs < 4 || g_rounds < 1)
        die("arguments", "SECONDS > 0, JOBS >= 4, ROUNDS >= 1");
    g_url = optind < argc ? argv[optind] : getenv("BITT_TEST_REDIS_URL");
    if (!g_url || !*g_url)
        g_url = "redis://127.0.0.1:6379/0";
    hr.connect = (redisContext * (*)(const char *, int)) dlsym(RTLD_DEFAULT, "redisConnect");
    hr.command_argv = (void *(*)(redisContext *, int, const char **, const size_t *))dlsym(
        RTLD_DEFAULT, "redisCommandArgv");
    hr.free_reply = (void (*)(void *))dlsym(RTLD_DEFAULT, "freeReplyObject");
    hr.free_ctx = (void (*)(redisContext *))dlsym(RTLD_DEFAULT, "redisFree");
    hr.append_argv = (int (*)(redisContext *, int, const char **, const size_t *))dlsym(
        RTLD_DEFAULT, "redisAppendCommandArgv");
    hr.get_reply = (int (*)(redisContext *, void **))dlsym(RTLD_DEFAULT, "redisGetReply");
    if (!hr.connect || !hr.command_argv || !hr.free_reply || !hr.free_ctx || !hr.append_argv ||
        !hr.get_reply) {
        printf("redis_bench: this libbitt was built without the Redis backend; nothing to do\n");
        return 0;
    }
    snprintf(g_prefix, sizeof g_prefix, "bench_%ld", (long)getpid());
    memset(g_value, 'v', sizeof g_value);
    printf("redis_bench: bitt %s on %s (prefix %s); %.2f s per KV cell, %d jobs per queue run\n\n",
           bitt_version(), g_url, g_prefix, g_seconds, g_jobs);
    kv_section();
    queue_section();
    return 0;
}
