/*
 * The Redis backend's version 7 (queue retention, cron/topic schedules)
 * where the contract cannot look: its keys, and data of before, on a
 * private server.
 *
 *   - without retention an ack and a death write the keys they wrote
 *     before (no done index, no aging index, no topic list);
 *   - with done retention a done message is in P qc:<topic> and its topic in
 *     P qt, and the sweep that drops it takes both;
 *   - dead letters made without dead retention (or by the version before)
 *     are found and dropped by a store with it: a purge of every topic
 *     finds their topic, a call on the topic indexes them, and a retry
 *     takes a dead letter out of the index;
 *   - a schedule written before cron and topics reads as an interval
 *     schedule without a topic, is claimed, and takes a topic keeping its
 *     cadence.
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

#define T0 1000000

static ts_server g_srv;
static redisContext *g_raw;

static int start_server(void **state)
{
    (void)state;
    return ts_redis_start(&g_srv, "rrt", &g_raw);
}

static int stop_server(void **state)
{
    (void)state;
    ts_redis_stop(&g_srv, &g_raw, "test_redis_retention");
    return 0;
}

/* A raw command with an integer reply (EXISTS, ZCARD): its value. */
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

/* A raw command with a string reply (HGET): whether it equals want. */
static int raw_is(const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(g_raw, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    int same = r->type == REDIS_REPLY_STRING && !strcmp(r->str, want);
    freeReplyObject(r);
    return same;
}

static bitt_store *open_store(const char *prefix, const char *options, int64_t now)
{
    char url[512];
    snprintf(url, sizeof url, "%s?prefix=%s%s", g_srv.url, prefix, options);
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s))
        fail_msg("bitt_store_open: %s", bitt_error_last());
    assert_int_equal(bitt_clock_set_manual(s, now), BITT_OK);
    return s;
}

static uint64_t enqueue(bitt_store *s, const char *topic)
{
    bitt_enqueue_options o;
    assert_int_equal(bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION), BITT_OK);
    o.max_attempts = 1;
    uint64_t id = 0;
    assert_int_equal(bitt_queue_enqueue(s, topic, "x", 1, BITT_KIND_BYTES, &o, &id), BITT_OK);
    return id;
}

/* Claims the one message of topic, which must be id; its token in token. */
static void claim_one(bitt_store *s, const char *topic, uint64_t id, char *token, size_t cap)
{
    bitt_dequeue_options o;
    assert_int_equal(bitt_dequeue_options_init(&o, BITT_DEQUEUE_OPTIONS_VERSION), BITT_OK);
    o.limit = 1;
    o.lease_ms = 100;
    bitt_messages *m = NULL;
    assert_int_equal(bitt_queue_dequeue(s, topic, &o, &m), BITT_OK);
    assert_int_equal(bitt_messages_count(m), 1);
    assert_true(bitt_message_id(bitt_messages_at(m, 0)) == id);
    snprintf(token, cap, "%s", bitt_message_token(bitt_messages_at(m, 0)));
    bitt_messages_free(m);
}

/* Enqueues a message on topic and makes it a dead letter (its one attempt
 * nacked); its id. */
static uint64_t dead_letter(bitt_store *s, const char *topic)
{
    uint64_t id = enqueue(s, topic);
    char token[64];
    claim_one(s, topic, id, token, sizeof token);
    assert_int_equal(bitt_queue_nack(s, topic, id, token, "no", 0), BITT_OK);
    return id;
}

static void test_default_path_writes_what_it_did(void **state)
{
    (void)state;
    bitt_store *s = open_store("dp", "", T0);
    uint64_t id = enqueue(s, "t");
    char token[64];
    claim_one(s, "t", id, token, sizeof token);
    assert_int_equal(bitt_queue_ack(s, "t", id, token), BITT_OK);
    assert_int_equal(raw_int("EXISTS {dp}:m:%llu", (unsigned long long)id), 0);
    dead_letter(s, "t");
    assert_int_equal(raw_int("ZCARD {dp}:qx:t"), 1);
    assert_int_equal(raw_int("EXISTS {dp}:qc:t {dp}:qa:t {dp}:qt"), 0);
    bitt_store_close(s);
}

static void test_done_messages_are_indexed(void **state)
{
    (void)state;
    bitt_store *s = open_store("dn", "&queue_done_retention=1000", T0);
    uint64_t id = enqueue(s, "t");
    char token[64];
    claim_one(s, "t", id, token, sizeof token);
    assert_int_equal(bitt_queue_ack_result(s, "t", id, token, "{}", 2, BITT_KIND_JSON), BITT_OK);
    assert_true(raw_is("c", "HGET {dn}:m:%llu s", (unsigned long long)id));
    assert_int_equal(raw_int("ZCARD {dn}:qc:t"), 1);
    assert_int_equal(raw_int("ZCARD {dn}:qt"), 1);
    bitt_message *m = NULL;
    assert_int_equal(bitt_queue_get(s, "t", id, &m), BITT_OK);
    assert_int_equal(bitt_message_state(m), BITT_MSG_DONE);
    assert_true(bitt_message_done_at(m) == T0);
    size_t len = 0;
    const uint8_t *result = bitt_message_result(m, &len);
    assert_non_null(result);
    assert_memory_equal(result, "{}", 2);
    assert_int_equal(bitt_message_result_kind(m), BITT_KIND_JSON);
    bitt_message_free(m);

    /* the retention ends: the next call's sweep takes the message and both
     * index entries */
    assert_int_equal(bitt_clock_advance(s, 1000), BITT_OK);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    assert_true(st.done == 0);
    assert_int_equal(raw_int("EXISTS {dn}:m:%llu {dn}:qc:t {dn}:qt", (unsigned long long)id), 0);
    bitt_store_close(s);
}

