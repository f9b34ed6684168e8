/*
 * dispatch.c: the outbox dispatcher. It reads the pending events of stream
 * "results" in sequence order, delivers each (here: it records the delivery
 * in memory, where the checks at the end can see it), then acks them.
 */
#include <stdlib.h>
#include <string.h>

#include "jobs.h"

#define DISPATCH_PAGE 500

int jobs_dispatcher_init(jobs_dispatcher *d, int64_t jobs)
{
    memset(d, 0, sizeof(*d));
    d->jobs = jobs;
    d->delivered = calloc((size_t)jobs + 1, sizeof(*d->delivered));
    d->delivered_result = calloc((size_t)jobs + 1, sizeof(*d->delivered_result));
    if (d->delivered == NULL || d->delivered_result == NULL) {
        jobs_dispatcher_free(d);
        return jobs_fail("out of memory", BITT_ENOMEM);
    }
    return 0;
}

void jobs_dispatcher_free(jobs_dispatcher *d)
{
    free(d->delivered);
    free(d->delivered_result);
    d->delivered = NULL;
    d->delivered_result = NULL;
}

static void deliver(jobs_dispatcher *d, const bitt_message *m)
{
    size_t len = 0;
    const uint8_t *p = bitt_message_payload(m, &len);
    int64_t id = 0, result = 0;
    uint64_t seq = bitt_message_id(m);
    if (seq <= d->last_seq)
        d->out_of_order++;
    d->last_seq = seq;
    d->events++;
    if (json_int(p, len, "job", &id) != 0 || json_int(p, len, "result", &result) != 0 || id < 1 ||
        id > d->jobs) {
        d->unreadable++;
        return;
    }
    d->delivered[id]++;
    d->delivered_result[id] = result;
}

int jobs_dispatch(bitt_store *store, jobs_dispatcher *d, size_t *count_out)
{
    bitt_messages *events = NULL;
    uint64_t seqs[DISPATCH_PAGE], acked = 0;
    *count_out = 0;
    int rc = bitt_outbox_pending(store, JOBS_STREAM, DISPATCH_PAGE, &events);
    if (rc < 0)
        return jobs_fail("outbox pending", rc);
    size_t n = bitt_messages_count(events);
    for (size_t i = 0; i < n; i++) {
        const bitt_message *m = bitt_messages_at(events, i);
        deliver(d, m);
        seqs[i] = bitt_message_id(m);
    }
    bitt_messages_free(events);
    if (n > 0 && (rc = bitt_outbox_ack(store, JOBS_STREAM, seqs, n, &acked)) < 0)
        return jobs_fail("outbox ack", rc);
    *count_out = n;
    return 0;
}
