/*
 * The memory backend's version 2 entries driven through its vtable: a
 * randomized queue run against a plain model (enqueues in commits with
 * dedup keys, fences and failing checks; claims; ack/nack/extend with good
 * and stale tokens; dead letters; stats; clock moves), then directed cases
 * for leases and fences, the outbox, publish/subscribe, budgets and
 * schedules, and a 100k-message run that would crawl if claim or ack were
 * not O(log n).
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

#include "internal.h"
#include "scale.h"

#define VT bitt__memory_backend

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % n);
}

static bitt_backend *open_backend(void)
{
    bitt_url url = {.scheme = "memory", .rest = ""};
    bitt_limits limits = {BITT_DEFAULT_MAX_KEY_SIZE, BITT_DEFAULT_MAX_VALUE_SIZE};
    bitt_backend *be = NULL;
    assert_int_equal(VT.open(&url, &limits, &be), BITT_OK);
    assert_int_equal(VT.migrate(be), BITT_OK);
    return be;
}

/* ---- the queue model ------------------------------------------------------ */

enum { MAXMSG = 4096, NTOPICS = 2, NDEDUP = 3 };
enum { M_PENDING, M_PROCESSING, M_DEAD, M_GONE };

static const char *const topics[NTOPICS] = {"alpha", "beta"};
static const char *const dedups[NDEDUP] = {"", "k1", "k2"};

typedef struct mmsg {
    int topic;
    int state;
    int dedup;     /* index into dedups, or -1 */
    int holds_key; /* still holds its dedup key */
    char payload[16];
    int64_t created_at, due_at, failed_at;
    uint32_t attempts, max_attempts;
    char token[BITT_TOKEN_LEN + 1];
    char error[48]; /* "" = none */
    int has_error;
} mmsg;

typedef struct qmodel {
    mmsg msgs[MAXMSG + 1]; /* by id; ids from 1 */
    uint64_t last_id;
    int64_t now;
    uint64_t version;
} qmodel;

static bitt_backoff backoff = {.exponential = 0, .delays = {2, 5}, .delay_count = 2};

static void model_sweep(qmodel *m, int topic)
{
    for (uint64_t id = 1; id <= m->last_id; id++) {
        mmsg *x = &m->msgs[id];
        if (x->topic == topic && x->state == M_PROCESSING && x->attempts >= x->max_attempts &&
            x->due_at <= m->now) {
            x->state = M_DEAD;
            x->failed_at = x->due_at;
            x->holds_key = 0;
            x->has_error = 1;
            strcpy(x->error, BITT_LEASE_EXPIRED_ERROR);
            x->token[0] = '\0';
        }
    }
}

static uint64_t model_holder(const qmodel *m, int topic, int dedup)
{
    for (uint64_t id = 1; id <= m->last_id; id++) {
        const mmsg *x = &m->msgs[id];
        if (x->topic == topic && x->holds_key && x->dedup == dedup)
            return id;
    }
    return 0;
}

static void expect_message(const bitt_message *got, const qmodel *m, uint64_t id, int with_token)
{
    const mmsg *x = &m->msgs[id];
    assert_non_null(got);
    assert_int_equal(got->id, id);
    assert_string_equal(got->topic, topics[x->topic]);
    assert_int_equal(got->payload_len, strlen(x->payload));
    assert_memory_equal(got->payload, x->payload, got->payload_len);
    assert_int_equal(got->kind, BITT_KIND_BYTES);
    assert_int_equal(got->attempts, x->attempts);
    assert_int_equal(got->max_attempts, x->max_attempts);
    assert_int_equal(got->created_at, x->created_at);
    assert_int_equal(got->due_at, x->due_at);
    assert_int_equal(got->failed_at, x->failed_at);
    if (x->has_error)
        assert_string_equal(got->last_error, x->error);
    else
        assert_null(got->last_error);
    if (with_token) {
        assert_non_null(got->token);
        assert_int_equal(strlen(got->token), BITT_TOKEN_LEN);
    } else {
        assert_null(got->token);
    }
}

static void check_stats(bitt_backend *be, qmodel *m, int topic)
{
    bitt_time t = {m->now, 1};
    bitt_queue_stats s = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(VT.queue_stats(be, &t, topics[topic], &s), BITT_OK);
    model_sweep(m, topic);
    bitt_queue_stats w = {.version = BITT_QUEUE_STATS_VERSION};
    for (uint64_t id = 1; id <= m->last_id; id++) {
        const mmsg *x = &m->msgs[id];
        if (x->topic != topic)
            continue;
        if (x->state == M_DEAD) {
            w.dead++;
        } else if ((x->state == M_PENDING || x->state == M_PROCESSING) && x->due_at <= m->now) {
            w.pending++;
            if (!w.oldest_pending_at || x->due_at < w.oldest_pending_at)
                w.oldest_pending_at = x->due_at;
        } else if (x->state == M_PENDING) {
            w.delayed++;
        } else if (x->state == M_PROCESSING) {
            w.processing++;
        }
    }
    assert_int_equal(s.version, BITT_QUEUE_STATS_VERSION);
    assert_int_equal(s.pending, w.pending);
    assert_int_equal(s.delayed, w.delayed);
    assert_int_equal(s.processing, w.processing);
    assert_int_equal(s.dead, w.dead);
    assert_int_equal(s.oldest_pending_at, w.oldest_pending_at);
}

