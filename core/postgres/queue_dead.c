/*
 * core/postgres/queue_dead.c: dead letters (list, retry, delete) and
 * per-topic stats, each in one pipeline after the topic's sweep.
 */
#include "postgres/pg_internal.h"

static const char sql_dead_list[] =
    "SELECT id, payload, kind, NULL::text, attempts, max_attempts, last_error, created_at, "
    "due_at, failed_at, priority, topic FROM @queue WHERE topic = $1::text AND state = 2 AND id > "
    "$2::int8 "
    "ORDER BY id LIMIT $3::int8";
#define REVIVE(now)                                                                                \
    "UPDATE @queue SET state = 0, attempts = 0, last_error = NULL, failed_at = 0, token = NULL, "  \
    "due_at = " PG_NOW(now) " WHERE topic = $1::text AND state = 2"
static const char sql_retry_one[] = REVIVE(3) " AND id = $2::int8";
static const char sql_retry_all[] = REVIVE(2);
static const char sql_delete_one[] =
    "DELETE FROM @queue WHERE topic = $1::text AND state = 2 AND id = $2::int8";
static const char sql_delete_all[] = "DELETE FROM @queue WHERE topic = $1::text AND state = 2";
/* Claimable now (expired leases included), delayed, under a live lease,
 * dead, since when the oldest claimable one waits, and done. */
static const char sql_stats[] =
    "SELECT count(*) FILTER (WHERE state < 2 AND due_at <= " PG_NOW_2 "), "
    "count(*) FILTER (WHERE state = 0 AND due_at > " PG_NOW_2 "), "
    "count(*) FILTER (WHERE state = 1 AND due_at > " PG_NOW_2 "), "
    "count(*) FILTER (WHERE state = 2), "
    "COALESCE(min(due_at) FILTER (WHERE state < 2 AND due_at <= " PG_NOW_2 "), 0), "
    "count(*) FILTER (WHERE state = 3) "
    "FROM @queue WHERE topic = $1::text";

/* [sweep, statement (, NOTIFY)]; the statement's result in *res. */
static int after_sweep(bitt_backend *be, const bitt_time *t, const char *topic, bitt_pg_id id,
                       const char *sql, bitt_pg_params *p, int notify, PGresult **res,
                       const char *what)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params sp[BITT_PG_SWEEP_MAX], np = {0};
    bitt_pg_step steps[BITT_PG_SWEEP_MAX + 2];
    int n = bitt__pg_sweep_steps(be, topic, NULL, t, steps, sp);
    bitt__pg_notify_params(be, &np);
    steps[n] = (bitt_pg_step){id, sql, p, NULL};
    steps[n + 1] = (bitt_pg_step){PG_NOTIFY, bitt__pg_notify_sql, &np, NULL};
    status = bitt__pg_run(be, steps, n + 1 + !!notify, what);
    if (status)
        return status;
    *res = steps[n].res;
    steps[n].res = NULL;
    bitt__pg_clear(steps, n + 1 + !!notify);
    return BITT_OK;
}

int bitt__pg_queue_dead_list(bitt_backend *be, const bitt_time *t, const char *topic,
                             uint64_t after_id, size_t limit, bitt_messages *out)
{
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, topic);
    bitt__pg_p_i64(&p, after_id > INT64_MAX ? INT64_MAX : (int64_t)after_id);
    bitt__pg_p_count(&p, limit);
    PGresult *res;
    int status =
        after_sweep(be, t, topic, PG_Q_DEAD_LIST, sql_dead_list, &p, 0, &res, "dead letters");
    if (status)
        return status;
    status = bitt__pg_push_rows(res, out);
    PQclear(res);
    return status;
}

int bitt__pg_queue_dead_retry(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                              uint64_t *count)
{
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, topic);
    if (id)
        bitt__pg_p_i64(&p, (int64_t)id);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    int status = after_sweep(be, t, topic, id ? PG_Q_DEAD_RETRY_ONE : PG_Q_DEAD_RETRY_ALL,
                             id ? sql_retry_one : sql_retry_all, &p, 1, &res, "dead retry");
    if (status)
        return status;
    if (count)
        *count = bitt__pg_changed(res);
    PQclear(res);
    return BITT_OK;
}

int bitt__pg_queue_dead_delete(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                               uint64_t *count)
{
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, topic);
    if (id)
        bitt__pg_p_i64(&p, (int64_t)id);
    PGresult *res;
    int status = after_sweep(be, t, topic, id ? PG_Q_DEAD_DELETE_ONE : PG_Q_DEAD_DELETE_ALL,
                             id ? sql_delete_one : sql_delete_all, &p, 0, &res, "dead delete");
    if (status)
        return status;
    if (count)
        *count = bitt__pg_changed(res);
    PQclear(res);
    return BITT_OK;
}

int bitt__pg_queue_stats(bitt_backend *be, const bitt_time *t, const char *topic,
                         bitt_queue_stats *out)
{
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, topic);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    int status = after_sweep(be, t, topic, PG_Q_STATS, sql_stats, &p, 0, &res, "queue stats");
    if (status)
        return status;
    out->pending = (uint64_t)bitt__pg_i64(res, 0, 0);
    out->delayed = (uint64_t)bitt__pg_i64(res, 0, 1);
    out->processing = (uint64_t)bitt__pg_i64(res, 0, 2);
    out->dead = (uint64_t)bitt__pg_i64(res, 0, 3);
    out->oldest_pending_at = bitt__pg_i64(res, 0, 4);
    out->done = (uint64_t)bitt__pg_i64(res, 0, 5);
    PQclear(res);
    return BITT_OK;
}
