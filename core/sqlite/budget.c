/*
 * core/sqlite/budget.c: token buckets shared by every process on the file.
 * One BEGIN IMMEDIATE transaction loads the bucket, applies the engine's
 * arithmetic (bitt__budget_apply) and stores the result when tokens were
 * taken, so concurrent takes never spend the same tokens twice.
 */
#include "sqlite_internal.h"

#define B_GET_SQL "SELECT level, updated_at, period_ms FROM \"{p}budget\" WHERE name = ?1"
#define B_PUT_SQL                                                                                  \
    "INSERT INTO \"{p}budget\" (name, level, updated_at, period_ms) VALUES (?1, ?2, ?3, ?4) "      \
    "ON CONFLICT (name) DO UPDATE SET level = excluded.level, "                                    \
    "updated_at = excluded.updated_at, period_ms = excluded.period_ms"

static int b_load(bitt_backend *be, const char *name, bitt_budget_state *s)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_B_GET, B_GET_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, name);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    s->exists = rc == SQLITE_ROW;
    if (s->exists) {
        s->level = sqlite3_column_int64(st, 0);
        s->updated_at = sqlite3_column_int64(st, 1);
        s->period_ms = sqlite3_column_int64(st, 2);
    } else if (rc != SQLITE_DONE) {
        status = bitt__sq_fail(be, rc, "budget take (load)");
    }
    sqlite3_reset(st);
    return status;
}

static int b_store(bitt_backend *be, const char *name, const bitt_budget_state *s)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_B_PUT, B_PUT_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, name);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, s->level);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, s->updated_at);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, s->period_ms);
    return bitt__sq_run(be, st, rc, "budget take (store)", NULL);
}

int bitt__sq_budget_take(bitt_backend *be, const bitt_time *t, const char *name,
                         const bitt_budget_params *p, int64_t n, int64_t *wait_ms)
{
    bitt_budget_state s = {0, 0, 0, 0};
    *wait_ms = 0;
    int status = bitt__sq_write(be, "budget take (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = b_load(be, name, &s);
    if (status == BITT_OK)
        status = bitt__budget_apply(&s, p, t->now, n, wait_ms);
    if (status == BITT_OK) /* a denial takes nothing: the stored state stays */
        status = b_store(be, name, &s);
    return bitt__sq_end(be, status, "budget take (COMMIT)");
}
