/* Injection cases: queue control (messages by id, dequeue over topics,
 * the queue ops of a txn). The fixture's "jobs" holds the dead letter
 * (dead_id), the live delivery (token_id) and, after it, "two" (dedup key
 * d2) and "three", pending. */
#include <string.h>

#include "inject.h"

#define TOPIC "jobs"

/* Reads the live delivery: leased, priority 0, never a token. */
static int call_get(inj_ctx *c)
{
    int rc = bitt_queue_get(c->store, TOPIC, c->token_id, &c->message);
    if (rc)
        return rc;
    const bitt_message *m = c->message;
    return bitt_message_state(m) == BITT_MSG_LEASED && bitt_message_priority(m) == 0 &&
                   !bitt_message_token(m) && bitt_message_id(m) == c->token_id
               ? BITT_OK
               : BITT_EINVAL;
}

static int call_cancel(inj_ctx *c)
{
    return bitt_queue_cancel(c->store, TOPIC, c->token_id + 1);
}

static int call_reschedule(inj_ctx *c)
{
    return bitt_queue_reschedule(c->store, TOPIC, c->token_id + 2, 30000);
}

/* Over "jobs" and an empty topic: the two pending messages of "jobs". */
static int call_dequeue_topics(inj_ctx *c)
{
    const char *const topics[2] = {"empty", TOPIC};
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = 5;
    int rc = bitt_queue_dequeue_topics(c->store, topics, 2, &o, NULL, &c->messages);
    if (rc)
        return rc;
    size_t n = bitt_messages_count(c->messages);
    for (size_t i = 0; i < n; i++)
        if (strcmp(bitt_message_topic(bitt_messages_at(c->messages, i)), TOPIC))
            return BITT_EINVAL;
    return n == 2 ? BITT_OK : BITT_EINVAL;
}

static int prepare_txn(inj_ctx *c)
{
    return bitt_txn_begin(c->store, &c->txn);
}

static int call_txn_ack(inj_ctx *c)
{
    return bitt_txn_queue_ack(c->txn, TOPIC, c->token_id, c->token);
}

static int call_txn_nack(inj_ctx *c)
{
    return bitt_txn_queue_nack(c->txn, TOPIC, c->token_id, c->token, "step failed", -1);
}

static int call_txn_snooze(inj_ctx *c)
{
    return bitt_txn_queue_snooze(c->txn, TOPIC, c->token_id, c->token, 5000);
}

static int call_txn_extend(inj_ctx *c)
{
    return bitt_txn_queue_extend(c->txn, TOPIC, c->token_id, c->token, 90000);
}

static int call_txn_cancel(inj_ctx *c)
{
    return bitt_txn_queue_cancel(c->txn, TOPIC, c->token_id + 1);
}

static int call_txn_reschedule(inj_ctx *c)
{
    return bitt_txn_queue_reschedule(c->txn, TOPIC, c->token_id + 2, 0);
}

/* "save the result, finish the delivery, wake another": a set, an ack, a
 * cancel and a reschedule in one commit; a failure anywhere writes none. */
static int prepare_queue_txn(inj_ctx *c)
{
    int rc = prepare_txn(c);
    if (!rc)
        rc = bitt_txn_set(c->txn, "result", 6, "done", 4, BITT_KIND_BYTES, 0);
    int (*steps[])(inj_ctx *) = {call_txn_ack, call_txn_cancel, call_txn_reschedule};
    for (size_t i = 0; !rc && i < sizeof steps / sizeof *steps; i++)
        rc = steps[i](c);
    return rc;
}

/* The same with a nack of a delivery that is not live: BITT_ETOKEN, and
 * the set, the cancel and the reschedule before it are not written. */
static int prepare_stale_txn(inj_ctx *c)
{
    int rc = prepare_txn(c);
    if (!rc)
        rc = bitt_txn_set(c->txn, "result", 6, "done", 4, BITT_KIND_BYTES, 0);
    if (!rc)
        rc = call_txn_cancel(c);
    if (!rc)
        rc = call_txn_reschedule(c);
    if (!rc)
        rc = bitt_txn_queue_nack(c->txn, TOPIC, c->dead_id, c->token, "stale", 0);
    return rc;
}

static int call_txn_commit(inj_ctx *c)
{
    return bitt_txn_commit(c->txn, NULL);
}

const inj_case inj_queue_control_cases[] = {
    {"queue_get", "bitt_queue_get bitt_message_state bitt_message_priority", NULL, call_get, 0, 0},
    {"queue_cancel", "bitt_queue_cancel", NULL, call_cancel, 0, 0},
    {"queue_reschedule", "bitt_queue_reschedule", NULL, call_reschedule, 0, 0},
    {"queue_dequeue_topics", "bitt_queue_dequeue_topics", NULL, call_dequeue_topics, 0, 0},
    {"txn_queue_ack", "bitt_txn_queue_ack", prepare_txn, call_txn_ack, 0, INJ_AFTER_TXN_FAILED},
    {"txn_queue_nack", "bitt_txn_queue_nack", prepare_txn, call_txn_nack, 0, INJ_AFTER_TXN_FAILED},
    {"txn_queue_snooze", "bitt_txn_queue_snooze", prepare_txn, call_txn_snooze, 0,
     INJ_AFTER_TXN_FAILED},
    {"txn_queue_extend", "bitt_txn_queue_extend", prepare_txn, call_txn_extend, 0,
     INJ_AFTER_TXN_FAILED},
    {"txn_queue_cancel", "bitt_txn_queue_cancel", prepare_txn, call_txn_cancel, 0,
     INJ_AFTER_TXN_FAILED},
    {"txn_queue_reschedule", "bitt_txn_queue_reschedule", prepare_txn, call_txn_reschedule, 0,
     INJ_AFTER_TXN_FAILED},
    {"txn_commit_queue_ops", "bitt_txn_commit", prepare_queue_txn, call_txn_commit, 0,
     INJ_AFTER_USED},
    {"txn_commit_stale_delivery", "bitt_txn_commit", prepare_stale_txn, call_txn_commit,
     BITT_ETOKEN, INJ_AFTER_USED},
};
const size_t inj_queue_control_case_count =
    sizeof inj_queue_control_cases / sizeof *inj_queue_control_cases;
