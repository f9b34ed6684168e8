/* The state every injection case starts from, and the snapshot that proves
 * a failed call left it untouched. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "inject.h"

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ < 0) {                                                                             \
            fprintf(stderr, "fixture: %s: %d %s\n", #expr, rc_, bitt_error_last());                \
            return rc_;                                                                            \
        }                                                                                          \
    } while (0)

static int enqueue_on(bitt_store *s, const char *topic, const char *payload, uint32_t max_attempts,
                      const char *dedup, int32_t priority)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.max_attempts = max_attempts;
    o.dedup_key = dedup;
    o.dedup_key_len = dedup ? strlen(dedup) : 0;
    o.priority = priority;
    return bitt_queue_enqueue(s, topic, payload, strlen(payload), BITT_KIND_BYTES, &o, NULL);
}

static int enqueue(bitt_store *s, const char *payload, uint32_t max_attempts, const char *dedup)
{
    return enqueue_on(s, "jobs", payload, max_attempts, dedup, 0);
}

/* Dequeues one message of topic; its id and token into the outputs. */
static int dequeue_from(bitt_store *s, const char *topic, uint64_t *id, char *token, size_t size)
{
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.lease_ms = 60000;
    bitt_messages *m = NULL;
    TRY(bitt_queue_dequeue(s, topic, &o, &m));
    const bitt_message *msg = bitt_messages_at(m, 0);
    int rc = msg ? BITT_OK : BITT_NOTFOUND;
    if (msg) {
        *id = bitt_message_id(msg);
        snprintf(token, size, "%s", bitt_message_token(msg));
    }
    bitt_messages_free(m);
    return rc;
}

static int dequeue_one(bitt_store *s, uint64_t *id, char *token, size_t size)
{
    return dequeue_from(s, "jobs", id, token, size);
}

static int fill_kv(inj_ctx *c)
{
    bitt_store *s = c->store;
    TRY(bitt_kv_set(s, "a", 1, "alpha", 5, BITT_KIND_BYTES, 0, &c->version_a));
    TRY(bitt_kv_set(s, "b", 1, "{\"x\":[1,2]}", 11, BITT_KIND_JSON, 0, NULL));
    TRY(bitt_kv_increment(s, "c", 1, 5, 0, NULL, NULL));
    TRY(bitt_kv_set(s, "t", 1, "soon", 4, BITT_KIND_BYTES, 60000, NULL));
    TRY(bitt_kv_set(s, "x", 1, "gone", 4, BITT_KIND_BYTES, 10, NULL));
    TRY(bitt_kv_set(s, "y", 1, "gone", 4, BITT_KIND_BYTES, 10, NULL));
    return BITT_OK;
}

static int fill_modules(inj_ctx *c)
{
    bitt_store *s = c->store;
    /* a dead letter: one attempt, nacked */
    TRY(enqueue(s, "doomed", 1, NULL));
    char token[64];
    TRY(dequeue_one(s, &c->dead_id, token, sizeof token));
    TRY(bitt_queue_nack(s, "jobs", c->dead_id, token, "it broke", 0));
    /* pending work and one live delivery */
    TRY(enqueue(s, "one", 3, NULL));
    TRY(enqueue(s, "two", 3, "d2"));
    TRY(enqueue(s, "three", 3, NULL));
    TRY(dequeue_one(s, &c->token_id, c->token, sizeof c->token));

    TRY(bitt_lease_acquire(s, "lock", "w1", 60000, &c->lease_epoch, NULL));

    for (int i = 1; i <= 4; i++) {
        char event[32];
        int n = snprintf(event, sizeof event, "{\"n\":%d}", i);
        TRY(bitt_outbox_append(s, "events", event, (size_t)n, BITT_KIND_JSON, NULL));
    }
    TRY(bitt_outbox_fail(s, "events", 1, "timeout", INJ_NOW + 5000));
    TRY(bitt_outbox_park(s, "events", 3, BITT_PARK_POISON, "bad event"));
    TRY(bitt_outbox_park(s, "events", 4, BITT_PARK_INVALID, "no schema"));

    TRY(bitt_schedule_upsert(s, "s/due", 1000, "tick", 4, BITT_KIND_BYTES, INJ_NOW - 500));
    TRY(bitt_schedule_upsert(s, "s/later", 5000, "tock", 4, BITT_KIND_BYTES, INJ_NOW + 5000));

    int64_t wait = 0;
    TRY(bitt_budget_take(s, "api", 10, 1, 1000, 3, &wait));
    return BITT_OK;
}

