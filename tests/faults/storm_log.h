/*
 * tests/faults/storm_log.h: what the kill storm's processes share (in
 * memory that outlives a SIGKILLed child) and how the parent checks it.
 */
#ifndef BITT_STORM_LOG_H
#define BITT_STORM_LOG_H

#include <stdint.h>

#include "bitt.h"

#define STORM_MAX_RECS (8u << 20)

enum { JOB_ATTEMPTED = 1, JOB_ACKED = 2 };
enum { REC_CLAIM = 1, REC_COMMIT, REC_DUPLICATE, REC_ACK, REC_STALE };

/* One event of a delivery. at: CLAIM the lease's start (store clock),
 * COMMIT/DUPLICATE when the commit returned, ACK/STALE when the ack was
 * sent (wall clock); due: the delivery's lease end. kind is written last,
 * so a record cut short by a kill reads as kind 0 and is skipped. */
typedef struct storm_rec {
    int64_t job;
    int64_t at;
    int64_t due;
    uint32_t attempt;
    uint32_t kind;
} storm_rec;

typedef struct storm_shared {
    int64_t next_job;  /* the last id handed to the producer */
    int64_t completed; /* acks accepted, for the producer's pace */
    int64_t stalls;
    int64_t child_errors;
    int stop_producing;
    int drain;      /* workers end once the queue is idle */
    uint8_t *state; /* per job id: JOB_ATTEMPTED, then JOB_ACKED */
    uint64_t nrecs;
    storm_rec *recs;
} storm_shared;

void storm_record(storm_shared *sh, uint32_t kind, int64_t job, uint32_t attempt, int64_t at,
                  int64_t due);

typedef struct storm_report {
    int64_t acked, unacked, unacked_landed; /* enqueues */
    int64_t done_keys, lost, twice, duplicates, stale;
    int64_t late_acks, early_claims, max_reclaim_ms, dead;
} storm_report;

/* Reads the store back and checks every invariant; each violation is
 * printed and counted with fault_violation. */
void storm_verify(storm_shared *sh, bitt_store *store, const char *topic, int64_t lease_ms,
                  storm_report *out);

#endif /* BITT_STORM_LOG_H */
