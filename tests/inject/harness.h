/* tests/inject/harness.h: the loop that runs one injection case. cmocka
 * must be included before this header. */
#ifndef BITT_TEST_INJECT_HARNESS_H
#define BITT_TEST_INJECT_HARNESS_H

#include "inject.h"

typedef enum inj_mode { INJ_ALLOC, INJ_BACKEND } inj_mode;

/* A backend to run on: its name and a URL of a new, empty store. */
typedef struct inj_target {
    const char *name;
    const char *(*fresh_url)(void);
    /* A URL of a second new, empty store (for opening one under faults). */
    const char *(*new_url)(void);
} inj_target;

typedef struct inj_totals {
    unsigned long long cases;
    unsigned long long injected;  /* runs in which the armed failure happened */
    unsigned long long tolerated; /* ... and the call still succeeded */
} inj_totals;

/* Runs k with the N-th allocation or backend call failing, N = 1, 2, ...
 * until it succeeds untouched; fails the test on any broken promise. */
void inj_run_case(const inj_case *k, const inj_target *target, inj_mode mode, inj_totals *totals);

#endif /* BITT_TEST_INJECT_HARNESS_H */
