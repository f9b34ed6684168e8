/*
 * tests/c/test_time_edges.c: every call that adds a time and a duration
 * (TTLs, delays, leases, extend, snooze and nack delays and backoff, schedule
 * runs, budget refills, pubsub retention), driven with manual clocks and
 * durations at the ends of int64 on every backend (tests/c/support/
 * time_edges*.c). Each result is checked against an exact oracle (a time
 * saturates at INT64_MAX, which no clock reaches), and every backend's
 * trace of results must equal memory's; the first divergence is printed.
 *
 * Backends: memory:, a fresh SQLite file, and the servers of
 * $BITT_TEST_POSTGRES_URL (a fresh schema) and $BITT_TEST_REDIS_URL (a
 * fresh prefix); $BITT_TEST_BACKENDS leaves backends out, as for
 * test_contract. No sleeps: manual clocks only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "contract.h"
#include "time_edges.h"

static te_run g_reference; /* memory's run */
static int g_have_reference;
static int g_opened;

static bitt_store *open_fresh(te_run *r, const char *options)
{
    const ct_backend *b = r->ctx;
    char url[1024];
    int n = ++g_opened;
    switch (*b) {
    case CT_MEMORY: snprintf(url, sizeof url, "memory:"); break;
    case CT_POSTGRES:
    case CT_REDIS: {
        const char *base = ct_backend_server(*b);
        snprintf(url, sizeof url, "%s%c%s=te_%ld_%d", base, strchr(base, '?') ? '&' : '?',
                 *b == CT_POSTGRES ? "schema" : "prefix", (long)getpid(), n);
        break;
    }
    default: {
        char path[900];
        snprintf(path, sizeof path, "%s/time-edges-%ld-%d.db", ct_tmpdir(), (long)getpid(), n);
        unlink(path);
        snprintf(url, sizeof url, "sqlite:%s", path);
    }
    }
    if (*options) {
        size_t len = strlen(url);
        snprintf(url + len, sizeof url - len, "%c%s", strchr(url, '?') ? '&' : '?', options);
    }
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s) != BITT_OK) {
        te_bad(r, "open %s store with '%s': %s", r->backend, options, bitt_error_last());
        return NULL;
    }
    te_at(r, s, 1000000);
    return s;
}

static void drive(te_run *r)
{
    void (*const modules[])(te_run *) = {te_clock_rules, te_kv,      te_lease,    te_budget,
                                         te_queue,       te_backoff, te_schedule, te_pubsub};
    for (size_t i = 0; i < sizeof modules / sizeof *modules; i++) {
        modules[i](r);
        te_close_all(r);
    }
}

/* The first line where run differs from memory's, with what came before. */
static int diverges(const te_run *run)
{
    const te_run *ref = &g_reference;
    size_t n = run->count < ref->count ? run->count : ref->count, i = 0;
    while (i < n && !strcmp(run->lines[i], ref->lines[i]))
        i++;
    if (i == n && run->count == ref->count)
        return 0;
    print_error("%s diverges from memory at result %zu of %zu:\n", run->backend, i, ref->count);
    for (size_t k = i > 3 ? i - 3 : 0; k < i; k++)
        print_error("    both:    %s\n", ref->lines[k]);
    print_error("    memory:  %s\n", i < ref->count ? ref->lines[i] : "(the end)");
    print_error("    %-8s %s\n", run->backend, i < run->count ? run->lines[i] : "(the end)");
    return 1;
}

/* $BITT_TEST_TRACE=DIR writes each backend's results to DIR/time-edges-NAME.txt. */
static void write_trace(const te_run *run)
{
    const char *dir = getenv("BITT_TEST_TRACE");
    if (!dir || !*dir)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/time-edges-%s.txt", dir, run->backend);
    FILE *f = fopen(path, "w");
    for (size_t i = 0; f && i < run->count; i++)
        fprintf(f, "%s\n", run->lines[i]);
    if (f)
        fclose(f);
}

static te_run run_of(ct_backend *b)
{
    te_run run = {.backend = ct_backend_name(*b), .open = open_fresh, .ctx = b};
    drive(&run);
    write_trace(&run);
    return run;
}

static void run_backend(ct_backend b)
{
    if (!ct_backend_wanted(b))
        skip();
    if ((b == CT_POSTGRES || b == CT_REDIS) && !ct_backend_server(b))
        fail_msg("%s: set BITT_TEST_%s_URL (scripts/test starts a server), or leave the backend "
                 "out with BITT_TEST_BACKENDS",
                 ct_backend_name(b), b == CT_POSTGRES ? "POSTGRES" : "REDIS");
    if (!g_have_reference) { /* also when memory itself is left out */
        ct_backend m = CT_MEMORY;
        g_reference = run_of(&m);
        g_have_reference = 1;
    }
    te_run mine = b == CT_MEMORY ? g_reference : run_of(&b);
    const te_run *run = &mine;
    for (size_t i = 0; i < run->nbad && i < TE_BAD_KEPT; i++)
        print_error("%s: %s\n", run->backend, run->bad[i]);
    if (run->nbad > TE_BAD_KEPT)
        print_error("%s: ... %zu violations in all\n", run->backend, run->nbad);
    size_t nbad = run->nbad;
    int differs = b != CT_MEMORY && diverges(run);
    if (b != CT_MEMORY)
        te_free(&mine);
    if (nbad || differs)
        fail_msg("%s: %zu violations%s", ct_backend_name(b), nbad,
                 differs ? "; its results diverge from memory's" : "");
}

static int free_reference(void **state)
{
    (void)state;
    te_free(&g_reference);
    return 0;
}

static void run_one(void **state)
{
    run_backend((ct_backend)(intptr_t)*state);
}

#define BACKEND(b)                                                                                 \
    {                                                                                              \
        ct_backend_name(b), run_one, NULL, NULL, (void *)(intptr_t)(b)                             \
    }

int main(void)
{
    /* memory first: it is the reference of the others. */
    const struct CMUnitTest tests[] = {
        BACKEND(CT_MEMORY),
        BACKEND(CT_SQLITE_FILE),
        BACKEND(CT_POSTGRES),
        BACKEND(CT_REDIS),
    };
    return cmocka_run_group_tests_name("time_edges", tests, NULL, free_reference);
}
