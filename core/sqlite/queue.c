/*
 * core/sqlite/queue.c: the queue's working path on SQLite: the sweep of
 * expired last attempts every queue call starts with, ack, nack, extend
 * and snooze (as calls of their own and as the delivery ops of commits:
 * one path for both), and a commit's enqueue. Claims are in
 * queue_claim.c, messages by id in queue_byid.c.
 *
 * A row is pending (state 0: claimable from due_at), processing (state 1:
 * leased until due_at, claimable again once it passes), dead (state 2) or,
 * with done retention, done (state 3: acked at done_at, with the ack's
 * result; it gave up its dedup key, and nothing but a get or the retention
 * sweep finds it). Each call is one BEGIN IMMEDIATE transaction. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sqlite_internal.h"

#define Q_SWEEP_SQL                                                                                \
    "UPDATE \"{p}queue\" SET state = 2, failed_at = due_at, last_error = ?3, token = NULL "        \
    "WHERE topic = ?1 AND state = 1 AND due_at <= ?2 AND attempts >= max_attempts"
#define Q_LIVE "WHERE id = ?1 AND topic = ?2 AND state = 1 AND token = ?3 AND due_at > ?4"
#define Q_ACK_SQL "DELETE FROM \"{p}queue\" " Q_LIVE
/* the ack with done retention: kept done at now (?4) with the result */
#define Q_FINISH_SQL                                                                               \
    "UPDATE \"{p}queue\" SET state = 3, done_at = ?4, token = NULL, dedup_key = NULL, "            \
    "result = ?5, result_kind = ?6 " Q_LIVE
#define Q_HELD_SQL "SELECT attempts, max_attempts FROM \"{p}queue\" " Q_LIVE
#define Q_EXTEND_SQL "UPDATE \"{p}queue\" SET due_at = ?5 " Q_LIVE
#define Q_SNOOZE_SQL                                                                               \
    "UPDATE \"{p}queue\" SET state = 0, attempts = attempts - 1, token = NULL, "                   \
    "due_at = ?5 " Q_LIVE
#define Q_RETRY_SQL                                                                                \
    "UPDATE \"{p}queue\" SET state = 0, due_at = ?2, token = NULL, last_error = ?3 WHERE id = ?1"
#define Q_BURY_SQL                                                                                 \
    "UPDATE \"{p}queue\" SET state = 2, failed_at = ?2, token = NULL, last_error = ?3 "            \
    "WHERE id = ?1"
#define Q_WHY_SQL "SELECT topic, state, token, due_at FROM \"{p}queue\" WHERE id = ?1"
#define Q_DEDUP_SQL "SELECT id FROM \"{p}queue\" WHERE topic = ?1 AND dedup_key = ?2 AND state <> 2"
#define Q_INSERT_SQL                                                                               \
    "INSERT INTO \"{p}queue\" (topic, state, due_at, attempts, max_attempts, payload, kind, "      \
    "created_at, failed_at, dedup_key, priority) VALUES (?1, 0, ?2, 0, ?3, ?4, ?5, ?6, 0, ?7, ?8)"

void bitt__sq_queue_fields(sqlite3_stmt *st, const char *topic, bitt_message *f)
{
    /* every field not read here is zero */
    *f = (bitt_message){.id = (uint64_t)sqlite3_column_int64(st, 0),
                        .topic = (char *)topic,
                        .kind = sqlite3_column_int(st, 2),
                        .attempts = (uint32_t)sqlite3_column_int64(st, 3),
                        .max_attempts = (uint32_t)sqlite3_column_int64(st, 4),
                        .last_error = (char *)sqlite3_column_text(st, 5),
                        .created_at = sqlite3_column_int64(st, 6),
                        .due_at = sqlite3_column_int64(st, 7),
                        .failed_at = sqlite3_column_int64(st, 8),
                        .token = (char *)sqlite3_column_text(st, 9),
                        .priority = (int32_t)sqlite3_column_int64(st, 10),
                        .done_at = sqlite3_column_int64(st, 11)}; /* NULL reads as 0 */
    f->payload = (uint8_t *)bitt__sq_column_bytes(st, 1, &f->payload_len);
    /* NULL: no result; an empty BLOB is an empty result */
    if (sqlite3_column_type(st, 12) != SQLITE_NULL) {
        f->result = (uint8_t *)bitt__sq_column_bytes(st, 12, &f->result_len);
        f->result_kind = sqlite3_column_int(st, 13);
    }
}

