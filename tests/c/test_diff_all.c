/*
 * test_diff_all: the four backends against each other. The same seeded
 * random KV, txn, queue, lease, outbox, budget, schedule and pubsub calls
 * (tests/c/support/diff.h, with edges: refused calls, keys and values at
 * and over the limits, names of 255 and 256 bytes or not UTF-8, error texts
 * that are not UTF-8, durations up to BITT_DURATION_MAX_MS and over it, the
 * 1001st op of a txn) go to memory: (the reference), a SQLite file,
 * PostgreSQL and Redis, on manual clocks that move together, and every
 * status and every value read back must be the same. Two rules are checked
 * on every store as well, since a bug that every backend shares gives no
 * difference: a txn with a refused add commits nothing and returns that
 * refusal with its message, and every error text read back is UTF-8.
 *
 * Three phases, each on fresh stores: "mid" (the clock at 1,000,000 ms),
 * "late" (the clock a few thousand ms before INT64_MAX, moving in small
 * steps up to INT64_MAX - 1, the last ms a clock may show; a backoff, a
 * default lease and a pubsub retention of 2^40 ms) and "early" (the clock
 * at 0; an exponential backoff capped at INT64_MAX).
 *
 *   test_diff_all [--long] [PHASE]
 *   BITT_TEST_SEED=0x...   the run (a fixed default); printed at the start and
 *                          in every failure, with the line that replays it
 *   BITT_DIFF_STEPS=N      steps per phase (default 1500, times BITT_TEST_SCALE);
 *                          --long runs 100000 per phase
 *   BITT_DIFF_TRACE=1      every call and its statuses on stderr
 *   PHASE                  mid, late or early: that phase only (same steps)
 *
 * Servers: $BITT_TEST_POSTGRES_URL and $BITT_TEST_REDIS_URL (scripts/test
 * starts both); unset is a failure, not a skip. BITT_TEST_BACKENDS (a
 * comma list, as for test_contract) leaves sqlite-file, postgres or redis
 * out on purpose.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bitt.h"
#include "contract.h"
#include "diff.h"
#include "scale.h"
#include "sqlite_files.h"

#define DEFAULT_SEED 0x20d1ff5eed000001ULL
#define DEFAULT_STEPS 1500
#define LONG_STEPS 100000
/* Small limits, so that keys and values at and over them are cheap. */
#define LIMITS "max_key_size=64&max_value_size=300"
#define MAX_KEY 64
#define MAX_VALUE 300

static uint64_t g_seed = DEFAULT_SEED;
static int g_steps, g_long;
static const char *g_phase; /* the one in progress, for the failure */
static int g_step_arg;      /* BITT_DIFF_STEPS as given, for the replay line */
static char g_sqlite_path[1200];

static uint32_t rnd(void *rng, uint32_t n)
{
    uint64_t *x = rng;
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (uint32_t)(*x % n);
}

/* Each phase draws from its own stream of the seed, so a phase run alone
 * (test_diff_all late) makes the same calls as in the whole run. */
