/* Injection cases: queue, leases, outbox, budgets and schedules. */
#include <string.h>

#include "inject.h"

static int call_enqueue(inj_ctx *c)
{
    bitt_enqueue_options o;
    int rc = bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION);
    if (rc)
        return rc;
    o.dedup_key = "d5";
    o.dedup_key_len = 2;
    o.delay_ms = 100;
    uint64_t id = 0;
    return bitt_queue_enqueue(c->store, "jobs", "five", 4, BITT_KIND_BYTES, &o, &id);
}

static int call_enqueue_deduped(inj_ctx *c)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.dedup_key = "d2";
    o.dedup_key_len = 2;
    uint64_t id = 0;
    return bitt_queue_enqueue(c->store, "jobs", "dup", 3, BITT_KIND_BYTES, &o, &id);
}

/* Reads every field of the messages it got: the accessors of bitt.h. */
static int read_messages(const bitt_messages *m, size_t want)
{
    if (bitt_messages_count(m) != want)
        return BITT_EINVAL;
    for (size_t i = 0; i < want; i++) {
        const bitt_message *x = bitt_messages_at(m, i);
        size_t len = 0;
        if (!x || !bitt_message_id(x) || !bitt_message_topic(x) || !bitt_message_payload(x, &len) ||
            !bitt_message_token(x) || bitt_message_attempts(x) != 1 ||
            bitt_message_max_attempts(x) != 3 || bitt_message_last_error(x) ||
            bitt_message_created_at(x) <= 0 || bitt_message_due_at(x) <= 0 ||
            bitt_message_failed_at(x) != 0 || bitt_message_park_reason(x) != 0 ||
            bitt_message_kind(x) != BITT_KIND_BYTES)
            return BITT_EINVAL;
    }
    return BITT_OK;
}

static int call_dequeue(inj_ctx *c)
{
    bitt_dequeue_options o;
    int rc = bitt_dequeue_options_init(&o, BITT_DEQUEUE_OPTIONS_VERSION);
    if (rc)
        return rc;
    o.limit = 5;
    rc = bitt_queue_dequeue(c->store, "jobs", &o, &c->messages);
    return rc ? rc : read_messages(c->messages, 2);
}

static int call_ack(inj_ctx *c)
{
    return bitt_queue_ack(c->store, "jobs", c->token_id, c->token);
}

/* The live delivery and a stale one in one call: one acked, one refused. */
static int call_ack_many(inj_ctx *c)
{
    const uint64_t ids[2] = {c->token_id, c->token_id + 1000};
    const char *const tokens[2] = {c->token, c->token};
    int st[2] = {0, 0};
    size_t acked = 0;
    /* statuses NULL first: the engine allocates them (a stale item only) */
    int rc = bitt_queue_ack_many(c->store, "jobs", ids + 1, tokens + 1, 1, NULL, &acked);
    if (rc || acked)
        return rc ? rc : BITT_EINVAL;
    rc = bitt_queue_ack_many(c->store, "jobs", ids, tokens, 2, st, &acked);
    if (rc)
        return rc;
    return acked == 1 && st[0] == BITT_OK && st[1] == BITT_ETOKEN ? BITT_OK : BITT_EINVAL;
}

static int call_nack(inj_ctx *c)
{
    return bitt_queue_nack(c->store, "jobs", c->token_id, c->token, "retry me", -1);
}

static int call_extend(inj_ctx *c)
{
    return bitt_queue_extend(c->store, "jobs", c->token_id, c->token, 90000);
}

/* The live delivery given back unseen, claimable 5 s from now. */
static int call_snooze(inj_ctx *c)
{
    return bitt_queue_snooze(c->store, "jobs", c->token_id, c->token, 5000);
}

/* A fired token ends the dequeue before it claims; reset, it claims. */
static int call_dequeue_cancel(inj_ctx *c)
{
    bitt_cancel *k = NULL;
    int rc = bitt_cancel_new(&k);
    if (rc)
        return rc;
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = 5;
    o.wait_ms = 60000;
    bitt_cancel_fire(k);
    rc = bitt_queue_dequeue_cancel(c->store, "jobs", &o, k, &c->messages);
    if (rc == BITT_ECANCELED && !c->messages && bitt_cancel_fired(k)) {
        bitt_cancel_reset(k);
        o.wait_ms = 0;
        rc = bitt_cancel_fired(k)
                 ? BITT_EINVAL
                 : bitt_queue_dequeue_cancel(c->store, "jobs", &o, k, &c->messages);
        if (!rc)
            rc = read_messages(c->messages, 2);
    } else if (rc >= 0 || rc == BITT_ECANCELED) {
        rc = BITT_EINVAL; /* a fired token must cancel, and set *out NULL */
    }
    bitt_cancel_free(k);
    return rc;
}

static int call_dead_list(inj_ctx *c)
{
    int rc = bitt_queue_dead_list(c->store, "jobs", 0, 10, &c->messages);
    return rc ? rc : bitt_messages_count(c->messages) == 1 ? BITT_OK : BITT_EINVAL;
}

