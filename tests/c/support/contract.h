/*
 * tests/c/support/contract.h: the C runner of the contract in tests/contract
 * (its README.md defines the case format). A test program loads the suite,
 * then runs each case on each backend.
 */
#ifndef BITT_TEST_CONTRACT_H
#define BITT_TEST_CONTRACT_H

#include <stddef.h>

#include "jsondom.h"

typedef enum ct_backend {
    CT_MEMORY,        /* memory: */
    CT_SQLITE_FILE,   /* sqlite:<BITT_TEST_TMP>/<fresh file> */
    CT_SQLITE_MEMORY, /* sqlite::memory: */
    CT_POSTGRES,      /* $BITT_TEST_POSTGRES_URL with a fresh schema */
    CT_REDIS,         /* $BITT_TEST_REDIS_URL with a fresh prefix */
    CT_BACKEND_COUNT
} ct_backend;

/* "memory", "sqlite-file", "sqlite-memory", "postgres", "redis". */
const char *ct_backend_name(ct_backend b);
/* The base URL of a server backend from its environment variable, or NULL
 * (memory and SQLite need none). */
const char *ct_backend_server(ct_backend b);
/* Whether $BITT_TEST_BACKENDS (a comma list of names; unset = all) asks
 * for this backend. */
int ct_backend_wanted(ct_backend b);

typedef struct ct_case {
    const char *file;     /* the file's stem, "kv_basic" */
    const char *name;     /* the case's name */
    size_t index;         /* its position in the file */
    const js_value *json; /* the case object (owned by the suite) */
} ct_case;

typedef struct ct_suite {
    js_value **docs;
    char **stems;
    size_t ndocs;
    ct_case *cases;
    size_t ncases;
    char **errors; /* files or cases that could not be loaded */
    size_t nerrors;
} ct_suite;

/* Loads every *.json of dir in name order. Cases that cannot be loaded are
 * listed in suite->errors (a runner reports each as a failed test). Returns
 * 0, or -1 when dir cannot be read at all (with a message in errors). */
int ct_suite_load(const char *dir, ct_suite *suite);
void ct_suite_free(ct_suite *suite);

/* Runs one case on one backend in a fresh store. SQLite files go under
 * tmpdir. Returns NULL when the case passes, else a malloc'd message that
 * names the file, the case, the step, the backend and what differed. */
char *ct_run_case(const ct_case *c, ct_backend backend, const char *tmpdir);

/* The scratch directory: $BITT_TEST_TMP (created when missing) or /tmp. */
const char *ct_tmpdir(void);

#endif /* BITT_TEST_CONTRACT_H */
