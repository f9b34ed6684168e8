/*
 * core/postgres/queue.c: claim, ack, nack, extend and snooze, and the sweep
 * every queue call runs first.
 *
 * A message is a row: state 0 pending (due_at = claimable from), 1
 * processing (due_at = the lease's end, token = the delivery's), 2 dead,
 * 3 done (with done retention: acked at done_at, with the ack's result; it
 * gave up its token and dedup key, and only a get or the retention sweep
 * finds it). Each call is one pipeline in one transaction: the sweep
 * (messages whose lease ended on their last attempt become dead, failed_at
 * = the lease's end; then, with retention, queue_retention.c's drops), then
 * the call's statement, which sees the sweep's work. Claims
 * take the claimable rows by (priority DESC, due_at, id), the order of the
 * claim index, with FOR UPDATE SKIP LOCKED, so concurrent consumers never
 * wait for each other and never get the same message. A claim over
 * several topics takes, in each topic, the first `limit` claimable rows
 * that no one else holds (an index scan each, locked as it goes), then the
 * first `limit` of those: exactly the claim of one topic over their union.
 * The rows it locked but did not take are released when its transaction
 * ends, at once; meanwhile another claim skips them, as it skips the rows
 * any claim is taking. Sorting the union of every claimable row instead
 * would lock only what is taken but read a whole backlog per claim.
 * Tokens are 32 hex digits from gen_random_uuid().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

/* Rows another transaction is sweeping (or claiming) are skipped, never
 * waited for: no lock order to get wrong. */
#define SWEEP(topics)                                                                              \
    "UPDATE @queue SET state = 2, failed_at = due_at, last_error = $3::text, token = NULL, "       \
    "dedup_key = NULL WHERE id IN (SELECT id FROM @queue WHERE " topics " AND state = 1 "          \
    "AND attempts >= max_attempts AND due_at <= " PG_NOW_2 " FOR UPDATE SKIP LOCKED)"
const char bitt__pg_sweep_sql[] = SWEEP("topic = $1::text");
const char bitt__pg_sweep_topics_sql[] = SWEEP("topic = ANY($1::text[])");

void bitt__pg_sweep_params(bitt_pg_params *p, const char *topic, const bitt_time *t)
{
    bitt__pg_p_text(p, topic);
    bitt__pg_p_now(p, t);
    bitt__pg_p_text(p, BITT_LEASE_EXPIRED_ERROR);
}

/* Claimable by a claim at $2: due, not dead, and not a last lease (that
 * the sweep skipped because someone held it). */
#define CLAIMABLE                                                                                  \
    "state < 2 AND due_at <= " PG_NOW_2 " AND NOT (state = 1 AND attempts >= max_attempts)"
#define CLAIM_ORDER "priority DESC, due_at, id"
/* The claim of the rows in `pick` (id, due_at): a new delivery each, back
 * in claim order by the due_at they had (their new one is the lease's). */
#define CLAIM(pick)                                                                                \
    "WITH pick AS (" pick "), "                                                                    \
    "upd AS (UPDATE @queue q SET state = 1, attempts = q.attempts + 1, "                           \
    "token = replace(gen_random_uuid()::text, '-', ''), due_at = " PG_NOW_2_PLUS_4                 \
    " FROM pick WHERE q.id = pick.id RETURNING q.id, q.payload, q.kind, q.token, q.attempts, "     \
    "q.max_attempts, q.last_error, q.created_at, q.due_at, q.failed_at, q.priority, q.topic, "     \
    "pick.due_at AS since) "                                                                       \
    "SELECT id, payload, kind, token, attempts, max_attempts, last_error, created_at, due_at, "    \
    "failed_at, priority, topic FROM upd ORDER BY priority DESC, since, id"
static const char sql_claim[] =
    CLAIM("SELECT id, due_at FROM @queue WHERE topic = $1::text AND " CLAIMABLE
          " ORDER BY " CLAIM_ORDER " LIMIT $3::int8 FOR UPDATE SKIP LOCKED");
static const char sql_claim_topics[] = CLAIM(
    "SELECT c.id, c.due_at FROM unnest($1::text[]) AS t(name) CROSS JOIN LATERAL "
    "(SELECT id, due_at, priority FROM @queue WHERE topic = t.name COLLATE \"C\" AND " CLAIMABLE
    " ORDER BY " CLAIM_ORDER " LIMIT $3::int8 FOR UPDATE SKIP LOCKED) c "
    "ORDER BY c.priority DESC, c.due_at, c.id LIMIT $3::int8");

