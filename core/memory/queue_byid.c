/*
 * core/memory/queue_byid.c: a message by id on the memory backend: get,
 * and the queue ops of atomic commits (ack, nack, snooze, extend, cancel,
 * reschedule; bitt_queue_cancel and bitt_queue_reschedule are commits of
 * one such op).
 *
 * commit.c runs them in its passes: check judges each op in op order with
 * the other checks (sweeping its topic and finding its message; a delivery
 * op with a stale token fails the commit), prepare copies the nacks' error
 * texts, apply makes the changes (cannot fail) before the commit's
 * enqueues are linked, so an enqueue after an ack or cancel in op order
 * finds the dedup key free, and finish frees the topics left empty once
 * those enqueues are in. A txn holds at most one of these ops per message,
 * so each is judged against the committed state.
 */
#include <stdlib.h>

#include "memory/memory.h"

typedef struct qitem {
    size_t index;            /* the op's index in the commit */
    bitt_mem_msg *msg;       /* the message the op applies to; NULL: it does nothing */
    char *error;             /* a nack's copied error text, until apply takes it */
    bitt_mem_result *result; /* an ack's copied result (done retention), the same */
} qitem;

struct bitt_mem_qop_plan {
    size_t count;
    qitem items[];
};

static int is_delivery(int type)
{
    return type >= BITT_OP_QUEUE_ACK && type <= BITT_OP_QUEUE_EXTEND;
}

/* The state bitt_queue_get reports, as of now (after the sweep). */
static int state_of(const bitt_mem_msg *m, int64_t now)
{
    if (m->state == BITT_MEM_DEAD)
        return BITT_MSG_DEAD;
    if (m->state == BITT_MEM_DONE)
        return BITT_MSG_DONE;
    if (m->due_at <= now)
        return BITT_MSG_PENDING; /* also a lease that ran out */
    return m->state == BITT_MEM_PROCESSING ? BITT_MSG_LEASED : BITT_MSG_DELAYED;
}

int bitt__mem_queue_get(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        bitt_message **out)
{
    *out = NULL;
    bitt_mem_msg *m = bitt__mem_msg_find(be, bitt__mem_queue_enter(be, topic, t->now), id);
    if (!m)
        return BITT_NOTFOUND;
    bitt_message *copy = bitt__mem_msg_copy(m, NULL, m->attempts, m->due_at);
    if (!copy)
        return BITT_ENOMEM;
    copy->state = state_of(m, t->now);
    *out = copy;
    return BITT_OK;
}

int bitt__mem_qop_plan_new(size_t n, bitt_mem_qop_plan **out)
{
    *out = bitt__malloc(sizeof **out + n * sizeof(qitem));
    if (!*out)
        return bitt__fail(BITT_ENOMEM, "out of memory planning %zu queue ops", n);
    (*out)->count = 0;
    return BITT_OK;
}

int bitt__mem_qop_check(bitt_backend *be, bitt_mem_qop_plan *p, bitt_commit *c, size_t i)
{
    const bitt_op *op = &c->ops[i];
    const int64_t now = c->time.now;
    bitt_mem_msg *m;
    if (is_delivery(op->type)) {
        m = bitt__mem_delivery(be, op->name, op->version, op->owner, now);
        if (!m) {
            c->failed = i;
            return BITT_ETOKEN; /* the message is set by bitt__mem_delivery */
        }
    } else {
        m = bitt__mem_msg_find(be, bitt__mem_queue_enter(be, op->name, now), op->version);
        /* cancel: anything but a dead letter or a done message;
         * reschedule: pending, delayed or a lease that ran out (a last one
         * is dead by the sweep). */
        if (m && (m->state == BITT_MEM_DEAD || m->state == BITT_MEM_DONE))
            m = NULL;
        if (m && op->type == BITT_OP_QUEUE_RESCHEDULE && m->state == BITT_MEM_PROCESSING &&
            m->due_at > now)
            m = NULL;
    }
    p->items[p->count++] = (qitem){i, m, NULL, NULL};
    return BITT_OK;
}

int bitt__mem_qop_prepare(bitt_backend *be, bitt_mem_qop_plan *p, bitt_commit *c)
{
    for (size_t k = 0; k < p->count; k++) {
        const bitt_op *op = &c->ops[p->items[k].index];
        int rc = BITT_OK;
        if (op->type == BITT_OP_QUEUE_NACK)
            rc = bitt__mem_strdup((const char *)op->aux, &p->items[k].error);
        /* without done retention the result goes with the message */
        else if (op->type == BITT_OP_QUEUE_ACK && be->queue.done_retention_ms > 0)
            rc = bitt__mem_result_new(op->value, op->value_len, op->kind, &p->items[k].result);
        if (rc)
            return rc;
    }
    return BITT_OK;
}

int bitt__mem_qop_frees_key(const bitt_mem_qop_plan *p, const bitt_commit *c, const bitt_mem_msg *m,
                            size_t before)
{
    for (size_t k = 0; p && k < p->count && p->items[k].index < before; k++) {
        if (p->items[k].msg != m)
            continue;
        int type = c->ops[p->items[k].index].type;
        return type == BITT_OP_QUEUE_ACK || type == BITT_OP_QUEUE_CANCEL ||
               (type == BITT_OP_QUEUE_NACK && m->attempts >= m->max_attempts);
    }
    return 0;
}

void bitt__mem_qop_apply(bitt_backend *be, bitt_mem_qop_plan *p, bitt_commit *c)
{
    const int64_t now = c->time.now;
    for (size_t k = 0; p && k < p->count; k++) {
        qitem *it = &p->items[k];
        bitt_op *op = &c->ops[it->index];
        op->found = it->msg != NULL;
        if (!it->msg)
            continue;
        if (op->type == BITT_OP_QUEUE_CANCEL) {
            bitt__mem_msg_drop(be, it->msg);
        } else if (op->type == BITT_OP_QUEUE_RESCHEDULE) {
            /* Ends a delivery whose lease ran out: the move clears its token. */
            bitt__mem_msg_move(it->msg, BITT_MEM_PENDING, it->msg->attempts,
                               bitt__time_add(now, op->delay_ms));
        } else {
            bitt_mem_delivery_change d = {
                .type = op->type,
                .now = now,
                .ms = op->type == BITT_OP_QUEUE_EXTEND ? op->ttl_ms : op->delay_ms,
                .error = it->error,
                .result = it->result,
                .backoff = c->backoff,
            };
            it->error = NULL; /* taken by the change */
            it->result = NULL;
            bitt__mem_delivery_apply(be, it->msg, &d);
        }
        it->msg = NULL; /* it may be freed */
    }
}

void bitt__mem_qop_finish(bitt_backend *be, bitt_mem_qop_plan *p, const bitt_commit *c)
{
    for (size_t k = 0; p && k < p->count; k++) {
        const bitt_op *op = &c->ops[p->items[k].index];
        if (op->type != BITT_OP_QUEUE_ACK && op->type != BITT_OP_QUEUE_CANCEL)
            continue;
        /* By name: an earlier item may have freed the topic already. */
        bitt_mem_topic *topic = bitt__mem_topic_find(be, op->name);
        if (topic)
            bitt__mem_topic_release(be, topic);
    }
    free(p);
}

void bitt__mem_qop_discard(bitt_mem_qop_plan *p, bitt_commit *c)
{
    for (size_t k = 0; p && k < p->count; k++) {
        free(p->items[k].error);
        free(p->items[k].result);
        c->ops[p->items[k].index].found = 0;
    }
    free(p);
}
