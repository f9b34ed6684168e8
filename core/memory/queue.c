/*
 * core/memory/queue.c: claim, ack, nack, extend, snooze and stats on the memory
 * backend. Every call first dead-letters the topic's expired last leases
 * (bitt__mem_queue_sweep), then does its work; a call that fails leaves
 * the messages as they were (the sweep only does what any later call would).
 */
#include <string.h>

#include "memory/memory.h"

/* The topic, swept at now; NULL when it has no message. */
static bitt_mem_topic *enter(bitt_backend *be, const char *name, int64_t now)
{
    bitt_mem_topic *topic = bitt__mem_topic_find(be, name);
    if (topic)
        bitt__mem_queue_sweep(topic, now);
    return topic;
}

/* Drops the messages pushed to out from index `from` on. */
static void unpush(bitt_messages *out, size_t from)
{
    while (out->count > from)
        bitt_message_free(out->items[--out->count]);
}

int bitt__mem_queue_claim(bitt_backend *be, const bitt_time *t, const char *name, size_t limit,
                          int64_t lease_ms, bitt_messages *out)
{
    const int64_t now = t->now;
    bitt_mem_topic *topic = enter(be, name, now);
    if (!topic || !limit)
        return BITT_OK;
    const int64_t due = bitt__time_add(now, lease_ms);

    /* First the copies, with the delivery's token, attempts and lease, so
     * that running out of memory changes nothing; then the moves. The moves
     * reorder the ready map, so they find each message again by id. */
    const size_t base = out->count;
    size_t taken = 0;
    for (bitt_omap_node *n = bitt__omap_first(&topic->ready); n && taken < limit;
         n = bitt__omap_next(n), taken++) {
        const bitt_mem_msg *m = BITT_MEM_OF(n, bitt_mem_msg, order);
        if (m->due_at > now)
            break;
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
        bitt_mem_msg *m = bitt__mem_msg_find(be, topic, copy->id);
        bitt__mem_msg_move(m, BITT_MEM_PROCESSING, copy->attempts, due);
        memcpy(m->token, copy->token, BITT_TOKEN_LEN + 1);
    }
    return BITT_OK;
}

/* The processing message of topic with id and token under a live lease,
 * or NULL with BITT_ETOKEN set. */
static bitt_mem_msg *delivery(bitt_backend *be, const char *name, uint64_t id, const char *token,
                              int64_t now)
{
    bitt_mem_topic *topic = enter(be, name, now);
    bitt_mem_msg *m = bitt__mem_msg_find(be, topic, id);
    const char *why = NULL;
    if (!m)
        why = "no such message";
    else if (m->state != BITT_MEM_PROCESSING)
        why = m->state == BITT_MEM_DEAD ? "it is dead" : "it is not leased";
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

int bitt__mem_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token)
{
    bitt_mem_msg *m = delivery(be, topic, id, token, t->now);
    if (!m)
        return BITT_ETOKEN;
    bitt_mem_topic *owner = m->topic;
    bitt__mem_msg_drop(be, m);
    bitt__mem_topic_release(be, owner);
    return BITT_OK;
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
    const int64_t now = t->now;
    bitt_mem_msg *m = delivery(be, topic, id, token, now);
    if (!m)
        return BITT_ETOKEN;
    char *copy = NULL;
    int rc = bitt__mem_strdup(error, &copy);
    if (rc)
        return rc;
    if (m->attempts >= m->max_attempts) {
        bitt__mem_msg_kill(m, now, copy);
        return BITT_OK;
    }
    if (delay_ms < 0)
        delay_ms = bitt__backoff_delay(backoff, m->attempts);
    bitt__mem_error_free(m->last_error);
    m->last_error = copy;
    bitt__mem_msg_move(m, BITT_MEM_PENDING, m->attempts, bitt__time_add(now, delay_ms));
    return BITT_OK;
}

int bitt__mem_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                           const char *token, int64_t lease_ms)
{
    bitt_mem_msg *m = delivery(be, topic, id, token, t->now);
    if (!m)
        return BITT_ETOKEN;
    char keep[BITT_TOKEN_LEN + 1];
    memcpy(keep, m->token, sizeof keep);
    bitt__mem_msg_move(m, BITT_MEM_PROCESSING, m->attempts, bitt__time_add(t->now, lease_ms));
    memcpy(m->token, keep, sizeof keep);
    return BITT_OK;
}

/* The attempt is given back with the lease: the message is pending again
 * as if this delivery never happened, sorted by its new due_at. */
int bitt__mem_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                           const char *token, int64_t delay_ms)
{
    bitt_mem_msg *m = delivery(be, topic, id, token, t->now);
    if (!m)
        return BITT_ETOKEN;
    bitt__mem_msg_move(m, BITT_MEM_PENDING, m->attempts - 1, bitt__time_add(t->now, delay_ms));
    return BITT_OK;
}

int bitt__mem_queue_stats(bitt_backend *be, const bitt_time *t, const char *name,
                          bitt_queue_stats *out)
{
    const int64_t now = t->now;
    out->pending = out->delayed = out->processing = out->dead = 0;
    out->oldest_pending_at = 0;
    bitt_mem_topic *topic = enter(be, name, now);
    if (!topic)
        return BITT_OK;
    out->dead = topic->dead.count;
    /* Swept, final holds live last leases only. In ready the claimable
     * ones come first; the rest are delayed or under a live lease. A walk
     * of the topic: stats are not on any hot path. */
    out->processing = topic->final.count;
    bitt_omap_node *n = bitt__omap_first(&topic->ready);
    if (n) {
        const bitt_mem_msg *first = BITT_MEM_OF(n, bitt_mem_msg, order);
        if (first->due_at <= now)
            out->oldest_pending_at = first->due_at;
    }
    for (; n; n = bitt__omap_next(n)) {
        const bitt_mem_msg *m = BITT_MEM_OF(n, bitt_mem_msg, order);
        if (m->due_at <= now)
            out->pending++;
        else if (m->state == BITT_MEM_PROCESSING)
            out->processing++;
        else
            out->delayed++;
    }
    return BITT_OK;
}
