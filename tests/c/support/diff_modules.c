/*
 * tests/c/support/diff_modules.c: the steps of a differential run (diff.h)
 * for the queue, leases, the outbox, budgets, schedules and pubsub.
 */
#include <stdio.h>
#include <string.h>

#include "diff.h"

#define N DIFF_MAX_STORES

static const char *const g_topics[] = {"t1", "t2"};
static const char *const g_dedups[] = {NULL, "d1", "d2"};
static const char *const g_errors[] = {NULL, "boom", ""};

/* Mostly the ids of the latest deliveries, so acks, nacks and extends hit
 * a message that is leased (or was, a moment ago). An id that an ordered
 * store has not shown yet (a txn's enqueue, never delivered) has no known
 * counterpart there: then a message that exists nowhere. */
static uint64_t pick_id(diff_ctx *c)
{
    uint64_t id = c->recent[diff_rnd(c, 8)];
    if (!id || diff_rnd(c, 5) == 0)
        id = 1 + diff_rnd(c, (uint32_t)c->max_id);
    return diff_id_known(c, id) ? id : DIFF_NO_ID;
}

static void same_u64(diff_ctx *c, const uint64_t *v, const char *what, const char *field)
{
    int64_t x[N];
    for (int i = 0; i < c->n; i++)
        x[i] = (int64_t)v[i];
    diff_same_i64(c, x, what, field);
}

static void enqueue(diff_ctx *c, const char *topic)
{
    int rc[N];
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.delay_ms = diff_edge_duration(c, diff_rnd(c, 3) == 0 ? diff_rnd(c, 100) : 0, 0);
    o.max_attempts = diff_rnd(c, 4);
    if (c->edges && diff_rnd(c, 20) == 0)
        o.max_attempts = diff_rnd(c, 2) ? UINT32_MAX : 1;
    const char *d = g_dedups[diff_rnd(c, 3)];
    o.dedup_key = d;
    o.dedup_key_len = d ? 2 : 0;
    diff_edge_key(c, &o.dedup_key, &o.dedup_key_len);
    uint64_t id[N] = {0};
    char text[16];
    const void *payload = text;
    size_t len = (size_t)snprintf(text, sizeof text, "p%d", c->step);
    int kind = BITT_KIND_BYTES;
    diff_edge_value(c, &payload, &len, &kind);
    for (int i = 0; i < c->n; i++)
        rc[i] = bitt_queue_enqueue(c->s[i], topic, payload, len, kind, &o, &id[i]);
    diff_same_rc(c, rc, "enqueue");
    for (int i = 1; i < c->n; i++)
        diff_same_id(c, i, id[0], id[i], "enqueue");
    if (id[0] > c->max_id)
        c->max_id = id[0];
}

static void dequeue(diff_ctx *c, const char *topic)
{
    int rc[N];
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = diff_edge_limit(c, 1 + diff_rnd(c, 3));
    o.lease_ms =
        diff_edge_duration(c, diff_rnd(c, 2) ? 1 + diff_rnd(c, 80) : 5000 + diff_rnd(c, 80), 1);
    bitt_messages *l[N] = {0};
    for (int i = 0; i < c->n; i++)
        rc[i] = bitt_queue_dequeue(c->s[i], topic, &o, &l[i]);
    diff_same_rc(c, rc, "dequeue");
    if (!rc[0]) {
        diff_same_messages(c, l, 1, "dequeue");
        for (int i = 0; i < c->n; i++) {
            for (size_t j = 0; j < bitt_messages_count(l[i]); j++) {
                const bitt_message *m = bitt_messages_at(l[i], j);
                uint64_t id = bitt_message_id(bitt_messages_at(l[0], j)); /* the reference's */
                if (i == 0)
                    c->recent[diff_rnd(c, 8)] = id;
                if (id < DIFF_MAX_IDS) {
                    memcpy(c->stale[i][id], c->token[i][id], 33);
                    snprintf(c->token[i][id], 33, "%s", bitt_message_token(m));
                }
            }
        }
    }
    for (int i = 0; i < c->n; i++)
        bitt_messages_free(l[i]);
}

