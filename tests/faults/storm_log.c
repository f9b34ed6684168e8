/*
 * tests/faults/storm_log.c: the kill storm's shared record and its checks
 * (see storm_log.h).
 */
#include "storm_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

void storm_record(storm_shared *sh, uint32_t kind, int64_t job, uint32_t attempt, int64_t at,
                  int64_t due)
{
    uint64_t i = __atomic_fetch_add(&sh->nrecs, 1, __ATOMIC_SEQ_CST);
    if (i >= STORM_MAX_RECS)
        return; /* the log is full: the checks then say so */
    storm_rec *r = &sh->recs[i];
    r->job = job;
    r->at = at;
    r->due = due;
    r->attempt = attempt;
    __atomic_store_n(&r->kind, kind, __ATOMIC_RELEASE);
}

typedef struct done_ctx {
    int64_t max_job, keys;
    uint8_t *done;
} done_ctx;

static void mark_done(void *arg, const uint8_t *key, size_t len)
{
    done_ctx *c = arg;
    char buf[32];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < 31 ? len : 31), (const char *)key);
    int64_t id = strtoll(buf + 5, NULL, 10);
    if (id < 1 || id > c->max_job)
        fault_violation("a done key for job %" PRId64 " that was never enqueued", id);
    else
        c->done[id]++;
    c->keys++;
}

/* Marks every done/<id> key in done[]; returns how many keys there are. */
static int64_t read_done(bitt_store *s, int64_t max_job, uint8_t *done)
{
    done_ctx c = {max_job, 0, done};
    int rc = fault_list_keys(s, "done/", mark_done, &c);
    if (rc != BITT_OK)
        fault_violation("listing done/ keys: %s: %s", bitt_strerror(rc), bitt_error_last());
    return c.keys;
}

static int by_job_then_start(const void *a, const void *b)
{
    const storm_rec *x = a, *y = b;
    if (x->job != y->job)
        return x->job < y->job ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Claims: none before the previous lease of the same message ended. Acks:
 * none accepted once its lease had ended (the store's clock and the wall
 * clock are the same machine's). */
static void check_timing(storm_shared *sh, int64_t lease_ms, storm_report *out)
{
    uint64_t n = sh->nrecs < STORM_MAX_RECS ? sh->nrecs : STORM_MAX_RECS;
    if (sh->nrecs > STORM_MAX_RECS)
        fault_violation("the record log overflowed (%" PRIu64 " records)", sh->nrecs);
    storm_rec *claims = malloc(sizeof *claims * (n ? n : 1));
    size_t nc = 0;
    for (uint64_t i = 0; i < n; i++) {
        const storm_rec *r = &sh->recs[i];
        if (r->kind == REC_CLAIM)
            claims[nc++] = *r;
        else if (r->kind == REC_ACK && r->at > r->due) {
            out->late_acks++;
            fault_violation("job %" PRId64 ": ack sent %" PRId64 " ms after its lease ended "
                            "was accepted",
                            r->job, r->at - r->due);
        } else if (r->kind == REC_STALE)
            out->stale++;
        else if (r->kind == REC_DUPLICATE)
            out->duplicates++;
    }
    qsort(claims, nc, sizeof *claims, by_job_then_start);
    for (size_t i = 1; i < nc; i++) {
        if (claims[i].job != claims[i - 1].job)
            continue;
        int64_t gap = claims[i].at - claims[i - 1].due;
        if (gap < 0) {
            out->early_claims++;
            fault_violation("job %" PRId64 " claimed (attempt %" PRIu32 ") %" PRId64
                            " ms before the previous lease (attempt %" PRIu32 ") ended",
                            claims[i].job, claims[i].attempt, -gap, claims[i - 1].attempt);
        } else if (gap > out->max_reclaim_ms) {
            out->max_reclaim_ms = gap;
        }
    }
    (void)lease_ms;
    free(claims);
}

void storm_verify(storm_shared *sh, bitt_store *s, const char *topic, int64_t lease_ms,
                  storm_report *out)
{
    memset(out, 0, sizeof *out);
    bitt_queue_stats st;
    memset(&st, 0, sizeof st);
    st.version = BITT_QUEUE_STATS_VERSION;
    int rc = bitt_queue_stats_get(s, topic, &st);
    if (rc != BITT_OK)
        fault_violation("queue stats: %s", bitt_error_last());
    out->dead = (int64_t)st.dead;
    if (st.pending + st.delayed + st.processing + st.dead)
        fault_violation("the queue is not drained: %" PRIu64 " pending, %" PRIu64
                        " delayed, %" PRIu64 " processing, %" PRIu64 " dead",
                        st.pending, st.delayed, st.processing, st.dead);

    int64_t max_job = sh->next_job;
    uint8_t *done = calloc((size_t)max_job + 1, 1);
    out->done_keys = read_done(s, max_job, done);
    for (int64_t id = 1; id <= max_job; id++) {
        uint8_t state = sh->state[id];
        if (state == JOB_ACKED)
            out->acked++;
        else if (state == JOB_ATTEMPTED) {
            out->unacked++;
            out->unacked_landed += done[id] != 0;
        } else if (done[id]) {
            fault_violation("job %" PRId64 " is done but was never enqueued", id);
        }
        if (state == JOB_ACKED && !done[id]) {
            out->lost++;
            fault_violation("job %" PRId64 ": its enqueue was acknowledged, it was never done", id);
        }
    }
    /* Each commit that returned OK is there; no job was committed twice. */
    uint8_t *commits = calloc((size_t)max_job + 1, 1);
    uint64_t n = sh->nrecs < STORM_MAX_RECS ? sh->nrecs : STORM_MAX_RECS;
    for (uint64_t i = 0; i < n; i++) {
        const storm_rec *r = &sh->recs[i];
        if (r->kind != REC_COMMIT || r->job < 1 || r->job > max_job)
            continue;
        if (!done[r->job])
            fault_violation("job %" PRId64 ": an acknowledged commit is missing", r->job);
        if (commits[r->job]++ == 1) {
            out->twice++;
            fault_violation("job %" PRId64 " was committed twice", r->job);
        }
    }
    bitt_entry *e = NULL;
    int64_t counter = -1;
    if (bitt_kv_get(s, "done", 4, &e) == BITT_OK)
        bitt_entry_counter(e, &counter);
    bitt_entry_free(e);
    if (counter != out->done_keys)
        fault_violation("the counter says %" PRId64 " jobs done, there are %" PRId64 " done keys",
                        counter, out->done_keys);
    free(commits);
    free(done);
    check_timing(sh, lease_ms, out);
}
