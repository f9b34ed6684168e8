/*
 * core/postgres/queue.c: claim, ack, nack, extend and snooze, and the sweep
 * every queue call runs first.
 *
 * A message is a row: state 0 pending (due_at = claimable from), 1
 * processing (due_at = the lease's end, token = the delivery's), 2 dead.
 * Each call is one pipeline in one transaction: the sweep (messages whose
 * lease ended on their last attempt become dead, failed_at = the lease's
 * end), then the call's statement, which sees the sweep's work. Claims
 * take the oldest claimable rows by (due_at, id) with FOR UPDATE SKIP
 * LOCKED, so concurrent consumers never wait for each other and never get
 * the same message. Tokens are 32 hex digits from gen_random_uuid().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

/* Rows another transaction is sweeping (or claiming) are skipped, never
 * waited for: no lock order to get wrong. */
const char bitt__pg_sweep_sql[] =
    "UPDATE @queue SET state = 2, failed_at = due_at, last_error = $3::text, token = NULL, "
    "dedup_key = NULL WHERE id IN (SELECT id FROM @queue WHERE topic = $1::text AND state = 1 "
    "AND attempts >= max_attempts AND due_at <= " PG_NOW_2 " FOR UPDATE SKIP LOCKED)";

void bitt__pg_sweep_params(bitt_pg_params *p, const char *topic, const bitt_time *t)
{
    bitt__pg_p_text(p, topic);
    bitt__pg_p_now(p, t);
    bitt__pg_p_text(p, BITT_LEASE_EXPIRED_ERROR);
}

static const char sql_claim[] =
    "WITH pick AS (SELECT id, due_at FROM @queue WHERE topic = $1::text AND state < 2 "
    "AND due_at <= " PG_NOW_2 " AND NOT (state = 1 AND attempts >= max_attempts) "
    "ORDER BY due_at, id LIMIT $3::int8 FOR UPDATE SKIP LOCKED), "
    "upd AS (UPDATE @queue q SET state = 1, attempts = q.attempts + 1, "
    "token = replace(gen_random_uuid()::text, '-', ''), due_at = " PG_NOW_2_PLUS_4
    " FROM pick WHERE q.id = pick.id RETURNING q.id, q.payload, "
    "q.kind, q.token, q.attempts, q.max_attempts, q.last_error, "
    "q.created_at, q.due_at, q.failed_at, pick.due_at AS since) "
    "SELECT id, payload, kind, token, attempts, max_attempts, "
    "last_error, created_at, due_at, failed_at FROM upd "
    "ORDER BY since, id";

/* A delivery is live while state = 1, the token matches and due_at > now. */
#define HELD(now)                                                                                  \
    "id = $1::int8 AND topic = $2::text AND state = 1 AND token = $3::text "                       \
    "AND due_at > " PG_NOW(now)

static const char sql_ack[] = "DELETE FROM @queue WHERE " HELD(4);
static const char sql_held[] = "SELECT attempts, max_attempts FROM @queue WHERE " HELD(4);
static const char sql_retry[] =
    "UPDATE @queue SET state = 0, token = NULL, last_error = $4::text, due_at = " PG_NOW_6_PLUS_5
    " WHERE " HELD(6);
static const char sql_bury[] = "UPDATE @queue SET state = 2, token = NULL, last_error = $4::text, "
                               "failed_at = " PG_NOW_5 ", dedup_key = NULL WHERE " HELD(5);
static const char sql_extend[] = "UPDATE @queue SET due_at = " PG_NOW_5_PLUS_4 " WHERE " HELD(5);
static const char sql_snooze[] = "UPDATE @queue SET state = 0, attempts = attempts - 1, "
                                 "token = NULL, due_at = " PG_NOW_5_PLUS_4 " WHERE " HELD(5);
static const char sql_why[] = "SELECT state, token = $3::text, due_at > " PG_NOW_4
                              " FROM @queue WHERE id = $1::int8 AND topic = $2::text";

