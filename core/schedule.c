/* Interval schedules whose occurrences are claimed once across processes. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int64_t bitt__schedule_advance(int64_t next_run_at, int64_t interval_ms, int64_t now)
{
    if (next_run_at > now)
        return next_run_at;
    /* Skip every missed occurrence: k = (now - next) / interval + 1. A
     * product past int64 is past every time: it saturates like the sum. */
    int64_t k = (now - next_run_at) / interval_ms + 1;
    if (k > INT64_MAX / interval_ms)
        return INT64_MAX;
    return bitt__time_add(next_run_at, k * interval_ms);
}

bitt_schedule *bitt__schedule_new(const char *key, int64_t interval_ms, const void *payload,
                                  size_t payload_len, int kind, int64_t next_run_at,
                                  int64_t occurrence)
{
    size_t key_size = strlen(key) + 1;
    bitt_schedule *s = bitt__malloc(sizeof *s + key_size + payload_len + 1);
    if (!s) {
        bitt__fail(BITT_ENOMEM, "out of memory for a schedule");
        return NULL;
    }
    s->key = (char *)(s + 1);
    memcpy(s->key, key, key_size);
    s->payload = (uint8_t *)s->key + key_size;
    if (payload_len)
        memcpy(s->payload, payload, payload_len);
    s->payload[payload_len] = '\0';
    s->payload_len = payload_len;
    s->interval_ms = interval_ms;
    s->kind = kind;
    s->next_run_at = next_run_at;
    s->occurrence = occurrence;
    return s;
}

int bitt__schedule_array_push(bitt_schedule_array *a, bitt_schedule *s)
{
    if (a->count == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        bitt_schedule **items = bitt__realloc(a->items, cap * sizeof *items);
        if (!items) {
            free(s);
            return bitt__fail(BITT_ENOMEM, "out of memory growing a schedule list");
        }
        a->items = items;
        a->cap = cap;
    }
    a->items[a->count++] = s;
    return BITT_OK;
}

const char *bitt_schedule_key(const bitt_schedule *s)
{
    return s ? s->key : NULL;
}

int64_t bitt_schedule_interval(const bitt_schedule *s)
{
    return s ? s->interval_ms : 0;
}

const uint8_t *bitt_schedule_payload(const bitt_schedule *s, size_t *len)
{
    if (len)
        *len = s ? s->payload_len : 0;
    return s ? s->payload : NULL;
}

int bitt_schedule_kind(const bitt_schedule *s)
{
    return s ? s->kind : -1;
}

int64_t bitt_schedule_next_run_at(const bitt_schedule *s)
{
    return s ? s->next_run_at : 0;
}

int64_t bitt_schedule_occurrence(const bitt_schedule *s)
{
    return s ? s->occurrence : 0;
}

void bitt_schedule_free(bitt_schedule *s)
{
    free(s);
}

void bitt_schedule_list_free(bitt_schedule **list, size_t count)
{
    if (!list)
        return;
    for (size_t i = 0; i < count; i++)
        free(list[i]);
    free(list);
}

static int check_schedules(const bitt_store *store)
{
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    if (!store->ops->schedule_upsert)
        return bitt__unsupported(store, "schedules");
    return BITT_OK;
}

int bitt_schedule_upsert(bitt_store *store, const char *key, int64_t interval_ms,
                         const void *payload, size_t payload_len, int kind, int64_t first_run_at)
{
    bitt__error_reset();
    int rc = check_schedules(store);
    if (!rc)
        rc = bitt__check_name(key, "schedule key");
    if (!rc)
        rc = bitt__check_duration(interval_ms, 1, "schedule interval");
    if (!rc)
        rc = bitt__check_value(store, kind, payload, payload_len);
    if (!rc && first_run_at < 0)
        rc = bitt__fail(BITT_EINVAL, "first_run_at must be >= 0 (0 = now + interval)");
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    int64_t first = first_run_at ? first_run_at : bitt__time_add(t.now, interval_ms);
    rc = store->ops->schedule_upsert(store->be, &t, key, interval_ms, payload, payload_len, kind,
                                     first);
    bitt__store_leave(store);
    return rc;
}

int bitt_schedule_claim(bitt_store *store, const char *prefix, bitt_schedule **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    int rc = check_schedules(store);
    if (!rc && prefix && *prefix)
        rc = bitt__check_name(prefix, "schedule key prefix");
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->schedule_claim(store->be, &t, prefix ? prefix : "", out);
    bitt__store_leave(store);
    return rc;
}

int bitt_schedule_get(bitt_store *store, const char *key, bitt_schedule **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    int rc = check_schedules(store);
    if (!rc)
        rc = bitt__check_name(key, "schedule key");
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->schedule_get(store->be, &t, key, out);
    bitt__store_leave(store);
    return rc;
}

int bitt_schedule_list(bitt_store *store, bitt_schedule ***out, size_t *count_out)
{
    bitt__error_reset();
    if (!out || !count_out)
        return bitt__fail(BITT_EINVAL, "out and count_out must not be NULL");
    *out = NULL;
    *count_out = 0;
    int rc = check_schedules(store);
    if (rc)
        return rc;
    bitt_schedule_array a = {0};
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->schedule_list(store->be, &t, &a);
    bitt__store_leave(store);
    if (rc) {
        bitt_schedule_list_free(a.items, a.count);
        return rc;
    }
    *out = a.items;
    *count_out = a.count;
    return BITT_OK;
}

int bitt_schedule_delete(bitt_store *store, const char *key)
{
    bitt__error_reset();
    int rc = check_schedules(store);
    if (!rc)
        rc = bitt__check_name(key, "schedule key");
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->schedule_delete(store->be, &t, key);
    bitt__store_leave(store);
    return rc;
}
