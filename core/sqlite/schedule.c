/*
 * core/sqlite/schedule.c: interval schedules.
 *
 * A claim is one BEGIN IMMEDIATE transaction that picks the due schedule
 * with the smallest (next_run_at, key) through the index (next_run_at,
 * key) and moves its next run past now (bitt__schedule_advance): of any
 * number of processes claiming at once, one gets each occurrence. A key
 * prefix is a byte range on the key ([prefix, prefix with its last byte
 * incremented)), never a pattern.
 */
#include <string.h>

#include "sqlite_internal.h"

#define S_COLS "key, interval_ms, payload, kind, next_run_at"
#define S_UPSERT_SQL                                                                               \
    "INSERT INTO \"{p}schedule\" (key, interval_ms, payload, kind, next_run_at) "                  \
    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key) DO UPDATE SET "                                 \
    "payload = excluded.payload, kind = excluded.kind, interval_ms = excluded.interval_ms, "       \
    "next_run_at = CASE WHEN interval_ms = excluded.interval_ms THEN next_run_at "                 \
    "ELSE excluded.next_run_at END"
#define S_DUE_ALL_SQL                                                                              \
    "SELECT " S_COLS " FROM \"{p}schedule\" WHERE next_run_at <= ?1 "                              \
    "ORDER BY next_run_at, key LIMIT 1"
/* ?3 is TEXT, or an empty BLOB for "no upper bound": every TEXT sorts
 * before every BLOB. */
#define S_DUE_RANGE_SQL                                                                            \
    "SELECT " S_COLS " FROM \"{p}schedule\" WHERE next_run_at <= ?1 AND key >= ?2 AND key < ?3 "   \
    "ORDER BY next_run_at, key LIMIT 1"
#define S_ADVANCE_SQL "UPDATE \"{p}schedule\" SET next_run_at = ?2 WHERE key = ?1"
#define S_GET_SQL "SELECT " S_COLS " FROM \"{p}schedule\" WHERE key = ?1"
#define S_LIST_SQL "SELECT " S_COLS " FROM \"{p}schedule\" ORDER BY key"
#define S_DELETE_SQL "DELETE FROM \"{p}schedule\" WHERE key = ?1"

