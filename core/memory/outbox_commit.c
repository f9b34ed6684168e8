/*
 * core/memory/outbox_commit.c: BITT_OP_OUTBOX_APPEND inside an atomic
 * commit. prepare numbers every append of the commit (per stream, after
 * the stream's last sequence and the commit's earlier appends) and
 * allocates the events and new streams; apply links them in and cannot
 * fail; discard frees them.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

typedef struct item {
    bitt_mem_event *event;   /* NULL until allocated */
    bitt_mem_stream *stream; /* linked, or new (then owned by the plan until apply) */
    int new_stream;          /* this item allocated stream */
} item;

struct bitt_mem_outbox_plan {
    size_t count;
    item items[];
};

bitt_mem_stream *bitt__mem_stream_find(const bitt_backend *be, const char *name)
{
    bitt_omap_node *n = bitt__omap_find(&be->streams, (const uint8_t *)name, strlen(name));
    return n ? BITT_MEM_OF(n, bitt_mem_stream, node) : NULL;
}

static bitt_mem_stream *stream_new(const char *name)
{
    size_t len = strlen(name);
    bitt_mem_stream *s = bitt__calloc(1, sizeof *s + len + 1);
    if (!s) {
        bitt__fail(BITT_ENOMEM, "out of memory for outbox stream '%s'", name);
        return NULL;
    }
    memcpy(s->name, name, len + 1);
    s->node.key = (const uint8_t *)s->name;
    s->node.key_len = (uint32_t)len;
    return s;
}

static bitt_mem_event *event_new(uint64_t seq, const bitt_op *op, int64_t now)
{
    if (op->value_len > UINT32_MAX) {
        bitt__fail(BITT_ETOOLARGE, "memory backend: an outbox event over 4 GiB");
        return NULL;
    }
    bitt_mem_event *e = bitt__malloc(sizeof *e + op->value_len);
    if (!e) {
        bitt__fail(BITT_ENOMEM, "out of memory for an outbox event of %zu bytes", op->value_len);
        return NULL;
    }
    memset(e, 0, sizeof *e);
    if (op->value_len)
        memcpy(e->data, op->value, op->value_len);
    e->seq = seq;
    e->created_at = now;
    e->payload_len = (uint32_t)op->value_len;
    e->kind = op->kind;
    bitt__mem_put_u64(e->skey, seq);
    e->node.key = e->skey;
    e->node.key_len = 8;
    return e;
}

/* The stream of op: linked, allocated by an earlier op of this commit, or
 * new (*fresh set); NULL on out of memory. */
static bitt_mem_stream *stream_for(const bitt_backend *be, const bitt_mem_outbox_plan *p,
                                   const char *name, int *fresh)
{
    *fresh = 0;
    bitt_mem_stream *s = bitt__mem_stream_find(be, name);
    for (size_t i = 0; !s && i < p->count; i++)
        if (p->items[i].new_stream && !strcmp(p->items[i].stream->name, name))
            s = p->items[i].stream;
    if (!s && (s = stream_new(name)))
        *fresh = 1;
    return s;
}

/* The sequence the next append to s gets: after the commit's last append
 * to it, else after the stream's last. */
static uint64_t next_seq(const bitt_mem_outbox_plan *p, const bitt_mem_stream *s)
{
    for (size_t i = p->count; i-- > 0;)
        if (p->items[i].stream == s && p->items[i].event)
            return p->items[i].event->seq + 1;
    return s->last_seq + 1;
}

int bitt__mem_outbox_plan_prepare(bitt_backend *be, bitt_commit *c, size_t n,
                                  bitt_mem_outbox_plan **out)
{
    *out = NULL;
    bitt_mem_outbox_plan *p = bitt__malloc(sizeof *p + n * sizeof *p->items);
    if (!p)
        return bitt__fail(BITT_ENOMEM, "out of memory planning %zu outbox appends", n);
    p->count = 0;
    *out = p;
    for (size_t i = 0; i < c->count; i++) {
        bitt_op *op = &c->ops[i];
        if (op->type != BITT_OP_OUTBOX_APPEND)
            continue;
        op->id = 0;
        int fresh;
        bitt_mem_stream *s = stream_for(be, p, op->name, &fresh);
        if (!s)
            return BITT_ENOMEM;
        uint64_t seq = next_seq(p, s);
        item *it = &p->items[p->count++];
        *it = (item){NULL, s, fresh};
        it->event = event_new(seq, op, c->time.now);
        if (!it->event)
            return bitt_error_last_code();
        op->id = seq;
    }
    return BITT_OK;
}

void bitt__mem_outbox_plan_apply(bitt_backend *be, bitt_mem_outbox_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->count; i++) {
        item *it = &p->items[i];
        if (it->new_stream)
            bitt__omap_insert(&be->streams, &it->stream->node);
        bitt__omap_insert(&it->stream->pending, &it->event->node);
        it->stream->last_seq = it->event->seq;
    }
    free(p);
}

void bitt__mem_outbox_plan_discard(bitt_commit *c, bitt_mem_outbox_plan *p)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->ops[i].type == BITT_OP_OUTBOX_APPEND)
            c->ops[i].id = 0;
    if (!p)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free(p->items[i].event);
        if (p->items[i].new_stream)
            free(p->items[i].stream);
    }
    free(p);
}
