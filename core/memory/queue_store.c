/*
 * core/memory/queue_store.c: how the memory backend keeps queue messages.
 *
 * A message is one allocation (payload and dedup key inside) and sits in:
 *   - the store-wide id hash (ack, nack, extend and dead ops find it by id);
 *   - one of its topic's maps, through its one `order` node:
 *       ready  by (priority descending, due_at, id): pending, and
 *              processing with attempts left;
 *       final  by (due_at, id): processing on the last attempt;
 *       dead   by id;
 *       done   by (done_at, id): acked, kept for the done retention;
 *   - its topic's `dedup` map while live and holding a dedup key, or, with
 *     dead retention, its `aging` map by (failed_at, id) while dead, through
 *     the one aux node.
 * Every queue call first moves the front of `final` whose lease ended to
 * `dead` (the sweep), so after it nothing in `final` is claimable and a
 * claim walks `ready` alone, in claim order: within one priority the
 * claimable messages come first, so a claim jumps to the next priority at
 * the first one not yet due (queue.c).
 * The maps never allocate, so every state move here cannot fail.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

#define MIN_BUCKETS 64

char bitt__mem_lease_expired[] = BITT_LEASE_EXPIRED_ERROR;

void bitt__mem_error_free(char *error)
{
    if (error != bitt__mem_lease_expired)
        free(error);
}

/* ---- topics ------------------------------------------------------------- */

bitt_mem_topic *bitt__mem_topic_find(const bitt_backend *be, const char *name)
{
    bitt_omap_node *n = bitt__omap_find(&be->queue.topics, (const uint8_t *)name, strlen(name));
    return n ? BITT_MEM_OF(n, bitt_mem_topic, node) : NULL;
}

bitt_mem_topic *bitt__mem_topic_new(const char *name)
{
    size_t len = strlen(name);
    bitt_mem_topic *t = bitt__calloc(1, sizeof *t + len + 1);
    if (!t) {
        bitt__fail(BITT_ENOMEM, "out of memory for queue topic '%s'", name);
        return NULL;
    }
    memcpy(t->name, name, len + 1);
    t->node.key = (const uint8_t *)t->name;
    t->node.key_len = (uint32_t)len;
    return t;
}

void bitt__mem_topic_link(bitt_backend *be, bitt_mem_topic *topic)
{
    bitt__omap_insert(&be->queue.topics, &topic->node);
}

void bitt__mem_topic_release(bitt_backend *be, bitt_mem_topic *topic)
{
    if (topic->ready.count || topic->final.count || topic->dead.count || topic->done.count)
        return;
    bitt__omap_remove(&be->queue.topics, &topic->node);
    free(topic);
}

/* ---- messages and the id hash ---------------------------------------------- */

/* The order keys of m (see okey) from its priority, due_at and id. */
static void set_order_key(bitt_mem_msg *m)
{
    bitt__mem_put_u32(m->okey, bitt__mem_priority_band(m->priority));
    bitt__mem_put_i64(m->okey + 4, m->due_at);
    bitt__mem_put_u64(m->okey + 12, m->id);
}

/* The map a message's order node is in, and the part of okey it is keyed
 * by there. */
static bitt_omap *home(const bitt_mem_msg *m)
{
    if (m->state == BITT_MEM_DEAD)
        return &m->topic->dead;
    if (m->state == BITT_MEM_DONE)
        return &m->topic->done;
    if (m->state == BITT_MEM_PROCESSING && m->attempts >= m->max_attempts)
        return &m->topic->final;
    return &m->topic->ready;
}

static void insert_home(bitt_mem_msg *m)
{
    bitt_omap *map = home(m);
    size_t skip = map == &m->topic->ready ? 0 : map == &m->topic->dead ? 12 : 4;
    m->order.key = m->okey + skip;
    m->order.key_len = (uint32_t)(BITT_MEM_OKEY_LEN - skip);
    bitt__omap_insert(map, &m->order);
}

