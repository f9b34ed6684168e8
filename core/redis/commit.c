/*
 * core/redis/commit.c: atomic commits on Redis: the whole commit is one
 * script (commit_lua.c), so Redis runs it without anything in between.
 * The script checks every CHECK and FENCE first, then plans every mutation
 * without writing (so a refused sum or an overflow leaves the store as it
 * was), then takes the versionstamp (and the message ids and sequence
 * numbers it hands out) from their counters with HINCRBY, and writes.
 *
 * Queue ops by message id run the steps of the standalone queue calls
 * (lua_queue.c): a delivery op (ack, nack, snooze, extend) is judged with
 * the checks, so a stale token fails the commit before anything is written.
 * A schedule advance is a check too (the schedule must still be at the
 * occurrence the claimer read) and moves it with the writes.
 *
 * Times and ids are computed here or in the script from t->now, never from
 * the server's clock: expiries (bitt__expiry) and due times are sent as
 * decimal strings, like every other integer.
 */
#include <string.h>

#include "redis_internal.h"

/* A queue op's head: its type, topic and message id (and token). */
static void queue_op_head(bitt_rd_args *a, const char *type, const bitt_op *op)
{
    bitt__rd_arg_str(a, type);
    bitt__rd_arg_str(a, op->name);
    bitt__rd_arg_u64(a, op->version);
    if (op->owner)
        bitt__rd_arg_str(a, op->owner);
}

/* keeps: the store keeps acked messages done (queue_done_retention), so an
 * ack's result travels with it (type 15); otherwise it goes with the
 * message and the ack is the plain one */
static int add_op(bitt_rd_args *a, const bitt_op *op, int64_t now, int keeps)
{
    switch (op->type) {
    case BITT_OP_CHECK:
        bitt__rd_arg_str(a, "1");
        bitt__rd_arg(a, op->key, op->key_len);
        bitt__rd_arg_u64(a, op->version);
        return BITT_OK;
    case BITT_OP_SET:
        bitt__rd_arg_str(a, "2");
        bitt__rd_arg(a, op->key, op->key_len);
        bitt__rd_arg(a, op->value, op->value_len);
        bitt__rd_arg_i64(a, op->kind);
        bitt__rd_arg_i64(a, bitt__expiry(now, op->ttl_ms));
        return BITT_OK;
    case BITT_OP_DELETE:
        bitt__rd_arg_str(a, "3");
        bitt__rd_arg(a, op->key, op->key_len);
        bitt__rd_arg_str(a, op->want_old ? "1" : "0");
        return BITT_OK;
    case BITT_OP_SUM:
        bitt__rd_arg_str(a, "4");
        bitt__rd_arg(a, op->key, op->key_len);
        bitt__rd_arg_i64(a, op->delta);
        bitt__rd_arg_i64(a, bitt__expiry(now, op->ttl_ms));
        return BITT_OK;
    case BITT_OP_ENQUEUE:
        bitt__rd_arg_str(a, "5");
        bitt__rd_arg_str(a, op->name);
        bitt__rd_arg(a, op->value, op->value_len);
        bitt__rd_arg_i64(a, op->kind);
        bitt__rd_arg_i64(a, bitt__time_add(now, op->delay_ms));
        bitt__rd_arg_u64(a, op->max_attempts);
        bitt__rd_arg_str(a, op->aux ? "1" : "0");
        bitt__rd_arg(a, op->aux, op->aux ? op->aux_len : 0);
        bitt__rd_arg_i64(a, op->priority);
        return BITT_OK;
    case BITT_OP_FENCE:
        bitt__rd_arg_str(a, "6");
        bitt__rd_arg_str(a, op->name);
        bitt__rd_arg_str(a, op->owner);
        bitt__rd_arg_u64(a, op->version);
        return BITT_OK;
    case BITT_OP_OUTBOX_APPEND:
        bitt__rd_arg_str(a, "7");
        bitt__rd_arg_str(a, op->name);
        bitt__rd_arg(a, op->value, op->value_len);
        bitt__rd_arg_i64(a, op->kind);
        return BITT_OK;
    case BITT_OP_QUEUE_ACK:
        if (!keeps || !op->value) {
            queue_op_head(a, "8", op);
            return BITT_OK;
        }
        queue_op_head(a, "15", op);
        bitt__rd_arg(a, op->value, op->value_len);
        bitt__rd_arg_i64(a, op->kind);
        return BITT_OK;
    case BITT_OP_QUEUE_NACK:
        queue_op_head(a, "9", op);
        /* aux: the error text with its NUL (aux_len counts it), or NULL */
        bitt__rd_arg_str(a, op->aux ? "1" : "0");
        bitt__rd_arg(a, op->aux, op->aux && op->aux_len ? op->aux_len - 1 : 0);
        bitt__rd_arg_i64(a, op->delay_ms < 0 ? -1 : op->delay_ms);
        return BITT_OK;
    case BITT_OP_QUEUE_SNOOZE:
    case BITT_OP_QUEUE_EXTEND:
        queue_op_head(a, op->type == BITT_OP_QUEUE_SNOOZE ? "10" : "11", op);
        bitt__rd_arg_i64(
            a, bitt__time_add(now, op->type == BITT_OP_QUEUE_SNOOZE ? op->delay_ms : op->ttl_ms));
        return BITT_OK;
    case BITT_OP_QUEUE_CANCEL: queue_op_head(a, "12", op); return BITT_OK;
    case BITT_OP_QUEUE_RESCHEDULE:
        queue_op_head(a, "13", op);
        bitt__rd_arg_i64(a, bitt__time_add(now, op->delay_ms));
        return BITT_OK;
    case BITT_OP_SCHEDULE_ADVANCE:
        /* delta: the next_run_at read (the guard), delay_ms: the new one */
        bitt__rd_arg_str(a, "14");
        bitt__rd_arg_str(a, op->name);
        bitt__rd_arg_i64(a, op->delta);
        bitt__rd_arg_i64(a, op->delay_ms);
        return BITT_OK;
    default:
        return bitt__fail(BITT_EUNSUPPORTED,
                          "the redis backend does not support commit op "
                          "type %d",
                          op->type);
    }
}

