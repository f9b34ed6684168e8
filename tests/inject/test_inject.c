/*
 * test_inject: every public function of bitt.h, run with the N-th
 * allocation and then the N-th backend call failing, on memory and SQLite
 * (PostgreSQL and Redis failures are the network-fault suite's). Built only
 * with BITT_FAULT_INJECTION=ON; run by scripts/test-inject under ASan/LSan.
 * BITT_INJECT_CASE=name runs one case, BITT_INJECT_TARGET=name one backend.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fault/fault.h"
#include "harness.h"
#include "sqlite_files.h"

static const inj_case *case_lists[] = {inj_misc_cases, inj_kv_cases, inj_module_cases,
                                       inj_queue_control_cases, inj_retention_cases};
#define N_LISTS (sizeof case_lists / sizeof *case_lists)
static size_t case_counts[N_LISTS];

static const char *memory_url(void)
{
    return "memory:";
}

static const char *sqlite_url(void)
{
    static char path[1100], url[1200];
    ts_fresh_path("inject.db", path, sizeof path);
    snprintf(url, sizeof url, "sqlite:%s?synchronous=off", path);
    return url;
}

static const char *sqlite_new_url(void)
{
    static char path[1100], url[1200];
    ts_fresh_path("inject-new.db", path, sizeof path);
    snprintf(url, sizeof url, "sqlite:%s?synchronous=off", path);
    return url;
}

/* A server store under a prefix (Redis) or schema (PostgreSQL) of its own:
 * a new, empty store for every attempt (the final '_' keeps one prefix
 * from being the start of another). */
static const char *server_url(const char *env, const char *option)
{
    /* two buffers: a case holds the store's URL and a new store's at once */
    static char urls[2][1200];
    static unsigned long serial;
    char *buf = urls[++serial % 2];
    const char *base = getenv(env);
    snprintf(buf, sizeof urls[0], "%s%s%s=inj%lu_%lu_", base, strchr(base, '?') ? "&" : "?", option,
             (unsigned long)getpid(), serial);
    return buf;
}

static const char *redis_url(void)
{
    return server_url("BITT_TEST_REDIS_URL", "prefix");
}

static const char *postgres_url(void)
{
    return server_url("BITT_TEST_POSTGRES_URL", "schema");
}

static const inj_target redis_target = {"redis", redis_url, redis_url};
static const inj_target postgres_target = {"postgres", postgres_url, postgres_url};

static const inj_target memory_target = {"memory", memory_url, memory_url};
static const inj_target sqlite_target = {"sqlite", sqlite_url, sqlite_new_url};

static void run_all(const inj_target *target, inj_mode mode)
{
    const char *only = getenv("BITT_INJECT_CASE");
    const char *target_only = getenv("BITT_INJECT_TARGET"); /* e.g. "redis" */
    if (target_only && *target_only && strcmp(target_only, target->name))
        return;
    /* BITT_INJECT_PART=1 or 2 runs half of the cases, so that two
     * processes share the work (scripts/test-inject). */
    const char *part = getenv("BITT_INJECT_PART");
    size_t seen = 0;
    inj_totals totals = {0, 0, 0};
    for (size_t l = 0; l < N_LISTS; l++)
        for (size_t i = 0; i < case_counts[l]; i++, seen++) {
            if (part && *part && (seen % 2) != (size_t)(atoi(part) - 1))
                continue;
            if (!only || !strcmp(only, case_lists[l][i].name))
                inj_run_case(&case_lists[l][i], target, mode, &totals);
        }
    printf("[ INJECT   ] %s, failing the N-th %s: %llu cases, %llu injected failures "
           "(%llu got over it)\n",
           target->name, mode == INJ_ALLOC ? "allocation" : "backend call", totals.cases,
           totals.injected, totals.tolerated);
}

static void memory_alloc(void **state)
{
    (void)state;
    run_all(&memory_target, INJ_ALLOC);
}

static void memory_backend(void **state)
{
    (void)state;
    run_all(&memory_target, INJ_BACKEND);
}

static void sqlite_alloc(void **state)
{
    (void)state;
    run_all(&sqlite_target, INJ_ALLOC);
}

static void sqlite_backend(void **state)
{
    (void)state;
    run_all(&sqlite_target, INJ_BACKEND);
}

/* The server backends run by hand: BITT_INJECT_SERVERS=1 with their URL
 * exported. Not in CI yet: on Redis a failed allocation after the server
 * applied a take loses the taken value (see docs, reliability), which this
 * test reports until it is mended. */
static void server_runs(const inj_target *target, const char *env)
{
    const char *on = getenv("BITT_INJECT_SERVERS");
    if (!on || strcmp(on, "1") || !getenv(env) || !*getenv(env)) {
        printf("[ INJECT   ] %s: not run (BITT_INJECT_SERVERS=1 and %s run it)\n", target->name,
               env);
        return;
    }
    run_all(target, INJ_ALLOC);
    run_all(target, INJ_BACKEND);
}

static void redis_runs(void **state)
{
    (void)state;
    server_runs(&redis_target, "BITT_TEST_REDIS_URL");
}

static void postgres_runs(void **state)
{
    (void)state;
    server_runs(&postgres_target, "BITT_TEST_POSTGRES_URL");
}

/* Whether name is a word of the space-separated list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

/* Every exported function has a case: a new one fails this test until a
 * case covers it. */
static void every_export_is_covered(void **state)
{
    (void)state;
    FILE *f = fopen(BITT_SYMBOLS_FILE, "r");
    assert_non_null(f);
    char line[256];
    int symbols = 0, missing = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#')
            continue;
        symbols++;
        int found = 0;
        for (size_t l = 0; l < N_LISTS && !found; l++)
            for (size_t i = 0; i < case_counts[l] && !found; i++)
                found = listed(case_lists[l][i].covers, line);
        if (!found) {
            fprintf(stderr, "no injection case covers %s\n", line);
            missing++;
        }
    }
    fclose(f);
    printf("[ INJECT   ] %d exported functions, every one covered by a case\n", symbols - missing);
    assert_true(symbols > 100);
    assert_int_equal(missing, 0);
}

int main(void)
{
    /* SQLite's allocations join the countdown; this must come before any
     * SQLite use in the process. */
    if (bitt__fault_sqlite_install() != BITT_OK) {
        fprintf(stderr, "%s\n", bitt_error_last());
        return 1;
    }
    case_counts[0] = inj_misc_case_count;
    case_counts[1] = inj_kv_case_count;
    case_counts[2] = inj_module_case_count;
    case_counts[3] = inj_queue_control_case_count;
    case_counts[4] = inj_retention_case_count;
    const char *tmp = getenv("BITT_TEST_TMP");
    const char *part = getenv("BITT_INJECT_PART");
    /* one directory per process: each part makes its own databases */
    snprintf(ts_dir, sizeof ts_dir, "%s/inject%s", tmp && *tmp ? tmp : "/tmp",
             part && *part ? part : "");
    mkdir(ts_dir, 0777);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_export_is_covered), cmocka_unit_test(memory_alloc),
        cmocka_unit_test(memory_backend),          cmocka_unit_test(sqlite_alloc),
        cmocka_unit_test(sqlite_backend),          cmocka_unit_test(redis_runs),
        cmocka_unit_test(postgres_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
