/*
 * bench/kv_bench.c: KV throughput of bitt on memory and on a SQLite file,
 * side by side with raw sqlite3 prepared statements doing the same SQL work
 * the SQLite backend does for each operation (same schema, same pragmas,
 * same statements), in one run. Prints ops/s and the ratio bitt/raw.
 *
 *   kv_bench [-o OP] [-b VARIANT] [-r ROUNDS] [N [SECONDS]]
 *     N        keys preloaded (default 100000), 64-byte values
 *     SECONDS  time per operation and variant (default 1)
 *     -o OP    run only this operation (get_hit, get_miss, set, increment,
 *              commit)
 *     -b V     run only this variant (memory, sqlite, raw); for profiling
 *     -r R     split each measurement into R alternating slices of bitt
 *              and raw (default 3), so drift hits both alike
 *
 * No figure here is asserted anywhere: absolute numbers depend on the
 * machine; compare the columns of one run.
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bitt.h"

#define VALUE_SIZE 64
#define COUNTERS 1000

static size_t g_keys = 100000;
static double g_seconds = 1.0;
static int g_rounds = 3;

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
    fprintf(stderr, "kv_bench: %s: %s\n", what, msg);
    exit(1);
}

static size_t key_of(char *buf, const char *tag, uint64_t i)
{
    return (size_t)snprintf(buf, 32, "%s:%08" PRIu64, tag, i);
}

static uint8_t g_value[VALUE_SIZE];

/* ---- one benchmark context (bitt store or raw connection) ----------------- */

typedef struct raw_db raw_db;

typedef struct bench_ctx {
    bitt_store *store; /* bitt variants */
    raw_db *raw;       /* raw variant */
    uint64_t rng;
} bench_ctx;

typedef void (*op_fn)(bench_ctx *ctx);

/* ---- bitt operations --------------------------------------------------------- */

static void bitt_check(int rc, const char *what)
{
    if (rc < 0)
        die(what, bitt_error_last());
}

static void bitt_get_hit(bench_ctx *c)
{
    char k[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % g_keys);
    bitt_entry *e;
    int rc = bitt_kv_get(c->store, k, n, &e);
    if (rc != BITT_OK)
        die("get hit", rc == BITT_NOTFOUND ? "not found" : bitt_error_last());
    bitt_entry_free(e);
}

static void bitt_get_miss(bench_ctx *c)
{
    char k[32];
    size_t n = key_of(k, "nokey", rng_next(&c->rng) % g_keys);
    bitt_entry *e;
    if (bitt_kv_get(c->store, k, n, &e) != BITT_NOTFOUND)
        die("get miss", "found or failed");
}

static void bitt_set(bench_ctx *c)
{
    char k[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % g_keys);
    bitt_check(bitt_kv_set(c->store, k, n, g_value, VALUE_SIZE, BITT_KIND_BYTES, 0, NULL), "set");
}

static void bitt_increment(bench_ctx *c)
{
    char k[32];
    size_t n = key_of(k, "ctr", rng_next(&c->rng) % COUNTERS);
    bitt_check(bitt_kv_increment(c->store, k, n, 1, 0, NULL, NULL), "increment");
}

static void bitt_commit(bench_ctx *c)
{
    char k[32], ck[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % g_keys);
    size_t cn = key_of(ck, "ctr", rng_next(&c->rng) % COUNTERS);
    bitt_txn *txn;
    bitt_check(bitt_txn_begin(c->store, &txn), "txn begin");
    bitt_check(bitt_txn_check(txn, "absent", 6, 0), "txn check");
    bitt_check(bitt_txn_set(txn, k, n, g_value, VALUE_SIZE, BITT_KIND_BYTES, 0), "txn set");
    bitt_check(bitt_txn_sum(txn, ck, cn, 1), "txn sum");
    bitt_check(bitt_txn_commit(txn, NULL), "txn commit");
    bitt_txn_free(txn);
}

static void bitt_preload(bitt_store *s)
{
    char k[32];
    for (size_t i = 0; i < g_keys;) {
        bitt_txn *txn;
        bitt_check(bitt_txn_begin(s, &txn), "preload");
        for (size_t j = 0; j < 1000 && i < g_keys; j++, i++) {
            size_t n = key_of(k, "key", i);
            bitt_check(bitt_txn_set(txn, k, n, g_value, VALUE_SIZE, BITT_KIND_BYTES, 0), "preload");
        }
        bitt_check(bitt_txn_commit(txn, NULL), "preload");
        bitt_txn_free(txn);
    }
}

