/*
 * tests/c/test_contract.c: runs every case of the files tests/contract/NAME.json on every
 * backend: memory:, a fresh SQLite file per case, sqlite::memory:, and the
 * PostgreSQL and Redis servers named by $BITT_TEST_POSTGRES_URL and
 * $BITT_TEST_REDIS_URL (a fresh schema or prefix per case). A server that is
 * not given fails its cases; $BITT_TEST_BACKENDS=memory,sqlite-file,...
 * leaves backends out on purpose. One cmocka test per (case, backend).
 *
 *   test_contract [FILTER]   runs only the cases whose "file/name" contains
 *                            FILTER (also read from $BITT_CONTRACT_FILTER);
 *                            !FILTER: all but those
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "contract.h"

typedef struct job {
    const ct_case *c; /* NULL: a load error */
    ct_backend backend;
    const char *error;
} job;

static const char *tmpdir;

static void run_job(void **state)
{
    const job *j = *state;
    if (!j->c) {
        print_error("%s\n", j->error);
        fail();
    }
    char *msg = ct_run_case(j->c, j->backend, tmpdir);
    if (msg) {
        print_error("%s\n", msg);
        free(msg);
        fail();
    }
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : getenv("BITT_CONTRACT_FILTER");
    ct_suite suite;
    ct_suite_load(BITT_CONTRACT_DIR, &suite);
    tmpdir = ct_tmpdir();

    size_t cap = suite.ncases * CT_BACKEND_COUNT + suite.nerrors;
    struct CMUnitTest *tests = calloc(cap + 1, sizeof *tests);
    job *jobs = calloc(cap + 1, sizeof *jobs);
    char **names = calloc(cap + 1, sizeof *names);
    if (!tests || !jobs || !names) {
        fprintf(stderr, "test_contract: out of memory\n");
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < suite.nerrors; i++) {
        jobs[n] = (job){.error = suite.errors[i]};
        names[n] = strdup("load error");
        tests[n] =
            (struct CMUnitTest){.name = names[n], .test_func = run_job, .initial_state = &jobs[n]};
        n++;
    }
    for (size_t i = 0; i < suite.ncases; i++) {
        const ct_case *c = &suite.cases[i];
        size_t len = strlen(c->file) + strlen(c->name) + 2;
        char *full = malloc(len);
        snprintf(full, len, "%s/%s", c->file, c->name);
        if (filter && *filter &&
            (*filter == '!' ? strstr(full, filter + 1) != NULL : !strstr(full, filter))) {
            free(full);
            continue;
        }
        for (int b = 0; b < CT_BACKEND_COUNT; b++) {
            if (!ct_backend_wanted((ct_backend)b))
                continue;
            size_t nlen = len + 32;
            names[n] = malloc(nlen);
            snprintf(names[n], nlen, "%s [%s]", full, ct_backend_name((ct_backend)b));
            jobs[n] = (job){.c = c, .backend = (ct_backend)b};
            tests[n] = (struct CMUnitTest){
                .name = names[n], .test_func = run_job, .initial_state = &jobs[n]};
            n++;
        }
        free(full);
    }
    if (n == 0) {
        fprintf(stderr, "test_contract: no case matches \"%s\"\n", filter ? filter : "");
        return 1;
    }
    int failed = _cmocka_run_group_tests("contract", tests, n, NULL, NULL);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(jobs);
    free(tests);
    ct_suite_free(&suite);
    return failed;
}
