/* The outbox: per-stream event logs committed with the state they belong to. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define OUTBOX_LIST_DEFAULT 100
#define OUTBOX_LIST_MAX 1000
#define OUTBOX_BATCH_MAX 1000

static int check_stream(const bitt_store *store, const char *stream)
{
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    int rc = bitt__check_name(stream, "outbox stream");
    if (!rc && !store->ops->outbox_pending)
        rc = bitt__unsupported(store, "the outbox");
    return rc;
}

static int check_limit(uint32_t limit, size_t *out)
{
    if (limit > OUTBOX_LIST_MAX)
        return bitt__fail(BITT_ETOOLARGE, "outbox list limit %u is over the maximum of %d", limit,
                          OUTBOX_LIST_MAX);
    *out = limit ? limit : OUTBOX_LIST_DEFAULT;
    return BITT_OK;
}

/* seqs/count for ack, retry and discard: count 0 means "all" only where
 * allowed, and then seqs must be NULL. */
static int check_seqs(const uint64_t *seqs, size_t count, int all_allowed)
{
    if (count > OUTBOX_BATCH_MAX)
        return bitt__fail(BITT_ETOOLARGE, "%zu sequence numbers are over the maximum of %d", count,
                          OUTBOX_BATCH_MAX);
    if (count && !seqs)
        return bitt__fail(BITT_EINVAL, "seqs is NULL with count %zu", count);
    if (!count && seqs && all_allowed)
        return bitt__fail(BITT_EINVAL, "count 0 means every event: pass seqs as NULL");
    return BITT_OK;
}

int bitt_outbox_append(bitt_store *store, const char *stream, const void *event, size_t event_len,
                       int kind, uint64_t *seq_out)
{
    bitt__error_reset();
    int rc = check_stream(store, stream);
    if (!rc)
        rc = bitt__check_value(store, kind, event, event_len);
    if (rc)
        return rc;
    bitt_op op = {.type = BITT_OP_OUTBOX_APPEND,
                  .name = stream,
                  .value = event,
                  .value_len = event_len,
                  .kind = kind};
    rc = bitt__run_commit(store, &op, 1, NULL);
    if (!rc && seq_out)
        *seq_out = op.id;
    return rc;
}

/* pending and parked: one listing shape; reason < 0 asks for pending. */
static int list_events(bitt_store *store, const char *stream, int reason, uint32_t limit,
                       bitt_messages **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    size_t n = 0;
    int rc = check_stream(store, stream);
    if (!rc)
        rc = check_limit(limit, &n);
    if (!rc && reason > 0 && reason != BITT_PARK_POISON && reason != BITT_PARK_INVALID)
        rc = bitt__fail(BITT_EINVAL,
                        "park reason %d is not 0, BITT_PARK_POISON or "
                        "BITT_PARK_INVALID",
                        reason);
    if (rc)
        return rc;
    bitt_messages *list = bitt__messages_new(0);
    if (!list)
        return BITT_ENOMEM;
    bitt_time t;
    bitt__store_enter(store, &t);
    if (reason < 0)
        rc = store->ops->outbox_pending(store->be, &t, stream, n, list);
    else
        rc = store->ops->outbox_parked(store->be, &t, stream, reason, n, list);
    bitt__store_leave(store);
    if (rc) {
        bitt_messages_free(list);
        return rc;
    }
    *out = list;
    return BITT_OK;
}

int bitt_outbox_pending(bitt_store *store, const char *stream, uint32_t limit, bitt_messages **out)
{
    return list_events(store, stream, -1, limit, out);
}

int bitt_outbox_parked(bitt_store *store, const char *stream, int reason, uint32_t limit,
                       bitt_messages **out)
{
    if (reason < 0) {
        bitt__error_reset();
        if (out)
            *out = NULL;
        return bitt__fail(BITT_EINVAL,
                          "park reason %d is not 0, BITT_PARK_POISON or "
                          "BITT_PARK_INVALID",
                          reason);
    }
    return list_events(store, stream, reason, limit, out);
}

