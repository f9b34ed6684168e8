/*
 * core/sqlite/lease.c: leases (named locks with an owner, an expiry and an
 * epoch) and the fence check of atomic commits.
 *
 * A row is live iff owner IS NOT NULL and now < expires_at. Acquisition is
 * one upsert that only takes a free or expired row and increments its
 * epoch, inside BEGIN IMMEDIATE: two processes can never both win, and
 * epochs never repeat. Release clears the owner and keeps the epoch, so
 * the next holder's epoch is still higher than every earlier one.
 */
#include <inttypes.h>
#include <string.h>

#include "sqlite_internal.h"

/* ?1 name, ?2 owner, ?3 expires_at, ?4 now */
#define L_ACQUIRE_SQL                                                                              \
    "INSERT INTO \"{p}lease\" (name, owner, epoch, expires_at) VALUES (?1, ?2, 1, ?3) "            \
    "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, epoch = epoch + 1, "                 \
    "expires_at = excluded.expires_at WHERE owner IS NULL OR expires_at <= ?4 "                    \
    "RETURNING epoch, expires_at"
/* ?1 name, ?2 owner, ?3 epoch, ?4 now: the live lease of that holder */
#define L_HELD "WHERE name = ?1 AND owner = ?2 AND epoch = ?3 AND expires_at > ?4"
#define L_RENEW_SQL "UPDATE \"{p}lease\" SET expires_at = ?5 " L_HELD
#define L_RELEASE_SQL "UPDATE \"{p}lease\" SET owner = NULL, expires_at = 0 " L_HELD
#define L_GET_SQL "SELECT owner, epoch, expires_at FROM \"{p}lease\" WHERE name = ?1"

int bitt__sq_lease_acquire(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, int64_t ttl_ms, uint64_t *epoch, int64_t *expires_at)
{
    sqlite3_stmt *st;
    int status = bitt__sq_write(be, "lease acquire (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_L_ACQUIRE, L_ACQUIRE_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, name);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_str(st, 2, owner);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 3, bitt__time_add(t->now, ttl_ms));
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 4, t->now);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *epoch = (uint64_t)sqlite3_column_int64(st, 0);
            *expires_at = sqlite3_column_int64(st, 1);
            rc = sqlite3_step(st); /* runs the upsert to its end */
        } else if (rc == SQLITE_DONE) {
            status = BITT_EXISTS; /* held by a live acquisition */
        }
        if (rc != SQLITE_DONE)
            status = bitt__sq_fail(be, rc, "lease acquire");
        sqlite3_reset(st);
    }
    return bitt__sq_end(be, status, "lease acquire (COMMIT)");
}

/* Binds ?1..?4 of an L_HELD statement. */
static int l_bind_held(sqlite3_stmt *st, const char *name, const char *owner, uint64_t epoch,
                       int64_t now)
{
    int rc = bitt__sq_bind_str(st, 1, name);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_str(st, 2, owner);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, epoch > INT64_MAX ? -1 : (int64_t)epoch);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, now);
    return rc;
}

static int l_lost(const char *op, const char *name, const char *owner, uint64_t epoch)
{
    return bitt__fail(BITT_ELEASELOST,
                      "lease %s: '%s' is not held by '%s' at epoch %" PRIu64
                      " (it expired, was released, or was acquired again)",
                      op, name, owner, epoch);
}

int bitt__sq_lease_renew(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                         uint64_t epoch, int64_t ttl_ms, int64_t *expires_at)
{
    sqlite3_stmt *st;
    uint64_t changed = 0;
    int64_t until = bitt__time_add(t->now, ttl_ms);
    int status = bitt__sq_write(be, "lease renew (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_L_RENEW, L_RENEW_SQL, &st);
    if (status == BITT_OK) {
        int rc = l_bind_held(st, name, owner, epoch, t->now);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 5, until);
        status = bitt__sq_run(be, st, rc, "lease renew", &changed);
    }
    if (status == BITT_OK && changed == 0)
        status = l_lost("renew", name, owner, epoch);
    status = bitt__sq_end(be, status, "lease renew (COMMIT)");
    if (status == BITT_OK)
        *expires_at = until;
    return status;
}

int bitt__sq_lease_release(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, uint64_t epoch)
{
    sqlite3_stmt *st;
    uint64_t changed = 0;
    int status = bitt__sq_write(be, "lease release (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_L_RELEASE, L_RELEASE_SQL, &st);
    if (status == BITT_OK)
        status = bitt__sq_run(be, st, l_bind_held(st, name, owner, epoch, t->now), "lease release",
                              &changed);
    if (status == BITT_OK && changed == 0)
        status = l_lost("release", name, owner, epoch);
    return bitt__sq_end(be, status, "lease release (COMMIT)");
}

/* Reads lease name: *found = 0 when there is no row. The strings are valid
 * until the statement resets, so the caller copies what it needs at once:
 * this hands back the statement, positioned on the row, to reset. */
static int l_read(bitt_backend *be, const char *name, sqlite3_stmt **row, const char *what)
{
    sqlite3_stmt *st;
    *row = NULL;
    int status = bitt__sq_stmt(be, SQ_L_GET, L_GET_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, name);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *row = st;
        return BITT_OK;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BITT_OK : bitt__sq_fail(be, rc, what);
}

/* Whether the row holds a live lease at now. */
static int l_live(sqlite3_stmt *row, int64_t now)
{
    return sqlite3_column_type(row, 0) != SQLITE_NULL && now < sqlite3_column_int64(row, 2);
}

int bitt__sq_lease_get(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                       uint64_t *epoch, int64_t *expires_at)
{
    if (owner) { /* reset first, NUL-terminated as every bitt_buf */
        owner->len = 0;
        if (owner->ptr)
            owner->ptr[0] = '\0';
    }
    sqlite3_stmt *row;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK) /* one statement: one snapshot */
        status = l_read(be, name, &row, "lease get");
    if (status != BITT_OK)
        return status;
    if (!row || !l_live(row, t->now)) {
        if (row)
            sqlite3_reset(row);
        return BITT_NOTFOUND;
    }
    if (owner) {
        const char *text = (const char *)sqlite3_column_text(row, 0);
        status = bitt__buf_put(owner, text, (size_t)sqlite3_column_bytes(row, 0));
        if (status != BITT_OK)
            status = bitt__fail(status, "lease get: out of memory for the owner");
    }
    if (epoch)
        *epoch = (uint64_t)sqlite3_column_int64(row, 1);
    if (expires_at)
        *expires_at = sqlite3_column_int64(row, 2);
    sqlite3_reset(row);
    return status;
}

int bitt__sq_lease_fence(bitt_backend *be, int64_t now, const bitt_op *op, size_t i)
{
    sqlite3_stmt *row;
    int status = l_read(be, op->name, &row, "commit (fence)");
    if (status != BITT_OK)
        return status;
    const char *why = NULL;
    if (!row || sqlite3_column_type(row, 0) == SQLITE_NULL)
        why = "is not held by anyone";
    else if (strcmp((const char *)sqlite3_column_text(row, 0), op->owner) != 0)
        why = "is held by another owner";
    else if ((uint64_t)sqlite3_column_int64(row, 1) != op->version)
        why = "was acquired again since (another epoch)";
    else if (!l_live(row, now))
        why = "has expired";
    if (row)
        sqlite3_reset(row);
    if (!why)
        return BITT_OK;
    return bitt__fail(BITT_ELEASELOST,
                      "commit: fence %zu failed: lease '%s' %s, so '%s' at epoch %" PRIu64
                      " may not write",
                      i, op->name, why, op->owner, op->version);
}
