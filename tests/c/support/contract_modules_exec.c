/*
 * tests/c/support/contract_modules_exec.c: executes the steps of the 0.2
 * modules through the public API. Like contract_exec.c: no JSON and no
 * failure reporting, so parallel workers may call it; a promise that the
 * status cannot show (an output set on failure, a page over its limit, a
 * list out of order, a token missing) goes to res->problem.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract_impl.h"

static void problem(ct_result *r, const char *fmt, ...)
{
    if (r->problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->problem, sizeof r->problem, fmt, ap);
    va_end(ap);
}

static void capture(ct_result *r, int rc)
{
    r->status = rc;
    if (rc < 0) {
        r->last_code = bitt_error_last_code();
        snprintf(r->message, sizeof r->message, "%s", bitt_error_last());
    }
}

/* A byte string as an argument: NULL when empty. */
static const void *arg(const ct_bytes *b)
{
    return b->p;
}

/* A name as a C string ("" when empty). */
static const char *cstr(const ct_bytes *b)
{
    return b->p ? (const char *)b->p : "";
}

/* The op's name argument: NULL when not given. */
static const char *mname(const ct_op *op)
{
    return op->has_mname ? cstr(&op->mname) : NULL;
}

/* A token for op: fired when the step says "cancel": "fired", else NULL
 * (the plain call). NULL with BITT_ENOMEM in *rc when none could be made. */
static bitt_cancel *cancel_for(const ct_op *op, int *rc)
{
    bitt_cancel *c = NULL;
    *rc = BITT_OK;
    if (op->cancel && (*rc = bitt_cancel_new(&c)) == BITT_OK)
        bitt_cancel_fire(c);
    return c;
}

/* ---- message lists ---------------------------------------------------------------------- */

enum { L_DEQUEUE, L_DEAD, L_OUTBOX };

/* Whether t is the step's topic, or one of its topics. */
static int topic_of_step(const ct_op *op, const char *t)
{
    if (!t)
        return 0;
    if (!op->has_topics)
        return !strcmp(t, mname(op));
    for (size_t i = 0; i < op->nkeys; i++)
        if (op->keys[i].n == strlen(t) && !memcmp(op->keys[i].p, t, op->keys[i].n))
            return 1;
    return 0;
}

/* The promises every list of messages keeps (README.md, "Messages"). */
static void check_list(ct_result *r, const char *fn, int rc, bitt_messages *list, const ct_op *op,
                       size_t max, int kind_of_list, uint64_t after)
{
    capture(r, rc);
    if (rc != BITT_OK) {
        if (list)
            problem(r, "%s returned %d but set *out", fn, rc);
        bitt_messages_free(list);
        return;
    }
    if (!list) {
        problem(r, "%s returned BITT_OK with *out = NULL", fn);
        return;
    }
    r->msgs = list;
    size_t n = bitt_messages_count(list);
    if (n > max)
        problem(r, "%s returned %zu messages, over its limit of %zu", fn, n, max);
    if (bitt_messages_at(list, n))
        problem(r, "%s: bitt_messages_at(count) is not NULL", fn);
    uint64_t prev = after;
    for (size_t i = 0; i < n; i++) {
        const bitt_message *m = bitt_messages_at(list, i);
        if (!m) {
            problem(r, "%s: message %zu of %zu is NULL", fn, i, n);
            return;
        }
        const char *t = bitt_message_topic(m), *tok = bitt_message_token(m);
        if (!topic_of_step(op, t))
            problem(r, "%s: message %zu has the topic \"%s\", not the step's", fn, i,
                    t ? t : "(NULL)");
        int want_state = kind_of_list == L_DEQUEUE ? BITT_MSG_LEASED
                         : kind_of_list == L_DEAD  ? BITT_MSG_DEAD
                                                   : 0;
        if (bitt_message_state(m) != want_state)
            problem(r, "%s: message %zu has the state %d, not %d", fn, i, bitt_message_state(m),
                    want_state);
        size_t len;
        const uint8_t *p = bitt_message_payload(m, &len);
        if (!p && len)
            problem(r, "%s: message %zu: payload NULL with length %zu", fn, i, len);
        if (p && p[len] != 0)
            problem(r, "%s: message %zu: the payload is not NUL-terminated", fn, i);
        uint64_t id = bitt_message_id(m);
        if (kind_of_list == L_DEQUEUE) {
            if (!tok || !tok[0])
                problem(r, "%s: message %zu came without a token", fn, i);
            for (size_t j = 0; tok && j < i; j++) {
                const char *other = bitt_message_token(bitt_messages_at(list, j));
                if (other && !strcmp(other, tok))
                    problem(r, "%s: messages %zu and %zu carry the same token", fn, j, i);
                if (bitt_message_id(bitt_messages_at(list, j)) == id)
                    problem(r, "%s: message id %" PRIu64 " came twice in one batch", fn, id);
            }
            uint32_t a = bitt_message_attempts(m), max_a = bitt_message_max_attempts(m);
            if (a < 1 || a > max_a)
                problem(r, "%s: message %zu has attempts %u of max_attempts %u", fn, i, a, max_a);
        } else {
            if (kind_of_list == L_OUTBOX && tok)
                problem(r, "%s: event %zu carries a token", fn, i);
            if (id <= prev)
                problem(r, "%s: id %" PRIu64 " at %zu does not come after %" PRIu64, fn, id, i,
                        prev);
            prev = id;
        }
        if (id == 0)
            problem(r, "%s: message %zu has id 0", fn, i);
    }
}

