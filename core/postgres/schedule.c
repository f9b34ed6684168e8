/*
 * core/postgres/schedule.c: interval schedules. A claim is one statement:
 * the earliest due schedule (next_run_at, key) among the prefix's, locked
 * FOR UPDATE SKIP LOCKED, advanced past now in the same statement, so each
 * occurrence is claimed by exactly one process; another claimer skips the
 * locked row, or sees the new next_run_at once it commits. The advance is
 * bitt__schedule_advance in SQL: next + (floor((now - next) / interval) +
 * 1) * interval, saturating at INT64_MAX (numeric arithmetic, no overflow).
 */
#include "postgres/pg_internal.h"

#define COLUMNS "key, interval_ms, payload, kind, next_run_at"

static const char sql_upsert[] =
    "INSERT INTO @schedule AS s (" COLUMNS ") VALUES ($1::text, $2::int8, $3::bytea, $4::int4, "
    "$5::int8) ON CONFLICT (key) DO UPDATE SET payload = excluded.payload, kind = excluded.kind, "
    "next_run_at = CASE WHEN s.interval_ms = excluded.interval_ms THEN s.next_run_at "
    "ELSE excluded.next_run_at END, interval_ms = excluded.interval_ms";
static const char sql_claim[] =
    "WITH pick AS (SELECT key, next_run_at FROM @schedule "
    "WHERE next_run_at <= " PG_NOW_2 " AND starts_with(key, $1::text) "
    "ORDER BY next_run_at, key LIMIT 1 FOR UPDATE SKIP LOCKED) "
    "UPDATE @schedule s SET next_run_at = LEAST(pick.next_run_at::numeric + "
    "(div((" PG_NOW_2 ")::numeric - pick.next_run_at, s.interval_ms) + 1) * s.interval_ms, "
    "9223372036854775807)::int8 FROM pick WHERE s.key = pick.key "
    "RETURNING s.key, s.interval_ms, s.payload, s.kind, s.next_run_at, pick.next_run_at";
static const char sql_get[] = "SELECT " COLUMNS " FROM @schedule WHERE key = $1::text";
static const char sql_list[] = "SELECT " COLUMNS " FROM @schedule ORDER BY key";
static const char sql_delete[] = "DELETE FROM @schedule WHERE key = $1::text";

/* A schedule from row r (columns as COLUMNS, then the occurrence when
 * with_occurrence); NULL on out of memory. */
static bitt_schedule *row_schedule(const PGresult *res, int r, int with_occurrence)
{
    size_t len;
    const uint8_t *payload = bitt__pg_bytes(res, r, 2, &len);
    return bitt__schedule_new(bitt__pg_text(res, r, 0), bitt__pg_i64(res, r, 1), payload, len,
                              (int)bitt__pg_i64(res, r, 3), bitt__pg_i64(res, r, 4),
                              with_occurrence ? bitt__pg_i64(res, r, 5) : 0);
}

static int run(bitt_backend *be, bitt_pg_id id, const char *sql, bitt_pg_params *p, PGresult **res,
               const char *what)
{
    int status = bitt__pg_schema(be);
    return status ? status : bitt__pg_run1(be, id, sql, p, res, what);
}

int bitt__pg_schedule_upsert(bitt_backend *be, const bitt_time *t, const char *key,
                             int64_t interval_ms, const uint8_t *payload, size_t len, int kind,
                             int64_t first_run_at)
{
    (void)t;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, key);
    bitt__pg_p_i64(&p, interval_ms);
    bitt__pg_p_bytes(&p, payload, len);
    bitt__pg_p_i32(&p, kind);
    bitt__pg_p_i64(&p, first_run_at);
    return run(be, PG_S_UPSERT, sql_upsert, &p, NULL, "schedule upsert");
}

int bitt__pg_schedule_claim(bitt_backend *be, const bitt_time *t, const char *prefix,
                            bitt_schedule **out)
{
    *out = NULL;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, prefix ? prefix : "");
    bitt__pg_p_now(&p, t);
    PGresult *res;
    int status = run(be, PG_S_CLAIM, sql_claim, &p, &res, "schedule claim");
    if (status)
        return status;
    if (PQntuples(res) == 0) {
        status = BITT_NOTFOUND;
    } else {
        *out = row_schedule(res, 0, 1);
        status = *out ? BITT_OK : BITT_ENOMEM;
    }
    PQclear(res);
    return status;
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
    if (status)
        return status;
    if (PQntuples(res) == 0) {
        status = BITT_NOTFOUND;
    } else {
        *out = row_schedule(res, 0, 0);
        status = *out ? BITT_OK : BITT_ENOMEM;
    }
    PQclear(res);
    return status;
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