/* A commit of 1-3 enqueues, sometimes with a fence or check that fails. */
static void random_enqueue(bitt_backend *be, qmodel *m)
{
    bitt_op ops[5];
    size_t n = 0, first = 0;
    int fail = !rnd(8);
    if (fail) {
        ops[n++] =
            rnd(2) ? (bitt_op){.type = BITT_OP_FENCE, .name = "nobody", .owner = "x", .version = 1}
                   : (bitt_op){.type = BITT_OP_CHECK,
                               .key = (const uint8_t *)"k",
                               .key_len = 1,
                               .version = 77};
        first = 1;
    }
    size_t k = 1 + rnd(3);
    char payloads[3][16];
    int tp[3], dd[3];
    for (size_t i = 0; i < k; i++) {
        tp[i] = (int)rnd(NTOPICS);
        dd[i] = rnd(3) ? -1 : (int)rnd(NDEDUP);
        snprintf(payloads[i], sizeof payloads[i], "p%llu.%zu", (unsigned long long)m->version, i);
        ops[n++] = (bitt_op){
            .type = BITT_OP_ENQUEUE,
            .name = topics[tp[i]],
            .value = (const uint8_t *)payloads[i],
            .value_len = strlen(payloads[i]),
            .kind = BITT_KIND_BYTES,
            .delay_ms = rnd(2) ? 0 : rnd(6),
            .max_attempts = 1 + rnd(3),
            .aux = dd[i] < 0 ? NULL : (const uint8_t *)dedups[dd[i]],
            .aux_len = dd[i] < 0 ? 0 : strlen(dedups[dd[i]]),
        };
    }
    bitt_commit c = {.ops = ops, .count = n, .time = {m->now, 1}, .failed = SIZE_MAX};
    int rc = VT.commit(be, &c);
    if (fail) {
        assert_int_equal(rc, ops[0].type == BITT_OP_FENCE ? BITT_ELEASELOST : BITT_ECONFLICT);
        assert_int_equal(c.failed, 0);
        bitt__error_reset();
        return;
    }
    assert_int_equal(rc, BITT_OK);
    assert_int_equal(c.version, ++m->version);
    for (size_t i = 0; i < k; i++) {
        const bitt_op *op = &ops[first + i];
        model_sweep(m, tp[i]);
        uint64_t holder = dd[i] < 0 ? 0 : model_holder(m, tp[i], dd[i]);
        if (holder) {
            assert_int_equal(op->deduped, 1);
            assert_int_equal(op->id, holder);
            continue;
        }
        assert_int_equal(op->deduped, 0);
        assert_int_equal(op->id, ++m->last_id);
        assert_true(m->last_id <= MAXMSG);
        mmsg *x = &m->msgs[m->last_id];
        *x = (mmsg){.topic = tp[i],
                    .state = M_PENDING,
                    .dedup = dd[i],
                    .holds_key = dd[i] >= 0,
                    .created_at = m->now,
                    .due_at = m->now + op->delay_ms,
                    .max_attempts = op->max_attempts};
        strcpy(x->payload, payloads[i]);
    }
}

static int claim_cmp_topic;
static const qmodel *claim_cmp_model;

static int claim_cmp(const void *a, const void *b)
{
    const mmsg *x = &claim_cmp_model->msgs[*(const uint64_t *)a];
    const mmsg *y = &claim_cmp_model->msgs[*(const uint64_t *)b];
    if (x->due_at != y->due_at)
        return x->due_at < y->due_at ? -1 : 1;
    return *(const uint64_t *)a < *(const uint64_t *)b ? -1 : 1;
}

