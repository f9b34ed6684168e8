/*
 * core/memory/outbox.c: the outbox calls of the memory backend. Each
 * stream keeps its pending and its parked events in two maps by sequence
 * number; an event moves between them keeping its number.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

static bitt_mem_event *event_at(const bitt_omap *m, uint64_t seq)
{
    uint8_t key[8];
    bitt__mem_put_u64(key, seq);
    bitt_omap_node *n = bitt__omap_find(m, key, 8);
    return n ? BITT_MEM_OF(n, bitt_mem_event, node) : NULL;
}

static void event_free(bitt_mem_event *e)
{
    free(e->last_error);
    free(e);
}

/* Pushes copies of up to limit events of m (of reason, 0 = any) to out;
 * on failure out is as it was. */
static int push_events(const bitt_mem_stream *s, const bitt_omap *m, int reason, size_t limit,
                       bitt_messages *out)
{
    const size_t base = out->count;
    size_t taken = 0;
    for (bitt_omap_node *n = bitt__omap_first(m); n && taken < limit; n = bitt__omap_next(n)) {
        const bitt_mem_event *e = BITT_MEM_OF(n, bitt_mem_event, node);
        if (reason && e->park_reason != reason)
            continue;
        bitt_message f = {
            .id = e->seq,
            .topic = (char *)s->name,
            .payload = (uint8_t *)e->data,
            .payload_len = e->payload_len,
            .kind = e->kind,
            .attempts = e->attempts,
            .last_error = e->last_error,
            .created_at = e->created_at,
            .due_at = e->next_attempt_at,
            .failed_at = e->failed_at,
            .park_reason = e->park_reason,
        };
        bitt_message *copy = bitt__message_new(&f);
        int rc = copy ? bitt__messages_push(out, copy)
                      : bitt__fail(BITT_ENOMEM, "out of memory copying an outbox event");
        if (rc) {
            while (out->count > base)
                bitt_message_free(out->items[--out->count]);
            return rc;
        }
        taken++;
    }
    return BITT_OK;
}

int bitt__mem_outbox_pending(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                             bitt_messages *out)
{
    (void)t; /* every pending event, whatever its next attempt time */
    const bitt_mem_stream *s = bitt__mem_stream_find(be, stream);
    return s ? push_events(s, &s->pending, 0, limit, out) : BITT_OK;
}

int bitt__mem_outbox_parked(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                            size_t limit, bitt_messages *out)
{
    (void)t;
    const bitt_mem_stream *s = bitt__mem_stream_find(be, stream);
    return s ? push_events(s, &s->parked, reason, limit, out) : BITT_OK;
}

int bitt__mem_outbox_ack(bitt_backend *be, const bitt_time *t, const char *stream,
                         const uint64_t *seqs, size_t count, uint64_t *acked)
{
    (void)t;
    uint64_t n = 0;
    bitt_mem_stream *s = bitt__mem_stream_find(be, stream);
    for (size_t i = 0; s && i < count; i++) {
        bitt_mem_event *e = event_at(&s->pending, seqs[i]);
        if (e) {
            bitt__omap_remove(&s->pending, &e->node);
            event_free(e);
            n++;
        }
    }
    if (acked)
        *acked = n;
    return BITT_OK;
}

/* The pending event seq of stream, or NULL with BITT_NOTFOUND. */
static bitt_mem_event *pending_one(bitt_backend *be, const char *stream, uint64_t seq,
                                   bitt_mem_stream **s)
{
    *s = bitt__mem_stream_find(be, stream);
    return *s ? event_at(&(*s)->pending, seq) : NULL;
}

int bitt__mem_outbox_fail(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                          const char *error, int64_t next_attempt_at)
{
    (void)t;
    bitt_mem_stream *s;
    bitt_mem_event *e = pending_one(be, stream, seq, &s);
    if (!e)
        return BITT_NOTFOUND;
    char *copy = NULL;
    int rc = bitt__mem_strdup(error, &copy);
    if (rc)
        return rc;
    free(e->last_error);
    e->last_error = copy;
    if (e->attempts < UINT32_MAX)
        e->attempts++;
    e->next_attempt_at = next_attempt_at;
    return BITT_OK;
}