static uint64_t phase_rng(unsigned phase)
{
    uint64_t z = g_seed + 0x9e3779b97f4a7c15ULL * (phase + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (z ^ (z >> 31)) | 1;
}

static void replay_line(char *buf, size_t cap)
{
    char steps[64] = "";
    if (g_step_arg)
        snprintf(steps, sizeof steps, " BITT_DIFF_STEPS=%d", g_step_arg);
    snprintf(buf, cap, "BITT_TEST_SEED=0x%016llx%s test_diff_all%s%s%s", (unsigned long long)g_seed,
             steps, g_long ? " --long" : "", g_phase ? " " : "", g_phase ? g_phase : "");
}

static void fail_test(const char *msg)
{
    char replay[256];
    replay_line(replay, sizeof replay);
    fail_msg("test_diff_all: phase %s, seed 0x%016llx: first divergence: %s\n  replay: %s", g_phase,
             (unsigned long long)g_seed, msg, replay);
}

static int setup(void **state)
{
    (void)state;
    const char *seed = getenv("BITT_TEST_SEED");
    if (seed && *seed)
        g_seed = strtoull(seed, NULL, 0);
    const char *steps = getenv("BITT_DIFF_STEPS");
    if (steps && *steps)
        g_step_arg = g_steps = atoi(steps);
    else
        g_steps = g_long ? LONG_STEPS : ts_scaled(DEFAULT_STEPS, 60);
    char replay[256];
    replay_line(replay, sizeof replay);
    fprintf(stderr, "test_diff_all: seed 0x%016llx, %d steps per phase; replay: %s\n",
            (unsigned long long)g_seed, g_steps, replay);
    static const ct_backend servers[] = {CT_POSTGRES, CT_REDIS};
    for (int i = 0; i < 2; i++) {
        if (ct_backend_wanted(servers[i]) && !ct_backend_server(servers[i])) {
            fprintf(stderr,
                    "test_diff_all: BITT_TEST_%s_URL is not set. Start a server with "
                    "scripts/%s-test-server start DIR and export the URL it prints (scripts/test "
                    "does both), or leave %s out with BITT_TEST_BACKENDS.\n",
                    servers[i] == CT_POSTGRES ? "POSTGRES" : "REDIS",
                    servers[i] == CT_POSTGRES ? "postgres" : "redis", ct_backend_name(servers[i]));
            return -1;
        }
    }
    snprintf(ts_dir, sizeof ts_dir, "%s/diff_all", ct_tmpdir());
    mkdir(ts_dir, 0777);
    return 0;
}

static void open_store(diff_ctx *c, const char *name, const char *url)
{
    int i = c->n;
    if (bitt_store_open(url, &c->s[i]))
        fail_msg("test_diff_all: cannot open the %s store: %s", name, bitt_error_last());
    c->names[i] = name;
    c->n++;
}

/* A server store in a namespace (schema= / prefix=) of its own. */
static void open_server(diff_ctx *c, ct_backend b, const char *phase, const char *options)
{
    if (!ct_backend_wanted(b)) {
        fprintf(stderr, "test_diff_all: %s left out (BITT_TEST_BACKENDS)\n", ct_backend_name(b));
        return;
    }
    const char *base = ct_backend_server(b);
    char url[2048];
    snprintf(url, sizeof url, "%s%c%s=tda_%ld_%lld_%s&%s", base, strchr(base, '?') ? '&' : '?',
             b == CT_POSTGRES ? "schema" : "prefix", (long)getpid(), (long long)time(NULL), phase,
             options);
    if (b == CT_POSTGRES) /* sequences: failed commits skip numbers */
        c->ordered_versions[c->n] = c->ordered_ids[c->n] = 1;
    open_store(c, ct_backend_name(b), url);
}

static void open_all(diff_ctx *c, uint64_t *rng, const char *phase, const char *options)
{
    assert_int_equal(diff_init(c, 0, rnd, rng, fail_test), 0);
    c->edges = 1;
    c->max_key = MAX_KEY;
    c->max_value = MAX_VALUE;
    if (getenv("BITT_DIFF_TRACE"))
        c->trace = stderr;
    char url[2048];
    snprintf(url, sizeof url, "memory:?%s", options);
    open_store(c, "memory", url);
    if (ct_backend_wanted(CT_SQLITE_FILE)) {
        char file[64];
        snprintf(file, sizeof file, "%s_%ld.db", phase, (long)getpid());
        ts_fresh_path(file, g_sqlite_path, sizeof g_sqlite_path);
        snprintf(url, sizeof url, "sqlite:%s?%s", g_sqlite_path, options);
        open_store(c, "sqlite", url);
    }
    open_server(c, CT_POSTGRES, phase, options);
    open_server(c, CT_REDIS, phase, options);
}

static void close_all(diff_ctx *c, const char *phase)
{
    char label[64];
    snprintf(label, sizeof label, "test_diff_all (%s)", phase);
    diff_report(c, stderr, label);
    diff_free(c);
    for (int i = 0; i < c->n; i++)
        bitt_store_close(c->s[i]);
    if (g_sqlite_path[0])
        ts_fresh_path(strrchr(g_sqlite_path, '/') + 1, g_sqlite_path, sizeof g_sqlite_path);
}

/* Steps on c, with the clock moved now and then (by less than 4 ms when
 * slow), up to INT64_MAX - 1 and no further: INT64_MAX is the end of time,
 * where saturated times lie, so no clock may show it. */
static void run(diff_ctx *c, uint64_t *rng, int slow)
{
    for (c->step = 0; c->step < g_steps; c->step++) {
        if (rnd(rng, 20) < 9)
            diff_kv_step(c);
        else
            diff_module_step(c);
        if (rnd(rng, 6) == 0) {
            int64_t ms = slow ? rnd(rng, 4) : rnd(rng, 4) == 0 ? rnd(rng, 300) : rnd(rng, 20);
            diff_advance(c, ms < INT64_MAX - 1 - c->now ? ms : INT64_MAX - 1 - c->now);
        }
    }
}

static void phase(unsigned index, const char *name, int64_t start, int slow, const char *options)
{
    g_phase = name;
    uint64_t rng = phase_rng(index);
    char all[512];
    snprintf(all, sizeof all, "%s&%s", LIMITS, options);
    diff_ctx c;
    open_all(&c, &rng, name, all);
    diff_manual_clock(&c, start);
    diff_subscribe(&c);
    run(&c, &rng, slow);
    close_all(&c, name);
}

static void test_mid(void **state)
{
    (void)state;
    phase(0, "mid", 1000000, 0, "queue_backoff=5,10,20&pubsub_retention=200");
}

/* The end of time: every sum of a time and a duration must saturate, the
 * same on every backend. The clock starts nearer the end than most
 * durations reach (leases, delays, intervals, backoffs, retention), moves
 * slowly, so that the last ms before the end where the short ones overflow
 * too last, and reaches INT64_MAX - 1 about 2/3 through. */
static void test_late(void **state)
{
    (void)state;
    phase(1, "late", INT64_MAX - g_steps / 6 - 1, 1,
          "queue_backoff=5,1099511627776,20&pubsub_retention=1099511627776&"
          "queue_lease=1099511627776");
}

/* The start of time, where 0 is both a time and, in some fields (oldest
 * pending, next attempt, expiry), "none". */
static void test_early(void **state)
{
    (void)state;
    phase(2, "early", 0, 0, "queue_backoff=exp:1:9223372036854775807&pubsub_retention=200");
}

int main(int argc, char **argv)
{
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--long"))
            g_long = 1;
        else if (argv[i][0] != '-' && !filter)
            filter = argv[i];
        else {
            fprintf(stderr, "usage: test_diff_all [--long] [mid|late|early]\n");
            return 64;
        }
    }
    char pattern[64];
    if (filter) {
        snprintf(pattern, sizeof pattern, "test_%s", filter);
        cmocka_set_test_filter(pattern);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mid),
        cmocka_unit_test(test_late),
        cmocka_unit_test(test_early),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
