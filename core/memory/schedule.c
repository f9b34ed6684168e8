/*
 * core/memory/schedule.c: schedules of the memory backend (interval or
 * cron, with or without a topic).
 *
 * A schedule is one allocation in two maps: by key (get, list, delete) and
 * by (next_run_at, key), the claim order. Its bytes are the 8-byte
 * order-preserving next_run_at, the key, a NUL, the payload, then the cron
 * text and the topic (each with its NUL, when there), so both map keys
 * point into them. The engine works out occurrences: due only reads, and
 * the claim's commit moves next_run_at with BITT_OP_SCHEDULE_ADVANCE.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

typedef struct sched {
    bitt_omap_node by_key; /* in be->schedules, key = data + 8 */
    bitt_omap_node by_due; /* in be->sched_due, key = data */
    int64_t interval_ms;   /* 0 for a cron schedule */
    int64_t next_run_at;
    size_t key_len;
    size_t payload_len;
    const char *cron;  /* in data, or NULL */
    const char *topic; /* in data, or NULL */
    int kind;
    uint32_t max_attempts;
    int32_t priority;
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

static size_t text_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/* Copies text (when there) to *cursor and moves it on. */
static const char *place(uint8_t **cursor, const char *text)
{
    if (!text)
        return NULL;
    size_t n = strlen(text) + 1;
    const char *copy = memcpy(*cursor, text, n);
    *cursor += n;
    return copy;
}

static sched *sched_new(const bitt_schedule_def *def, int64_t next_run_at)
{
    size_t key_len = strlen(def->key), len = def->payload_len;
    size_t texts = text_size(def->cron) + text_size(def->topic);
    sched *s = bitt__malloc(sizeof *s + 8 + key_len + 1 + len + texts);
    if (!s) {
        bitt__fail(BITT_ENOMEM, "out of memory for schedule '%s'", def->key);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    bitt__mem_put_i64(s->data, next_run_at);
    memcpy(s->data + 8, def->key, key_len + 1);
    uint8_t *cursor = s->data + 8 + key_len + 1;
    if (len)
        memcpy(cursor, def->payload, len);
    cursor += len;
    s->cron = place(&cursor, def->cron);
    s->topic = place(&cursor, def->topic);
    s->interval_ms = def->interval_ms;
    s->next_run_at = next_run_at;
    s->key_len = key_len;
    s->payload_len = len;
    s->kind = def->kind;
    s->max_attempts = def->max_attempts;
    s->priority = def->priority;
    s->by_key.key = s->data + 8;
    s->by_key.key_len = (uint32_t)key_len;
    s->by_due.key = s->data;
    s->by_due.key_len = (uint32_t)(8 + key_len);
    return s;
}

static bitt_schedule *copy_of(const sched *s, int64_t occurrence)
{
    bitt_schedule_def def = {
        .key = key_of(s),
        .interval_ms = s->interval_ms,
        .cron = s->cron,
        .payload = payload_of(s),
        .payload_len = s->payload_len,
        .kind = s->kind,
        .topic = s->topic,
        .max_attempts = s->max_attempts,
        .priority = s->priority,
    };
    bitt_schedule *c = bitt__schedule_from_def(&def, s->next_run_at, occurrence);
    if (!c)
        bitt__fail(BITT_ENOMEM, "out of memory copying schedule '%s'", key_of(s));
    return c;
}

static int same_text(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

int bitt__mem_schedule_set(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                           int64_t first_run_at)
{
    (void)t;
    sched *old = find(be, def->key);
    /* An unchanged cadence (interval and cron text) keeps its next run. */
    int64_t next = old && old->interval_ms == def->interval_ms && same_text(old->cron, def->cron)
                       ? old->next_run_at
                       : first_run_at;
    sched *s = sched_new(def, next);
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

int bitt__mem_schedule_due(bitt_backend *be, const bitt_time *t, const char *prefix,
                           bitt_schedule **out)
{
    *out = NULL;
    const int64_t now = t->now;
    size_t plen = prefix ? strlen(prefix) : 0;
    /* The due ones come first in claim order; the first with the prefix
     * wins. */
    for (bitt_omap_node *n = bitt__omap_first(&be->sched_due); n; n = bitt__omap_next(n)) {
        const sched *s = BITT_MEM_OF(n, sched, by_due);
        if (s->next_run_at > now)
            break;
        if (s->key_len >= plen && !memcmp(key_of(s), prefix, plen)) {
            /* the occurrence carries the now it was judged due at */
            *out = copy_of(s, now);
            return *out ? BITT_OK : BITT_ENOMEM;
        }
    }
    return BITT_NOTFOUND;
}

int bitt__mem_schedule_advance_check(bitt_backend *be, const bitt_op *op)
{
    const sched *s = find(be, op->name);
    if (!s)
        return bitt__fail(BITT_ECONFLICT, "schedule '%s' is gone", op->name);
    if (s->next_run_at != op->delta)
        return bitt__fail(BITT_ECONFLICT,
                          "schedule '%s' moved on: its next run is %lld, not the occurrence %lld",
                          op->name, (long long)s->next_run_at, (long long)op->delta);
    return BITT_OK;
}

void bitt__mem_schedule_advance(bitt_backend *be, const bitt_op *op)
{
    sched *s = find(be, op->name);
    bitt__omap_remove(&be->sched_due, &s->by_due);
    s->next_run_at = op->delay_ms;
    bitt__mem_put_i64(s->data, op->delay_ms);
    bitt__omap_insert(&be->sched_due, &s->by_due);
}

int bitt__mem_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                           bitt_schedule **out)
{
    (void)t;
    *out = NULL;
    const sched *s = find(be, key);
    if (!s)
        return BITT_NOTFOUND;
    *out = copy_of(s, 0);
    return *out ? BITT_OK : BITT_ENOMEM;
}

int bitt__mem_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out)
{
    (void)t;
    for (bitt_omap_node *n = bitt__omap_first(&be->schedules); n; n = bitt__omap_next(n)) {
        const sched *s = BITT_MEM_OF(n, sched, by_key);
        bitt_schedule *c = copy_of(s, 0);
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