/* ack, nack or extend, with each store's own token (or a stale one). */
static void settle(diff_ctx *c, const char *topic)
{
    int rc[N];
    uint64_t id = pick_id(c);
    int stale = diff_rnd(c, 5) == 0;
    const char *tok[N];
    for (int i = 0; i < c->n; i++) {
        tok[i] = id >= DIFF_MAX_IDS ? "" : stale ? c->stale[i][id] : c->token[i][id];
        if (!tok[i][0])
            tok[i] = "0123456789abcdef0123456789abcdef";
    }
    uint32_t how = diff_rnd(c, 3);
    if (how == 0) {
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_queue_ack(c->s[i], topic, diff_id_for(c, i, id), tok[i]);
        diff_same_rc(c, rc, "ack");
    } else if (how == 1) {
        const char *err = diff_edge_error(c, g_errors[diff_rnd(c, 3)]);
        int64_t delay = diff_edge_duration(c, diff_rnd(c, 2) ? -1 : (int64_t)diff_rnd(c, 50), 0);
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_queue_nack(c->s[i], topic, diff_id_for(c, i, id), tok[i], err, delay);
        diff_same_rc(c, rc, "nack");
    } else {
        int64_t lease = diff_edge_duration(c, diff_rnd(c, 4) == 0 ? 0 : diff_rnd(c, 80), 0);
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_queue_extend(c->s[i], topic, diff_id_for(c, i, id), tok[i], lease);
        diff_same_rc(c, rc, "extend");
    }
}

static void stats(diff_ctx *c, const char *topic)
{
    int rc[N];
    bitt_queue_stats st[N];
    for (int i = 0; i < c->n; i++) {
        st[i] = (bitt_queue_stats){.version = BITT_QUEUE_STATS_VERSION};
        rc[i] = bitt_queue_stats_get(c->s[i], topic, &st[i]);
    }
    diff_same_rc(c, rc, "stats");
    uint64_t v[N];
    int64_t oldest[N];
    const char *fields[] = {"pending", "delayed", "processing", "dead"};
    for (int f = 0; f < 4; f++) {
        for (int i = 0; i < c->n; i++)
            v[i] = f == 0   ? st[i].pending
                   : f == 1 ? st[i].delayed
                   : f == 2 ? st[i].processing
                            : st[i].dead;
        same_u64(c, v, "stats", fields[f]);
    }
    for (int i = 0; i < c->n; i++)
        oldest[i] = st[i].oldest_pending_at;
    diff_same_i64(c, oldest, "stats", "oldest");
}

static void dead(diff_ctx *c, const char *topic, uint32_t op)
{
    int rc[N];
    if (op < 88) {
        bitt_messages *l[N] = {0};
        uint64_t after = diff_rnd(c, 3) ? 0 : pick_id(c);
        uint32_t limit = diff_edge_limit(c, diff_rnd(c, 4));
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_queue_dead_list(c->s[i], topic, diff_id_for(c, i, after), limit, &l[i]);
        diff_same_rc(c, rc, "dead list");
        if (!rc[0])
            diff_same_messages(c, l, 1, "dead list");
        for (int i = 0; i < c->n; i++)
            bitt_messages_free(l[i]);
        return;
    }
    const char *what = op < 95 ? "dead retry" : "dead delete";
    uint64_t id = diff_rnd(c, 3) ? pick_id(c) : 0, count[N] = {0};
    for (int i = 0; i < c->n; i++)
        rc[i] = op < 95 ? bitt_queue_dead_retry(c->s[i], topic, diff_id_for(c, i, id), &count[i])
                        : bitt_queue_dead_delete(c->s[i], topic, diff_id_for(c, i, id), &count[i]);
    diff_same_rc(c, rc, what);
    same_u64(c, count, what, "count");
}