/* ---- raw sqlite3: the SQL the SQLite backend runs --------------------------- */

enum { R_BEGIN_IMM, R_COMMIT, R_STAMP, R_STAMP_READ, R_GET, R_VERSION, R_UPSERT, R_COUNT };

static const char *const raw_sql[R_COUNT] = {
    [R_BEGIN_IMM] = "BEGIN IMMEDIATE",
    [R_COMMIT] = "COMMIT",
    [R_STAMP] = "UPDATE \"meta\" SET value = value + 1 WHERE name = 'versionstamp'",
    [R_STAMP_READ] = "SELECT value FROM \"meta\" WHERE name = 'versionstamp'",
    [R_GET] = "SELECT value, kind, version, expires_at FROM \"kv\" WHERE key = ?1 "
              "AND (expires_at IS NULL OR expires_at > ?2)",
    [R_VERSION] = "SELECT version FROM \"kv\" WHERE key = ?1 AND "
                  "(expires_at IS NULL OR expires_at > ?2)",
    [R_UPSERT] = "INSERT INTO \"kv\" (key, value, kind, version, expires_at) "
                 "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key) DO UPDATE SET "
                 "value = excluded.value, kind = excluded.kind, "
                 "version = excluded.version, expires_at = excluded.expires_at",
};

static const char raw_schema[] =
    "CREATE TABLE IF NOT EXISTS \"meta\" (name TEXT PRIMARY KEY, value INTEGER NOT NULL) "
    "WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS \"kv\" (key BLOB PRIMARY KEY, value BLOB NOT NULL, "
    "kind INTEGER NOT NULL, version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS \"kv_expires\" ON \"kv\" (expires_at) "
    "WHERE expires_at IS NOT NULL;"
    "INSERT OR IGNORE INTO \"meta\" (name, value) VALUES ('versionstamp', 0);"
    "INSERT OR IGNORE INTO \"meta\" (name, value) VALUES ('schema_version', 1);";

struct raw_db {
    sqlite3 *db;
    sqlite3_stmt *st[R_COUNT];
};

static void raw_fail(raw_db *r, const char *what)
{
    die(what, sqlite3_errmsg(r->db));
}

static void raw_exec(raw_db *r, int id)
{
    sqlite3_stmt *st = r->st[id];
    if (sqlite3_step(st) != SQLITE_DONE)
        raw_fail(r, raw_sql[id]);
    sqlite3_reset(st);
}

static uint64_t raw_stamp(raw_db *r)
{
    raw_exec(r, R_STAMP);
    sqlite3_stmt *st = r->st[R_STAMP_READ];
    if (sqlite3_step(st) != SQLITE_ROW)
        raw_fail(r, "stamp");
    uint64_t v = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return v;
}

static void raw_upsert(raw_db *r, const char *k, size_t n, const void *v, size_t vn, int kind,
                       uint64_t version, int64_t expires_at)
{
    sqlite3_stmt *st = r->st[R_UPSERT];
    sqlite3_bind_blob(st, 1, k, (int)n, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, v, (int)vn, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, kind);
    sqlite3_bind_int64(st, 4, (int64_t)version);
    if (expires_at)
        sqlite3_bind_int64(st, 5, expires_at);
    else
        sqlite3_bind_null(st, 5);
    if (sqlite3_step(st) != SQLITE_DONE)
        raw_fail(r, "upsert");
    sqlite3_reset(st);
}

