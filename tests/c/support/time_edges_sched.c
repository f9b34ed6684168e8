/*
 * tests/c/support/time_edges_sched.c: the time edges of schedules (first
 * run, next occurrence) and of publish/subscribe retention (time_edges.h).
 */
#include <stdio.h>
#include <string.h>

#include "time_edges.h"

__extension__ typedef __int128 wide;

/* The oracle of a claim at `at` of an occurrence at next <= at: the first
 * next + k * interval after at, in 128 bits, saturating at INT64_MAX. */
static int64_t advance(int64_t next, int64_t interval, int64_t at)
{
    wide v = (wide)next + ((wide)(at - next) / interval + 1) * interval;
    return v > TE_MAX ? TE_MAX : (int64_t)v;
}

static void sched_get(te_run *r, bitt_store *s, const char *key, int64_t want)
{
    bitt_schedule *got = NULL;
    char call[160];
    snprintf(call, sizeof call, "schedule.get %s", key);
    if (te_status(r, call, bitt_schedule_get(s, key, &got), BITT_OK)) {
        int64_t next = bitt_schedule_next_run_at(got);
        te_note(r, "  next_run_at %lld", (long long)next);
        if (next != want)
            te_bad(r, "%s: next_run_at %lld, expected %lld", call, (long long)next,
                   (long long)want);
    }
    bitt_schedule_free(got);
}

/* Claims at `at` the schedule key whose next run is next: once when it is
 * due, and never twice. The next run after the claim. */
static int64_t claims(te_run *r, bitt_store *s, const char *key, int64_t at, int64_t next,
                      int64_t interval)
{
    char call[160];
    snprintf(call, sizeof call, "schedule.claim %s at %lld", key, (long long)at);
    te_at(r, s, at);
    bitt_schedule *got = NULL;
    if (next <= at && te_status(r, call, bitt_schedule_claim(s, key, &got), BITT_OK)) {
        int64_t occurrence = bitt_schedule_occurrence(got), after = bitt_schedule_next_run_at(got);
        int64_t want = advance(next, interval, at);
        te_note(r, "  occurrence %lld next_run_at %lld", (long long)occurrence, (long long)after);
        if (occurrence != next || after != want)
            te_bad(r, "%s: occurrence %lld next_run_at %lld, expected %lld and %lld", call,
                   (long long)occurrence, (long long)after, (long long)next, (long long)want);
        next = want;
    }
    bitt_schedule_free(got);
    got = NULL;
    snprintf(call, sizeof call, "schedule.claim %s again at %lld", key, (long long)at);
    te_status(r, call, bitt_schedule_claim(s, key, &got), BITT_NOTFOUND);
    bitt_schedule_free(got);
    return next;
}

static void schedule_at(te_run *r, bitt_store *s, size_t i, size_t j, size_t k)
{
    const int64_t now = te_times[i], interval = te_durations[j];
    const int64_t firsts[] = {0, 1, now, TE_MAX - 1, TE_MAX};
    const int64_t first = firsts[k];
    const int ok = interval >= 1 && interval <= TE_DMAX;
    char key[64], call[200];
    snprintf(key, sizeof key, "s/%zu/%zu/%zu", i, j, k);
    snprintf(call, sizeof call, "schedule.upsert %s now %lld interval %lld first %lld", key,
             (long long)now, (long long)interval, (long long)first);
    te_at(r, s, now);
    if (!te_status(r, call, bitt_schedule_upsert(s, key, interval, "p", 1, BITT_KIND_BYTES, first),
                   ok ? BITT_OK : BITT_EINVAL) ||
        !ok)
        return;
    int64_t next = first ? first : te_sum(now, interval);
    sched_get(r, s, key, next);
    next = claims(r, s, key, now, next, interval);
    next = claims(r, s, key, TE_MAX - 1, next, interval);
    /* An unchanged interval keeps the cadence, also at the end of time. */
    if (te_status(r, "  schedule.upsert again at MAX-1",
                  bitt_schedule_upsert(s, key, interval, "q", 1, BITT_KIND_BYTES, 0), BITT_OK))
        sched_get(r, s, key, next);
}

void te_schedule(te_run *r)
{
    bitt_store *s = te_store(r, "");
    for (size_t i = 0; s && i < te_ntimes; i++)
        for (size_t j = 0; j < te_ndurations; j++)
            for (size_t k = 0; k < 5; k++)
                schedule_at(r, s, i, j, k);
    /* Every occurrence up to MAX-1 has been claimed once: a claim of any
     * key (no prefix) at MAX-1 finds nothing. */
    bitt_schedule *got = NULL;
    if (s)
        te_at(r, s, TE_MAX - 1);
    if (s &&
        !te_status(r, "schedule.claim (any key) at MAX-1", bitt_schedule_claim(s, NULL, &got),
                   BITT_NOTFOUND) &&
        got)
        te_bad(r, "schedule.claim (any key) at MAX-1 claimed %s at %lld again",
               bitt_schedule_key(got), (long long)bitt_schedule_occurrence(got));
    bitt_schedule_free(got);
}

/* ---- publish/subscribe retention -------------------------------------------------- */

/* A message published at now is delivered to a subscriber reading at
 * `at` only while at < now + retention (saturating: always). */
static void read_at(te_run *r, bitt_store *s, size_t i, int64_t retention, int64_t at, int probe)
{
    const int64_t now = te_times[i];
    char channel[64], call[200];
    snprintf(channel, sizeof channel, "c/%lld/%zu/%d", (long long)retention, i, probe);
    te_at(r, s, now);
    bitt_sub *sub = NULL;
    if (!te_status(r, "pubsub.subscribe", bitt_pubsub_subscribe(s, channel, &sub), BITT_OK))
        return;
    snprintf(call, sizeof call, "pubsub.publish %s at %lld", channel, (long long)now);
    if (te_status(r, call, bitt_pubsub_publish(s, channel, "m", 1), BITT_OK)) {
        te_at(r, s, at);
        bitt_message *m = NULL;
        snprintf(call, sizeof call, "pubsub.next %s at %lld retention %lld", channel, (long long)at,
                 (long long)retention);
        int live = at < te_sum(now, retention);
        if (te_status(r, call, bitt_pubsub_next(sub, 0, &m), live ? BITT_OK : BITT_NOTFOUND) &&
            live && bitt_message_created_at(m) != now)
            te_bad(r, "%s: created_at %lld, expected %lld", call,
                   (long long)bitt_message_created_at(m), (long long)now);
        bitt_message_free(m);
    }
    bitt_pubsub_close(sub);
}

void te_pubsub(te_run *r)
{
    static const struct {
        const char *options;
        int64_t retention;
    } cfg[] = {{"pubsub_retention=1099511627776", TE_DMAX}, {"pubsub_retention=1", 1}};
    for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
        bitt_store *s = te_store(r, cfg[c].options);
        const int64_t retention = cfg[c].retention;
        for (size_t i = 0; s && i < te_ntimes; i++) {
            const int64_t end = te_sum(te_times[i], retention);
            read_at(r, s, i, retention, end - 1, 0);
            if (end < TE_MAX)
                read_at(r, s, i, retention, end, 1);
            read_at(r, s, i, retention, TE_MAX - 1, 2);
        }
    }
}