/* Frees what a failed commit handed out. */
static void forget(bitt_commit *c)
{
    for (size_t i = 0; i < c->count; i++) {
        bitt_op *op = &c->ops[i];
        bitt_entry_free(op->old);
        op->old = NULL;
        op->found = 0;
        op->result = 0;
        op->id = 0;
        op->deduped = 0;
    }
}

/* Reads the results of every op from r, from element 2 on. */
static int read_results(bitt_commit *c, const redisReply *r)
{
    static const char what[] = "commit";
    size_t at = 2;
    int rc = BITT_OK;
    for (size_t i = 0; !rc && i < c->count; i++) {
        bitt_op *op = &c->ops[i];
        int64_t v = 0;
        switch (op->type) {
        case BITT_OP_DELETE:
            rc = bitt__rd_elem_count(r, at, 1, what);
            if (!rc)
                rc = bitt__rd_i64(r, at++, &v, what);
            op->found = v != 0;
            if (!rc && op->found && op->want_old) {
                rc = bitt__rd_elem_count(r, at, 4, what);
                if (!rc)
                    rc = bitt__rd_entry(r, at, op->key, op->key_len, INT64_MIN, &op->old, what);
                if (rc == BITT_ENOMEM) /* the server has deleted it: say so */
                    rc = bitt__fail(BITT_ENOMEM, "redis: commit was applied, but out of memory "
                                                 "for the value it took: that value is lost");
                if (!rc && !op->old)
                    rc = bitt__fail(BITT_EBACKEND, "redis: commit: a taken value vanished");
                at += 4;
            }
            break;
        case BITT_OP_SUM:
            rc = bitt__rd_elem_count(r, at, 1, what);
            if (!rc)
                rc = bitt__rd_i64(r, at++, &op->result, what);
            break;
        case BITT_OP_ENQUEUE:
            rc = bitt__rd_elem_count(r, at, 2, what);
            if (!rc)
                rc = bitt__rd_u64(r, at++, &op->id, what);
            if (!rc)
                rc = bitt__rd_i64(r, at++, &v, what);
            op->deduped = v != 0;
            break;
        case BITT_OP_OUTBOX_APPEND:
            rc = bitt__rd_elem_count(r, at, 1, what);
            if (!rc)
                rc = bitt__rd_u64(r, at++, &op->id, what);
            break;
        case BITT_OP_QUEUE_CANCEL:
        case BITT_OP_QUEUE_RESCHEDULE:
            rc = bitt__rd_elem_count(r, at, 1, what);
            if (!rc)
                rc = bitt__rd_i64(r, at++, &v, what);
            op->found = v != 0;
            break;
        default: break;
        }
    }
    return rc;
}

