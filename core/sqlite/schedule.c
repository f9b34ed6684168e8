/*
 * core/sqlite/schedule.c: schedules (an interval or a cron expression, with
 * or without a topic whose claim enqueues the occurrence's message).
 *
 * The engine works out occurrences (core/schedule_claim.c): due only reads
 * the due schedule with the smallest (next_run_at, key), through the index
 * (next_run_at, key), and the claim is the engine's commit of
 * BITT_OP_SCHEDULE_ADVANCE, guarded by the next_run_at that was read: of
 * any number of processes claiming at once, one commits each occurrence.
 * A key prefix is a byte range on the key ([prefix, prefix with its last
 * byte incremented)), never a pattern.
 */
#include <inttypes.h>
#include <string.h>

#include "sqlite_internal.h"

#define S_COLS "key, interval_ms, payload, kind, next_run_at, cron, topic, max_attempts, priority"
/* A new schedule, or one whose cadence (interval or cron text) changed,
 * starts at first_run_at; any other keeps its next run. SET reads the old
 * row on every right-hand side. */
#define S_SET_SQL                                                                                  \
    "INSERT INTO \"{p}schedule\" (" S_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "        \
    "ON CONFLICT (key) DO UPDATE SET payload = excluded.payload, kind = excluded.kind, "           \
    "interval_ms = excluded.interval_ms, cron = excluded.cron, topic = excluded.topic, "           \
    "max_attempts = excluded.max_attempts, priority = excluded.priority, "                         \
    "next_run_at = CASE WHEN interval_ms = excluded.interval_ms AND cron IS excluded.cron "        \
    "THEN next_run_at ELSE excluded.next_run_at END"
#define S_DUE_ALL_SQL                                                                              \
    "SELECT " S_COLS " FROM \"{p}schedule\" WHERE next_run_at <= ?1 "                              \
    "ORDER BY next_run_at, key LIMIT 1"
/* ?3 is TEXT, or an empty BLOB for "no upper bound": every TEXT sorts
 * before every BLOB. */
#define S_DUE_RANGE_SQL                                                                            \
    "SELECT " S_COLS " FROM \"{p}schedule\" WHERE next_run_at <= ?1 AND key >= ?2 AND key < ?3 "   \
    "ORDER BY next_run_at, key LIMIT 1"
#define S_AT_SQL "SELECT next_run_at FROM \"{p}schedule\" WHERE key = ?1"
#define S_ADVANCE_SQL "UPDATE \"{p}schedule\" SET next_run_at = ?2 WHERE key = ?1"
#define S_GET_SQL "SELECT " S_COLS " FROM \"{p}schedule\" WHERE key = ?1"
#define S_LIST_SQL "SELECT " S_COLS " FROM \"{p}schedule\" ORDER BY key"
#define S_DELETE_SQL "DELETE FROM \"{p}schedule\" WHERE key = ?1"

/* A schedule from the current row (columns S_COLS); NULL on out of memory. */
static bitt_schedule *s_row(sqlite3_stmt *st, int64_t occurrence)
{
    bitt_schedule_def def = {
        .key = (const char *)sqlite3_column_text(st, 0),
        .interval_ms = sqlite3_column_int64(st, 1),
        .kind = sqlite3_column_int(st, 3),
        .cron = (const char *)sqlite3_column_text(st, 5),
        .topic = (const char *)sqlite3_column_text(st, 6),
        .max_attempts = (uint32_t)sqlite3_column_int64(st, 7),
        .priority = (int32_t)sqlite3_column_int64(st, 8),
    };
    def.payload = bitt__sq_column_bytes(st, 2, &def.payload_len);
    return bitt__schedule_from_def(&def, sqlite3_column_int64(st, 4), occurrence);
}

static int s_oom(void)
{
    return bitt__fail(BITT_ENOMEM, "sqlite: out of memory for a schedule");
}

int bitt__sq_schedule_set(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                          int64_t first_run_at)
{
    (void)t;
    sqlite3_stmt *st;
    int status = bitt__sq_write(be, "schedule set (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_S_SET, S_SET_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, def->key);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, def->interval_ms);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_bytes(st, 3, def->payload, def->payload_len);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int(st, 4, def->kind);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 5, first_run_at);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_str(st, 6, def->cron);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_str(st, 7, def->topic);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 8, def->max_attempts);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 9, def->priority);
        status = bitt__sq_run(be, st, rc, "schedule set", NULL);
    }
    return bitt__sq_end(be, status, "schedule set (COMMIT)");
}

/* The due schedule with the smallest (next_run_at, key) among the keys
 * starting with prefix: BITT_OK with *out (its occurrence: now), or
 * BITT_NOTFOUND. */
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
        if (!(*out = s_row(st, now)))
            status = s_oom();
    } else {
        status = rc == SQLITE_DONE ? BITT_NOTFOUND : bitt__sq_fail(be, rc, "schedule due");
    }
    sqlite3_reset(st);
    return status;
}

int bitt__sq_schedule_due(bitt_backend *be, const bitt_time *t, const char *prefix,
                          bitt_schedule **out)
{
    *out = NULL;
    int status = bitt__sq_schema(be); /* one statement: one snapshot */
    if (status == BITT_OK)
        status = s_pick(be, t->now, prefix ? prefix : "", out);
    return status;
}

int bitt__sq_schedule_advance_check(bitt_backend *be, const bitt_op *op, size_t i)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_S_AT, S_AT_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, op->name);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        status = bitt__fail(BITT_ECONFLICT, "commit: op %zu: schedule '%s' is gone", i, op->name);
    } else if (rc != SQLITE_ROW) {
        status = bitt__sq_fail(be, rc, "commit (schedule advance)");
    } else {
        int64_t at = sqlite3_column_int64(st, 0);
        if (at != op->delta)
            status = bitt__fail(BITT_ECONFLICT,
                                "commit: op %zu: schedule '%s' moved on: its next run is %" PRId64
                                ", not the occurrence %" PRId64,
                                i, op->name, at, op->delta);
    }
    sqlite3_reset(st);
    return status;
}

int bitt__sq_schedule_advance(bitt_backend *be, const bitt_op *op)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_S_ADVANCE, S_ADVANCE_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, op->name);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, op->delay_ms);
    return bitt__sq_run(be, st, rc, "commit (schedule advance)", NULL);
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
        if (!(*out = s_row(st, 0)))
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
        bitt_schedule *s = s_row(st, 0);
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