static void random_claim(bitt_backend *be, qmodel *m)
{
    int topic = (int)rnd(NTOPICS);
    size_t limit = rnd(5);
    int64_t lease = 1 + rnd(6);
    bitt_time t = {m->now, 1};
    bitt_messages *out = bitt__messages_new(0);
    assert_non_null(out);
    assert_int_equal(VT.queue_claim(be, &t, topics[topic], limit, lease, out), BITT_OK);

    model_sweep(m, topic);
    static uint64_t ids[MAXMSG];
    size_t n = 0;
    for (uint64_t id = 1; id <= m->last_id; id++) {
        const mmsg *x = &m->msgs[id];
        if (x->topic == topic && (x->state == M_PENDING || x->state == M_PROCESSING) &&
            x->due_at <= m->now)
            ids[n++] = id;
    }
    claim_cmp_topic = topic;
    claim_cmp_model = m;
    qsort(ids, n, sizeof *ids, claim_cmp);
    if (n > limit)
        n = limit;
    assert_int_equal(out->count, n);
    for (size_t i = 0; i < n; i++) {
        mmsg *x = &m->msgs[ids[i]];
        x->state = M_PROCESSING;
        x->attempts++;
        x->due_at = m->now + lease;
        expect_message(out->items[i], m, ids[i], 1);
        assert_string_not_equal(out->items[i]->token, x->token);
        strcpy(x->token, out->items[i]->token);
    }
    bitt_messages_free(out);
}

/* A message to ack/nack/extend: mostly one in processing, with its token,
 * sometimes a stale or wrong one. */
static void random_finish(bitt_backend *be, qmodel *m)
{
    if (!m->last_id)
        return;
    uint64_t id = 1 + rnd((uint32_t)m->last_id);
    for (uint64_t tries = 0; tries < m->last_id && m->msgs[id].state != M_PROCESSING; tries++)
        id = id % m->last_id + 1;
    mmsg *x = &m->msgs[id];
    int topic = x->topic;
    char token[BITT_TOKEN_LEN + 1];
    strcpy(token, x->token[0] ? x->token : "0123456789abcdef0123456789abcdef");
    if (!rnd(10))
        token[0] = token[0] == 'f' ? '0' : 'f';
    const char *tname = topics[rnd(10) ? topic : 1 - topic];

    model_sweep(m, topic);
    int ok = x->state == M_PROCESSING && !strcmp(token, x->token) && x->due_at > m->now &&
             !strcmp(tname, topics[topic]);
    bitt_time t = {m->now, 1};
    int rc;
    switch (rnd(3)) {
    case 0:
        rc = VT.queue_ack(be, &t, tname, id, token);
        if (ok) {
            x->state = M_GONE;
            x->holds_key = 0;
        }
        break;
    case 1: {
        int64_t delay = rnd(2) ? -1 : (int64_t)rnd(5);
        const char *error = rnd(3) ? "boom" : NULL;
        rc = VT.queue_nack(be, &t, tname, id, token, error, delay, &backoff);
        if (ok) {
            x->has_error = error != NULL;
            strcpy(x->error, error ? error : "");
            x->token[0] = '\0';
            if (x->attempts >= x->max_attempts) {
                x->state = M_DEAD;
                x->failed_at = m->now;
                x->holds_key = 0;
            } else {
                x->state = M_PENDING;
                x->due_at =
                    m->now + (delay < 0 ? bitt__backoff_delay(&backoff, x->attempts) : delay);
            }
        }
        break;
    }
    default: {
        int64_t lease = rnd(5);
        rc = VT.queue_extend(be, &t, tname, id, token, lease);
        if (ok)
            x->due_at = m->now + lease;
        break;
    }
    }
    assert_int_equal(rc, ok ? BITT_OK : BITT_ETOKEN);
    bitt__error_reset();
}

static void random_dead(bitt_backend *be, qmodel *m)
{
    int topic = (int)rnd(NTOPICS);
    bitt_time t = {m->now, 1};
    uint64_t pick = m->last_id && rnd(2) ? 1 + rnd((uint32_t)m->last_id) : 0;
    uint64_t count = 99, want = 0;
    switch (rnd(3)) {
    case 0: {
        size_t limit = 1 + rnd(4);
        bitt_messages *out = bitt__messages_new(0);
        assert_int_equal(VT.queue_dead_list(be, &t, topics[topic], pick, limit, out), BITT_OK);
        model_sweep(m, topic);
        size_t got = 0;
        for (uint64_t id = pick + 1; id <= m->last_id && got < limit; id++) {
            if (m->msgs[id].topic != topic || m->msgs[id].state != M_DEAD)
                continue;
            assert_true(got < out->count);
            expect_message(out->items[got++], m, id, 0);
        }
        assert_int_equal(out->count, got);
        bitt_messages_free(out);
        return;
    }
    case 1:
        assert_int_equal(VT.queue_dead_retry(be, &t, topics[topic], pick, &count), BITT_OK);
        model_sweep(m, topic);
        for (uint64_t id = 1; id <= m->last_id; id++) {
            mmsg *x = &m->msgs[id];
            if (x->topic != topic || x->state != M_DEAD || (pick && id != pick))
                continue;
            x->state = M_PENDING;
            x->attempts = 0;
            x->has_error = 0;
            x->failed_at = 0;
            x->due_at = m->now;
            want++;
        }
        break;
    default:
        assert_int_equal(VT.queue_dead_delete(be, &t, topics[topic], pick, &count), BITT_OK);
        model_sweep(m, topic);
        for (uint64_t id = 1; id <= m->last_id; id++) {
            mmsg *x = &m->msgs[id];
            if (x->topic != topic || x->state != M_DEAD || (pick && id != pick))
                continue;
            x->state = M_GONE;
            want++;
        }
        break;
    }
    assert_int_equal(count, want);
}

