/*
 * core/memory/memory.h: what the memory backend's files share: the row, the
 * backend struct, and the functions the vtable (backend.c) points at.
 */
#ifndef BITT_MEMORY_MEMORY_H
#define BITT_MEMORY_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "memory/ordered_map.h"

/* One KV row: a single allocation holding the map node, the hash chain
 * link, the metadata, the key and the value (node.key points at data[0]). */
typedef struct bitt_mem_row {
    bitt_omap_node node;
    struct bitt_mem_row *hnext; /* the next row in its hash bucket */
    uint64_t version;
    int64_t expires_at; /* 0 = never */
    uint32_t value_len;
    int32_t kind;
    uint8_t data[]; /* key bytes, then value bytes */
} bitt_mem_row;

/* ---- queue messages (queue_store.c) --------------------------------------- */

enum { BITT_MEM_PENDING = 0, BITT_MEM_PROCESSING = 1, BITT_MEM_DEAD = 2, BITT_MEM_DONE = 3 };
#define BITT_MEM_OKEY_LEN 20

/* A topic: its messages in four ordered maps and a dedup map. Every
 * message is in exactly one of ready, final, dead and done. */
typedef struct bitt_mem_topic {
    bitt_omap_node node; /* in be->queue.topics, key = name */
    bitt_omap ready;     /* pending, and processing with attempts left, by
                            (priority descending, due_at, id): claim order */
    bitt_omap final;     /* processing on the last attempt, by (due_at, id) */
    bitt_omap dead;      /* dead messages by id */
    bitt_omap done;      /* done messages (done retention) by (done_at, id) */
    bitt_omap aging;     /* dead retention only: the dead by (failed_at, id) */
    bitt_omap dedup;     /* live messages holding a dedup key, by that key */
    char name[];
} bitt_mem_topic;

/* The result a done message was acked with: one allocation. */
typedef struct bitt_mem_result {
    uint32_t len;
    int32_t kind;
    uint8_t data[];
} bitt_mem_result;

/* One message: one allocation. A message enqueued with a dedup key, and
 * every message of a store with dead retention, has a second map node
 * right after the struct (bitt__mem_msg_aux_node): it links the message in
 * topic->dedup while it holds its key, and in topic->aging while it is
 * dead (a dead message never holds its key again). Then come the payload
 * and the dedup key. */
typedef struct bitt_mem_msg {
    bitt_omap_node order;       /* topic->ready / final / done (key okey, okey + 4) or
                                   topic->dead (okey + 12) */
    struct bitt_mem_msg *hnext; /* the next message in its id hash bucket */
    bitt_mem_topic *topic;
    char *last_error;        /* malloc'd, bitt__mem_lease_expired, or NULL */
    bitt_mem_result *result; /* done: the ack's result, or NULL */
    uint64_t id;
    int64_t created_at;
    int64_t due_at; /* pending: claimable from; processing: the lease's end */
    int64_t failed_at;
    int64_t done_at;
    uint32_t attempts;
    uint32_t max_attempts;
    uint32_t payload_len;
    uint32_t dedup_len;
    int32_t kind;
    int32_t priority;               /* higher is claimed first */
    uint8_t state;                  /* BITT_MEM_PENDING / PROCESSING / DEAD / DONE */
    uint8_t has_dedup;              /* enqueued with a dedup key */
    uint8_t in_dedup;               /* its aux node is linked in topic->dedup */
    uint8_t ages;                   /* dead retention: its aux node is in topic->aging
                                       while it is dead */
    char token[BITT_TOKEN_LEN + 1]; /* processing: the ack token */
    /* The order keys, big-endian and order-preserving: the priority
     * (inverted, so higher sorts first), due_at, id. ready uses all 20
     * bytes, final the last 16 (due_at, id), dead the last 8 (id). A done
     * message has done_at in place of due_at (done is keyed by the last
     * 16), a dead one that ages failed_at (aging is keyed by the last 16,
     * dead by the id alone). */
    uint8_t okey[BITT_MEM_OKEY_LEN];
} bitt_mem_msg;

/* The bytes after the struct (sizeof is a multiple of the alignment). */
static inline uint8_t *bitt__mem_msg_tail(const bitt_mem_msg *m)
{
    return (uint8_t *)(m + 1) + (m->has_dedup || m->ages ? sizeof(bitt_omap_node) : 0);
}