/* ---- ops ---------------------------------------------------------------------------------- */

static void exec_enqueue(bitt_store *s, const ct_op *op, ct_result *r)
{
    bitt_enqueue_options o;
    int rc = bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION);
    if (rc) {
        capture(r, rc);
        problem(r, "bitt_enqueue_options_init gave %d", rc);
        return;
    }
    o.delay_ms = op->delay;
    o.max_attempts = op->max_attempts;
    o.priority = op->priority;
    if (op->has_dedup) {
        o.dedup_key = op->dedup.p ? (const void *)op->dedup.p : (const void *)"";
        o.dedup_key_len = op->dedup.n;
    }
    rc = bitt_queue_enqueue(s, mname(op), arg(&op->value), op->value.n, op->kind, &o, &r->id);
    capture(r, rc);
    if ((rc == BITT_OK || rc == BITT_EXISTS) && r->id == 0)
        problem(r, "bitt_queue_enqueue gave %s with id 0", rc ? "BITT_EXISTS" : "BITT_OK");
}

static void exec_dequeue(bitt_store *s, const ct_op *op, ct_result *r)
{
    bitt_dequeue_options o;
    int rc = bitt_dequeue_options_init(&o, BITT_DEQUEUE_OPTIONS_VERSION);
    if (rc) {
        capture(r, rc);
        problem(r, "bitt_dequeue_options_init gave %d", rc);
        return;
    }
    o.limit = op->limit;
    o.lease_ms = op->lease_ms;
    o.wait_ms = op->wait_ms;
    bitt_messages *list = NULL;
    bitt_cancel *cancel = cancel_for(op, &rc);
    const char *topics[BITT_DEQUEUE_TOPICS_MAX + 1];
    size_t n = op->nkeys <= BITT_DEQUEUE_TOPICS_MAX ? op->nkeys : BITT_DEQUEUE_TOPICS_MAX + 1;
    for (size_t i = 0; op->has_topics && i < n; i++)
        topics[i] = cstr(&op->keys[i]);
    if (!rc && op->has_topics)
        rc = bitt_queue_dequeue_topics(s, topics, op->nkeys, &o, cancel, &list);
    else if (!rc)
        rc = bitt_queue_dequeue_cancel(s, mname(op), &o, cancel, &list);
    bitt_cancel_free(cancel);
    check_list(r, "bitt_queue_dequeue", rc, list, op, op->limit ? op->limit : 1, L_DEQUEUE, 0);
}

