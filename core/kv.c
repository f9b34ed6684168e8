/*
 * The KV module's rules: argument checks and limits, applied before any
 * backend is called, and the mapping of every single-key write onto one
 * atomic commit, so each backend implements one write path.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PURGE_INTERVAL_MS 60000

int bitt__check_key(const bitt_store *store, const void *key, size_t len)
{
    if (!key && len)
        return bitt__fail(BITT_EINVAL, "key is NULL with length %zu", len);
    if (len > store->limits.max_key_size)
        return bitt__fail(BITT_ETOOLARGE, "key of %zu bytes is over the limit of %zu bytes", len,
                          store->limits.max_key_size);
    return BITT_OK;
}

int bitt__check_value(const bitt_store *store, int kind, const void *value, size_t len)
{
    if (!value && len)
        return bitt__fail(BITT_EINVAL, "value is NULL with length %zu", len);
    if (len > store->limits.max_value_size)
        return bitt__fail(BITT_ETOOLARGE, "value of %zu bytes is over the limit of %zu bytes", len,
                          store->limits.max_value_size);
    return bitt__value_check(kind, value, len);
}

int bitt__check_ttl(int64_t ttl_ms)
{
    if (ttl_ms < 0)
        return bitt__fail(BITT_EINVAL, "ttl must be >= 0 ms (0 = no expiry), got %lld",
                          (long long)ttl_ms);
    return BITT_OK;
}

int bitt__run_commit(bitt_store *store, bitt_op *ops, size_t count, uint64_t *version_out)
{
    bitt_commit c = {.ops = ops, .count = count, .backoff = &store->backoff};
    bitt__store_enter(store, &c.time);
    int rc = store->ops->commit(store->be, &c);
    int sweep = 0;
    if (rc == BITT_OK && store->ops->kv_purge) {
        /* An occasional sweep keeps expired rows from piling up where
         * nothing reads them; the write already succeeded, so a failed sweep
         * is only retried later. One thread claims each sweep. */
        bitt__store_lock_state(store);
        sweep = c.time.now >= store->next_purge;
        if (sweep)
            store->next_purge = bitt__time_add(c.time.now, PURGE_INTERVAL_MS);
        bitt__store_unlock_state(store);
    }
    if (sweep) {
        uint64_t removed;
        store->ops->kv_purge(store->be, &c.time, &removed);
        /* and what outlived its queue retention, on every topic */
        if (store->ops->queue_purge &&
            (store->limits.queue_done_retention_ms || store->limits.queue_dead_retention_ms))
            store->ops->queue_purge(store->be, &c.time, NULL, &removed);
        bitt__error_reset();
    }
    bitt__store_leave(store);
    if (rc)
        return rc;
    for (size_t i = 0; i < count; i++) {
        if (bitt__op_makes_claimable(&ops[i])) {
            bitt__notify_all(); /* wake this process's waiting consumers */
            break;
        }
    }
    if (version_out)
        *version_out = c.version;
    return BITT_OK;
}

static int check_store(const bitt_store *store)
{
    return store ? BITT_OK : bitt__fail(BITT_EINVAL, "store must not be NULL");
}

int bitt_kv_get(bitt_store *store, const void *key, size_t key_len, bitt_entry **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    int rc = check_store(store);
    if (!rc)
        rc = bitt__check_key(store, key, key_len);
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->kv_get(store->be, &t, key, key_len, out);
    bitt__store_leave(store);
    return rc;
}

int bitt_kv_get_many(bitt_store *store, const void *const *keys, const size_t *key_lens,
                     size_t count, bitt_entries **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    int rc = check_store(store);
    if (rc)
        return rc;
    if (count > BITT_GET_MANY_MAX)
        return bitt__fail(BITT_ETOOLARGE, "get_many of %zu keys is over the limit of %d", count,
                          BITT_GET_MANY_MAX);
    if (count && (!keys || !key_lens))
        return bitt__fail(BITT_EINVAL, "keys and key_lens must not be NULL");
    for (size_t i = 0; i < count; i++) {
        rc = bitt__check_key(store, keys[i], key_lens[i]);
        if (rc)
            return rc;
    }
    bitt_entries *list = bitt__entries_new(count);
    if (!list)
        return BITT_ENOMEM;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc =
        store->ops->kv_get_many(store->be, &t, (const uint8_t *const *)keys, key_lens, count, list);
    bitt__store_leave(store);
    if (rc) {
        bitt_entries_free(list);
        return rc;
    }
    *out = list;
    return BITT_OK;
}