static inline bitt_omap_node *bitt__mem_msg_aux_node(const bitt_mem_msg *m)
{
    return (bitt_omap_node *)(void *)(m + 1);
}

static inline bitt_omap_node *bitt__mem_msg_dedup_node(const bitt_mem_msg *m)
{
    return bitt__mem_msg_aux_node(m);
}

static inline bitt_mem_msg *bitt__mem_msg_of_dedup(const bitt_omap_node *n)
{
    return (bitt_mem_msg *)(void *)n - 1;
}

static inline const uint8_t *bitt__mem_msg_payload(const bitt_mem_msg *m)
{
    return bitt__mem_msg_tail(m);
}

static inline const uint8_t *bitt__mem_msg_dedup_key(const bitt_mem_msg *m)
{
    return bitt__mem_msg_tail(m) + m->payload_len;
}

/* The queue: topics by name, and every message by id in a hash table. */
typedef struct bitt_mem_queue {
    bitt_omap topics;
    bitt_mem_msg **buckets; /* chains through msg->hnext; a power of two, or 0 */
    size_t bucket_count;
    size_t count;
    uint64_t last_id; /* ids are store-wide, from 1 */
    /* the retentions the store was opened with (0 = none): acks keep done
     * messages, sweeps drop what outlived them */
    int64_t done_retention_ms;
    int64_t dead_retention_ms;
} bitt_mem_queue;

/* ---- outbox events (outbox.c, outbox_commit.c) ----------------------------- */

/* A stream: its pending and parked events by sequence number. Kept once
 * created, so a sequence number is never handed out twice. */
typedef struct bitt_mem_stream {
    bitt_omap_node node; /* in be->streams, key = name */
    bitt_omap pending;   /* bitt_mem_event by seq */
    bitt_omap parked;    /* bitt_mem_event by seq */
    uint64_t last_seq;
    char name[];
} bitt_mem_stream;

typedef struct bitt_mem_event {
    bitt_omap_node node; /* in stream->pending or stream->parked, key = skey */
    char *last_error;    /* malloc'd or NULL */
    uint64_t seq;
    int64_t created_at;
    int64_t next_attempt_at; /* 0 = none */
    int64_t failed_at;       /* when parked */
    uint32_t attempts;
    uint32_t payload_len;
    int32_t kind;
    int32_t park_reason; /* 0 while pending */
    uint8_t skey[8];     /* seq, big-endian */
    uint8_t data[];      /* payload */
} bitt_mem_event;

/* Every row is in both structures: the ordered map serves ranges and
 * inserts, the hash index exact-key lookups (get, checks, overwrites).
 * The other modules keep their own maps beside them. */
struct bitt_backend {
    bitt_omap rows;         /* bitt_mem_row by key, expired ones included */
    bitt_mem_row **buckets; /* the hash index: chains through row->hnext */
    size_t bucket_count;    /* 0 (no array yet) or a power of two >= rows.count */
    uint64_t seed;          /* of the hash, per instance */
    uint64_t last_version;  /* the versionstamp of the last commit; 0 before any */
    size_t ttl_rows;        /* how many rows have expires_at != 0 */
    int64_t min_expiry;     /* no row's expires_at (when != 0) is below this */

    bitt_mem_queue queue;
    bitt_omap leases;   /* by name, kept forever (epochs) (lease.c) */
    bitt_omap streams;  /* bitt_mem_stream by name, kept forever (seqs) */
    bitt_omap channels; /* by name, while it has messages (pubsub.c) */
    bitt_omap pub_log;  /* every published message by (expires_at, id) */
    uint64_t pub_last_id;
    bitt_omap budgets;   /* by name (budget.c) */
    bitt_omap schedules; /* by key (schedule.c) */
    bitt_omap sched_due; /* the same schedules by (next_run_at, key) */
};

/* The struct that holds `member` at ptr (ptr must not be NULL). */
#define BITT_MEM_OF(ptr, type, member) ((type *)(void *)((char *)(ptr) - (offsetof(type, member))))

/* Big-endian encodings whose byte order is the numeric order, for map keys. */
static inline void bitt__mem_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline uint64_t bitt__mem_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static inline void bitt__mem_put_i64(uint8_t *p, int64_t v)
{
    bitt__mem_put_u64(p, (uint64_t)v ^ (UINT64_C(1) << 63));
}

