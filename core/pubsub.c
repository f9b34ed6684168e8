/*
 * Publish/subscribe over the backend's message log: a subscription
 * remembers the last id it has seen and pulls what follows, so the same
 * logic serves every backend, in-process and across processes.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FETCH_BATCH 64

struct bitt_sub {
    bitt_store *store;
    char *channel;
    uint64_t last_id;
    bitt_messages *buffer; /* fetched, not yet handed out */
    size_t next;
};

static int check_channel(const bitt_store *store, const char *channel)
{
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    int rc = bitt__check_name(channel, "channel");
    if (!rc && !store->ops->pubsub_publish)
        rc = bitt__unsupported(store, "publish/subscribe");
    return rc;
}

int bitt_pubsub_publish(bitt_store *store, const char *channel, const void *data, size_t len)
{
    bitt__error_reset();
    int rc = check_channel(store, channel);
    if (!rc)
        rc = bitt__check_value(store, BITT_KIND_BYTES, data, len);
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->pubsub_publish(store->be, &t, channel, data, len, store->pubsub_retention_ms);
    bitt__store_leave(store);
    if (!rc)
        bitt__notify_all();
    return rc;
}

int bitt_pubsub_subscribe(bitt_store *store, const char *channel, bitt_sub **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    int rc = check_channel(store, channel);
    if (rc)
        return rc;
    bitt_sub *sub = bitt__calloc(1, sizeof *sub);
    size_t n = strlen(channel) + 1;
    char *name = bitt__malloc(n);
    if (!sub || !name) {
        free(sub);
        free(name);
        return bitt__fail(BITT_ENOMEM, "out of memory for a subscription");
    }
    memcpy(name, channel, n);
    sub->store = store;
    sub->channel = name;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->pubsub_head(store->be, &t, &sub->last_id);
    bitt__store_leave(store);
    if (rc) {
        bitt_pubsub_close(sub);
        return rc;
    }
    *out = sub;
    return BITT_OK;
}

/* Hands out the next buffered message, if any. */
static bitt_message *take_buffered(bitt_sub *sub)
{
    if (!sub->buffer || sub->next == sub->buffer->count)
        return NULL;
    bitt_message *m = sub->buffer->items[sub->next];
    sub->buffer->items[sub->next++] = NULL;
    return m;
}

static int fetch(bitt_sub *sub)
{
    bitt_messages_free(sub->buffer);
    sub->next = 0;
    sub->buffer = bitt__messages_new(FETCH_BATCH);
    if (!sub->buffer)
        return BITT_ENOMEM;
    bitt_store *store = sub->store;
    bitt_time t;
    bitt__store_enter(store, &t);
    int rc = store->ops->pubsub_fetch(store->be, &t, sub->channel, sub->last_id, FETCH_BATCH,
                                      sub->buffer);
    bitt__store_leave(store);
    if (rc || !sub->buffer->count)
        return rc;
    sub->last_id = sub->buffer->items[sub->buffer->count - 1]->id;
    /* Retention is a rule, not only a clean-up: a message older than it is
     * never delivered, whether or not a publish has pruned it yet. */
    while (sub->next < sub->buffer->count &&
           bitt__time_add(sub->buffer->items[sub->next]->created_at, store->pubsub_retention_ms) <=
               t.now) {
        bitt_message_free(sub->buffer->items[sub->next]);
        sub->buffer->items[sub->next++] = NULL;
    }
    return BITT_OK;
}

int bitt_pubsub_next(bitt_sub *sub, int64_t timeout_ms, bitt_message **out)
{
    return bitt_pubsub_next_cancel(sub, timeout_ms, NULL, out);
}

int bitt_pubsub_next_cancel(bitt_sub *sub, int64_t timeout_ms, bitt_cancel *cancel,
                            bitt_message **out)
{
    bitt__error_reset();
    if (!sub || !out)
        return bitt__fail(BITT_EINVAL, "sub and out must not be NULL");
    *out = NULL;
    int rc = bitt__check_duration(timeout_ms, 0, "subscription timeout");
    if (rc)
        return rc;
    int64_t deadline = bitt__monotonic_ms() + timeout_ms;
    for (;;) {
        if (bitt__cancelled(cancel, "subscription wait"))
            return BITT_ECANCELED;
        if ((*out = take_buffered(sub)))
            return BITT_OK;
        uint64_t seen = bitt__notify_generation();
        rc = fetch(sub);
        if (rc)
            return rc;
        if ((*out = take_buffered(sub)))
            return BITT_OK;
        int64_t left = deadline - bitt__monotonic_ms();
        if (left <= 0)
            return BITT_NOTFOUND;
        bitt__store_wait(sub->store, seen, left);
    }
}

void bitt_pubsub_close(bitt_sub *sub)
{
    if (!sub)
        return;
    bitt_messages_free(sub->buffer);
    free(sub->channel);
    free(sub);
}
