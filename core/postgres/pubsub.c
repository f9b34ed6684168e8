/*
 * core/postgres/pubsub.c: publish/subscribe over a log table. A publish is
 * one pipeline in one transaction: the store's pubsub lock, the pruning of
 * entries older than the retention, the insert (id from sequence
 * pubsub_id) and a NOTIFY that wakes every waiting subscriber at once.
 * The lock makes ids commit in id order, so a subscriber that has seen id
 * N can never later find a smaller id appear (it would miss it).
 */
#include "postgres/pg_internal.h"

static const char sql_prune[] = "DELETE FROM @pubsub WHERE created_at <= " PG_NOW_1 " - $2::int8";
static const char sql_insert[] =
    "INSERT INTO @pubsub (id, channel, payload, created_at) "
    "VALUES (nextval('@pubsub_id'), $1::text, $2::bytea, " PG_NOW_3 ")";
static const char sql_head[] = "SELECT COALESCE(max(id), 0) FROM @pubsub";
static const char sql_fetch[] = "SELECT id, payload, created_at FROM @pubsub "
                                "WHERE channel = $1::text AND id > $2::int8 ORDER BY id "
                                "LIMIT $3::int8";

int bitt__pg_pubsub_publish(bitt_backend *be, const bitt_time *t, const char *channel,
                            const uint8_t *data, size_t len, int64_t retention_ms)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    int64_t key = bitt__pg_lock_key(be, 'p', "pubsub", 6, NULL, 0);
    bitt_buf arr = BITT_BUF_INIT;
    bitt_pg_params lp, pp = {0}, ip = {0}, np = {0};
    bitt_pg_step steps[4];
    status = bitt__pg_lock_step(&steps[0], &lp, &arr, &key, 1);
    if (status)
        return status;
    bitt__pg_p_now(&pp, t);
    bitt__pg_p_i64(&pp, retention_ms);
    bitt__pg_p_text(&ip, channel);
    bitt__pg_p_bytes(&ip, data, len);
    bitt__pg_p_now(&ip, t);
    bitt__pg_notify_params(be, &np);
    steps[1] = (bitt_pg_step){PG_P_PRUNE, sql_prune, &pp, NULL};
    steps[2] = (bitt_pg_step){PG_P_INSERT, sql_insert, &ip, NULL};
    steps[3] = (bitt_pg_step){PG_NOTIFY, bitt__pg_notify_sql, &np, NULL};
    status = bitt__pg_run(be, steps, 4, "publish");
    bitt__pg_clear(steps, 4);
    bitt_buf_dispose(&arr);
    return status;
}

int bitt__pg_pubsub_head(bitt_backend *be, const bitt_time *t, uint64_t *last_id)
{
    (void)t;
    *last_id = 0;
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    PGresult *res;
    status = bitt__pg_run1(be, PG_P_HEAD, sql_head, NULL, &res, "subscribe");
    if (status)
        return status;
    *last_id = (uint64_t)bitt__pg_i64(res, 0, 0);
    PQclear(res);
    return BITT_OK;
}

int bitt__pg_pubsub_fetch(bitt_backend *be, const bitt_time *t, const char *channel,
                          uint64_t after_id, size_t limit, bitt_messages *out)
{
    (void)t;
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, channel);
    bitt__pg_p_i64(&p, after_id > INT64_MAX ? INT64_MAX : (int64_t)after_id);
    bitt__pg_p_count(&p, limit);
    PGresult *res;
    status = bitt__pg_run1(be, PG_P_FETCH, sql_fetch, &p, &res, "subscription fetch");
    if (status)
        return status;
    size_t base = out->count;
    for (int r = 0; !status && r < PQntuples(res); r++) {
        size_t n;
        const uint8_t *payload = bitt__pg_bytes(res, r, 1, &n);
        bitt_message f = {
            .id = (uint64_t)bitt__pg_i64(res, r, 0),
            .topic = (char *)channel,
            .payload = (uint8_t *)payload,
            .payload_len = n,
            .kind = BITT_KIND_BYTES,
            .created_at = bitt__pg_i64(res, r, 2),
        };
        status = bitt__pg_push_message(out, &f);
    }
    if (status)
        bitt__pg_messages_truncate(out, base);
    PQclear(res);
    return status;
}
