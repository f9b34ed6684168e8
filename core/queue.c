/*
 * The queue module's rules: names, options and limits are checked here,
 * defaults resolved, and waits run here without the store's mutex; the
 * backend does the storage step under it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DEAD_LIST_DEFAULT 100
#define DEAD_LIST_MAX 1000

/* The bytes of a caller's bitt_enqueue_options of that version: a struct
 * compiled against an older bitt.h ends before the newer members. */
static size_t enqueue_options_size(unsigned int version)
{
    return version == 1 ? offsetof(bitt_enqueue_options, priority) : sizeof(bitt_enqueue_options);
}

int bitt_enqueue_options_init(bitt_enqueue_options *opts, unsigned int version)
{
    bitt__error_reset();
    if (!opts || version < 1 || version > BITT_ENQUEUE_OPTIONS_VERSION)
        return bitt__fail(BITT_EINVAL,
                          "bitt_enqueue_options_init: opts NULL or version %u is "
                          "not 1 to %d",
                          version, BITT_ENQUEUE_OPTIONS_VERSION);
    bitt_enqueue_options init = BITT_ENQUEUE_OPTIONS_INIT;
    init.version = version;
    memcpy(opts, &init, enqueue_options_size(version));
    return BITT_OK;
}

int bitt_dequeue_options_init(bitt_dequeue_options *opts, unsigned int version)
{
    bitt__error_reset();
    if (!opts || version != BITT_DEQUEUE_OPTIONS_VERSION)
        return bitt__fail(BITT_EINVAL,
                          "bitt_dequeue_options_init: opts NULL or version %u is "
                          "not %d",
                          version, BITT_DEQUEUE_OPTIONS_VERSION);
    *opts = (bitt_dequeue_options)BITT_DEQUEUE_OPTIONS_INIT;
    return BITT_OK;
}

int bitt__enqueue_op(const bitt_store *store, const char *topic, const void *payload,
                     size_t payload_len, int kind, const bitt_enqueue_options *opts, bitt_op *op)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    if (opts && (opts->version < 1 || opts->version > BITT_ENQUEUE_OPTIONS_VERSION))
        return bitt__fail(BITT_EINVAL,
                          "unknown bitt_enqueue_options version %u (this library: 1 to %d)",
                          opts->version, BITT_ENQUEUE_OPTIONS_VERSION);
    if (opts)
        memcpy(&o, opts, enqueue_options_size(opts->version));
    int rc = bitt__check_name(topic, "topic");
    if (!rc)
        rc = bitt__check_value(store, kind, payload, payload_len);
    if (!rc)
        rc = bitt__check_duration(o.delay_ms, 0, "enqueue delay");
    if (!rc && !o.dedup_key && o.dedup_key_len)
        rc = bitt__fail(BITT_EINVAL, "dedup key is NULL with length %zu", o.dedup_key_len);
    if (!rc && o.dedup_key && o.dedup_key_len > store->limits.max_key_size)
        rc = bitt__fail(BITT_ETOOLARGE, "dedup key of %zu bytes is over the key limit of %zu",
                        o.dedup_key_len, store->limits.max_key_size);
    if (rc)
        return rc;
    *op = (bitt_op){.type = BITT_OP_ENQUEUE,
                    .name = topic,
                    .value = payload,
                    .value_len = payload_len,
                    .kind = kind,
                    .delay_ms = o.delay_ms,
                    .max_attempts = o.max_attempts ? o.max_attempts : BITT_MAX_ATTEMPTS_DEFAULT,
                    .priority = o.priority,
                    .aux = o.dedup_key,
                    .aux_len = o.dedup_key_len};
    /* A zero-length dedup key is a key; only NULL means "none". */
    if (o.dedup_key && !o.dedup_key_len)
        op->aux = (const uint8_t *)"";
    return BITT_OK;
}

int bitt_queue_enqueue(bitt_store *store, const char *topic, const void *payload,
                       size_t payload_len, int kind, const bitt_enqueue_options *opts,
                       uint64_t *id_out)
{
    bitt__error_reset();
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    bitt_op op;
    int rc = bitt__enqueue_op(store, topic, payload, payload_len, kind, opts, &op);
    if (!rc)
        rc = bitt__run_commit(store, &op, 1, NULL);
    if (rc)
        return rc;
    if (id_out)
        *id_out = op.id;
    return op.deduped ? BITT_EXISTS : BITT_OK;
}

/* Checks store and topic, the common head of every queue call. */
static int check_topic(const bitt_store *store, const char *topic)
{
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    return bitt__check_name(topic, "topic");
}

