/*
 * The memory backend's queue retention through its vtable: what the
 * contract cannot see. A message with a dedup key gives its one aux node
 * from the dedup map to the aging map when it dies (and back to nobody on
 * a retry), done and dead messages leave through the front of their maps,
 * a topic the sweep empties is freed, and a commit's ack result is kept
 * only with done retention. Under ASan every path here is also a leak and
 * use-after-free check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "memory/memory.h"
#include "memory_vt.h"

static bitt_backend *open_with(int64_t done_ms, int64_t dead_ms)
{
    bitt_url url = {.scheme = "memory", .rest = ""};
    bitt_limits limits = {.max_key_size = BITT_DEFAULT_MAX_KEY_SIZE,
                          .max_value_size = BITT_DEFAULT_MAX_VALUE_SIZE,
                          .queue_done_retention_ms = done_ms,
                          .queue_dead_retention_ms = dead_ms};
    bitt_backend *be = NULL;
    assert_int_equal(VT.open(&url, &limits, &be), BITT_OK);
    return be;
}

static uint64_t enqueue(bitt_backend *be, int64_t now, const char *topic, const char *dedup,
                        uint32_t max_attempts)
{
    bitt_op op = {.type = BITT_OP_ENQUEUE,
                  .name = topic,
                  .value = (const uint8_t *)"p",
                  .value_len = 1,
                  .aux = (const uint8_t *)dedup,
                  .aux_len = dedup ? strlen(dedup) : 0,
                  .max_attempts = max_attempts};
    bitt_commit c = {.ops = &op, .count = 1, .time = {now, 1}};
    assert_int_equal(VT.commit(be, &c), BITT_OK);
    assert_false(op.deduped);
    return op.id;
}

/* Claims one message of topic; its token into token. */
static uint64_t claim(bitt_backend *be, int64_t now, const char *topic, char *token)
{
    bitt_time t = {now, 1};
    bitt_messages *out = bitt__messages_new(1);
    assert_int_equal(VT.queue_claim(be, &t, topic, 1, 1000, out), BITT_OK);
    assert_int_equal(out->count, 1);
    uint64_t id = out->items[0]->id;
    memcpy(token, out->items[0]->token, BITT_TOKEN_LEN + 1);
    bitt_messages_free(out);
    return id;
}

static int state_of(bitt_backend *be, int64_t now, const char *topic, uint64_t id)
{
    bitt_time t = {now, 1};
    bitt_message *m = NULL;
    int rc = VT.queue_get(be, &t, topic, id, &m);
    int state = rc == BITT_OK ? m->state : 0;
    bitt_message_free(m);
    return state;
}

static void test_dead_letters_with_dedup_keys_age(void **state)
{
    (void)state;
    bitt_backend *be = open_with(0, 5000);
    char token[BITT_TOKEN_LEN + 1];
    bitt_time t = {1000, 1};
    /* killed by a nack, and by its last lease running out */
    uint64_t a = enqueue(be, 1000, "t", "ka", 1);
    uint64_t b = enqueue(be, 1000, "t", "kb", 1);
    assert_int_equal(claim(be, 1000, "t", token), a);
    assert_int_equal(VT.queue_nack(be, &t, "t", a, token, "boom", 0, NULL), BITT_OK);
    assert_int_equal(claim(be, 1100, "t", token), b);
    t.now = 2100; /* b's lease ended at 2100: dead since then */
    assert_int_equal(state_of(be, 2100, "t", b), BITT_MSG_DEAD);
    /* their keys are free: a new message takes one while both are dead */
    uint64_t c = enqueue(be, 2100, "t", "ka", 3);
    bitt_mem_topic *topic = bitt__mem_topic_find(be, "t");
    assert_int_equal(topic->aging.count, 2);
    assert_int_equal(topic->dedup.count, 1);
    assert_int_equal(bitt__omap_verify(&topic->aging), 0);

    /* a retried dead letter leaves the aging map and never ages out */
    uint64_t moved = 0;
    assert_int_equal(VT.queue_dead_retry(be, &t, "t", b, &moved), BITT_OK);
    assert_int_equal(moved, 1);
    assert_int_equal(topic->aging.count, 1);
    /* a died at 1000: gone at 6000 by any call's sweep; c stays */
    assert_int_equal(state_of(be, 5999, "t", a), BITT_MSG_DEAD);
    assert_int_equal(state_of(be, 6000, "t", c), BITT_MSG_PENDING);
    assert_int_equal(state_of(be, 6000, "t", a), 0);
    assert_int_equal(topic->aging.count, 0);
    assert_int_equal(state_of(be, 6000, "t", b), BITT_MSG_PENDING);
    VT.close(be);
}

