/*
 * verify.c: the checks at the end. Everything is read back from the store
 * (results, dead letters, counters, queue and outbox state) and compared
 * with what the rules of the jobs say must have happened.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"

#define REPORT_MAX 10

typedef struct seen {
    uint8_t *done, *dead;
    int64_t *result, *attempts;
} seen;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
violation(jobs_summary *s, const char *fmt, ...)
{
    if (s->violations++ < REPORT_MAX) {
        va_list ap;
        va_start(ap, fmt);
        fputs("jobs: VIOLATION: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static int read_results(bitt_store *store, const jobs_config *cfg, seen *v, jobs_summary *s)
{
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    char *cursor = NULL;
    int rc;
    o.prefix = "results/";
    o.prefix_len = 8;
    o.limit = BITT_LIST_LIMIT_MAX;
    do {
        bitt_entries *page = NULL;
        o.cursor = cursor;
        rc = bitt_kv_list(store, &o, &page);
        for (size_t i = 0; rc >= 0 && i < bitt_entries_count(page); i++) {
            const bitt_entry *e = bitt_entries_at(page, i);
            size_t klen = 0, vlen = 0;
            const uint8_t *k = bitt_entry_key(e, &klen);
            const uint8_t *val = bitt_entry_value(e, &vlen);
            int64_t id = 0, result = 0, attempts = 0, worker = -1, key_id = 0;
            char key[48];
            if (json_int(val, vlen, "job", &id) != 0 || json_int(val, vlen, "result", &result) ||
                json_int(val, vlen, "attempts", &attempts) ||
                json_int(val, vlen, "worker", &worker) || id < 1 || id > cfg->jobs) {
                violation(s, "an unreadable result (%" PRId64 " of %" PRId64 " so far)", s->done,
                          cfg->jobs);
                continue;
            }
            key_id = snprintf(key, sizeof(key), "results/%" PRId64, id);
            if ((size_t)key_id != klen || memcmp(key, k, klen) != 0)
                violation(s, "job %" PRId64 "'s result is under another key", id);
            v->done[id]++;
            v->result[id] = result;
            v->attempts[id] = attempts;
            s->done++;
            s->sum += result;
            if (attempts > 1)
                s->retried++;
            if (worker >= 0 && worker < cfg->workers)
                s->per_worker[worker]++;
        }
        free(cursor);
        cursor = NULL;
        const char *next = rc >= 0 ? bitt_entries_cursor(page) : NULL;
        if (next && (cursor = strdup(next)) == NULL)
            rc = BITT_ENOMEM;
        bitt_entries_free(page);
    } while (rc >= 0 && cursor);
    free(cursor);
    return rc < 0 ? jobs_fail("list results", rc) : 0;
}

static int read_dead(bitt_store *store, const jobs_config *cfg, seen *v, jobs_summary *s)
{
    uint64_t after = 0;
    for (;;) {
        bitt_messages *list = NULL;
        int rc = bitt_queue_dead_list(store, JOBS_TOPIC, after, 1000, &list);
        if (rc < 0)
            return jobs_fail("dead letters", rc);
        size_t n = bitt_messages_count(list);
        for (size_t i = 0; i < n; i++) {
            const bitt_message *m = bitt_messages_at(list, i);
            size_t len = 0;
            const uint8_t *p = bitt_message_payload(m, &len);
            job j;
            after = bitt_message_id(m);
            if (job_parse(p, len, &j) != 0 || j.id < 1 || j.id > cfg->jobs) {
                violation(s, "an unreadable dead letter (id %" PRIu64 ")", after);
                continue;
            }
            v->dead[j.id]++;
            s->dead++;
            if (bitt_message_attempts(m) != JOBS_MAX_ATTEMPTS)
                violation(s, "job %" PRId64 " died after %" PRId64 " attempts", j.id,
                          (int64_t)bitt_message_attempts(m));
        }
        bitt_messages_free(list);
        if (n < 1000)
            return 0;
    }
}

static void check_jobs(const jobs_config *cfg, const jobs_dispatcher *d, const seen *v,
                       jobs_summary *s)
{
    for (int64_t id = 1; id <= cfg->jobs; id++) {
        int broken = job_fails(id, JOBS_MAX_ATTEMPTS);
        if (v->done[id] + v->dead[id] != 1)
            violation(s, "job %" PRId64 " has %" PRId64 " results and dead letters, not 1", id,
                      (int64_t)v->done[id] + v->dead[id]);
        else if (broken && !v->dead[id])
            violation(s, "job %" PRId64 " always fails, yet it is done", id);
        else if (!broken && !v->done[id])
            violation(s, "job %" PRId64 " should be done, yet it is dead", id);
        if (v->done[id] && d->delivered[id] != 1)
            violation(s, "job %" PRId64 " is done and its event was delivered %" PRId64 " times",
                      id, (int64_t)d->delivered[id]);
        else if (!v->done[id] && d->delivered[id] != 0)
            violation(s, "job %" PRId64 " is not done, yet %" PRId64 " events were delivered", id,
                      (int64_t)d->delivered[id]);
        else if (v->done[id] && d->delivered_result[id] != v->result[id])
            violation(s, "job %" PRId64 "'s delivered event says result %" PRId64, id,
                      d->delivered_result[id]);
        if (v->done[id] && v->result[id] != job_result(job_value(id)))
            violation(s, "job %" PRId64 "'s result is %" PRId64, id, v->result[id]);
        if (v->done[id] && job_fails(id, 1) && v->attempts[id] < 2)
            violation(
                s, "job %" PRId64 " fails its first attempt, yet it was done on attempt %" PRId64,
                id, v->attempts[id]);
    }
}

static int check_store(bitt_store *store, const jobs_dispatcher *d, jobs_summary *s)
{
    bitt_queue_stats q;
    uint64_t pending = 0, parked = 0;
    int64_t sum = 0, done = 0;
    memset(&q, 0, sizeof(q));
    q.version = BITT_QUEUE_STATS_VERSION;
    int rc = bitt_queue_stats_get(store, JOBS_TOPIC, &q);
    if (rc < 0)
        return jobs_fail("queue stats", rc);
    if ((rc = bitt_outbox_counts(store, JOBS_STREAM, &pending, &parked)) < 0)
        return jobs_fail("outbox counts", rc);
    if ((rc = jobs_counter(store, "stats/sum", &sum)) < 0 ||
        (rc = jobs_counter(store, "stats/done", &done)) < 0)
        return jobs_fail("counters", rc);
    if (q.pending + q.delayed + q.processing != 0)
        violation(s, "the queue still holds %" PRId64 " messages",
                  (int64_t)(q.pending + q.delayed + q.processing));
    if ((int64_t)q.dead != s->dead)
        violation(s, "queue stats count %" PRId64 " dead, the list %" PRId64, (int64_t)q.dead,
                  s->dead);
    if (pending + parked != 0)
        violation(s, "the outbox still holds %" PRId64 " events", (int64_t)(pending + parked));
    if (sum != s->sum)
        violation(s, "counter stats/sum is %" PRId64 ", the results add up to %" PRId64, sum,
                  s->sum);
    if (done != s->done)
        violation(s, "counter stats/done is %" PRId64 ", there are %" PRId64 " results", done,
                  s->done);
    if ((int64_t)d->events != s->done)
        violation(s, "%" PRId64 " events were delivered for %" PRId64 " results",
                  (int64_t)d->events, s->done);
    if (d->out_of_order || d->unreadable)
        violation(s, "events out of sequence order: %" PRId64 ", unreadable: %" PRId64,
                  (int64_t)d->out_of_order, (int64_t)d->unreadable);
    return 0;
}

int jobs_verify(bitt_store *store, const jobs_config *cfg, const jobs_dispatcher *d,
                jobs_summary *s)
{
    size_t n = (size_t)cfg->jobs + 1;
    seen v = {calloc(n, 1), calloc(n, 1), calloc(n, sizeof(int64_t)), calloc(n, sizeof(int64_t))};
    int code = 0;
    if (!v.done || !v.dead || !v.result || !v.attempts)
        code = jobs_fail("out of memory", BITT_ENOMEM);
    if (code == 0)
        code = read_results(store, cfg, &v, s);
    if (code == 0)
        code = read_dead(store, cfg, &v, s);
    if (code == 0) {
        check_jobs(cfg, d, &v, s);
        code = check_store(store, d, s);
    }
    if (s->violations > REPORT_MAX)
        fprintf(stderr, "jobs: ... and %" PRId64 " more violations\n", s->violations - REPORT_MAX);
    free(v.done);
    free(v.dead);
    free(v.result);
    free(v.attempts);
    return code;
}