int bitt__pg_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                         int64_t lease_ms, bitt_messages *out)
{
    int status = bitt__pg_schema(be);
    if (status || !limit)
        return status;
    bitt_pg_params sp = {0}, cp = {0};
    bitt__pg_sweep_params(&sp, topic, t);
    bitt__pg_p_text(&cp, topic);
    bitt__pg_p_now(&cp, t);
    bitt__pg_p_count(&cp, limit);
    bitt__pg_p_i64(&cp, lease_ms);
    bitt_pg_step steps[2] = {{PG_Q_SWEEP, bitt__pg_sweep_sql, &sp, NULL},
                             {PG_Q_CLAIM, sql_claim, &cp, NULL}};
    status = bitt__pg_run(be, steps, 2, "dequeue");
    if (status)
        return status;
    const PGresult *res = steps[1].res;
    size_t base = out->count;
    for (int r = 0; !status && r < PQntuples(res); r++) {
        size_t len;
        const uint8_t *payload = bitt__pg_bytes(res, r, 1, &len);
        bitt_message f = {
            .id = (uint64_t)bitt__pg_i64(res, r, 0),
            .topic = (char *)topic,
            .payload = (uint8_t *)payload,
            .payload_len = len,
            .kind = (int)bitt__pg_i64(res, r, 2),
            .token = (char *)bitt__pg_text(res, r, 3),
            .attempts = (uint32_t)bitt__pg_i64(res, r, 4),
            .max_attempts = (uint32_t)bitt__pg_i64(res, r, 5),
            .last_error = (char *)bitt__pg_text(res, r, 6),
            .created_at = bitt__pg_i64(res, r, 7),
            .due_at = bitt__pg_i64(res, r, 8),
            .failed_at = bitt__pg_i64(res, r, 9),
        };
        status = bitt__pg_push_message(out, &f);
    }
    /* Out of memory after the claim committed: the messages come back
     * when their lease ends, as after a crash. */
    if (status)
        bitt__pg_messages_truncate(out, base);
    bitt__pg_clear(steps, 2);
    return status;
}

/* BITT_ETOKEN naming why the delivery (id, token) is not held. */
static int stale(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                 const char *token)
{
    bitt_pg_params p = {0};
    bitt__pg_p_i64(&p, (int64_t)id);
    bitt__pg_p_text(&p, topic);
    bitt__pg_p_text(&p, token);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    int status = bitt__pg_run1(be, PG_Q_WHY, sql_why, &p, &res, "queue (token check)");
    if (status)
        return status;
    const char *why = "no such message";
    if (PQntuples(res) > 0) {
        int64_t state = bitt__pg_i64(res, 0, 0);
        if (state != 1)
            why = state == 2 ? "it is dead" : "it is not leased";
        else if (!bitt__pg_i64(res, 0, 1))
            why = "the token belongs to another delivery";
        else
            why = "its lease ended";
    }
    PQclear(res);
    return bitt__fail(BITT_ETOKEN, "message %llu of topic '%s': stale ack token (%s)",
                      (unsigned long long)id, topic, why);
}

static void held_params(bitt_pg_params *p, const char *topic, uint64_t id, const char *token)
{
    bitt__pg_p_i64(p, (int64_t)id);
    bitt__pg_p_text(p, topic);
    bitt__pg_p_text(p, token);
}

/* Runs [sweep, statement, NOTIFY when notify]; *changed gets the rows the
 * statement changed. */
static int sweep_and(bitt_backend *be, const bitt_time *t, const char *topic, bitt_pg_id id,
                     const char *sql, bitt_pg_params *p, int notify, uint64_t *changed,
                     PGresult **res, const char *what)
{
    bitt_pg_params sp = {0}, np = {0};
    bitt__pg_sweep_params(&sp, topic, t);
    bitt__pg_notify_params(be, &np);
    bitt_pg_step steps[3] = {{PG_Q_SWEEP, bitt__pg_sweep_sql, &sp, NULL},
                             {id, sql, p, NULL},
                             {PG_NOTIFY, bitt__pg_notify_sql, &np, NULL}};
    int status = bitt__pg_run(be, steps, notify ? 3 : 2, what);
    if (status)
        return status;
    if (changed)
        *changed = bitt__pg_changed(steps[1].res);
    if (res) {
        *res = steps[1].res;
        steps[1].res = NULL;
    }
    bitt__pg_clear(steps, 3);
    return BITT_OK;
}

int bitt__pg_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       const char *token)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    held_params(&p, topic, id, token);
    bitt__pg_p_now(&p, t);
    uint64_t changed = 0;
    status = sweep_and(be, t, topic, PG_Q_ACK, sql_ack, &p, 0, &changed, NULL, "ack");
    if (!status && !changed)
        status = stale(be, t, topic, id, token);
    return status;
}

/* Every live delivery of the batch in one statement: the rows deleted come
 * back as (id, token) and are matched to the items in order, so a repeated
 * item finds its row already taken. */
static const char sql_ack_many[] =
    "DELETE FROM @queue q USING unnest($1::int8[], $2::text[]) AS a(id, token) "
    "WHERE q.id = a.id AND q.topic = $3::text AND q.state = 1 AND q.token = a.token "
    "AND q.due_at > " PG_NOW_4 " RETURNING q.id, q.token";

/* Binds ids as int8[] and tokens as text[]. An id over INT64_MAX or a token
 * that is not plain ASCII (a stored one is hex) is bound as one that
 * matches no row, so it fails its own item, not the statement. */
