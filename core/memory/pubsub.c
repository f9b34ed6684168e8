/*
 * core/memory/pubsub.c: the publish/subscribe log of the memory backend.
 *
 * A message is kept while now < its publish time + retention, like a KV
 * TTL: publish and fetch first delete the messages past that. Every
 * message is in two maps: the store-wide log by (expires_at, id), whose
 * front publish trims, and its channel's map by id, which fetch reads. A
 * channel exists while it holds messages. Ids come from a store-wide
 * counter, from 1.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

typedef struct channel {
    bitt_omap_node node; /* in be->channels, key = name */
    bitt_omap messages;  /* pub by id */
    char name[];
} channel;

typedef struct pub {
    bitt_omap_node by_time; /* in be->pub_log, key = keys (expires_at, id) */
    bitt_omap_node by_id;   /* in its channel, key = keys + 8 (id) */
    channel *channel;
    uint64_t id;
    int64_t created_at;
    int64_t expires_at; /* created_at + retention, saturating */
    size_t len;
    uint8_t keys[16];
    uint8_t data[];
} pub;

static channel *channel_find(const bitt_backend *be, const char *name)
{
    bitt_omap_node *n = bitt__omap_find(&be->channels, (const uint8_t *)name, strlen(name));
    return n ? BITT_MEM_OF(n, channel, node) : NULL;
}

static void pub_drop(bitt_backend *be, pub *p)
{
    channel *ch = p->channel;
    bitt__omap_remove(&be->pub_log, &p->by_time);
    bitt__omap_remove(&ch->messages, &p->by_id);
    free(p);
    if (!ch->messages.count) {
        bitt__omap_remove(&be->channels, &ch->node);
        free(ch);
    }
}

/* Deletes every message whose retention ran out: the front of the log. */
static void prune(bitt_backend *be, int64_t now)
{
    for (bitt_omap_node *n; (n = bitt__omap_first(&be->pub_log));) {
        pub *old = BITT_MEM_OF(n, pub, by_time);
        if (old->expires_at > now)
            break;
        pub_drop(be, old);
    }
}

int bitt__mem_pubsub_publish(bitt_backend *be, const bitt_time *t, const char *name,
                             const uint8_t *data, size_t len, int64_t retention_ms)
{
    const int64_t now = t->now;
    pub *p = bitt__malloc(sizeof *p + len);
    if (!p)
        return bitt__fail(BITT_ENOMEM, "out of memory publishing %zu bytes", len);
    channel *ch = channel_find(be, name);
    if (!ch) {
        size_t name_len = strlen(name);
        ch = bitt__calloc(1, sizeof *ch + name_len + 1);
        if (!ch) {
            free(p);
            return bitt__fail(BITT_ENOMEM, "out of memory for channel '%s'", name);
        }
        memcpy(ch->name, name, name_len + 1);
        ch->node.key = (const uint8_t *)ch->name;
        ch->node.key_len = (uint32_t)name_len;
        bitt__omap_insert(&be->channels, &ch->node);
    }
    if (len)
        memcpy(p->data, data, len);
    p->len = len;
    p->channel = ch;
    p->id = ++be->pub_last_id;
    p->created_at = now;
    p->expires_at = bitt__time_add(now, retention_ms);
    bitt__mem_put_i64(p->keys, p->expires_at);
    bitt__mem_put_u64(p->keys + 8, p->id);
    p->by_time.key = p->keys;
    p->by_time.key_len = 16;
    p->by_id.key = p->keys + 8;
    p->by_id.key_len = 8;
    bitt__omap_insert(&be->pub_log, &p->by_time);
    bitt__omap_insert(&ch->messages, &p->by_id);

    prune(be, now);
    return BITT_OK;
}

int bitt__mem_pubsub_head(bitt_backend *be, const bitt_time *t, uint64_t *last_id)
{
    (void)t;
    *last_id = be->pub_last_id;
    return BITT_OK;
}

int bitt__mem_pubsub_fetch(bitt_backend *be, const bitt_time *t, const char *name,
                           uint64_t after_id, size_t limit, bitt_messages *out)
{
    prune(be, t->now); /* so a read never walks expired messages */
    const channel *ch = channel_find(be, name);
    if (!ch)
        return BITT_OK;
    uint8_t key[8];
    bitt__mem_put_u64(key, after_id);
    const size_t base = out->count;
    size_t taken = 0;
    for (bitt_omap_node *n = bitt__omap_higher(&ch->messages, key, 8); n && taken < limit;
         n = bitt__omap_next(n)) {
        const pub *p = BITT_MEM_OF(n, pub, by_id);
        bitt_message f = {
            .id = p->id,
            .topic = (char *)ch->name,
            .payload = (uint8_t *)p->data,
            .payload_len = p->len,
            .kind = BITT_KIND_BYTES,
            .created_at = p->created_at,
        };
        bitt_message *copy = bitt__message_new(&f);
        int rc = copy ? bitt__messages_push(out, copy)
                      : bitt__fail(BITT_ENOMEM, "out of memory copying a published message");
        if (rc) {
            while (out->count > base)
                bitt_message_free(out->items[--out->count]);
            return rc;
        }
        taken++;
    }
    return BITT_OK;
}

static void free_pub(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    free(BITT_MEM_OF(node, pub, by_time));
}

static void free_channel(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    free(BITT_MEM_OF(node, channel, node));
}

void bitt__mem_pubsub_free(bitt_backend *be)
{
    /* The log holds every message once; the channel maps only link them. */
    bitt__omap_drain(&be->pub_log, free_pub, NULL);
    bitt__omap_drain(&be->channels, free_channel, NULL);
}
