/* core/memory/kv.c: the KV reads of the memory backend, and the purge. */
#include "memory/memory.h"

int bitt__mem_kv_get(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                     bitt_entry **out)
{
    *out = NULL;
    bitt_mem_row *r = bitt__mem_lookup(be, key, key_len, t->now);
    if (!r)
        return BITT_NOTFOUND;
    *out = bitt__mem_row_entry(r);
    return *out ? BITT_OK : BITT_ENOMEM;
}

int bitt__mem_kv_get_many(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                          const size_t *key_lens, size_t count, bitt_entries *out)
{
    for (size_t i = 0; i < count; i++) {
        bitt_mem_row *r = bitt__mem_lookup(be, keys[i], key_lens[i], t->now);
        bitt_entry *e = NULL;
        if (r && !(e = bitt__mem_row_entry(r)))
            return BITT_ENOMEM;
        int rc = bitt__entries_push(out, e);
        if (rc)
            return rc;
    }
    return BITT_OK;
}

int bitt__mem_kv_list(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                      bitt_entries *out)
{
    const bitt_omap *m = &be->rows;
    bitt_omap_node *n;
    if (!range->reverse)
        n = bitt__omap_ceil(m, range->lo, range->lo_len);
    else if (range->has_hi)
        n = bitt__omap_lower(m, range->hi, range->hi_len);
    else
        n = bitt__omap_last(m);

    size_t taken = 0;
    while (n && taken < range->limit) {
        /* Stop at the far bound: hi (exclusive) going up, lo going down. */
        if (!range->reverse) {
            if (range->has_hi && bitt__omap_cmp(n->key, n->key_len, range->hi, range->hi_len) >= 0)
                break;
        } else if (bitt__omap_cmp(n->key, n->key_len, range->lo, range->lo_len) < 0) {
            break;
        }
        bitt_mem_row *r = bitt__mem_row_of(n);
        if (bitt__mem_row_live(r, t->now)) {
            bitt_entry *e = bitt__mem_row_entry(r);
            if (!e)
                return BITT_ENOMEM;
            int rc = bitt__entries_push(out, e);
            if (rc)
                return rc;
            taken++;
        }
        n = range->reverse ? bitt__omap_prev(n) : bitt__omap_next(n);
    }
    return BITT_OK;
}

int bitt__mem_kv_purge(bitt_backend *be, const bitt_time *t, uint64_t *removed)
{
    uint64_t count = 0;
    /* Nothing can have expired before the earliest expiry. */
    if (be->ttl_rows && t->now >= be->min_expiry) {
        int64_t min = INT64_MAX;
        bitt_omap_node *n = bitt__omap_first(&be->rows);
        while (n) {
            bitt_omap_node *next = bitt__omap_next(n);
            bitt_mem_row *r = bitt__mem_row_of(n);
            if (!bitt__mem_row_live(r, t->now)) {
                bitt__mem_drop(be, r);
                count++;
            } else if (r->expires_at && r->expires_at < min) {
                min = r->expires_at;
            }
            n = next;
        }
        be->min_expiry = min;
    }
    if (removed)
        *removed = count;
    return BITT_OK;
}