int bitt__sq_queue_sweep_leases(bitt_backend *be, int64_t now, const char *topic)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_SWEEP, Q_SWEEP_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, topic);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, now);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_str(st, 3, BITT_LEASE_EXPIRED_ERROR);
    return bitt__sq_run(be, st, rc, "queue (dead-lettering expired last attempts)", NULL);
}

int bitt__sq_queue_sweep(bitt_backend *be, int64_t now, const char *topic)
{
    int status = bitt__sq_queue_sweep_leases(be, now, topic);
    return status == BITT_OK ? bitt__sq_queue_drop(be, now, topic, NULL) : status;
}

int bitt__sq_queue_begin(bitt_backend *be, int64_t now, const char *topic, const char *what)
{
    int status = bitt__sq_write(be, what);
    if (status != BITT_OK)
        return status;
    status = bitt__sq_queue_sweep(be, now, topic);
    if (status != BITT_OK)
        bitt__sq_rollback(be);
    return status;
}

/* ---- ack, nack, extend, snooze: alone or in a commit -------------------------------- */

static const char *q_what(int type)
{
    switch (type) {
    case BITT_OP_QUEUE_ACK: return "ack";
    case BITT_OP_QUEUE_NACK: return "nack";
    case BITT_OP_QUEUE_SNOOZE: return "snooze";
    default: return "extend";
    }
}

/* BITT_ETOKEN with why op's delivery has no live lease with its token
 * (called inside the transaction, which the caller rolls back); `at` is
 * the op's index in a commit, or -1 for a call of its own. */
static int q_refused(bitt_backend *be, int64_t now, const bitt_op *op, long at)
{
    const char *topic = op->name, *token = op->owner;
    uint64_t id = op->version;
    const char *why = "does not exist in this topic (acked, deleted, or never enqueued)";
    char buf[160], where[48] = "";
    sqlite3_stmt *st = NULL;
    if (bitt__sq_stmt(be, SQ_Q_WHY, Q_WHY_SQL, &st) == BITT_OK &&
        sqlite3_bind_int64(st, 1, (int64_t)id) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *row_topic = (const char *)sqlite3_column_text(st, 0);
        const char *row_token = (const char *)sqlite3_column_text(st, 2);
        int state = sqlite3_column_int(st, 1);
        int64_t due_at = sqlite3_column_int64(st, 3);
        if (!row_topic || strcmp(row_topic, topic) != 0)
            ; /* another topic's message: as good as absent here */
        else if (state == 0)
            why = "is not leased: its lease ended or it was given back, and it waits for a "
                  "new delivery";
        else if (state == 2)
            why = "is dead-lettered";
        else if (state == 3)
            why = "is done (acked already)";
        else if (!row_token || strcmp(row_token, token) != 0)
            why = "is leased under another token (it was delivered again since, or the token "
                  "is wrong)";
        else {
            snprintf(buf, sizeof buf, "has a lease that ended at %" PRId64 " (now %" PRId64 ")",
                     due_at, now);
            why = buf;
        }
    }
    if (st)
        sqlite3_reset(st);
    if (at >= 0)
        snprintf(where, sizeof where, "commit: op %ld: ", at);
    return bitt__fail(BITT_ETOKEN,
                      "%squeue %s: message %" PRIu64 " of topic '%s' %s; nothing changed", where,
                      q_what(op->type), id, topic, why);
}

/* Binds ?1..?4 of a Q_LIVE statement. */
static int q_bind_live(sqlite3_stmt *st, uint64_t id, const char *topic, const char *token,
                       int64_t now)
{
    int rc = sqlite3_bind_int64(st, 1, (int64_t)id);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_str(st, 2, topic);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_str(st, 3, token);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, now);
    return rc;
}

/* The attempts of op's live lease: BITT_OK, or BITT_NOTFOUND without one. */
static int q_held(bitt_backend *be, int64_t now, const bitt_op *op, uint32_t *attempts,
                  uint32_t *max_attempts)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_HELD, Q_HELD_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = q_bind_live(st, op->version, op->name, op->owner, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *attempts = (uint32_t)sqlite3_column_int64(st, 0);
        *max_attempts = (uint32_t)sqlite3_column_int64(st, 1);
    } else {
        status = rc == SQLITE_DONE ? BITT_NOTFOUND : bitt__sq_fail(be, rc, "queue (lease check)");
    }
    sqlite3_reset(st);
    return status;
}