static void exec_lease(bitt_store *s, const ct_op *op, ct_result *r)
{
    int rc;
    switch (op->code) {
    case OP_L_ACQUIRE:
        rc = bitt_lease_acquire(s, mname(op), cstr(&op->owner), op->ttl, &r->epoch, &r->expires_at);
        capture(r, rc);
        if (rc == BITT_OK && r->epoch == 0)
            problem(r, "bitt_lease_acquire gave epoch 0");
        break;
    case OP_L_RENEW:
        capture(r,
                bitt_lease_renew(s, mname(op), cstr(&op->owner), op->id, op->ttl, &r->expires_at));
        break;
    case OP_L_RELEASE:
        capture(r, bitt_lease_release(s, mname(op), cstr(&op->owner), op->id));
        break;
    default:
        rc = bitt_lease_get(s, mname(op), &r->owner, &r->epoch, &r->expires_at);
        capture(r, rc);
        if (rc == BITT_OK && (!r->owner.ptr || !r->owner.len))
            problem(r, "bitt_lease_get gave BITT_OK with an empty owner");
    }
}

static void exec_outbox(bitt_store *s, const ct_op *op, ct_result *r)
{
    int rc;
    bitt_messages *list = NULL;
    const uint64_t *seqs = op->has_ids ? op->ids : NULL;
    switch (op->code) {
    case OP_O_APPEND:
        rc = bitt_outbox_append(s, mname(op), arg(&op->value), op->value.n, op->kind, &r->id);
        capture(r, rc);
        if (rc == BITT_OK && r->id == 0)
            problem(r, "bitt_outbox_append gave seq 0");
        break;
    case OP_O_PENDING:
        rc = bitt_outbox_pending(s, mname(op), op->limit, &list);
        check_list(r, "bitt_outbox_pending", rc, list, op, op->limit ? op->limit : 100, L_OUTBOX,
                   0);
        break;
    case OP_O_PARKED:
        rc = bitt_outbox_parked(s, mname(op), op->reason, op->limit, &list);
        check_list(r, "bitt_outbox_parked", rc, list, op, op->limit ? op->limit : 100, L_OUTBOX, 0);
        break;
    case OP_O_ACK: capture(r, bitt_outbox_ack(s, mname(op), seqs, op->nids, &r->count)); break;
    case OP_O_RETRY: capture(r, bitt_outbox_retry(s, mname(op), seqs, op->nids, &r->count)); break;
    case OP_O_DISCARD:
        capture(r, bitt_outbox_discard(s, mname(op), seqs, op->nids, &r->count));
        break;
    case OP_O_FAIL:
        capture(r, bitt_outbox_fail(s, mname(op), op->id, op->error, op->next_at));
        break;
    case OP_O_PARK:
        capture(r, bitt_outbox_park(s, mname(op), op->id, op->reason, op->error));
        break;
    default: capture(r, bitt_outbox_counts(s, mname(op), &r->pending, &r->parked));
    }
}

static void exec_pubsub(bitt_store *s, const ct_op *op, ct_result *r)
{
    int rc;
    switch (op->code) {
    case OP_P_SUBSCRIBE:
        rc = bitt_pubsub_subscribe(s, mname(op), &r->sub);
        capture(r, rc);
        if (rc == BITT_OK && !r->sub)
            problem(r, "bitt_pubsub_subscribe returned BITT_OK with *out = NULL");
        if (rc != BITT_OK && r->sub) {
            problem(r, "bitt_pubsub_subscribe returned %d but set *out", rc);
            r->sub = NULL; /* not ours to close: it may be garbage */
        }
        break;
    case OP_P_PUBLISH:
        capture(r, bitt_pubsub_publish(s, mname(op), arg(&op->value), op->value.n));
        break;
    case OP_P_NEXT: {
        bitt_cancel *cancel = cancel_for(op, &rc);
        if (!rc)
            rc = bitt_pubsub_next_cancel(op->sub, op->timeout, cancel, &r->msg);
        bitt_cancel_free(cancel);
        capture(r, rc);
        if (rc == BITT_OK && !r->msg)
            problem(r, "bitt_pubsub_next returned BITT_OK with *out = NULL");
        if (rc != BITT_OK && r->msg)
            problem(r, "bitt_pubsub_next returned %d but set *out", rc);
        if (r->msg && bitt_message_token(r->msg))
            problem(r, "a published message carries a token");
        break;
    }
    default: capture(r, BITT_OK); /* pubsub.close: the op closes its subscription when freed */
    }
}

