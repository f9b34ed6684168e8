/*
 * core/postgres/queue_txn.c: messages by id. queue_get, and the queue ops
 * of commits (BITT_OP_QUEUE_ACK .. BITT_OP_QUEUE_RESCHEDULE), which
 * commit.c plans in its two batches:
 *
 *   batch 1  every op's message lock key (with the commit's other keys, in
 *            one ascending order, so two commits on one message never
 *            deadlock), the sweep of each op's topic, then each message's
 *            row FOR UPDATE, read at the statement's time;
 *   verdict  a delivery op (ack, nack, snooze, extend) whose token is not
 *            the one of a live lease fails the commit with BITT_ETOKEN
 *            before anything is written; cancel and reschedule learn
 *            whether they apply (op->found);
 *   batch 2  each write, after the stamp order lock, at the time of its
 *            read: the row is locked since, so the verdict still holds, and
 *            the tail writes only rows it holds (commit.c's rule that the
 *            serialized tail never waits for a lock).
 *
 * A delivery op's write is the statement of its standalone call
 * (bitt__pg_delivery_step), so the two cannot drift apart.
 */
#include <string.h>

#include "postgres/pg_internal.h"

/* The message's state as of $4, the token's match, the lease's life. */
static const char sql_lock[] =
    "SELECT state, token = $3::text, due_at > " PG_NOW_4 ", attempts, max_attempts, " PG_NOW_4
    " FROM @queue WHERE id = $1::int8 AND topic = $2::text FOR UPDATE";
static const char sql_cancel[] = "DELETE FROM @queue WHERE id = $1::int8 AND topic = $2::text";
/* Pending at $3 + delay $4: a lease that ran out ends with its token. */
static const char sql_reschedule[] =
    "UPDATE @queue SET state = 0, token = NULL, due_at = " PG_AFTER(
        "$3::int8", "$4::int8") " WHERE id = $1::int8 AND topic = $2::text";
static const char sql_get[] =
    "SELECT id, payload, kind, NULL::text, attempts, max_attempts, last_error, created_at, "
    "due_at, failed_at, priority, topic, state, due_at > " PG_NOW_3
    ", done_at, result, result_kind FROM @queue WHERE id = $1::int8 AND topic = $2::text";

static int is_delivery(int type)
{
    return type >= BITT_OP_QUEUE_ACK && type <= BITT_OP_QUEUE_EXTEND;
}

int64_t bitt__pg_qop_lock_key(const bitt_backend *be, const bitt_op *op)
{
    unsigned char id[8];
    for (int i = 0; i < 8; i++)
        id[i] = (unsigned char)(op->version >> (56 - 8 * i));
    return bitt__pg_lock_key(be, 'm', op->name, strlen(op->name), id, sizeof id);
}

void bitt__pg_qop_read(const bitt_op *op, const bitt_time *t, bitt_pg_step *step, bitt_pg_params *p)
{
    memset(p, 0, sizeof *p);
    bitt__pg_held_params(p, op->name, op->version, is_delivery(op->type) ? op->owner : NULL);
    bitt__pg_p_now(p, t);
    *step = (bitt_pg_step){PG_Q_LOCK, sql_lock, p, NULL};
}

int bitt__pg_qop_judge(bitt_op *op, const PGresult *res, bitt_pg_qop *q)
{
    memset(q, 0, sizeof *q);
    int found = PQntuples(res) > 0;
    int64_t state = found ? bitt__pg_i64(res, 0, 0) : -1;
    int token_ok = found && bitt__pg_i64(res, 0, 1);
    int live = found && bitt__pg_i64(res, 0, 2);
    if (found) {
        q->attempts = (uint64_t)bitt__pg_i64(res, 0, 3);
        q->max_attempts = (uint64_t)bitt__pg_i64(res, 0, 4);
        q->now = bitt__pg_i64(res, 0, 5);
    }
    /* A last lease that ran out is dead: the sweep skips a row that
     * someone held as it ran, and this read waited for that holder. */
    int expired_last = state == 1 && !live && q->attempts >= q->max_attempts;
    switch (op->type) {
    /* dead letters have their own calls, done messages none */
    case BITT_OP_QUEUE_CANCEL: q->write = found && state < 2 && !expired_last; break;
    case BITT_OP_QUEUE_RESCHEDULE:
        q->write = state == 0 || (state == 1 && !live && !expired_last);
        break;
    default:
        if (!(state == 1 && token_ok && live))
            return bitt__pg_token_fail(op->name, op->version, res);
        q->write = 1;
        break;
    }
    if (!is_delivery(op->type))
        op->found = q->write;
    return BITT_OK;
}

