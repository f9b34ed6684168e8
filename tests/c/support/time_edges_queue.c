/*
 * tests/c/support/time_edges_queue.c: the time edges of the queue: enqueue
 * delays (also in a commit), delivery leases, extend, snooze and nack
 * delays and the backoff (time_edges.h).
 */
#include <stdio.h>
#include <string.h>

#include "time_edges.h"

#define MAX_ATTEMPTS 10 /* never reached: a probe must not dead-letter anything */
#define DEFAULT_LEASE 30000

static int valid(int64_t d)
{
    return d >= 0 && d <= TE_DMAX;
}

/* The topic's one message, at clock `at`, is in state want: 'p' pending
 * (claimable since `since`), 'd' delayed or 'r' processing. */
static void stats_at(te_run *r, bitt_store *s, const char *topic, int64_t at, char want,
                     int64_t since)
{
    char call[160];
    snprintf(call, sizeof call, "queue.stats %s at %lld", topic, (long long)at);
    te_at(r, s, at);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    if (!te_status(r, call, bitt_queue_stats_get(s, topic, &st), BITT_OK))
        return;
    te_note(r, "  pending %llu delayed %llu processing %llu dead %llu oldest %lld",
            (unsigned long long)st.pending, (unsigned long long)st.delayed,
            (unsigned long long)st.processing, (unsigned long long)st.dead,
            (long long)st.oldest_pending_at);
    if (st.pending != (want == 'p') || st.delayed != (want == 'd') ||
        st.processing != (want == 'r') || st.dead ||
        st.oldest_pending_at != (want == 'p' ? since : 0))
        te_bad(r, "%s: expected only one %s message%s%lld", call,
               want == 'p'   ? "pending"
               : want == 'd' ? "delayed"
                             : "processing",
               want == 'p' ? ", claimable since " : "", want == 'p' ? (long long)since : 0LL);
}

/* The message, delayed or leased (`before`) at now, is claimable from end
 * on; a saturated end never comes, not even at MAX-1. Probing changes
 * nothing: the clock goes back to now. */
static void until(te_run *r, bitt_store *s, const char *topic, int64_t now, int64_t end,
                  char before)
{
    stats_at(r, s, topic, now, end <= now ? 'p' : before, end);
    if (end - 1 > now)
        stats_at(r, s, topic, end - 1, before, 0);
    if (end < TE_MAX)
        stats_at(r, s, topic, end, 'p', end);
    stats_at(r, s, topic, TE_MAX - 1, end < TE_MAX ? 'p' : before, end);
    te_at(r, s, now);
}

static int enqueue(bitt_store *s, const char *topic, int64_t delay, int in_txn)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.delay_ms = delay;
    o.max_attempts = MAX_ATTEMPTS;
    uint64_t id;
    if (!in_txn)
        return bitt_queue_enqueue(s, topic, "x", 1, BITT_KIND_BYTES, &o, &id);
    bitt_txn *t = NULL;
    int rc = bitt_txn_begin(s, &t);
    if (!rc)
        rc = bitt_txn_enqueue(t, topic, "x", 1, BITT_KIND_BYTES, &o);
    if (!rc)
        rc = bitt_txn_commit(t, NULL);
    bitt_txn_free(t);
    return rc;
}

typedef struct delivery {
    uint64_t id;
    char token[40];
} delivery;

/* Dequeues the topic's message at now with lease_ms; a delivery with
 * attempt `attempt` whose lease ends at now + lease (saturating). */
