/*
 * core/memory/queue.c: claim (one topic or several), ack, nack, extend,
 * snooze and stats on the memory backend. Every call first dead-letters the
 * topic's expired last leases (bitt__mem_queue_enter), then does its work;
 * a call that fails leaves the messages as they were (the sweep only does
 * what any later call would). The delivery ops' changes are shared with
 * their commit ops (queue_byid.c) through bitt__mem_delivery and
 * bitt__mem_delivery_apply.
 */
#include <string.h>

#include "memory/memory.h"

bitt_mem_topic *bitt__mem_queue_enter(bitt_backend *be, const char *name, int64_t now)
{
    bitt_mem_topic *topic = bitt__mem_topic_find(be, name);
    if (!topic)
        return NULL;
    /* Only retention drops messages, so only then can a topic empty here. */
    if (bitt__mem_queue_sweep(be, topic, now)) {
        bitt__mem_topic_release(be, topic);
        topic = bitt__mem_topic_find(be, name);
    }
    return topic;
}

/* Drops the messages pushed to out from index `from` on. */
static void unpush(bitt_messages *out, size_t from)
{
    while (out->count > from)
        bitt_message_free(out->items[--out->count]);
}

/* The first claimable message of ready at or after n, or NULL. Within one
 * priority ready is in (due_at, id) order, so the first message not yet
 * due ends that priority's claimable ones: jump to the next priority. A
 * claim costs O(log n) per priority with delayed or leased work, not a walk
 * over it. */
static bitt_omap_node *claimable_from(const bitt_omap *ready, bitt_omap_node *n, int64_t now)
{
    while (n) {
        const bitt_mem_msg *m = BITT_MEM_OF(n, bitt_mem_msg, order);
        if (m->due_at <= now)
            return n;
        uint32_t band = bitt__mem_get_u32(m->okey);
        if (band == UINT32_MAX)
            return NULL;
        uint8_t next[4];
        bitt__mem_put_u32(next, band + 1);
        n = bitt__omap_ceil(ready, next, sizeof next);
    }
    return NULL;
}

/* The claim of queue_claim and queue_claim_topics: a merge of the topics'
 * claimable messages by the full ready key (priority, due_at, id), which
 * orders across topics as within one. */
static int claim(bitt_backend *be, int64_t now, const char *const *names, size_t count,
                 size_t limit, int64_t lease_ms, bitt_messages *out)
{
    if (count > BITT_DEQUEUE_TOPICS_MAX)
        return bitt__fail(BITT_ETOOLARGE, "memory backend: a claim over %zu topics", count);
    bitt_omap_node *next[BITT_DEQUEUE_TOPICS_MAX];
    for (size_t i = 0; i < count; i++) {
        bitt_mem_topic *topic = bitt__mem_queue_enter(be, names[i], now);
        next[i] =
            topic ? claimable_from(&topic->ready, bitt__omap_first(&topic->ready), now) : NULL;
    }
    const int64_t due = bitt__time_add(now, lease_ms);

    /* First the copies, with the delivery's token, attempts and lease, so
     * that running out of memory changes nothing; then the moves. The moves
     * reorder the ready maps, so they find each message again by id. */
    const size_t base = out->count;
    for (size_t taken = 0; taken < limit; taken++) {
        size_t best = count;
        for (size_t i = 0; i < count; i++) {
            if (next[i] &&
                (best == count || bitt__omap_cmp(next[i]->key, next[i]->key_len, next[best]->key,
                                                 next[best]->key_len) < 0))
                best = i;
        }
        if (best == count)
            break;
        const bitt_mem_msg *m = BITT_MEM_OF(next[best], bitt_mem_msg, order);
        next[best] = claimable_from(&m->topic->ready, bitt__omap_next(next[best]), now);
        char token[BITT_TOKEN_LEN + 1];
        bitt__token_new(token);
        bitt_message *copy = bitt__mem_msg_copy(m, token, m->attempts + 1, due);
        int rc = copy ? bitt__messages_push(out, copy) : BITT_ENOMEM;
        if (rc) {
            unpush(out, base);
            return rc;
        }
    }
    for (size_t i = base; i < out->count; i++) {
        const bitt_message *copy = out->items[i];
        bitt_mem_msg *m = bitt__mem_msg_find(be, bitt__mem_topic_find(be, copy->topic), copy->id);
        bitt__mem_msg_move(m, BITT_MEM_PROCESSING, copy->attempts, due);
        memcpy(m->token, copy->token, BITT_TOKEN_LEN + 1);
    }
    return BITT_OK;
}

int bitt__mem_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                          int64_t lease_ms, bitt_messages *out)
{
    return claim(be, t->now, &topic, 1, limit, lease_ms, out);
}

int bitt__mem_queue_claim_topics(bitt_backend *be, const bitt_time *t, const char *const *topics,
                                 size_t count, size_t limit, int64_t lease_ms, bitt_messages *out)
{
    return claim(be, t->now, topics, count, limit, lease_ms, out);
}

bitt_mem_msg *bitt__mem_delivery(bitt_backend *be, const char *name, uint64_t id, const char *token,
                                 int64_t now)
{
    bitt_mem_topic *topic = bitt__mem_queue_enter(be, name, now);
    bitt_mem_msg *m = bitt__mem_msg_find(be, topic, id);
    const char *why = NULL;
    if (!m)
        why = "no such message";
    else if (m->state != BITT_MEM_PROCESSING)
        why = m->state == BITT_MEM_DEAD   ? "it is dead"
              : m->state == BITT_MEM_DONE ? "it is done"
                                          : "it is not leased";
    else if (strcmp(m->token, token))
        why = "the token belongs to another delivery";
    else if (m->due_at <= now)
        why = "its lease ended";
    if (!why)
        return m;
    bitt__fail(BITT_ETOKEN, "message %llu of topic '%s': stale ack token (%s)",
               (unsigned long long)id, name, why);
    return NULL;
}

