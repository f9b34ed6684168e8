/*
 * core/memory/memory.h: what the memory backend's files share: the row, the
 * backend struct, and the functions the vtable (backend.c) points at.
 */
#ifndef BITT_MEMORY_MEMORY_H
#define BITT_MEMORY_MEMORY_H

#include <stddef.h>

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

/* Every row is in both structures: the ordered map serves ranges and
 * inserts, the hash index exact-key lookups (get, checks, overwrites). */
struct bitt_backend {
    bitt_omap rows;         /* bitt_mem_row by key, expired ones included */
    bitt_mem_row **buckets; /* the hash index: chains through row->hnext */
    size_t bucket_count;    /* 0 (no array yet) or a power of two >= rows.count */
    uint64_t seed;          /* of the hash, per instance */
    uint64_t last_version;  /* the versionstamp of the last commit; 0 before any */
    size_t ttl_rows;        /* how many rows have expires_at != 0 */
    int64_t min_expiry;     /* no row's expires_at (when != 0) is below this */
};

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

#endif /* BITT_MEMORY_MEMORY_H */