/* A get as an application would do it: the row's value copied out. */
static int raw_get_row(raw_db *r, const char *k, size_t n, uint8_t *out, size_t *out_len)
{
    sqlite3_stmt *st = r->st[R_GET];
    sqlite3_bind_blob(st, 1, k, (int)n, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, wall_ms());
    int rc = sqlite3_step(st), found = rc == SQLITE_ROW;
    if (found) {
        const void *v = sqlite3_column_blob(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        if (len > VALUE_SIZE)
            len = VALUE_SIZE;
        memcpy(out, v, len);
        *out_len = len;
        (void)sqlite3_column_int(st, 1);
        (void)sqlite3_column_int64(st, 2);
        (void)sqlite3_column_int64(st, 3);
    } else if (rc != SQLITE_DONE) {
        raw_fail(r, "get");
    }
    sqlite3_reset(st);
    return found;
}

static void raw_get_hit(bench_ctx *c)
{
    char k[32];
    uint8_t v[VALUE_SIZE];
    size_t vn;
    size_t n = key_of(k, "key", rng_next(&c->rng) % g_keys);
    if (!raw_get_row(c->raw, k, n, v, &vn))
        die("raw get hit", "not found");
}

static void raw_get_miss(bench_ctx *c)
{
    char k[32];
    uint8_t v[VALUE_SIZE];
    size_t vn;
    size_t n = key_of(k, "nokey", rng_next(&c->rng) % g_keys);
    if (raw_get_row(c->raw, k, n, v, &vn))
        die("raw get miss", "found");
}

static void raw_set_one(raw_db *r, const char *k, size_t n, int64_t now)
{
    (void)now;
    raw_exec(r, R_BEGIN_IMM);
    uint64_t v = raw_stamp(r);
    raw_upsert(r, k, n, g_value, VALUE_SIZE, 0, v, 0);
    raw_exec(r, R_COMMIT);
}

static void raw_set(bench_ctx *c)
{
    char k[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % g_keys);
    raw_set_one(c->raw, k, n, wall_ms());
}

/* The read-modify-write of a sum: read the live row, add, upsert. */
static void raw_sum(raw_db *r, const char *k, size_t n, int64_t now, uint64_t version,
                    int64_t delta)
{
    sqlite3_stmt *st = r->st[R_GET];
    sqlite3_bind_blob(st, 1, k, (int)n, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    int rc = sqlite3_step(st);
    int64_t value = 0, expires_at = 0;
    if (rc == SQLITE_ROW) {
        if (sqlite3_column_int(st, 1) != BITT_KIND_COUNTER)
            die("raw sum", "not a counter");
        char text[24];
        int len = sqlite3_column_bytes(st, 0);
        memcpy(text, sqlite3_column_blob(st, 0), (size_t)len < sizeof text ? (size_t)len : 23);
        text[len < 23 ? len : 23] = '\0';
        value = strtoll(text, NULL, 10);
        expires_at = sqlite3_column_int64(st, 3);
    } else if (rc != SQLITE_DONE) {
        raw_fail(r, "sum read");
    }
    sqlite3_reset(st);
    if ((delta > 0 && value > INT64_MAX - delta) || (delta < 0 && value < INT64_MIN - delta))
        die("raw sum", "overflow");
    char text[24];
    int len = snprintf(text, sizeof text, "%" PRId64, value + delta);
    raw_upsert(r, k, n, text, (size_t)len, BITT_KIND_COUNTER, version, expires_at);
}

static void raw_increment(bench_ctx *c)
{
    char k[32];
    size_t n = key_of(k, "ctr", rng_next(&c->rng) % COUNTERS);
    int64_t now = wall_ms();
    raw_exec(c->raw, R_BEGIN_IMM);
    uint64_t v = raw_stamp(c->raw);
    raw_sum(c->raw, k, n, now, v, 1);
    raw_exec(c->raw, R_COMMIT);
}

static void raw_commit(bench_ctx *c)
{
    char k[32], ck[32];
    size_t n = key_of(k, "key", rng_next(&c->rng) % g_keys);
    size_t cn = key_of(ck, "ctr", rng_next(&c->rng) % COUNTERS);
    raw_db *r = c->raw;
    int64_t now = wall_ms();
    raw_exec(r, R_BEGIN_IMM);
    sqlite3_stmt *st = r->st[R_VERSION];
    sqlite3_bind_blob(st, 1, "absent", 6, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    if (sqlite3_step(st) != SQLITE_DONE)
        die("raw commit", "check failed");
    sqlite3_reset(st);
    uint64_t v = raw_stamp(r);
    raw_upsert(r, k, n, g_value, VALUE_SIZE, 0, v, 0);
    raw_sum(r, ck, cn, now, v, 1);
    raw_exec(r, R_COMMIT);
}

static raw_db *raw_open(const char *path)
{
    raw_db *r = calloc(1, sizeof *r);
    if (!r)
        die("raw", "out of memory");
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
    /* preload in one transaction */
    raw_exec(r, R_BEGIN_IMM);
    uint64_t v = raw_stamp(r);
    char k[32];
    for (size_t i = 0; i < g_keys; i++) {
        size_t n = key_of(k, "key", i);
        raw_upsert(r, k, n, g_value, VALUE_SIZE, 0, v, 0);
    }
    raw_exec(r, R_COMMIT);
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

/* ---- the driver --------------------------------------------------------------- */

typedef struct bench_op {
    const char *name;
    op_fn bitt;
    op_fn raw;
} bench_op;

static const bench_op g_ops[] = {
    {"get_hit", bitt_get_hit, raw_get_hit},
    {"get_miss", bitt_get_miss, raw_get_miss},
    {"set", bitt_set, raw_set},
    {"increment", bitt_increment, raw_increment},
    {"commit", bitt_commit, raw_commit},
};

typedef struct tally {
    uint64_t ops;
    double secs;
} tally;

/* Runs fn for about secs seconds; adds to t. */
static void run_for(op_fn fn, bench_ctx *ctx, double secs, tally *t)
{
    uint64_t n = 0;
    double start = now_s(), end = start + secs, now;
    do {
        for (int i = 0; i < 64; i++)
            fn(ctx);
        n += 64;
        now = now_s();
    } while (now < end);
    t->ops += n;
    t->secs += now - start;
}

static double rate(const tally *t)
{
    return t->secs > 0 ? (double)t->ops / t->secs : 0;
}

static bitt_store *open_store(const char *url)
{
    bitt_store *s;
    if (bitt_store_open(url, &s) != BITT_OK)
        die(url, bitt_error_last());
    bitt_preload(s);
    return s;
}

static void remove_db(const char *path)
{
    char p[4200];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

static void usage(void)
{
    fprintf(stderr, "usage: kv_bench [-o OP] [-b memory|sqlite|raw] [-r ROUNDS] [N [SECONDS]]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *only_op = NULL, *only_variant = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "o:b:r:h")) != -1) {
        switch (opt) {
        case 'o': only_op = optarg; break;
        case 'b': only_variant = optarg; break;
        case 'r':
            g_rounds = atoi(optarg);
            if (g_rounds < 1)
                usage();
            break;
        default: usage();
        }
    }
    if (optind < argc) {
        long long n = atoll(argv[optind++]);
        if (n < 1)
            usage();
        g_keys = (size_t)n;
    }
    if (optind < argc) {
        g_seconds = atof(argv[optind++]);
        if (!(g_seconds > 0))
            usage();
    }
    if (optind < argc)
        usage();
    int want_mem = !only_variant || !strcmp(only_variant, "memory");
    int want_sq = !only_variant || !strcmp(only_variant, "sqlite");
    int want_raw = !only_variant || !strcmp(only_variant, "raw");

    for (int i = 0; i < VALUE_SIZE; i++)
        g_value[i] = (uint8_t)('a' + i % 26);

    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/bitt-kv-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        die("mkdtemp", strerror(errno));
    char bitt_path[4200], raw_path[4200], url[4300];
    snprintf(bitt_path, sizeof bitt_path, "%s/bitt.db", dir);
    snprintf(raw_path, sizeof raw_path, "%s/raw.db", dir);
    snprintf(url, sizeof url, "sqlite:%s?synchronous=normal", bitt_path);

    printf("kv_bench: bitt %s, SQLite %s; %zu keys, %d-byte values, %.2f s per cell\n",
           bitt_version(), sqlite3_libversion(), g_keys, VALUE_SIZE, g_seconds);
    printf("SQLite: a file in %s, WAL, synchronous=NORMAL, cache 64 MiB\n\n", dir);

    bench_ctx mem = {.rng = 88172645463325252ull}, sq = mem, raw = mem;
    if (want_mem)
        mem.store = open_store("memory:");
    if (want_sq)
        sq.store = open_store(url);
    if (want_raw)
        raw.raw = raw_open(raw_path);

    printf("%-10s %14s %14s %14s %9s\n", "operation", "memory ops/s", "sqlite ops/s", "raw ops/s",
           "bitt/raw");
    for (size_t i = 0; i < sizeof g_ops / sizeof *g_ops; i++) {
        const bench_op *op = &g_ops[i];
        if (only_op && strcmp(only_op, op->name))
            continue;
        tally tm = {0, 0}, ts = {0, 0}, tr = {0, 0};
        if (want_mem)
            run_for(op->bitt, &mem, g_seconds, &tm);
        double slice = g_seconds / g_rounds;
        for (int r = 0; r < g_rounds; r++) {
            if (want_sq)
                run_for(op->bitt, &sq, slice, &ts);
            if (want_raw)
                run_for(op->raw, &raw, slice, &tr);
        }
        char ratio[32] = "-";
        if (want_sq && want_raw)
            snprintf(ratio, sizeof ratio, "%.3f", rate(&ts) / rate(&tr));
        printf("%-10s %14.0f %14.0f %14.0f %9s\n", op->name, rate(&tm), rate(&ts), rate(&tr),
               ratio);
        fflush(stdout);
    }

    bitt_store_close(mem.store);
    bitt_store_close(sq.store);
    raw_close(raw.raw);
    remove_db(bitt_path);
    remove_db(raw_path);
    rmdir(dir);
    return 0;
}
