/*
 * core/postgres/queue_retention.c: queue retention on PostgreSQL.
 *
 * With queue_done_retention an ack keeps its row done (state 3, done_at,
 * the result: queue.c); with queue_dead_retention a dead letter goes once
 * failed_at is that long past. The sweep that starts every queue call ends
 * here: one DELETE per retention that is set, each a range of a partial
 * index ((topic, done_at) over the done rows, (topic, failed_at) over the
 * dead ones), so it reads only what it deletes, never the topic. Without
 * retention the sweep has no such step at all: the pipelines are the ones
 * of before.
 *
 * The rows are taken FOR UPDATE SKIP LOCKED, as the expired-lease sweep
 * takes its own: two sweeps never wait for each other, and a row someone
 * holds (a commit reading a done message to refuse its ack) goes with the
 * next sweep. The cutoff is now - retention at the statement's time (the
 * server's clock, or the manual one); a retention reaching past the
 * clock's start keeps everything (NULL cutoff: no underflow).
 *
 * purge does the whole sweep (expired last leases, then retention) on one
 * topic, or on every topic: the topics that have done rows (or dead ones)
 * are found one index seek at a time (a loose scan of the partial index),
 * and each is then a range of it, so a purge never reads the rows a
 * retention keeps.
 */
#include <string.h>

#include "postgres/pg_internal.h"

/* now - r, NULL when it would pass INT64_MIN. */
#define CUTOFF(now, r)                                                                             \
    "(CASE WHEN " now " >= (-9223372036854775807 - 1) + " r " THEN " now " - " r " END)"

#define DROP(state, col, topics)                                                                   \
    "DELETE FROM @queue WHERE id IN (SELECT id FROM @queue WHERE " topics " AND state = " state    \
    " AND " col " <= " CUTOFF(PG_NOW_2, "$3::int8") " FOR UPDATE SKIP LOCKED)"
static const char sql_drop_done[] = DROP("3", "done_at", "topic = $1::text");
static const char sql_drop_dead[] = DROP("2", "failed_at", "topic = $1::text");
static const char sql_drop_done_topics[] = DROP("3", "done_at", "topic = ANY($1::text[])");
static const char sql_drop_dead_topics[] = DROP("2", "failed_at", "topic = ANY($1::text[])");

/* Every topic with rows of the state, by a loose index scan, then each
 * topic's range. */
#define DROP_ALL(state, col)                                                                       \
    "WITH RECURSIVE t(topic) AS (SELECT min(topic) FROM @queue WHERE state = " state " "           \
    "UNION ALL SELECT (SELECT min(q.topic) FROM @queue q WHERE q.state = " state " "               \
    "AND q.topic > t.topic) FROM t WHERE t.topic IS NOT NULL) "                                    \
    "DELETE FROM @queue WHERE id IN (SELECT d.id FROM t CROSS JOIN LATERAL (SELECT q.id "          \
    "FROM @queue q WHERE q.topic = t.topic AND q.state = " state " AND q." col                     \
    " <= " CUTOFF(PG_NOW_1, "$2::int8") " FOR UPDATE SKIP LOCKED) d)"
static const char sql_drop_done_all[] = DROP_ALL("3", "done_at");
static const char sql_drop_dead_all[] = DROP_ALL("2", "failed_at");
/* The expired-lease sweep of every topic (queue.c's, over the partial
 * index of last leases). */
static const char sql_sweep_all[] =
    "UPDATE @queue SET state = 2, failed_at = due_at, last_error = $2::text, token = NULL, "
    "dedup_key = NULL WHERE id IN (SELECT id FROM @queue WHERE state = 1 "
    "AND attempts >= max_attempts AND due_at <= " PG_NOW_1 " FOR UPDATE SKIP LOCKED)";