/* A schedule from the current row (columns S_COLS); NULL on out of memory. */
static bitt_schedule *s_row(sqlite3_stmt *st, int64_t next_run_at, int64_t occurrence)
{
    size_t len;
    const void *payload = bitt__sq_column_bytes(st, 2, &len);
    return bitt__schedule_new((const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
                              payload, len, sqlite3_column_int(st, 3), next_run_at, occurrence);
}

static int s_oom(void)
{
    return bitt__fail(BITT_ENOMEM, "sqlite: out of memory for a schedule");
}

int bitt__sq_schedule_upsert(bitt_backend *be, const bitt_time *t, const char *key,
                             int64_t interval_ms, const uint8_t *payload, size_t len, int kind,
                             int64_t first_run_at)
{
    (void)t;
    sqlite3_stmt *st;
    int status = bitt__sq_write(be, "schedule upsert (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_S_UPSERT, S_UPSERT_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, key);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, interval_ms);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_bytes(st, 3, payload, len);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int(st, 4, kind);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 5, first_run_at);
        status = bitt__sq_run(be, st, rc, "schedule upsert", NULL);
    }
    return bitt__sq_end(be, status, "schedule upsert (COMMIT)");
}

/* Selects the due schedule to claim; BITT_NOTFOUND when none. On BITT_OK
 * *out holds it with its occurrence and its advanced next run. */
static int s_pick(bitt_backend *be, int64_t now, const char *prefix, bitt_schedule **out)
{
    sqlite3_stmt *st;
    size_t plen = strlen(prefix);
    char hi[BITT_NAME_MAX];
    if (plen > sizeof hi)
        return BITT_NOTFOUND; /* longer than any key */
    int status = plen ? bitt__sq_stmt(be, SQ_S_DUE_RANGE, S_DUE_RANGE_SQL, &st)
                      : bitt__sq_stmt(be, SQ_S_DUE_ALL, S_DUE_ALL_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = sqlite3_bind_int64(st, 1, now);
    if (rc == SQLITE_OK && plen) {
        /* hi: the smallest string above every string that starts with
         * prefix: drop trailing 0xff bytes, increment the last one. */
        size_t hlen = plen;
        memcpy(hi, prefix, hlen);
        while (hlen && (uint8_t)hi[hlen - 1] == 0xff)
            hlen--;
        if (hlen)
            hi[hlen - 1] = (char)((uint8_t)hi[hlen - 1] + 1);
        rc = sqlite3_bind_text(st, 2, prefix, (int)plen, SQLITE_STATIC);
        if (rc == SQLITE_OK)
            rc = hlen ? sqlite3_bind_text(st, 3, hi, (int)hlen, SQLITE_STATIC)
                      : sqlite3_bind_zeroblob(st, 3, 0);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int64_t at = sqlite3_column_int64(st, 4);
        int64_t next = bitt__schedule_advance(at, sqlite3_column_int64(st, 1), now);
        if (!(*out = s_row(st, next, at)))
            status = s_oom();
    } else {
        status = rc == SQLITE_DONE ? BITT_NOTFOUND : bitt__sq_fail(be, rc, "schedule claim");
    }
    sqlite3_reset(st);
    return status;
}

int bitt__sq_schedule_claim(bitt_backend *be, const bitt_time *t, const char *prefix,
                            bitt_schedule **out)
{
    *out = NULL;
    sqlite3_stmt *st;
    int status = bitt__sq_write(be, "schedule claim (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = s_pick(be, t->now, prefix ? prefix : "", out);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_S_ADVANCE, S_ADVANCE_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, (*out)->key);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, (*out)->next_run_at);
        status = bitt__sq_run(be, st, rc, "schedule claim (advance)", NULL);
    }
    status = bitt__sq_end(be, status, "schedule claim (COMMIT)");
    if (status != BITT_OK) {
        bitt_schedule_free(*out);
        *out = NULL;
    }
    return status;
}

int bitt__sq_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                          bitt_schedule **out)
{
    (void)t;
    *out = NULL;
    sqlite3_stmt *st;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_S_GET, S_GET_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, key);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        if (!(*out = s_row(st, sqlite3_column_int64(st, 4), 0)))
            status = s_oom();
    } else {
        status = rc == SQLITE_DONE ? BITT_NOTFOUND : bitt__sq_fail(be, rc, "schedule get");
    }
    sqlite3_reset(st);
    return status;
}

int bitt__sq_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out)
{
    (void)t;
    sqlite3_stmt *st;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_S_LIST, S_LIST_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc; /* one statement: one snapshot */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bitt_schedule *s = s_row(st, sqlite3_column_int64(st, 4), 0);
        if (!s) {
            status = s_oom();
            break;
        }
        if ((status = bitt__schedule_array_push(out, s)) != BITT_OK) {
            status = bitt__fail(status, "sqlite: out of memory for a schedule list");
            break;
        }
    }
    if (status == BITT_OK && rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "schedule list");
    sqlite3_reset(st);
    return status;
}

int bitt__sq_schedule_delete(bitt_backend *be, const bitt_time *t, const char *key)
{
    (void)t;
    sqlite3_stmt *st;
    uint64_t changed = 0;
    int status = bitt__sq_write(be, "schedule delete (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_S_DELETE, S_DELETE_SQL, &st);
    if (status == BITT_OK)
        status = bitt__sq_run(be, st, bitt__sq_bind_str(st, 1, key), "schedule delete", &changed);
    if (status == BITT_OK && changed == 0)
        status = BITT_NOTFOUND;
    return bitt__sq_end(be, status, "schedule delete (COMMIT)");
}
