/*
 * core/memory/queue_commit.c: BITT_OP_ENQUEUE inside an atomic commit.
 *
 * prepare decides every enqueue of the commit in op order (a live dedup
 * key, in the store or earlier in the same commit, makes the op a no-op
 * answering the holder's id) and allocates the new messages and topics;
 * apply links them in and cannot fail; discard frees them. Ids come from
 * the store-wide counter, which only moves when the commit applies.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

typedef struct item {
    bitt_mem_msg *msg;     /* NULL until allocated */
    bitt_mem_topic *topic; /* linked, or new (then owned by the plan until apply) */
    int new_topic;         /* this item allocated topic */
} item;

struct bitt_mem_enqueue_plan {
    const bitt_commit *commit;
    const bitt_mem_qop_plan *qops;
    size_t count;
    uint64_t last_id;
    int64_t now;
    item items[];
};

/* A topic allocated by an earlier op of this commit, or NULL. */
static bitt_mem_topic *planned_topic(const bitt_mem_enqueue_plan *p, const char *name)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->items[i].new_topic && !strcmp(p->items[i].topic->name, name))
            return p->items[i].topic;
    return NULL;
}

/* The id of the message holding (topic, key) at now for op `index`: a
 * live one in the store that no earlier queue op of the commit removes, or
 * one this commit enqueues; 0 when the key is free. */
static uint64_t holder(const bitt_mem_enqueue_plan *p, const bitt_mem_topic *topic,
                       const uint8_t *key, size_t len, size_t index)
{
    bitt_omap_node *n = bitt__omap_find(&topic->dedup, key, len);
    if (n) {
        const bitt_mem_msg *m = bitt__mem_msg_of_dedup(n);
        if (bitt__mem_msg_holds_key(m, p->now) &&
            !bitt__mem_qop_frees_key(p->qops, p->commit, m, index))
            return m->id;
    }
    for (size_t i = 0; i < p->count; i++) {
        const bitt_mem_msg *m = p->items[i].msg;
        if (p->items[i].topic == topic && m && m->has_dedup && m->dedup_len == len &&
            (!len || !memcmp(bitt__mem_msg_dedup_key(m), key, len)))
            return m->id;
    }
    return 0;
}

static int plan_op(bitt_backend *be, bitt_mem_enqueue_plan *p, bitt_op *op, size_t index)
{
    bitt_mem_topic *topic = bitt__mem_topic_find(be, op->name);
    int fresh = 0;
    if (!topic)
        topic = planned_topic(p, op->name);
    if (!topic) {
        topic = bitt__mem_topic_new(op->name);
        if (!topic)
            return BITT_ENOMEM;
        fresh = 1;
    }
    if (op->aux && !fresh) {
        uint64_t id = holder(p, topic, op->aux, op->aux_len, index);
        if (id) {
            op->deduped = 1;
            op->id = id;
            return BITT_OK;
        }
    }
    item *it = &p->items[p->count++];
    *it = (item){NULL, topic, fresh};
    const uint64_t id = p->last_id + 1;
    it->msg =
        bitt__mem_msg_new(id, op->value, op->value_len, op->kind, op->aux, op->aux_len,
                          op->max_attempts, op->priority, p->now,
                          bitt__time_add(p->now, op->delay_ms), be->queue.dead_retention_ms > 0);
    if (!it->msg)
        return bitt_error_last_code(); /* set by bitt__mem_msg_new */
    p->last_id = id;
    op->id = id;
    return BITT_OK;
}

int bitt__mem_enqueue_plan_prepare(bitt_backend *be, bitt_commit *c, size_t n,
                                   const bitt_mem_qop_plan *qops, bitt_mem_enqueue_plan **out)
{
    *out = NULL;
    bitt_mem_enqueue_plan *p = bitt__malloc(sizeof *p + n * sizeof *p->items);
    if (!p)
        return bitt__fail(BITT_ENOMEM, "out of memory planning %zu enqueues", n);
    p->commit = c;
    p->qops = qops;
    p->count = 0;
    p->last_id = be->queue.last_id;
    p->now = c->time.now;
    *out = p;
    for (size_t i = 0; i < c->count; i++) {
        bitt_op *op = &c->ops[i];
        if (op->type != BITT_OP_ENQUEUE)
            continue;
        op->deduped = 0;
        op->id = 0;
        int rc = plan_op(be, p, op, i);
        if (rc)
            return rc;
    }
    return bitt__mem_msg_reserve(be, p->count);
}

void bitt__mem_enqueue_plan_apply(bitt_backend *be, bitt_mem_enqueue_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->count; i++) {
        item *it = &p->items[i];
        if (it->new_topic)
            bitt__mem_topic_link(be, it->topic);
        else /* an expired last lease gives its dedup key up first */
            bitt__mem_queue_sweep(be, it->topic, p->now);
        bitt__mem_msg_link(be, it->topic, it->msg);
    }
    be->queue.last_id = p->last_id;
    free(p);
}

void bitt__mem_enqueue_plan_discard(bitt_commit *c, bitt_mem_enqueue_plan *p)
{
    for (size_t i = 0; i < c->count; i++) {
        if (c->ops[i].type == BITT_OP_ENQUEUE) {
            c->ops[i].id = 0;
            c->ops[i].deduped = 0;
        }
    }
    if (!p)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free(p->items[i].msg);
        if (p->items[i].new_topic)
            free(p->items[i].topic);
    }
    free(p);
}