static void queue_step(diff_ctx *c)
{
    const char *topic = diff_edge_name(c, g_topics[diff_rnd(c, 2)]);
    uint32_t op = diff_rnd(c, 100);
    if (op < 25)
        enqueue(c, topic);
    else if (op < 45)
        dequeue(c, topic);
    else if (op < 70)
        settle(c, topic);
    else if (op < 80)
        stats(c, topic);
    else
        dead(c, topic, op);
}

/* A commit fenced by the lease, with a sum, an enqueue and an append;
 * with edges, now and then a refused add among them. */
static void fenced_commit(diff_ctx *c, const char *name, const char *owner, uint64_t epoch, int *rc)
{
    static const char *const what[] = {"fenced commit fence", "fenced commit sum",
                                       "fenced commit enqueue", "fenced commit append"};
    uint64_t ver[N] = {0};
    diff_txn x;
    diff_txn_begin(c, &x);
    uint32_t refused_before = c->edges ? diff_rnd(c, 8) : 4;
    for (uint32_t op = 0; op < 4; op++) {
        if (op == refused_before)
            diff_txn_edge_add(c, &x);
        int arc[N];
        for (int i = 0; i < c->n; i++) {
            bitt_txn *t = x.t[i];
            int r = op == 0   ? bitt_txn_fence(t, name, owner, epoch)
                    : op == 1 ? bitt_txn_sum(t, "fenced", 6, 1)
                    : op == 2 ? bitt_txn_enqueue(t, "t1", "f", 1, BITT_KIND_BYTES, NULL)
                              : bitt_txn_outbox_append(t, "s1", "ev", 2, BITT_KIND_BYTES);
            arc[i] = diff_txn_note(&x, i, r);
        }
        diff_txn_added(c, &x, arc, what[op]);
    }
    diff_txn_commit(c, &x, rc, ver);
    diff_same_rc(c, rc, "fenced commit");
    diff_same_version(c, ver, "fenced commit");
}

static void lease_step(diff_ctx *c)
{
    int rc[N];
    const char *owner = diff_edge_name(c, diff_rnd(c, 2) ? "o1" : "o2");
    const char *name = diff_edge_name(c, "L");
    uint64_t epoch = c->epoch + (diff_rnd(c, 4) == 0 ? (uint64_t)diff_rnd(c, 3) - 1 : 0);
    if (c->edges && diff_rnd(c, 30) == 0)
        epoch = diff_rnd(c, 2) ? UINT64_MAX : 0;
    uint32_t op = diff_rnd(c, 5);
    int64_t x[N] = {0};
    uint64_t e[N] = {0};
    /* with edges, also leases that outlive the steps up to a fenced commit */
    int64_t ttl = diff_edge_duration(c, 1 + diff_rnd(c, c->edges && diff_rnd(c, 2) ? 5000 : 60), 1);
    if (op == 0) {
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_lease_acquire(c->s[i], name, owner, ttl, &e[i], &x[i]);
        diff_same_rc(c, rc, "lease acquire");
        if (!rc[0])
            c->epoch = e[0];
    } else if (op == 1) {
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_lease_renew(c->s[i], name, owner, epoch, ttl, &x[i]);
        diff_same_rc(c, rc, "lease renew");
    } else if (op == 2) {
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_lease_release(c->s[i], name, owner, epoch);
        diff_same_rc(c, rc, "lease release");
    } else if (op == 3) {
        bitt_buf o[N];
        for (int i = 0; i < c->n; i++) {
            o[i] = (bitt_buf)BITT_BUF_INIT;
            rc[i] = bitt_lease_get(c->s[i], name, &o[i], &e[i], &x[i]);
        }
        diff_same_rc(c, rc, "lease get");
        for (int i = 1; i < c->n; i++)
            if (o[i].len != o[0].len || (o[0].len && memcmp(o[i].ptr, o[0].ptr, o[0].len)))
                diff_fail(c, "lease get: owner: %s gave \"%s\", %s gave \"%s\"", c->names[i],
                          o[i].ptr ? (char *)o[i].ptr : "", c->names[0],
                          o[0].ptr ? (char *)o[0].ptr : "");
        for (int i = 0; i < c->n; i++)
            bitt_buf_dispose(&o[i]);
    } else {
        fenced_commit(c, name, owner, epoch, rc);
    }
    if (rc[0] == BITT_OK) {
        same_u64(c, e, "lease", "epoch");
        diff_same_i64(c, x, "lease", "expires_at");
    }
}

