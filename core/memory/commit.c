/*
 * core/memory/commit.c: atomic commits on the memory backend.
 *
 * A commit runs in four passes so that it is all or nothing:
 *   1. every check, lease fence, schedule advance's guard (schedule.c)
 *      and queue op's judgement (queue_byid.c), in op order, against the
 *      committed state;
 *   2. a plan: the mutations in order, on a staging entry per distinct key
 *      (itself a small ordered map), so each op sees the ones before it and
 *      sums are computed; nothing in the store is touched;
 *   3. every allocation the result needs (the new rows, room in the
 *      hash index, and the messages and outbox events the commit adds,
 *      planned by queue_commit.c and outbox_commit.c);
 *   4. the queue ops' changes and the schedules' advances, linking the new
 *      rows, messages and events in and freeing the replaced rows, which
 *      cannot fail.
 * A failure in passes 1-3 frees what the commit allocated and leaves the
 * store exactly as it was.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

#define COUNTER_TEXT_MAX 21 /* what bitt__sum_apply writes at most */
#define LOCAL_STAGES 8      /* commits with up to this many mutations stage on the stack */

/* A key the commit writes: its committed row, and its state after the
 * mutations planned so far. */
typedef struct stage {
    bitt_omap_node node;  /* key = the op's key (borrowed from the commit) */
    bitt_mem_row *row;    /* the committed row at the key, live or expired, or NULL */
    int present;          /* a live value is there now */
    const uint8_t *value; /* when present: the op's value, the row's or `text` */
    size_t value_len;
    int kind;
    uint64_t version;
    int64_t expires_at;
    bitt_mem_row *fresh; /* pass 3: the row to write when present */
    char text[COUNTER_TEXT_MAX];
} stage;

static int op_is_mutation(int type)
{
    return type == BITT_OP_SET || type == BITT_OP_DELETE || type == BITT_OP_SUM;
}

/* Pass 1. */
static int run_checks(bitt_backend *be, bitt_commit *c, bitt_mem_qop_plan *qops)
{
    for (size_t i = 0; i < c->count; i++) {
        const bitt_op *op = &c->ops[i];
        if (bitt__op_is_queue_by_id(op)) {
            int rc = bitt__mem_qop_check(be, qops, c, i);
            if (rc)
                return rc;
            continue;
        }
        if (op->type == BITT_OP_FENCE || op->type == BITT_OP_SCHEDULE_ADVANCE) {
            int rc = op->type == BITT_OP_FENCE ? bitt__mem_lease_fence(be, op, c->time.now)
                                               : bitt__mem_schedule_advance_check(be, op);
            if (rc) {
                c->failed = i;
                return rc;
            }
            continue;
        }
        if (op->type != BITT_OP_CHECK)
            continue;
        const bitt_mem_row *r = bitt__mem_lookup(be, op->key, op->key_len, c->time.now);
        int ok = op->version == 0 ? !r : (r && r->version == op->version);
        if (!ok) {
            c->failed = i;
            if (op->version == 0)
                return bitt__fail(BITT_ECONFLICT, "atomic check %zu failed: the key must be absent",
                                  i);
            return bitt__fail(BITT_ECONFLICT,
                              "atomic check %zu failed: the key is not at version %llu", i,
                              (unsigned long long)op->version);
        }
    }
    return BITT_OK;
}

/* The staging entry of op's key, created from the committed row on first
 * use. `stages` has room for every mutation, so this cannot fail. */
static stage *stage_for(bitt_backend *be, bitt_omap *staged, stage *stages, size_t *used,
                        const bitt_op *op, int64_t now)
{
    bitt_omap_node *seen = bitt__omap_find(staged, op->key, op->key_len);
    if (seen)
        return (stage *)((char *)seen - offsetof(stage, node));
    stage *s = &stages[(*used)++];
    memset(s, 0, sizeof *s);
    s->node.key = op->key;
    s->node.key_len = (uint32_t)op->key_len;
    s->row = bitt__mem_index_find(be, op->key, op->key_len);
    if (s->row && bitt__mem_row_live(s->row, now)) {
        s->present = 1;
        s->value = bitt__mem_row_value(s->row);
        s->value_len = s->row->value_len;
        s->kind = s->row->kind;
        s->version = s->row->version;
        s->expires_at = s->row->expires_at;
    }
    bitt__omap_insert(staged, &s->node);
    return s;
}

/* Pass 2 for one mutation. */
static int plan_op(stage *s, bitt_op *op, uint64_t version, int64_t now)
{
    switch (op->type) {
    case BITT_OP_SET:
        s->value = op->value;
        s->value_len = op->value_len;
        s->kind = op->kind;
        s->expires_at = bitt__expiry(now, op->ttl_ms);
        break;
    case BITT_OP_DELETE:
        op->found = s->present;
        op->old = NULL;
        if (op->want_old && s->present) {
            op->old = bitt__entry_new(s->node.key, s->node.key_len, s->value, s->value_len, s->kind,
                                      s->version, s->expires_at);
            if (!op->old)
                return BITT_ENOMEM;
        }
        s->present = 0;
        return BITT_OK;
    case BITT_OP_SUM: {
        char text[COUNTER_TEXT_MAX];
        size_t len = 0;
        int64_t result = 0;
        int rc = bitt__sum_apply(s->present, s->kind, s->value, s->value_len, op->delta, text, &len,
                                 &result);
        if (rc)
            return rc;
        memcpy(s->text, text, len);
        s->value = (const uint8_t *)s->text;
        s->value_len = len;
        s->kind = BITT_KIND_COUNTER;
        if (!s->present) /* a live key keeps its expiry */
            s->expires_at = bitt__expiry(now, op->ttl_ms);
        op->result = result;
        break;
    }
    }
    s->present = 1;
    s->version = version;
    return BITT_OK;
}

