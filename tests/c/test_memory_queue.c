/*
 * The memory backend's version 2 entries driven through its vtable:
 * directed cases for leases and fences, the outbox, publish/subscribe,
 * budgets and schedules, and a 100k-message run that would crawl if claim
 * or ack were not O(log n). The randomized queue run against a model is
 * test_memory_queue_model.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "memory_vt.h"
#include "scale.h"

/* ---- leases and fences ----------------------------------------------------- */

static void test_leases_and_fences(void **state)
{
    (void)state;
    bitt_backend *be = memory_vt_open();
    bitt_time t = {1000, 1};
    uint64_t epoch = 0;
    int64_t exp = 0;
    bitt_buf owner = BITT_BUF_INIT;

    assert_int_equal(VT.lease_get(be, &t, "L", &owner, &epoch, &exp), BITT_NOTFOUND);
    assert_int_equal(VT.lease_acquire(be, &t, "L", "a", 100, &epoch, &exp), BITT_OK);
    assert_int_equal(epoch, 1);
    assert_int_equal(exp, 1100);
    assert_int_equal(VT.lease_acquire(be, &t, "L", "a", 100, &epoch, &exp), BITT_EXISTS);
    assert_int_equal(VT.lease_acquire(be, &t, "L", "b", 100, &epoch, &exp), BITT_EXISTS);
    assert_int_equal(VT.lease_get(be, &t, "L", &owner, &epoch, &exp), BITT_OK);
    assert_string_equal((char *)owner.ptr, "a");
    assert_int_equal(epoch, 1);

    /* A fenced commit by the holder goes through; a stale epoch or another
     * owner writes nothing. */
    bitt_op ops[2] = {
        {.type = BITT_OP_SET,
         .key = (const uint8_t *)"k",
         .key_len = 1,
         .value = (const uint8_t *)"v",
         .value_len = 1},
        {.type = BITT_OP_FENCE, .name = "L", .owner = "a", .version = 1},
    };
    bitt_commit c = {.ops = ops, .count = 2, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_OK);
    ops[1].version = 2;
    c = (bitt_commit){.ops = ops, .count = 2, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_ELEASELOST);
    assert_int_equal(c.failed, 1);
    ops[1].version = 1;
    ops[1].owner = "b";
    assert_int_equal(VT.commit(be, &c), BITT_ELEASELOST);

    /* Renew moves the expiry; at expiry everything is lost. */
    t.now = 1050;
    assert_int_equal(VT.lease_renew(be, &t, "L", "a", 1, 100, &exp), BITT_OK);
    assert_int_equal(exp, 1150);
    assert_int_equal(VT.lease_renew(be, &t, "L", "a", 2, 100, &exp), BITT_ELEASELOST);
    t.now = 1150;
    ops[1].owner = "a";
    c = (bitt_commit){.ops = ops, .count = 2, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_ELEASELOST);
    assert_int_equal(VT.lease_renew(be, &t, "L", "a", 1, 100, &exp), BITT_ELEASELOST);
    assert_int_equal(VT.lease_get(be, &t, "L", &owner, &epoch, &exp), BITT_NOTFOUND);
    assert_int_equal(owner.len, 0);

    /* Expired: anyone acquires, the epoch moves on; release keeps it. */
    assert_int_equal(VT.lease_acquire(be, &t, "L", "b", 10, &epoch, &exp), BITT_OK);
    assert_int_equal(epoch, 2);
    assert_int_equal(VT.lease_release(be, &t, "L", "a", 2), BITT_ELEASELOST);
    assert_int_equal(VT.lease_release(be, &t, "L", "b", 2), BITT_OK);
    assert_int_equal(VT.lease_release(be, &t, "L", "b", 2), BITT_ELEASELOST);
    assert_int_equal(VT.lease_get(be, &t, "L", NULL, NULL, NULL), BITT_NOTFOUND);
    assert_int_equal(VT.lease_acquire(be, &t, "L", "b", 10, &epoch, &exp), BITT_OK);
    assert_int_equal(epoch, 3);
    bitt__error_reset();
    bitt_buf_dispose(&owner);
    VT.close(be);
}

/* ---- outbox ------------------------------------------------------------------ */