bitt_mem_msg *bitt__mem_msg_new(uint64_t id, const uint8_t *payload, size_t len, int kind,
                                const uint8_t *dedup, size_t dedup_len, uint32_t max_attempts,
                                int32_t priority, int64_t created_at, int64_t due_at, int ages)
{
    if (len > UINT32_MAX || dedup_len > UINT32_MAX) {
        bitt__fail(BITT_ETOOLARGE, "memory backend: a message over 4 GiB");
        return NULL;
    }
    size_t node = dedup || ages ? sizeof(bitt_omap_node) : 0;
    bitt_mem_msg *m = bitt__malloc(sizeof *m + node + len + dedup_len);
    if (!m) {
        bitt__fail(BITT_ENOMEM, "out of memory for a message of %zu bytes", len);
        return NULL;
    }
    memset(m, 0, sizeof *m);
    m->has_dedup = dedup != NULL;
    m->ages = ages != 0;
    uint8_t *tail = bitt__mem_msg_tail(m);
    if (len)
        memcpy(tail, payload, len);
    if (dedup_len)
        memcpy(tail + len, dedup, dedup_len);
    m->id = id;
    m->created_at = created_at;
    m->due_at = due_at;
    m->max_attempts = max_attempts;
    m->payload_len = (uint32_t)len;
    m->dedup_len = (uint32_t)dedup_len;
    m->kind = kind;
    m->priority = priority;
    m->state = BITT_MEM_PENDING;
    set_order_key(m);
    if (m->has_dedup) {
        bitt_omap_node *d = bitt__mem_msg_dedup_node(m);
        memset(d, 0, sizeof *d);
        d->key = tail + len;
        d->key_len = (uint32_t)dedup_len;
    }
    return m;
}

static inline size_t bucket_of(const bitt_mem_queue *q, uint64_t id)
{
    /* Ids are handed out in sequence, so their low bits spread evenly. */
    return (size_t)(id ^ (id >> 32)) & (q->bucket_count - 1);
}

int bitt__mem_msg_reserve(bitt_backend *be, size_t extra)
{
    bitt_mem_queue *q = &be->queue;
    size_t need = q->count + extra;
    if (need <= q->bucket_count)
        return BITT_OK;
    size_t count = q->bucket_count ? q->bucket_count : MIN_BUCKETS;
    while (count < need) {
        if (count > SIZE_MAX / 2 / sizeof *q->buckets)
            return bitt__fail(BITT_ENOMEM, "memory backend: too many messages to index");
        count *= 2;
    }
    bitt_mem_msg **fresh = bitt__calloc(count, sizeof *fresh);
    if (!fresh)
        return bitt__fail(BITT_ENOMEM, "out of memory growing the message index to %zu", count);
    bitt_mem_msg **old = q->buckets;
    size_t old_count = q->bucket_count;
    q->buckets = fresh;
    q->bucket_count = count;
    for (size_t i = 0; i < old_count; i++) {
        for (bitt_mem_msg *m = old[i], *next; m; m = next) {
            next = m->hnext;
            size_t b = bucket_of(q, m->id);
            m->hnext = q->buckets[b];
            q->buckets[b] = m;
        }
    }
    free(old);
    return BITT_OK;
}

bitt_mem_msg *bitt__mem_msg_find(const bitt_backend *be, const bitt_mem_topic *topic, uint64_t id)
{
    const bitt_mem_queue *q = &be->queue;
    if (!q->bucket_count || !topic)
        return NULL;
    for (bitt_mem_msg *m = q->buckets[bucket_of(q, id)]; m; m = m->hnext)
        if (m->id == id)
            return m->topic == topic ? m : NULL;
    return NULL;
}

void bitt__mem_msg_link(bitt_backend *be, bitt_mem_topic *topic, bitt_mem_msg *msg)
{
    bitt_mem_queue *q = &be->queue;
    size_t b = bucket_of(q, msg->id);
    msg->hnext = q->buckets[b];
    q->buckets[b] = msg;
    q->count++;
    msg->topic = topic;
    insert_home(msg);
    if (msg->has_dedup) {
        /* The caller made sure no live message holds the key. */
        bitt__omap_insert(&topic->dedup, bitt__mem_msg_dedup_node(msg));
        msg->in_dedup = 1;
    }
}

static void release_key(bitt_mem_msg *m)
{
    if (m->in_dedup) {
        bitt__omap_remove(&m->topic->dedup, bitt__mem_msg_dedup_node(m));
        m->in_dedup = 0;
    }
}

/* The aux node of a dead message of a store with dead retention, keyed by
 * (failed_at, id): okey's due_at bytes are unused while it is dead. */
static void start_aging(bitt_mem_msg *m)
{
    if (!m->ages)
        return;
    bitt__mem_put_i64(m->okey + 4, m->failed_at);
    bitt_omap_node *n = bitt__mem_msg_aux_node(m);
    memset(n, 0, sizeof *n);
    n->key = m->okey + 4;
    n->key_len = BITT_MEM_OKEY_LEN - 4;
    bitt__omap_insert(&m->topic->aging, n);
}

static void stop_aging(bitt_mem_msg *m)
{
    if (m->ages && m->state == BITT_MEM_DEAD)
        bitt__omap_remove(&m->topic->aging, bitt__mem_msg_aux_node(m));
}