int inj_fixture(inj_ctx *c)
{
    TRY(bitt_store_open(c->url, &c->store));
    TRY(bitt_clock_set_manual(c->store, INJ_NOW - 100));
    TRY(fill_kv(c));
    TRY(bitt_clock_advance(c->store, 100)); /* x and y have expired */
    TRY(fill_modules(c));
    return BITT_OK;
}

/* On topic "old" at the store's clock: a message acked (done) and a dead
 * letter. */
static int fill_old(bitt_store *s)
{
    uint64_t id = 0;
    char token[64];
    TRY(enqueue_on(s, "old", "finished", 1, NULL, 0));
    TRY(dequeue_from(s, "old", &id, token, sizeof token));
    TRY(bitt_queue_ack(s, "old", id, token));
    TRY(enqueue_on(s, "old", "failed", 1, NULL, 0));
    TRY(dequeue_from(s, "old", &id, token, sizeof token));
    TRY(bitt_queue_nack(s, "old", id, token, "gave up", 0));
    return BITT_OK;
}

int inj_fixture_retention(inj_ctx *c)
{
    if (c->retention)
        return BITT_OK;
    bitt_store_close(c->store);
    c->store = NULL;
    snprintf(c->retention_url, sizeof c->retention_url,
             "%s%squeue_done_retention=%d&queue_dead_retention=%d", c->new_url,
             strchr(c->new_url, '?') ? "&" : "?", INJ_DONE_RETENTION_MS, INJ_DEAD_RETENTION_MS);
    c->url = c->retention_url;
    TRY(bitt_store_open(c->url, &c->store));
    /* The store's first commit runs its periodic sweep and puts the next
     * a minute later, past INJ_NOW: only an explicit purge (or a call on
     * "old") drops what fill_old leaves, both retentions ending by then. */
    TRY(bitt_clock_set_manual(c->store, INJ_NOW - 5000));
    TRY(fill_old(c->store));
    TRY(bitt_clock_set_manual(c->store, INJ_NOW - 100));
    TRY(fill_kv(c));
    TRY(bitt_clock_advance(c->store, 100));
    TRY(fill_modules(c));
    /* claimed before "two" and "three" by its priority */
    char token[64];
    TRY(enqueue_on(c->store, "jobs", "four", 2, NULL, 5));
    TRY(dequeue_one(c->store, &c->done_id, token, sizeof token));
    TRY(bitt_queue_ack_result(c->store, "jobs", c->done_id, token, "{\"ok\":1}", 8,
                              BITT_KIND_JSON));
    c->retention = 1;
    return BITT_OK;
}

