/*
 * core/postgres/backend.c: the PostgreSQL backend's vtable, open and close.
 *
 * One connection per store handle, used under the store's mutex (libpq
 * connections are not shared between threads), plus one for LISTEN
 * (listen.c), opened by the first wait. Open connects at once, so a wrong
 * password or an unreachable server is an error of bitt_store_open.
 */
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

static void pg_close(bitt_backend *be)
{
    if (!be)
        return;
    bitt__pg_rollback(be);
    bitt__pg_drop(be);
    bitt__pg_listen_close(be);
    bitt__pg_free_params(be);
    free(be);
}

static int pg_open(bitt_url *url, const bitt_limits *limits, bitt_backend **out)
{
    *out = NULL;
    bitt_backend *be = bitt__calloc(1, sizeof *be);
    if (!be)
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory opening a store");
    bitt__pg_listen_init(be);
    int status = bitt__pg_read_url(url, limits, be);
    if (!status)
        status = bitt__pg_ensure(be);
    if (status) {
        pg_close(be);
        return status;
    }
    *out = be;
    return BITT_OK;
}

static int pg_migrate(bitt_backend *be)
{
    return bitt__pg_migrate(be);
}

const bitt_backend_ops bitt__postgres_backend = {
    .version = BITT_BACKEND_OPS_VERSION,
    .name = "postgres",
    .open = pg_open,
    .close = pg_close,
    .migrate = pg_migrate,
    .kv_get = bitt__pg_kv_get,
    .kv_get_many = bitt__pg_kv_get_many,
    .kv_list = bitt__pg_kv_list,
    .commit = bitt__pg_commit,
    .kv_purge = bitt__pg_kv_purge,
    .queue_claim = bitt__pg_queue_claim,
    .queue_ack = bitt__pg_queue_ack,
    .queue_nack = bitt__pg_queue_nack,
    .queue_extend = bitt__pg_queue_extend,
    .queue_dead_list = bitt__pg_queue_dead_list,
    .queue_dead_retry = bitt__pg_queue_dead_retry,
    .queue_dead_delete = bitt__pg_queue_dead_delete,
    .queue_stats = bitt__pg_queue_stats,
    .lease_acquire = bitt__pg_lease_acquire,
    .lease_renew = bitt__pg_lease_renew,
    .lease_release = bitt__pg_lease_release,
    .lease_get = bitt__pg_lease_get,
    .outbox_pending = bitt__pg_outbox_pending,
    .outbox_ack = bitt__pg_outbox_ack,
    .outbox_fail = bitt__pg_outbox_fail,
    .outbox_park = bitt__pg_outbox_park,
    .outbox_parked = bitt__pg_outbox_parked,
    .outbox_retry = bitt__pg_outbox_retry,
    .outbox_discard = bitt__pg_outbox_discard,
    .outbox_counts = bitt__pg_outbox_counts,
    .pubsub_publish = bitt__pg_pubsub_publish,
    .pubsub_head = bitt__pg_pubsub_head,
    .pubsub_fetch = bitt__pg_pubsub_fetch,
    .budget_take = bitt__pg_budget_take,
    .schedule_upsert = bitt__pg_schedule_upsert,
    .schedule_claim = bitt__pg_schedule_claim,
    .schedule_get = bitt__pg_schedule_get,
    .schedule_list = bitt__pg_schedule_list,
    .schedule_delete = bitt__pg_schedule_delete,
    .wait_remote = bitt__pg_wait_remote,

    .queue_ack_many = bitt__pg_queue_ack_many,
};
