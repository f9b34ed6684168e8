/* Injection cases: queue retention (acks with a result, done messages,
 * purge) on the store of inj_fixture_retention, and schedules with a cron
 * expression or a topic (set, read back, claimed with the enqueue of the
 * occurrence's message). */
#include <string.h>

#include "inject.h"

#define TOPIC "jobs"
#define RESULT "{\"r\":[1,2]}"

static int prepare_retention(inj_ctx *c)
{
    return inj_fixture_retention(c);
}

/* The live delivery acked with a result: kept done with it. */
static int call_ack_result(inj_ctx *c)
{
    return bitt_queue_ack_result(c->store, TOPIC, c->token_id, c->token, RESULT, strlen(RESULT),
                                 BITT_KIND_JSON);
}

/* The fixture's done message read back: state, when, its result. */
static int call_get_done(inj_ctx *c)
{
    int rc = bitt_queue_get(c->store, TOPIC, c->done_id, &c->message);
    if (rc)
        return rc;
    size_t len = 0;
    const uint8_t *r = bitt_message_result(c->message, &len);
    return bitt_message_state(c->message) == BITT_MSG_DONE &&
                   bitt_message_done_at(c->message) == INJ_NOW && r && len == 8 &&
                   !memcmp(r, "{\"ok\":1}", 8) &&
                   bitt_message_result_kind(c->message) == BITT_KIND_JSON &&
                   !bitt_message_token(c->message)
               ? BITT_OK
               : BITT_EINVAL;
}

static int prepare_retention_txn(inj_ctx *c)
{
    int rc = inj_fixture_retention(c);
    return rc ? rc : bitt_txn_begin(c->store, &c->txn);
}

static int call_txn_ack_result(inj_ctx *c)
{
    return bitt_txn_queue_ack_result(c->txn, TOPIC, c->token_id, c->token, RESULT, strlen(RESULT),
                                     BITT_KIND_JSON);
}

/* "save the output and finish the job" in one commit: a set and an ack
 * with a result; a failure writes neither. */
static int prepare_ack_result_txn(inj_ctx *c)
{
    int rc = prepare_retention_txn(c);
    if (!rc)
        rc = bitt_txn_set(c->txn, "output", 6, "42", 2, BITT_KIND_BYTES, 0);
    return rc ? rc : call_txn_ack_result(c);
}

static int call_txn_commit(inj_ctx *c)
{
    return bitt_txn_commit(c->txn, NULL);
}

/* Every topic: the done message and the dead letter of "old". */
static int call_purge_all(inj_ctx *c)
{
    uint64_t removed = 99;
    int rc = bitt_queue_purge(c->store, NULL, &removed);
    return rc ? rc : removed == 2 ? BITT_OK : BITT_EINVAL;
}

static int call_purge_topic(inj_ctx *c)
{
    uint64_t removed = 99;
    int rc = bitt_queue_purge(c->store, "old", &removed);
    return rc ? rc : removed == 2 ? BITT_OK : BITT_EINVAL;
}

/* A cron schedule whose claims enqueue on TOPIC. */
static int set_cron(bitt_store *s, const char *key, int64_t first_run_at)
{
    bitt_schedule_options o;
    int rc = bitt_schedule_options_init(&o, BITT_SCHEDULE_OPTIONS_VERSION);
    if (rc)
        return rc;
    o.cron = "*/5 * * * *";
    o.first_run_at = first_run_at;
    o.topic = TOPIC;
    o.max_attempts = 2;
    o.priority = 3;
    return bitt_schedule_set(s, key, 0, "{\"job\":\"report\"}", 16, BITT_KIND_JSON, &o);
}

static int call_schedule_set(inj_ctx *c)
{
    return set_cron(c->store, "s/cron", 0);
}

/* Changes the cadence of a fixture schedule: its next run restarts. */
static int call_schedule_set_cadence(inj_ctx *c)
{
    return set_cron(c->store, "s/later", INJ_NOW + 60000);
}

