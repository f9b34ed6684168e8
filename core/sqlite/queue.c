/*
 * core/sqlite/queue.c: the queue's working path on SQLite: the sweep of
 * expired last attempts every queue call starts with, claims, ack, nack,
 * extend, snooze, and a commit's enqueue.
 *
 * A row is pending (state 0: claimable from due_at), processing (state 1:
 * leased until due_at, claimable again once it passes) or dead (state 2).
 * A claim reads the claimable rows of both states in (due_at, id) order as
 * one merge of two ranges of the index (topic, state, due_at), whose
 * entries end with the rowid id, so neither a backlog nor a pile of
 * expired leases makes it sort. Each call is one BEGIN IMMEDIATE
 * transaction: the claim and its leases commit together, so two processes
 * never lease the same delivery.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sqlite_internal.h"

#define Q_SWEEP_SQL                                                                                \
    "UPDATE \"{p}queue\" SET state = 2, failed_at = due_at, last_error = ?3, token = NULL "        \
    "WHERE topic = ?1 AND state = 1 AND due_at <= ?2 AND attempts >= max_attempts"
#define Q_CLAIM_SQL                                                                                \
    "SELECT " BITT_SQ_QUEUE_COLS " FROM \"{p}queue\" "                                             \
    "WHERE topic = ?1 AND state = 0 AND due_at <= ?2 UNION ALL "                                   \
    "SELECT " BITT_SQ_QUEUE_COLS " FROM \"{p}queue\" "                                             \
    "WHERE topic = ?1 AND state = 1 AND due_at <= ?2 ORDER BY due_at, id LIMIT ?3"
#define Q_LEASE_SQL                                                                                \
    "UPDATE \"{p}queue\" SET state = 1, attempts = attempts + 1, token = ?2, due_at = ?3 "         \
    "WHERE id = ?1"
/* ?1 id, ?2 topic, ?3 token, ?4 now: a live lease of that delivery */
#define Q_LIVE "WHERE id = ?1 AND topic = ?2 AND state = 1 AND token = ?3 AND due_at > ?4"
#define Q_ACK_SQL "DELETE FROM \"{p}queue\" " Q_LIVE
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
    "created_at, failed_at, dedup_key) VALUES (?1, 0, ?2, 0, ?3, ?4, ?5, ?6, 0, ?7)"

void bitt__sq_queue_fields(sqlite3_stmt *st, const char *topic, bitt_message *f)
{
    f->id = (uint64_t)sqlite3_column_int64(st, 0);
    f->topic = (char *)topic;
    f->payload = (uint8_t *)bitt__sq_column_bytes(st, 1, &f->payload_len);
    f->kind = sqlite3_column_int(st, 2);
    f->attempts = (uint32_t)sqlite3_column_int64(st, 3);
    f->max_attempts = (uint32_t)sqlite3_column_int64(st, 4);
    f->last_error = (char *)sqlite3_column_text(st, 5);
    f->created_at = sqlite3_column_int64(st, 6);
    f->due_at = sqlite3_column_int64(st, 7);
    f->failed_at = sqlite3_column_int64(st, 8);
    f->token = (char *)sqlite3_column_text(st, 9);
    f->park_reason = 0;
}

int bitt__sq_queue_sweep(bitt_backend *be, int64_t now, const char *topic)
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

/* ---- claim --------------------------------------------------------------------- */

/* Pushes up to limit claimable messages onto out, each as it will be once
 * leased: a new token, one more attempt, the lease's end as due_at. */
static int q_select(bitt_backend *be, int64_t now, const char *topic, size_t limit,
                    int64_t lease_ms, bitt_messages *out)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_CLAIM, Q_CLAIM_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, topic);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, now);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_count(st, 3, limit);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        bitt_message f = {0};
        char token[BITT_TOKEN_LEN + 1];
        bitt__sq_queue_fields(st, topic, &f);
        bitt__token_new(token);
        f.token = token;
        f.attempts++;
        f.due_at = bitt__time_add(now, lease_ms);
        f.failed_at = 0;
        if ((status = bitt__sq_push_message(out, &f)) != BITT_OK)
            break;
        rc = SQLITE_OK;
    }
    if (status == BITT_OK && rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "queue claim");
    sqlite3_reset(st);
    return status;
}

static int q_lease(bitt_backend *be, const bitt_message *m)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_LEASE, Q_LEASE_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = sqlite3_bind_int64(st, 1, (int64_t)m->id);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_str(st, 2, m->token);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, m->due_at);
    return bitt__sq_run(be, st, rc, "queue claim (lease)", NULL);
}