/* Pass 3. */
static int allocate_rows(bitt_backend *be, stage *stages, size_t used)
{
    size_t inserts = 0;
    for (size_t i = 0; i < used; i++)
        inserts += stages[i].present && !stages[i].row;
    if (inserts && bitt__mem_index_reserve(be, inserts))
        return BITT_ENOMEM;
    for (size_t i = 0; i < used; i++) {
        stage *s = &stages[i];
        if (!s->present)
            continue;
        s->fresh = bitt__mem_row_new(s->node.key, s->node.key_len, s->value, s->value_len, s->kind,
                                     s->version, s->expires_at);
        if (!s->fresh)
            return BITT_ENOMEM;
    }
    return BITT_OK;
}

/* Pass 4. */
static void apply(bitt_backend *be, stage *stages, size_t used)
{
    for (size_t i = 0; i < used; i++) {
        stage *s = &stages[i];
        if (s->fresh && s->row)
            bitt__mem_swap(be, s->row, s->fresh);
        else if (s->fresh)
            bitt__mem_link(be, s->fresh);
        else if (s->row) /* deleted, or an expired row a delete touched */
            bitt__mem_drop(be, s->row);
    }
}

/* Undoes passes 2 and 3 after a failure; ops[0, planned) were planned. */
static void discard(bitt_commit *c, size_t planned, stage *stages, size_t used)
{
    for (size_t i = 0; i < used; i++)
        free(stages[i].fresh);
    for (size_t i = 0; i < planned; i++) {
        bitt_op *op = &c->ops[i];
        if (op->type == BITT_OP_DELETE) {
            bitt_entry_free(op->old);
            op->old = NULL;
            op->found = 0;
        }
    }
}

int bitt__mem_commit(bitt_backend *be, bitt_commit *c)
{
    size_t mutations = 0, enqueues = 0, appends = 0, queue_ops = 0, advances = 0;
    for (size_t i = 0; i < c->count; i++) {
        int type = c->ops[i].type;
        if (op_is_mutation(type))
            mutations++;
        else if (type == BITT_OP_ENQUEUE)
            enqueues++;
        else if (type == BITT_OP_OUTBOX_APPEND)
            appends++;
        else if (bitt__op_is_queue_by_id(&c->ops[i]))
            queue_ops++;
        else if (type == BITT_OP_SCHEDULE_ADVANCE)
            advances++;
        else if (type != BITT_OP_CHECK && type != BITT_OP_FENCE)
            return bitt__fail(BITT_EUNSUPPORTED,
                              "the memory backend does not support commit op type %d", type);
    }

    bitt_mem_qop_plan *qops = NULL;
    int rc = queue_ops ? bitt__mem_qop_plan_new(queue_ops, &qops) : BITT_OK;
    if (!rc)
        rc = run_checks(be, c, qops);
    stage local[LOCAL_STAGES];
    stage *stages = local;
    if (!rc && mutations > LOCAL_STAGES) {
        stages = bitt__malloc(mutations * sizeof *stages);
        if (!stages)
            rc = bitt__fail(BITT_ENOMEM, "out of memory planning a commit of %zu ops", c->count);
    }
    if (rc) {
        bitt__mem_qop_discard(qops, c);
        if (stages != local)
            free(stages);
        return rc;
    }

    const uint64_t version = be->last_version + 1;
    const int64_t now = c->time.now;
    bitt_omap staged = {0};
    size_t used = 0, planned = 0;
    for (; planned < c->count && !rc; planned++) {
        bitt_op *op = &c->ops[planned];
        if (!op_is_mutation(op->type))
            continue;
        stage *s = stage_for(be, &staged, stages, &used, op, now);
        rc = plan_op(s, op, version, now);
        if (rc)
            c->failed = planned;
    }
    if (!rc)
        rc = allocate_rows(be, stages, used);
    bitt_mem_enqueue_plan *queued = NULL;
    bitt_mem_outbox_plan *appended = NULL;
    if (!rc && queue_ops)
        rc = bitt__mem_qop_prepare(be, qops, c);
    if (!rc && enqueues)
        rc = bitt__mem_enqueue_plan_prepare(be, c, enqueues, qops, &queued);
    if (!rc && appends)
        rc = bitt__mem_outbox_plan_prepare(be, c, appends, &appended);

    if (rc) {
        discard(c, planned, stages, used);
        if (enqueues)
            bitt__mem_enqueue_plan_discard(c, queued);
        if (appends)
            bitt__mem_outbox_plan_discard(c, appended);
        bitt__mem_qop_discard(qops, c);
    } else {
        apply(be, stages, used);
        /* Before the enqueues, which may take a dedup key an ack or cancel
         * frees; the emptied topics go after them. */
        bitt__mem_qop_apply(be, qops, c);
        bitt__mem_enqueue_plan_apply(be, queued);
        bitt__mem_qop_finish(be, qops, c);
        bitt__mem_outbox_plan_apply(be, appended);
        for (size_t i = 0; advances && i < c->count; i++)
            if (c->ops[i].type == BITT_OP_SCHEDULE_ADVANCE)
                bitt__mem_schedule_advance(be, &c->ops[i]);
        be->last_version = version;
        c->version = version;
    }
    if (stages != local)
        free(stages);
    return rc;
}