static void append(bitt_backend *be, int64_t now, const char *stream, const char *event,
                   uint64_t want_seq)
{
    bitt_op op = {.type = BITT_OP_OUTBOX_APPEND,
                  .name = stream,
                  .value = (const uint8_t *)event,
                  .value_len = strlen(event),
                  .kind = BITT_KIND_JSON};
    bitt_commit c = {.ops = &op, .count = 1, .time = {now, 1}};
    assert_int_equal(VT.commit(be, &c), BITT_OK);
    assert_int_equal(op.id, want_seq);
}

static void expect_seqs(bitt_messages *list, const uint64_t *seqs, size_t n)
{
    assert_int_equal(list->count, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(list->items[i]->id, seqs[i]);
    bitt_messages_free(list);
}

static void test_outbox(void **state)
{
    (void)state;
    bitt_backend *be = memory_vt_open();
    bitt_time t = {5000, 1};
    append(be, 5000, "s", "1", 1);
    append(be, 5000, "s", "2", 2);
    append(be, 5000, "other", "x", 1);

    /* Several appends in one commit, and a failed commit numbers nothing. */
    bitt_op ops[3] = {
        {.type = BITT_OP_OUTBOX_APPEND, .name = "s", .value = (const uint8_t *)"3", .value_len = 1},
        {.type = BITT_OP_OUTBOX_APPEND,
         .name = "new",
         .value = (const uint8_t *)"n",
         .value_len = 1},
        {.type = BITT_OP_OUTBOX_APPEND, .name = "s", .value = (const uint8_t *)"4", .value_len = 1},
    };
    bitt_commit c = {.ops = ops, .count = 3, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_OK);
    assert_int_equal(ops[0].id, 3);
    assert_int_equal(ops[1].id, 1);
    assert_int_equal(ops[2].id, 4);
    bitt_op bad[2] = {
        {.type = BITT_OP_OUTBOX_APPEND, .name = "s", .value = (const uint8_t *)"5", .value_len = 1},
        {.type = BITT_OP_SUM, .key = (const uint8_t *)"k", .key_len = 1, .delta = 1},
    };
    bitt_op set = {.type = BITT_OP_SET,
                   .key = (const uint8_t *)"k",
                   .key_len = 1,
                   .value = (const uint8_t *)"x",
                   .value_len = 1};
    c = (bitt_commit){.ops = &set, .count = 1, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_OK);
    c = (bitt_commit){.ops = bad, .count = 2, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_ENOTCOUNTER);
    assert_int_equal(bad[0].id, 0);
    bitt__error_reset();

    bitt_messages *list = bitt__messages_new(0);
    assert_int_equal(VT.outbox_pending(be, &t, "s", 100, list), BITT_OK);
    const bitt_message *first = list->items[0];
    assert_string_equal(first->topic, "s");
    assert_int_equal(first->kind, BITT_KIND_JSON);
    assert_int_equal(first->created_at, 5000);
    expect_seqs(list, (uint64_t[]){1, 2, 3, 4}, 4);

    /* fail records an attempt; pending still lists it in order. */
    assert_int_equal(VT.outbox_fail(be, &t, "s", 2, "e1", 9000), BITT_OK);
    assert_int_equal(VT.outbox_fail(be, &t, "s", 9, "e1", 9000), BITT_NOTFOUND);
    list = bitt__messages_new(0);
    assert_int_equal(VT.outbox_pending(be, &t, "s", 2, list), BITT_OK);
    assert_int_equal(list->items[1]->attempts, 1);
    assert_int_equal(list->items[1]->due_at, 9000);
    assert_string_equal(list->items[1]->last_error, "e1");
    expect_seqs(list, (uint64_t[]){1, 2}, 2);

    /* park, list parked by reason, retry keeps the seq and resets. */
    t.now = 6000;
    assert_int_equal(VT.outbox_park(be, &t, "s", 2, BITT_PARK_POISON, "bad"), BITT_OK);
    assert_int_equal(VT.outbox_park(be, &t, "s", 3, BITT_PARK_INVALID, NULL), BITT_OK);
    assert_int_equal(VT.outbox_park(be, &t, "s", 3, BITT_PARK_INVALID, NULL), BITT_NOTFOUND);
    uint64_t p = 0, k = 0;
    assert_int_equal(VT.outbox_counts(be, &t, "s", &p, &k), BITT_OK);
    assert_int_equal(p, 2);
    assert_int_equal(k, 2);
    list = bitt__messages_new(0);
    assert_int_equal(VT.outbox_parked(be, &t, "s", BITT_PARK_POISON, 10, list), BITT_OK);
    assert_int_equal(list->items[0]->failed_at, 6000);
    assert_int_equal(list->items[0]->park_reason, BITT_PARK_POISON);
    assert_string_equal(list->items[0]->last_error, "bad");
    assert_int_equal(list->items[0]->attempts, 1);
    expect_seqs(list, (uint64_t[]){2}, 1);
    list = bitt__messages_new(0);
    assert_int_equal(VT.outbox_parked(be, &t, "s", 0, 10, list), BITT_OK);
    expect_seqs(list, (uint64_t[]){2, 3}, 2);

    uint64_t n = 0;
    assert_int_equal(VT.outbox_retry(be, &t, "s", (uint64_t[]){2, 7}, 2, &n), BITT_OK);
    assert_int_equal(n, 1);
    list = bitt__messages_new(0);
    assert_int_equal(VT.outbox_pending(be, &t, "s", 10, list), BITT_OK);
    assert_int_equal(list->items[1]->attempts, 0);
    assert_int_equal(list->items[1]->due_at, 0);
    assert_int_equal(list->items[1]->failed_at, 0);
    assert_int_equal(list->items[1]->park_reason, 0);
    assert_null(list->items[1]->last_error);
    expect_seqs(list, (uint64_t[]){1, 2, 4}, 3);

    assert_int_equal(VT.outbox_ack(be, &t, "s", (uint64_t[]){1, 1, 3, 4}, 4, &n), BITT_OK);
    assert_int_equal(n, 2); /* 3 is parked, 1 counted once */
    assert_int_equal(VT.outbox_discard(be, &t, "s", NULL, 0, &n), BITT_OK);
    assert_int_equal(n, 1);
    assert_int_equal(VT.outbox_ack(be, &t, "s", (uint64_t[]){2}, 1, &n), BITT_OK);
    assert_int_equal(VT.outbox_counts(be, &t, "s", &p, &k), BITT_OK);
    assert_int_equal(p + k, 0);
    append(be, 7000, "s", "again", 5); /* never reused */
    assert_int_equal(VT.outbox_counts(be, &t, "nope", &p, &k), BITT_OK);
    assert_int_equal(p + k, 0);
    VT.close(be);
}

/* ---- publish/subscribe --------------------------------------------------- */

static void test_pubsub(void **state)
{
    (void)state;
    bitt_backend *be = memory_vt_open();
    bitt_time t = {1000, 1};
    uint64_t head = 99;
    assert_int_equal(VT.pubsub_head(be, &t, &head), BITT_OK);
    assert_int_equal(head, 0);
    assert_int_equal(VT.pubsub_publish(be, &t, "a", (const uint8_t *)"1", 1, 100), BITT_OK);
    assert_int_equal(VT.pubsub_publish(be, &t, "b", (const uint8_t *)"2", 1, 100), BITT_OK);
    t.now = 1050;
    assert_int_equal(VT.pubsub_publish(be, &t, "a", NULL, 0, 100), BITT_OK);
    assert_int_equal(VT.pubsub_head(be, &t, &head), BITT_OK);
    assert_int_equal(head, 3);

    bitt_messages *list = bitt__messages_new(0);
    assert_int_equal(VT.pubsub_fetch(be, &t, "a", 0, 10, list), BITT_OK);
    assert_int_equal(list->count, 2);
    assert_string_equal(list->items[0]->topic, "a");
    assert_int_equal(list->items[0]->payload_len, 1);
    assert_int_equal(list->items[0]->created_at, 1000);
    assert_int_equal(list->items[1]->payload_len, 0);
    expect_seqs(list, (uint64_t[]){1, 3}, 2);
    list = bitt__messages_new(0);
    assert_int_equal(VT.pubsub_fetch(be, &t, "a", 1, 10, list), BITT_OK);
    expect_seqs(list, (uint64_t[]){3}, 1);

    /* Kept while now < published + retention, whether or not a publish
     * came since. */
    t.now = 1099;
    list = bitt__messages_new(0);
    assert_int_equal(VT.pubsub_fetch(be, &t, "a", 0, 10, list), BITT_OK);
    expect_seqs(list, (uint64_t[]){1, 3}, 2);
    t.now = 1100;
    list = bitt__messages_new(0);
    assert_int_equal(VT.pubsub_fetch(be, &t, "a", 0, 10, list), BITT_OK);
    expect_seqs(list, (uint64_t[]){3}, 1);
    assert_int_equal(VT.pubsub_publish(be, &t, "c", (const uint8_t *)"x", 1, 100), BITT_OK);
    list = bitt__messages_new(0);
    assert_int_equal(VT.pubsub_fetch(be, &t, "b", 0, 10, list), BITT_OK);
    expect_seqs(list, NULL, 0);
    t.now = 1150;
    list = bitt__messages_new(0);
    assert_int_equal(VT.pubsub_fetch(be, &t, "a", 0, 10, list), BITT_OK);
    expect_seqs(list, NULL, 0);
    list = bitt__messages_new(0);
    assert_int_equal(VT.pubsub_fetch(be, &t, "c", 3, 10, list), BITT_OK);
    expect_seqs(list, (uint64_t[]){4}, 1);
    assert_int_equal(VT.pubsub_head(be, &t, &head), BITT_OK);
    assert_int_equal(head, 4); /* ids stay past what was deleted */
    VT.close(be);
}

/* ---- budgets ----------------------------------------------------------------- */

static void test_budget(void **state)
{
    (void)state;
    bitt_backend *be = memory_vt_open();
    bitt_time t = {1000, 1};
    bitt_budget_params p = {.capacity = 3, .refill = 1, .period_ms = 100};
    int64_t wait = -1;
    for (int i = 0; i < 3; i++)
        assert_int_equal(VT.budget_take(be, &t, "b", &p, 1, &wait), BITT_OK);
    assert_int_equal(VT.budget_take(be, &t, "b", &p, 1, &wait), BITT_DENIED);
    assert_int_equal(wait, 100);
    assert_int_equal(VT.budget_take(be, &t, "other", &p, 3, &wait), BITT_OK);
    t.now = 1100;
    assert_int_equal(VT.budget_take(be, &t, "b", &p, 2, &wait), BITT_DENIED);
    assert_int_equal(wait, 100);
    assert_int_equal(VT.budget_take(be, &t, "b", &p, 1, &wait), BITT_OK);
    assert_int_equal(VT.budget_take(be, &t, "b", &p, 1, &wait), BITT_DENIED);
    VT.close(be);
}

/* ---- schedules ----------------------------------------------------------------- */

/* An interval schedule without a topic, as schedule_set takes it. */
static int set_every(bitt_backend *be, const bitt_time *t, const char *key, int64_t interval,
                     const char *payload, int kind, int64_t first)
{
    bitt_schedule_def def = {.key = key,
                             .interval_ms = interval,
                             .payload = (const uint8_t *)payload,
                             .payload_len = payload ? strlen(payload) : 0,
                             .kind = kind,
                             .max_attempts = 1};
    return VT.schedule_set(be, t, &def, first);
}

/* What the engine's claim does: the due schedule, then a commit moving it
 * from the occurrence it read to next. */
static int claim(bitt_backend *be, const bitt_time *t, const char *prefix, int64_t next,
                 bitt_schedule **out)
{
    int rc = VT.schedule_due(be, t, prefix, out);
    if (rc)
        return rc;
    bitt_op op = {.type = BITT_OP_SCHEDULE_ADVANCE,
                  .name = (*out)->key,
                  .delta = (*out)->next_run_at,
                  .delay_ms = next};
    bitt_commit c = {.ops = &op, .count = 1, .time = *t};
    return VT.commit(be, &c);
}

static void test_schedules(void **state)
{
    (void)state;
    bitt_backend *be = memory_vt_open();
    bitt_time t = {1000, 1};
    bitt_schedule *s = NULL;
    assert_null(VT.schedule_upsert);
    assert_null(VT.schedule_claim);
    assert_int_equal(VT.schedule_due(be, &t, "", &s), BITT_NOTFOUND);
    assert_int_equal(set_every(be, &t, "job:b", 100, "B", 0, 1000), BITT_OK);
    assert_int_equal(set_every(be, &t, "job:a", 50, "A", 0, 1000), BITT_OK);
    assert_int_equal(set_every(be, &t, "x", 10, NULL, 0, 900), BITT_OK);

    /* Earliest (next_run_at, key) first, within the prefix; due only
     * reads, its occurrence is the now it judged at. */
    assert_int_equal(VT.schedule_due(be, &t, "job:", &s), BITT_OK);
    assert_string_equal(s->key, "job:a");
    assert_int_equal(s->next_run_at, 1000);
    assert_int_equal(s->occurrence, 1000);
    bitt_schedule_free(s);
    assert_int_equal(claim(be, &t, "job:", 1050, &s), BITT_OK);
    assert_string_equal(s->key, "job:a");
    bitt_schedule_free(s);
    assert_int_equal(claim(be, &t, "job:", 1100, &s), BITT_OK);
    assert_string_equal(s->key, "job:b");
    bitt_schedule_free(s);
    assert_int_equal(VT.schedule_due(be, &t, "job:", &s), BITT_NOTFOUND);
    assert_null(s);
    assert_int_equal(VT.schedule_due(be, &t, "", &s), BITT_OK);
    assert_string_equal(s->key, "x");
    assert_int_equal(s->next_run_at, 900);
    bitt_schedule_free(s);

    /* The advance is guarded by the occurrence: a stale one (another
     * claimer won) or a missing schedule conflicts and moves nothing. */
    bitt_op ops[2] = {
        {.type = BITT_OP_SCHEDULE_ADVANCE, .name = "x", .delta = 900, .delay_ms = 1010},
        {.type = BITT_OP_SCHEDULE_ADVANCE, .name = "job:a", .delta = 1000, .delay_ms = 2000},
    };
    bitt_commit c = {.ops = ops, .count = 2, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_ECONFLICT);
    assert_int_equal(c.failed, 1);
    ops[1] = (bitt_op){.type = BITT_OP_SCHEDULE_ADVANCE, .name = "nope", .delta = 1, .delay_ms = 2};
    c = (bitt_commit){.ops = ops, .count = 2, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_ECONFLICT);
    assert_int_equal(c.failed, 1);
    assert_int_equal(VT.schedule_get(be, &t, "x", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 900);
    bitt_schedule_free(s);
    c = (bitt_commit){.ops = ops, .count = 1, .time = t};
    assert_int_equal(VT.commit(be, &c), BITT_OK);
    assert_int_equal(VT.schedule_get(be, &t, "x", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 1010);
    bitt_schedule_free(s);

    /* Same interval keeps the cadence (payload updated); another restarts. */
    assert_int_equal(set_every(be, &t, "job:a", 50, "A2", BITT_KIND_JSON, 5000), BITT_OK);
    assert_int_equal(VT.schedule_get(be, &t, "job:a", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 1050);
    assert_int_equal(s->payload_len, 2);
    assert_int_equal(s->kind, BITT_KIND_JSON);
    assert_int_equal(s->occurrence, 0);
    assert_null(s->cron);
    assert_null(s->topic);
    bitt_schedule_free(s);
    assert_int_equal(set_every(be, &t, "job:a", 60, NULL, 0, 5000), BITT_OK);
    assert_int_equal(VT.schedule_get(be, &t, "job:a", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 5000);
    bitt_schedule_free(s);

    /* Every field of a def is kept; the same cron text keeps the next run,
     * another restarts it, and so does a move from cron to an interval. */
    bitt_schedule_def def = {.key = "job:a",
                             .cron = "*/5 * * * *",
                             .payload = (const uint8_t *)"C",
                             .payload_len = 1,
                             .topic = "work",
                             .max_attempts = 7,
                             .priority = -3};
    assert_int_equal(VT.schedule_set(be, &t, &def, 300000), BITT_OK);
    def.topic = NULL;
    def.priority = 4;
    assert_int_equal(VT.schedule_set(be, &t, &def, 600000), BITT_OK);
    assert_int_equal(VT.schedule_get(be, &t, "job:a", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 300000);
    assert_int_equal(s->interval_ms, 0);
    assert_string_equal(s->cron, "*/5 * * * *");
    assert_null(s->topic);
    assert_int_equal(s->max_attempts, 7);
    assert_int_equal(s->priority, 4);
    bitt_schedule_free(s);
    def.cron = "*/5 * * *  *";
    def.topic = "work";
    assert_int_equal(VT.schedule_set(be, &t, &def, 600000), BITT_OK);
    t.now = 600000;
    assert_int_equal(VT.schedule_due(be, &t, "job:a", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 600000);
    assert_int_equal(s->occurrence, 600000);
    assert_string_equal(s->topic, "work");
    assert_int_equal(s->priority, 4);
    bitt_schedule_free(s);
    t.now = 1000;
    assert_int_equal(set_every(be, &t, "job:a", 60, NULL, 0, 7000), BITT_OK);
    assert_int_equal(VT.schedule_get(be, &t, "job:a", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 7000);
    assert_null(s->cron);
    bitt_schedule_free(s);

    bitt_schedule_array arr = {0};
    assert_int_equal(VT.schedule_list(be, &t, &arr), BITT_OK);
    assert_int_equal(arr.count, 3);
    assert_string_equal(arr.items[0]->key, "job:a");
    assert_string_equal(arr.items[1]->key, "job:b");
    assert_string_equal(arr.items[2]->key, "x");
    bitt_schedule_list_free(arr.items, arr.count);

    assert_int_equal(VT.schedule_delete(be, &t, "job:b"), BITT_OK);
    assert_int_equal(VT.schedule_delete(be, &t, "job:b"), BITT_NOTFOUND);
    assert_int_equal(VT.schedule_get(be, &t, "job:b", &s), BITT_NOTFOUND);
    t.now = 1100;
    assert_int_equal(VT.schedule_due(be, &t, "job:", &s), BITT_NOTFOUND);
    VT.close(be);
}

/* ---- scale: 100k messages ------------------------------------------------------ */

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_queue_at_scale(void **state)
{
    (void)state;
    const int N = ts_scaled(100000, 2000); /* BITT_TEST_SCALE */
    bitt_backend *be = memory_vt_open();
    double start = seconds();
    for (int i = 0; i < N; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        bitt_op op = {.type = BITT_OP_ENQUEUE,
                      .name = "big",
                      .value = (const uint8_t *)"payload",
                      .value_len = 7,
                      .max_attempts = 2,
                      .aux = (const uint8_t *)key,
                      .aux_len = strlen(key),
                      .delay_ms = i % 7,
                      .priority = i % 3 - 1};
        bitt_commit c = {.ops = &op, .count = 1, .time = {1000, 1}};
        assert_int_equal(VT.commit(be, &c), BITT_OK);
    }
    /* A quarter more at a higher priority, never due: every claim below
     * passes them by (a jump to the next priority, not a walk). */
    for (int i = 0; i < N / 4; i++) {
        bitt_op op = {.type = BITT_OP_ENQUEUE,
                      .name = "big",
                      .value = (const uint8_t *)"later",
                      .value_len = 5,
                      .max_attempts = 1,
                      .delay_ms = BITT_MAX_DURATION_MS,
                      .priority = 9};
        bitt_commit c = {.ops = &op, .count = 1, .time = {1000, 1}};
        assert_int_equal(VT.commit(be, &c), BITT_OK);
    }
    bitt_time t = {2000, 1};
    /* Leases that run out on the last attempt: claimed twice, each
     * expiring, then swept by the next call. */
    uint64_t done = 0;
    for (int round = 0; round < 2; round++) {
        for (;;) {
            bitt_messages *out = bitt__messages_new(100);
            assert_int_equal(VT.queue_claim(be, &t, "big", 100, 10, out), BITT_OK);
            size_t n = out->count;
            bitt_messages_free(out);
            if (!n)
                break;
            done += n;
        }
        t.now += 10;
    }
    assert_int_equal(done, 2 * N);
    bitt_queue_stats s = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(VT.queue_stats(be, &t, "big", &s), BITT_OK);
    assert_int_equal(s.dead, N);
    uint64_t count = 0;
    assert_int_equal(VT.queue_dead_retry(be, &t, "big", 0, &count), BITT_OK);
    assert_int_equal(count, N);
    /* Claim and ack everything, one at a time. */
    for (;;) {
        bitt_messages *out = bitt__messages_new(1);
        assert_int_equal(VT.queue_claim(be, &t, "big", 1, 1000, out), BITT_OK);
        if (!out->count) {
            bitt_messages_free(out);
            break;
        }
        assert_int_equal(VT.queue_ack(be, &t, "big", out->items[0]->id, out->items[0]->token),
                         BITT_OK);
        bitt_messages_free(out);
    }
    assert_int_equal(VT.queue_stats(be, &t, "big", &s), BITT_OK);
    assert_int_equal(s.pending + s.processing + s.dead, 0);
    assert_int_equal(s.delayed, N / 4);
    double took = seconds() - start;
    printf("# 100k enqueue (+25k delayed at a higher priority), 2x claim+expire, retry, "
           "claim+ack: %.2f s\n",
           took);
    assert_true(took < 60);
    VT.close(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leases_and_fences),
        cmocka_unit_test(test_outbox),
        cmocka_unit_test(test_pubsub),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_schedules),
        cmocka_unit_test(test_queue_at_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
