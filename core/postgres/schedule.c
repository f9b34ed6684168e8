/*
 * core/postgres/schedule.c: schedules (an interval or a cron expression,
 * with or without a topic) and the schedule advance of commits.
 *
 * The backend stores; the engine claims (core/schedule_claim.c). due is a
 * read: the earliest due schedule (next_run_at, key) among the prefix's,
 * with the now it was judged due at, which is the server's clock (one
 * value for the statement, PG_NOW) unless the engine's clock is manual.
 * The engine works out the next occurrence from that now and commits
 * BITT_OP_SCHEDULE_ADVANCE, guarded by the occurrence it read: the commit
 * locks a key of the schedule, reads its row FOR UPDATE and fails with
 * BITT_ECONFLICT when another claimer moved it first (commit.c), so each
 * occurrence is claimed once across processes.
 *
 * set is one upsert: a new schedule, or one whose interval or cron text
 * changed, starts at first_run_at; any other keeps its next_run_at, and
 * payload, kind, topic, max_attempts and priority are replaced.
 */
#include <string.h>

#include "postgres/pg_internal.h"

#define COLUMNS "key, interval_ms, payload, kind, next_run_at, cron, topic, max_attempts, priority"

static const char sql_set[] =
    "INSERT INTO @schedule AS s (" COLUMNS ") VALUES ($1::text, $2::int8, $3::bytea, $4::int4, "
    "$5::int8, $6::text, $7::text, $8::int8, $9::int4) ON CONFLICT (key) DO UPDATE SET "
    "payload = excluded.payload, kind = excluded.kind, topic = excluded.topic, "
    "max_attempts = excluded.max_attempts, priority = excluded.priority, "
    "next_run_at = CASE WHEN s.interval_ms = excluded.interval_ms "
    "AND s.cron IS NOT DISTINCT FROM excluded.cron THEN s.next_run_at "
    "ELSE excluded.next_run_at END, interval_ms = excluded.interval_ms, cron = excluded.cron";
static const char sql_due[] =
    "SELECT " COLUMNS ", " PG_NOW_2 " FROM @schedule WHERE next_run_at <= " PG_NOW_2
    " AND starts_with(key, $1::text) ORDER BY next_run_at, key LIMIT 1";
static const char sql_get[] = "SELECT " COLUMNS " FROM @schedule WHERE key = $1::text";
static const char sql_list[] = "SELECT " COLUMNS " FROM @schedule ORDER BY key";
static const char sql_delete[] = "DELETE FROM @schedule WHERE key = $1::text";
static const char sql_at[] = "SELECT next_run_at FROM @schedule WHERE key = $1::text FOR UPDATE";
static const char sql_advance[] =
    "UPDATE @schedule SET next_run_at = $2::int8 WHERE key = $1::text";

/* A schedule from row r (columns as COLUMNS, then the now it was judged due
 * at when with_occurrence); NULL on out of memory. */
static bitt_schedule *row_schedule(const PGresult *res, int r, int with_occurrence)
{
    bitt_schedule_def def = {.key = bitt__pg_text(res, r, 0),
                             .interval_ms = bitt__pg_i64(res, r, 1),
                             .kind = (int)bitt__pg_i64(res, r, 3),
                             .cron = bitt__pg_text(res, r, 5),
                             .topic = bitt__pg_text(res, r, 6),
                             .max_attempts = (uint32_t)bitt__pg_i64(res, r, 7),
                             .priority = (int32_t)bitt__pg_i64(res, r, 8)};
    def.payload = bitt__pg_bytes(res, r, 2, &def.payload_len);
    return bitt__schedule_from_def(&def, bitt__pg_i64(res, r, 4),
                                   with_occurrence ? bitt__pg_i64(res, r, 9) : 0);
}

static int run(bitt_backend *be, bitt_pg_id id, const char *sql, bitt_pg_params *p, PGresult **res,
               const char *what)
{
    int status = bitt__pg_schema(be);
    return status ? status : bitt__pg_run1(be, id, sql, p, res, what);
}

