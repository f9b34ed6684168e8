/*
 * core/redis/queue_retention.c: queue_purge on Redis. The sweep that starts
 * every queue script drops what outlived a retention on its topic
 * (lua_queue.c's retire, from the fronts of P qc:<topic> and P
 * qa:<topic>); purge runs it on one topic, or on every topic of P qt (the
 * topics with done messages or indexed dead letters).
 *
 * Dead letters are indexed in qa only by calls with dead retention (so that
 * without it dying costs what it did), and a topic's first sweep with it
 * indexes those made before. A topic whose dead letters were all made
 * without dead retention, and which no call with it has touched, is in no
 * index: the first purge of every topic by this backend therefore finds the
 * topics with dead letters by a SCAN of their keys (once per open, and only
 * with dead retention), and sweeps each, which lists it in qt.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "redis_internal.h"

#define SCAN_COUNT "200"
#define SCAN_ITEMS 256

static int purge_one(bitt_backend *be, const bitt_time *t, const char *topic, size_t topic_len,
                     uint64_t *removed)
{
    bitt_rd_args a;
    bitt__rd_queue_args(be, &a, t);
    bitt__rd_arg(&a, topic, topic_len);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_Q_PURGE, &a, 1, &r);
    if (rc)
        return rc;
    uint64_t n = 0;
    rc = bitt__rd_elem_count(r, 1, 1, "queue purge");
    if (!rc)
        rc = bitt__rd_u64(r, 1, &n, "queue purge");
    freeReplyObject(r);
    if (!rc)
        *removed += n;
    return rc;
}

/* Sweeps every topic that has a dead letter (P qx:<topic>), found by SCAN. */
static int purge_dead_topics(bitt_backend *be, const bitt_time *t, uint64_t *removed)
{
    char pattern[BITT_RD_PREFIX_MAX + 16], cursor[32] = "0";
    int n = snprintf(pattern, sizeof pattern, "%s:qx:*", be->anchor);
    const size_t skip = (size_t)n - 1; /* the key's bytes before its topic */
    do {
        bitt_rd_args a;
        bitt__rd_args_init(&a);
        bitt__rd_arg_str(&a, "SCAN");
        bitt__rd_arg_str(&a, cursor);
        bitt__rd_arg_str(&a, "MATCH");
        bitt__rd_arg_str(&a, pattern);
        bitt__rd_arg_str(&a, "COUNT");
        bitt__rd_arg_str(&a, SCAN_COUNT);
        a.retry = 1;
        redisReply *r = NULL;
        int rc = bitt__rd_call(be, "queue purge (scan)", &a, SCAN_ITEMS, &r);
        bitt__rd_args_free(&a);
        if (rc)
            return rc;
        rc = bitt__rd_elem_count(r, 0, 2, "queue purge (scan)");
        size_t len = 0;
        const char *next = rc ? NULL : bitt__rd_str(r, 0, &len);
        if (!rc && (!next || len >= sizeof cursor || r->element[1]->type != REDIS_REPLY_ARRAY))
            rc = bitt__fail(BITT_EBACKEND, "redis: queue purge: SCAN gave an unexpected reply");
        if (!rc) {
            memcpy(cursor, next, len);
            cursor[len] = '\0';
        }
        const redisReply *keys = rc ? NULL : r->element[1];
        for (size_t i = 0; !rc && i < keys->elements; i++) {
            const char *key = bitt__rd_str(keys, i, &len);
            if (key && len > skip && len - skip <= BITT_NAME_MAX)
                rc = purge_one(be, t, key + skip, len - skip, removed);
        }
        freeReplyObject(r);
        if (rc)
            return rc;
    } while (strcmp(cursor, "0"));
    return BITT_OK;
}

int bitt__rd_queue_purge(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t *removed)
{
    *removed = 0;
    if (topic)
        return purge_one(be, t, topic, strlen(topic), removed);
    int rc = BITT_OK;
    if (be->limits.queue_dead_retention_ms > 0 && !atomic_load(&be->dead_indexed)) {
        rc = purge_dead_topics(be, t, removed);
        if (!rc)
            atomic_store(&be->dead_indexed, 1);
    }
    /* '' : every topic of qt */
    return rc ? rc : purge_one(be, t, "", 0, removed);
}