static int dequeue(te_run *r, bitt_store *s, const char *topic, int64_t now, int64_t lease_ms,
                   uint32_t attempt, delivery *d)
{
    char call[200];
    snprintf(call, sizeof call, "queue.dequeue %s at %lld lease %lld", topic, (long long)now,
             (long long)lease_ms);
    te_at(r, s, now);
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.lease_ms = lease_ms;
    bitt_messages *out = NULL;
    int ok = valid(lease_ms);
    if (!te_status(r, call, bitt_queue_dequeue(s, topic, &o, &out), ok ? BITT_OK : BITT_EINVAL) ||
        !ok) {
        bitt_messages_free(out);
        return 0;
    }
    const bitt_message *m = bitt_messages_at(out, 0);
    const int64_t end = te_sum(now, lease_ms ? lease_ms : DEFAULT_LEASE);
    if (m) {
        te_note(r, "  count %zu attempts %u due_at %lld", bitt_messages_count(out),
                bitt_message_attempts(m), (long long)bitt_message_due_at(m));
        d->id = bitt_message_id(m);
        snprintf(d->token, sizeof d->token, "%s", bitt_message_token(m));
    }
    if (!m || bitt_messages_count(out) != 1 || bitt_message_attempts(m) != attempt ||
        bitt_message_due_at(m) != end)
        te_bad(r, "%s: expected one delivery, attempt %u, lease until %lld", call, attempt,
               (long long)end);
    bitt_messages_free(out);
    return m != NULL;
}

/* A message enqueued at now with delay (alone, or in a commit) is
 * claimable from now + delay. */
static void delayed(te_run *r, bitt_store *s, size_t i, size_t j, int in_txn)
{
    const int64_t now = te_times[i], delay = te_durations[j];
    char topic[64], call[200];
    snprintf(topic, sizeof topic, "%s/%zu/%zu", in_txn ? "qt" : "q", i, j);
    snprintf(call, sizeof call, "%s %s now %lld delay %lld",
             in_txn ? "txn.enqueue" : "queue.enqueue", topic, (long long)now, (long long)delay);
    te_at(r, s, now);
    if (te_status(r, call, enqueue(s, topic, delay, in_txn),
                  valid(delay) ? BITT_OK : BITT_EINVAL) &&
        valid(delay))
        until(r, s, topic, now, te_sum(now, delay), 'd');
}

/* A delivery at now with lease d, extended by d, then nacked with delay
 * d (-1: the default backoff, exp:1000:300000). */
static void leased(te_run *r, bitt_store *s, size_t i, size_t j)
{
    const int64_t now = te_times[i], d = te_durations[j];
    char topic[64], call[200];
    snprintf(topic, sizeof topic, "ql/%zu/%zu", i, j);
    te_at(r, s, now);
    if (!te_status(r, "queue.enqueue", enqueue(s, topic, 0, 0), BITT_OK))
        return;
    delivery del;
    uint32_t attempt = 1;
    if (dequeue(r, s, topic, now, d, attempt, &del))
        until(r, s, topic, now, te_sum(now, d ? d : DEFAULT_LEASE), 'r');
    else if (!dequeue(r, s, topic, now, 1000, attempt, &del))
        return;
    snprintf(call, sizeof call, "queue.extend %s at %lld lease %lld", topic, (long long)now,
             (long long)d);
    if (te_status(r, call, bitt_queue_extend(s, topic, del.id, del.token, d),
                  valid(d) ? BITT_OK : BITT_EINVAL) &&
        valid(d))
        until(r, s, topic, now, te_sum(now, d), 'r');
    if (d == 0 && !dequeue(r, s, topic, now, 1000, ++attempt, &del)) /* handed back */
        return;
    snprintf(call, sizeof call, "queue.nack %s at %lld delay %lld", topic, (long long)now,
             (long long)d);
    const int ok = d == -1 || valid(d);
    if (te_status(r, call, bitt_queue_nack(s, topic, del.id, del.token, "e", d),
                  ok ? BITT_OK : BITT_EINVAL) &&
        ok)
        until(r, s, topic, now, te_sum(now, d >= 0 ? d : 1000 << (attempt - 1)), 'd');
}

/* A delivery at now snoozed by d: pending from now + d with its attempt
 * given back, so the delivery after it is attempt 1 again. */
