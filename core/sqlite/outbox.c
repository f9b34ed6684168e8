/*
 * core/sqlite/outbox.c: per-stream event logs committed with the state
 * they belong to, and their parked events.
 *
 * A row is pending (state 0) or parked (state 1). Sequence numbers come
 * from <p>outbox_seq, one counter per stream incremented inside the
 * appending commit's transaction: they increase in commit order and are
 * never reused, even once every event is acked. A dispatcher reads
 * pending rows in seq order, whatever their next attempt time.
 */
#include "sqlite_internal.h"

#define O_COLS                                                                                     \
    "seq, payload, kind, attempts, last_error, created_at, next_attempt_at, parked_at, reason"
#define O_NEXT_SEQ_SQL                                                                             \
    "INSERT INTO \"{p}outbox_seq\" (stream, last) VALUES (?1, 1) "                                 \
    "ON CONFLICT (stream) DO UPDATE SET last = last + 1 RETURNING last"
#define O_INSERT_SQL                                                                               \
    "INSERT INTO \"{p}outbox\" (stream, seq, state, payload, kind, attempts, next_attempt_at, "    \
    "last_error, created_at, parked_at, reason) VALUES (?1, ?2, 0, ?3, ?4, 0, 0, NULL, ?5, 0, 0)"
#define O_PENDING_SQL                                                                              \
    "SELECT " O_COLS " FROM \"{p}outbox\" WHERE stream = ?1 AND state = 0 ORDER BY seq LIMIT ?2"
#define O_ACK_SQL "DELETE FROM \"{p}outbox\" WHERE stream = ?1 AND state = 0 AND seq = ?2"
#define O_FAIL_SQL                                                                                 \
    "UPDATE \"{p}outbox\" SET attempts = attempts + 1, last_error = ?3, next_attempt_at = ?4 "     \
    "WHERE stream = ?1 AND state = 0 AND seq = ?2"
#define O_PARK_SQL                                                                                 \
    "UPDATE \"{p}outbox\" SET state = 1, reason = ?3, last_error = ?4, parked_at = ?5 "            \
    "WHERE stream = ?1 AND state = 0 AND seq = ?2"
#define O_PARKED(where)                                                                            \
    "SELECT " O_COLS " FROM \"{p}outbox\" WHERE stream = ?1 AND state = 1" where                   \
    " ORDER BY seq LIMIT ?2"
#define O_RETRY(where)                                                                             \
    "UPDATE \"{p}outbox\" SET state = 0, attempts = 0, last_error = NULL, next_attempt_at = 0, "   \
    "parked_at = 0, reason = 0 WHERE stream = ?1 AND state = 1" where
#define O_DISCARD(where) "DELETE FROM \"{p}outbox\" WHERE stream = ?1 AND state = 1" where
#define O_COUNTS_SQL                                                                               \
    "SELECT count(*) FILTER (WHERE state = 0), count(*) FILTER (WHERE state = 1) "                 \
    "FROM \"{p}outbox\" WHERE stream = ?1"

static int64_t o_int(uint64_t v)
{
    return v > INT64_MAX ? -1 : (int64_t)v; /* -1 matches no sequence number */
}

int bitt__sq_outbox_insert(bitt_backend *be, int64_t now, bitt_op *op)
{
    op->id = 0;
    sqlite3_stmt *st;
    int64_t seq = 0;
    int status = bitt__sq_stmt(be, SQ_O_NEXT_SEQ, O_NEXT_SEQ_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, op->name);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        seq = sqlite3_column_int64(st, 0);
        rc = sqlite3_step(st); /* runs the upsert to its end */
    }
    status = rc == SQLITE_DONE ? BITT_OK : bitt__sq_fail(be, rc, "commit (outbox sequence)");
    sqlite3_reset(st);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_O_INSERT, O_INSERT_SQL, &st);
    if (status != BITT_OK)
        return status;
    rc = bitt__sq_bind_str(st, 1, op->name);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, seq);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_bytes(st, 3, op->value, op->value_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 4, op->kind);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 5, now);
    status = bitt__sq_run(be, st, rc, "commit (outbox append)", NULL);
    if (status == BITT_OK)
        op->id = (uint64_t)seq;
    return status;
}

/* Pushes the rows of a bound O_COLS statement onto out. */
static int o_read(bitt_backend *be, sqlite3_stmt *st, int rc, const char *stream,
                  bitt_messages *out, const char *what)
{
    size_t base = out->count;
    int status = BITT_OK;
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        bitt_message f = {0};
        f.id = (uint64_t)sqlite3_column_int64(st, 0);
        f.topic = (char *)stream;
        f.payload = (uint8_t *)bitt__sq_column_bytes(st, 1, &f.payload_len);
        f.kind = sqlite3_column_int(st, 2);
        f.attempts = (uint32_t)sqlite3_column_int64(st, 3);
        f.last_error = (char *)sqlite3_column_text(st, 4);
        f.created_at = sqlite3_column_int64(st, 5);
        f.due_at = sqlite3_column_int64(st, 6);
        f.failed_at = sqlite3_column_int64(st, 7);
        f.park_reason = sqlite3_column_int(st, 8);
        if ((status = bitt__sq_push_message(out, &f)) != BITT_OK)
            break;
        rc = SQLITE_OK;
    }
    if (status == BITT_OK && rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, what);
    sqlite3_reset(st);
    if (status != BITT_OK)
        bitt__sq_messages_truncate(out, base);
    return status;
}