static void outbox_step(diff_ctx *c)
{
    int rc[N];
    const char *stream = diff_edge_name(c, diff_rnd(c, 2) ? "s1" : "s2");
    uint32_t op = diff_rnd(c, 9);
    /* room for one over the most seqs a call takes */
    static uint64_t seqs[1001];
    for (int j = 0; j < 3; j++)
        seqs[j] = 1 + diff_rnd(c, 20);
    size_t count = diff_rnd(c, 4);
    if (c->edges && diff_rnd(c, 20) == 0) {
        count = diff_rnd(c, 2) ? 1000 : 1001;
        for (size_t j = 3; j < count; j++)
            seqs[j] = j % 7 ? j : UINT64_MAX;
    }
    if (c->edges && diff_rnd(c, 2))
        seqs[0] = c->seqs[diff_rnd(c, 4)];
    if (c->edges && diff_rnd(c, 20) == 0)
        seqs[0] = diff_rnd(c, 2) ? UINT64_MAX : 0;
    uint64_t n[N] = {0}, m[N] = {0};
    bitt_messages *l[N] = {0};
    const char *err = diff_edge_error(c, g_errors[diff_rnd(c, 3)]);
    const char *what = "outbox";
    uint32_t limit = diff_edge_limit(c, diff_rnd(c, 4)), reason = diff_rnd(c, 3);
    int park = 1 + (int)(reason % 2);
    if (c->edges && diff_rnd(c, 20) == 0)
        park = diff_rnd(c, 2) ? 3 : -1;
    int64_t next = diff_edge_time(c, diff_rnd(c, 2) ? 0 : 1000 + diff_rnd(c, 9));
    for (int i = 0; i < c->n; i++) {
        bitt_store *s = c->s[i];
        switch (op) {
        case 0:
            what = "outbox append";
            rc[i] = bitt_outbox_append(s, stream, "e", 1, BITT_KIND_BYTES, &n[i]);
            break;
        case 1:
            what = "outbox pending";
            rc[i] = bitt_outbox_pending(s, stream, limit, &l[i]);
            break;
        case 2:
            what = "outbox ack";
            rc[i] = bitt_outbox_ack(s, stream, seqs, count, &n[i]);
            break;
        case 3:
            what = "outbox fail";
            rc[i] = bitt_outbox_fail(s, stream, seqs[0], err, next);
            break;
        case 4:
            what = "outbox park";
            rc[i] = bitt_outbox_park(s, stream, seqs[0], park, err);
            break;
        case 5:
            what = "outbox parked";
            rc[i] = bitt_outbox_parked(s, stream, (int)reason, limit, &l[i]);
            break;
        case 6:
            what = "outbox retry";
            rc[i] = bitt_outbox_retry(s, stream, count ? seqs : NULL, count, &n[i]);
            break;
        case 7:
            what = "outbox discard";
            rc[i] = bitt_outbox_discard(s, stream, count ? seqs : NULL, count, &n[i]);
            break;
        default:
            what = "outbox counts";
            rc[i] = bitt_outbox_counts(s, stream, &n[i], &m[i]);
            break;
        }
    }
    diff_same_rc(c, rc, what);
    same_u64(c, n, what, "n");
    same_u64(c, m, what, "m");
    if (l[0])
        diff_same_messages(c, l, 0, what);
    if (c->edges && op == 0 && rc[0] == BITT_OK)
        c->seqs[diff_rnd(c, 4)] = n[0];
    for (size_t j = 0; c->edges && op == 1 && l[0] && j < bitt_messages_count(l[0]); j++)
        c->seqs[diff_rnd(c, 4)] = bitt_message_id(bitt_messages_at(l[0], j));
    for (int i = 0; i < c->n; i++)
        bitt_messages_free(l[i]);
}