static void exec_schedule(bitt_store *s, const ct_op *op, ct_result *r)
{
    int rc;
    switch (op->code) {
    case OP_S_UPSERT:
        if (op->sched_opts) {
            bitt_schedule_options o;
            rc = bitt_schedule_options_init(&o, BITT_SCHEDULE_OPTIONS_VERSION);
            o.first_run_at = op->first_run_at;
            o.cron = op->cron;
            o.topic = op->stopic;
            o.max_attempts = op->max_attempts;
            o.priority = op->priority;
            capture(r, rc ? rc
                          : bitt_schedule_set(s, mname(op), op->interval, arg(&op->value),
                                              op->value.n, op->kind, &o));
            return;
        }
        capture(r, bitt_schedule_upsert(s, mname(op), op->interval, arg(&op->value), op->value.n,
                                        op->kind, op->first_run_at));
        return;
    case OP_S_DELETE: capture(r, bitt_schedule_delete(s, mname(op))); return;
    case OP_S_LIST:
        rc = bitt_schedule_list(s, &r->scheds, &r->nscheds);
        capture(r, rc);
        if (rc != BITT_OK)
            return;
        for (size_t i = 0; i < r->nscheds; i++) {
            if (!r->scheds[i]) {
                problem(r, "bitt_schedule_list: slot %zu is NULL", i);
                return;
            }
            if (i &&
                strcmp(bitt_schedule_key(r->scheds[i - 1]), bitt_schedule_key(r->scheds[i])) >= 0)
                problem(r, "bitt_schedule_list: \"%s\" is not before \"%s\"",
                        bitt_schedule_key(r->scheds[i - 1]), bitt_schedule_key(r->scheds[i]));
        }
        return;
    default:
        rc = op->code == OP_S_CLAIM ? bitt_schedule_claim(s, mname(op), &r->sched)
                                    : bitt_schedule_get(s, mname(op), &r->sched);
        capture(r, rc);
        if (rc == BITT_OK && !r->sched)
            problem(r, "%s returned BITT_OK with *out = NULL", op->name);
        if (rc != BITT_OK && r->sched)
            problem(r, "%s returned %d but set *out", op->name, rc);
    }
}

void ct_exec_module(bitt_store *s, const ct_op *op, ct_result *r)
{
    int rc;
    bitt_messages *list = NULL;
    switch (op->code) {
    case OP_Q_ENQUEUE: exec_enqueue(s, op, r); break;
    case OP_Q_DEQUEUE: exec_dequeue(s, op, r); break;
    case OP_Q_ACK:
        capture(r, op->has_result ? bitt_queue_ack_result(s, mname(op), op->id, op->token,
                                                          arg(&op->value), op->value.n, op->kind)
                                  : bitt_queue_ack(s, mname(op), op->id, op->token));
        break;
    case OP_Q_PURGE: capture(r, bitt_queue_purge(s, mname(op), &r->removed)); break;
    case OP_Q_ACK_MANY: {
        size_t acked = 0;
        r->statuses = calloc(op->nids + 1, sizeof *r->statuses);
        if (!r->statuses) {
            r->status = BITT_ENOMEM;
            break;
        }
        capture(r, bitt_queue_ack_many(s, mname(op), op->ids, (const char *const *)op->tokens,
                                       op->nids, r->statuses, &acked));
        r->count = acked;
        break;
    }
    case OP_Q_NACK:
        capture(r, bitt_queue_nack(s, mname(op), op->id, op->token, op->error, op->delay));
        break;
    case OP_Q_EXTEND:
        capture(r, bitt_queue_extend(s, mname(op), op->id, op->token, op->lease_ms));
        break;
    case OP_Q_SNOOZE:
        capture(r, bitt_queue_snooze(s, mname(op), op->id, op->token, op->delay));
        break;
    case OP_Q_DEAD_LIST:
        rc = bitt_queue_dead_list(s, mname(op), op->id, op->limit, &list);
        check_list(r, "bitt_queue_dead_list", rc, list, op, op->limit ? op->limit : 100, L_DEAD,
                   op->id);
        break;
    case OP_Q_DEAD_RETRY: capture(r, bitt_queue_dead_retry(s, mname(op), op->id, &r->count)); break;
    case OP_Q_DEAD_DELETE:
        capture(r, bitt_queue_dead_delete(s, mname(op), op->id, &r->count));
        break;
    case OP_Q_GET:
        rc = bitt_queue_get(s, mname(op), op->id, &r->msg);
        capture(r, rc);
        if (rc == BITT_OK && !r->msg)
            problem(r, "bitt_queue_get returned BITT_OK with *out = NULL");
        if (rc != BITT_OK && r->msg)
            problem(r, "bitt_queue_get returned %d but set *out", rc);
        if (r->msg && bitt_message_token(r->msg))
            problem(r, "bitt_queue_get handed out a token");
        if (r->msg && !topic_of_step(op, bitt_message_topic(r->msg)))
            problem(r, "bitt_queue_get gave a message of another topic");
        if (r->msg && bitt_message_id(r->msg) != op->id)
            problem(r, "bitt_queue_get gave message %" PRIu64 ", not %" PRIu64,
                    bitt_message_id(r->msg), op->id);
        break;
    case OP_Q_CANCEL: capture(r, bitt_queue_cancel(s, mname(op), op->id)); break;
    case OP_Q_RESCHEDULE: capture(r, bitt_queue_reschedule(s, mname(op), op->id, op->delay)); break;
    case OP_Q_STATS:
        r->stats.version = BITT_QUEUE_STATS_VERSION;
        capture(r, bitt_queue_stats_get(s, mname(op), &r->stats));
        break;
    case OP_L_ACQUIRE:
    case OP_L_RENEW:
    case OP_L_RELEASE:
    case OP_L_GET: exec_lease(s, op, r); break;
    case OP_P_SUBSCRIBE:
    case OP_P_PUBLISH:
    case OP_P_NEXT:
    case OP_P_CLOSE: exec_pubsub(s, op, r); break;
    case OP_B_TAKE:
        r->wait = -1;
        rc = bitt_budget_take(s, mname(op), op->capacity, op->refill, op->period, op->n, &r->wait);
        capture(r, rc);
        if (rc == BITT_DENIED && r->wait < 1)
            problem(r, "bitt_budget_take denied with a wait of %" PRId64 " ms", r->wait);
        break;
    case OP_S_UPSERT:
    case OP_S_CLAIM:
    case OP_S_GET:
    case OP_S_LIST:
    case OP_S_DELETE: exec_schedule(s, op, r); break;
    default: exec_outbox(s, op, r);
    }
}