int bitt__sq_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                         int64_t lease_ms, bitt_messages *out)
{
    size_t base = out->count;
    int status = bitt__sq_queue_begin(be, t->now, topic, "queue claim (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = q_select(be, t->now, topic, limit, lease_ms, out);
    /* The rows are updated once the read is over, never under its cursor. */
    for (size_t i = base; i < out->count && status == BITT_OK; i++)
        status = q_lease(be, out->items[i]);
    status = bitt__sq_end(be, status, "queue claim (COMMIT)");
    if (status != BITT_OK)
        bitt__sq_messages_truncate(out, base);
    return status;
}

/* ---- ack, nack, extend ------------------------------------------------------------ */

/* BITT_ETOKEN with why message id's delivery has no live lease with this
 * token (called inside the transaction, which the caller rolls back). */
static int q_refused(bitt_backend *be, int64_t now, const char *op, const char *topic, uint64_t id,
                     const char *token)
{
    const char *why = "does not exist in this topic (acked, deleted, or never enqueued)";
    char buf[160];
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
    return bitt__fail(BITT_ETOKEN,
                      "queue %s: message %" PRIu64 " of topic '%s' %s; nothing changed", op, id,
                      topic, why);
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

int bitt__sq_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       const char *token)
{
    sqlite3_stmt *st;
    uint64_t changed = 0;
    int status = bitt__sq_queue_begin(be, t->now, topic, "queue ack (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_Q_ACK, Q_ACK_SQL, &st);
    if (status == BITT_OK)
        status =
            bitt__sq_run(be, st, q_bind_live(st, id, topic, token, t->now), "queue ack", &changed);
    if (status == BITT_OK && changed == 0)
        status = q_refused(be, t->now, "ack", topic, id, token);
    return bitt__sq_end(be, status, "queue ack (COMMIT)");
}

/* One transaction, one DELETE per item in order: a repeated id finds its
 * row gone. Any failure rolls the whole batch back. */
int bitt__sq_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                            const uint64_t *ids, const char *const *tokens, size_t count,
                            int *statuses)
{
    sqlite3_stmt *st;
    int status = bitt__sq_queue_begin(be, t->now, topic, "queue ack_many (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_Q_ACK, Q_ACK_SQL, &st);
    for (size_t i = 0; status == BITT_OK && i < count; i++) {
        uint64_t changed = 0;
        status = bitt__sq_run(be, st, q_bind_live(st, ids[i], topic, tokens[i], t->now),
                              "queue ack_many", &changed);
        if (status == BITT_OK && changed)
            statuses[i] = BITT_OK;
    }
    return bitt__sq_end(be, status, "queue ack_many (COMMIT)");
}

/* extend (snooze 0) or snooze (1): the same live-lease update, at now + ms. */
static int q_move(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                  const char *token, int64_t ms, int snooze)
{
    sqlite3_stmt *st;
    uint64_t changed = 0;
    int status = bitt__sq_queue_begin(be, t->now, topic,
                                      snooze ? "queue snooze (BEGIN IMMEDIATE)"
                                             : "queue extend (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = snooze ? bitt__sq_stmt(be, SQ_Q_SNOOZE, Q_SNOOZE_SQL, &st)
                        : bitt__sq_stmt(be, SQ_Q_EXTEND, Q_EXTEND_SQL, &st);
    if (status == BITT_OK) {
        int rc = q_bind_live(st, id, topic, token, t->now);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 5, bitt__time_add(t->now, ms));
        status = bitt__sq_run(be, st, rc, snooze ? "queue snooze" : "queue extend", &changed);
    }
    if (status == BITT_OK && changed == 0)
        status = q_refused(be, t->now, snooze ? "snooze" : "extend", topic, id, token);
    return bitt__sq_end(be, status, snooze ? "queue snooze (COMMIT)" : "queue extend (COMMIT)");
}

int bitt__sq_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t lease_ms)
{
    return q_move(be, t, topic, id, token, lease_ms, 0);
}

/* Pending again at now + delay_ms with the attempt given back: the row
 * sorts among the claimable ones by that due_at. */
int bitt__sq_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t delay_ms)
{
    return q_move(be, t, topic, id, token, delay_ms, 1);
}

/* The attempts of a live lease: BITT_OK, or BITT_NOTFOUND without one. */
static int q_held(bitt_backend *be, int64_t now, const char *topic, uint64_t id, const char *token,
                  uint32_t *attempts, uint32_t *max_attempts)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_HELD, Q_HELD_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = q_bind_live(st, id, topic, token, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *attempts = (uint32_t)sqlite3_column_int64(st, 0);
        *max_attempts = (uint32_t)sqlite3_column_int64(st, 1);
    } else {
        status = rc == SQLITE_DONE ? BITT_NOTFOUND : bitt__sq_fail(be, rc, "queue nack");
    }
    sqlite3_reset(st);
    return status;
}

int bitt__sq_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, const char *error, int64_t delay_ms,
                        const bitt_backoff *backoff)
{
    uint32_t attempts = 0, max_attempts = 0;
    int64_t now = t->now;
    int status = bitt__sq_queue_begin(be, now, topic, "queue nack (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = q_held(be, now, topic, id, token, &attempts, &max_attempts);
    if (status == BITT_NOTFOUND)
        status = q_refused(be, now, "nack", topic, id, token);
    if (status == BITT_OK) {
        int retry = attempts < max_attempts;
        sqlite3_stmt *st;
        status = retry ? bitt__sq_stmt(be, SQ_Q_RETRY, Q_RETRY_SQL, &st)
                       : bitt__sq_stmt(be, SQ_Q_BURY, Q_BURY_SQL, &st);
        if (status == BITT_OK) {
            int64_t when = now;
            if (retry) {
                int64_t delay = delay_ms >= 0 ? delay_ms
                                : backoff     ? bitt__backoff_delay(backoff, attempts)
                                              : 0;
                when = bitt__time_add(now, delay);
            }
            int rc = sqlite3_bind_int64(st, 1, (int64_t)id);
            if (rc == SQLITE_OK)
                rc = sqlite3_bind_int64(st, 2, when);
            if (rc == SQLITE_OK)
                rc = bitt__sq_bind_str(st, 3, error);
            status = bitt__sq_run(be, st, rc, "queue nack", NULL);
        }
    }
    return bitt__sq_end(be, status, "queue nack (COMMIT)");
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
    status = bitt__sq_run(be, st, rc, "commit (enqueue)", NULL);
    if (status == BITT_OK)
        op->id = (uint64_t)sqlite3_last_insert_rowid(be->db);
    return status;
}
