/*
 * core/postgres/backend.c: the PostgreSQL backend's vtable, open and close.
 *
 * Every entry runs its module call on a connection of the store's pool
 * (pool.c) taken for the call, so the backend is `concurrent`; waits
 * (wait_remote) use the store's LISTEN connection (listen.c), opened by
 * the first wait. Open connects at once, so a wrong password or an
 * unreachable server is an error of bitt_store_open.
 */
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

static void pg_close(bitt_backend *be)
{
    if (!be)
        return;
    bitt__pg_pool_free(be);
    bitt__pg_listen_close(be);
    bitt__pg_free_params(be);
    free(be);
}

static int pg_open(bitt_url *url, const bitt_limits *limits, bitt_backend **out)
{
    /* the engine applies the size limits (every one fits: pg_internal.h);
     * the queue keeps the retentions */
    *out = NULL;
    bitt_backend *be = bitt__calloc(1, sizeof *be);
    if (!be)
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory opening a store");
    be->done_retention_ms = limits->queue_done_retention_ms;
    be->dead_retention_ms = limits->queue_dead_retention_ms;
    bitt__pg_listen_init(be);
    int status = bitt__pg_read_url(url, be);
    /* The whole URL is checked before the first connection: a misspelt
     * option is BITT_EURL, never hidden behind a connection failure. */
    if (!status)
        status = bitt__url_check_all_used(url);
    if (!status)
        status = bitt__pg_pool_init(be);
    if (!status) {
        bitt_backend *s = bitt__pg_pool_take(be);
        status = s ? bitt__pg_ensure(s) : bitt_error_last_code();
        if (s)
            bitt__pg_pool_give(be, s);
    }
    if (status) {
        pg_close(be);
        return status;
    }
    *out = be;
    return BITT_OK;
}

/* pooled_<name>: bitt__pg_<name> on a slot (s) of the store's pool. */
#define POOLED(name, params, args)                                                                 \
    static int pooled_##name params                                                                \
    {                                                                                              \
        bitt_backend *s = bitt__pg_pool_take(be);                                                  \
        if (!s)                                                                                    \
            return bitt_error_last_code();                                                         \
        int status = bitt__pg_##name args;                                                         \
        bitt__pg_pool_give(be, s);                                                                 \
        return status;                                                                             \
    }

POOLED(migrate, (bitt_backend * be), (s))
POOLED(kv_get,
       (bitt_backend * be, const bitt_time *t, const uint8_t *key, size_t key_len,
        bitt_entry **out),
       (s, t, key, key_len, out))
POOLED(kv_get_many,
       (bitt_backend * be, const bitt_time *t, const uint8_t *const *keys, const size_t *key_lens,
        size_t count, bitt_entries *out),
       (s, t, keys, key_lens, count, out))
POOLED(kv_list, (bitt_backend * be, const bitt_time *t, const bitt_range *range, bitt_entries *out),
       (s, t, range, out))
POOLED(commit, (bitt_backend * be, bitt_commit *c), (s, c))

/* Lone sets of threads that meet share a transaction (set_group.c). */
static int grouped_commit(bitt_backend *be, bitt_commit *c)
{
    return bitt__pg_lone_set(c) ? bitt__pg_set_grouped(be, c) : pooled_commit(be, c);
}
POOLED(kv_purge, (bitt_backend * be, const bitt_time *t, uint64_t *removed), (s, t, removed))
POOLED(queue_claim,
       (bitt_backend * be, const bitt_time *t, const char *topic, size_t limit, int64_t lease_ms,
        bitt_messages *out),
       (s, t, topic, limit, lease_ms, out))
POOLED(queue_ack,
       (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t id, const char *token),
       (s, t, topic, id, token))
POOLED(queue_nack,
       (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t id, const char *token,
        const char *error, int64_t delay_ms, const bitt_backoff *backoff),
       (s, t, topic, id, token, error, delay_ms, backoff))
POOLED(queue_extend,
       (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t id, const char *token,
        int64_t lease_ms),
       (s, t, topic, id, token, lease_ms))