/* An interval schedule with a topic, due at INJ_NOW - 10. */
static int prepare_topic_schedule(inj_ctx *c)
{
    bitt_schedule_options o = BITT_SCHEDULE_OPTIONS_INIT;
    o.first_run_at = INJ_NOW - 10;
    o.topic = TOPIC;
    return bitt_schedule_set(c->store, "t/every", 1000, "run", 3, BITT_KIND_BYTES, &o);
}

static int prepare_cron_schedule(inj_ctx *c)
{
    return set_cron(c->store, "t/cron", INJ_NOW - 10);
}

static int call_schedule_get_cron(inj_ctx *c)
{
    int rc = bitt_schedule_get(c->store, "t/cron", &c->schedule);
    if (rc)
        return rc;
    const char *cron = bitt_schedule_cron(c->schedule), *topic = bitt_schedule_topic(c->schedule);
    return cron && !strcmp(cron, "*/5 * * * *") && topic && !strcmp(topic, TOPIC) &&
                   bitt_schedule_interval(c->schedule) == 0 &&
                   bitt_schedule_message_id(c->schedule) == 0
               ? BITT_OK
               : BITT_EINVAL;
}

/* A claim of a schedule with a topic: the occurrence moves on and its
 * message is enqueued, in one commit, and the claim names the message. */
static int claim_with_message(inj_ctx *c, const char *key, int64_t next)
{
    int rc = bitt_schedule_claim(c->store, key, &c->schedule);
    if (rc)
        return rc;
    return !strcmp(bitt_schedule_key(c->schedule), key) &&
                   bitt_schedule_occurrence(c->schedule) == INJ_NOW - 10 &&
                   bitt_schedule_next_run_at(c->schedule) == next &&
                   bitt_schedule_message_id(c->schedule) != 0
               ? BITT_OK
               : BITT_EINVAL;
}

static int call_claim_topic(inj_ctx *c)
{
    return claim_with_message(c, "t/every", INJ_NOW + 990);
}

/* INJ_NOW is 13:46:40 UTC (1970-01-12): the next fifth minute is 13:50. */
static int call_claim_cron(inj_ctx *c)
{
    return claim_with_message(c, "t/cron", INJ_NOW + 200000);
}

const inj_case inj_retention_cases[] = {
    {"queue_ack_result", "bitt_queue_ack_result", prepare_retention, call_ack_result, 0, 0},
    {"queue_get_done", "bitt_message_done_at bitt_message_result bitt_message_result_kind",
     prepare_retention, call_get_done, 0, 0},
    {"txn_queue_ack_result", "bitt_txn_queue_ack_result", prepare_retention_txn,
     call_txn_ack_result, 0, INJ_AFTER_TXN_FAILED},
    {"txn_commit_ack_result", "bitt_txn_commit", prepare_ack_result_txn, call_txn_commit, 0,
     INJ_AFTER_USED},
    {"queue_purge_all", "bitt_queue_purge", prepare_retention, call_purge_all, 0, 0},
    {"queue_purge_topic", "bitt_queue_purge", prepare_retention, call_purge_topic, 0, 0},
    {"schedule_set_cron", "bitt_schedule_options_init bitt_schedule_set", NULL, call_schedule_set,
     0, 0},
    {"schedule_set_cadence", "bitt_schedule_set", NULL, call_schedule_set_cadence, 0, 0},
    {"schedule_get_cron", "bitt_schedule_get bitt_schedule_cron bitt_schedule_topic",
     prepare_cron_schedule, call_schedule_get_cron, 0, 0},
    {"schedule_claim_topic", "bitt_schedule_claim bitt_schedule_message_id", prepare_topic_schedule,
     call_claim_topic, 0, 0},
    {"schedule_claim_cron", "bitt_schedule_claim", prepare_cron_schedule, call_claim_cron, 0, 0},
};
const size_t inj_retention_case_count = sizeof inj_retention_cases / sizeof *inj_retention_cases;