/* ---- txn actions ------------------------------------------------------------------------- */

int ct_exec_module_action(bitt_txn *t, const ct_action *a)
{
    switch (a->type) {
    case ACT_ENQUEUE: {
        bitt_enqueue_options o;
        int rc = bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION);
        if (rc)
            return rc;
        o.delay_ms = a->delay;
        o.max_attempts = a->max_attempts;
        o.priority = a->priority;
        if (a->has_dedup) {
            o.dedup_key = a->dedup.p ? (const void *)a->dedup.p : (const void *)"";
            o.dedup_key_len = a->dedup.n;
        }
        return bitt_txn_enqueue(t, cstr(&a->name), arg(&a->value), a->value.n, a->kind, &o);
    }
    case ACT_FENCE: return bitt_txn_fence(t, cstr(&a->name), cstr(&a->owner), a->version);
    case ACT_OUTBOX:
        return bitt_txn_outbox_append(t, cstr(&a->name), arg(&a->value), a->value.n, a->kind);
    case ACT_Q_ACK:
        return a->has_result ? bitt_txn_queue_ack_result(t, cstr(&a->name), a->id, a->token,
                                                         arg(&a->value), a->value.n, a->kind)
                             : bitt_txn_queue_ack(t, cstr(&a->name), a->id, a->token);
    case ACT_Q_NACK:
        return bitt_txn_queue_nack(t, cstr(&a->name), a->id, a->token, a->error, a->delay);
    case ACT_Q_SNOOZE: return bitt_txn_queue_snooze(t, cstr(&a->name), a->id, a->token, a->delay);
    case ACT_Q_EXTEND: return bitt_txn_queue_extend(t, cstr(&a->name), a->id, a->token, a->delay);
    case ACT_Q_CANCEL: return bitt_txn_queue_cancel(t, cstr(&a->name), a->id);
    case ACT_Q_RESCHEDULE: return bitt_txn_queue_reschedule(t, cstr(&a->name), a->id, a->delay);
    }
    return BITT_EINVAL;
}