/* The script for c: a lone SET, or a lone DELETE that does not want the
 * old value, has a short one of its own (commit_lua.c) with the same
 * effects and reply; every other commit runs the general one, with the
 * queue library when it has a queue op by id (scripts.c). */
static bitt_rd_script_id commit_script(const bitt_commit *c)
{
    if (c->count == 1 && c->ops[0].type == BITT_OP_SET)
        return RS_KV_SET;
    if (c->count == 1 && c->ops[0].type == BITT_OP_DELETE && !c->ops[0].want_old)
        return RS_KV_DELETE;
    for (size_t i = 0; i < c->count; i++)
        if (bitt__op_is_queue_by_id(&c->ops[i]))
            return RS_COMMIT_QUEUE;
    return RS_COMMIT;
}

int bitt__rd_commit(bitt_backend *be, bitt_commit *c)
{
    const int64_t now = c->time.now;
    const bitt_rd_script_id id = commit_script(c);
    if (id == RS_KV_SET) {
        int grouped = bitt__rd_set_grouped(be, c);
        if (grouped != BITT_RD_UNGROUPED)
            return grouped;
    }
    bitt_rd_args a;
    /* a commit with queue ops runs them with the store's retention */
    if (id == RS_COMMIT_QUEUE)
        bitt__rd_queue_args(be, &a, &c->time);
    else
        bitt__rd_script_args(be, &a, &c->time);
    int rc = BITT_OK;
    if (id == RS_KV_SET) {
        const bitt_op *op = &c->ops[0];
        bitt__rd_arg(&a, op->key, op->key_len);
        bitt__rd_arg(&a, op->value, op->value_len);
        bitt__rd_arg_i64(&a, op->kind);
        bitt__rd_arg_i64(&a, bitt__expiry(now, op->ttl_ms));
    } else if (id == RS_KV_DELETE) {
        bitt__rd_arg(&a, c->ops[0].key, c->ops[0].key_len);
    } else {
        bitt__rd_arg_u64(&a, c->count);
        int backoff = 0; /* a nack takes the store's backoff: it follows the ops */
        for (size_t i = 0; !rc && i < c->count; i++) {
            rc = add_op(&a, &c->ops[i], now, be->limits.queue_done_retention_ms > 0);
            backoff |= c->ops[i].type == BITT_OP_QUEUE_NACK && c->ops[i].delay_ms < 0;
        }
        if (!rc && backoff && !c->backoff)
            rc = bitt__fail(BITT_EINVAL, "commit: a nack without a delay needs the backoff");
        if (!rc && backoff)
            bitt__rd_arg_backoff(&a, c->backoff);
    }
    if (rc) {
        bitt__rd_args_free(&a);
        return rc;
    }
    redisReply *r = NULL;
    rc = bitt__rd_eval(be, id, &a, c->count + 1, &r);
    bitt__rd_args_free(&a);
    if (rc)
        return rc;
    rc = bitt__rd_elem_count(r, 0, 2, "commit");
    if (!rc && r->element[0]->type != REDIS_REPLY_INTEGER)
        rc = bitt__fail(BITT_EBACKEND, "redis: commit: the reply has an unexpected shape");
    if (!rc && r->element[0]->integer != 0) {
        /* {code, index of the failing op, message} */
        int64_t index = 0;
        rc = bitt__rd_i64(r, 1, &index, "commit");
        if (!rc) {
            c->failed = index >= 0 && (uint64_t)index < c->count ? (size_t)index : 0;
            rc = bitt__rd_status(r, "commit");
            if (rc >= 0)
                rc = bitt__fail(BITT_EBACKEND, "redis: commit: an unexpected status");
        }
    } else if (!rc) {
        rc = bitt__rd_u64(r, 1, &c->version, "commit");
        if (!rc)
            rc = read_results(c, r);
    }
    freeReplyObject(r);
    if (rc)
        forget(c);
    return rc;
}
