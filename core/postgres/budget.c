/*
 * core/postgres/budget.c: token buckets. One transaction: BEGIN, the
 * bucket's advisory lock (a bucket that does not exist yet has no row to
 * lock), its row FOR UPDATE and the time; the engine's arithmetic
 * (bitt__budget_apply) in C; then the new state and COMMIT when tokens
 * were taken, ROLLBACK when not. Two round trips.
 */
#include <string.h>

#include "postgres/pg_internal.h"

static const char sql_get[] =
    "SELECT level, updated_at, period_ms FROM @budget WHERE name = $1::text FOR UPDATE";
static const char sql_put[] =
    "INSERT INTO @budget (name, level, updated_at, period_ms) VALUES ($1::text, $2::int8, "
    "$3::int8, $4::int8) ON CONFLICT (name) DO UPDATE SET level = excluded.level, "
    "updated_at = excluded.updated_at, period_ms = excluded.period_ms";

int bitt__pg_budget_take(bitt_backend *be, const bitt_time *t, const char *name,
                         const bitt_budget_params *bp, int64_t n, int64_t *wait_ms)
{
    *wait_ms = 0;
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    int64_t key = bitt__pg_lock_key(be, 'b', name, strlen(name), NULL, 0);
    bitt_buf arr = BITT_BUF_INIT;
    bitt_pg_params lp, gp = {0};
    bitt_pg_step steps[4];
    steps[0] = (bitt_pg_step){PG_BEGIN, bitt__pg_begin_sql, NULL, NULL};
    status = bitt__pg_lock_step(&steps[1], &lp, &arr, &key, 1);
    if (status)
        return status;
    bitt__pg_p_text(&gp, name);
    steps[2] = (bitt_pg_step){PG_B_GET, sql_get, &gp, NULL};
    steps[3] = (bitt_pg_step){PG_CLOCK, bitt__pg_clock_sql, NULL, NULL};
    /* The server's clock, read after the lock, unless the clock is manual. */
    status = bitt__pg_run(be, steps, t->manual ? 3 : 4, "budget take");
    bitt_buf_dispose(&arr);
    if (status)
        return status;
    bitt_budget_state st = {0};
    const PGresult *res = steps[2].res;
    if (PQntuples(res) > 0) {
        st.exists = 1;
        st.level = bitt__pg_i64(res, 0, 0);
        st.updated_at = bitt__pg_i64(res, 0, 1);
        st.period_ms = bitt__pg_i64(res, 0, 2);
    }
    int64_t now = t->manual ? t->now : bitt__pg_i64(steps[3].res, 0, 0);
    bitt__pg_clear(steps, 4);

    status = bitt__budget_apply(&st, bp, now, n, wait_ms);
    if (status != BITT_OK) {
        bitt__pg_rollback(be); /* denied: nothing is stored */
        return status;
    }
    bitt_pg_params pp = {0};
    bitt__pg_p_text(&pp, name);
    bitt__pg_p_i64(&pp, st.level);
    bitt__pg_p_i64(&pp, st.updated_at);
    bitt__pg_p_i64(&pp, st.period_ms);
    bitt_pg_step put[2] = {{PG_B_PUT, sql_put, &pp, NULL},
                           {PG_COMMIT, bitt__pg_commit_sql, NULL, NULL}};
    status = bitt__pg_run(be, put, 2, "budget take");
    bitt__pg_clear(put, 2);
    return status;
}