static int call_dead_retry(inj_ctx *c)
{
    uint64_t n = 0;
    int rc = bitt_queue_dead_retry(c->store, "jobs", 0, &n);
    return rc ? rc : n == 1 ? BITT_OK : BITT_EINVAL;
}

static int call_dead_delete(inj_ctx *c)
{
    uint64_t n = 0;
    int rc = bitt_queue_dead_delete(c->store, "jobs", c->dead_id, &n);
    return rc ? rc : n == 1 ? BITT_OK : BITT_EINVAL;
}

static int call_stats(inj_ctx *c)
{
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    int rc = bitt_queue_stats_get(c->store, "jobs", &st);
    return rc ? rc : st.processing == 1 && st.dead == 1 ? BITT_OK : BITT_EINVAL;
}

static int call_acquire(inj_ctx *c)
{
    uint64_t epoch = 0;
    int64_t expires = 0;
    return bitt_lease_acquire(c->store, "lock2", "w2", 30000, &epoch, &expires);
}

static int call_renew(inj_ctx *c)
{
    int64_t expires = 0;
    return bitt_lease_renew(c->store, "lock", "w1", c->lease_epoch, 90000, &expires);
}

static int call_release(inj_ctx *c)
{
    return bitt_lease_release(c->store, "lock", "w1", c->lease_epoch);
}

static int call_lease_get(inj_ctx *c)
{
    uint64_t epoch = 0;
    int rc = bitt_lease_get(c->store, "lock", &c->buf, &epoch, NULL);
    return rc ? rc : epoch == c->lease_epoch ? BITT_OK : BITT_EINVAL;
}

static int call_outbox_append(inj_ctx *c)
{
    uint64_t seq = 0;
    return bitt_outbox_append(c->store, "events", "{}", 2, BITT_KIND_JSON, &seq);
}

static int call_outbox_pending(inj_ctx *c)
{
    int rc = bitt_outbox_pending(c->store, "events", 10, &c->messages);
    return rc ? rc : bitt_messages_count(c->messages) == 2 ? BITT_OK : BITT_EINVAL;
}

static int call_outbox_ack(inj_ctx *c)
{
    uint64_t seqs[] = {1, 2, 3}, acked = 0;
    int rc = bitt_outbox_ack(c->store, "events", seqs, 3, &acked);
    return rc ? rc : acked == 2 ? BITT_OK : BITT_EINVAL;
}

static int call_outbox_fail(inj_ctx *c)
{
    return bitt_outbox_fail(c->store, "events", 2, "again", INJ_NOW + 100);
}

static int call_outbox_park(inj_ctx *c)
{
    return bitt_outbox_park(c->store, "events", 1, BITT_PARK_INVALID, "cannot parse");
}

static int call_outbox_parked(inj_ctx *c)
{
    int rc = bitt_outbox_parked(c->store, "events", BITT_PARK_POISON, 10, &c->messages);
    return rc ? rc : bitt_messages_count(c->messages) == 1 ? BITT_OK : BITT_EINVAL;
}

static int call_outbox_retry(inj_ctx *c)
{
    uint64_t moved = 0;
    int rc = bitt_outbox_retry(c->store, "events", NULL, 0, &moved);
    return rc ? rc : moved == 2 ? BITT_OK : BITT_EINVAL;
}

static int call_outbox_discard(inj_ctx *c)
{
    uint64_t seqs[] = {4}, deleted = 0;
    int rc = bitt_outbox_discard(c->store, "events", seqs, 1, &deleted);
    return rc ? rc : deleted == 1 ? BITT_OK : BITT_EINVAL;
}

static int call_outbox_counts(inj_ctx *c)
{
    uint64_t pending = 0, parked = 0;
    int rc = bitt_outbox_counts(c->store, "events", &pending, &parked);
    return rc ? rc : pending == 2 && parked == 2 ? BITT_OK : BITT_EINVAL;
}

static int call_budget(inj_ctx *c)
{
    int64_t wait = -1;
    return bitt_budget_take(c->store, "api", 10, 1, 1000, 4, &wait);
}

static int call_upsert(inj_ctx *c)
{
    return bitt_schedule_upsert(c->store, "s/new", 2000, "new", 3, BITT_KIND_BYTES, 0);
}

static int call_claim(inj_ctx *c)
{
    int rc = bitt_schedule_claim(c->store, "s/", &c->schedule);
    if (rc)
        return rc;
    size_t len = 0;
    const bitt_schedule *s = c->schedule;
    if (strcmp(bitt_schedule_key(s), "s/due") || bitt_schedule_interval(s) != 1000 ||
        !bitt_schedule_payload(s, &len) || len != 4 || bitt_schedule_kind(s) != BITT_KIND_BYTES ||
        bitt_schedule_next_run_at(s) <= INJ_NOW || bitt_schedule_occurrence(s) != INJ_NOW - 500)
        return BITT_EINVAL;
    bitt_schedule_free(c->schedule);
    c->schedule = NULL;
    return BITT_OK;
}

