/*
 * core/memory/schedule.c: interval schedules of the memory backend.
 *
 * A schedule is one allocation in two maps: by key (get, list, delete) and
 * by (next_run_at, key), the claim order. Its bytes are the 8-byte
 * order-preserving next_run_at, the key, a NUL, then the payload, so both
 * map keys point into them.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

typedef struct sched {
    bitt_omap_node by_key; /* in be->schedules, key = data + 8 */
    bitt_omap_node by_due; /* in be->sched_due, key = data */
    int64_t interval_ms;
    int64_t next_run_at;
    size_t key_len;
    size_t payload_len;
    int kind;
    uint8_t data[];
} sched;

static const char *key_of(const sched *s)
{
    return (const char *)s->data + 8;
}

static const uint8_t *payload_of(const sched *s)
{
    return s->data + 8 + s->key_len + 1;
}

static sched *find(const bitt_backend *be, const char *key)
{
    bitt_omap_node *n = bitt__omap_find(&be->schedules, (const uint8_t *)key, strlen(key));
    return n ? BITT_MEM_OF(n, sched, by_key) : NULL;
}

static sched *sched_new(const char *key, int64_t interval_ms, const uint8_t *payload, size_t len,
                        int kind, int64_t next_run_at)
{
    size_t key_len = strlen(key);
    sched *s = bitt__malloc(sizeof *s + 8 + key_len + 1 + len);
    if (!s) {
        bitt__fail(BITT_ENOMEM, "out of memory for schedule '%s'", key);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    bitt__mem_put_i64(s->data, next_run_at);
    memcpy(s->data + 8, key, key_len + 1);
    if (len)
        memcpy(s->data + 8 + key_len + 1, payload, len);
    s->interval_ms = interval_ms;
    s->next_run_at = next_run_at;
    s->key_len = key_len;
    s->payload_len = len;
    s->kind = kind;
    s->by_key.key = s->data + 8;
    s->by_key.key_len = (uint32_t)key_len;
    s->by_due.key = s->data;
    s->by_due.key_len = (uint32_t)(8 + key_len);
    return s;
}

static bitt_schedule *copy_of(const sched *s, int64_t next_run_at, int64_t occurrence)
{
    bitt_schedule *c = bitt__schedule_new(key_of(s), s->interval_ms, payload_of(s), s->payload_len,
                                          s->kind, next_run_at, occurrence);
    if (!c)
        bitt__fail(BITT_ENOMEM, "out of memory copying schedule '%s'", key_of(s));
    return c;
}

int bitt__mem_schedule_upsert(bitt_backend *be, const bitt_time *t, const char *key,
                              int64_t interval_ms, const uint8_t *payload, size_t len, int kind,
                              int64_t first_run_at)
{
    (void)t;
    sched *old = find(be, key);
    /* An unchanged interval keeps the cadence. */
    int64_t next = old && old->interval_ms == interval_ms ? old->next_run_at : first_run_at;
    sched *s = sched_new(key, interval_ms, payload, len, kind, next);
    if (!s)
        return BITT_ENOMEM;
    if (old) {
        bitt__omap_replace(&be->schedules, &old->by_key, &s->by_key);
        bitt__omap_remove(&be->sched_due, &old->by_due);
        free(old);
    } else {
        bitt__omap_insert(&be->schedules, &s->by_key);
    }
    bitt__omap_insert(&be->sched_due, &s->by_due);
    return BITT_OK;
}

int bitt__mem_schedule_claim(bitt_backend *be, const bitt_time *t, const char *prefix,
                             bitt_schedule **out)
{
    *out = NULL;
    const int64_t now = t->now;
    size_t plen = prefix ? strlen(prefix) : 0;
    /* The due ones come first in claim order; the first with the prefix
     * wins. */
    sched *s = NULL;
    for (bitt_omap_node *n = bitt__omap_first(&be->sched_due); n; n = bitt__omap_next(n)) {
        sched *c = BITT_MEM_OF(n, sched, by_due);
        if (c->next_run_at > now)
            break;
        if (c->key_len >= plen && !memcmp(key_of(c), prefix, plen)) {
            s = c;
            break;
        }
    }
    if (!s)
        return BITT_NOTFOUND;
    const int64_t occurrence = s->next_run_at;
    const int64_t next = bitt__schedule_advance(occurrence, s->interval_ms, now);
    *out = copy_of(s, next, occurrence);
    if (!*out)
        return BITT_ENOMEM;
    bitt__omap_remove(&be->sched_due, &s->by_due);
    s->next_run_at = next;
    bitt__mem_put_i64(s->data, next);
    bitt__omap_insert(&be->sched_due, &s->by_due);
    return BITT_OK;
}

int bitt__mem_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                           bitt_schedule **out)
{
    (void)t;
    *out = NULL;
    const sched *s = find(be, key);
    if (!s)
        return BITT_NOTFOUND;
    *out = copy_of(s, s->next_run_at, 0);
    return *out ? BITT_OK : BITT_ENOMEM;
}

int bitt__mem_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out)
{
    (void)t;
    for (bitt_omap_node *n = bitt__omap_first(&be->schedules); n; n = bitt__omap_next(n)) {
        const sched *s = BITT_MEM_OF(n, sched, by_key);
        bitt_schedule *c = copy_of(s, s->next_run_at, 0);
        int rc = c ? bitt__schedule_array_push(out, c) : BITT_ENOMEM;
        if (rc)
            return rc;
    }
    return BITT_OK;
}

int bitt__mem_schedule_delete(bitt_backend *be, const bitt_time *t, const char *key)
{
    (void)t;
    sched *s = find(be, key);
    if (!s)
        return BITT_NOTFOUND;
    bitt__omap_remove(&be->schedules, &s->by_key);
    bitt__omap_remove(&be->sched_due, &s->by_due);
    free(s);
    return BITT_OK;
}

static void free_sched(bitt_omap_node *node, void *ctx)
{
    (void)ctx;
    free(BITT_MEM_OF(node, sched, by_key));
}

void bitt__mem_schedule_free(bitt_backend *be)
{
    be->sched_due = (bitt_omap){0}; /* the same schedules, linked twice */
    bitt__omap_drain(&be->schedules, free_sched, NULL);
}
