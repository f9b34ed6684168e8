/*
 * worker.c: a worker. It leases a batch of jobs, then works partition by
 * partition: it takes the partition's lease (never waiting for one while it
 * holds another, so workers cannot deadlock), and for each job commits the
 * result, the running sum and the outbox event in one atomic commit fenced
 * by that lease, then acks. A job whose result is already there (a second
 * delivery) is only acked, so every job has exactly one result.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"

typedef struct part_lease {
    int held;
    uint64_t epoch;
    int64_t expires_at; /* on the store's clock */
} part_lease;

typedef struct worker {
    const jobs_config *cfg;
    bitt_store *store;
    int index;
    char owner[64];
    part_lease *leases; /* one per partition */
    jobs_tally t;
} worker;

typedef struct item {
    const bitt_message *m;
    job j;
    int done; /* committed and acked, nacked, or gone to another worker */
} item;

enum { JOB_DONE = 0, JOB_LEASE_LOST = 1, JOB_ERROR = 2 };

static void lease_name(int p, char *out, size_t cap)
{
    snprintf(out, cap, "partition/%d", p);
}

/* Makes sure the worker holds partition p's lease for a while yet:
 * BITT_OK, BITT_EXISTS when another worker holds it, or an error. */
static int hold(worker *w, int p)
{
    part_lease *l = &w->leases[p];
    char name[32];
    int rc;
    lease_name(p, name, sizeof(name));
    if (l->held) {
        int64_t now = 0;
        if ((rc = bitt_clock_now(w->store, &now)) < 0)
            return rc;
        if (l->expires_at - now > JOBS_PART_LEASE_MS / 2)
            return BITT_OK;
        rc = bitt_lease_renew(w->store, name, w->owner, l->epoch, JOBS_PART_LEASE_MS,
                              &l->expires_at);
        if (rc == BITT_OK) {
            w->t.lease_renewed++;
            return BITT_OK;
        }
        l->held = 0;
        if (rc != BITT_ELEASELOST)
            return rc;
    }
    rc =
        bitt_lease_acquire(w->store, name, w->owner, JOBS_PART_LEASE_MS, &l->epoch, &l->expires_at);
    if (rc == BITT_OK) {
        l->held = 1;
        w->t.lease_acquired++;
    } else if (rc == BITT_EXISTS) {
        w->t.lease_busy++;
    }
    return rc;
}

static int release(worker *w, int p)
{
    part_lease *l = &w->leases[p];
    char name[32];
    if (!l->held)
        return BITT_OK;
    l->held = 0;
    lease_name(p, name, sizeof(name));
    int rc = bitt_lease_release(w->store, name, w->owner, l->epoch);
    return rc == BITT_ELEASELOST ? BITT_OK : rc; /* it had expired: fine */
}

static int ack(worker *w, const bitt_message *m)
{
    int rc = bitt_queue_ack(w->store, JOBS_TOPIC, bitt_message_id(m), bitt_message_token(m));
    if (rc == BITT_ETOKEN) { /* the delivery's lease ended: another takes it */
        w->t.stale_acks++;
        return JOB_DONE;
    }
    return rc < 0 ? jobs_fail("ack", rc) : JOB_DONE;
}