static int call_schedule_get(inj_ctx *c)
{
    return bitt_schedule_get(c->store, "s/later", &c->schedule);
}

static int call_schedule_list(inj_ctx *c)
{
    int rc = bitt_schedule_list(c->store, &c->schedules, &c->schedule_count);
    if (rc)
        return rc;
    if (c->schedule_count != 2)
        return BITT_EINVAL;
    bitt_schedule_list_free(c->schedules, c->schedule_count);
    c->schedules = NULL;
    c->schedule_count = 0;
    return BITT_OK;
}

static int call_schedule_delete(inj_ctx *c)
{
    return bitt_schedule_delete(c->store, "s/later");
}

const inj_case inj_module_cases[] = {
    {"queue_enqueue", "bitt_enqueue_options_init bitt_queue_enqueue", NULL, call_enqueue, 0, 0},
    {"queue_enqueue_deduped", "bitt_queue_enqueue", NULL, call_enqueue_deduped, BITT_EXISTS, 0},
    {"queue_dequeue",
     "bitt_dequeue_options_init bitt_queue_dequeue bitt_messages_count bitt_messages_at "
     "bitt_message_id bitt_message_topic bitt_message_payload bitt_message_token "
     "bitt_message_attempts bitt_message_max_attempts bitt_message_last_error "
     "bitt_message_created_at bitt_message_due_at bitt_message_failed_at "
     "bitt_message_park_reason bitt_message_kind bitt_messages_free",
     NULL, call_dequeue, 0, 0},
    {"queue_ack", "bitt_queue_ack", NULL, call_ack, 0, 0},
    {"queue_ack_many", "bitt_queue_ack_many", NULL, call_ack_many, 0, 0},
    {"queue_nack", "bitt_queue_nack", NULL, call_nack, 0, 0},
    {"queue_extend", "bitt_queue_extend", NULL, call_extend, 0, 0},
    {"queue_snooze", "bitt_queue_snooze", NULL, call_snooze, 0, 0},
    {"queue_dequeue_cancel",
     "bitt_cancel_new bitt_cancel_fire bitt_cancel_fired bitt_cancel_reset bitt_cancel_free "
     "bitt_queue_dequeue_cancel",
     NULL, call_dequeue_cancel, 0, 0},
    {"queue_dead_list", "bitt_queue_dead_list", NULL, call_dead_list, 0, 0},
    {"queue_dead_retry", "bitt_queue_dead_retry", NULL, call_dead_retry, 0, 0},
    {"queue_dead_delete", "bitt_queue_dead_delete", NULL, call_dead_delete, 0, 0},
    {"queue_stats_get", "bitt_queue_stats_get", NULL, call_stats, 0, 0},
    {"lease_acquire", "bitt_lease_acquire", NULL, call_acquire, 0, 0},
    {"lease_renew", "bitt_lease_renew", NULL, call_renew, 0, 0},
    {"lease_release", "bitt_lease_release", NULL, call_release, 0, 0},
    {"lease_get", "bitt_lease_get", NULL, call_lease_get, 0, 0},
    {"outbox_append", "bitt_outbox_append", NULL, call_outbox_append, 0, 0},
    {"outbox_pending", "bitt_outbox_pending", NULL, call_outbox_pending, 0, 0},
    {"outbox_ack", "bitt_outbox_ack", NULL, call_outbox_ack, 0, 0},
    {"outbox_fail", "bitt_outbox_fail", NULL, call_outbox_fail, 0, 0},
    {"outbox_park", "bitt_outbox_park", NULL, call_outbox_park, 0, 0},
    {"outbox_parked", "bitt_outbox_parked", NULL, call_outbox_parked, 0, 0},
    {"outbox_retry", "bitt_outbox_retry", NULL, call_outbox_retry, 0, 0},
    {"outbox_discard", "bitt_outbox_discard", NULL, call_outbox_discard, 0, 0},
    {"outbox_counts", "bitt_outbox_counts", NULL, call_outbox_counts, 0, 0},
    {"budget_take", "bitt_budget_take", NULL, call_budget, 0, 0},
    {"schedule_upsert", "bitt_schedule_upsert", NULL, call_upsert, 0, 0},
    {"schedule_claim",
     "bitt_schedule_claim bitt_schedule_key bitt_schedule_interval bitt_schedule_payload "
     "bitt_schedule_kind bitt_schedule_next_run_at bitt_schedule_occurrence bitt_schedule_free",
     NULL, call_claim, 0, 0},
    {"schedule_get", "bitt_schedule_get", NULL, call_schedule_get, 0, 0},
    {"schedule_list", "bitt_schedule_list bitt_schedule_list_free", NULL, call_schedule_list, 0, 0},
    {"schedule_delete", "bitt_schedule_delete", NULL, call_schedule_delete, 0, 0},
};
const size_t inj_module_case_count = sizeof inj_module_cases / sizeof *inj_module_cases;
