/*
 * core/sqlite/queue_claim.c: claims, of one topic or of several at once.
 *
 * The order is priority (higher first), then due_at, then id. The claim
 * index is (topic, state, priority DESC, due_at) and its entries end with
 * the rowid id, so within one priority the claimable rows of a state are
 * one range of it. A claim therefore walks the topic's priorities from the
 * top (one index seek each, in both claimable states: pending and
 * processing) and, at each, reads the claimable rows of both states as one
 * merge of two ranges, until it has enough: neither a backlog nor a pile of
 * delayed messages or expired leases makes it sort or scan, whatever their
 * priority. A claim reads only index entries until it knows which rows it
 * takes, and reads those rows after.
 *
 * Over several topics, each topic's best `limit` are picked the same way;
 * the best `limit` of all of them are among those, so a sort of at most
 * topics x limit keys finds them. Each call is one BEGIN IMMEDIATE
 * transaction: the claim and its leases commit together, so two processes
 * never lease the same delivery.
 */
#include <stdlib.h>

#include "sqlite_internal.h"

/* The highest priority below ?2 that topic ?1 has a pending or processing
 * message at (NULL when none): a seek in each state's part of the index. */
#define Q_LEVEL_SQL                                                                                \
    "SELECT max(p) FROM (SELECT (SELECT priority FROM \"{p}queue\" WHERE topic = ?1 AND "          \
    "state = 0 AND priority < ?2 ORDER BY priority DESC LIMIT 1) AS p UNION ALL "                  \
    "SELECT (SELECT priority FROM \"{p}queue\" WHERE topic = ?1 AND state = 1 AND "                \
    "priority < ?2 ORDER BY priority DESC LIMIT 1))"
/* The claimable rows of topic ?1 at priority ?2 as of ?3, in (due_at, id)
 * order: two ranges of the index, merged. */
#define Q_PICK_SQL                                                                                 \
    "SELECT id, due_at FROM \"{p}queue\" "                                                         \
    "WHERE topic = ?1 AND state = 0 AND priority = ?2 AND due_at <= ?3 UNION ALL "                 \
    "SELECT id, due_at FROM \"{p}queue\" "                                                         \
    "WHERE topic = ?1 AND state = 1 AND priority = ?2 AND due_at <= ?3 "                           \
    "ORDER BY due_at, id LIMIT ?4"
#define Q_ROW_SQL "SELECT " BITT_SQ_QUEUE_COLS " FROM \"{p}queue\" WHERE id = ?1"
#define Q_LEASE_SQL                                                                                \
    "UPDATE \"{p}queue\" SET state = 1, attempts = attempts + 1, token = ?2, due_at = ?3 "         \
    "WHERE id = ?1"

/* A row a claim takes: its sort key and which of the claim's topics. */
typedef struct q_pick {
    uint64_t id;
    int64_t priority;
    int64_t due_at;
    size_t topic;
} q_pick;

typedef struct q_picks {
    q_pick *items;
    size_t count;
    size_t cap;
} q_picks;

static int q_picks_push(q_picks *p, const q_pick *item)
{
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        q_pick *items = bitt__realloc(p->items, cap * sizeof *items);
        if (!items)
            return bitt__fail(BITT_ENOMEM, "sqlite: out of memory for a queue claim");
        p->items = items;
        p->cap = cap;
    }
    p->items[p->count++] = *item;
    return BITT_OK;
}

/* The topic's next priority below `below`: BITT_OK with *level, or
 * BITT_NOTFOUND when it has no message there. */
static int q_level(bitt_backend *be, const char *topic, int64_t below, int64_t *level)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_LEVEL, Q_LEVEL_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, topic);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, below);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW)
        status = bitt__sq_fail(be, rc, "queue claim (priorities)");
    else if (sqlite3_column_type(st, 0) == SQLITE_NULL)
        status = BITT_NOTFOUND;
    else
        *level = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return status;
}

/* Appends up to limit claimable rows of topic at one priority. */
static int q_pick_level(bitt_backend *be, int64_t now, const char *topic, size_t ti, int64_t level,
                        size_t limit, q_picks *out)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_PICK, Q_PICK_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, topic);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, level);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, now);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_count(st, 4, limit);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        q_pick p = {(uint64_t)sqlite3_column_int64(st, 0), level, sqlite3_column_int64(st, 1), ti};
        if ((status = q_picks_push(out, &p)) != BITT_OK)
            break;
        rc = SQLITE_OK;
    }
    if (status == BITT_OK && rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "queue claim");
    sqlite3_reset(st);
    return status;
}

