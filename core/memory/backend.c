/*
 * core/memory/backend.c: the memory backend's vtable, open and close.
 *
 * A private in-process store: rows in an ordered map (ranges) and a hash
 * index (exact keys), and one versionstamp counter; the queue, leases,
 * outbox, publish/subscribe, budgets and schedules keep maps of their own
 * (one file each). The engine holds the store mutex around every call, so
 * nothing here locks.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

static int mem_open(bitt_url *url, const bitt_limits *limits, bitt_backend **out)
{
    /* the engine applies the size limits before every call; the queue
     * keeps the retentions */
    *out = NULL;
    /* No options of its own: the engine refuses whatever is left unused. */
    if (url->rest && url->rest[0])
        return bitt__fail(BITT_EURL, "store URL: memory: takes no path (write just memory:)");
    bitt_backend *be = bitt__calloc(1, sizeof *be);
    if (!be)
        return bitt__fail(BITT_ENOMEM, "out of memory opening a memory store");
    be->min_expiry = INT64_MAX;
    be->queue.done_retention_ms = limits->queue_done_retention_ms;
    be->queue.dead_retention_ms = limits->queue_dead_retention_ms;
    *out = be;
    return BITT_OK;
}

static void free_row(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    free(bitt__mem_row_of(node));
}

static void mem_close(bitt_backend *be)
{
    if (!be)
        return;
    bitt__omap_drain(&be->rows, free_row, NULL);
    free(be->buckets);
    bitt__mem_queue_free(be);
    bitt__mem_lease_free(be);
    bitt__mem_outbox_free(be);
    bitt__mem_pubsub_free(be);
    bitt__mem_budget_free(be);
    bitt__mem_schedule_free(be);
    free(be);
}

int bitt__mem_strdup(const char *s, char **out)
{
    *out = NULL;
    if (!s)
        return BITT_OK;
    size_t len = strlen(s);
    *out = bitt__malloc(len + 1);
    if (!*out)
        return bitt__fail(BITT_ENOMEM, "out of memory copying a string of %zu bytes", len);
    memcpy(*out, s, len + 1);
    return BITT_OK;
}

static int mem_migrate(bitt_backend *be)
{
    (void)be; /* no schema */
    return BITT_OK;
}

const bitt_backend_ops bitt__memory_backend = {
    .version = BITT_BACKEND_OPS_VERSION,
    .name = "memory",
    .open = mem_open,
    .close = mem_close,
    .migrate = mem_migrate,
    .kv_get = bitt__mem_kv_get,
    .kv_get_many = bitt__mem_kv_get_many,
    .kv_list = bitt__mem_kv_list,
    .commit = bitt__mem_commit,
    .kv_purge = bitt__mem_kv_purge,

    .queue_claim = bitt__mem_queue_claim,
    .queue_ack = bitt__mem_queue_ack,
    .queue_nack = bitt__mem_queue_nack,
    .queue_extend = bitt__mem_queue_extend,
    .queue_dead_list = bitt__mem_queue_dead_list,
    .queue_dead_retry = bitt__mem_queue_dead_retry,
    .queue_dead_delete = bitt__mem_queue_dead_delete,
    .queue_stats = bitt__mem_queue_stats,

    .lease_acquire = bitt__mem_lease_acquire,
    .lease_renew = bitt__mem_lease_renew,
    .lease_release = bitt__mem_lease_release,
    .lease_get = bitt__mem_lease_get,

    .outbox_pending = bitt__mem_outbox_pending,
    .outbox_ack = bitt__mem_outbox_ack,
    .outbox_fail = bitt__mem_outbox_fail,
    .outbox_park = bitt__mem_outbox_park,
    .outbox_parked = bitt__mem_outbox_parked,
    .outbox_retry = bitt__mem_outbox_retry,
    .outbox_discard = bitt__mem_outbox_discard,
    .outbox_counts = bitt__mem_outbox_counts,

    .pubsub_publish = bitt__mem_pubsub_publish,
    .pubsub_head = bitt__mem_pubsub_head,
    .pubsub_fetch = bitt__mem_pubsub_fetch,

    .budget_take = bitt__mem_budget_take,

    /* schedule_upsert and schedule_claim: replaced by schedule_set and
     * schedule_due (version 7) */
    .schedule_get = bitt__mem_schedule_get,
    .schedule_list = bitt__mem_schedule_list,
    .schedule_delete = bitt__mem_schedule_delete,

    .queue_ack_many = bitt__mem_queue_ack_many,
    .queue_snooze = bitt__mem_queue_snooze,

    .queue_claim_topics = bitt__mem_queue_claim_topics,
    .queue_get = bitt__mem_queue_get,

    .queue_purge = bitt__mem_queue_purge,
    .schedule_set = bitt__mem_schedule_set,
    .schedule_due = bitt__mem_schedule_due,
};
