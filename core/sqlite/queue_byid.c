/*
 * core/sqlite/queue_byid.c: a message by id: get, and the cancel and
 * reschedule ops of commits (bitt_queue_cancel and bitt_queue_reschedule
 * are commits of one such op, core/queue_ops.c). Each starts, like every
 * queue call, with the topic's sweep of expired last attempts, so a
 * message that died at its lease's end is seen dead.
 */
#include <stdint.h>

#include "sqlite_internal.h"

#define Q_GET_SQL                                                                                  \
    "SELECT " BITT_SQ_QUEUE_COLS ", state FROM \"{p}queue\" WHERE id = ?1 AND topic = ?2"
/* A pending, delayed or leased message (dead letters have their own calls,
 * done messages none). */
#define Q_CANCEL_SQL "DELETE FROM \"{p}queue\" WHERE id = ?1 AND topic = ?2 AND state < 2"
/* A pending or delayed one, or a lease that ran out (ended here: its token
 * no longer acks; attempts and error kept). A live lease is its consumer's. */
#define Q_RESCHEDULE_SQL                                                                           \
    "UPDATE \"{p}queue\" SET state = 0, token = NULL, due_at = ?3 WHERE id = ?1 AND topic = ?2 "   \
    "AND (state = 0 OR (state = 1 AND due_at <= ?4))"

/* The state a row shows as of now: a lease that ran out is pending again,
 * a pending row not yet due is delayed. */
static int q_state(int state, int64_t due_at, int64_t now)
{
    if (state == 2)
        return BITT_MSG_DEAD;
    if (state == 3)
        return BITT_MSG_DONE;
    if (due_at <= now)
        return BITT_MSG_PENDING;
    return state == 1 ? BITT_MSG_LEASED : BITT_MSG_DELAYED;
}

int bitt__sq_queue_get(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       bitt_message **out)
{
    *out = NULL;
    if (id > INT64_MAX)
        return BITT_NOTFOUND; /* never a rowid */
    sqlite3_stmt *st;
    int status = bitt__sq_queue_begin(be, t->now, topic, "queue get (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_Q_GET, Q_GET_SQL, &st);
    if (status == BITT_OK) {
        int rc = sqlite3_bind_int64(st, 1, (int64_t)id);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_str(st, 2, topic);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            bitt_message f;
            bitt__sq_queue_fields(st, topic, &f);
            f.token = NULL; /* reading a message never hands out its delivery */
            f.state = q_state(sqlite3_column_int(st, BITT_SQ_QUEUE_NCOLS), f.due_at, t->now);
            *out = bitt__message_new(&f);
            if (!*out)
                status = bitt__fail(BITT_ENOMEM, "sqlite: out of memory for a message");
        } else {
            status = rc == SQLITE_DONE ? BITT_NOTFOUND : bitt__sq_fail(be, rc, "queue get");
        }
        sqlite3_reset(st);
    }
    status = bitt__sq_end(be, status, "queue get (COMMIT)");
    if (status != BITT_OK && *out) {
        bitt_message_free(*out);
        *out = NULL;
    }
    return status;
}

/* Runs the cancel (reschedule 0) or reschedule (1) of op: found when a
 * row changed. */
static int q_by_id(bitt_backend *be, int64_t now, bitt_op *op, int reschedule)
{
    const char *what = reschedule ? "commit (queue reschedule)" : "commit (queue cancel)";
    op->found = 0;
    if (op->version > INT64_MAX)
        return BITT_OK; /* never a rowid */
    sqlite3_stmt *st;
    int status = bitt__sq_queue_sweep(be, now, op->name);
    if (status == BITT_OK)
        status = reschedule ? bitt__sq_stmt(be, SQ_Q_RESCHEDULE, Q_RESCHEDULE_SQL, &st)
                            : bitt__sq_stmt(be, SQ_Q_CANCEL, Q_CANCEL_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = sqlite3_bind_int64(st, 1, (int64_t)op->version);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_str(st, 2, op->name);
    if (rc == SQLITE_OK && reschedule)
        rc = sqlite3_bind_int64(st, 3, bitt__time_add(now, op->delay_ms));
    if (rc == SQLITE_OK && reschedule)
        rc = sqlite3_bind_int64(st, 4, now);
    uint64_t changed = 0;
    status = bitt__sq_run(be, st, rc, what, &changed);
    op->found = status == BITT_OK && changed;
    return status;
}

int bitt__sq_queue_cancel(bitt_backend *be, int64_t now, bitt_op *op)
{
    return q_by_id(be, now, op, 0);
}

int bitt__sq_queue_reschedule(bitt_backend *be, int64_t now, bitt_op *op)
{
    return q_by_id(be, now, op, 1);
}