static void same_schedule(diff_ctx *c, bitt_schedule *const *x, const char *what)
{
    for (int i = 1; i < c->n; i++) {
        const bitt_schedule *a = x[0], *b = x[i];
        if (!a || !b) {
            if (a != b)
                diff_fail(c, "%s: only one of %s and %s gave a schedule", what, c->names[0],
                          c->names[i]);
            continue;
        }
        size_t al, bl;
        const uint8_t *ap = bitt_schedule_payload(a, &al), *bp = bitt_schedule_payload(b, &bl);
        if (strcmp(bitt_schedule_key(a), bitt_schedule_key(b)) || al != bl ||
            (al && memcmp(ap, bp, al)) || bitt_schedule_kind(a) != bitt_schedule_kind(b) ||
            bitt_schedule_interval(a) != bitt_schedule_interval(b) ||
            bitt_schedule_next_run_at(a) != bitt_schedule_next_run_at(b) ||
            bitt_schedule_occurrence(a) != bitt_schedule_occurrence(b))
            diff_fail(c,
                      "%s: %s gave %s every %lld next %lld occurrence %lld, %s gave %s every "
                      "%lld next %lld occurrence %lld",
                      what, c->names[i], bitt_schedule_key(b), (long long)bitt_schedule_interval(b),
                      (long long)bitt_schedule_next_run_at(b),
                      (long long)bitt_schedule_occurrence(b), c->names[0], bitt_schedule_key(a),
                      (long long)bitt_schedule_interval(a), (long long)bitt_schedule_next_run_at(a),
                      (long long)bitt_schedule_occurrence(a));
    }
}

static void schedule_step(diff_ctx *c, uint32_t op, const char *key)
{
    int rc[N];
    if (op == 1) {
        /* with edges, also intervals that pass the end of time from further */
        int64_t interval =
            c->edges && diff_rnd(c, 3) == 0 ? 1 + diff_rnd(c, 1000) : 1 + diff_rnd(c, 3) * 10;
        interval = diff_edge_duration(c, interval, 1);
        /* with edges, near the clock wherever it is (at the end of time too) */
        int64_t base = !c->edges ? 1000000 : c->now < INT64_MAX - 100 ? c->now : INT64_MAX - 100;
        int64_t first = diff_edge_time(c, diff_rnd(c, 2) ? 0 : base + diff_rnd(c, 100));
        const void *payload = "p";
        size_t len = 1;
        int kind = BITT_KIND_BYTES;
        diff_edge_value(c, &payload, &len, &kind);
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_schedule_upsert(c->s[i], key, interval, payload, len, kind, first);
        diff_same_rc(c, rc, "schedule upsert");
    } else if (op == 2 || op == 3) {
        bitt_schedule *x[N] = {0};
        const char *prefix = diff_rnd(c, 2) ? "" : "a";
        for (int i = 0; i < c->n; i++)
            rc[i] = op == 2 ? bitt_schedule_claim(c->s[i], prefix, &x[i])
                            : bitt_schedule_get(c->s[i], key, &x[i]);
        diff_same_rc(c, rc, "schedule claim/get");
        same_schedule(c, x, "schedule claim/get");
        for (int i = 0; i < c->n; i++)
            bitt_schedule_free(x[i]);
    } else if (op == 4) {
        bitt_schedule **l[N] = {0};
        size_t n[N] = {0};
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_schedule_list(c->s[i], &l[i], &n[i]);
        diff_same_rc(c, rc, "schedule list");
        same_u64(c, n, "schedule list", "count");
        for (size_t j = 0; j < n[0]; j++) {
            bitt_schedule *x[N];
            for (int i = 0; i < c->n; i++)
                x[i] = l[i][j];
            same_schedule(c, x, "schedule list");
        }
        for (int i = 0; i < c->n; i++)
            bitt_schedule_list_free(l[i], n[i]);
    } else {
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_schedule_delete(c->s[i], key);
        diff_same_rc(c, rc, "schedule delete");
    }
}

