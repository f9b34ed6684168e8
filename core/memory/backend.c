/*
 * core/memory/backend.c: the memory backend's vtable, open and close.
 *
 * A private in-process store: rows in an ordered map (ranges) and a hash
 * index (exact keys), and one versionstamp counter. The engine holds the
 * store mutex around every call, so nothing here locks.
 */
#include <stdlib.h>

#include "memory/memory.h"

static int mem_open(bitt_url *url, const bitt_limits *limits, bitt_backend **out)
{
    (void)limits; /* the engine applies them before every call */
    *out = NULL;
    /* No options of its own: the engine refuses whatever is left unused. */
    if (url->rest && url->rest[0])
        return bitt__fail(BITT_EURL, "store URL: memory: takes no path (write just memory:)");
    bitt_backend *be = calloc(1, sizeof *be);
    if (!be)
        return bitt__fail(BITT_ENOMEM, "out of memory opening a memory store");
    be->min_expiry = INT64_MAX;
    *out = be;
    return BITT_OK;
}

static void free_row(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    free(bitt__mem_row_of(node));
}

static void mem_close(bitt_backend *be)
{
    if (!be)
        return;
    bitt__omap_drain(&be->rows, free_row, NULL);
    free(be->buckets);
    free(be);
}

static int mem_migrate(bitt_backend *be)
{
    (void)be; /* no schema */
    return BITT_OK;
}

const bitt_backend_ops bitt__memory_backend = {
    .version = BITT_BACKEND_OPS_VERSION,
    .name = "memory",
    .open = mem_open,
    .close = mem_close,
    .migrate = mem_migrate,
    .kv_get = bitt__mem_kv_get,
    .kv_get_many = bitt__mem_kv_get_many,
    .kv_list = bitt__mem_kv_list,
    .commit = bitt__mem_commit,
    .kv_purge = bitt__mem_kv_purge,
};
