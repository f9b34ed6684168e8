/*
 * core/sqlite/queue_retention.c: queue retention on SQLite.
 *
 * With queue_done_retention an ack keeps its row done (state 3, done_at,
 * the result: queue.c); with queue_dead_retention a dead letter goes once
 * failed_at is that long past. The sweep that starts every queue call ends
 * here: one DELETE per retention that is set, each a range of a partial
 * index ((topic, done_at) over the done rows, (topic, failed_at) over the
 * dead ones), so it reads only what it deletes and one index entry more,
 * never the topic. Without retention it runs no statement at all.
 *
 * purge does the whole sweep (expired last leases, then retention) on one
 * topic, or on every topic found one index seek at a time.
 */
#include <stdint.h>
#include <string.h>

#include "sqlite_internal.h"

/* INDEXED BY: the claim index also starts (topic, state), and would read
 * every done (or dead) row of the topic instead of the old ones alone. */
#define R_DROP_DONE_SQL                                                                            \
    "DELETE FROM \"{p}queue\" INDEXED BY \"{p}queue_done\" "                                       \
    "WHERE topic = ?1 AND state = 3 AND done_at <= ?2"
#define R_DROP_DEAD_SQL                                                                            \
    "DELETE FROM \"{p}queue\" INDEXED BY \"{p}queue_aging\" "                                      \
    "WHERE topic = ?1 AND state = 2 AND failed_at <= ?2"
#define R_NEXT_TOPIC_SQL "SELECT min(topic) FROM \"{p}queue\" WHERE topic > ?1"

/* Deletes topic's rows of one retention older than now - retention_ms. */
static int r_drop(bitt_backend *be, int64_t now, const char *topic, int64_t retention_ms, int dead,
                  uint64_t *removed)
{
    /* a retention reaching past the clock's start keeps everything */
    if (retention_ms <= 0 || now < INT64_MIN + retention_ms)
        return BITT_OK;
    sqlite3_stmt *st;
    int status = dead ? bitt__sq_stmt(be, SQ_Q_DROP_DEAD, R_DROP_DEAD_SQL, &st)
                      : bitt__sq_stmt(be, SQ_Q_DROP_DONE, R_DROP_DONE_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, topic);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, now - retention_ms);
    uint64_t changed = 0;
    status = bitt__sq_run(be, st, rc,
                          dead ? "queue (dropping old dead letters)"
                               : "queue (dropping old done messages)",
                          &changed);
    if (status == BITT_OK)
        *removed += changed;
    return status;
}

int bitt__sq_queue_drop(bitt_backend *be, int64_t now, const char *topic, uint64_t *removed)
{
    uint64_t count = 0;
    int status = r_drop(be, now, topic, be->done_retention_ms, 0, &count);
    if (status == BITT_OK)
        status = r_drop(be, now, topic, be->dead_retention_ms, 1, &count);
    if (removed)
        *removed = status == BITT_OK ? count : 0;
    return status;
}

/* The first topic after `after` ("" for the first of all) into next:
 * BITT_OK, or BITT_NOTFOUND after the last. */
static int r_next_topic(bitt_backend *be, const char *after, char next[BITT_NAME_MAX + 1])
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_NEXT_TOPIC, R_NEXT_TOPIC_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, after);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        status = bitt__sq_fail(be, rc, "queue purge (topics)");
    } else {
        const char *topic = (const char *)sqlite3_column_text(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        if (!topic)
            status = BITT_NOTFOUND;
        else if (len > BITT_NAME_MAX)
            status = bitt__fail(BITT_ESCHEMA, "sqlite: queue topic of %zu bytes in \"%squeue\"",
                                len, be->prefix);
        else
            memcpy(next, topic, len + 1);
    }
    sqlite3_reset(st);
    return status;
}

/* The whole sweep of one topic, counting what retention dropped. */
static int r_sweep(bitt_backend *be, int64_t now, const char *topic, uint64_t *removed)
{
    uint64_t count = 0;
    int status = bitt__sq_queue_sweep_leases(be, now, topic);
    if (status == BITT_OK)
        status = bitt__sq_queue_drop(be, now, topic, &count);
    *removed += count;
    return status;
}

int bitt__sq_queue_purge(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t *removed)
{
    *removed = 0;
    uint64_t count = 0;
    int status = bitt__sq_write(be, "queue purge (BEGIN IMMEDIATE)");
    if (status != BITT_OK)
        return status;
    if (topic) {
        status = r_sweep(be, t->now, topic, &count);
    } else {
        /* two buffers: the one bound is never written under the statement */
        char names[2][BITT_NAME_MAX + 1] = {"", ""};
        for (int i = 0; status == BITT_OK; i ^= 1)
            if ((status = r_next_topic(be, names[i], names[i ^ 1])) == BITT_OK)
                status = r_sweep(be, t->now, names[i ^ 1], &count);
        if (status == BITT_NOTFOUND)
            status = BITT_OK;
    }
    status = bitt__sq_end(be, status, "queue purge (COMMIT)");
    if (status == BITT_OK)
        *removed = count;
    return status;
}