static void drop_step(const char *topic, const bitt_buf *topics_arr, const bitt_time *t,
                      int64_t retention_ms, int dead, bitt_pg_step *step, bitt_pg_params *p)
{
    memset(p, 0, sizeof *p);
    if (topics_arr)
        bitt__pg_p_bytes(p, topics_arr->ptr, topics_arr->len);
    else
        bitt__pg_p_text(p, topic);
    bitt__pg_p_now(p, t);
    bitt__pg_p_i64(p, retention_ms);
    if (topics_arr)
        *step = dead ? (bitt_pg_step){PG_Q_DROP_DEAD_TOPICS, sql_drop_dead_topics, p, NULL}
                     : (bitt_pg_step){PG_Q_DROP_DONE_TOPICS, sql_drop_done_topics, p, NULL};
    else
        *step = dead ? (bitt_pg_step){PG_Q_DROP_DEAD, sql_drop_dead, p, NULL}
                     : (bitt_pg_step){PG_Q_DROP_DONE, sql_drop_done, p, NULL};
}

int bitt__pg_sweep_steps(const bitt_backend *be, const char *topic, const bitt_buf *topics_arr,
                         const bitt_time *t, bitt_pg_step *steps, bitt_pg_params *params)
{
    int n = 0;
    memset(&params[0], 0, sizeof params[0]);
    if (topics_arr) {
        bitt__pg_p_bytes(&params[0], topics_arr->ptr, topics_arr->len);
        bitt__pg_p_now(&params[0], t);
        bitt__pg_p_text(&params[0], BITT_LEASE_EXPIRED_ERROR);
        steps[n++] = (bitt_pg_step){PG_Q_SWEEP_TOPICS, bitt__pg_sweep_topics_sql, &params[0], NULL};
    } else {
        bitt__pg_sweep_params(&params[0], topic, t);
        steps[n++] = (bitt_pg_step){PG_Q_SWEEP, bitt__pg_sweep_sql, &params[0], NULL};
    }
    if (be->done_retention_ms > 0) {
        drop_step(topic, topics_arr, t, be->done_retention_ms, 0, &steps[n], &params[n]);
        n++;
    }
    if (be->dead_retention_ms > 0) {
        drop_step(topic, topics_arr, t, be->dead_retention_ms, 1, &steps[n], &params[n]);
        n++;
    }
    return n;
}

int bitt__pg_queue_purge(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t *removed)
{
    *removed = 0;
    int status = bitt__pg_schema(be);
    /* nothing outlives a retention that is not set; the expired leases are
     * every queue call's own work */
    if (status || (be->done_retention_ms <= 0 && be->dead_retention_ms <= 0))
        return status;
    bitt_pg_step steps[BITT_PG_SWEEP_MAX];
    bitt_pg_params params[BITT_PG_SWEEP_MAX];
    int n = 0;
    if (topic) {
        n = bitt__pg_sweep_steps(be, topic, NULL, t, steps, params);
    } else {
        memset(params, 0, sizeof params);
        bitt__pg_p_now(&params[0], t);
        bitt__pg_p_text(&params[0], BITT_LEASE_EXPIRED_ERROR);
        steps[n++] = (bitt_pg_step){PG_Q_SWEEP_ALL, sql_sweep_all, &params[0], NULL};
        if (be->done_retention_ms > 0) {
            bitt__pg_p_now(&params[n], t);
            bitt__pg_p_i64(&params[n], be->done_retention_ms);
            steps[n] = (bitt_pg_step){PG_Q_DROP_DONE_ALL, sql_drop_done_all, &params[n], NULL};
            n++;
        }
        if (be->dead_retention_ms > 0) {
            bitt__pg_p_now(&params[n], t);
            bitt__pg_p_i64(&params[n], be->dead_retention_ms);
            steps[n] = (bitt_pg_step){PG_Q_DROP_DEAD_ALL, sql_drop_dead_all, &params[n], NULL};
            n++;
        }
    }
    status = bitt__pg_run(be, steps, n, "queue purge");
    if (status)
        return status;
    /* steps after the first are the retention's */
    for (int i = 1; i < n; i++)
        *removed += bitt__pg_changed(steps[i].res);
    bitt__pg_clear(steps, n);
    return BITT_OK;
}