static inline void bitt__mem_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline uint32_t bitt__mem_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A priority's band in the ready map: higher priorities give lower bands,
 * so they sort first (INT32_MAX is band 0, INT32_MIN band UINT32_MAX). */
static inline uint32_t bitt__mem_priority_band(int32_t priority)
{
    return ~((uint32_t)priority ^ UINT32_C(0x80000000));
}

/* A malloc'd copy of s in *out (NULL for NULL); BITT_ENOMEM with a message. */
int bitt__mem_strdup(const char *s, char **out);

static inline bitt_mem_row *bitt__mem_row_of(bitt_omap_node *node)
{
    return node ? (bitt_mem_row *)((char *)node - offsetof(bitt_mem_row, node)) : NULL;
}

static inline const uint8_t *bitt__mem_row_value(const bitt_mem_row *r)
{
    return r->data + r->node.key_len;
}

static inline int bitt__mem_row_live(const bitt_mem_row *r, int64_t now)
{
    return bitt__live(r->expires_at, now);
}

/* ---- rows (row.c) ------------------------------------------------------- */

/* A new row, not linked anywhere; NULL with BITT_ENOMEM (or BITT_ETOOLARGE
 * past 4 GiB) set as the thread's error. */
bitt_mem_row *bitt__mem_row_new(const uint8_t *key, size_t key_len, const uint8_t *value,
                                size_t value_len, int kind, uint64_t version, int64_t expires_at);
/* A bitt_entry copy of the row; NULL with BITT_ENOMEM set. */
bitt_entry *bitt__mem_row_entry(const bitt_mem_row *r);

/* The live row at key, or NULL when absent or expired. */
bitt_mem_row *bitt__mem_lookup(bitt_backend *be, const uint8_t *key, size_t key_len, int64_t now);

/* Links a new row in (no row with its key may be there, and room must have
 * been reserved with bitt__mem_index_reserve) / puts a new row in place of
 * old (same key) and frees old / unlinks and frees a row. They keep the
 * index and the TTL bookkeeping, and cannot fail. */
void bitt__mem_link(bitt_backend *be, bitt_mem_row *row);
void bitt__mem_swap(bitt_backend *be, bitt_mem_row *old, bitt_mem_row *row);
void bitt__mem_drop(bitt_backend *be, bitt_mem_row *row);

/* ---- the hash index (index.c) ------------------------------------------- */

/* Makes room for `extra` more rows, growing the bucket array; BITT_ENOMEM
 * (nothing changed) when that fails. */
int bitt__mem_index_reserve(bitt_backend *be, size_t extra);
/* The row at key, live or expired, or NULL. */
bitt_mem_row *bitt__mem_index_find(const bitt_backend *be, const uint8_t *key, size_t key_len);
void bitt__mem_index_add(bitt_backend *be, bitt_mem_row *row);
void bitt__mem_index_replace(bitt_backend *be, const bitt_mem_row *old, bitt_mem_row *row);
void bitt__mem_index_remove(bitt_backend *be, const bitt_mem_row *row);

/* ---- the vtable's functions (kv.c, commit.c) ---------------------------- */

int bitt__mem_kv_get(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                     bitt_entry **out);
int bitt__mem_kv_get_many(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                          const size_t *key_lens, size_t count, bitt_entries *out);
int bitt__mem_kv_list(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                      bitt_entries *out);
int bitt__mem_kv_purge(bitt_backend *be, const bitt_time *t, uint64_t *removed);
int bitt__mem_commit(bitt_backend *be, bitt_commit *c);

/* ---- queue storage (queue_store.c) ----------------------------------------- */

/* The error of a message dead-lettered by an expired last lease: static,
 * never freed. */
extern char bitt__mem_lease_expired[];
void bitt__mem_error_free(char *error);

bitt_mem_topic *bitt__mem_topic_find(const bitt_backend *be, const char *name);
/* A new empty topic, not linked; NULL with BITT_ENOMEM set. */
bitt_mem_topic *bitt__mem_topic_new(const char *name);
void bitt__mem_topic_link(bitt_backend *be, bitt_mem_topic *topic);
/* Frees the topic when it holds no message. */
void bitt__mem_topic_release(bitt_backend *be, bitt_mem_topic *topic);

