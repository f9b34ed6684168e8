/*
 * core/postgres/lease.c: leases as rows (name, owner, epoch, expires_at),
 * never session advisory locks (they break behind poolers and die with a
 * connection). A row is kept once created, so its epoch only grows: the
 * fencing token. Each call is one statement: acquire is an upsert whose
 * update only fires when the lease is free or expired, so two acquirers
 * serialize on the row and exactly one gets the new epoch. A commit's
 * FENCE reads the row FOR SHARE (commit.c), so the lease cannot move
 * before that commit ends.
 */
#include "postgres/pg_internal.h"

static const char sql_acquire[] =
    "INSERT INTO @lease AS l (name, owner, epoch, expires_at) VALUES ($1::text, $2::text, "
    "1, " PG_NOW_4_PLUS_3 ") ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, "
    "epoch = l.epoch + 1, expires_at = excluded.expires_at "
    "WHERE l.owner IS NULL OR l.expires_at <= " PG_NOW_4 " RETURNING epoch, expires_at";
/* Held: the owner and epoch match a live lease. */
#define HELD(now)                                                                                  \
    "name = $1::text AND owner = $2::text AND epoch = $3::int8 AND expires_at > " PG_NOW(now)
static const char sql_renew[] =
    "UPDATE @lease SET expires_at = " PG_NOW_5_PLUS_4 " WHERE " HELD(5) " RETURNING expires_at";
static const char sql_release[] = "UPDATE @lease SET owner = NULL, expires_at = 0 WHERE " HELD(4);
static const char sql_get[] = "SELECT owner, epoch, expires_at FROM @lease WHERE name = $1::text "
                              "AND owner IS NOT NULL AND expires_at > " PG_NOW_2;

int bitt__pg_lease_lost(const char *name, const char *owner, uint64_t epoch)
{
    return bitt__fail(BITT_ELEASELOST, "lease '%s' is not held by '%s' at epoch %llu", name,
                      owner ? owner : "", (unsigned long long)epoch);
}

int bitt__pg_lease_acquire(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, int64_t ttl_ms, uint64_t *epoch, int64_t *expires_at)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, name);
    bitt__pg_p_text(&p, owner ? owner : "");
    bitt__pg_p_i64(&p, ttl_ms);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    status = bitt__pg_run1(be, PG_L_ACQUIRE, sql_acquire, &p, &res, "lease acquire");
    if (status)
        return status;
    if (PQntuples(res) == 0) {
        status = BITT_EXISTS;
    } else {
        if (epoch)
            *epoch = (uint64_t)bitt__pg_i64(res, 0, 0);
        if (expires_at)
            *expires_at = bitt__pg_i64(res, 0, 1);
    }
    PQclear(res);
    return status;
}

static void held_params(bitt_pg_params *p, const char *name, const char *owner, uint64_t epoch)
{
    bitt__pg_p_text(p, name);
    bitt__pg_p_text(p, owner ? owner : "");
    bitt__pg_p_i64(p, epoch > INT64_MAX ? -1 : (int64_t)epoch);
}

int bitt__pg_lease_renew(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                         uint64_t epoch, int64_t ttl_ms, int64_t *expires_at)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    held_params(&p, name, owner, epoch);
    bitt__pg_p_i64(&p, ttl_ms);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    status = bitt__pg_run1(be, PG_L_RENEW, sql_renew, &p, &res, "lease renew");
    if (status)
        return status;
    if (PQntuples(res) == 0)
        status = bitt__pg_lease_lost(name, owner, epoch);
    else if (expires_at)
        *expires_at = bitt__pg_i64(res, 0, 0);
    PQclear(res);
    return status;
}

int bitt__pg_lease_release(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, uint64_t epoch)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    held_params(&p, name, owner, epoch);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    status = bitt__pg_run1(be, PG_L_RELEASE, sql_release, &p, &res, "lease release");
    if (status)
        return status;
    if (bitt__pg_changed(res) == 0)
        status = bitt__pg_lease_lost(name, owner, epoch);
    PQclear(res);
    return status;
}

int bitt__pg_lease_get(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                       uint64_t *epoch, int64_t *expires_at)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, name);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    status = bitt__pg_run1(be, PG_L_GET, sql_get, &p, &res, "lease get");
    if (status)
        return status;
    if (owner) {
        owner->len = 0;
        if (owner->ptr)
            owner->ptr[0] = '\0';
    }
    if (PQntuples(res) == 0) {
        status = BITT_NOTFOUND;
    } else {
        size_t len;
        const uint8_t *who = bitt__pg_bytes(res, 0, 0, &len);
        if (owner)
            status = bitt__buf_put(owner, who, len);
        if (epoch)
            *epoch = (uint64_t)bitt__pg_i64(res, 0, 1);
        if (expires_at)
            *expires_at = bitt__pg_i64(res, 0, 2);
    }
    PQclear(res);
    return status;
}