void bitt__pg_qop_write(const bitt_backend *be, const bitt_op *op, const bitt_pg_qop *q,
                        const bitt_backoff *backoff, bitt_pg_step *step, bitt_pg_params *p)
{
    if (is_delivery(op->type)) {
        bitt_pg_delivery d = {.type = op->type,
                              .topic = op->name,
                              .id = op->version,
                              .token = op->owner,
                              .error = (const char *)op->aux,
                              .ms = op->type == BITT_OP_QUEUE_EXTEND ? op->ttl_ms : op->delay_ms,
                              .attempts = q->attempts,
                              .max_attempts = q->max_attempts,
                              /* an ack's result: value NULL = none */
                              .keep = op->type == BITT_OP_QUEUE_ACK && be->done_retention_ms > 0,
                              .result = op->value,
                              .result_len = op->value_len,
                              .result_kind = op->kind};
        bitt_time at = {.now = q->now, .manual = 1};
        bitt__pg_delivery_step(&d, backoff, &at, step, p);
        return;
    }
    memset(p, 0, sizeof *p);
    bitt__pg_p_i64(p, (int64_t)op->version);
    bitt__pg_p_text(p, op->name);
    if (op->type == BITT_OP_QUEUE_CANCEL) {
        *step = (bitt_pg_step){PG_Q_CANCEL, sql_cancel, p, NULL};
        return;
    }
    bitt__pg_p_i64(p, q->now);
    bitt__pg_p_i64(p, op->delay_ms);
    *step = (bitt_pg_step){PG_Q_RESCHEDULE, sql_reschedule, p, NULL};
}

/* As of t: a lease that ran out is pending again, or dead on its last
 * attempt (as the sweep leaves it, when it skipped a row someone held); a
 * done message has its done_at and result. */
static void message_state(const PGresult *res, bitt_message *f)
{
    int64_t state = bitt__pg_i64(res, 0, 12);
    int later = (int)bitt__pg_i64(res, 0, 13);
    if (state == 3) {
        f->state = BITT_MSG_DONE;
        f->done_at = bitt__pg_i64(res, 0, 14);
        /* NULL: no result; an empty bytea is an empty result */
        if (!PQgetisnull(res, 0, 15)) {
            f->result = (uint8_t *)bitt__pg_bytes(res, 0, 15, &f->result_len);
            f->result_kind = (int)bitt__pg_i64(res, 0, 16);
        }
    } else if (state == 2) {
        f->state = BITT_MSG_DEAD;
    } else if (state == 0) {
        f->state = later ? BITT_MSG_DELAYED : BITT_MSG_PENDING;
    } else if (later) {
        f->state = BITT_MSG_LEASED;
    } else if (f->attempts >= f->max_attempts) {
        f->state = BITT_MSG_DEAD;
        f->failed_at = f->due_at;
        f->last_error = (char *)BITT_LEASE_EXPIRED_ERROR;
    } else {
        f->state = BITT_MSG_PENDING;
    }
}

int bitt__pg_queue_get(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       bitt_message **out)
{
    *out = NULL;
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    if (id > INT64_MAX)
        return BITT_NOTFOUND;
    bitt_pg_params sp[BITT_PG_SWEEP_MAX], gp = {0};
    bitt_pg_step steps[BITT_PG_SWEEP_MAX + 1];
    int n = bitt__pg_sweep_steps(be, topic, NULL, t, steps, sp);
    bitt__pg_p_i64(&gp, (int64_t)id);
    bitt__pg_p_text(&gp, topic);
    bitt__pg_p_now(&gp, t);
    steps[n] = (bitt_pg_step){PG_Q_GET, sql_get, &gp, NULL};
    status = bitt__pg_run(be, steps, n + 1, "queue get");
    if (status)
        return status;
    const PGresult *res = steps[n].res;
    if (PQntuples(res) == 0) {
        status = BITT_NOTFOUND;
    } else {
        bitt_message f;
        bitt__pg_row_message(res, 0, &f);
        message_state(res, &f);
        *out = bitt__message_new(&f);
        if (!*out)
            status = bitt__fail(BITT_ENOMEM, "postgres: out of memory reading a message");
    }
    bitt__pg_clear(steps, n + 1);
    return status;
}
