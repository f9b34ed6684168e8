/* core/memory/budget.c: token buckets of the memory backend: a map from
 * name to stored state; the arithmetic is bitt__budget_apply's. */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

typedef struct bucket {
    bitt_omap_node node; /* in be->budgets, key = name */
    bitt_budget_state state;
    char name[];
} bucket;

int bitt__mem_budget_take(bitt_backend *be, const bitt_time *t, const char *name,
                          const bitt_budget_params *p, int64_t n, int64_t *wait_ms)
{
    size_t len = strlen(name);
    bitt_omap_node *node = bitt__omap_find(&be->budgets, (const uint8_t *)name, len);
    bucket *b = node ? BITT_MEM_OF(node, bucket, node) : NULL;
    bitt_budget_state state = {0};
    if (b)
        state = b->state;
    int64_t wait = 0;
    int rc = bitt__budget_apply(&state, p, t->now, n, &wait);
    if (wait_ms)
        *wait_ms = rc == BITT_OK ? 0 : wait;
    if (rc != BITT_OK) /* BITT_DENIED: nothing taken, nothing to store */
        return rc;
    if (!b) {
        b = bitt__calloc(1, sizeof *b + len + 1);
        if (!b)
            return bitt__fail(BITT_ENOMEM, "out of memory for budget '%s'", name);
        memcpy(b->name, name, len + 1);
        b->node.key = (const uint8_t *)b->name;
        b->node.key_len = (uint32_t)len;
        bitt__omap_insert(&be->budgets, &b->node);
    }
    b->state = state;
    return BITT_OK;
}

static void free_bucket(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    free(BITT_MEM_OF(node, bucket, node));
}

void bitt__mem_budget_free(bitt_backend *be)
{
    bitt__omap_drain(&be->budgets, free_bucket, NULL);
}
