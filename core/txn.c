/*
 * Atomic commits: a builder that copies and checks every op as it is added,
 * then hands the whole list to the backend's one commit path.
 *
 * A refused op fails the whole txn: code that ignores an op's status (or a
 * binding that reports it only later) must never commit the other ops
 * without it, a set without the check that guarded it. So the first failure
 * is kept; every later op returns it, and the commit returns it with its
 * message and writes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct bitt_txn {
    bitt_store *store;
    bitt_op *ops;
    size_t count;
    size_t cap;
    int committed;
    int failed;              /* an op was refused: first holds why */
    bitt__error_state first; /* the first refusal, code and message */
};

int bitt_txn_begin(bitt_store *store, bitt_txn **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    bitt_txn *txn = bitt__calloc(1, sizeof *txn);
    if (!txn)
        return bitt__fail(BITT_ENOMEM, "out of memory for a txn");
    txn->store = store;
    *out = txn;
    return BITT_OK;
}

/* Copies n bytes of src to *cursor (advancing it) and returns the copy. */
static const void *place(uint8_t **cursor, const void *src, size_t n)
{
    uint8_t *copy = *cursor;
    if (n)
        memcpy(copy, src, n);
    *cursor += n;
    return copy;
}

static size_t text_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/* The status of an op call: a refusal (rc < 0) of the first failing op is
 * kept, and the txn is failed from then on. */
static int settle(bitt_txn *txn, int rc)
{
    if (rc < 0 && txn && !txn->failed && !txn->committed) {
        txn->failed = 1;
        bitt__error_save(&txn->first);
    }
    return rc;
}

/* Whether an op may still be added: not after the commit, nor once an op
 * was refused (that refusal again, naming it as the earlier one). */
static int open_for_ops(bitt_txn *txn)
{
    if (!txn)
        return bitt__fail(BITT_EINVAL, "txn must not be NULL");
    if (txn->committed)
        return bitt__fail(BITT_EUSAGE, "txn was already committed; begin a new one");
    if (txn->failed)
        return bitt__fail(txn->first.code, "txn already failed (it will not commit): %s",
                          txn->first.message);
    return BITT_OK;
}

/* Appends op with private copies of every byte string it points to (key,
 * value, dedup key, names), in one allocation freed with the op's key. */
static int push(bitt_txn *txn, bitt_op op)
{
    if (txn->count == BITT_TXN_OPS_MAX)
        return bitt__fail(BITT_ETOOLARGE, "a txn holds at most %d checks and mutations",
                          BITT_TXN_OPS_MAX);
    if (txn->count == txn->cap) {
        size_t cap = txn->cap ? txn->cap * 2 : 4;
        bitt_op *ops = bitt__realloc(txn->ops, cap * sizeof *ops);
        if (!ops)
            return bitt__fail(BITT_ENOMEM, "out of memory growing a txn");
        txn->ops = ops;
        txn->cap = cap;
    }
    size_t name_size = text_size(op.name), owner_size = text_size(op.owner);
    uint8_t *block =
        bitt__malloc(op.key_len + op.value_len + op.aux_len + name_size + owner_size + 1);
    if (!block)
        return bitt__fail(BITT_ENOMEM, "out of memory copying a txn op");
    uint8_t *cursor = block;
    op.key = place(&cursor, op.key, op.key_len);
    op.value = place(&cursor, op.value, op.value_len);
    if (op.aux)
        op.aux = place(&cursor, op.aux, op.aux_len);
    if (op.name)
        op.name = place(&cursor, op.name, name_size);
    if (op.owner)
        op.owner = place(&cursor, op.owner, owner_size);
    txn->ops[txn->count++] = op;
    return BITT_OK;
}

int bitt_txn_check(bitt_txn *txn, const void *key, size_t key_len, uint64_t version)
{
    bitt__error_reset();
    int rc = open_for_ops(txn);
    if (!rc)
        rc = bitt__check_key(txn->store, key, key_len);
    if (!rc)
        rc = push(
            txn,
            (bitt_op){.type = BITT_OP_CHECK, .key = key, .key_len = key_len, .version = version});
    return settle(txn, rc);
}

int bitt_txn_set(bitt_txn *txn, const void *key, size_t key_len, const void *value,
                 size_t value_len, int kind, int64_t ttl_ms)
{
    bitt__error_reset();
    int rc = open_for_ops(txn);
    if (!rc)
        rc = bitt__check_key(txn->store, key, key_len);
    if (!rc)
        rc = bitt__check_value(txn->store, kind, value, value_len);
    if (!rc)
        rc = bitt__check_ttl(ttl_ms);
    if (!rc)
        rc = push(txn, (bitt_op){.type = BITT_OP_SET,
                                 .key = key,
                                 .key_len = key_len,
                                 .value = value,
                                 .value_len = value_len,
                                 .kind = kind,
                                 .ttl_ms = ttl_ms});
    return settle(txn, rc);
}

int bitt_txn_delete(bitt_txn *txn, const void *key, size_t key_len)
{
    bitt__error_reset();
    int rc = open_for_ops(txn);
    if (!rc)
        rc = bitt__check_key(txn->store, key, key_len);
    if (!rc)
        rc = push(txn, (bitt_op){.type = BITT_OP_DELETE, .key = key, .key_len = key_len});
    return settle(txn, rc);
}

int bitt_txn_sum(bitt_txn *txn, const void *key, size_t key_len, int64_t delta)
{
    bitt__error_reset();
    int rc = open_for_ops(txn);
    if (!rc)
        rc = bitt__check_key(txn->store, key, key_len);
    if (!rc)
        rc = push(txn,
                  (bitt_op){.type = BITT_OP_SUM, .key = key, .key_len = key_len, .delta = delta});
    return settle(txn, rc);
}