void bitt__mem_msg_drop(bitt_backend *be, bitt_mem_msg *msg)
{
    bitt_mem_queue *q = &be->queue;
    bitt_mem_msg **link = &q->buckets[bucket_of(q, msg->id)];
    while (*link != msg)
        link = &(*link)->hnext;
    *link = msg->hnext;
    q->count--;
    bitt__omap_remove(home(msg), &msg->order);
    release_key(msg);
    stop_aging(msg);
    bitt__mem_error_free(msg->last_error);
    free(msg->result);
    free(msg);
}

int bitt__mem_msg_holds_key(const bitt_mem_msg *m, int64_t now)
{
    return !(m->state == BITT_MEM_PROCESSING && m->attempts >= m->max_attempts && m->due_at <= now);
}

void bitt__mem_msg_move(bitt_mem_msg *m, int state, uint32_t attempts, int64_t due_at)
{
    bitt__omap_remove(home(m), &m->order);
    m->state = (uint8_t)state;
    m->attempts = attempts;
    m->due_at = due_at;
    set_order_key(m);
    insert_home(m);
    if (state != BITT_MEM_PROCESSING)
        m->token[0] = '\0';
}

void bitt__mem_msg_kill(bitt_mem_msg *m, int64_t failed_at, char *error)
{
    bitt__omap_remove(home(m), &m->order);
    release_key(m);
    m->state = BITT_MEM_DEAD;
    m->failed_at = failed_at;
    m->token[0] = '\0';
    bitt__mem_error_free(m->last_error);
    m->last_error = error;
    insert_home(m); /* the dead map, keyed by id alone */
    start_aging(m);
}

void bitt__mem_msg_finish(bitt_mem_msg *m, int64_t now, bitt_mem_result *result)
{
    bitt__omap_remove(home(m), &m->order);
    release_key(m);
    m->state = BITT_MEM_DONE;
    m->done_at = now;
    m->token[0] = '\0';
    m->result = result;
    bitt__mem_put_i64(m->okey + 4, now); /* done is by (done_at, id) */
    insert_home(m);
}

void bitt__mem_msg_revive(bitt_mem_msg *m, int64_t now)
{
    stop_aging(m);
    bitt__omap_remove(&m->topic->dead, &m->order);
    m->state = BITT_MEM_PENDING;
    m->attempts = 0;
    m->failed_at = 0;
    bitt__mem_error_free(m->last_error);
    m->last_error = NULL;
    /* Its dedup key was given up when it died and stays given up: another
     * message may hold it by now. */
    m->due_at = now;
    set_order_key(m);
    insert_home(m);
}

/* Dead-letters topic's processing messages whose last lease ended (the
 * first part of bitt__mem_queue_sweep). */
void bitt__mem_queue_sweep_leases(bitt_mem_topic *topic, int64_t now)
{
    for (bitt_omap_node *n; (n = bitt__omap_first(&topic->final));) {
        bitt_mem_msg *m = BITT_MEM_OF(n, bitt_mem_msg, order);
        if (m->due_at > now)
            break;
        bitt__mem_msg_kill(m, m->due_at, bitt__mem_lease_expired);
    }
}

bitt_message *bitt__mem_msg_copy(const bitt_mem_msg *m, const char *token, uint32_t attempts,
                                 int64_t due_at)
{
    bitt_message f = {
        .id = m->id,
        .topic = (char *)m->topic->name,
        .payload = (uint8_t *)bitt__mem_msg_payload(m),
        .payload_len = m->payload_len,
        .kind = m->kind,
        .token = (char *)token,
        .attempts = attempts,
        .max_attempts = m->max_attempts,
        .last_error = m->last_error,
        .created_at = m->created_at,
        .due_at = due_at,
        .failed_at = m->failed_at,
        .priority = m->priority,
        .done_at = m->done_at,
        .result = m->result ? (uint8_t *)m->result->data : NULL,
        .result_len = m->result ? m->result->len : 0,
        .result_kind = m->result ? m->result->kind : 0,
    };
    bitt_message *copy = bitt__message_new(&f);
    if (!copy)
        bitt__fail(BITT_ENOMEM, "out of memory copying message %llu", (unsigned long long)m->id);
    return copy;
}

static void free_topic(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    free(BITT_MEM_OF(node, bitt_mem_topic, node));
}

void bitt__mem_queue_free(bitt_backend *be)
{
    bitt_mem_queue *q = &be->queue;
    for (size_t i = 0; i < q->bucket_count; i++) {
        for (bitt_mem_msg *m = q->buckets[i], *next; m; m = next) {
            next = m->hnext;
            bitt__mem_error_free(m->last_error);
            free(m->result);
            free(m);
        }
    }
    free(q->buckets);
    bitt__omap_drain(&q->topics, free_topic, NULL);
    memset(q, 0, sizeof *q);
}