/* One claim under the store's mutex: one topic's own path, or over several. */
static int claim_once(bitt_store *store, const char *const *topics, size_t count, size_t limit,
                      int64_t lease_ms, bitt_messages *list)
{
    bitt_time t;
    bitt__store_enter(store, &t);
    int rc = count == 1 ? store->ops->queue_claim(store->be, &t, topics[0], limit, lease_ms, list)
                        : store->ops->queue_claim_topics(store->be, &t, topics, count, limit,
                                                         lease_ms, list);
    bitt__store_leave(store);
    return rc;
}

/* Gives back, unseen, what a cancelled dequeue claimed. If a hand-back
 * fails (the server went away) that message waits out its lease. */
static void hand_back(bitt_store *store, bitt_messages *list)
{
    if (!store->ops->queue_snooze)
        return; /* every backend has it (ops version 5); none: they wait out the lease */
    for (size_t i = 0; i < list->count; i++) {
        const bitt_message *m = list->items[i];
        bitt_time t;
        bitt__store_enter(store, &t);
        store->ops->queue_snooze(store->be, &t, m->topic, m->id, m->token, 0);
        bitt__store_leave(store);
    }
    if (list->count)
        bitt__notify_all();
}

/* What a claim or the dead list hands out is in one state by definition. */
static void mark_state(bitt_messages *list, int state)
{
    for (size_t i = 0; i < list->count; i++)
        list->items[i]->state = state;
}

/* The topics of a dequeue: 1..BITT_DEQUEUE_TOPICS_MAX distinct names. */
static int check_topics(const bitt_store *store, const char *const *topics, size_t count)
{
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    if (!topics || !count)
        return bitt__fail(BITT_EINVAL, "dequeue needs at least one topic");
    if (count > BITT_DEQUEUE_TOPICS_MAX)
        return bitt__fail(BITT_ETOOLARGE, "dequeue over %zu topics is over the maximum of %d",
                          count, BITT_DEQUEUE_TOPICS_MAX);
    for (size_t i = 0; i < count; i++) {
        int rc = bitt__check_name(topics[i], "topic");
        if (rc)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(topics[i], topics[j]))
                return bitt__fail(BITT_EINVAL, "dequeue names topic \"%s\" twice", topics[i]);
    }
    if (!store->ops->queue_claim)
        return bitt__unsupported(store, "queues");
    if (count > 1 && !store->ops->queue_claim_topics)
        return bitt__unsupported(store, "dequeue over several topics");
    return BITT_OK;
}

int bitt_queue_dequeue_topics(bitt_store *store, const char *const *topics, size_t topic_count,
                              const bitt_dequeue_options *opts, bitt_cancel *cancel,
                              bitt_messages **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    if (opts)
        o = *opts;
    int rc = check_topics(store, topics, topic_count);
    if (rc)
        return rc;
    if (o.version != BITT_DEQUEUE_OPTIONS_VERSION)
        return bitt__fail(BITT_EINVAL, "unknown bitt_dequeue_options version %u (this library: %d)",
                          o.version, BITT_DEQUEUE_OPTIONS_VERSION);
    if (o.limit > BITT_DEQUEUE_MAX)
        return bitt__fail(BITT_ETOOLARGE, "dequeue limit %u is over the maximum of %d", o.limit,
                          BITT_DEQUEUE_MAX);
    rc = o.lease_ms ? bitt__check_duration(o.lease_ms, 1, "lease") : BITT_OK;
    if (!rc)
        rc = bitt__check_duration(o.wait_ms, 0, "dequeue wait");
    if (rc)
        return rc;
    size_t limit = o.limit ? o.limit : 1;
    int64_t lease_ms = o.lease_ms ? o.lease_ms : store->queue_lease_ms;

    bitt_messages *list = bitt__messages_new(limit);
    if (!list)
        return BITT_ENOMEM;
    int64_t deadline = bitt__monotonic_ms() + o.wait_ms;
    for (;;) {
        if (bitt__cancelled(cancel, "dequeue")) {
            rc = BITT_ECANCELED;
            break;
        }
        uint64_t seen = bitt__notify_generation();
        rc = claim_once(store, topics, topic_count, limit, lease_ms, list);
        if (!rc && list->count && bitt_cancel_fired(cancel)) {
            /* The token fired while the claim ran: the caller has gone. */
            hand_back(store, list);
            bitt__cancelled(cancel, "dequeue");
            rc = BITT_ECANCELED;
        }
        if (rc || list->count || !o.wait_ms)
            break;
        int64_t left = deadline - bitt__monotonic_ms();
        if (left <= 0)
            break;
        bitt__store_wait(store, seen, left);
    }
    if (rc) {
        bitt_messages_free(list);
        return rc;
    }
    mark_state(list, BITT_MSG_LEASED);
    *out = list;
    return BITT_OK;
}