/* A new pending message due at due_at, not linked; NULL with BITT_ENOMEM.
 * ages: the store has dead retention (the message gets its aux node). */
bitt_mem_msg *bitt__mem_msg_new(uint64_t id, const uint8_t *payload, size_t len, int kind,
                                const uint8_t *dedup, size_t dedup_len, uint32_t max_attempts,
                                int32_t priority, int64_t created_at, int64_t due_at, int ages);
/* Makes room in the id index for `extra` more messages; BITT_ENOMEM. */
int bitt__mem_msg_reserve(bitt_backend *be, size_t extra);
/* Links a new message into topic and the id index (room reserved). */
void bitt__mem_msg_link(bitt_backend *be, bitt_mem_topic *topic, bitt_mem_msg *msg);
/* Unlinks and frees a message (ack, cancel, dead delete, retention). */
void bitt__mem_msg_drop(bitt_backend *be, bitt_mem_msg *msg);
/* The message of topic with this id, or NULL. */
bitt_mem_msg *bitt__mem_msg_find(const bitt_backend *be, const bitt_mem_topic *topic, uint64_t id);
/* Whether a message in a dedup map still holds its key at now (one whose
 * last lease expired is as good as dead). */
int bitt__mem_msg_holds_key(const bitt_mem_msg *msg, int64_t now);
/* Moves a live message to a new state (pending or processing), attempts
 * and due_at, into the map that state belongs in. */
void bitt__mem_msg_move(bitt_mem_msg *msg, int state, uint32_t attempts, int64_t due_at);
/* Dead-letters a live message: failed_at, error (ownership taken). */
void bitt__mem_msg_kill(bitt_mem_msg *msg, int64_t failed_at, char *error);
/* Makes a processing message done at now with result (ownership taken,
 * NULL = none): its dedup key is given up, its token cleared. */
void bitt__mem_msg_finish(bitt_mem_msg *msg, int64_t now, bitt_mem_result *result);
/* A dead message back to pending at now, attempts 0, error cleared. */
void bitt__mem_msg_revive(bitt_mem_msg *msg, int64_t now);
/* Dead-letters topic's processing messages whose last lease ended, then
 * drops what outlived the store's retentions (queue_retention.c); returns
 * how many it dropped. Never frees the topic. */
uint64_t bitt__mem_queue_sweep(bitt_backend *be, bitt_mem_topic *topic, int64_t now);
/* Its first part: only the expired last leases (queue_store.c). */
void bitt__mem_queue_sweep_leases(bitt_mem_topic *topic, int64_t now);
/* A result for bitt__mem_msg_finish from an ack op's value (NULL = none):
 * BITT_OK with *out (NULL when none), or BITT_ENOMEM. */
int bitt__mem_result_new(const uint8_t *value, size_t len, int kind, bitt_mem_result **out);
/* A bitt_message copy; token, attempts and due_at given by the caller.
 * NULL with BITT_ENOMEM set. */
bitt_message *bitt__mem_msg_copy(const bitt_mem_msg *msg, const char *token, uint32_t attempts,
                                 int64_t due_at);
void bitt__mem_queue_free(bitt_backend *be);

/* ---- deliveries (queue.c) ------------------------------------------------- */

/* The topic called name after its sweep at now; NULL when it has no message
 * (a topic the sweep emptied is freed). */
bitt_mem_topic *bitt__mem_queue_enter(bitt_backend *be, const char *name, int64_t now);
/* After the topic's sweep: the processing message of topic with id and
 * token under a live lease, or NULL with BITT_ETOKEN set. */
bitt_mem_msg *bitt__mem_delivery(bitt_backend *be, const char *topic, uint64_t id,
                                 const char *token, int64_t now);

/* What a delivery op (BITT_OP_QUEUE_ACK..EXTEND) does to its message. */
typedef struct bitt_mem_delivery_change {
    int type;
    int64_t now;
    int64_t ms;              /* nack delay (< 0: backoff), snooze delay, extend's lease */
    char *error;             /* nack: the error text (malloc'd or NULL), taken */
    bitt_mem_result *result; /* ack with done retention: the result (or NULL), taken */
    const bitt_backoff *backoff;
} bitt_mem_delivery_change;
/* Applies d to a message bitt__mem_delivery returned; cannot fail. An ack
 * frees the message (or, with done retention, keeps it done) but not its
 * topic (bitt__mem_topic_release). */
