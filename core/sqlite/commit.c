/*
 * core/sqlite/commit.c: atomic commits on SQLite.
 *
 * One write transaction (BEGIN IMMEDIATE: a deferred read-then-write
 * transaction would get SQLITE_BUSY without the busy handler) runs every
 * check and lease fence, in op order, against the committed state, then
 * takes one versionstamp from <p>meta (so versions are unique and
 * increasing across every process on the file), then applies the
 * mutations in order (sets, deletes, sums, enqueues, outbox appends, queue
 * ops, schedule advances), each seeing the ones before it. A schedule
 * advance is a check too (its schedule must still be at the occurrence the
 * engine read). A queue delivery op (ack, nack,
 * snooze, extend) is a check too: its topic is swept and its token must
 * hold a live lease, or the commit fails with BITT_ETOKEN. Any failure rolls the whole transaction
 * back.
 */
#include <inttypes.h>

#include "sqlite_internal.h"

/* The live version of key, or 0 when absent or expired. */
static int sq_live_version(bitt_backend *be, int64_t now, const bitt_op *op, uint64_t *out)
{
    sqlite3_stmt *st = be->stmts[SQ_VERSION];
    *out = 0;
    int rc = bitt__sq_bind_bytes(st, 1, op->key, op->key_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int status = BITT_OK;
    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "commit (check)");
    sqlite3_reset(st);
    return status;
}

/* Advances the versionstamp and reads it back: inside the write
 * transaction, so no other writer comes between the two. */
static int sq_stamp(bitt_backend *be, uint64_t *out)
{
    *out = 0;
    int status = bitt__sq_exec(be, SQ_STAMP, "commit (versionstamp)");
    if (status != BITT_OK)
        return status;
    sqlite3_stmt *st = be->stmts[SQ_STAMP_READ];
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "commit (versionstamp)");
    if (status == BITT_OK && *out == 0)
        status = bitt__fail(BITT_ESCHEMA, "sqlite: the versionstamp row of \"%smeta\" is missing",
                            be->prefix);
    sqlite3_reset(st);
    return status;
}

static int sq_upsert(bitt_backend *be, const uint8_t *key, size_t key_len, const void *value,
                     size_t value_len, int kind, uint64_t version, int64_t expires_at,
                     const char *what)
{
    sqlite3_stmt *st = be->stmts[SQ_UPSERT];
    int rc = bitt__sq_bind_bytes(st, 1, key, key_len);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_bytes(st, 2, value, value_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 3, kind);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, (int64_t)version);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_expiry(st, 5, expires_at);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int status = rc == SQLITE_DONE ? BITT_OK : bitt__sq_fail(be, rc, what);
    sqlite3_reset(st);
    return status;
}

/* Reads the row (op->found: it was live; op->old: its entry when wanted),
 * then deletes it, expired or not. */