static int write_args(bitt_store *store, const void *key, size_t key_len, const void *value,
                      size_t value_len, int kind, int64_t ttl_ms)
{
    int rc = check_store(store);
    if (!rc)
        rc = bitt__check_key(store, key, key_len);
    if (!rc)
        rc = bitt__check_value(store, kind, value, value_len);
    if (!rc)
        rc = bitt__check_ttl(ttl_ms);
    return rc;
}

static bitt_op set_op(const void *key, size_t key_len, const void *value, size_t value_len,
                      int kind, int64_t ttl_ms)
{
    return (bitt_op){.type = BITT_OP_SET,
                     .key = key,
                     .key_len = key_len,
                     .value = value,
                     .value_len = value_len,
                     .kind = kind,
                     .ttl_ms = ttl_ms};
}

int bitt_kv_set(bitt_store *store, const void *key, size_t key_len, const void *value,
                size_t value_len, int kind, int64_t ttl_ms, uint64_t *version_out)
{
    bitt__error_reset();
    int rc = write_args(store, key, key_len, value, value_len, kind, ttl_ms);
    if (rc)
        return rc;
    bitt_op op = set_op(key, key_len, value, value_len, kind, ttl_ms);
    return bitt__run_commit(store, &op, 1, version_out);
}

int bitt_kv_add(bitt_store *store, const void *key, size_t key_len, const void *value,
                size_t value_len, int kind, int64_t ttl_ms, uint64_t *version_out)
{
    bitt__error_reset();
    int rc = write_args(store, key, key_len, value, value_len, kind, ttl_ms);
    if (rc)
        return rc;
    bitt_op ops[2] = {
        {.type = BITT_OP_CHECK, .key = key, .key_len = key_len, .version = 0},
        set_op(key, key_len, value, value_len, kind, ttl_ms),
    };
    rc = bitt__run_commit(store, ops, 2, version_out);
    if (rc == BITT_ECONFLICT) {
        bitt__error_reset();
        return BITT_EXISTS;
    }
    return rc;
}

/* delete and take: one DELETE op; take asks for the removed entry. */
static int remove_key(bitt_store *store, const void *key, size_t key_len, bitt_entry **old)
{
    int rc = check_store(store);
    if (!rc)
        rc = bitt__check_key(store, key, key_len);
    if (rc)
        return rc;
    bitt_op op = {.type = BITT_OP_DELETE, .key = key, .key_len = key_len, .want_old = old != NULL};
    rc = bitt__run_commit(store, &op, 1, NULL);
    if (rc)
        return rc;
    if (old)
        *old = op.old;
    return op.found ? BITT_OK : BITT_NOTFOUND;
}

int bitt_kv_delete(bitt_store *store, const void *key, size_t key_len)
{
    bitt__error_reset();
    return remove_key(store, key, key_len, NULL);
}

int bitt_kv_take(bitt_store *store, const void *key, size_t key_len, bitt_entry **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    return remove_key(store, key, key_len, out);
}

int bitt_kv_increment(bitt_store *store, const void *key, size_t key_len, int64_t delta,
                      int64_t ttl_ms, int64_t *value_out, uint64_t *version_out)
{
    bitt__error_reset();
    int rc = check_store(store);
    if (!rc)
        rc = bitt__check_key(store, key, key_len);
    if (!rc)
        rc = bitt__check_ttl(ttl_ms);
    if (rc)
        return rc;
    bitt_op op = {
        .type = BITT_OP_SUM, .key = key, .key_len = key_len, .delta = delta, .ttl_ms = ttl_ms};
    rc = bitt__run_commit(store, &op, 1, version_out);
    if (!rc && value_out)
        *value_out = op.result;
    return rc;
}

int bitt_kv_purge_expired(bitt_store *store, uint64_t *removed_out)
{
    bitt__error_reset();
    int rc = check_store(store);
    if (rc)
        return rc;
    uint64_t removed = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->kv_purge(store->be, &t, &removed);
    bitt__store_leave(store);
    if (!rc && removed_out)
        *removed_out = removed;
    return rc;
}