static int bind_deliveries(bitt_buf *ids_arr, bitt_buf *tok_arr, const uint64_t *ids,
                           const char *const *tokens, size_t count)
{
    int64_t *v = bitt__malloc(count * sizeof *v);
    const char **tok = bitt__malloc(count * sizeof *tok);
    int status = v && tok ? BITT_OK : bitt__fail(BITT_ENOMEM, "postgres: out of memory");
    for (size_t i = 0; !status && i < count; i++) {
        v[i] = ids[i] > INT64_MAX ? -1 : (int64_t)ids[i];
        tok[i] = tokens[i];
        for (const unsigned char *c = (const unsigned char *)tokens[i]; *c; c++)
            if (*c >= 0x80)
                tok[i] = "";
    }
    if (!status)
        status = bitt__pg_array_int8(ids_arr, v, count);
    if (!status)
        status = bitt__pg_array_text(tok_arr, tok, count);
    free(v);
    free(tok);
    return status;
}

int bitt__pg_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                            const uint64_t *ids, const char *const *tokens, size_t count,
                            int *statuses)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_buf ids_arr = BITT_BUF_INIT, tok_arr = BITT_BUF_INIT;
    status = bind_deliveries(&ids_arr, &tok_arr, ids, tokens, count);
    PGresult *res = NULL;
    if (!status) {
        bitt_pg_params p = {0};
        bitt__pg_p_bytes(&p, ids_arr.ptr, ids_arr.len);
        bitt__pg_p_bytes(&p, tok_arr.ptr, tok_arr.len);
        bitt__pg_p_text(&p, topic);
        bitt__pg_p_now(&p, t);
        status =
            sweep_and(be, t, topic, PG_Q_ACK_MANY, sql_ack_many, &p, 0, NULL, &res, "ack_many");
    }
    bitt_buf_dispose(&ids_arr);
    bitt_buf_dispose(&tok_arr);
    for (int r = 0; !status && r < PQntuples(res); r++) {
        uint64_t id = (uint64_t)bitt__pg_i64(res, r, 0);
        const char *token = bitt__pg_text(res, r, 1);
        for (size_t i = 0; i < count; i++) {
            if (ids[i] == id && statuses[i] != BITT_OK && token && !strcmp(tokens[i], token)) {
                statuses[i] = BITT_OK;
                break;
            }
        }
    }
    PQclear(res);
    return status;
}

int bitt__pg_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, const char *error, int64_t delay_ms,
                        const bitt_backoff *backoff)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    held_params(&p, topic, id, token);
    bitt__pg_p_now(&p, t);
    PGresult *res = NULL;
    status = sweep_and(be, t, topic, PG_Q_HELD, sql_held, &p, 0, NULL, &res, "nack");
    if (status)
        return status;
    int held = PQntuples(res) > 0;
    uint64_t attempts = held ? (uint64_t)bitt__pg_i64(res, 0, 0) : 0;
    uint64_t max_attempts = held ? (uint64_t)bitt__pg_i64(res, 0, 1) : 0;
    PQclear(res);
    if (!held)
        return stale(be, t, topic, id, token);

    /* The token names this delivery: while it matches, attempts cannot
     * have moved, so the decision holds when the update runs. */
    bitt_pg_params q = {0};
    held_params(&q, topic, id, token);
    bitt__pg_p_text(&q, error);
    uint64_t changed = 0;
    bitt_pg_params np = {0};
    bitt__pg_notify_params(be, &np);
    bitt_pg_step steps[2] = {{PG_Q_BURY, sql_bury, &q, NULL},
                             {PG_NOTIFY, bitt__pg_notify_sql, &np, NULL}};
    if (attempts >= max_attempts) {
        bitt__pg_p_now(&q, t);
    } else {
        if (delay_ms < 0)
            delay_ms = bitt__backoff_delay(backoff, (uint32_t)attempts);
        bitt__pg_p_i64(&q, delay_ms);
        bitt__pg_p_now(&q, t);
        steps[0].id = PG_Q_RETRY;
        steps[0].sql = sql_retry;
    }
    status = bitt__pg_run(be, steps, 2, "nack");
    if (!status)
        changed = bitt__pg_changed(steps[0].res);
    bitt__pg_clear(steps, 2);
    if (!status && !changed)
        status = stale(be, t, topic, id, token);
    return status;
}

/* extend (snooze 0) or snooze (1): one live-lease update at now + ms. A
 * message handed back now (ms 0) wakes the waiters. */
static int move(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                const char *token, int64_t ms, int snooze)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    held_params(&p, topic, id, token);
    bitt__pg_p_i64(&p, ms);
    bitt__pg_p_now(&p, t);
    uint64_t changed = 0;
    status = snooze ? sweep_and(be, t, topic, PG_Q_SNOOZE, sql_snooze, &p, ms == 0, &changed, NULL,
                                "snooze")
                    : sweep_and(be, t, topic, PG_Q_EXTEND, sql_extend, &p, ms == 0, &changed, NULL,
                                "extend");
    if (!status && !changed)
        status = stale(be, t, topic, id, token);
    return status;
}

int bitt__pg_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t lease_ms)
{
    return move(be, t, topic, id, token, lease_ms, 0);
}

/* Pending again at now + delay_ms with the attempt given back: the row
 * sorts among the claimable ones by that due_at. */
int bitt__pg_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t delay_ms)
{
    return move(be, t, topic, id, token, delay_ms, 1);
}