int bitt__mem_outbox_park(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                          int reason, const char *error)
{
    bitt_mem_stream *s;
    bitt_mem_event *e = pending_one(be, stream, seq, &s);
    if (!e)
        return BITT_NOTFOUND;
    char *copy = NULL;
    int rc = bitt__mem_strdup(error, &copy);
    if (rc)
        return rc;
    free(e->last_error);
    e->last_error = copy;
    e->failed_at = t->now;
    e->park_reason = reason;
    bitt__omap_remove(&s->pending, &e->node);
    bitt__omap_insert(&s->parked, &e->node);
    return BITT_OK;
}

/* Parked back to pending, keeping its sequence number. */
static void unpark(bitt_mem_stream *s, bitt_mem_event *e)
{
    bitt__omap_remove(&s->parked, &e->node);
    free(e->last_error);
    e->last_error = NULL;
    e->attempts = 0;
    e->next_attempt_at = 0;
    e->failed_at = 0;
    e->park_reason = 0;
    bitt__omap_insert(&s->pending, &e->node);
}

static void drop_parked(bitt_mem_stream *s, bitt_mem_event *e)
{
    bitt__omap_remove(&s->parked, &e->node);
    event_free(e);
}

/* Applies fn to the parked events seqs (count 0: all of them); returns how
 * many there were. */
static uint64_t each_parked(bitt_mem_stream *s, const uint64_t *seqs, size_t count,
                            void (*fn)(bitt_mem_stream *, bitt_mem_event *))
{
    uint64_t n = 0;
    if (!s)
        return 0;
    if (!count) {
        for (bitt_omap_node *node; (node = bitt__omap_first(&s->parked)); n++)
            fn(s, BITT_MEM_OF(node, bitt_mem_event, node));
        return n;
    }
    for (size_t i = 0; i < count; i++) {
        bitt_mem_event *e = event_at(&s->parked, seqs[i]);
        if (e) {
            fn(s, e);
            n++;
        }
    }
    return n;
}

int bitt__mem_outbox_retry(bitt_backend *be, const bitt_time *t, const char *stream,
                           const uint64_t *seqs, size_t count, uint64_t *moved)
{
    (void)t;
    uint64_t n = each_parked(bitt__mem_stream_find(be, stream), seqs, count, unpark);
    if (moved)
        *moved = n;
    return BITT_OK;
}

int bitt__mem_outbox_discard(bitt_backend *be, const bitt_time *t, const char *stream,
                             const uint64_t *seqs, size_t count, uint64_t *deleted)
{
    (void)t;
    uint64_t n = each_parked(bitt__mem_stream_find(be, stream), seqs, count, drop_parked);
    if (deleted)
        *deleted = n;
    return BITT_OK;
}

int bitt__mem_outbox_counts(bitt_backend *be, const bitt_time *t, const char *stream,
                            uint64_t *pending, uint64_t *parked)
{
    (void)t;
    const bitt_mem_stream *s = bitt__mem_stream_find(be, stream);
    if (pending)
        *pending = s ? s->pending.count : 0;
    if (parked)
        *parked = s ? s->parked.count : 0;
    return BITT_OK;
}

static void free_event(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    event_free(BITT_MEM_OF(node, bitt_mem_event, node));
}

static void free_stream(bitt_omap_node *node, void *ctx)
{
    bitt_mem_stream *s = BITT_MEM_OF(node, bitt_mem_stream, node);
    bitt__omap_drain(&s->pending, free_event, ctx);
    bitt__omap_drain(&s->parked, free_event, ctx);
    free(s);
}

void bitt__mem_outbox_free(bitt_backend *be)
{
    bitt__omap_drain(&be->streams, free_stream, NULL);
}
