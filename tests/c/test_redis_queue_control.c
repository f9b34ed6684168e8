/*
 * The Redis backend's queue control (ops version 6) where the contract
 * cannot look: its keys and its wake-ups, on a private server.
 *
 *   - priority 0 keeps the layout of before priorities (P qr:<topic>, no
 *     priority field), so data written then stays claimable beside higher
 *     and lower priorities; a level's keys go once it is empty (ack,
 *     cancel, a claim that meets a dead last lease, dead_retry brings it
 *     back);
 *   - stats count over every level;
 *   - a dedup key freed by an earlier op of a commit (ack, cancel) is free
 *     to a later enqueue of that commit, and one freed after is not;
 *   - the commit's queue ops publish the wake enqueue does when they may
 *     make a message claimable (nack, snooze, reschedule), and cancel does
 *     not (a PUBLISH of our own marks where the script's would be).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "bitt.h"
#include "private_redis.h"

static ts_server g_srv;
static redisContext *g_raw;

static int start_server(void **state)
{
    (void)state;
    return ts_redis_start(&g_srv, "rqc", &g_raw);
}

static int stop_server(void **state)
{
    (void)state;
    ts_redis_stop(&g_srv, &g_raw, "test_redis_queue_control");
    return 0;
}

/* A raw integer command (EXISTS, HEXISTS, ZCARD): its value. */
static long long raw_int(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(g_raw, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("%s: not an integer reply", fmt);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static bitt_store *open_store(const char *prefix)
{
    char url[512];
    snprintf(url, sizeof url, "%s?prefix=%s", g_srv.url, prefix);
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s))
        fail_msg("bitt_store_open: %s", bitt_error_last());
    assert_int_equal(bitt_clock_set_manual(s, 1000000), BITT_OK);
    return s;
}

static uint64_t enqueue(bitt_store *s, const char *topic, int32_t priority, const char *dedup)
{
    bitt_enqueue_options o;
    assert_int_equal(bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION), BITT_OK);
    o.priority = priority;
    o.max_attempts = 1;
    o.dedup_key = dedup;
    o.dedup_key_len = dedup ? strlen(dedup) : 0;
    uint64_t id = 0;
    assert_int_equal(bitt_queue_enqueue(s, topic, "x", 1, BITT_KIND_BYTES, &o, &id), BITT_OK);
    return id;
}

/* Claims up to limit messages of topic with a 100 ms lease. */
static bitt_messages *claim(bitt_store *s, const char *topic, uint32_t limit)
{
    bitt_dequeue_options o;
    assert_int_equal(bitt_dequeue_options_init(&o, BITT_DEQUEUE_OPTIONS_VERSION), BITT_OK);
    o.limit = limit;
    o.lease_ms = 100;
    bitt_messages *m = NULL;
    assert_int_equal(bitt_queue_dequeue(s, topic, &o, &m), BITT_OK);
    return m;
}

static void test_priority_zero_keeps_the_old_layout(void **state)
{
    (void)state;
    bitt_store *s = open_store("lay");
    uint64_t old = enqueue(s, "t", 0, NULL);
    /* what a store of before priorities holds: the one order set */
    assert_int_equal(raw_int("EXISTS {lay}:qr:t"), 1);
    assert_int_equal(raw_int("EXISTS {lay}:qy:t"), 0);
    assert_int_equal(raw_int("HEXISTS {lay}:m:%llu y", (unsigned long long)old), 0);

    uint64_t high = enqueue(s, "t", 5, NULL);
    uint64_t low = enqueue(s, "t", -3, NULL);
    assert_int_equal(raw_int("ZCARD {lay}:qy:t"), 2);
    assert_int_equal(raw_int("EXISTS {lay}:qr5:t"), 1);
    assert_int_equal(raw_int("EXISTS {lay}:qr-3:t"), 1);

    bitt_messages *m = claim(s, "t", 3);
    assert_int_equal(bitt_messages_count(m), 3);
    uint64_t want[3] = {high, old, low};
    int32_t prio[3] = {5, 0, -3};
    for (size_t i = 0; i < 3; i++) {
        assert_true(bitt_message_id(bitt_messages_at(m, i)) == want[i]);
        assert_int_equal(bitt_message_priority(bitt_messages_at(m, i)), prio[i]);
    }
    /* acked, a level's keys go with its last message */
    for (size_t i = 0; i < 3; i++) {
        const bitt_message *msg = bitt_messages_at(m, i);
        assert_int_equal(bitt_queue_ack(s, "t", bitt_message_id(msg), bitt_message_token(msg)),
                         BITT_OK);
    }
    bitt_messages_free(m);
    assert_int_equal(raw_int("EXISTS {lay}:qr5:t {lay}:qr-3:t {lay}:qy:t {lay}:qr:t"), 0);
    bitt_store_close(s);
}