int bitt_queue_dequeue_cancel(bitt_store *store, const char *topic,
                              const bitt_dequeue_options *opts, bitt_cancel *cancel,
                              bitt_messages **out)
{
    return bitt_queue_dequeue_topics(store, &topic, 1, opts, cancel, out);
}

int bitt_queue_dequeue(bitt_store *store, const char *topic, const bitt_dequeue_options *opts,
                       bitt_messages **out)
{
    return bitt_queue_dequeue_cancel(store, topic, opts, NULL, out);
}

static int check_delivery(const bitt_store *store, const char *topic, uint64_t id,
                          const char *token)
{
    int rc = check_topic(store, topic);
    if (rc)
        return rc;
    if (!id)
        return bitt__fail(BITT_ETOKEN, "message 0 does not exist, so holds no lease");
    if (!token || strlen(token) != BITT_TOKEN_LEN)
        return bitt__fail(BITT_ETOKEN, "ack token is missing or malformed");
    return BITT_OK;
}

int bitt_queue_ack(bitt_store *store, const char *topic, uint64_t id, const char *token)
{
    bitt__error_reset();
    int rc = check_delivery(store, topic, id, token);
    if (rc)
        return rc;
    if (!store->ops->queue_ack)
        return bitt__unsupported(store, "queues");
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->queue_ack(store->be, &t, topic, id, token);
    bitt__store_leave(store);
    return rc;
}

/* The whole call's arguments: anything wrong here fails it before a write. */
static int check_ack_many(const bitt_store *store, const char *topic, const uint64_t *ids,
                          const char *const *tokens, size_t count)
{
    int rc = check_topic(store, topic);
    if (rc)
        return rc;
    if (count > BITT_ACK_MANY_MAX)
        return bitt__fail(BITT_ETOOLARGE, "ack_many of %zu deliveries is over the maximum of %d",
                          count, BITT_ACK_MANY_MAX);
    if (count && (!ids || !tokens))
        return bitt__fail(BITT_EINVAL, "ack_many: ids or tokens is NULL with count %zu", count);
    for (size_t i = 0; i < count; i++) {
        /* A short token only fails its own item (it matches no delivery);
         * a NULL or overlong one is a caller's bug. */
        if (!tokens[i] || strnlen(tokens[i], BITT_TOKEN_LEN + 1) > BITT_TOKEN_LEN)
            return bitt__fail(BITT_EINVAL, "ack_many: token %zu is %s", i,
                              tokens[i] ? "longer than an ack token" : "NULL");
    }
    if (!store->ops->queue_ack_many)
        return bitt__unsupported(store, "queues");
    return BITT_OK;
}

int bitt_queue_ack_many(bitt_store *store, const char *topic, const uint64_t *ids,
                        const char *const *tokens, size_t count, int *statuses, size_t *acked_out)
{
    bitt__error_reset();
    if (acked_out)
        *acked_out = 0;
    int rc = check_ack_many(store, topic, ids, tokens, count);
    if (rc || !count)
        return rc;
    int *st = statuses ? statuses : bitt__malloc(count * sizeof *st);
    if (!st)
        return bitt__fail(BITT_ENOMEM, "ack_many: out of memory for %zu statuses", count);
    for (size_t i = 0; i < count; i++)
        st[i] = BITT_ETOKEN;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->queue_ack_many(store->be, &t, topic, ids, tokens, count, st);
    bitt__store_leave(store);
    size_t acked = 0;
    for (size_t i = 0; i < count; i++) {
        if (rc) /* nothing was acked */
            st[i] = rc;
        else
            acked += st[i] == BITT_OK;
    }
    if (st != statuses)
        free(st);
    if (rc)
        return rc;
    /* Stale items are answers in statuses, not an error of the call. */
    bitt__error_reset();
    if (acked_out)
        *acked_out = acked;
    return BITT_OK;
}

int bitt_queue_nack(bitt_store *store, const char *topic, uint64_t id, const char *token,
                    const char *error, int64_t delay_ms)
{
    bitt__error_reset();
    int rc = check_delivery(store, topic, id, token);
    if (!rc && delay_ms >= 0)
        rc = bitt__check_duration(delay_ms, 0, "nack delay");
    if (!rc && !store->ops->queue_nack)
        rc = bitt__unsupported(store, "queues");
    char *clean = NULL;
    if (!rc)
        rc = bitt__error_text(store, error, "nack error", &clean);
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->queue_nack(store->be, &t, topic, id, token, clean ? clean : error,
                                delay_ms < 0 ? -1 : delay_ms, &store->backoff);
    bitt__store_leave(store);
    free(clean);
    if (!rc)
        bitt__notify_all();
    return rc;
}