static int sq_delete(bitt_backend *be, int64_t now, bitt_op *op)
{
    sqlite3_stmt *st = be->stmts[SQ_PEEK];
    op->found = 0;
    int rc = bitt__sq_bind_bytes(st, 1, op->key, op->key_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int status = BITT_OK, exists = rc == SQLITE_ROW;
    if (exists) {
        int64_t expires_at = sqlite3_column_int64(st, 3);
        op->found = bitt__live(expires_at, now); /* an expired row is gone all the same */
        if (op->found && op->want_old) {
            op->old = bitt__sq_row_entry(st, 0, op->key, op->key_len);
            if (!op->old)
                status = BITT_ENOMEM;
        }
    } else if (rc != SQLITE_DONE) {
        status = bitt__sq_fail(be, rc, "commit (delete)");
    }
    sqlite3_reset(st);
    if (status != BITT_OK || !exists)
        return status;
    st = be->stmts[SQ_DELETE];
    return bitt__sq_run(be, st, bitt__sq_bind_bytes(st, 1, op->key, op->key_len), "commit (delete)",
                        NULL);
}

static int sq_sum(bitt_backend *be, int64_t now, uint64_t version, bitt_op *op)
{
    sqlite3_stmt *st = be->stmts[SQ_GET];
    int rc = bitt__sq_bind_bytes(st, 1, op->key, op->key_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        int status = bitt__sq_fail(be, rc, "commit (sum)");
        sqlite3_reset(st);
        return status;
    }
    int found = rc == SQLITE_ROW;
    char text[24];
    size_t text_len = 0;
    int64_t expires_at;
    int status;
    if (found) {
        const void *value = sqlite3_column_blob(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        status = bitt__sum_apply(1, sqlite3_column_int(st, 1), value ? value : (const void *)"",
                                 len, op->delta, text, &text_len, &op->result);
        expires_at = sqlite3_column_int64(st, 3); /* a live key keeps its expiry */
    } else {
        status =
            bitt__sum_apply(0, BITT_KIND_COUNTER, NULL, 0, op->delta, text, &text_len, &op->result);
        expires_at = bitt__expiry(now, op->ttl_ms);
    }
    sqlite3_reset(st);
    if (status != BITT_OK)
        return status;
    return sq_upsert(be, op->key, op->key_len, text, text_len, BITT_KIND_COUNTER, version,
                     expires_at, "commit (sum)");
}

/* Frees what a failed commit handed out. */
static void sq_forget_results(bitt_commit *c)
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

/* ack, nack, snooze and extend: checks of the delivery's lease, judged
 * with the others before anything is written. */
static int sq_is_delivery(const bitt_op *op)
{
    return op->type >= BITT_OP_QUEUE_ACK && op->type <= BITT_OP_QUEUE_EXTEND;
}

static int sq_apply(bitt_backend *be, bitt_commit *c)
{
    int64_t now = c->time.now;
    for (size_t i = 0; i < c->count; i++) {
        bitt_op *op = &c->ops[i];
        if (op->type == BITT_OP_FENCE || op->type == BITT_OP_SCHEDULE_ADVANCE ||
            sq_is_delivery(op)) {
            int status = op->type == BITT_OP_FENCE ? bitt__sq_lease_fence(be, now, op, i)
                         : op->type == BITT_OP_SCHEDULE_ADVANCE
                             ? bitt__sq_schedule_advance_check(be, op, i)
                             : bitt__sq_queue_check(be, now, op, i);
            if (status == BITT_ELEASELOST || status == BITT_ETOKEN || status == BITT_ECONFLICT)
                c->failed = i;
            if (status != BITT_OK)
                return status;
            continue;
        }
        if (op->type != BITT_OP_CHECK)
            continue;
        uint64_t current;
        int status = sq_live_version(be, now, op, &current);
        if (status != BITT_OK)
            return status;
        if (current != op->version) {
            c->failed = i;
            return bitt__fail(BITT_ECONFLICT,
                              "commit: check %zu failed: the key is at version %" PRIu64
                              ", expected %" PRIu64,
                              i, current, op->version);
        }
    }

    int status = sq_stamp(be, &c->version);
    for (size_t i = 0; i < c->count && status == BITT_OK; i++) {
        bitt_op *op = &c->ops[i];
        switch (op->type) {
        case BITT_OP_CHECK:
        case BITT_OP_FENCE: break;
        case BITT_OP_SET:
            status = sq_upsert(be, op->key, op->key_len, op->value, op->value_len, op->kind,
                               c->version, bitt__expiry(now, op->ttl_ms), "commit (set)");
            break;
        case BITT_OP_DELETE: status = sq_delete(be, now, op); break;
        case BITT_OP_SUM: status = sq_sum(be, now, c->version, op); break;
        case BITT_OP_ENQUEUE: status = bitt__sq_queue_insert(be, now, op); break;
        case BITT_OP_OUTBOX_APPEND: status = bitt__sq_outbox_insert(be, now, op); break;
        case BITT_OP_QUEUE_ACK:
        case BITT_OP_QUEUE_NACK:
        case BITT_OP_QUEUE_SNOOZE:
        case BITT_OP_QUEUE_EXTEND:
            status = bitt__sq_queue_deliver(be, now, op, i, c->backoff);
            break;
        case BITT_OP_QUEUE_CANCEL: status = bitt__sq_queue_cancel(be, now, op); break;
        case BITT_OP_QUEUE_RESCHEDULE: status = bitt__sq_queue_reschedule(be, now, op); break;
        case BITT_OP_SCHEDULE_ADVANCE: status = bitt__sq_schedule_advance(be, op); break;
        default:
            status = bitt__fail(BITT_EUNSUPPORTED,
                                "sqlite: commit: operation type %d is not supported", op->type);
            break;
        }
    }
    return status;
}

int bitt__sq_commit_ops(bitt_backend *be, bitt_commit *c)
{
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = bitt__sq_begin_write(be, "commit (BEGIN IMMEDIATE)");
    if (status != BITT_OK)
        return status;
    status = sq_apply(be, c);
    if (status == BITT_OK)
        status = bitt__sq_commit(be, "commit (COMMIT)");
    else
        bitt__sq_rollback(be);
    if (status != BITT_OK) {
        sq_forget_results(c);
        c->version = 0;
    }
    return status;
}
