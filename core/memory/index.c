/*
 * core/memory/index.c: the hash index of the memory backend's rows.
 *
 * Exact-key lookups (get, get-many, checks, the key a write replaces) go
 * through a chained hash table instead of the tree: a tree descent costs a
 * cache miss per level, the index one or two. The bucket array only grows
 * (doubling, when the rows would outnumber the buckets), and only in
 * bitt__mem_index_reserve(), so linking a row in never allocates. The hash
 * is seeded per store, so chains stay short for keys chosen by an attacker
 * who cannot see the seed.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

#define MIN_BUCKETS 64

static inline uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53u;
    h ^= h >> 33;
    return h;
}

static uint64_t hash_key(uint64_t seed, const uint8_t *p, size_t n)
{
    uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15u);
    uint64_t w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9fb21c651e98df25u;
        h ^= h >> 29;
    }
    if (n) {
        w = 0;
        memcpy(&w, p, n);
        h = (h ^ w) * 0x9fb21c651e98df25u;
    }
    return mix(h);
}

static inline bitt_mem_row **bucket_of(const bitt_backend *be, const uint8_t *key, size_t len)
{
    return &be->buckets[hash_key(be->seed, key, len) & (be->bucket_count - 1)];
}

/* The link that points at row in its chain. */
static bitt_mem_row **link_to(const bitt_backend *be, const bitt_mem_row *row)
{
    bitt_mem_row **link = bucket_of(be, row->node.key, row->node.key_len);
    while (*link != row)
        link = &(*link)->hnext;
    return link;
}

int bitt__mem_index_reserve(bitt_backend *be, size_t extra)
{
    size_t need = be->rows.count + extra;
    if (need <= be->bucket_count)
        return BITT_OK;
    if (!be->seed) {
        /* Any value that differs between stores and runs will do. */
        uintptr_t where = (uintptr_t)be;
        be->seed = mix((uint64_t)where ^ mix((uint64_t)bitt__system_now())) | 1;
    }
    size_t count = be->bucket_count ? be->bucket_count : MIN_BUCKETS;
    while (count < need) {
        if (count > SIZE_MAX / 2 / sizeof *be->buckets)
            return bitt__fail(BITT_ENOMEM, "memory backend: too many rows to index");
        count *= 2;
    }
    bitt_mem_row **fresh = bitt__calloc(count, sizeof *fresh);
    if (!fresh)
        return bitt__fail(BITT_ENOMEM, "out of memory growing the row index to %zu buckets", count);
    bitt_mem_row **old = be->buckets;
    size_t old_count = be->bucket_count;
    be->buckets = fresh;
    be->bucket_count = count;
    for (size_t i = 0; i < old_count; i++) {
        for (bitt_mem_row *r = old[i], *next; r; r = next) {
            next = r->hnext;
            bitt_mem_row **b = bucket_of(be, r->node.key, r->node.key_len);
            r->hnext = *b;
            *b = r;
        }
    }
    free(old);
    return BITT_OK;
}

bitt_mem_row *bitt__mem_index_find(const bitt_backend *be, const uint8_t *key, size_t key_len)
{
    if (!be->bucket_count)
        return NULL;
    for (bitt_mem_row *r = *bucket_of(be, key, key_len); r; r = r->hnext)
        if (r->node.key_len == key_len && (!key_len || !memcmp(r->node.key, key, key_len)))
            return r;
    return NULL;
}

void bitt__mem_index_add(bitt_backend *be, bitt_mem_row *row)
{
    bitt_mem_row **b = bucket_of(be, row->node.key, row->node.key_len);
    row->hnext = *b;
    *b = row;
}

void bitt__mem_index_replace(bitt_backend *be, const bitt_mem_row *old, bitt_mem_row *row)
{
    bitt_mem_row **link = link_to(be, old);
    row->hnext = old->hnext;
    *link = row;
}

void bitt__mem_index_remove(bitt_backend *be, const bitt_mem_row *row)
{
    bitt_mem_row **link = link_to(be, row);
    *link = row->hnext;
}