/* extend and snooze: a live delivery's due time moves to now + ms; at 0
 * it is claimable again at once, so the waits are woken. */
static int move_delivery(bitt_store *store, const char *topic, uint64_t id, const char *token,
                         int64_t ms, int snooze)
{
    bitt__error_reset();
    int rc = check_delivery(store, topic, id, token);
    if (rc)
        return rc;
    int (*op)(bitt_backend *, const bitt_time *, const char *, uint64_t, const char *, int64_t) =
        snooze ? store->ops->queue_snooze : store->ops->queue_extend;
    rc = bitt__check_duration(ms, 0, snooze ? "snooze delay" : "lease");
    if (!rc && !op)
        rc = bitt__unsupported(store, snooze ? "queue snooze" : "queues");
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = op(store->be, &t, topic, id, token, ms);
    bitt__store_leave(store);
    if (!rc && !ms)
        bitt__notify_all();
    return rc;
}

int bitt_queue_extend(bitt_store *store, const char *topic, uint64_t id, const char *token,
                      int64_t lease_ms)
{
    return move_delivery(store, topic, id, token, lease_ms, 0);
}

int bitt_queue_snooze(bitt_store *store, const char *topic, uint64_t id, const char *token,
                      int64_t delay_ms)
{
    return move_delivery(store, topic, id, token, delay_ms, 1);
}

int bitt_queue_dead_list(bitt_store *store, const char *topic, uint64_t after_id, uint32_t limit,
                         bitt_messages **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    int rc = check_topic(store, topic);
    if (!rc && limit > DEAD_LIST_MAX)
        rc = bitt__fail(BITT_ETOOLARGE, "dead list limit %u is over the maximum of %d", limit,
                        DEAD_LIST_MAX);
    if (!rc && !store->ops->queue_dead_list)
        rc = bitt__unsupported(store, "queues");
    if (rc)
        return rc;
    bitt_messages *list = bitt__messages_new(0);
    if (!list)
        return BITT_ENOMEM;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->queue_dead_list(store->be, &t, topic, after_id,
                                     limit ? limit : DEAD_LIST_DEFAULT, list);
    bitt__store_leave(store);
    if (rc) {
        bitt_messages_free(list);
        return rc;
    }
    mark_state(list, BITT_MSG_DEAD);
    *out = list;
    return BITT_OK;
}

typedef int (*dead_fn)(bitt_backend *, const bitt_time *, const char *, uint64_t, uint64_t *);

/* retry and delete of dead letters: the same checks, another storage step. */
static int dead_apply(bitt_store *store, const char *topic, uint64_t id, uint64_t *count_out,
                      int retry)
{
    bitt__error_reset();
    int rc = check_topic(store, topic);
    if (!rc && !store->ops->queue_dead_retry)
        rc = bitt__unsupported(store, "queues");
    if (rc)
        return rc;
    dead_fn fn = retry ? store->ops->queue_dead_retry : store->ops->queue_dead_delete;
    uint64_t count = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = fn(store->be, &t, topic, id, &count);
    bitt__store_leave(store);
    if (!rc && retry && count)
        bitt__notify_all();
    if (!rc && count_out)
        *count_out = count;
    return rc;
}

int bitt_queue_dead_retry(bitt_store *store, const char *topic, uint64_t id, uint64_t *count_out)
{
    return dead_apply(store, topic, id, count_out, 1);
}

int bitt_queue_dead_delete(bitt_store *store, const char *topic, uint64_t id, uint64_t *count_out)
{
    return dead_apply(store, topic, id, count_out, 0);
}

int bitt_queue_stats_get(bitt_store *store, const char *topic, bitt_queue_stats *out)
{
    bitt__error_reset();
    int rc = check_topic(store, topic);
    if (rc)
        return rc;
    if (!out || out->version < 1 || out->version > BITT_QUEUE_STATS_VERSION)
        return bitt__fail(BITT_EINVAL, "stats out must be a bitt_queue_stats with version 1 to %d",
                          BITT_QUEUE_STATS_VERSION);
    if (!store->ops->queue_stats)
        return bitt__unsupported(store, "queues");
    bitt_queue_stats stats = {.version = BITT_QUEUE_STATS_VERSION};
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->queue_stats(store->be, &t, topic, &stats);
    bitt__store_leave(store);
    /* a version-1 caller's struct ends before done */
    if (!rc)
        memcpy(out, &stats,
               out->version == 1 ? offsetof(bitt_queue_stats, done) : sizeof(bitt_queue_stats));
    return rc;
}
