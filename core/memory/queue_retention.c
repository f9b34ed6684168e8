/*
 * core/memory/queue_retention.c: queue retention on the memory backend.
 *
 * With queue_done_retention an ack keeps its message done, in its topic's
 * `done` map by (done_at, id); with queue_dead_retention every dead letter
 * is also in its topic's `aging` map by (failed_at, id). So the sweep that
 * starts every queue call drops what outlived a retention by taking the
 * front of those two maps while it is old enough: O(log n) per message
 * dropped and one look at each map otherwise, never a walk of the topic.
 * Without retention both maps stay empty and the sweep only does the
 * expired last leases, as before.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

/* Drops the front of map (keyed by (time, id)) while its time is <= cutoff:
 * done through the order node (done_at), aging through the aux node
 * (failed_at). */
static uint64_t drop_older(bitt_backend *be, bitt_omap *map, int64_t cutoff, int by_aux)
{
    uint64_t removed = 0;
    for (bitt_omap_node *n; (n = bitt__omap_first(map)); removed++) {
        bitt_mem_msg *m = by_aux ? bitt__mem_msg_of_dedup(n) : BITT_MEM_OF(n, bitt_mem_msg, order);
        int64_t at = by_aux ? m->failed_at : m->done_at;
        if (at > cutoff)
            break;
        bitt__mem_msg_drop(be, m);
    }
    return removed;
}

uint64_t bitt__mem_queue_sweep(bitt_backend *be, bitt_mem_topic *topic, int64_t now)
{
    bitt__mem_queue_sweep_leases(topic, now);
    const bitt_mem_queue *q = &be->queue;
    uint64_t removed = 0;
    /* done_at <= now - retention; a retention past the clock's start keeps
     * everything (no underflow) */
    if (q->done_retention_ms > 0 && topic->done.count && now >= INT64_MIN + q->done_retention_ms)
        removed += drop_older(be, &topic->done, now - q->done_retention_ms, 0);
    if (q->dead_retention_ms > 0 && topic->aging.count && now >= INT64_MIN + q->dead_retention_ms)
        removed += drop_older(be, &topic->aging, now - q->dead_retention_ms, 1);
    return removed;
}

int bitt__mem_queue_purge(bitt_backend *be, const bitt_time *t, const char *name, uint64_t *removed)
{
    uint64_t count = 0;
    if (name) {
        bitt_mem_topic *topic = bitt__mem_topic_find(be, name);
        if (topic) {
            count = bitt__mem_queue_sweep(be, topic, t->now);
            bitt__mem_topic_release(be, topic);
        }
    } else {
        /* The next topic is found before a release can free this one. */
        for (bitt_omap_node *n = bitt__omap_first(&be->queue.topics), *next; n; n = next) {
            next = bitt__omap_next(n);
            bitt_mem_topic *topic = BITT_MEM_OF(n, bitt_mem_topic, node);
            count += bitt__mem_queue_sweep(be, topic, t->now);
            bitt__mem_topic_release(be, topic);
        }
    }
    *removed = count;
    return BITT_OK;
}

int bitt__mem_result_new(const uint8_t *value, size_t len, int kind, bitt_mem_result **out)
{
    *out = NULL;
    if (!value)
        return BITT_OK;
    if (len > UINT32_MAX)
        return bitt__fail(BITT_ETOOLARGE, "memory backend: an ack result over 4 GiB");
    bitt_mem_result *r = bitt__malloc(sizeof *r + len);
    if (!r)
        return bitt__fail(BITT_ENOMEM, "out of memory for an ack result of %zu bytes", len);
    r->len = (uint32_t)len;
    r->kind = kind;
    if (len)
        memcpy(r->data, value, len);
    *out = r;
    return BITT_OK;
}