static void test_levels_go_and_come_back(void **state)
{
    (void)state;
    bitt_store *s = open_store("lvl");
    uint64_t a = enqueue(s, "t", 7, NULL);
    bitt_messages *m = claim(s, "t", 1);
    assert_int_equal(bitt_messages_count(m), 1);
    bitt_messages_free(m);
    /* its only lease runs out: the next claim meets it dead and empties
     * the level */
    assert_int_equal(bitt_clock_advance(s, 200), BITT_OK);
    m = claim(s, "t", 1);
    assert_int_equal(bitt_messages_count(m), 0);
    bitt_messages_free(m);
    assert_int_equal(raw_int("EXISTS {lvl}:qr7:t {lvl}:qy:t"), 0);
    bitt_message *got = NULL;
    assert_int_equal(bitt_queue_get(s, "t", a, &got), BITT_OK);
    assert_int_equal(bitt_message_state(got), BITT_MSG_DEAD);
    assert_int_equal(bitt_message_priority(got), 7);
    bitt_message_free(got);

    /* retried, it is back at its priority; cancelled, gone again */
    uint64_t n = 0;
    assert_int_equal(bitt_queue_dead_retry(s, "t", a, &n), BITT_OK);
    assert_int_equal(n, 1);
    assert_int_equal(raw_int("ZCARD {lvl}:qr7:t"), 1);
    assert_int_equal(raw_int("ZCARD {lvl}:qy:t"), 1);
    assert_int_equal(bitt_queue_cancel(s, "t", a), BITT_OK);
    assert_int_equal(raw_int("EXISTS {lvl}:qr7:t {lvl}:qy:t {lvl}:m:%llu", (unsigned long long)a),
                     0);
    bitt_store_close(s);
}

static void test_stats_over_levels(void **state)
{
    (void)state;
    bitt_store *s = open_store("sts");
    enqueue(s, "t", 5, NULL); /* the oldest claimable, at 1000000 */
    assert_int_equal(bitt_clock_advance(s, 10), BITT_OK);
    enqueue(s, "t", 0, NULL);
    bitt_enqueue_options o;
    assert_int_equal(bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION), BITT_OK);
    o.priority = -1;
    o.delay_ms = 1000;
    assert_int_equal(bitt_queue_enqueue(s, "t", "x", 1, BITT_KIND_BYTES, &o, NULL), BITT_OK);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    assert_int_equal(st.pending, 2);
    assert_int_equal(st.delayed, 1);
    assert_int_equal(st.processing, 0);
    assert_true(st.oldest_pending_at == 1000000);
    bitt_messages *m = claim(s, "t", 1); /* priority 5 */
    bitt_messages_free(m);
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    assert_int_equal(st.pending, 1);
    assert_int_equal(st.delayed, 1);
    assert_int_equal(st.processing, 1);
    assert_true(st.oldest_pending_at == 1000010);
    bitt_store_close(s);
}

/* Commits {first, enqueue with dedup key "k"} or the reverse: whether the
 * enqueue was deduplicated (bitt_queue_get of the next id finds it). */
static int enqueue_deduped_beside(bitt_store *s, int ack_first, uint64_t id, const char *token)
{
    bitt_txn *txn = NULL;
    assert_int_equal(bitt_txn_begin(s, &txn), BITT_OK);
    bitt_enqueue_options o;
    assert_int_equal(bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION), BITT_OK);
    o.dedup_key = "k";
    o.dedup_key_len = 1;
    if (ack_first)
        assert_int_equal(token ? bitt_txn_queue_ack(txn, "t", id, token)
                               : bitt_txn_queue_cancel(txn, "t", id),
                         BITT_OK);
    assert_int_equal(bitt_txn_enqueue(txn, "t", "y", 1, BITT_KIND_BYTES, &o), BITT_OK);
    if (!ack_first)
        assert_int_equal(token ? bitt_txn_queue_ack(txn, "t", id, token)
                               : bitt_txn_queue_cancel(txn, "t", id),
                         BITT_OK);
    assert_int_equal(bitt_txn_commit(txn, NULL), BITT_OK);
    bitt_txn_free(txn);
    bitt_message *got = NULL;
    int rc = bitt_queue_get(s, "t", id + 1, &got);
    bitt_message_free(got);
    return rc == BITT_NOTFOUND;
}

