/* core/memory/queue_dead.c: dead letters on the memory backend (list,
 * retry, delete), each after the topic's sweep of expired last leases. */
#include "memory/memory.h"

int bitt__mem_queue_dead_list(bitt_backend *be, const bitt_time *t, const char *name,
                              uint64_t after_id, size_t limit, bitt_messages *out)
{
    bitt_mem_topic *topic = bitt__mem_queue_enter(be, name, t->now);
    if (!topic)
        return BITT_OK;
    uint8_t key[8];
    bitt__mem_put_u64(key, after_id);
    const size_t base = out->count;
    size_t taken = 0;
    for (bitt_omap_node *n = bitt__omap_higher(&topic->dead, key, 8); n && taken < limit;
         n = bitt__omap_next(n), taken++) {
        const bitt_mem_msg *m = BITT_MEM_OF(n, bitt_mem_msg, order);
        bitt_message *copy = bitt__mem_msg_copy(m, NULL, m->attempts, m->due_at);
        int rc = copy ? bitt__messages_push(out, copy) : BITT_ENOMEM;
        if (rc) {
            while (out->count > base)
                bitt_message_free(out->items[--out->count]);
            return rc;
        }
    }
    return BITT_OK;
}

/* The dead message id of topic, or NULL. */
static bitt_mem_msg *dead_one(bitt_backend *be, const bitt_mem_topic *topic, uint64_t id)
{
    bitt_mem_msg *m = bitt__mem_msg_find(be, topic, id);
    return m && m->state == BITT_MEM_DEAD ? m : NULL;
}

int bitt__mem_queue_dead_retry(bitt_backend *be, const bitt_time *t, const char *name, uint64_t id,
                               uint64_t *count)
{
    uint64_t moved = 0;
    bitt_mem_topic *topic = bitt__mem_queue_enter(be, name, t->now);
    if (topic && id) {
        bitt_mem_msg *m = dead_one(be, topic, id);
        if (m) {
            bitt__mem_msg_revive(m, t->now);
            moved = 1;
        }
    } else if (topic) {
        for (bitt_omap_node *n; (n = bitt__omap_first(&topic->dead)); moved++)
            bitt__mem_msg_revive(BITT_MEM_OF(n, bitt_mem_msg, order), t->now);
    }
    if (count)
        *count = moved;
    return BITT_OK;
}

int bitt__mem_queue_dead_delete(bitt_backend *be, const bitt_time *t, const char *name, uint64_t id,
                                uint64_t *count)
{
    uint64_t deleted = 0;
    bitt_mem_topic *topic = bitt__mem_queue_enter(be, name, t->now);
    if (topic && id) {
        bitt_mem_msg *m = dead_one(be, topic, id);
        if (m) {
            bitt__mem_msg_drop(be, m);
            deleted = 1;
        }
    } else if (topic) {
        for (bitt_omap_node *n; (n = bitt__omap_first(&topic->dead)); deleted++)
            bitt__mem_msg_drop(be, BITT_MEM_OF(n, bitt_mem_msg, order));
    }
    if (topic)
        bitt__mem_topic_release(be, topic);
    if (count)
        *count = deleted;
    return BITT_OK;
}