void bitt__mem_delivery_apply(bitt_backend *be, bitt_mem_msg *m, const bitt_mem_delivery_change *d)
{
    const int64_t now = d->now;
    switch (d->type) {
    case BITT_OP_QUEUE_ACK:
        if (be->queue.done_retention_ms > 0)
            bitt__mem_msg_finish(m, now, d->result);
        else
            bitt__mem_msg_drop(be, m);
        return;
    case BITT_OP_QUEUE_NACK: {
        if (m->attempts >= m->max_attempts) {
            bitt__mem_msg_kill(m, now, d->error);
            return;
        }
        int64_t delay = d->ms < 0 ? bitt__backoff_delay(d->backoff, m->attempts) : d->ms;
        bitt__mem_error_free(m->last_error);
        m->last_error = d->error;
        bitt__mem_msg_move(m, BITT_MEM_PENDING, m->attempts, bitt__time_add(now, delay));
        return;
    }
    case BITT_OP_QUEUE_EXTEND: {
        char keep[BITT_TOKEN_LEN + 1];
        memcpy(keep, m->token, sizeof keep);
        bitt__mem_msg_move(m, BITT_MEM_PROCESSING, m->attempts, bitt__time_add(now, d->ms));
        memcpy(m->token, keep, sizeof keep);
        return;
    }
    default: /* BITT_OP_QUEUE_SNOOZE: the attempt is given back with the
              * lease, as if this delivery never happened */
        bitt__mem_msg_move(m, BITT_MEM_PENDING, m->attempts - 1, bitt__time_add(now, d->ms));
        return;
    }
}

/* A standalone delivery call: the checks, the error text's copy, the
 * change. */
static int delivery_call(bitt_backend *be, const char *topic, uint64_t id, const char *token,
                         bitt_mem_delivery_change *d, const char *error)
{
    bitt_mem_msg *m = bitt__mem_delivery(be, topic, id, token, d->now);
    if (!m)
        return BITT_ETOKEN;
    int rc = bitt__mem_strdup(error, &d->error);
    if (rc)
        return rc;
    bitt_mem_topic *owner = m->topic;
    bitt__mem_delivery_apply(be, m, d);
    bitt__mem_topic_release(be, owner);
    return BITT_OK;
}

int bitt__mem_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token)
{
    bitt_mem_delivery_change d = {.type = BITT_OP_QUEUE_ACK, .now = t->now};
    return delivery_call(be, topic, id, token, &d, NULL);
}

/* In order, under the store's mutex: nothing can fail but a stale item,
 * and a repeated id finds its message already gone. */
int bitt__mem_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                             const uint64_t *ids, const char *const *tokens, size_t count,
                             int *statuses)
{
    for (size_t i = 0; i < count; i++)
        if (bitt__mem_queue_ack(be, t, topic, ids[i], tokens[i]) == BITT_OK)
            statuses[i] = BITT_OK;
    return BITT_OK;
}

int bitt__mem_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                         const char *token, const char *error, int64_t delay_ms,
                         const bitt_backoff *backoff)
{
    bitt_mem_delivery_change d = {
        .type = BITT_OP_QUEUE_NACK, .now = t->now, .ms = delay_ms, .backoff = backoff};
    return delivery_call(be, topic, id, token, &d, error);
}

int bitt__mem_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                           const char *token, int64_t lease_ms)
{
    bitt_mem_delivery_change d = {.type = BITT_OP_QUEUE_EXTEND, .now = t->now, .ms = lease_ms};
    return delivery_call(be, topic, id, token, &d, NULL);
}

int bitt__mem_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                           const char *token, int64_t delay_ms)
{
    bitt_mem_delivery_change d = {.type = BITT_OP_QUEUE_SNOOZE, .now = t->now, .ms = delay_ms};
    return delivery_call(be, topic, id, token, &d, NULL);
}

int bitt__mem_queue_stats(bitt_backend *be, const bitt_time *t, const char *name,
                          bitt_queue_stats *out)
{
    const int64_t now = t->now;
    out->pending = out->delayed = out->processing = out->dead = out->done = 0;
    out->oldest_pending_at = 0;
    bitt_mem_topic *topic = bitt__mem_queue_enter(be, name, now);
    if (!topic)
        return BITT_OK;
    out->dead = topic->dead.count;
    out->done = topic->done.count;
    /* Swept, final holds live last leases only. ready is by priority first,
     * so the oldest claimable message may be anywhere in it. A walk of the
     * topic: stats are not on any hot path. */
    out->processing = topic->final.count;
    for (bitt_omap_node *n = bitt__omap_first(&topic->ready); n; n = bitt__omap_next(n)) {
        const bitt_mem_msg *m = BITT_MEM_OF(n, bitt_mem_msg, order);
        if (m->due_at <= now) {
            if (!out->pending++ || m->due_at < out->oldest_pending_at)
                out->oldest_pending_at = m->due_at;
        } else if (m->state == BITT_MEM_PROCESSING) {
            out->processing++;
        } else {
            out->delayed++;
        }
    }
    return BITT_OK;
}
