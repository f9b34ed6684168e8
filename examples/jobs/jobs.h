/*
 * jobs.h: the parts of the jobs example, a job system on bitt.h alone.
 *
 * A producer enqueues jobs on topic "jobs", each tagged with a partition.
 * Workers (processes, or threads for stores that live in one handle) lease
 * batches, hold the lease "partition/<p>" of the partition they work on,
 * and for each job commit, in one fenced atomic commit, its result (KV
 * results/<id>), a running sum (counter stats/sum) and an event on outbox
 * stream "results"; then they ack. Some jobs fail on purpose and are retried
 * or end as dead letters. A dispatcher delivers the outbox, and the program
 * checks at the end that every job was settled exactly once.
 */
#ifndef JOBS_H
#define JOBS_H

#include <stddef.h>
#include <stdint.h>

#include <bitt.h>

#define JOBS_TOPIC "jobs"
#define JOBS_STREAM "results"
#define JOBS_MAX_ATTEMPTS 3
#define JOBS_FLAKY_EVERY 25     /* every 25th job fails its first attempt */
#define JOBS_BROKEN_EVERY 200   /* every 200th job fails every attempt */
#define JOBS_RETRY_DELAY_MS 10  /* a nacked job is retried this soon */
#define JOBS_MSG_LEASE_MS 10000 /* a delivery's lease */
#define JOBS_PART_LEASE_MS 2000 /* a partition lease; renewed at half */
#define JOBS_ENQUEUE_BATCH 100  /* enqueues per atomic commit */

typedef struct jobs_config {
    const char *url;
    int64_t jobs;
    int partitions;
    int workers;
    int batch;   /* messages per dequeue */
    int threads; /* workers are threads on one store handle, not processes */
    int reset;   /* clear what a previous run left in the store first */
} jobs_config;

/* A job as its queue payload carries it. */
typedef struct job {
    int64_t id; /* 1..jobs */
    int partition;
    int64_t value;
} job;

/* What a worker counts; added to the store's stats/ counters at its end,
 * so that processes and threads report the same way. */
typedef struct jobs_tally {
    int64_t nacks;          /* failed attempts given back */
    int64_t duplicates;     /* deliveries whose result was already committed */
    int64_t fenced;         /* commits refused: the partition lease was lost */
    int64_t stale_acks;     /* acks refused: the delivery's lease had ended */
    int64_t lease_acquired; /* partition leases taken */
    int64_t lease_renewed;
    int64_t lease_busy; /* tries on a partition another worker held */
} jobs_tally;

/* The tally's counters in the store, in jobs_tally's order. */
extern const char *const jobs_tally_keys[7];

/* ---- util.c ---- */
int jobs_fail(const char *what, int rc); /* prints what and the error; returns 2 */
int64_t jobs_clock_ms(void);             /* a monotonic clock */
void jobs_sleep_ms(int64_t ms);
/* The job's rules: its value, whether this attempt fails, its result. */
int64_t job_value(int64_t id);
int job_fails(int64_t id, uint32_t attempt);
int64_t job_result(int64_t value);
/* {"id":..,"partition":..,"value":..} both ways; parse returns 0 or -1. */
int job_format(const job *j, char *out, size_t cap);
int job_parse(const uint8_t *p, size_t n, job *out);
/* Reads integer field name of a flat JSON object written by this program. */
int json_int(const uint8_t *p, size_t n, const char *name, int64_t *out);
/* Reads the counter at key (0 when absent). */
int jobs_counter(bitt_store *store, const char *key, int64_t *out);

/* ---- produce.c ---- */
/* 0 when the store holds nothing of a previous run; 2 (printed) if it does. */
int jobs_check_fresh(bitt_store *store);
/* Clears the topic, its dead letters, the stream and the results/stats keys. */
int jobs_reset(bitt_store *store);
/* Enqueues the jobs, JOBS_ENQUEUE_BATCH per atomic commit. */
int jobs_produce(bitt_store *store, const jobs_config *cfg);

/* ---- fence.c ---- */
/* Shows that a holder whose lease moved on cannot commit; 0 or 1/2. */
int jobs_fence_check(bitt_store *store, uint64_t *stale_epoch, uint64_t *new_epoch);

/* ---- worker.c ---- */
/* Works until the topic has nothing pending, delayed or processing. store
 * is the worker's own handle (or the shared one in thread mode). */
int jobs_worker(const jobs_config *cfg, bitt_store *store, int index);

/* ---- dispatch.c ---- */
typedef struct jobs_dispatcher {
    int64_t jobs;
    uint32_t *delivered; /* per job id: events delivered */
    int64_t *delivered_result;
    uint64_t events;
    uint64_t last_seq;
    uint64_t out_of_order; /* a sequence number not above the one before */
    uint64_t unreadable;   /* events that name no job of this run */
} jobs_dispatcher;

int jobs_dispatcher_init(jobs_dispatcher *d, int64_t jobs);
void jobs_dispatcher_free(jobs_dispatcher *d);
/* Delivers one page of pending events and acks them; *count_out = how many. */
int jobs_dispatch(bitt_store *store, jobs_dispatcher *d, size_t *count_out);

/* ---- verify.c ---- */
typedef struct jobs_summary {
    int64_t done, dead, retried, sum;
    int64_t *per_worker; /* cfg->workers entries */
    int64_t violations;
} jobs_summary;

/* Reads the final state back and checks the invariants; prints each
 * violation. Returns 0, or 2 when the store failed. */
int jobs_verify(bitt_store *store, const jobs_config *cfg, const jobs_dispatcher *d,
                jobs_summary *s);

#endif /* JOBS_H */