static void put(bitt_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(bitt_buf *out, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* one tuple part per line; the snapshot is taken with no fault armed */
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    if (bitt_tuple_push_bytes(out, line, (size_t)n) != BITT_OK)
        fprintf(stderr, "snapshot: out of memory\n");
}

static void snap_kv(bitt_store *s, bitt_buf *out)
{
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    o.limit = BITT_LIST_LIMIT_MAX;
    bitt_entries *e = NULL;
    int rc = bitt_kv_list(s, &o, &e);
    put(out, "kv rc=%d", rc);
    for (size_t i = 0; i < bitt_entries_count(e); i++) {
        const bitt_entry *x = bitt_entries_at(e, i);
        size_t kl, vl;
        const uint8_t *k = bitt_entry_key(x, &kl);
        const uint8_t *v = bitt_entry_value(x, &vl);
        put(out, "kv %.*s=%.*s kind=%d v=%" PRIu64 " exp=%" PRId64, (int)kl, k, (int)vl, v,
            bitt_entry_kind(x), bitt_entry_version(x), bitt_entry_expires_at(x));
    }
    bitt_entries_free(e);
}

static void snap_messages(bitt_buf *out, const char *what, int rc, bitt_messages *m)
{
    put(out, "%s rc=%d", what, rc);
    for (size_t i = 0; i < bitt_messages_count(m); i++) {
        const bitt_message *x = bitt_messages_at(m, i);
        size_t pl;
        const uint8_t *p = bitt_message_payload(x, &pl);
        const char *err = bitt_message_last_error(x);
        put(out,
            "%s id=%" PRIu64 " %.*s kind=%d att=%u/%u err=%s due=%" PRId64 " failed=%" PRId64
            " park=%d",
            what, bitt_message_id(x), (int)pl, p, bitt_message_kind(x), bitt_message_attempts(x),
            bitt_message_max_attempts(x), err ? err : "-", bitt_message_due_at(x),
            bitt_message_failed_at(x), bitt_message_park_reason(x));
    }
    bitt_messages_free(m);
}

static void snap_queue(bitt_store *s, bitt_buf *out)
{
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    int rc = bitt_queue_stats_get(s, "jobs", &st);
    put(out,
        "queue rc=%d pending=%" PRIu64 " delayed=%" PRIu64 " processing=%" PRIu64 " dead=%" PRIu64
        " done=%" PRIu64 " oldest=%" PRId64,
        rc, st.pending, st.delayed, st.processing, st.dead, st.done, st.oldest_pending_at);
    bitt_messages *m = NULL;
    rc = bitt_queue_dead_list(s, "jobs", 0, 0, &m);
    snap_messages(out, "dead", rc, m);
    /* every message of the fixture and a few more by id: the states, and
     * a done message's result, which no list shows ("old" is left alone:
     * a read there would drop what a purge case is to find) */
    for (uint64_t id = 1; id <= 12; id++) {
        bitt_message *x = NULL;
        rc = bitt_queue_get(s, "jobs", id, &x);
        if (rc == BITT_NOTFOUND)
            continue;
        size_t pl = 0, rl = 0;
        const uint8_t *p = bitt_message_payload(x, &pl);
        const uint8_t *r = bitt_message_result(x, &rl);
        put(out,
            "get %" PRIu64 " rc=%d %.*s state=%d prio=%d att=%u due=%" PRId64 " done=%" PRId64
            " result=%.*s kind=%d",
            id, rc, (int)pl, p ? (const char *)p : "", bitt_message_state(x),
            bitt_message_priority(x), bitt_message_attempts(x), bitt_message_due_at(x),
            bitt_message_done_at(x), r ? (int)rl : 1, r ? (const char *)r : "-",
            bitt_message_result_kind(x));
        bitt_message_free(x);
    }
}

static void snap_outbox(bitt_store *s, bitt_buf *out)
{
    bitt_messages *m = NULL;
    int rc = bitt_outbox_pending(s, "events", 0, &m);
    snap_messages(out, "pending", rc, m);
    m = NULL;
    rc = bitt_outbox_parked(s, "events", 0, 0, &m);
    snap_messages(out, "parked", rc, m);
}

static void snap_lease_and_schedules(bitt_store *s, bitt_buf *out)
{
    bitt_buf owner = BITT_BUF_INIT;
    uint64_t epoch = 0;
    int64_t expires = 0;
    const char *names[] = {"lock", "lock2"};
    for (size_t i = 0; i < 2; i++) {
        int rc = bitt_lease_get(s, names[i], &owner, &epoch, &expires);
        put(out, "lease %s rc=%d owner=%s epoch=%" PRIu64 " exp=%" PRId64, names[i], rc,
            owner.ptr ? (const char *)owner.ptr : "-", epoch, expires);
    }
    bitt_buf_dispose(&owner);

    bitt_schedule **list = NULL;
    size_t count = 0;
    int rc = bitt_schedule_list(s, &list, &count);
    put(out, "schedules rc=%d", rc);
    for (size_t i = 0; i < count; i++) {
        size_t pl;
        const uint8_t *p = bitt_schedule_payload(list[i], &pl);
        const char *cron = bitt_schedule_cron(list[i]), *topic = bitt_schedule_topic(list[i]);
        put(out, "schedule %s every=%" PRId64 " cron=%s topic=%s %.*s next=%" PRId64,
            bitt_schedule_key(list[i]), bitt_schedule_interval(list[i]), cron ? cron : "-",
            topic ? topic : "-", (int)pl, p, bitt_schedule_next_run_at(list[i]));
    }
    bitt_schedule_list_free(list, count);
}

void inj_snapshot(bitt_store *s, bitt_buf *out)
{
    bitt_buf_dispose(out);
    snap_kv(s, out);
    snap_queue(s, out);
    snap_outbox(s, out);
    snap_lease_and_schedules(s, out);
}