static void test_done_messages_and_results(void **state)
{
    (void)state;
    bitt_backend *be = open_with(100, 0);
    char token[BITT_TOKEN_LEN + 1];
    uint64_t a = enqueue(be, 1000, "t", "k", 2);
    assert_int_equal(claim(be, 1000, "t", token), a);
    /* an ack op with an empty result: kept, as a result of 0 bytes */
    bitt_op op = {.type = BITT_OP_QUEUE_ACK,
                  .name = "t",
                  .version = a,
                  .owner = token,
                  .value = (const uint8_t *)"",
                  .value_len = 0,
                  .kind = BITT_KIND_BYTES};
    bitt_commit c = {.ops = &op, .count = 1, .time = {1010, 1}};
    assert_int_equal(VT.commit(be, &c), BITT_OK);
    bitt_time t = {1050, 1};
    bitt_message *m = NULL;
    assert_int_equal(VT.queue_get(be, &t, "t", a, &m), BITT_OK);
    assert_int_equal(m->state, BITT_MSG_DONE);
    assert_int_equal(m->done_at, 1010);
    assert_non_null(m->result);
    assert_int_equal(m->result_len, 0);
    assert_null(m->token);
    bitt_message_free(m);
    /* the key went with the ack; a second ack of a done message is stale */
    uint64_t b = enqueue(be, 1050, "t", "k", 1);
    assert_int_equal(VT.queue_ack(be, &t, "t", a, token), BITT_ETOKEN);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(VT.queue_stats(be, &t, "t", &st), BITT_OK);
    assert_int_equal(st.done, 1);
    assert_int_equal(st.pending, 1);

    /* b done too; at 1110 a is past its retention, b (done at 1100) not */
    assert_int_equal(claim(be, 1100, "t", token), b);
    t.now = 1100;
    assert_int_equal(VT.queue_ack(be, &t, "t", b, token), BITT_OK);
    uint64_t removed = 0;
    t.now = 1110;
    assert_int_equal(VT.queue_purge(be, &t, "t", &removed), BITT_OK);
    assert_int_equal(removed, 1);
    /* the last one goes with a purge of every topic, and the topic with it */
    t.now = 1200;
    assert_int_equal(VT.queue_purge(be, &t, NULL, &removed), BITT_OK);
    assert_int_equal(removed, 1);
    assert_null(bitt__mem_topic_find(be, "t"));
    VT.close(be);
}

/* A sweep that empties a topic frees it, whichever call it starts. */
static void test_sweep_frees_an_emptied_topic(void **state)
{
    (void)state;
    bitt_backend *be = open_with(10, 10);
    char token[BITT_TOKEN_LEN + 1];
    uint64_t a = enqueue(be, 1000, "t", NULL, 1);
    assert_int_equal(claim(be, 1000, "t", token), a);
    bitt_time t = {1000, 1};
    assert_int_equal(VT.queue_ack(be, &t, "t", a, token), BITT_OK);
    uint64_t b = enqueue(be, 1000, "u", NULL, 1);
    assert_int_equal(claim(be, 1000, "u", token), b);
    assert_int_equal(VT.queue_nack(be, &t, "u", b, token, NULL, 0, NULL), BITT_OK);
    t.now = 1010;
    bitt_messages *out = bitt__messages_new(1);
    assert_int_equal(VT.queue_claim(be, &t, "t", 1, 1000, out), BITT_OK);
    assert_int_equal(out->count, 0);
    bitt_messages_free(out);
    assert_null(bitt__mem_topic_find(be, "t"));
    uint64_t count = 9;
    assert_int_equal(VT.queue_dead_retry(be, &t, "u", 0, &count), BITT_OK);
    assert_int_equal(count, 0);
    assert_null(bitt__mem_topic_find(be, "u"));
    assert_int_equal(be->queue.count, 0);
    VT.close(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_letters_with_dedup_keys_age),
        cmocka_unit_test(test_done_messages_and_results),
        cmocka_unit_test(test_sweep_frees_an_emptied_topic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
