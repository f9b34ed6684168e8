/*
 * core/memory/lease.c: leases on the memory backend, and the FENCE op of
 * commits. A lease is kept once created, so its epoch keeps increasing
 * across releases: it is the fencing token.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

typedef struct bitt_mem_lease {
    bitt_omap_node node; /* in be->leases, key = name */
    char *owner;         /* malloc'd; NULL when free (never acquired, or released) */
    uint64_t epoch;      /* of the last acquisition */
    int64_t expires_at;
    char name[];
} bitt_mem_lease;

static bitt_mem_lease *find(const bitt_backend *be, const char *name)
{
    bitt_omap_node *n = bitt__omap_find(&be->leases, (const uint8_t *)name, strlen(name));
    return n ? BITT_MEM_OF(n, bitt_mem_lease, node) : NULL;
}

static int live(const bitt_mem_lease *l, int64_t now)
{
    return l && l->owner && now < l->expires_at;
}

/* Whether owner holds the lease at epoch, live at now. */
static int held(const bitt_mem_lease *l, const char *owner, uint64_t epoch, int64_t now)
{
    return live(l, now) && l->epoch == epoch && !strcmp(l->owner, owner);
}

static int lost(const char *name, const char *owner, uint64_t epoch)
{
    return bitt__fail(BITT_ELEASELOST, "lease '%s' is not held by '%s' at epoch %llu", name, owner,
                      (unsigned long long)epoch);
}

int bitt__mem_lease_acquire(bitt_backend *be, const bitt_time *t, const char *name,
                            const char *owner, int64_t ttl_ms, uint64_t *epoch, int64_t *expires_at)
{
    bitt_mem_lease *l = find(be, name);
    if (live(l, t->now))
        return BITT_EXISTS;
    char *copy = NULL;
    int rc = bitt__mem_strdup(owner, &copy);
    if (rc)
        return rc;
    if (!l) {
        size_t len = strlen(name);
        l = bitt__calloc(1, sizeof *l + len + 1);
        if (!l) {
            free(copy);
            return bitt__fail(BITT_ENOMEM, "out of memory for lease '%s'", name);
        }
        memcpy(l->name, name, len + 1);
        l->node.key = (const uint8_t *)l->name;
        l->node.key_len = (uint32_t)len;
        bitt__omap_insert(&be->leases, &l->node);
    }
    free(l->owner);
    l->owner = copy;
    l->epoch++;
    l->expires_at = bitt__time_add(t->now, ttl_ms);
    if (epoch)
        *epoch = l->epoch;
    if (expires_at)
        *expires_at = l->expires_at;
    return BITT_OK;
}

int bitt__mem_lease_renew(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                          uint64_t epoch, int64_t ttl_ms, int64_t *expires_at)
{
    bitt_mem_lease *l = find(be, name);
    if (!held(l, owner, epoch, t->now))
        return lost(name, owner, epoch);
    l->expires_at = bitt__time_add(t->now, ttl_ms);
    if (expires_at)
        *expires_at = l->expires_at;
    return BITT_OK;
}

int bitt__mem_lease_release(bitt_backend *be, const bitt_time *t, const char *name,
                            const char *owner, uint64_t epoch)
{
    bitt_mem_lease *l = find(be, name);
    if (!held(l, owner, epoch, t->now))
        return lost(name, owner, epoch);
    free(l->owner);
    l->owner = NULL;
    l->expires_at = 0;
    return BITT_OK;
}

int bitt__mem_lease_get(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                        uint64_t *epoch, int64_t *expires_at)
{
    const bitt_mem_lease *l = find(be, name);
    if (owner) {
        owner->len = 0;
        if (owner->ptr)
            owner->ptr[0] = '\0';
    }
    if (!live(l, t->now))
        return BITT_NOTFOUND;
    if (owner) {
        int rc = bitt__buf_put(owner, l->owner, strlen(l->owner));
        if (rc)
            return rc;
    }
    if (epoch)
        *epoch = l->epoch;
    if (expires_at)
        *expires_at = l->expires_at;
    return BITT_OK;
}

int bitt__mem_lease_fence(bitt_backend *be, const bitt_op *op, int64_t now)
{
    if (held(find(be, op->name), op->owner, op->version, now))
        return BITT_OK;
    return lost(op->name, op->owner, op->version);
}

static void free_lease(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    bitt_mem_lease *l = BITT_MEM_OF(node, bitt_mem_lease, node);
    free(l->owner);
    free(l);
}

void bitt__mem_lease_free(bitt_backend *be)
{
    bitt__omap_drain(&be->leases, free_lease, NULL);
}