int bitt__sq_queue_check(bitt_backend *be, int64_t now, const bitt_op *op, size_t at)
{
    uint32_t attempts, max_attempts;
    int status = bitt__sq_queue_sweep(be, now, op->name);
    if (status == BITT_OK)
        status = q_held(be, now, op, &attempts, &max_attempts);
    if (status == BITT_NOTFOUND)
        status = q_refused(be, now, op, (long)at);
    return status;
}

/* nack of a live lease with these attempts: pending again at now + the
 * delay (< 0: the backoff's), or dead on the last attempt. */
static int q_nack(bitt_backend *be, int64_t now, const bitt_op *op, uint32_t attempts,
                  uint32_t max_attempts, const bitt_backoff *backoff)
{
    int retry = attempts < max_attempts;
    sqlite3_stmt *st;
    int status = retry ? bitt__sq_stmt(be, SQ_Q_RETRY, Q_RETRY_SQL, &st)
                       : bitt__sq_stmt(be, SQ_Q_BURY, Q_BURY_SQL, &st);
    if (status != BITT_OK)
        return status;
    int64_t when = now;
    if (retry) {
        int64_t delay = op->delay_ms >= 0 ? op->delay_ms
                        : backoff         ? bitt__backoff_delay(backoff, attempts)
                                          : 0;
        when = bitt__time_add(now, delay);
    }
    int rc = sqlite3_bind_int64(st, 1, (int64_t)op->version);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, when);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_str(st, 3, (const char *)op->aux);
    return bitt__sq_run(be, st, rc, "queue nack", NULL);
}

/* ack (a delete, or with done retention the row kept done with op's
 * result: value, value_len, kind; value NULL = none), extend or snooze:
 * one update of the live lease; *changed = 0 when there is none. */
static int q_change(bitt_backend *be, int64_t now, const bitt_op *op, uint64_t *changed)
{
    sqlite3_stmt *st;
    int keep = op->type == BITT_OP_QUEUE_ACK && be->done_retention_ms > 0;
    int status = keep                            ? bitt__sq_stmt(be, SQ_Q_FINISH, Q_FINISH_SQL, &st)
                 : op->type == BITT_OP_QUEUE_ACK ? bitt__sq_stmt(be, SQ_Q_ACK, Q_ACK_SQL, &st)
                 : op->type == BITT_OP_QUEUE_SNOOZE
                     ? bitt__sq_stmt(be, SQ_Q_SNOOZE, Q_SNOOZE_SQL, &st)
                     : bitt__sq_stmt(be, SQ_Q_EXTEND, Q_EXTEND_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = q_bind_live(st, op->version, op->name, op->owner, now);
    if (rc == SQLITE_OK && keep) {
        rc = op->value ? bitt__sq_bind_bytes(st, 5, op->value, op->value_len)
                       : sqlite3_bind_null(st, 5);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int(st, 6, op->value ? op->kind : 0);
    } else if (rc == SQLITE_OK && op->type != BITT_OP_QUEUE_ACK) {
        int64_t ms = op->type == BITT_OP_QUEUE_SNOOZE ? op->delay_ms : op->ttl_ms;
        rc = sqlite3_bind_int64(st, 5, bitt__time_add(now, ms));
    }
    return bitt__sq_run(be, st, rc,
                        op->type == BITT_OP_QUEUE_ACK      ? "queue ack"
                        : op->type == BITT_OP_QUEUE_SNOOZE ? "queue snooze"
                                                           : "queue extend",
                        changed);
}

int bitt__sq_queue_deliver(bitt_backend *be, int64_t now, const bitt_op *op, size_t at,
                           const bitt_backoff *backoff)
{
    int status;
    if (op->type == BITT_OP_QUEUE_NACK) {
        uint32_t attempts = 0, max_attempts = 0;
        status = q_held(be, now, op, &attempts, &max_attempts);
        if (status == BITT_OK)
            status = q_nack(be, now, op, attempts, max_attempts, backoff);
    } else {
        uint64_t changed = 0;
        status = q_change(be, now, op, &changed);
        if (status == BITT_OK && !changed)
            status = BITT_NOTFOUND;
    }
    if (status == BITT_NOTFOUND)
        status = q_refused(be, now, op, at == SIZE_MAX ? -1 : (long)at);
    return status;
}

/* A delivery op as a call of its own: the sweep, the op, in one
 * transaction. ms is the nack or snooze delay, or the extended lease. */
static int q_alone(bitt_backend *be, const bitt_time *t, int type, const char *topic, uint64_t id,
                   const char *token, const char *error, int64_t ms, const bitt_backoff *backoff)
{
    bitt_op op = {.type = type,
                  .name = topic,
                  .version = id,
                  .owner = token,
                  .aux = (const uint8_t *)error,
                  .delay_ms = ms,
                  .ttl_ms = ms};
    int status = bitt__sq_queue_begin(be, t->now, topic, "queue (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_queue_deliver(be, t->now, &op, SIZE_MAX, backoff);
    return bitt__sq_end(be, status, "queue (COMMIT)");
}

int bitt__sq_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       const char *token)
{
    return q_alone(be, t, BITT_OP_QUEUE_ACK, topic, id, token, NULL, 0, NULL);
}

int bitt__sq_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, const char *error, int64_t delay_ms,
                        const bitt_backoff *backoff)
{
    return q_alone(be, t, BITT_OP_QUEUE_NACK, topic, id, token, error, delay_ms, backoff);
}

