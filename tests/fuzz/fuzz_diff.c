/*
 * fuzz_diff: differential fuzzing of the backends. The input bytes are the
 * randomness of a run of tests/c/support/diff.h: up to MAX_STEPS KV steps
 * (set, add, delete, take, increment, get, get-many, list with prefixes,
 * ranges and cursors, commits with checks, purge), module steps (queue
 * enqueue/dequeue/ack/nack/extend/dead letters, leases and fenced commits,
 * outbox, budgets, schedules, pubsub) and manual clock moves, on fresh
 * stores: memory: (the reference) and sqlite::memory:, plus PostgreSQL and
 * Redis when BITT_TEST_POSTGRES_URL / BITT_TEST_REDIS_URL are set (a fresh
 * schema= / prefix= per input). Any difference in a status or a returned
 * value aborts with both results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff.h"

#define MAX_STEPS 64
#define OPTIONS "queue_backoff=5,10,20&pubsub_retention=200"

typedef struct input {
    const uint8_t *p;
    size_t n;
    int exhausted;
} input;

/* n choices from one byte (two when n > 256); 0 once the input ends. */
static uint32_t input_rnd(void *rng, uint32_t n)
{
    input *in = rng;
    uint32_t v = 0;
    for (int i = 0; i < (n > 256 ? 2 : 1); i++) {
        if (!in->n) {
            in->exhausted = 1;
            return 0;
        }
        v = v << 8 | *in->p++;
        in->n--;
    }
    return v % n;
}

static void abort_with(const char *msg)
{
    fprintf(stderr, "fuzz_diff: mismatch: %s\n", msg);
    abort();
}

static unsigned long g_run;

static void open_store(diff_ctx *c, const char *name, const char *url)
{
    int i = c->n;
    if (bitt_store_open(url, &c->s[i]))
        diff_fail(c, "cannot open the %s store: %s", name, bitt_error_last());
    c->names[i] = name;
    c->n++;
}

/* The server URL from the environment with our options appended. */
static int server_url(const char *env, const char *ns, char *out, size_t cap)
{
    const char *base = getenv(env);
    if (!base || !*base)
        return 0;
    snprintf(out, cap, "%s%c%s=fz%ld_%lu&" OPTIONS, base, strchr(base, '?') ? '&' : '?', ns,
             (long)getpid(), g_run);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size, 0};
    diff_ctx c;
    if (diff_init(&c, 0, input_rnd, &in, abort_with))
        abort();
    g_run++;
    if (getenv("BITT_FUZZ_VERBOSE")) /* shows what an input does */
        c.trace = stderr;
    char url[1200];
    open_store(&c, "memory", "memory:?" OPTIONS);
    open_store(&c, "sqlite", "sqlite::memory:?" OPTIONS);
    if (server_url("BITT_TEST_POSTGRES_URL", "schema", url, sizeof url)) {
        c.ordered_versions[c.n] = c.ordered_ids[c.n] =
            1; /* sequences: failed commits skip numbers */
        open_store(&c, "postgres", url);
    }
    if (server_url("BITT_TEST_REDIS_URL", "prefix", url, sizeof url))
        open_store(&c, "redis", url);
    diff_manual_clock(&c, 1000000);
    diff_subscribe(&c);
    for (c.step = 0; c.step < MAX_STEPS && !in.exhausted; c.step++) {
        uint32_t area = input_rnd(&in, 10);
        if (area < 5)
            diff_kv_step(&c);
        else if (area < 9)
            diff_module_step(&c);
        else
            diff_advance(&c, input_rnd(&in, 4) == 0 ? input_rnd(&in, 300) : input_rnd(&in, 20));
    }
    diff_free(&c);
    for (int i = 0; i < c.n; i++)
        bitt_store_close(c.s[i]);
    return 0;
}