static void test_commit_frees_dedup_keys_in_order(void **state)
{
    (void)state;
    bitt_store *s = open_store("ddp");
    /* ack, then enqueue: the key is free */
    uint64_t a = enqueue(s, "t", 0, "k");
    bitt_messages *m = claim(s, "t", 1);
    assert_int_equal(enqueue_deduped_beside(s, 1, a, bitt_message_token(bitt_messages_at(m, 0))),
                     0);
    bitt_messages_free(m);
    /* cancel, then enqueue: free too (the new message is a + 1) */
    assert_int_equal(enqueue_deduped_beside(s, 1, a + 1, NULL), 0);
    /* enqueue, then cancel: the enqueue met the live holder */
    assert_int_equal(enqueue_deduped_beside(s, 0, a + 2, NULL), 1);
    bitt_message *got = NULL;
    assert_int_equal(bitt_queue_get(s, "t", a + 2, &got), BITT_NOTFOUND);
    assert_int_equal(raw_int("HLEN {ddp}:qk:t"), 0);
    bitt_store_close(s);
}

/* The next message on the subscription: 1 for a wake, 0 for our marker. */
static int next_is_wake(redisContext *sub)
{
    redisReply *r = NULL;
    assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
    assert_true(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    int wake = !strcmp(r->element[1]->str, "{wk}:wake");
    if (!wake)
        assert_string_equal(r->element[1]->str, "marker");
    freeReplyObject(r);
    return wake;
}

/* Whether committing txn published a wake before our marker. */
static int commit_wakes(bitt_txn *txn, redisContext *sub)
{
    assert_int_equal(bitt_txn_commit(txn, NULL), BITT_OK);
    bitt_txn_free(txn);
    assert_int_equal(raw_int("PUBLISH marker m"), 1);
    int wake = next_is_wake(sub);
    if (wake)
        assert_int_equal(next_is_wake(sub), 0);
    return wake;
}

static void test_commit_queue_ops_wake(void **state)
{
    (void)state;
    bitt_store *s = open_store("wk");
    uint64_t a = enqueue(s, "t", 0, NULL);
    uint64_t b = enqueue(s, "t", 0, NULL);
    bitt_messages *m = claim(s, "t", 1);
    const bitt_message *msg = bitt_messages_at(m, 0);
    assert_true(bitt_message_id(msg) == a);

    int port = 0;
    assert_int_equal(sscanf(g_srv.url, "redis://127.0.0.1:%d", &port), 1);
    redisContext *sub = redisConnect("127.0.0.1", port);
    assert_true(sub && !sub->err);
    redisReply *r = redisCommand(sub, "SUBSCRIBE {wk}:wake marker");
    freeReplyObject(r); /* the first confirmation */
    assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
    freeReplyObject(r); /* the second */

    bitt_txn *txn = NULL;
    assert_int_equal(bitt_txn_begin(s, &txn), BITT_OK);
    assert_int_equal(bitt_txn_queue_snooze(txn, "t", a, bitt_message_token(msg), 500), BITT_OK);
    assert_int_equal(commit_wakes(txn, sub), 1);
    bitt_messages_free(m);

    assert_int_equal(bitt_txn_begin(s, &txn), BITT_OK);
    assert_int_equal(bitt_txn_queue_reschedule(txn, "t", a, 0), BITT_OK);
    assert_int_equal(commit_wakes(txn, sub), 1);

    assert_int_equal(bitt_txn_begin(s, &txn), BITT_OK);
    assert_int_equal(bitt_txn_queue_cancel(txn, "t", b), BITT_OK);
    assert_int_equal(commit_wakes(txn, sub), 0);

    m = claim(s, "t", 1);
    msg = bitt_messages_at(m, 0);
    assert_int_equal(bitt_txn_begin(s, &txn), BITT_OK);
    assert_int_equal(bitt_txn_queue_nack(txn, "t", a, bitt_message_token(msg), "e", 0), BITT_OK);
    assert_int_equal(commit_wakes(txn, sub), 1);
    bitt_messages_free(m);
    redisFree(sub);
    bitt_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priority_zero_keeps_the_old_layout),
        cmocka_unit_test(test_levels_go_and_come_back),
        cmocka_unit_test(test_stats_over_levels),
        cmocka_unit_test(test_commit_frees_dedup_keys_in_order),
        cmocka_unit_test(test_commit_queue_ops_wake),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
