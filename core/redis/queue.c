/*
 * core/redis/queue.c: the queue on Redis. Each call is one script
 * (queue_lua.c, with the steps of lua_queue.c) that first dead-letters the
 * topic's expired last leases.
 *
 * A message is the hash P m:<id>; its topic's lex sets order it: P qr:<topic>
 * and one P qr<y>:<topic> per other priority y in use (pending and
 * processing, by pad(due_at) pad(id): the claim order within a priority,
 * with due_at the lease's end while processing), P qp:<topic> (processing),
 * P ql:<topic> (processing on the last attempt: what the sweep reads) and P
 * qx:<topic> (dead, by id). P qk:<topic> maps a dedup key to its live
 * holder. With queue_done_retention an ack keeps the message done, in P
 * qc:<topic> by (done_at, id); with queue_dead_retention the dead letters
 * are in P qa:<topic> by (failed_at, id) too: every call's sweep drops the
 * front of both while it is old enough (lua_queue.c's retire). Ack tokens are 24 random hex digits
 * of this call and 8 of the message's position in the batch: fresh for every delivery.
 */
#include <string.h>

#include "redis_internal.h"

static void topic_args(bitt_backend *be, bitt_rd_args *a, const bitt_time *t, const char *topic)
{
    bitt__rd_queue_args(be, a, t);
    bitt__rd_arg_str(a, topic);
}

/* One claim script over the topics (one, or several at once): priority
 * first, then (due_at, id) across all of them. */
int bitt__rd_queue_claim_topics(bitt_backend *be, const bitt_time *t, const char *const *topics,
                                size_t count, size_t limit, int64_t lease_ms, bitt_messages *out)
{
    if (!limit)
        return BITT_OK;
    char token[BITT_TOKEN_LEN + 1];
    bitt__token_new(token);
    bitt_rd_args a;
    bitt__rd_queue_args(be, &a, t);
    bitt__rd_arg_u64(&a, limit);
    bitt__rd_arg_i64(&a, bitt__time_add(t->now, lease_ms));
    bitt__rd_arg(&a, token, BITT_TOKEN_LEN - 8);
    for (size_t i = 0; i < count; i++)
        bitt__rd_arg_str(&a, topics[i]);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_Q_CLAIM, &a, limit, &r);
    if (rc)
        return rc;
    rc = bitt__rd_push_messages(r, 1, BITT_RD_QMSG_FIELDS, out, "queue claim");
    freeReplyObject(r);
    return rc;
}

int bitt__rd_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                         int64_t lease_ms, bitt_messages *out)
{
    return bitt__rd_queue_claim_topics(be, t, &topic, 1, limit, lease_ms, out);
}

int bitt__rd_queue_get(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       bitt_message **out)
{
    bitt_rd_args a;
    topic_args(be, &a, t, topic);
    bitt__rd_arg_u64(&a, id);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_Q_GET, &a, 1, &r);
    if (rc) { /* BITT_NOTFOUND: the reply holds nothing more */
        if (r)
            freeReplyObject(r);
        return rc;
    }
    bitt_messages *list = bitt__messages_new(1);
    rc = list ? bitt__rd_push_messages(r, 1, BITT_RD_QGET_FIELDS, list, "queue get")
              : bitt__fail(BITT_ENOMEM, "redis: out of memory for a queue message");
    freeReplyObject(r);
    if (!rc && list->count != 1)
        rc = bitt__fail(BITT_EBACKEND, "redis: queue get: the reply has an unexpected shape");
    if (!rc) {
        *out = list->items[0];
        list->count = 0;
    }
    bitt_messages_free(list);
    return rc;
}

/* Runs a delivery script (ack, nack, extend, snooze): a stale token is
 * BITT_ETOKEN with the script's message (why, in lua_queue.c's stale). */
static int delivery(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a)
{
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, id, a, 1, &r);
    if (r)
        freeReplyObject(r);
    return rc;
}

static void delivery_args(bitt_backend *be, bitt_rd_args *a, const bitt_time *t, const char *topic,
                          uint64_t id, const char *token)
{
    topic_args(be, a, t, topic);
    bitt__rd_arg_u64(a, id);
    bitt__rd_arg_str(a, token);
}

int bitt__rd_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       const char *token)
{
    bitt_rd_args a;
    delivery_args(be, &a, t, topic, id, token);
    return delivery(be, RS_Q_ACK, &a);
}

int bitt__rd_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                            const uint64_t *ids, const char *const *tokens, size_t count,
                            int *statuses)
{
    bitt_rd_args a;
    topic_args(be, &a, t, topic);
    for (size_t i = 0; i < count; i++) {
        bitt__rd_arg_u64(&a, ids[i]);
        bitt__rd_arg_str(&a, tokens[i]);
    }
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_Q_ACK_MANY, &a, count, &r);
    if (rc)
        return rc;
    const char *what = bitt__rd_scripts[RS_Q_ACK_MANY].name;
    rc = bitt__rd_elem_count(r, 1, count, what);
    for (size_t i = 0; !rc && i < count; i++) {
        int64_t done = 0;
        rc = bitt__rd_i64(r, i + 1, &done, what);
        if (!rc && done)
            statuses[i] = BITT_OK;
    }
    freeReplyObject(r);
    return rc;
}