POOLED(queue_snooze,
       (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t id, const char *token,
        int64_t delay_ms),
       (s, t, topic, id, token, delay_ms))
POOLED(queue_dead_list,
       (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t after_id, size_t limit,
        bitt_messages *out),
       (s, t, topic, after_id, limit, out))
POOLED(queue_dead_retry,
       (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t id, uint64_t *count),
       (s, t, topic, id, count))
POOLED(queue_dead_delete,
       (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t id, uint64_t *count),
       (s, t, topic, id, count))
POOLED(queue_stats,
       (bitt_backend * be, const bitt_time *t, const char *topic, bitt_queue_stats *out),
       (s, t, topic, out))
POOLED(lease_acquire,
       (bitt_backend * be, const bitt_time *t, const char *name, const char *owner, int64_t ttl_ms,
        uint64_t *epoch, int64_t *expires_at),
       (s, t, name, owner, ttl_ms, epoch, expires_at))
POOLED(lease_renew,
       (bitt_backend * be, const bitt_time *t, const char *name, const char *owner, uint64_t epoch,
        int64_t ttl_ms, int64_t *expires_at),
       (s, t, name, owner, epoch, ttl_ms, expires_at))
POOLED(lease_release,
       (bitt_backend * be, const bitt_time *t, const char *name, const char *owner, uint64_t epoch),
       (s, t, name, owner, epoch))
POOLED(lease_get,
       (bitt_backend * be, const bitt_time *t, const char *name, bitt_buf *owner, uint64_t *epoch,
        int64_t *expires_at),
       (s, t, name, owner, epoch, expires_at))
POOLED(outbox_pending,
       (bitt_backend * be, const bitt_time *t, const char *stream, size_t limit,
        bitt_messages *out),
       (s, t, stream, limit, out))
POOLED(outbox_ack,
       (bitt_backend * be, const bitt_time *t, const char *stream, const uint64_t *seqs,
        size_t count, uint64_t *acked),
       (s, t, stream, seqs, count, acked))
POOLED(outbox_fail,
       (bitt_backend * be, const bitt_time *t, const char *stream, uint64_t seq, const char *error,
        int64_t next_attempt_at),
       (s, t, stream, seq, error, next_attempt_at))
POOLED(outbox_park,
       (bitt_backend * be, const bitt_time *t, const char *stream, uint64_t seq, int reason,
        const char *error),
       (s, t, stream, seq, reason, error))
POOLED(outbox_parked,
       (bitt_backend * be, const bitt_time *t, const char *stream, int reason, size_t limit,
        bitt_messages *out),
       (s, t, stream, reason, limit, out))
POOLED(outbox_retry,
       (bitt_backend * be, const bitt_time *t, const char *stream, const uint64_t *seqs,
        size_t count, uint64_t *moved),
       (s, t, stream, seqs, count, moved))
POOLED(outbox_discard,
       (bitt_backend * be, const bitt_time *t, const char *stream, const uint64_t *seqs,
        size_t count, uint64_t *deleted),
       (s, t, stream, seqs, count, deleted))
POOLED(outbox_counts,
       (bitt_backend * be, const bitt_time *t, const char *stream, uint64_t *pending,
        uint64_t *parked),
       (s, t, stream, pending, parked))
POOLED(pubsub_publish,
       (bitt_backend * be, const bitt_time *t, const char *channel, const uint8_t *data, size_t len,
        int64_t retention_ms),
       (s, t, channel, data, len, retention_ms))
POOLED(pubsub_head, (bitt_backend * be, const bitt_time *t, uint64_t *last_id), (s, t, last_id))
POOLED(pubsub_fetch,
       (bitt_backend * be, const bitt_time *t, const char *channel, uint64_t after_id, size_t limit,
        bitt_messages *out),
       (s, t, channel, after_id, limit, out))
