/* Schedules whose occurrences are claimed once across processes: the
 * record, its accessors, and the calls but claim (core/schedule_claim.c). */
#include <stdlib.h>
#include <string.h>

#include "cron.h"
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

static size_t text_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

static char *place_text(char **cursor, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *copy = memcpy(*cursor, s, n);
    *cursor += n;
    return copy;
}

bitt_schedule *bitt__schedule_from_def(const bitt_schedule_def *def, int64_t next_run_at,
                                       int64_t occurrence)
{
    size_t texts = text_size(def->key) + text_size(def->cron) + text_size(def->topic);
    bitt_schedule *s = bitt__malloc(sizeof *s + def->payload_len + 1 + texts);
    if (!s) {
        bitt__fail(BITT_ENOMEM, "out of memory for a schedule");
        return NULL;
    }
    s->payload = (uint8_t *)(s + 1);
    if (def->payload_len)
        memcpy(s->payload, def->payload, def->payload_len);
    s->payload[def->payload_len] = '\0';
    char *cursor = (char *)s->payload + def->payload_len + 1;
    s->key = place_text(&cursor, def->key);
    s->cron = place_text(&cursor, def->cron);
    s->topic = place_text(&cursor, def->topic);
    s->payload_len = def->payload_len;
    s->interval_ms = def->interval_ms;
    s->kind = def->kind;
    s->max_attempts = def->max_attempts;
    s->priority = def->priority;
    s->next_run_at = next_run_at;
    s->occurrence = occurrence;
    s->message_id = 0;
    return s;
}

bitt_schedule *bitt__schedule_new(const char *key, int64_t interval_ms, const void *payload,
                                  size_t payload_len, int kind, int64_t next_run_at,
                                  int64_t occurrence)
{
    bitt_schedule_def def = {.key = key,
                             .interval_ms = interval_ms,
                             .payload = payload,
                             .payload_len = payload_len,
                             .kind = kind,
                             .max_attempts = BITT_MAX_ATTEMPTS_DEFAULT};
    return bitt__schedule_from_def(&def, next_run_at, occurrence);
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

const char *bitt_schedule_cron(const bitt_schedule *s)
{
    return s ? s->cron : NULL;
}

const char *bitt_schedule_topic(const bitt_schedule *s)
{
    return s ? s->topic : NULL;
}

uint64_t bitt_schedule_message_id(const bitt_schedule *s)
{
    return s ? s->message_id : 0;
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

int bitt__check_schedules(const bitt_store *store)
{
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    /* schedule_set and schedule_due together: the engine claims (ops 7) */
    if (!store->ops->schedule_set || !store->ops->schedule_due)
        return bitt__unsupported(store, "schedules");
    return BITT_OK;
}

int bitt_schedule_options_init(bitt_schedule_options *opts, unsigned int version)
{
    bitt__error_reset();
    if (!opts || version != BITT_SCHEDULE_OPTIONS_VERSION)
        return bitt__fail(BITT_EINVAL,
                          "bitt_schedule_options_init: opts NULL or version %u is not %d", version,
                          BITT_SCHEDULE_OPTIONS_VERSION);
    *opts = (bitt_schedule_options)BITT_SCHEDULE_OPTIONS_INIT;
    return BITT_OK;
}

/* Checks key, the cadence and the topic's fields into *def; the first run
 * of a new schedule (or a new cadence) into *first. */
static int resolve_def(const bitt_store *store, const bitt_schedule_options *o, int64_t now,
                       bitt_schedule_def *def, int64_t *first)
{
    int rc = bitt__check_name(def->key, "schedule key");
    if (!rc && !o->cron)
        rc = bitt__check_duration(def->interval_ms, 1, "schedule interval");
    if (!rc && o->cron && def->interval_ms)
        rc = bitt__fail(BITT_EINVAL,
                        "schedule interval must be 0 with a cron expression, got %lld ms",
                        (long long)def->interval_ms);
    bitt_cron cron;
    if (!rc && o->cron)
        rc = bitt__cron_parse(o->cron, &cron);
    if (!rc)
        rc = bitt__check_value(store, def->kind, def->payload, def->payload_len);
    if (!rc && o->first_run_at < 0)
        rc = bitt__fail(BITT_EINVAL, "first_run_at must be >= 0 (0 = the first occurrence "
                                     "after now)");
    if (!rc && o->topic)
        rc = bitt__check_name(o->topic, "schedule topic");
    /* each occurrence's message holds the dedup key "<key>@<ms>" */
    if (!rc && o->topic && strlen(def->key) + 21 > store->limits.max_key_size)
        rc = bitt__fail(BITT_ETOOLARGE,
                        "schedule key of %zu bytes leaves no room for an occurrence's dedup key "
                        "under the key limit of %zu bytes",
                        strlen(def->key), store->limits.max_key_size);
    if (rc)
        return rc;
    def->cron = o->cron;
    def->topic = o->topic;
    def->max_attempts = o->max_attempts ? o->max_attempts : BITT_MAX_ATTEMPTS_DEFAULT;
    def->priority = o->priority;
    *first = o->first_run_at ? o->first_run_at
             : o->cron       ? bitt__cron_next(&cron, now)
                             : bitt__time_add(now, def->interval_ms);
    return BITT_OK;
}

int bitt_schedule_set(bitt_store *store, const char *key, int64_t interval_ms, const void *payload,
                      size_t payload_len, int kind, const bitt_schedule_options *opts)
{
    bitt__error_reset();
    int rc = bitt__check_schedules(store);
    if (rc)
        return rc;
    bitt_schedule_options o = BITT_SCHEDULE_OPTIONS_INIT;
    if (opts && opts->version != BITT_SCHEDULE_OPTIONS_VERSION)
        return bitt__fail(BITT_EINVAL,
                          "unknown bitt_schedule_options version %u (this library: %d)",
                          opts->version, BITT_SCHEDULE_OPTIONS_VERSION);
    if (opts)
        o = *opts;
    bitt_schedule_def def = {.key = key,
                             .interval_ms = interval_ms,
                             .payload = payload,
                             .payload_len = payload_len,
                             .kind = kind};
    bitt_time t;
    bitt__store_enter(store, &t);
    int64_t first = 0;
    rc = resolve_def(store, &o, t.now, &def, &first);
    if (!rc)
        rc = store->ops->schedule_set(store->be, &t, &def, first);
    bitt__store_leave(store);
    return rc;
}

int bitt_schedule_upsert(bitt_store *store, const char *key, int64_t interval_ms,
                         const void *payload, size_t payload_len, int kind, int64_t first_run_at)
{
    bitt_schedule_options o = BITT_SCHEDULE_OPTIONS_INIT;
    o.first_run_at = first_run_at;
    return bitt_schedule_set(store, key, interval_ms, payload, payload_len, kind, &o);
}

int bitt_schedule_get(bitt_store *store, const char *key, bitt_schedule **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    int rc = bitt__check_schedules(store);
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
    int rc = bitt__check_schedules(store);
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
    int rc = bitt__check_schedules(store);
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