int bitt__sq_outbox_pending(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                            bitt_messages *out)
{
    (void)t;
    sqlite3_stmt *st;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_O_PENDING, O_PENDING_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, stream);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_count(st, 2, limit);
    return o_read(be, st, rc, stream, out, "outbox pending"); /* one statement, one snapshot */
}

int bitt__sq_outbox_parked(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                           size_t limit, bitt_messages *out)
{
    (void)t;
    sqlite3_stmt *st;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = reason ? bitt__sq_stmt(be, SQ_O_PARKED_REASON, O_PARKED(" AND reason = ?3"), &st)
                        : bitt__sq_stmt(be, SQ_O_PARKED_ANY, O_PARKED(""), &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, stream);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_count(st, 2, limit);
    if (rc == SQLITE_OK && reason)
        rc = sqlite3_bind_int(st, 3, reason);
    return o_read(be, st, rc, stream, out, "outbox parked");
}

/* Ends the write transaction of a single-row change of a pending event
 * (fail, park): BITT_NOTFOUND when seq was not pending. */
static int o_end_one(bitt_backend *be, int status, uint64_t changed, const char *what)
{
    if (status == BITT_OK && changed == 0)
        status = BITT_NOTFOUND;
    return bitt__sq_end(be, status, what);
}

int bitt__sq_outbox_fail(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         const char *error, int64_t next_attempt_at)
{
    (void)t;
    sqlite3_stmt *st;
    uint64_t changed = 0;
    int status = bitt__sq_write(be, "outbox fail (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_O_FAIL, O_FAIL_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, stream);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, o_int(seq));
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_str(st, 3, error);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 4, next_attempt_at);
        status = bitt__sq_run(be, st, rc, "outbox fail", &changed);
    }
    return o_end_one(be, status, changed, "outbox fail (COMMIT)");
}

int bitt__sq_outbox_park(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         int reason, const char *error)
{
    sqlite3_stmt *st;
    uint64_t changed = 0;
    int status = bitt__sq_write(be, "outbox park (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_O_PARK, O_PARK_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, stream);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, o_int(seq));
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int(st, 3, reason);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_str(st, 4, error);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 5, t->now);
        status = bitt__sq_run(be, st, rc, "outbox park", &changed);
    }
    return o_end_one(be, status, changed, "outbox park (COMMIT)");
}

/* Applies statement one (by seq) to each of seqs, or statement all once
 * when count is 0, in one write transaction; *changed counts the rows. */
static int o_change_many(bitt_backend *be, bitt_sq_id one, const char *one_sql, bitt_sq_id all,
                         const char *all_sql, const char *stream, const uint64_t *seqs,
                         size_t count, uint64_t *changed, const char *what)
{
    uint64_t total = 0;
    *changed = 0;
    sqlite3_stmt *st;
    int status = bitt__sq_write(be, what);
    if (status == BITT_OK)
        status =
            count ? bitt__sq_stmt(be, one, one_sql, &st) : bitt__sq_stmt(be, all, all_sql, &st);
    for (size_t i = 0; status == BITT_OK && i < (count ? count : 1); i++) {
        uint64_t n = 0;
        int rc = bitt__sq_bind_str(st, 1, stream);
        if (rc == SQLITE_OK && count)
            rc = sqlite3_bind_int64(st, 2, o_int(seqs[i]));
        status = bitt__sq_run(be, st, rc, what, &n);
        total += n;
    }
    status = bitt__sq_end(be, status, what);
    if (status == BITT_OK)
        *changed = total;
    return status;
}

int bitt__sq_outbox_ack(bitt_backend *be, const bitt_time *t, const char *stream,
                        const uint64_t *seqs, size_t count, uint64_t *acked)
{
    (void)t;
    if (count == 0) { /* nothing to ack (count 0 means "all" only for parked events) */
        *acked = 0;
        return bitt__sq_schema(be);
    }
    return o_change_many(be, SQ_O_ACK, O_ACK_SQL, SQ_O_ACK, O_ACK_SQL, stream, seqs, count, acked,
                         "outbox ack");
}

int bitt__sq_outbox_retry(bitt_backend *be, const bitt_time *t, const char *stream,
                          const uint64_t *seqs, size_t count, uint64_t *moved)
{
    (void)t;
    return o_change_many(be, SQ_O_RETRY_ONE, O_RETRY(" AND seq = ?2"), SQ_O_RETRY_ALL, O_RETRY(""),
                         stream, seqs, count, moved, "outbox retry");
}

int bitt__sq_outbox_discard(bitt_backend *be, const bitt_time *t, const char *stream,
                            const uint64_t *seqs, size_t count, uint64_t *deleted)
{
    (void)t;
    return o_change_many(be, SQ_O_DISCARD_ONE, O_DISCARD(" AND seq = ?2"), SQ_O_DISCARD_ALL,
                         O_DISCARD(""), stream, seqs, count, deleted, "outbox discard");
}

int bitt__sq_outbox_counts(bitt_backend *be, const bitt_time *t, const char *stream,
                           uint64_t *pending, uint64_t *parked)
{
    (void)t;
    sqlite3_stmt *st;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_O_COUNTS, O_COUNTS_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, stream);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        if (pending)
            *pending = (uint64_t)sqlite3_column_int64(st, 0);
        if (parked)
            *parked = (uint64_t)sqlite3_column_int64(st, 1);
    } else {
        status = bitt__sq_fail(be, rc, "outbox counts");
    }
    sqlite3_reset(st);
    return status;
}