/* A delivery is live while state = 1, the token matches and due_at > now. */
#define HELD(now)                                                                                  \
    "id = $1::int8 AND topic = $2::text AND state = 1 AND token = $3::text "                       \
    "AND due_at > " PG_NOW(now)

static const char sql_ack[] = "DELETE FROM @queue WHERE " HELD(4);
/* The ack with done retention: kept done at now with the result ($4, $5;
 * NULL = none), giving up its token and dedup key. */
static const char sql_finish[] =
    "UPDATE @queue SET state = 3, done_at = " PG_NOW_6 ", token = NULL, dedup_key = NULL, "
    "result = $4::bytea, result_kind = $5::int4 WHERE " HELD(6);
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

void bitt__pg_row_message(const PGresult *res, int r, bitt_message *f)
{
    size_t len;
    const uint8_t *payload = bitt__pg_bytes(res, r, 1, &len);
    *f = (bitt_message){
        .id = (uint64_t)bitt__pg_i64(res, r, 0),
        .topic = (char *)bitt__pg_text(res, r, 11),
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
        .priority = (int32_t)bitt__pg_i64(res, r, 10),
    };
}

int bitt__pg_push_rows(const PGresult *res, bitt_messages *out)
{
    size_t base = out->count;
    int status = BITT_OK;
    for (int r = 0; !status && r < PQntuples(res); r++) {
        bitt_message f;
        bitt__pg_row_message(res, r, &f);
        status = bitt__pg_push_message(out, &f);
    }
    if (status)
        bitt__pg_messages_truncate(out, base);
    return status;
}

/* Runs [sweep of topic or topics_arr, claim] (cp filled but for the
 * claim's limit and lease) and appends the deliveries to out. */
static int claim(bitt_backend *be, const bitt_time *t, const char *topic,
                 const bitt_buf *topics_arr, bitt_pg_step claim_step, size_t limit,
                 int64_t lease_ms, bitt_messages *out)
{
    bitt_pg_step steps[BITT_PG_SWEEP_MAX + 1];
    bitt_pg_params sp[BITT_PG_SWEEP_MAX];
    int n = bitt__pg_sweep_steps(be, topic, topics_arr, t, steps, sp);
    steps[n] = claim_step;
    bitt__pg_p_count(steps[n].params, limit);
    bitt__pg_p_i64(steps[n].params, lease_ms);
    int status = bitt__pg_run(be, steps, n + 1, "dequeue");
    if (status)
        return status;
    /* Out of memory after the claim committed: the messages come back
     * when their lease ends, as after a crash. */
    status = bitt__pg_push_rows(steps[n].res, out);
    bitt__pg_clear(steps, n + 1);
    return status;
}

int bitt__pg_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                         int64_t lease_ms, bitt_messages *out)
{
    int status = bitt__pg_schema(be);
    if (status || !limit)
        return status;
    bitt_pg_params cp = {0};
    bitt__pg_p_text(&cp, topic);
    bitt__pg_p_now(&cp, t);
    return claim(be, t, topic, NULL, (bitt_pg_step){PG_Q_CLAIM, sql_claim, &cp, NULL}, limit,
                 lease_ms, out);
}

int bitt__pg_queue_claim_topics(bitt_backend *be, const bitt_time *t, const char *const *topics,
                                size_t count, size_t limit, int64_t lease_ms, bitt_messages *out)
{
    int status = bitt__pg_schema(be);
    if (status || !limit)
        return status;
    bitt_buf arr = BITT_BUF_INIT;
    status = bitt__pg_array_text(&arr, topics, count);
    if (!status) {
        bitt_pg_params cp = {0};
        bitt__pg_p_bytes(&cp, arr.ptr, arr.len);
        bitt__pg_p_now(&cp, t);
        status =
            claim(be, t, NULL, &arr, (bitt_pg_step){PG_Q_CLAIM_TOPICS, sql_claim_topics, &cp, NULL},
                  limit, lease_ms, out);
    }
    bitt_buf_dispose(&arr);
    return status;
}

int bitt__pg_token_fail(const char *topic, uint64_t id, const PGresult *res)
{
    const char *why = "no such message";
    if (PQntuples(res) > 0) {
        int64_t state = bitt__pg_i64(res, 0, 0);
        if (state != 1)
            why = state == 2   ? "it is dead"
                  : state == 3 ? "it is done: acked already"
                               : "it is not leased";
        else if (!bitt__pg_i64(res, 0, 1))
            why = "the token belongs to another delivery";
        else
            why = "its lease ended";
    }
    return bitt__fail(BITT_ETOKEN, "message %llu of topic '%s': stale ack token (%s)",
                      (unsigned long long)id, topic, why);
}

