/*
 * tests/c/support/time_edges.h: the calls of test_time_edges, each of which
 * adds a time and a duration, driven with clocks and durations at the ends
 * of int64. A run drives one backend and writes every result as a line of
 * its trace, which the test compares with memory's; each call also checks
 * its result against an exact oracle as it goes. A violation is noted, not
 * fatal, so that one run shows everything a backend gets wrong.
 */
#ifndef BITT_TEST_TIME_EDGES_H
#define BITT_TEST_TIME_EDGES_H

#include <stddef.h>
#include <stdint.h>

#include "bitt.h"

#define TE_MAX INT64_MAX
#define TE_DMAX BITT_DURATION_MAX_MS
#define TE_BAD_KEPT 8

typedef struct te_run {
    const char *backend;
    /* Opens a fresh store of the backend (a new file, schema or prefix)
     * with these URL options ("" for none), on a manual clock; NULL after
     * noting why. The run closes it. */
    bitt_store *(*open)(struct te_run *r, const char *options);
    void *ctx;
    bitt_store *stores[8];
    size_t nstores;
    char **lines; /* the trace */
    size_t count, cap;
    char *bad[TE_BAD_KEPT]; /* the first violations */
    size_t nbad;
} te_run;

/* Clock values and durations at the edges, shared by every call. */
extern const int64_t te_times[];
extern const size_t te_ntimes;
extern const int64_t te_durations[]; /* what the modules accept, and just past it */
extern const size_t te_ndurations;

/* Appends a line to the trace. */
void te_note(te_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a violation (also a trace line). */
void te_bad(te_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Traces a call's status; a violation unless it is want (bitt_error_last
 * shown then). Returns status == want. */
int te_status(te_run *r, const char *call, int status, int want);
/* Sets the manual clock; a failure is a violation. */
void te_at(te_run *r, bitt_store *s, int64_t now);
/* The oracle: t + d for d >= 0, saturating at INT64_MAX. */
int64_t te_sum(int64_t t, int64_t d);
/* Opens a store through r->open and keeps it for te_close_all. */
bitt_store *te_store(te_run *r, const char *options);
void te_close_all(te_run *r);
void te_free(te_run *r);

/* The drivers, one per module. */
void te_clock_rules(te_run *r);
void te_kv(te_run *r);
void te_lease(te_run *r);
void te_budget(te_run *r);
void te_queue(te_run *r);
void te_backoff(te_run *r);
void te_schedule(te_run *r);
void te_pubsub(te_run *r);

#endif