static void snoozed(te_run *r, bitt_store *s, size_t i, size_t j)
{
    const int64_t now = te_times[i], d = te_durations[j];
    char topic[64], call[200];
    snprintf(topic, sizeof topic, "qs/%zu/%zu", i, j);
    te_at(r, s, now);
    delivery del;
    if (!te_status(r, "queue.enqueue", enqueue(s, topic, 0, 0), BITT_OK) ||
        !dequeue(r, s, topic, now, 1000, 1, &del))
        return;
    snprintf(call, sizeof call, "queue.snooze %s at %lld delay %lld", topic, (long long)now,
             (long long)d);
    if (!te_status(r, call, bitt_queue_snooze(s, topic, del.id, del.token, d),
                   valid(d) ? BITT_OK : BITT_EINVAL) ||
        !valid(d))
        return;
    const int64_t end = te_sum(now, d);
    until(r, s, topic, now, end, 'd');
    if (end < TE_MAX)
        dequeue(r, s, topic, end, 1000, 1, &del);
}

void te_queue(te_run *r)
{
    bitt_store *s = te_store(r, "");
    for (size_t i = 0; s && i < te_ntimes; i++)
        for (size_t j = 0; j < te_ndurations; j++) {
            delayed(r, s, i, j, 0);
            delayed(r, s, i, j, 1);
            leased(r, s, i, j);
            snoozed(r, s, i, j);
        }
}

/* ---- the backoff ------------------------------------------------------------------ */

#define P62 (INT64_C(1) << 62)

/* Store options and the backoff delays they give for attempts 1..7. */
static const struct {
    const char *options;
    int64_t delays[7];
} backoffs[] = {
    {"queue_backoff=0,1,1099511627776,4611686018427387904,9223372036854775806,"
     "9223372036854775807",
     {0, 1, TE_DMAX, P62, TE_MAX - 1, TE_MAX, TE_MAX}},
    /* doubling 2^62 passes INT64_MAX: the delay saturates, then the cap */
    {"queue_backoff=exp:4611686018427387904:9223372036854775807",
     {P62, TE_MAX, TE_MAX, TE_MAX, TE_MAX, TE_MAX, TE_MAX}},
    {"queue_backoff=exp:1099511627776:4611686018427387904",
     {TE_DMAX, 2 * TE_DMAX, 4 * TE_DMAX, 8 * TE_DMAX, 16 * TE_DMAX, 32 * TE_DMAX, 64 * TE_DMAX}},
};

/* Nacks with the backoff until the retry time saturates: each retry is
 * due at the nack's time + the attempt's delay. */
static void backoff_from(te_run *r, bitt_store *s, size_t b, size_t i)
{
    char topic[64];
    snprintf(topic, sizeof topic, "qb/%zu/%zu", b, i);
    int64_t at = te_times[i];
    te_at(r, s, at);
    if (!te_status(r, "queue.enqueue", enqueue(s, topic, 0, 0), BITT_OK))
        return;
    for (uint32_t attempt = 1; attempt <= 7; attempt++) {
        delivery del;
        if (!dequeue(r, s, topic, at, 1000, attempt, &del))
            return;
        char call[200];
        snprintf(call, sizeof call, "queue.nack %s at %lld (backoff, attempt %u)", topic,
                 (long long)at, attempt);
        if (!te_status(r, call, bitt_queue_nack(s, topic, del.id, del.token, NULL, -1), BITT_OK))
            return;
        const int64_t due = te_sum(at, backoffs[b].delays[attempt - 1]);
        until(r, s, topic, at, due, 'd');
        if (due == TE_MAX)
            return;
        at = due;
    }
}

void te_backoff(te_run *r)
{
    for (size_t b = 0; b < sizeof backoffs / sizeof *backoffs; b++) {
        bitt_store *s = te_store(r, backoffs[b].options);
        for (size_t i = 0; s && i < te_ntimes; i++)
            backoff_from(r, s, b, i);
    }
}