static void test_queue_against_model(void **state)
{
    (void)state;
    bitt_backend *be = open_backend();
    qmodel *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->now = 1000;
    const int steps = ts_scaled(30000, 1500);
    for (int step = 0; step < steps && m->last_id < MAXMSG - 4; step++) {
        uint32_t what = rnd(20);
        if (what < 5)
            random_enqueue(be, m);
        else if (what < 9)
            random_claim(be, m);
        else if (what < 14)
            random_finish(be, m);
        else if (what < 16)
            random_dead(be, m);
        else if (what < 17)
            check_stats(be, m, (int)rnd(NTOPICS));
        else
            m->now += rnd(4);
    }
    for (int topic = 0; topic < NTOPICS; topic++)
        check_stats(be, m, topic);
    free(m);
    VT.close(be); /* with messages in every state: leak-checked under ASan */
}

/* ---- leases and fences ----------------------------------------------------- */

static void test_leases_and_fences(void **state)
{
    (void)state;
    bitt_backend *be = open_backend();
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
    bitt_backend *be = open_backend();
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
    bitt_backend *be = open_backend();
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
    bitt_backend *be = open_backend();
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

static void test_schedules(void **state)
{
    (void)state;
    bitt_backend *be = open_backend();
    bitt_time t = {1000, 1};
    bitt_schedule *s = NULL;
    assert_int_equal(VT.schedule_claim(be, &t, "", &s), BITT_NOTFOUND);
    assert_int_equal(VT.schedule_upsert(be, &t, "job:b", 100, (const uint8_t *)"B", 1, 0, 1000),
                     BITT_OK);
    assert_int_equal(VT.schedule_upsert(be, &t, "job:a", 50, (const uint8_t *)"A", 1, 0, 1000),
                     BITT_OK);
    assert_int_equal(VT.schedule_upsert(be, &t, "x", 10, NULL, 0, 0, 900), BITT_OK);

    /* Earliest (next_run_at, key) first, within the prefix. */
    assert_int_equal(VT.schedule_claim(be, &t, "job:", &s), BITT_OK);
    assert_string_equal(s->key, "job:a");
    assert_int_equal(s->occurrence, 1000);
    assert_int_equal(s->next_run_at, 1050);
    bitt_schedule_free(s);
    assert_int_equal(VT.schedule_claim(be, &t, "job:", &s), BITT_OK);
    assert_string_equal(s->key, "job:b");
    bitt_schedule_free(s);
    assert_int_equal(VT.schedule_claim(be, &t, "job:", &s), BITT_NOTFOUND);
    assert_int_equal(VT.schedule_claim(be, &t, "", &s), BITT_OK);
    assert_string_equal(s->key, "x");
    assert_int_equal(s->occurrence, 900);
    assert_int_equal(s->next_run_at, 1010); /* missed occurrences skipped */
    bitt_schedule_free(s);

    /* Same interval keeps the cadence (payload updated); another restarts. */
    assert_int_equal(
        VT.schedule_upsert(be, &t, "job:a", 50, (const uint8_t *)"A2", 2, BITT_KIND_JSON, 5000),
        BITT_OK);
    assert_int_equal(VT.schedule_get(be, &t, "job:a", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 1050);
    assert_int_equal(s->payload_len, 2);
    assert_int_equal(s->kind, BITT_KIND_JSON);
    assert_int_equal(s->occurrence, 0);
    bitt_schedule_free(s);
    assert_int_equal(VT.schedule_upsert(be, &t, "job:a", 60, NULL, 0, 0, 5000), BITT_OK);
    assert_int_equal(VT.schedule_get(be, &t, "job:a", &s), BITT_OK);
    assert_int_equal(s->next_run_at, 5000);
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
    assert_int_equal(VT.schedule_claim(be, &t, "job:", &s), BITT_NOTFOUND);
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
    bitt_backend *be = open_backend();
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
                      .delay_ms = i % 7};
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
    assert_int_equal(s.pending + s.delayed + s.processing + s.dead, 0);
    double took = seconds() - start;
    printf("# 100k enqueue, 2x claim+expire, retry, claim+ack: %.2f s\n", took);
    assert_true(took < 60);
    VT.close(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_against_model),
        cmocka_unit_test(test_leases_and_fences),
        cmocka_unit_test(test_outbox),
        cmocka_unit_test(test_pubsub),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_schedules),
        cmocka_unit_test(test_queue_at_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