POOLED(budget_take,
       (bitt_backend * be, const bitt_time *t, const char *name, const bitt_budget_params *p,
        int64_t n, int64_t *wait_ms),
       (s, t, name, p, n, wait_ms))
POOLED(schedule_set,
       (bitt_backend * be, const bitt_time *t, const bitt_schedule_def *def, int64_t first_run_at),
       (s, t, def, first_run_at))
POOLED(schedule_due,
       (bitt_backend * be, const bitt_time *t, const char *prefix, bitt_schedule **out),
       (s, t, prefix, out))
POOLED(schedule_get, (bitt_backend * be, const bitt_time *t, const char *key, bitt_schedule **out),
       (s, t, key, out))
POOLED(schedule_list, (bitt_backend * be, const bitt_time *t, bitt_schedule_array *out),
       (s, t, out))
POOLED(schedule_delete, (bitt_backend * be, const bitt_time *t, const char *key), (s, t, key))
POOLED(queue_ack_many,
       (bitt_backend * be, const bitt_time *t, const char *topic, const uint64_t *ids,
        const char *const *tokens, size_t count, int *statuses),
       (s, t, topic, ids, tokens, count, statuses))
POOLED(queue_claim_topics,
       (bitt_backend * be, const bitt_time *t, const char *const *topics, size_t count,
        size_t limit, int64_t lease_ms, bitt_messages *out),
       (s, t, topics, count, limit, lease_ms, out))
POOLED(queue_get,
       (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t id, bitt_message **out),
       (s, t, topic, id, out))
POOLED(queue_purge, (bitt_backend * be, const bitt_time *t, const char *topic, uint64_t *removed),
       (s, t, topic, removed))

const bitt_backend_ops bitt__postgres_backend = {
    .version = BITT_BACKEND_OPS_VERSION,
    .name = "postgres",
    .open = pg_open,
    .close = pg_close,
    .migrate = pooled_migrate,
    .kv_get = pooled_kv_get,
    .kv_get_many = pooled_kv_get_many,
    .kv_list = pooled_kv_list,
    .commit = grouped_commit,
    .kv_purge = pooled_kv_purge,
    .queue_claim = pooled_queue_claim,
    .queue_ack = pooled_queue_ack,
    .queue_nack = pooled_queue_nack,
    .queue_extend = pooled_queue_extend,
    .queue_dead_list = pooled_queue_dead_list,
    .queue_dead_retry = pooled_queue_dead_retry,
    .queue_dead_delete = pooled_queue_dead_delete,
    .queue_stats = pooled_queue_stats,
    .lease_acquire = pooled_lease_acquire,
    .lease_renew = pooled_lease_renew,
    .lease_release = pooled_lease_release,
    .lease_get = pooled_lease_get,
    .outbox_pending = pooled_outbox_pending,
    .outbox_ack = pooled_outbox_ack,
    .outbox_fail = pooled_outbox_fail,
    .outbox_park = pooled_outbox_park,
    .outbox_parked = pooled_outbox_parked,
    .outbox_retry = pooled_outbox_retry,
    .outbox_discard = pooled_outbox_discard,
    .outbox_counts = pooled_outbox_counts,
    .pubsub_publish = pooled_pubsub_publish,
    .pubsub_head = pooled_pubsub_head,
    .pubsub_fetch = pooled_pubsub_fetch,
    .budget_take = pooled_budget_take,
    /* schedule_upsert and schedule_claim: replaced by schedule_set and
     * schedule_due (version 7) */
    .schedule_get = pooled_schedule_get,
    .schedule_list = pooled_schedule_list,
    .schedule_delete = pooled_schedule_delete,
    .wait_remote = bitt__pg_wait_remote,

    .queue_ack_many = pooled_queue_ack_many,
    .queue_snooze = pooled_queue_snooze,
    .concurrent = 1,
    .queue_claim_topics = pooled_queue_claim_topics,
    .queue_get = pooled_queue_get,

    .queue_purge = pooled_queue_purge,
    .schedule_set = pooled_schedule_set,
    .schedule_due = pooled_schedule_due,
};