/* A token as bound: a stored one is hex, so one that is not ASCII matches
 * none, and is never bound as text that is not UTF-8 (an error of the
 * statement, not of its item). */
static const char *token_text(const char *token)
{
    if (!token)
        return NULL;
    for (const unsigned char *c = (const unsigned char *)token; *c; c++)
        if (*c >= 0x80)
            return "";
    return token;
}

void bitt__pg_held_params(bitt_pg_params *p, const char *topic, uint64_t id, const char *token)
{
    bitt__pg_p_i64(p, (int64_t)id);
    bitt__pg_p_text(p, topic);
    bitt__pg_p_text(p, token_text(token));
}

/* BITT_ETOKEN naming why the delivery (id, token) is not held. */
static int stale(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                 const char *token)
{
    bitt_pg_params p = {0};
    bitt__pg_held_params(&p, topic, id, token);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    int status = bitt__pg_run1(be, PG_Q_WHY, sql_why, &p, &res, "queue (token check)");
    if (status)
        return status;
    status = bitt__pg_token_fail(topic, id, res);
    PQclear(res);
    return status;
}

/* Runs [sweep, statement, NOTIFY when notify]; *changed gets the rows the
 * statement changed. */
static int sweep_and(bitt_backend *be, const bitt_time *t, const char *topic, bitt_pg_id id,
                     const char *sql, bitt_pg_params *p, int notify, uint64_t *changed,
                     PGresult **res, const char *what)
{
    bitt_pg_params sp[BITT_PG_SWEEP_MAX], np = {0};
    bitt_pg_step steps[BITT_PG_SWEEP_MAX + 2];
    int n = bitt__pg_sweep_steps(be, topic, NULL, t, steps, sp);
    bitt__pg_notify_params(be, &np);
    steps[n] = (bitt_pg_step){id, sql, p, NULL};
    steps[n + 1] = (bitt_pg_step){PG_NOTIFY, bitt__pg_notify_sql, &np, NULL};
    int status = bitt__pg_run(be, steps, n + 1 + !!notify, what);
    if (status)
        return status;
    if (changed)
        *changed = bitt__pg_changed(steps[n].res);
    if (res) {
        *res = steps[n].res;
        steps[n].res = NULL;
    }
    bitt__pg_clear(steps, n + 1 + !!notify);
    return BITT_OK;
}

void bitt__pg_delivery_step(const bitt_pg_delivery *d, const bitt_backoff *backoff,
                            const bitt_time *t, bitt_pg_step *step, bitt_pg_params *p)
{
    memset(p, 0, sizeof *p);
    bitt__pg_held_params(p, d->topic, d->id, d->token);
    *step = (bitt_pg_step){PG_Q_ACK, sql_ack, p, NULL};
    switch (d->type) {
    case BITT_OP_QUEUE_ACK:
        if (!d->keep)
            break;
        if (d->result)
            bitt__pg_p_bytes(p, d->result, d->result_len);
        else
            bitt__pg_p_null(p);
        bitt__pg_p_i32(p, d->result ? d->result_kind : 0);
        *step = (bitt_pg_step){PG_Q_FINISH, sql_finish, p, NULL};
        break;
    case BITT_OP_QUEUE_NACK:
        bitt__pg_p_text(p, d->error);
        /* The token names this delivery: while it matches, attempts cannot
         * have moved, so the decision holds when the update runs. */
        if (d->attempts >= d->max_attempts) {
            *step = (bitt_pg_step){PG_Q_BURY, sql_bury, p, NULL};
        } else {
            int64_t delay = d->ms < 0 ? bitt__backoff_delay(backoff, (uint32_t)d->attempts) : d->ms;
            bitt__pg_p_i64(p, delay);
            *step = (bitt_pg_step){PG_Q_RETRY, sql_retry, p, NULL};
        }
        break;
    case BITT_OP_QUEUE_SNOOZE:
        bitt__pg_p_i64(p, d->ms);
        *step = (bitt_pg_step){PG_Q_SNOOZE, sql_snooze, p, NULL};
        break;
    case BITT_OP_QUEUE_EXTEND:
        bitt__pg_p_i64(p, d->ms);
        *step = (bitt_pg_step){PG_Q_EXTEND, sql_extend, p, NULL};
        break;
    default: break;
    }
    bitt__pg_p_now(p, t);
}

