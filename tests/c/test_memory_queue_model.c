/*
 * The memory backend's queue driven through its vtable against a plain
 * model: enqueues in commits (priorities, dedup keys, fences and failing
 * checks, a queue op before them that may free a dedup key), claims of one
 * topic or of both at once, ack / nack / extend / snooze standalone and as
 * commit ops with good and stale tokens, get, cancel and reschedule, dead
 * letters, stats and clock moves. The model is a flat array scanned in
 * full, so it is obviously right; the backend's ordered maps must agree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memory_vt.h"
#include "scale.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % n);
}

enum { MAXMSG = 4096, NTOPICS = 2, NDEDUP = 3 };
enum { M_PENDING, M_PROCESSING, M_DEAD, M_GONE };

static const char *const topics[NTOPICS] = {"alpha", "beta"};
static const char *const dedups[NDEDUP] = {"", "k1", "k2"};
static const int32_t priorities[] = {INT32_MIN, -1, 0, 0, 0, 1, 7, INT32_MAX};

typedef struct mmsg {
    int topic;
    int state;
    int dedup;     /* index into dedups, or -1 */
    int holds_key; /* still holds its dedup key */
    int32_t priority;
    char payload[32];
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
    assert_int_equal(got->priority, x->priority);
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
            if (!w.pending++ || x->due_at < w.oldest_pending_at)
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

/* ---- queue ops by id: one picked at random, judged and applied by the model */

typedef struct qop {
    int type; /* BITT_OP_QUEUE_* */
    uint64_t id;
    int topic; /* the topic named (the message's, mostly) */
    char token[BITT_TOKEN_LEN + 1];
    const char *error; /* nack */
    int64_t ms;        /* nack delay (< 0: backoff), snooze / reschedule delay, lease */
} qop;

/* Mostly a message in processing with its token; sometimes any message, a
 * wrong token or the other topic. */
static void random_qop(const qmodel *m, qop *q)
{
    static const int types[] = {BITT_OP_QUEUE_ACK,    BITT_OP_QUEUE_NACK,
                                BITT_OP_QUEUE_SNOOZE, BITT_OP_QUEUE_EXTEND,
                                BITT_OP_QUEUE_CANCEL, BITT_OP_QUEUE_RESCHEDULE};
    memset(q, 0, sizeof *q);
    q->type = types[rnd(6)];
    q->id = 1 + rnd((uint32_t)m->last_id);
    for (uint64_t tries = 0; rnd(4) && tries < m->last_id && m->msgs[q->id].state != M_PROCESSING;
         tries++)
        q->id = q->id % m->last_id + 1;
    const mmsg *x = &m->msgs[q->id];
    strcpy(q->token, x->token[0] ? x->token : "0123456789abcdef0123456789abcdef");
    if (!rnd(10))
        q->token[0] = q->token[0] == 'f' ? '0' : 'f';
    q->topic = rnd(10) ? x->topic : 1 - x->topic;
    q->error = rnd(3) ? "boom" : NULL;
    q->ms = q->type == BITT_OP_QUEUE_NACK && rnd(2) ? -1 : (int64_t)rnd(5);
}

/* Whether q applies (a delivery op: its token is current under a live
 * lease; cancel and reschedule: found), after the topic's sweep. */
static int model_judge(qmodel *m, const qop *q)
{
    model_sweep(m, q->topic);
    const mmsg *x = &m->msgs[q->id];
    if (x->topic != q->topic || x->state == M_GONE || x->state == M_DEAD)
        return 0;
    switch (q->type) {
    case BITT_OP_QUEUE_CANCEL: return 1;
    case BITT_OP_QUEUE_RESCHEDULE: return x->state == M_PENDING || x->due_at <= m->now;
    default: return x->state == M_PROCESSING && !strcmp(q->token, x->token) && x->due_at > m->now;
    }
}

static void model_apply(qmodel *m, const qop *q)
{
    mmsg *x = &m->msgs[q->id];
    switch (q->type) {
    case BITT_OP_QUEUE_ACK:
    case BITT_OP_QUEUE_CANCEL:
        x->state = M_GONE;
        x->holds_key = 0;
        return;
    case BITT_OP_QUEUE_NACK:
        x->has_error = q->error != NULL;
        strcpy(x->error, q->error ? q->error : "");
        x->token[0] = '\0';
        if (x->attempts >= x->max_attempts) {
            x->state = M_DEAD;
            x->failed_at = m->now;
            x->holds_key = 0;
        } else {
            x->state = M_PENDING;
            x->due_at = m->now + (q->ms < 0 ? bitt__backoff_delay(&backoff, x->attempts) : q->ms);
        }
        return;
    case BITT_OP_QUEUE_EXTEND: x->due_at = m->now + q->ms; return;
    case BITT_OP_QUEUE_SNOOZE: x->attempts--; /* fall through */
    default:                                  /* reschedule */
        x->state = M_PENDING;
        x->token[0] = '\0';
        x->due_at = m->now + q->ms;
        return;
    }
}