/* One fenced atomic commit: result, sum, event. */
static int commit(worker *w, const item *it, int p)
{
    const job *j = &it->j;
    int64_t result = job_result(j->value);
    char key[48], value[256], event[96];
    int klen = snprintf(key, sizeof(key), "results/%" PRId64, j->id);
    int vlen =
        snprintf(value, sizeof(value),
                 "{\"job\":%" PRId64 ",\"partition\":%d,\"value\":%" PRId64 ",\"result\":%" PRId64
                 ",\"attempts\":%" PRIu32 ",\"worker\":%d}",
                 j->id, j->partition, j->value, result, bitt_message_attempts(it->m), w->index);
    int elen = snprintf(event, sizeof(event), "{\"job\":%" PRId64 ",\"result\":%" PRId64 "}", j->id,
                        result);
    char name[32];
    bitt_txn *txn = NULL;
    lease_name(p, name, sizeof(name));
    int rc = bitt_txn_begin(w->store, &txn);
    if (rc >= 0)
        rc = bitt_txn_fence(txn, name, w->owner, w->leases[p].epoch);
    if (rc >= 0) /* exactly one result per job: the key must be absent */
        rc = bitt_txn_check(txn, key, (size_t)klen, 0);
    if (rc >= 0)
        rc = bitt_txn_set(txn, key, (size_t)klen, value, (size_t)vlen, BITT_KIND_JSON,
                          BITT_TTL_NONE);
    if (rc >= 0)
        rc = bitt_txn_sum(txn, "stats/sum", 9, result);
    if (rc >= 0)
        rc = bitt_txn_sum(txn, "stats/done", 10, 1);
    if (rc >= 0)
        rc = bitt_txn_outbox_append(txn, JOBS_STREAM, event, (size_t)elen, BITT_KIND_JSON);
    if (rc >= 0)
        rc = bitt_txn_commit(txn, NULL);
    bitt_txn_free(txn);
    return rc;
}

static int run_job(worker *w, item *it, int p)
{
    const bitt_message *m = it->m;
    uint32_t attempt = bitt_message_attempts(m);
    if (job_fails(it->j.id, attempt)) {
        char error[96];
        snprintf(error, sizeof(error), "job %" PRId64 " failed on attempt %" PRIu32, it->j.id,
                 attempt);
        int rc = bitt_queue_nack(w->store, JOBS_TOPIC, bitt_message_id(m), bitt_message_token(m),
                                 error, JOBS_RETRY_DELAY_MS);
        if (rc == BITT_ETOKEN)
            w->t.stale_acks++;
        else if (rc < 0)
            return jobs_fail("nack", rc);
        else
            w->t.nacks++;
        return JOB_DONE;
    }
    int rc = hold(w, p); /* renews when half the lease is gone */
    if (rc == BITT_EXISTS)
        return JOB_LEASE_LOST;
    if (rc < 0)
        return jobs_fail("partition lease", rc);
    rc = commit(w, it, p);
    if (rc == BITT_ELEASELOST) { /* fenced: our epoch is stale, nothing was written */
        w->t.fenced++;
        w->leases[p].held = 0;
        return JOB_LEASE_LOST;
    }
    if (rc == BITT_ECONFLICT)
        w->t.duplicates++; /* committed by an earlier delivery: just ack */
    else if (rc < 0)
        return jobs_fail("commit", rc);
    return ack(w, m);
}

/* Gives the deliveries still waiting for a partition a longer lease. */
static int extend_waiting(worker *w, item *items, size_t n, size_t *left)
{
    for (size_t i = 0; i < n; i++) {
        if (items[i].done)
            continue;
        const bitt_message *m = items[i].m;
        int rc = bitt_queue_extend(w->store, JOBS_TOPIC, bitt_message_id(m), bitt_message_token(m),
                                   JOBS_MSG_LEASE_MS);
        if (rc == BITT_ETOKEN) {
            items[i].done = 1;
            (*left)--;
            w->t.stale_acks++;
        } else if (rc < 0) {
            return jobs_fail("extend", rc);
        }
    }
    return 0;
}