void bitt__mem_delivery_apply(bitt_backend *be, bitt_mem_msg *m, const bitt_mem_delivery_change *d);

/* ---- commit ops beyond KV (queue_commit.c, queue_byid.c, outbox_commit.c,
 * lease.c) ---------------------------------------------------------------- */

typedef struct bitt_mem_enqueue_plan bitt_mem_enqueue_plan;
typedef struct bitt_mem_outbox_plan bitt_mem_outbox_plan;
typedef struct bitt_mem_qop_plan bitt_mem_qop_plan;

/* The BITT_OP_QUEUE_* ops of a commit, n of them: plan_new allocates the
 * plan; check judges op i (in op order, with the other checks; a stale
 * delivery sets c->failed and fails with BITT_ETOKEN); prepare allocates
 * what apply needs; apply changes the messages and sets op.found (cannot
 * fail; before the enqueues are linked); finish frees the topics left empty
 * (after them) and the plan; discard undoes check and prepare. */
int bitt__mem_qop_plan_new(size_t n, bitt_mem_qop_plan **out);
int bitt__mem_qop_check(bitt_backend *be, bitt_mem_qop_plan *p, bitt_commit *c, size_t i);
int bitt__mem_qop_prepare(bitt_backend *be, bitt_mem_qop_plan *p, bitt_commit *c);
void bitt__mem_qop_apply(bitt_backend *be, bitt_mem_qop_plan *p, bitt_commit *c);
void bitt__mem_qop_finish(bitt_backend *be, bitt_mem_qop_plan *p, const bitt_commit *c);
void bitt__mem_qop_discard(bitt_mem_qop_plan *p, bitt_commit *c);
/* Whether a queue op of p before op index `before` frees m's dedup key
 * (an ack, a cancel, a nack of its last attempt). p may be NULL. */
int bitt__mem_qop_frees_key(const bitt_mem_qop_plan *p, const bitt_commit *c, const bitt_mem_msg *m,
                            size_t before);

/* Plan and allocate every ENQUEUE (resp. OUTBOX_APPEND) op of c, of which
 * there are n, setting their results; nothing in the store changes. A
 * dedup key that a queue op of qops frees earlier in op order counts as
 * free. apply then links everything in and cannot fail; discard undoes
 * prepare (both accept NULL and free the plan). */
int bitt__mem_enqueue_plan_prepare(bitt_backend *be, bitt_commit *c, size_t n,
                                   const bitt_mem_qop_plan *qops, bitt_mem_enqueue_plan **out);
void bitt__mem_enqueue_plan_apply(bitt_backend *be, bitt_mem_enqueue_plan *plan);
void bitt__mem_enqueue_plan_discard(bitt_commit *c, bitt_mem_enqueue_plan *plan);
int bitt__mem_outbox_plan_prepare(bitt_backend *be, bitt_commit *c, size_t n,
                                  bitt_mem_outbox_plan **out);
void bitt__mem_outbox_plan_apply(bitt_backend *be, bitt_mem_outbox_plan *plan);
void bitt__mem_outbox_plan_discard(bitt_commit *c, bitt_mem_outbox_plan *plan);
/* The stream called name, or NULL (outbox_commit.c). */
bitt_mem_stream *bitt__mem_stream_find(const bitt_backend *be, const char *name);

/* A SCHEDULE_ADVANCE op: check judges it with the other checks (BITT_OK,
 * or BITT_ECONFLICT with a message when the schedule is gone or no longer
 * at the occurrence in op.delta); advance moves it to op.delay_ms and
 * cannot fail (schedule.c). */
int bitt__mem_schedule_advance_check(bitt_backend *be, const bitt_op *op);
void bitt__mem_schedule_advance(bitt_backend *be, const bitt_op *op);

/* A FENCE op: BITT_OK or BITT_ELEASELOST with a message. */
int bitt__mem_lease_fence(bitt_backend *be, const bitt_op *op, int64_t now);

/* ---- the version 2 vtable entries ---------------------------------------- */

