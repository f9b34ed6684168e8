/*
 * produce.c: the producer, and what comes before it: a check that the
 * store holds nothing of an earlier run, or (--reset) clearing it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jobs.h"

static const char *const prefixes[] = {"results/", "stats/"};

/* How many keys start with prefix (counting stops at one page). */
static int count_keys(bitt_store *store, const char *prefix, size_t *count)
{
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    bitt_entries *page = NULL;
    o.prefix = prefix;
    o.prefix_len = strlen(prefix);
    o.limit = BITT_LIST_LIMIT_MAX;
    int rc = bitt_kv_list(store, &o, &page);
    *count = rc >= 0 ? bitt_entries_count(page) : 0;
    bitt_entries_free(page);
    return rc;
}

static int queue_stats(bitt_store *store, bitt_queue_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->version = BITT_QUEUE_STATS_VERSION;
    return bitt_queue_stats_get(store, JOBS_TOPIC, s);
}

int jobs_check_fresh(bitt_store *store)
{
    bitt_queue_stats s;
    uint64_t pending = 0, parked = 0;
    size_t keys[2] = {0, 0};
    int rc = queue_stats(store, &s);
    if (rc < 0)
        return jobs_fail("queue stats", rc);
    if ((rc = bitt_outbox_counts(store, JOBS_STREAM, &pending, &parked)) < 0)
        return jobs_fail("outbox counts", rc);
    for (int i = 0; i < 2; i++)
        if ((rc = count_keys(store, prefixes[i], &keys[i])) < 0)
            return jobs_fail("list", rc);
    if (s.pending + s.delayed + s.processing + s.dead + pending + parked + keys[0] + keys[1] == 0)
        return 0;
    fprintf(stderr,
            "jobs: the store holds an earlier run (queue \"%s\": %" PRIu64 " pending, %" PRIu64
            " delayed, %" PRIu64 " processing, %" PRIu64 " dead; outbox \"%s\": %" PRIu64
            " events; %zu%s results).\n"
            "      Use a fresh store (scripts/run deletes bitt.db first), or pass --reset.\n",
            JOBS_TOPIC, s.pending, s.delayed, s.processing, s.dead, JOBS_STREAM, pending + parked,
            keys[0], keys[0] == BITT_LIST_LIMIT_MAX ? "+" : "");
    return 2;
}

static int delete_prefix(bitt_store *store, const char *prefix)
{
    for (;;) {
        bitt_list_options o = BITT_LIST_OPTIONS_INIT;
        bitt_entries *page = NULL;
        bitt_txn *txn = NULL;
        o.prefix = prefix;
        o.prefix_len = strlen(prefix);
        o.limit = BITT_LIST_LIMIT_MAX;
        int rc = bitt_kv_list(store, &o, &page);
        size_t n = rc >= 0 ? bitt_entries_count(page) : 0;
        if (rc >= 0 && n > 0)
            rc = bitt_txn_begin(store, &txn);
        for (size_t i = 0; rc >= 0 && i < n; i++) {
            size_t klen = 0;
            const uint8_t *k = bitt_entry_key(bitt_entries_at(page, i), &klen);
            rc = bitt_txn_delete(txn, k, klen);
        }
        if (rc >= 0 && txn)
            rc = bitt_txn_commit(txn, NULL);
        bitt_txn_free(txn);
        bitt_entries_free(page);
        if (rc < 0)
            return jobs_fail("reset: delete keys", rc);
        if (n == 0)
            return 0;
    }
}

int jobs_reset(bitt_store *store)
{
    int64_t start = jobs_clock_ms();
    uint64_t ignored = 0;
    int rc;
    /* Claim and ack whatever is left; in-flight deliveries of a run that
     * stopped come back when their leases end. */
    for (;;) {
        bitt_queue_stats s;
        if ((rc = queue_stats(store, &s)) < 0)
            return jobs_fail("reset: queue stats", rc);
        if (s.pending + s.delayed + s.processing == 0)
            break;
        if (jobs_clock_ms() - start > 120000) {
            fprintf(stderr, "jobs: reset: messages still in flight after 2 minutes\n");
            return 2;
        }
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        bitt_messages *list = NULL;
        o.limit = BITT_DEQUEUE_MAX;
        o.wait_ms = 200;
        if ((rc = bitt_queue_dequeue(store, JOBS_TOPIC, &o, &list)) < 0)
            return jobs_fail("reset: dequeue", rc);
        for (size_t i = 0; rc >= 0 && i < bitt_messages_count(list); i++) {
            const bitt_message *m = bitt_messages_at(list, i);
            rc = bitt_queue_ack(store, JOBS_TOPIC, bitt_message_id(m), bitt_message_token(m));
            if (rc == BITT_ETOKEN)
                rc = BITT_OK; /* its lease ended meanwhile: it comes back */
        }
        bitt_messages_free(list);
        if (rc < 0)
            return jobs_fail("reset: ack", rc);
    }
    if ((rc = bitt_queue_dead_delete(store, JOBS_TOPIC, 0, &ignored)) < 0)
        return jobs_fail("reset: delete dead letters", rc);
    for (;;) {
        bitt_messages *events = NULL;
        uint64_t seqs[BITT_LIST_LIMIT_MAX];
        if ((rc = bitt_outbox_pending(store, JOBS_STREAM, BITT_LIST_LIMIT_MAX, &events)) < 0)
            return jobs_fail("reset: outbox pending", rc);
        size_t n = bitt_messages_count(events);
        for (size_t i = 0; i < n; i++)
            seqs[i] = bitt_message_id(bitt_messages_at(events, i));
        bitt_messages_free(events);
        if (n == 0)
            break;
        if ((rc = bitt_outbox_ack(store, JOBS_STREAM, seqs, n, &ignored)) < 0)
            return jobs_fail("reset: outbox ack", rc);
    }
    if ((rc = bitt_outbox_discard(store, JOBS_STREAM, NULL, 0, &ignored)) < 0)
        return jobs_fail("reset: outbox discard", rc);
    for (int i = 0; i < 2; i++)
        if (delete_prefix(store, prefixes[i]) != 0)
            return 2;
    return 0;
}

int jobs_produce(bitt_store *store, const jobs_config *cfg)
{
    for (int64_t first = 1; first <= cfg->jobs; first += JOBS_ENQUEUE_BATCH) {
        bitt_txn *txn = NULL;
        int rc = bitt_txn_begin(store, &txn);
        for (int64_t id = first; rc >= 0 && id < first + JOBS_ENQUEUE_BATCH && id <= cfg->jobs;
             id++) {
            job j = {id, (int)(id % cfg->partitions), job_value(id)};
            char payload[128], dedup[32];
            bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
            int n = job_format(&j, payload, sizeof(payload));
            /* The dedup key makes a producer that runs twice harmless. */
            o.max_attempts = JOBS_MAX_ATTEMPTS;
            o.dedup_key = dedup;
            o.dedup_key_len = (size_t)snprintf(dedup, sizeof(dedup), "job/%" PRId64, id);
            rc = bitt_txn_enqueue(txn, JOBS_TOPIC, payload, (size_t)n, BITT_KIND_JSON, &o);
        }
        if (rc >= 0)
            rc = bitt_txn_commit(txn, NULL);
        bitt_txn_free(txn);
        if (rc < 0)
            return jobs_fail("enqueue", rc);
    }
    return 0;
}
