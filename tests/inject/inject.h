/*
 * tests/inject/inject.h: the fault-injection tests (built only with
 * BITT_FAULT_INJECTION=ON). Each case is one representative call of one or
 * more public functions. The harness runs it on a fresh store with the N-th
 * allocation (or the N-th backend call) failing, for N = 1, 2, ... until the
 * call succeeds without reaching the failure, and checks each time: a clean
 * status with a message, the store exactly as before (no partial write),
 * the store still working (the same call again, with no failure, gives the
 * clean run's result and state), and (under LeakSanitizer) nothing leaked.
 */
#ifndef BITT_TEST_INJECT_H
#define BITT_TEST_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include "bitt.h"

/* What a case works on: a fresh store holding the fixture (inject_fixture)
 * and whatever its prepare step and its call leave for the teardown. */
typedef struct inj_ctx {
    bitt_store *store;
    const char *url;
    const char *new_url; /* a URL of another, empty store */
    /* from the fixture */
    char token[64];       /* the live delivery of queue "jobs" */
    uint64_t token_id;    /* its message id */
    uint64_t dead_id;     /* a dead message of "jobs" */
    uint64_t lease_epoch; /* lease "lock", owner "w1" */
    uint64_t version_a;   /* key "a" */
    /* from inj_fixture_retention */
    int retention;            /* the store keeps done messages and drops dead ones */
    uint64_t done_id;         /* a done message of "jobs", acked with a JSON result */
    char retention_url[1400]; /* the store's URL */
    /* results the call may leave (freed by the harness) */
    bitt_entry *entry;
    bitt_entries *entries;
    bitt_messages *messages;
    bitt_message *message;
    bitt_txn *txn;
    bitt_sub *sub;
    bitt_store *other;
    bitt_schedule *schedule;
    bitt_schedule **schedules;
    size_t schedule_count;
    bitt_buf buf;
} inj_ctx;

/* How a handle a failed call worked on behaves afterwards. */
typedef enum inj_after {
    /* It works again: the same call gives expect and the clean state. */
    INJ_AFTER_RETRY = 0,
    /* The call used it up (a txn commits once): again is BITT_EUSAGE. */
    INJ_AFTER_USED = 1,
    /* A txn op: the refusal fails the txn, so again it gives the same
     * status, the commit gives it too and writes nothing; a new txn
     * gives expect. */
    INJ_AFTER_TXN_FAILED = 2,
} inj_after;

typedef struct inj_case {
    const char *name;
    /* The public functions this case's call makes, space-separated. */
    const char *covers;
    /* Optional setup after the fixture, with no fault armed. */
    int (*prepare)(inj_ctx *c);
    /* The call under test: its status (BITT_OK or the case's outcome). */
    int (*call)(inj_ctx *c);
    /* The status of the call when nothing fails. */
    int expect;
    /* What the same call gives when made again after a failure. */
    inj_after after;
} inj_case;

extern const inj_case inj_kv_cases[];
extern const size_t inj_kv_case_count;
extern const inj_case inj_module_cases[];
extern const size_t inj_module_case_count;
extern const inj_case inj_queue_control_cases[];
extern const size_t inj_queue_control_case_count;
extern const inj_case inj_misc_cases[];
extern const size_t inj_misc_case_count;
extern const inj_case inj_retention_cases[];
extern const size_t inj_retention_case_count;

/* Fills a fresh store: keys, a queue with a live delivery and a dead
 * letter, a lease, outbox events (pending, failed, parked), schedules and a
 * budget, on a manual clock. */
int inj_fixture(inj_ctx *c);
/* For a case's prepare step: puts in place of the fixture's store a new
 * one (at new_url) with queue_done_retention and queue_dead_retention,
 * holding the same fixture, plus a done message of "jobs" (done_id, acked
 * at INJ_NOW with the result {"ok":1}) and, on topic "old", a done message
 * and a dead letter whose retentions ended before INJ_NOW (which no call
 * in the fixture touched since, so a purge finds them). Does nothing when
 * c already has it (a txn case's prepare runs again). */
int inj_fixture_retention(inj_ctx *c);
#define INJ_DONE_RETENTION_MS 1000
#define INJ_DEAD_RETENTION_MS 2000
/* A text dump of everything the store holds that the public API can read
 * without changing it. */
void inj_snapshot(bitt_store *s, bitt_buf *out);

#define INJ_NOW 1000000000

#endif /* BITT_TEST_INJECT_H */