int bitt__mem_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                          int64_t lease_ms, bitt_messages *out);
int bitt__mem_queue_claim_topics(bitt_backend *be, const bitt_time *t, const char *const *topics,
                                 size_t count, size_t limit, int64_t lease_ms, bitt_messages *out);
int bitt__mem_queue_get(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        bitt_message **out);
int bitt__mem_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token);
int bitt__mem_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                             const uint64_t *ids, const char *const *tokens, size_t count,
                             int *statuses);
int bitt__mem_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                         const char *token, const char *error, int64_t delay_ms,
                         const bitt_backoff *backoff);
int bitt__mem_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                           const char *token, int64_t lease_ms);
int bitt__mem_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                           const char *token, int64_t delay_ms);
int bitt__mem_queue_stats(bitt_backend *be, const bitt_time *t, const char *topic,
                          bitt_queue_stats *out);
int bitt__mem_queue_dead_list(bitt_backend *be, const bitt_time *t, const char *topic,
                              uint64_t after_id, size_t limit, bitt_messages *out);
int bitt__mem_queue_dead_retry(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                               uint64_t *count);
int bitt__mem_queue_dead_delete(bitt_backend *be, const bitt_time *t, const char *topic,
                                uint64_t id, uint64_t *count);
int bitt__mem_queue_purge(bitt_backend *be, const bitt_time *t, const char *topic,
                          uint64_t *removed);

int bitt__mem_lease_acquire(bitt_backend *be, const bitt_time *t, const char *name,
                            const char *owner, int64_t ttl_ms, uint64_t *epoch,
                            int64_t *expires_at);
int bitt__mem_lease_renew(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                          uint64_t epoch, int64_t ttl_ms, int64_t *expires_at);
int bitt__mem_lease_release(bitt_backend *be, const bitt_time *t, const char *name,
                            const char *owner, uint64_t epoch);
int bitt__mem_lease_get(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                        uint64_t *epoch, int64_t *expires_at);
void bitt__mem_lease_free(bitt_backend *be);

int bitt__mem_outbox_pending(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                             bitt_messages *out);
int bitt__mem_outbox_ack(bitt_backend *be, const bitt_time *t, const char *stream,
                         const uint64_t *seqs, size_t count, uint64_t *acked);
int bitt__mem_outbox_fail(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                          const char *error, int64_t next_attempt_at);
int bitt__mem_outbox_park(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                          int reason, const char *error);
int bitt__mem_outbox_parked(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                            size_t limit, bitt_messages *out);
int bitt__mem_outbox_retry(bitt_backend *be, const bitt_time *t, const char *stream,
                           const uint64_t *seqs, size_t count, uint64_t *moved);
int bitt__mem_outbox_discard(bitt_backend *be, const bitt_time *t, const char *stream,
                             const uint64_t *seqs, size_t count, uint64_t *deleted);
int bitt__mem_outbox_counts(bitt_backend *be, const bitt_time *t, const char *stream,
                            uint64_t *pending, uint64_t *parked);
void bitt__mem_outbox_free(bitt_backend *be);

int bitt__mem_pubsub_publish(bitt_backend *be, const bitt_time *t, const char *channel,
                             const uint8_t *data, size_t len, int64_t retention_ms);
int bitt__mem_pubsub_head(bitt_backend *be, const bitt_time *t, uint64_t *last_id);
int bitt__mem_pubsub_fetch(bitt_backend *be, const bitt_time *t, const char *channel,
                           uint64_t after_id, size_t limit, bitt_messages *out);
void bitt__mem_pubsub_free(bitt_backend *be);

int bitt__mem_budget_take(bitt_backend *be, const bitt_time *t, const char *name,
                          const bitt_budget_params *p, int64_t n, int64_t *wait_ms);
void bitt__mem_budget_free(bitt_backend *be);

int bitt__mem_schedule_set(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                           int64_t first_run_at);
int bitt__mem_schedule_due(bitt_backend *be, const bitt_time *t, const char *prefix,
                           bitt_schedule **out);
int bitt__mem_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                           bitt_schedule **out);
int bitt__mem_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out);
int bitt__mem_schedule_delete(bitt_backend *be, const bitt_time *t, const char *key);
void bitt__mem_schedule_free(bitt_backend *be);

#endif /* BITT_MEMORY_MEMORY_H */