/* The first row of res as *out: BITT_OK, BITT_NOTFOUND or BITT_ENOMEM. */
static int one(PGresult *res, int with_occurrence, bitt_schedule **out)
{
    int status = BITT_NOTFOUND;
    if (PQntuples(res) > 0) {
        *out = row_schedule(res, 0, with_occurrence);
        status = *out ? BITT_OK : BITT_ENOMEM;
    }
    PQclear(res);
    return status;
}

int bitt__pg_schedule_set(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                          int64_t first_run_at)
{
    (void)t;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, def->key);
    bitt__pg_p_i64(&p, def->cron ? 0 : def->interval_ms);
    bitt__pg_p_bytes(&p, def->payload, def->payload_len);
    bitt__pg_p_i32(&p, def->kind);
    bitt__pg_p_i64(&p, first_run_at);
    bitt__pg_p_text(&p, def->cron);
    bitt__pg_p_text(&p, def->topic);
    bitt__pg_p_i64(&p, def->max_attempts);
    bitt__pg_p_i32(&p, def->priority);
    return run(be, PG_S_SET, sql_set, &p, NULL, "schedule set");
}

int bitt__pg_schedule_due(bitt_backend *be, const bitt_time *t, const char *prefix,
                          bitt_schedule **out)
{
    *out = NULL;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, prefix ? prefix : "");
    bitt__pg_p_now(&p, t);
    PGresult *res;
    int status = run(be, PG_S_DUE, sql_due, &p, &res, "schedule due");
    return status ? status : one(res, 1, out);
}

int bitt__pg_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                          bitt_schedule **out)
{
    (void)t;
    *out = NULL;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, key);
    PGresult *res;
    int status = run(be, PG_S_GET, sql_get, &p, &res, "schedule get");
    return status ? status : one(res, 0, out);
}

int bitt__pg_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out)
{
    (void)t;
    PGresult *res;
    int status = run(be, PG_S_LIST, sql_list, NULL, &res, "schedule list");
    if (status)
        return status;
    for (int r = 0; !status && r < PQntuples(res); r++) {
        bitt_schedule *s = row_schedule(res, r, 0);
        status = s ? bitt__schedule_array_push(out, s) : BITT_ENOMEM;
    }
    PQclear(res);
    return status;
}

int bitt__pg_schedule_delete(bitt_backend *be, const bitt_time *t, const char *key)
{
    (void)t;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, key);
    PGresult *res;
    int status = run(be, PG_S_DELETE, sql_delete, &p, &res, "schedule delete");
    if (status)
        return status;
    status = bitt__pg_changed(res) ? BITT_OK : BITT_NOTFOUND;
    PQclear(res);
    return status;
}

/* ---- the advance of a commit ------------------------------------------------- */

int64_t bitt__pg_schedule_lock_key(const bitt_backend *be, const bitt_op *op)
{
    return bitt__pg_lock_key(be, 'S', op->name, strlen(op->name), NULL, 0);
}

void bitt__pg_schedule_read(const bitt_op *op, bitt_pg_step *step, bitt_pg_params *p)
{
    memset(p, 0, sizeof *p);
    bitt__pg_p_text(p, op->name);
    *step = (bitt_pg_step){PG_S_AT, sql_at, p, NULL};
}

int bitt__pg_schedule_judge(const bitt_op *op, const PGresult *res)
{
    if (PQntuples(res) == 0)
        return bitt__fail(BITT_ECONFLICT, "schedule %s: claimed at %lld, but it was deleted",
                          op->name, (long long)op->delta);
    int64_t at = bitt__pg_i64(res, 0, 0);
    if (at != op->delta)
        return bitt__fail(BITT_ECONFLICT,
                          "schedule %s: claimed at %lld, but it is at %lld now (claimed or "
                          "changed by someone else)",
                          op->name, (long long)op->delta, (long long)at);
    return BITT_OK;
}

void bitt__pg_schedule_write(const bitt_op *op, bitt_pg_step *step, bitt_pg_params *p)
{
    memset(p, 0, sizeof *p);
    bitt__pg_p_text(p, op->name);
    bitt__pg_p_i64(p, op->delay_ms);
    *step = (bitt_pg_step){PG_S_ADVANCE, sql_advance, p, NULL};
}
