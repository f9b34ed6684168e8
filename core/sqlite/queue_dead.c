/*
 * core/sqlite/queue_dead.c: dead letters (list, retry, delete) and the
 * per-topic counts. Each call starts like every queue call, with the
 * sweep of expired last attempts, in a BEGIN IMMEDIATE transaction, and
 * reads what it reports in that same transaction.
 */
#include "sqlite_internal.h"

#define D_LIST_SQL                                                                                 \
    "SELECT " BITT_SQ_QUEUE_COLS " FROM \"{p}queue\" "                                             \
    "WHERE topic = ?1 AND state = 2 AND id > ?2 ORDER BY id LIMIT ?3"
/* Back to pending at now with a fresh count. A message gave its dedup key
 * up when it died, and it stays given up (another message may hold it by
 * now), as on every backend. */
#define D_RETRY(where)                                                                             \
    "UPDATE \"{p}queue\" SET state = 0, due_at = ?2, attempts = 0, last_error = NULL, "            \
    "failed_at = 0, token = NULL, dedup_key = NULL WHERE topic = ?1 AND state = 2" where
#define D_DELETE(where) "DELETE FROM \"{p}queue\" WHERE topic = ?1 AND state = 2" where
/* One pass over the topic's part of the claim index, which covers it. */
#define D_STATS_SQL                                                                                \
    "SELECT count(*) FILTER (WHERE state < 2 AND due_at <= ?2), "                                  \
    "count(*) FILTER (WHERE state = 0 AND due_at > ?2), "                                          \
    "count(*) FILTER (WHERE state = 1 AND due_at > ?2), "                                          \
    "count(*) FILTER (WHERE state = 2), "                                                          \
    "min(due_at) FILTER (WHERE state < 2 AND due_at <= ?2), "                                      \
    "count(*) FILTER (WHERE state = 3) "                                                           \
    "FROM \"{p}queue\" WHERE topic = ?1"

int bitt__sq_queue_dead_list(bitt_backend *be, const bitt_time *t, const char *topic,
                             uint64_t after_id, size_t limit, bitt_messages *out)
{
    size_t base = out->count;
    sqlite3_stmt *st;
    int status = bitt__sq_queue_begin(be, t->now, topic, "queue dead list (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_Q_DEAD_LIST, D_LIST_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, topic);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, after_id > INT64_MAX ? INT64_MAX : (int64_t)after_id);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_count(st, 3, limit);
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            bitt_message f = {0};
            bitt__sq_queue_fields(st, topic, &f);
            if ((status = bitt__sq_push_message(out, &f)) != BITT_OK)
                break;
            rc = SQLITE_OK;
        }
        if (status == BITT_OK && rc != SQLITE_DONE)
            status = bitt__sq_fail(be, rc, "queue dead list");
        sqlite3_reset(st);
    }
    status = bitt__sq_end(be, status, "queue dead list (COMMIT)");
    if (status != BITT_OK)
        bitt__sq_messages_truncate(out, base);
    return status;
}

/* Runs a retry or delete of dead messages: one (id != 0) or all. */
static int d_change(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id, int retry,
                    uint64_t *count)
{
    static const char *const sql[2][2] = {
        {D_DELETE(""), D_DELETE(" AND id = ?3")},
        {D_RETRY(""), D_RETRY(" AND id = ?3")},
    };
    static const bitt_sq_id ids[2][2] = {
        {SQ_Q_DEAD_DELETE_ALL, SQ_Q_DEAD_DELETE_ONE},
        {SQ_Q_DEAD_RETRY_ALL, SQ_Q_DEAD_RETRY_ONE},
    };
    const char *what = retry ? "queue dead retry" : "queue dead delete";
    *count = 0;
    sqlite3_stmt *st;
    uint64_t changed = 0;
    int status = bitt__sq_queue_begin(be, t->now, topic, what);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, ids[retry][id != 0], sql[retry][id != 0], &st);
    if (status == BITT_OK) {
        /* ?2 (the retry's due time) is unused by a delete: leave it unbound. */
        int rc = bitt__sq_bind_str(st, 1, topic);
        if (rc == SQLITE_OK && retry)
            rc = sqlite3_bind_int64(st, 2, t->now);
        if (rc == SQLITE_OK && id)
            rc = sqlite3_bind_int64(st, 3, id > INT64_MAX ? INT64_MAX : (int64_t)id);
        status = bitt__sq_run(be, st, rc, what, &changed);
    }
    status = bitt__sq_end(be, status, what);
    if (status == BITT_OK)
        *count = changed;
    return status;
}

int bitt__sq_queue_dead_retry(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                              uint64_t *count)
{
    return d_change(be, t, topic, id, 1, count);
}

int bitt__sq_queue_dead_delete(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                               uint64_t *count)
{
    return d_change(be, t, topic, id, 0, count);
}

int bitt__sq_queue_stats(bitt_backend *be, const bitt_time *t, const char *topic,
                         bitt_queue_stats *out)
{
    sqlite3_stmt *st;
    int status = bitt__sq_queue_begin(be, t->now, topic, "queue stats (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_Q_STATS, D_STATS_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, topic);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, t->now);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            out->pending = (uint64_t)sqlite3_column_int64(st, 0);
            out->delayed = (uint64_t)sqlite3_column_int64(st, 1);
            out->processing = (uint64_t)sqlite3_column_int64(st, 2);
            out->dead = (uint64_t)sqlite3_column_int64(st, 3);
            out->oldest_pending_at = sqlite3_column_int64(st, 4); /* NULL reads as 0 */
            out->done = (uint64_t)sqlite3_column_int64(st, 5);
        } else {
            status = bitt__sq_fail(be, rc, "queue stats");
        }
        sqlite3_reset(st);
    }
    return bitt__sq_end(be, status, "queue stats (COMMIT)");
}