static bitt_op qop_op(const qop *q)
{
    int delivery = q->type <= BITT_OP_QUEUE_EXTEND;
    return (bitt_op){.type = q->type,
                     .name = topics[q->topic],
                     .version = q->id,
                     .owner = delivery ? q->token : NULL,
                     .aux = q->type == BITT_OP_QUEUE_NACK ? (const uint8_t *)q->error : NULL,
                     .aux_len =
                         q->type == BITT_OP_QUEUE_NACK && q->error ? strlen(q->error) + 1 : 0,
                     .delay_ms = q->type == BITT_OP_QUEUE_EXTEND ? 0 : q->ms,
                     .ttl_ms = q->type == BITT_OP_QUEUE_EXTEND ? q->ms : 0};
}

/* A delivery op through its standalone call. */
static void random_finish(bitt_backend *be, qmodel *m)
{
    qop q;
    random_qop(m, &q);
    if (q.type > BITT_OP_QUEUE_EXTEND)
        q.type = BITT_OP_QUEUE_ACK;
    int ok = model_judge(m, &q);
    bitt_time t = {m->now, 1};
    const char *name = topics[q.topic];
    int rc;
    switch (q.type) {
    case BITT_OP_QUEUE_ACK: rc = VT.queue_ack(be, &t, name, q.id, q.token); break;
    case BITT_OP_QUEUE_NACK:
        rc = VT.queue_nack(be, &t, name, q.id, q.token, q.error, q.ms, &backoff);
        break;
    case BITT_OP_QUEUE_SNOOZE: rc = VT.queue_snooze(be, &t, name, q.id, q.token, q.ms); break;
    default: rc = VT.queue_extend(be, &t, name, q.id, q.token, q.ms); break;
    }
    assert_int_equal(rc, ok ? BITT_OK : BITT_ETOKEN);
    if (ok)
        model_apply(m, &q);
    bitt__error_reset();
}

/* ---- commits: [a failing check] [a queue op] 0..3 enqueues ---------------- */

static void random_commit(bitt_backend *be, qmodel *m)
{
    bitt_op ops[5];
    size_t n = 0;
    int fail = !rnd(8);
    if (fail)
        ops[n++] =
            rnd(2) ? (bitt_op){.type = BITT_OP_FENCE, .name = "nobody", .owner = "x", .version = 1}
                   : (bitt_op){.type = BITT_OP_CHECK,
                               .key = (const uint8_t *)"k",
                               .key_len = 1,
                               .version = 77};
    qop q;
    int has_qop = m->last_id && rnd(2);
    size_t at_qop = n;
    if (has_qop) {
        random_qop(m, &q);
        ops[n++] = qop_op(&q);
    }
    size_t first = n, k = has_qop ? rnd(4) : 1 + rnd(3);
    char payloads[3][32];
    int tp[3], dd[3];
    for (size_t i = 0; i < k; i++) {
        tp[i] = (int)rnd(NTOPICS);
        dd[i] = rnd(3) ? -1 : (int)rnd(NDEDUP);
        if (!i && has_qop && m->msgs[q.id].dedup >= 0 && rnd(2)) {
            /* the key of the message the queue op may free */
            tp[i] = m->msgs[q.id].topic;
            dd[i] = m->msgs[q.id].dedup;
        }
        snprintf(payloads[i], sizeof payloads[i], "p%llu.%zu", (unsigned long long)m->version, i);
        ops[n++] = (bitt_op){
            .type = BITT_OP_ENQUEUE,
            .name = topics[tp[i]],
            .value = (const uint8_t *)payloads[i],
            .value_len = strlen(payloads[i]),
            .kind = BITT_KIND_BYTES,
            .delay_ms = rnd(2) ? 0 : rnd(6),
            .max_attempts = 1 + rnd(3),
            .priority = priorities[rnd(sizeof priorities / sizeof *priorities)],
            .aux = dd[i] < 0 ? NULL : (const uint8_t *)dedups[dd[i]],
            .aux_len = dd[i] < 0 ? 0 : strlen(dedups[dd[i]]),
        };
    }
    bitt_commit c = {
        .ops = ops, .count = n, .time = {m->now, 1}, .backoff = &backoff, .failed = SIZE_MAX};
    int rc = VT.commit(be, &c);
    if (fail) {
        assert_int_equal(rc, ops[0].type == BITT_OP_FENCE ? BITT_ELEASELOST : BITT_ECONFLICT);
        assert_int_equal(c.failed, 0);
        bitt__error_reset();
        return;
    }
    int applies = has_qop && model_judge(m, &q);
    if (has_qop && q.type <= BITT_OP_QUEUE_EXTEND && !applies) {
        assert_int_equal(rc, BITT_ETOKEN); /* nothing written, the enqueues neither */
        assert_int_equal(c.failed, at_qop);
        bitt__error_reset();
        return;
    }
    assert_int_equal(rc, BITT_OK);
    assert_int_equal(c.version, ++m->version);
    if (has_qop && q.type > BITT_OP_QUEUE_EXTEND)
        assert_int_equal(ops[at_qop].found, applies);
    if (applies) /* in op order: an enqueue after it sees what it freed */
        model_apply(m, &q);
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
                    .priority = op->priority,
                    .created_at = m->now,
                    .due_at = m->now + op->delay_ms,
                    .max_attempts = op->max_attempts};
        strcpy(x->payload, payloads[i]);
    }
}