int bitt__pg_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       const char *token)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_delivery d = {.type = BITT_OP_QUEUE_ACK,
                          .topic = topic,
                          .id = id,
                          .token = token,
                          .keep = be->done_retention_ms > 0};
    bitt_pg_step step;
    bitt_pg_params p;
    bitt__pg_delivery_step(&d, NULL, t, &step, &p);
    uint64_t changed = 0;
    status = sweep_and(be, t, topic, step.id, step.sql, &p, 0, &changed, NULL, "ack");
    if (!status && !changed)
        status = stale(be, t, topic, id, token);
    return status;
}

/* Every live delivery of the batch in one statement: the rows deleted (or,
 * with done retention, kept done without a result) come back as (id,
 * token) and are matched to the items in order, so a repeated item finds
 * its row already taken. */
#define ACK_MANY_WHERE                                                                             \
    "WHERE q.id = a.id AND q.topic = $3::text AND q.state = 1 AND q.token = a.token "              \
    "AND q.due_at > " PG_NOW_4 " RETURNING q.id, a.token"
static const char sql_ack_many[] =
    "DELETE FROM @queue q USING unnest($1::int8[], $2::text[]) AS a(id, token) " ACK_MANY_WHERE;
static const char sql_finish_many[] =
    "UPDATE @queue q SET state = 3, done_at = " PG_NOW_4 ", token = NULL, dedup_key = NULL, "
    "result = NULL, result_kind = 0 FROM unnest($1::int8[], $2::text[]) AS a(id, "
    "token) " ACK_MANY_WHERE;

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
        tok[i] = token_text(tokens[i]);
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
        int keep = be->done_retention_ms > 0;
        status = sweep_and(be, t, topic, keep ? PG_Q_FINISH_MANY : PG_Q_ACK_MANY,
                           keep ? sql_finish_many : sql_ack_many, &p, 0, NULL, &res, "ack_many");
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
    bitt__pg_held_params(&p, topic, id, token);
    bitt__pg_p_now(&p, t);
    PGresult *res = NULL;
    status = sweep_and(be, t, topic, PG_Q_HELD, sql_held, &p, 0, NULL, &res, "nack");
    if (status)
        return status;
    int held = PQntuples(res) > 0;
    bitt_pg_delivery d = {.type = BITT_OP_QUEUE_NACK,
                          .topic = topic,
                          .id = id,
                          .token = token,
                          .error = error,
                          .ms = delay_ms,
                          .attempts = held ? (uint64_t)bitt__pg_i64(res, 0, 0) : 0,
                          .max_attempts = held ? (uint64_t)bitt__pg_i64(res, 0, 1) : 0};
    PQclear(res);
    if (!held)
        return stale(be, t, topic, id, token);

    bitt_pg_params q, np = {0};
    bitt__pg_notify_params(be, &np);
    bitt_pg_step steps[2] = {{0}, {PG_NOTIFY, bitt__pg_notify_sql, &np, NULL}};
    bitt__pg_delivery_step(&d, backoff, t, &steps[0], &q);
    status = bitt__pg_run(be, steps, 2, "nack");
    uint64_t changed = status ? 0 : bitt__pg_changed(steps[0].res);
    bitt__pg_clear(steps, 2);
    if (!status && !changed)
        status = stale(be, t, topic, id, token);
    return status;
}

/* extend or snooze: one live-lease update at now + ms. A message handed
 * back now (ms 0) wakes the waiters. */
static int move(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                const char *token, int64_t ms, int type)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_delivery d = {.type = type, .topic = topic, .id = id, .token = token, .ms = ms};
    bitt_pg_step step;
    bitt_pg_params p;
    bitt__pg_delivery_step(&d, NULL, t, &step, &p);
    const char *what = type == BITT_OP_QUEUE_SNOOZE ? "snooze" : "extend";
    uint64_t changed = 0;
    status = sweep_and(be, t, topic, step.id, step.sql, &p, ms == 0, &changed, NULL, what);
    if (!status && !changed)
        status = stale(be, t, topic, id, token);
    return status;
}

int bitt__pg_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t lease_ms)
{
    return move(be, t, topic, id, token, lease_ms, BITT_OP_QUEUE_EXTEND);
}

/* Pending again at now + delay_ms with the attempt given back: the row
 * sorts among the claimable ones by that due_at. */
int bitt__pg_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t delay_ms)
{
    return move(be, t, topic, id, token, delay_ms, BITT_OP_QUEUE_SNOOZE);
}
