/* core/memory/row.c: KV rows of the memory backend and the map around them. */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

bitt_mem_row *bitt__mem_row_new(const uint8_t *key, size_t key_len, const uint8_t *value,
                                size_t value_len, int kind, uint64_t version, int64_t expires_at)
{
    if (key_len > UINT32_MAX || value_len > UINT32_MAX) {
        bitt__fail(BITT_ETOOLARGE, "memory backend: a key or value over 4 GiB");
        return NULL;
    }
    bitt_mem_row *r = bitt__malloc(sizeof *r + key_len + value_len);
    if (!r) {
        bitt__fail(BITT_ENOMEM, "out of memory for a row of %zu bytes", key_len + value_len);
        return NULL;
    }
    if (key_len)
        memcpy(r->data, key, key_len);
    if (value_len)
        memcpy(r->data + key_len, value, value_len);
    r->node.key = r->data;
    r->node.key_len = (uint32_t)key_len;
    r->version = version;
    r->expires_at = expires_at;
    r->value_len = (uint32_t)value_len;
    r->kind = kind;
    return r;
}

bitt_entry *bitt__mem_row_entry(const bitt_mem_row *r)
{
    return bitt__entry_new(r->data, r->node.key_len, bitt__mem_row_value(r), r->value_len, r->kind,
                           r->version, r->expires_at);
}

bitt_mem_row *bitt__mem_lookup(bitt_backend *be, const uint8_t *key, size_t key_len, int64_t now)
{
    bitt_mem_row *r = bitt__mem_index_find(be, key, key_len);
    return r && bitt__mem_row_live(r, now) ? r : NULL;
}

static void count_in(bitt_backend *be, const bitt_mem_row *row)
{
    if (row->expires_at) {
        be->ttl_rows++;
        if (row->expires_at < be->min_expiry)
            be->min_expiry = row->expires_at;
    }
}

static void count_out(bitt_backend *be, const bitt_mem_row *row)
{
    if (row->expires_at)
        be->ttl_rows--;
}

void bitt__mem_link(bitt_backend *be, bitt_mem_row *row)
{
    bitt__omap_insert(&be->rows, &row->node);
    bitt__mem_index_add(be, row);
    count_in(be, row);
}

void bitt__mem_swap(bitt_backend *be, bitt_mem_row *old, bitt_mem_row *row)
{
    bitt__omap_replace(&be->rows, &old->node, &row->node);
    bitt__mem_index_replace(be, old, row);
    count_out(be, old);
    count_in(be, row);
    free(old);
}

void bitt__mem_drop(bitt_backend *be, bitt_mem_row *row)
{
    bitt__omap_remove(&be->rows, &row->node);
    bitt__mem_index_remove(be, row);
    count_out(be, row);
    free(row);
}