int bitt__sq_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t lease_ms)
{
    return q_alone(be, t, BITT_OP_QUEUE_EXTEND, topic, id, token, NULL, lease_ms, NULL);
}

/* Pending again at now + delay_ms with the attempt given back: the row
 * sorts among the claimable ones by that due_at. */
int bitt__sq_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t delay_ms)
{
    return q_alone(be, t, BITT_OP_QUEUE_SNOOZE, topic, id, token, NULL, delay_ms, NULL);
}

/* One transaction, one DELETE (or, with done retention, UPDATE to done)
 * per item in order: a repeated id finds its row gone or done. Any failure rolls the whole batch
 * back. */
int bitt__sq_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                            const uint64_t *ids, const char *const *tokens, size_t count,
                            int *statuses)
{
    int status = bitt__sq_queue_begin(be, t->now, topic, "queue ack_many (BEGIN IMMEDIATE)");
    for (size_t i = 0; status == BITT_OK && i < count; i++) {
        bitt_op op = {
            .type = BITT_OP_QUEUE_ACK, .name = topic, .version = ids[i], .owner = tokens[i]};
        uint64_t changed = 0;
        status = q_change(be, t->now, &op, &changed);
        if (status == BITT_OK && changed)
            statuses[i] = BITT_OK;
    }
    return bitt__sq_end(be, status, "queue ack_many (COMMIT)");
}

/* ---- a commit's enqueue ------------------------------------------------------------- */

/* The id of topic's live message holding dedup key op->aux, or 0. */
static int q_dedup(bitt_backend *be, int64_t now, const bitt_op *op, uint64_t *id)
{
    *id = 0;
    /* A last attempt whose lease ran out is dead, and frees its key. */
    int status = bitt__sq_queue_sweep(be, now, op->name);
    sqlite3_stmt *st;
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_Q_DEDUP, Q_DEDUP_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, op->name);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_bytes(st, 2, op->aux, op->aux_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = (uint64_t)sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "commit (enqueue: deduplication)");
    sqlite3_reset(st);
    return status;
}

int bitt__sq_queue_insert(bitt_backend *be, int64_t now, bitt_op *op)
{
    op->deduped = 0;
    op->id = 0;
    int status = BITT_OK;
    if (op->aux) {
        uint64_t live;
        if ((status = q_dedup(be, now, op, &live)) != BITT_OK)
            return status;
        if (live) {
            op->deduped = 1;
            op->id = live;
            return BITT_OK;
        }
    }
    sqlite3_stmt *st;
    if ((status = bitt__sq_stmt(be, SQ_Q_INSERT, Q_INSERT_SQL, &st)) != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, op->name);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, bitt__time_add(now, op->delay_ms));
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, op->max_attempts);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_bytes(st, 4, op->value, op->value_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 5, op->kind);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 6, now);
    if (rc == SQLITE_OK)
        rc = op->aux ? bitt__sq_bind_bytes(st, 7, op->aux, op->aux_len) : sqlite3_bind_null(st, 7);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 8, op->priority);
    status = bitt__sq_run(be, st, rc, "commit (enqueue)", NULL);
    if (status == BITT_OK)
        op->id = (uint64_t)sqlite3_last_insert_rowid(be->db);
    return status;
}