int bitt_txn_enqueue(bitt_txn *txn, const char *topic, const void *payload, size_t payload_len,
                     int kind, const bitt_enqueue_options *opts)
{
    bitt__error_reset();
    bitt_op op;
    int rc = open_for_ops(txn);
    if (!rc)
        rc = bitt__enqueue_op(txn->store, topic, payload, payload_len, kind, opts, &op);
    if (!rc)
        rc = push(txn, op);
    return settle(txn, rc);
}

int bitt_txn_fence(bitt_txn *txn, const char *name, const char *owner, uint64_t epoch)
{
    bitt__error_reset();
    int rc = open_for_ops(txn);
    if (!rc)
        rc = bitt__check_name(name, "lease name");
    if (!rc)
        rc = bitt__check_name(owner, "lease owner");
    if (!rc)
        rc = push(txn,
                  (bitt_op){.type = BITT_OP_FENCE, .name = name, .owner = owner, .version = epoch});
    return settle(txn, rc);
}

int bitt_txn_outbox_append(bitt_txn *txn, const char *stream, const void *event, size_t event_len,
                           int kind)
{
    bitt__error_reset();
    int rc = open_for_ops(txn);
    if (!rc)
        rc = bitt__check_name(stream, "outbox stream");
    if (!rc)
        rc = bitt__check_value(txn->store, kind, event, event_len);
    if (!rc)
        rc = push(txn, (bitt_op){.type = BITT_OP_OUTBOX_APPEND,
                                 .name = stream,
                                 .value = event,
                                 .value_len = event_len,
                                 .kind = kind});
    return settle(txn, rc);
}

/* Adds a by-id queue op, refusing a second one for the same message: the
 * backends judge every delivery op against the message as it was before
 * the commit, which is only exact when no other op of the commit moved it. */
static int queue_by_id(bitt_txn *txn, int type, const char *topic, uint64_t id, const char *token,
                       const char *error, int64_t ms, const bitt_ack_result *result)
{
    bitt__error_reset();
    bitt_op op;
    char *clean = NULL;
    int rc = open_for_ops(txn);
    if (!rc)
        rc = bitt__queue_op(txn->store, type, topic, id, token, error, ms, &op, &clean);
    if (!rc && result)
        rc = bitt__ack_result_op(txn->store, result, &op);
    for (size_t i = 0; !rc && i < txn->count; i++)
        if (bitt__op_is_queue_by_id(&txn->ops[i]) && txn->ops[i].version == id)
            rc = bitt__fail(BITT_EINVAL,
                            "txn already holds a queue op for message %llu; a txn holds at "
                            "most one per message",
                            (unsigned long long)id);
    if (!rc)
        rc = push(txn, op);
    /* push copies every byte string, NULL ones too; an ack without a
     * result must stay without one */
    if (!rc && !op.value)
        txn->ops[txn->count - 1].value = NULL;
    free(clean);
    return settle(txn, rc);
}

int bitt_txn_queue_ack(bitt_txn *txn, const char *topic, uint64_t id, const char *token)
{
    return queue_by_id(txn, BITT_OP_QUEUE_ACK, topic, id, token, NULL, 0, NULL);
}

int bitt_txn_queue_nack(bitt_txn *txn, const char *topic, uint64_t id, const char *token,
                        const char *error, int64_t delay_ms)
{
    return queue_by_id(txn, BITT_OP_QUEUE_NACK, topic, id, token, error, delay_ms, NULL);
}

int bitt_txn_queue_snooze(bitt_txn *txn, const char *topic, uint64_t id, const char *token,
                          int64_t delay_ms)
{
    return queue_by_id(txn, BITT_OP_QUEUE_SNOOZE, topic, id, token, NULL, delay_ms, NULL);
}

int bitt_txn_queue_extend(bitt_txn *txn, const char *topic, uint64_t id, const char *token,
                          int64_t lease_ms)
{
    return queue_by_id(txn, BITT_OP_QUEUE_EXTEND, topic, id, token, NULL, lease_ms, NULL);
}

int bitt_txn_queue_cancel(bitt_txn *txn, const char *topic, uint64_t id)
{
    return queue_by_id(txn, BITT_OP_QUEUE_CANCEL, topic, id, NULL, NULL, 0, NULL);
}

int bitt_txn_queue_reschedule(bitt_txn *txn, const char *topic, uint64_t id, int64_t delay_ms)
{
    return queue_by_id(txn, BITT_OP_QUEUE_RESCHEDULE, topic, id, NULL, NULL, delay_ms, NULL);
}

int bitt_txn_commit(bitt_txn *txn, uint64_t *version_out)
{
    bitt__error_reset();
    if (!txn)
        return bitt__fail(BITT_EINVAL, "txn must not be NULL");
    if (txn->committed)
        return bitt__fail(BITT_EUSAGE, "txn was already committed; begin a new one");
    txn->committed = 1;
    if (txn->failed) { /* nothing is written: the txn lost an op */
        bitt__error_restore(&txn->first);
        return txn->first.code;
    }
    return bitt__run_commit(txn->store, txn->ops, txn->count, version_out);
}

void bitt_txn_free(bitt_txn *txn)
{
    if (!txn)
        return;
    for (size_t i = 0; i < txn->count; i++) {
        free((void *)txn->ops[i].key);
        bitt_entry_free(txn->ops[i].old);
    }
    free(txn->ops);
    free(txn);
}

int bitt_txn_queue_ack_result(bitt_txn *txn, const char *topic, uint64_t id, const char *token,
                              const void *result, size_t result_len, int kind)
{
    bitt_ack_result r = {result, result_len, kind};
    return queue_by_id(txn, BITT_OP_QUEUE_ACK, topic, id, token, NULL, 0, &r);
}