static int process_batch(worker *w, const bitt_messages *list, int round)
{
    const int parts = w->cfg->partitions;
    size_t n = bitt_messages_count(list), left = 0;
    item *items = calloc(n, sizeof(*items));
    if (items == NULL)
        return jobs_fail("out of memory", BITT_ENOMEM);
    int code = 0;
    for (size_t i = 0; i < n && code == 0; i++) {
        size_t len = 0;
        const uint8_t *p;
        items[i].m = bitt_messages_at(list, i);
        p = bitt_message_payload(items[i].m, &len);
        if (job_parse(p, len, &items[i].j) == 0 && items[i].j.partition < parts) {
            left++;
            continue;
        }
        items[i].done = 1; /* not a job of this program: let it die */
        int rc = bitt_queue_nack(w->store, JOBS_TOPIC, bitt_message_id(items[i].m),
                                 bitt_message_token(items[i].m), "unreadable job", 0);
        if (rc < 0 && rc != BITT_ETOKEN)
            code = jobs_fail("nack", rc);
    }
    int64_t extended_at = jobs_clock_ms();
    while (code == 0 && left > 0) {
        int progress = 0;
        for (int k = 0; k < parts && code == 0; k++) {
            int p = (w->index + round + k) % parts;
            size_t first = n;
            for (size_t i = 0; i < n && first == n; i++)
                if (!items[i].done && items[i].j.partition == p)
                    first = i;
            if (first == n)
                continue;
            int rc = hold(w, p);
            if (rc == BITT_EXISTS)
                continue; /* another worker has it: come back later */
            if (rc < 0) {
                code = jobs_fail("partition lease", rc);
                break;
            }
            progress = 1;
            for (size_t i = first; i < n && code == 0; i++) {
                if (items[i].done || items[i].j.partition != p)
                    continue;
                int r = run_job(w, &items[i], p);
                if (r == JOB_ERROR)
                    code = 2;
                if (r != JOB_DONE)
                    break;
                items[i].done = 1;
                left--;
            }
            if (code == 0 && (rc = release(w, p)) < 0)
                code = jobs_fail("release", rc);
        }
        if (code == 0 && left > 0 && !progress) {
            jobs_sleep_ms(1);
            if (jobs_clock_ms() - extended_at > JOBS_MSG_LEASE_MS / 2) {
                code = extend_waiting(w, items, n, &left);
                extended_at = jobs_clock_ms();
            }
        }
    }
    free(items);
    return code;
}

static int idle(worker *w, int *is_idle)
{
    bitt_queue_stats s;
    memset(&s, 0, sizeof(s));
    s.version = BITT_QUEUE_STATS_VERSION;
    int rc = bitt_queue_stats_get(w->store, JOBS_TOPIC, &s);
    if (rc < 0)
        return jobs_fail("queue stats", rc);
    *is_idle = s.pending + s.delayed + s.processing == 0;
    return 0;
}

/* Adds the worker's tally to the store's counters, in one commit. */
static int report(worker *w)
{
    const int64_t v[7] = {w->t.nacks,          w->t.duplicates,    w->t.fenced,    w->t.stale_acks,
                          w->t.lease_acquired, w->t.lease_renewed, w->t.lease_busy};
    bitt_txn *txn = NULL;
    int rc = bitt_txn_begin(w->store, &txn);
    for (int i = 0; i < 7 && rc >= 0; i++)
        rc = bitt_txn_sum(txn, jobs_tally_keys[i], strlen(jobs_tally_keys[i]), v[i]);
    if (rc >= 0)
        rc = bitt_txn_commit(txn, NULL);
    bitt_txn_free(txn);
    return rc < 0 ? jobs_fail("report", rc) : 0;
}

int jobs_worker(const jobs_config *cfg, bitt_store *store, int index)
{
    worker w;
    memset(&w, 0, sizeof(w));
    w.cfg = cfg;
    w.store = store;
    w.index = index;
    snprintf(w.owner, sizeof(w.owner), "worker-%d-pid-%ld", index, (long)getpid());
    w.leases = calloc((size_t)cfg->partitions, sizeof(*w.leases));
    if (w.leases == NULL)
        return jobs_fail("out of memory", BITT_ENOMEM);
    int code = 0;
    for (int round = 0; code == 0; round++) {
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        bitt_messages *list = NULL;
        o.limit = (uint32_t)cfg->batch;
        o.lease_ms = JOBS_MSG_LEASE_MS;
        o.wait_ms = 50;
        int rc = bitt_queue_dequeue(store, JOBS_TOPIC, &o, &list);
        size_t n = rc >= 0 ? bitt_messages_count(list) : 0;
        int done = 0;
        if (rc < 0)
            code = jobs_fail("dequeue", rc);
        else if (n > 0)
            code = process_batch(&w, list, round);
        else
            code = idle(&w, &done); /* nothing claimable: is anything left? */
        bitt_messages_free(list);
        if (done)
            break;
    }
    for (int p = 0; p < cfg->partitions; p++)
        release(&w, p);
    if (code == 0)
        code = report(&w);
    free(w.leases);
    return code;
}