/* ---- claims ---------------------------------------------------------------- */

static const qmodel *claim_cmp_model;

/* The claim order: priority descending, then (due_at, id), across topics. */
static int claim_cmp(const void *a, const void *b)
{
    uint64_t ia = *(const uint64_t *)a, ib = *(const uint64_t *)b;
    const mmsg *x = &claim_cmp_model->msgs[ia];
    const mmsg *y = &claim_cmp_model->msgs[ib];
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->due_at != y->due_at)
        return x->due_at < y->due_at ? -1 : 1;
    return ia < ib ? -1 : 1;
}

/* One topic through queue_claim, or both (in either order) at once. */
static void random_claim(bitt_backend *be, qmodel *m)
{
    int both = rnd(3) == 0, topic = (int)rnd(NTOPICS);
    const char *names[NTOPICS] = {topics[topic], topics[1 - topic]};
    size_t limit = rnd(5);
    int64_t lease = 1 + rnd(6);
    bitt_time t = {m->now, 1};
    bitt_messages *out = bitt__messages_new(0);
    assert_non_null(out);
    if (both)
        assert_int_equal(VT.queue_claim_topics(be, &t, names, NTOPICS, limit, lease, out), BITT_OK);
    else
        assert_int_equal(VT.queue_claim(be, &t, names[0], limit, lease, out), BITT_OK);

    model_sweep(m, topic);
    model_sweep(m, 1 - topic);
    static uint64_t ids[MAXMSG];
    size_t n = 0;
    for (uint64_t id = 1; id <= m->last_id; id++) {
        const mmsg *x = &m->msgs[id];
        if ((both || x->topic == topic) && (x->state == M_PENDING || x->state == M_PROCESSING) &&
            x->due_at <= m->now)
            ids[n++] = id;
    }
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

/* ---- get and dead letters -------------------------------------------------- */

static void random_get(bitt_backend *be, qmodel *m)
{
    uint64_t id = rnd((uint32_t)m->last_id + 2); /* 0 and one past the last too */
    int topic = (int)rnd(NTOPICS);
    bitt_time t = {m->now, 1};
    bitt_message *got = NULL;
    int rc = VT.queue_get(be, &t, topics[topic], id, &got);
    model_sweep(m, topic);
    const mmsg *x = id && id <= m->last_id ? &m->msgs[id] : NULL;
    if (!x || x->topic != topic || x->state == M_GONE) {
        assert_int_equal(rc, BITT_NOTFOUND);
        assert_null(got);
        return;
    }
    assert_int_equal(rc, BITT_OK);
    expect_message(got, m, id, 0);
    int want = x->state == M_DEAD         ? BITT_MSG_DEAD
               : x->due_at <= m->now      ? BITT_MSG_PENDING
               : x->state == M_PROCESSING ? BITT_MSG_LEASED
                                          : BITT_MSG_DELAYED;
    assert_int_equal(got->state, want);
    bitt_message_free(got);
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
    bitt_backend *be = memory_vt_open();
    qmodel *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->now = 1000;
    const int steps = ts_scaled(40000, 2000);
    for (int step = 0; step < steps && m->last_id < MAXMSG - 4; step++) {
        uint32_t what = rnd(24);
        if (what < 6)
            random_commit(be, m);
        else if (what < 10)
            random_claim(be, m);
        else if (what < 14 && m->last_id)
            random_finish(be, m);
        else if (what < 16 && m->last_id)
            random_get(be, m);
        else if (what < 18)
            random_dead(be, m);
        else if (what < 19)
            check_stats(be, m, (int)rnd(NTOPICS));
        else
            m->now += rnd(4);
    }
    for (int topic = 0; topic < NTOPICS; topic++)
        check_stats(be, m, topic);
    free(m);
    VT.close(be); /* with messages in every state: leak-checked under ASan */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