int bitt_outbox_ack(bitt_store *store, const char *stream, const uint64_t *seqs, size_t count,
                    uint64_t *acked_out)
{
    bitt__error_reset();
    int rc = check_stream(store, stream);
    if (!rc)
        rc = check_seqs(seqs, count, 0);
    if (rc)
        return rc;
    uint64_t acked = 0;
    if (count) {
        bitt_time t;
        bitt__store_enter(store, &t);
        rc = store->ops->outbox_ack(store->be, &t, stream, seqs, count, &acked);
        bitt__store_leave(store);
    }
    if (!rc && acked_out)
        *acked_out = acked;
    return rc;
}

int bitt_outbox_fail(bitt_store *store, const char *stream, uint64_t seq, const char *error,
                     int64_t next_attempt_at)
{
    bitt__error_reset();
    int rc = check_stream(store, stream);
    if (!rc && next_attempt_at < 0)
        rc = bitt__fail(BITT_EINVAL, "next attempt time must be >= 0 (0 = none)");
    char *clean = NULL;
    if (!rc)
        rc = bitt__error_text(store, error, "error text", &clean);
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc =
        store->ops->outbox_fail(store->be, &t, stream, seq, clean ? clean : error, next_attempt_at);
    bitt__store_leave(store);
    free(clean);
    return rc;
}

int bitt_outbox_park(bitt_store *store, const char *stream, uint64_t seq, int reason,
                     const char *error)
{
    bitt__error_reset();
    int rc = check_stream(store, stream);
    if (!rc && reason != BITT_PARK_POISON && reason != BITT_PARK_INVALID)
        rc = bitt__fail(BITT_EINVAL,
                        "park reason %d is not BITT_PARK_POISON or "
                        "BITT_PARK_INVALID",
                        reason);
    char *clean = NULL;
    if (!rc)
        rc = bitt__error_text(store, error, "error text", &clean);
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->outbox_park(store->be, &t, stream, seq, reason, clean ? clean : error);
    bitt__store_leave(store);
    free(clean);
    return rc;
}

typedef int (*move_fn)(bitt_backend *, const bitt_time *, const char *, const uint64_t *, size_t,
                       uint64_t *);

/* retry and discard: the same checks, a different storage step. */
static int move_parked(bitt_store *store, const char *stream, const uint64_t *seqs, size_t count,
                       uint64_t *moved_out, int discard)
{
    bitt__error_reset();
    int rc = check_stream(store, stream);
    if (!rc)
        rc = check_seqs(seqs, count, 1);
    if (rc)
        return rc;
    move_fn fn = discard ? store->ops->outbox_discard : store->ops->outbox_retry;
    uint64_t moved = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = fn(store->be, &t, stream, seqs, count, &moved);
    bitt__store_leave(store);
    if (!rc && moved_out)
        *moved_out = moved;
    return rc;
}

int bitt_outbox_retry(bitt_store *store, const char *stream, const uint64_t *seqs, size_t count,
                      uint64_t *moved_out)
{
    return move_parked(store, stream, seqs, count, moved_out, 0);
}

int bitt_outbox_discard(bitt_store *store, const char *stream, const uint64_t *seqs, size_t count,
                        uint64_t *deleted_out)
{
    return move_parked(store, stream, seqs, count, deleted_out, 1);
}

int bitt_outbox_counts(bitt_store *store, const char *stream, uint64_t *pending_out,
                       uint64_t *parked_out)
{
    bitt__error_reset();
    int rc = check_stream(store, stream);
    if (rc)
        return rc;
    uint64_t pending = 0, parked = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->outbox_counts(store->be, &t, stream, &pending, &parked);
    bitt__store_leave(store);
    if (!rc) {
        if (pending_out)
            *pending_out = pending;
        if (parked_out)
            *parked_out = parked;
    }
    return rc;
}