static void pubsub_step(diff_ctx *c, uint32_t op, const char *key)
{
    int rc[N];
    if (op == 6 || !c->subs[0]) {
        const char *channel = diff_edge_name(c, diff_rnd(c, 2) ? "c1" : "c2");
        const void *data = key;
        size_t len = strlen(key);
        int kind;
        diff_edge_value(c, &data, &len, &kind);
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_pubsub_publish(c->s[i], channel, data, len);
        diff_same_rc(c, rc, "publish");
        return;
    }
    bitt_message *m[N] = {0};
    for (int i = 0; i < c->n; i++)
        rc[i] = bitt_pubsub_next(c->subs[i], 0, &m[i]);
    diff_same_rc(c, rc, "subscription next");
    if (!rc[0]) {
        int64_t id[N], at[N];
        for (int i = 0; i < c->n; i++) {
            size_t al, bl;
            const uint8_t *a = bitt_message_payload(m[0], &al);
            const uint8_t *b = bitt_message_payload(m[i], &bl);
            if (al != bl || (al && memcmp(a, b, al)))
                diff_fail(c, "subscription next: payload: %s and %s differ", c->names[0],
                          c->names[i]);
            id[i] = (int64_t)bitt_message_id(m[i]);
            at[i] = bitt_message_created_at(m[i]);
        }
        diff_same_i64(c, id, "subscription next", "id");
        diff_same_i64(c, at, "subscription next", "created_at");
    }
    for (int i = 0; i < c->n; i++)
        bitt_message_free(m[i]);
}

static void other_step(diff_ctx *c)
{
    static const char *const keys[] = {"a", "a/b", "b", "ab"};
    const char *key = diff_edge_name(c, keys[diff_rnd(c, 4)]);
    uint32_t op = diff_rnd(c, 9);
    if (op == 0) {
        int rc[N];
        int64_t wait[N] = {0};
        int64_t cap = 1 + diff_rnd(c, 5), refill = 1 + diff_rnd(c, 3);
        int64_t period = diff_rnd(c, 2) ? 1000 : 1 + diff_rnd(c, 2000);
        int64_t n = 1 + diff_rnd(c, (uint32_t)cap);
        if (c->edges && diff_rnd(c, 8) == 0) { /* the parameters' bounds: 1..2^31-1 */
            static const int64_t edges[] = {INT32_MAX, (int64_t)INT32_MAX + 1, 0, -1, 1};
            int64_t *which[] = {&cap, &refill, &period, &n};
            *which[diff_rnd(c, 4)] = edges[diff_rnd(c, 5)];
            if (diff_rnd(c, 3) == 0)
                n = cap + diff_rnd(c, 2);
        }
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_budget_take(c->s[i], key, cap, refill, period, n, &wait[i]);
        diff_same_rc(c, rc, "budget take");
        diff_same_i64(c, wait, "budget take", "wait");
    } else if (op <= 5) {
        schedule_step(c, op, key);
    } else {
        pubsub_step(c, op, key);
    }
}

void diff_module_step(diff_ctx *c)
{
    /* in twentieths: queue, lease, outbox, the others; edges give the
     * outbox (error texts) and schedules (times) more turns */
    static const uint32_t plain[] = {10, 14, 16}, edgy[] = {7, 10, 14};
    const uint32_t *upto = c->edges ? edgy : plain;
    uint32_t area = c->edges ? diff_rnd(c, 20) : 2 * diff_rnd(c, 10);
    if (area < upto[0])
        queue_step(c);
    else if (area < upto[1])
        lease_step(c);
    else if (area < upto[2])
        outbox_step(c);
    else
        other_step(c);
}