static void test_dead_letters_of_before_are_dropped(void **state)
{
    (void)state;
    /* without dead retention, as the version before wrote them */
    bitt_store *old = open_store("dd", "", T0);
    dead_letter(old, "a");
    dead_letter(old, "b");
    assert_int_equal(raw_int("EXISTS {dd}:qa:a {dd}:qa:b {dd}:qt"), 0);

    /* a purge of every topic finds their topics */
    bitt_store *s = open_store("dd", "&queue_dead_retention=1000", T0 + 1000);
    uint64_t removed = 0;
    assert_int_equal(bitt_queue_purge(s, NULL, &removed), BITT_OK);
    assert_true(removed == 2);
    assert_int_equal(raw_int("EXISTS {dd}:qx:a {dd}:qx:b {dd}:qa:a {dd}:qa:b {dd}:qt"), 0);

    /* a call on the topic indexes a dead letter made without retention; a
     * retry takes it out of both sets */
    assert_int_equal(bitt_clock_advance(old, 1000), BITT_OK);
    uint64_t id = dead_letter(old, "a");
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "a", &st), BITT_OK);
    assert_true(st.dead == 1);
    assert_int_equal(raw_int("ZCARD {dd}:qa:a"), 1);
    uint64_t count = 0;
    assert_int_equal(bitt_queue_dead_retry(s, "a", id, &count), BITT_OK);
    assert_true(count == 1);
    assert_int_equal(raw_int("EXISTS {dd}:qx:a {dd}:qa:a"), 0);

    /* one made with retention is indexed at once, and dropped when it ends */
    char token[64];
    claim_one(s, "a", id, token, sizeof token);
    assert_int_equal(bitt_queue_nack(s, "a", id, token, "no", 0), BITT_OK);
    assert_int_equal(raw_int("ZCARD {dd}:qa:a"), 1);
    assert_int_equal(bitt_clock_advance(s, 1000), BITT_OK);
    assert_int_equal(bitt_queue_purge(s, NULL, &removed), BITT_OK);
    assert_true(removed == 1);
    assert_int_equal(
        raw_int("EXISTS {dd}:m:%llu {dd}:qx:a {dd}:qa:a {dd}:qt", (unsigned long long)id), 0);
    bitt_store_close(s);
    bitt_store_close(old);
}

static void test_schedules_of_before(void **state)
{
    (void)state;
    /* a schedule as the version before wrote it: no cron, topic,
     * max_attempts or priority field */
    assert_int_equal(raw_int("HSET {sb}:s:old i 1000 p pl k 0 n 5000"), 4);
    assert_int_equal(raw_int("ZADD {sb}:sk 0 old"), 1);
    assert_int_equal(raw_int("ZADD {sb}:sd 0 0000000000000005000old"), 1);
    bitt_store *s = open_store("sb", "", T0);
    bitt_schedule *sc = NULL;
    assert_int_equal(bitt_schedule_get(s, "old", &sc), BITT_OK);
    assert_true(bitt_schedule_interval(sc) == 1000);
    assert_null(bitt_schedule_cron(sc));
    assert_null(bitt_schedule_topic(sc));
    assert_true(bitt_schedule_next_run_at(sc) == 5000);
    bitt_schedule_free(sc);

    assert_int_equal(bitt_schedule_claim(s, NULL, &sc), BITT_OK);
    assert_true(bitt_schedule_occurrence(sc) == 5000);
    assert_true(bitt_schedule_next_run_at(sc) == T0 + 1000);
    assert_true(bitt_schedule_message_id(sc) == 0);
    bitt_schedule_free(sc);
    assert_true(raw_is("1001000", "HGET {sb}:s:old n"));
    assert_int_equal(raw_int("ZCARD {sb}:sd"), 1);
    assert_int_equal(raw_int("ZLEXCOUNT {sb}:sd [0000000000001001000old [0000000000001001000old"),
                     1);

    /* the same interval with a topic keeps the cadence */
    bitt_schedule_options o;
    assert_int_equal(bitt_schedule_options_init(&o, BITT_SCHEDULE_OPTIONS_VERSION), BITT_OK);
    o.topic = "jobs";
    assert_int_equal(bitt_schedule_set(s, "old", 1000, "pl", 2, BITT_KIND_BYTES, &o), BITT_OK);
    assert_true(raw_is("1001000", "HGET {sb}:s:old n"));
    assert_true(raw_is("jobs", "HGET {sb}:s:old t"));
    assert_int_equal(raw_int("HEXISTS {sb}:s:old c"), 0);
    bitt_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_path_writes_what_it_did),
        cmocka_unit_test(test_done_messages_are_indexed),
        cmocka_unit_test(test_dead_letters_of_before_are_dropped),
        cmocka_unit_test(test_schedules_of_before),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