/* Appends topic's best limit claimable rows, in claim order. */
static int q_pick_topic(bitt_backend *be, int64_t now, const char *topic, size_t ti, size_t limit,
                        q_picks *out)
{
    size_t base = out->count;
    int64_t below = INT64_MAX; /* above every int32 priority */
    for (;;) {
        size_t got = out->count - base;
        if (got >= limit)
            return BITT_OK;
        int64_t level = 0; /* set by q_level when it returns BITT_OK */
        int status = q_level(be, topic, below, &level);
        if (status == BITT_NOTFOUND)
            return BITT_OK;
        if (status == BITT_OK)
            status = q_pick_level(be, now, topic, ti, level, limit - got, out);
        if (status != BITT_OK)
            return status;
        below = level;
    }
}

static int q_pick_cmp(const void *a, const void *b)
{
    const q_pick *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->due_at != y->due_at)
        return x->due_at < y->due_at ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Pushes the picked row as it will be once leased (a new token, one more
 * attempt, the lease's end as due_at), then leases it. */
static int q_take(bitt_backend *be, int64_t now, const char *topic, uint64_t id, int64_t lease_ms,
                  bitt_messages *out)
{
    sqlite3_stmt *st;
    int status = bitt__sq_stmt(be, SQ_Q_ROW, Q_ROW_SQL, &st);
    if (status != BITT_OK)
        return status;
    char token[BITT_TOKEN_LEN + 1];
    int64_t due_at = bitt__time_add(now, lease_ms);
    int rc = sqlite3_bind_int64(st, 1, (int64_t)id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        bitt_message f;
        bitt__sq_queue_fields(st, topic, &f);
        bitt__token_new(token);
        f.token = token;
        f.attempts++;
        f.due_at = due_at;
        f.failed_at = 0;
        status = bitt__sq_push_message(out, &f);
    } else {
        /* the row was read a moment ago in this transaction */
        status = bitt__sq_fail(be, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc, "queue claim (read)");
    }
    sqlite3_reset(st);
    if (status != BITT_OK)
        return status;
    /* The row is updated once its read is over, never under a cursor. */
    if ((status = bitt__sq_stmt(be, SQ_Q_LEASE, Q_LEASE_SQL, &st)) != BITT_OK)
        return status;
    rc = sqlite3_bind_int64(st, 1, (int64_t)id);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_str(st, 2, token);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, due_at);
    return bitt__sq_run(be, st, rc, "queue claim (lease)", NULL);
}

/* One claim over count topics: sweep each, pick, order, take. */
static int q_claim(bitt_backend *be, const bitt_time *t, const char *const *topics, size_t count,
                   size_t limit, int64_t lease_ms, bitt_messages *out)
{
    size_t base = out->count;
    q_picks picks = {0};
    int status = bitt__sq_write(be, "queue claim (BEGIN IMMEDIATE)");
    if (status != BITT_OK)
        return status;
    for (size_t i = 0; i < count && status == BITT_OK; i++)
        status = bitt__sq_queue_sweep(be, t->now, topics[i]);
    for (size_t i = 0; i < count && status == BITT_OK; i++)
        status = q_pick_topic(be, t->now, topics[i], i, limit, &picks);
    /* qsort of nothing would be given NULL, which it must never be */
    if (status == BITT_OK && count > 1 && picks.count > 1) {
        qsort(picks.items, picks.count, sizeof *picks.items, q_pick_cmp);
        if (picks.count > limit)
            picks.count = limit;
    }
    for (size_t i = 0; i < picks.count && status == BITT_OK; i++)
        status = q_take(be, t->now, topics[picks.items[i].topic], picks.items[i].id, lease_ms, out);
    free(picks.items);
    status = bitt__sq_end(be, status, "queue claim (COMMIT)");
    if (status != BITT_OK)
        bitt__sq_messages_truncate(out, base);
    return status;
}

int bitt__sq_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                         int64_t lease_ms, bitt_messages *out)
{
    return q_claim(be, t, &topic, 1, limit, lease_ms, out);
}

int bitt__sq_queue_claim_topics(bitt_backend *be, const bitt_time *t, const char *const *topics,
                                size_t count, size_t limit, int64_t lease_ms, bitt_messages *out)
{
    return q_claim(be, t, topics, count, limit, lease_ms, out);
}