/* The backoff travels with a nack: only the script knows the attempts. */
void bitt__rd_arg_backoff(bitt_rd_args *a, const bitt_backoff *b)
{
    if (b->exponential) {
        bitt__rd_arg_str(a, "e");
        bitt__rd_arg_i64(a, b->base);
        bitt__rd_arg_i64(a, b->cap);
    } else {
        bitt__rd_arg_str(a, "l");
        for (size_t i = 0; i < b->delay_count; i++)
            bitt__rd_arg_i64(a, b->delays[i]);
    }
}

int bitt__rd_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, const char *error, int64_t delay_ms,
                        const bitt_backoff *backoff)
{
    bitt_rd_args a;
    delivery_args(be, &a, t, topic, id, token);
    bitt__rd_arg_str(&a, error ? "1" : "0");
    bitt__rd_arg_str(&a, error ? error : "");
    bitt__rd_arg_i64(&a, delay_ms < 0 ? -1 : delay_ms);
    bitt__rd_arg_backoff(&a, backoff);
    return delivery(be, RS_Q_NACK, &a);
}

/* extend or snooze (script id): the delivery's due_at becomes now + ms; a
 * message claimable again now (ms 0) wakes the waiters. */
static int move(bitt_backend *be, bitt_rd_script_id id, const bitt_time *t, const char *topic,
                uint64_t msg_id, const char *token, int64_t ms)
{
    bitt_rd_args a;
    delivery_args(be, &a, t, topic, msg_id, token);
    bitt__rd_arg_i64(&a, bitt__time_add(t->now, ms));
    bitt__rd_arg_str(&a, ms == 0 ? "1" : "0");
    return delivery(be, id, &a);
}

int bitt__rd_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t lease_ms)
{
    return move(be, RS_Q_EXTEND, t, topic, id, token, lease_ms);
}

int bitt__rd_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t delay_ms)
{
    return move(be, RS_Q_SNOOZE, t, topic, id, token, delay_ms);
}

int bitt__rd_queue_stats(bitt_backend *be, const bitt_time *t, const char *topic,
                         bitt_queue_stats *out)
{
    bitt_rd_args a;
    topic_args(be, &a, t, topic);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_Q_STATS, &a, 1, &r);
    if (rc)
        return rc;
    int64_t v[6] = {0};
    rc = bitt__rd_elem_count(r, 1, 6, "queue stats");
    for (size_t i = 0; !rc && i < 6; i++)
        rc = bitt__rd_i64(r, 1 + i, &v[i], "queue stats");
    freeReplyObject(r);
    if (rc)
        return rc;
    out->pending = (uint64_t)v[0];
    out->delayed = (uint64_t)v[1];
    out->processing = (uint64_t)v[2];
    out->dead = (uint64_t)v[3];
    out->oldest_pending_at = v[4];
    out->done = (uint64_t)v[5];
    return BITT_OK;
}

int bitt__rd_queue_dead_list(bitt_backend *be, const bitt_time *t, const char *topic,
                             uint64_t after_id, size_t limit, bitt_messages *out)
{
    bitt_rd_args a;
    topic_args(be, &a, t, topic);
    bitt__rd_arg_u64(&a, after_id);
    bitt__rd_arg_u64(&a, limit);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_Q_DEAD_LIST, &a, limit, &r);
    if (rc)
        return rc;
    rc = bitt__rd_push_messages(r, 1, BITT_RD_QMSG_FIELDS, out, "queue dead list");
    freeReplyObject(r);
    return rc;
}

static int dead_op(bitt_backend *be, bitt_rd_script_id id, const bitt_time *t, const char *topic,
                   uint64_t msg_id, uint64_t *count)
{
    bitt_rd_args a;
    topic_args(be, &a, t, topic);
    bitt__rd_arg_u64(&a, msg_id);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, id, &a, 1, &r);
    if (rc)
        return rc;
    uint64_t n = 0;
    rc = bitt__rd_elem_count(r, 1, 1, bitt__rd_scripts[id].name);
    if (!rc)
        rc = bitt__rd_u64(r, 1, &n, bitt__rd_scripts[id].name);
    freeReplyObject(r);
    if (!rc && count)
        *count = n;
    return rc;
}

int bitt__rd_queue_dead_retry(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                              uint64_t *count)
{
    return dead_op(be, RS_Q_DEAD_RETRY, t, topic, id, count);
}

int bitt__rd_queue_dead_delete(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                               uint64_t *count)
{
    return dead_op(be, RS_Q_DEAD_DELETE, t, topic, id, count);
}
