/*
 * Queue ops that address one message by id: the by-id calls (get, cancel,
 * reschedule) and the queue ops of atomic commits. The by-id writes are
 * commits of one op, so each backend has one path for a message's change,
 * alone or beside other writes.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *op_what(int type)
{
    switch (type) {
    case BITT_OP_QUEUE_ACK: return "ack";
    case BITT_OP_QUEUE_NACK: return "nack";
    case BITT_OP_QUEUE_SNOOZE: return "snooze";
    case BITT_OP_QUEUE_EXTEND: return "extend";
    case BITT_OP_QUEUE_CANCEL: return "cancel";
    default: return "reschedule";
    }
}

static int is_delivery_op(int type)
{
    return type >= BITT_OP_QUEUE_ACK && type <= BITT_OP_QUEUE_EXTEND;
}

int bitt__queue_op(const bitt_store *store, int type, const char *topic, uint64_t id,
                   const char *token, const char *error, int64_t ms, bitt_op *op, char **clean)
{
    *clean = NULL;
    const char *what = op_what(type);
    int rc = bitt__check_name(topic, "topic");
    if (rc)
        return rc;
    /* Id 0 is never a message: a delivery of it has no token to match,
     * and cancel or reschedule find nothing there. */
    if (!id && is_delivery_op(type))
        return bitt__fail(BITT_ETOKEN, "%s: message 0 does not exist (ids start at 1)", what);
    if (is_delivery_op(type) && (!token || strlen(token) != BITT_TOKEN_LEN))
        return bitt__fail(BITT_ETOKEN, "%s: the ack token is missing or malformed", what);
    switch (type) {
    case BITT_OP_QUEUE_NACK:
        rc = ms < 0 ? BITT_OK : bitt__check_duration(ms, 0, "nack delay");
        if (!rc)
            rc = bitt__error_text(store, error, "nack error", clean);
        break;
    case BITT_OP_QUEUE_SNOOZE: rc = bitt__check_duration(ms, 0, "snooze delay"); break;
    case BITT_OP_QUEUE_EXTEND: rc = bitt__check_duration(ms, 0, "lease"); break;
    case BITT_OP_QUEUE_RESCHEDULE: rc = bitt__check_duration(ms, 0, "reschedule delay"); break;
    default: break;
    }
    if (rc)
        return rc;
    const char *text = *clean ? *clean : error;
    *op = (bitt_op){.type = type,
                    .name = topic,
                    .version = id,
                    .owner = is_delivery_op(type) ? token : NULL,
                    .aux = (const uint8_t *)text,
                    .aux_len = text ? strlen(text) + 1 : 0,
                    .delay_ms = type == BITT_OP_QUEUE_NACK && ms < 0 ? -1 : ms,
                    .ttl_ms = type == BITT_OP_QUEUE_EXTEND ? ms : 0};
    if (type == BITT_OP_QUEUE_NACK && !text)
        op->aux = NULL;
    return BITT_OK;
}

int bitt__ack_result_op(const bitt_store *store, const bitt_ack_result *r, bitt_op *op)
{
    if (!r->value && !r->len)
        return BITT_OK;
    int rc = bitt__check_value(store, r->kind, r->value, r->len);
    if (rc)
        return rc;
    op->value = r->value;
    op->value_len = r->len;
    op->kind = r->kind;
    return BITT_OK;
}

int bitt__op_is_queue_by_id(const bitt_op *op)
{
    return op->type >= BITT_OP_QUEUE_ACK && op->type <= BITT_OP_QUEUE_RESCHEDULE;
}

int bitt__op_makes_claimable(const bitt_op *op)
{
    switch (op->type) {
    case BITT_OP_ENQUEUE: return !op->deduped;
    case BITT_OP_QUEUE_NACK:
    case BITT_OP_QUEUE_SNOOZE: return 1;
    case BITT_OP_QUEUE_EXTEND: return op->ttl_ms == 0;
    case BITT_OP_QUEUE_RESCHEDULE: return op->found;
    default: return 0;
    }
}

/* cancel and reschedule on their own: a commit of the one op, whose
 * "did nothing" is the caller's BITT_NOTFOUND. */
static int by_id_write(bitt_store *store, int type, const char *topic, uint64_t id, int64_t ms)
{
    bitt__error_reset();
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    bitt_op op;
    char *clean;
    int rc = bitt__queue_op(store, type, topic, id, NULL, NULL, ms, &op, &clean);
    if (!rc)
        rc = bitt__run_commit(store, &op, 1, NULL);
    if (rc)
        return rc;
    return op.found ? BITT_OK : BITT_NOTFOUND;
}

int bitt_queue_cancel(bitt_store *store, const char *topic, uint64_t id)
{
    return by_id_write(store, BITT_OP_QUEUE_CANCEL, topic, id, 0);
}

int bitt_queue_reschedule(bitt_store *store, const char *topic, uint64_t id, int64_t delay_ms)
{
    return by_id_write(store, BITT_OP_QUEUE_RESCHEDULE, topic, id, delay_ms);
}

int bitt_queue_ack_result(bitt_store *store, const char *topic, uint64_t id, const char *token,
                          const void *result, size_t result_len, int kind)
{
    bitt__error_reset();
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    bitt_op op;
    char *clean;
    bitt_ack_result r = {result, result_len, kind};
    int rc = bitt__queue_op(store, BITT_OP_QUEUE_ACK, topic, id, token, NULL, 0, &op, &clean);
    if (!rc)
        rc = bitt__ack_result_op(store, &r, &op);
    return rc ? rc : bitt__run_commit(store, &op, 1, NULL);
}

int bitt_queue_purge(bitt_store *store, const char *topic, uint64_t *removed_out)
{
    bitt__error_reset();
    if (removed_out)
        *removed_out = 0;
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    int rc = topic ? bitt__check_name(topic, "topic") : BITT_OK;
    if (rc)
        return rc;
    if (!store->ops->queue_purge)
        return bitt__unsupported(store, "queue retention");
    uint64_t removed = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->queue_purge(store->be, &t, topic, &removed);
    bitt__store_leave(store);
    if (!rc && removed_out)
        *removed_out = removed;
    return rc;
}

int bitt_queue_get(bitt_store *store, const char *topic, uint64_t id, bitt_message **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    int rc = bitt__check_name(topic, "topic");
    if (rc)
        return rc;
    if (!store->ops->queue_get)
        return bitt__unsupported(store, "queue get");
    if (!id)
        return BITT_NOTFOUND;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->queue_get(store->be, &t, topic, id, out);
    bitt__store_leave(store);
    return rc;
}
