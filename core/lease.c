/* Leases: named locks with an owner, an expiry and a fencing epoch. */
#include "internal.h"

static int check_lease(const bitt_store *store, const char *name, const char *owner)
{
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    int rc = bitt__check_name(name, "lease name");
    if (!rc && owner)
        rc = bitt__check_name(owner, "lease owner");
    if (!rc && !store->ops->lease_acquire)
        rc = bitt__unsupported(store, "leases");
    return rc;
}

int bitt_lease_acquire(bitt_store *store, const char *name, const char *owner, int64_t ttl_ms,
                       uint64_t *epoch_out, int64_t *expires_at_out)
{
    bitt__error_reset();
    int rc = check_lease(store, name, owner ? owner : "");
    if (!rc)
        rc = bitt__check_duration(ttl_ms, 1, "lease ttl");
    if (rc)
        return rc;
    uint64_t epoch = 0;
    int64_t expires_at = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->lease_acquire(store->be, &t, name, owner, ttl_ms, &epoch, &expires_at);
    bitt__store_leave(store);
    if (rc == BITT_OK) {
        if (epoch_out)
            *epoch_out = epoch;
        if (expires_at_out)
            *expires_at_out = expires_at;
    }
    return rc;
}

int bitt_lease_renew(bitt_store *store, const char *name, const char *owner, uint64_t epoch,
                     int64_t ttl_ms, int64_t *expires_at_out)
{
    bitt__error_reset();
    int rc = check_lease(store, name, owner ? owner : "");
    if (!rc)
        rc = bitt__check_duration(ttl_ms, 1, "lease ttl");
    if (rc)
        return rc;
    int64_t expires_at = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->lease_renew(store->be, &t, name, owner, epoch, ttl_ms, &expires_at);
    bitt__store_leave(store);
    if (rc == BITT_OK && expires_at_out)
        *expires_at_out = expires_at;
    return rc;
}

int bitt_lease_release(bitt_store *store, const char *name, const char *owner, uint64_t epoch)
{
    bitt__error_reset();
    int rc = check_lease(store, name, owner ? owner : "");
    if (rc)
        return rc;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->lease_release(store->be, &t, name, owner, epoch);
    bitt__store_leave(store);
    return rc;
}

int bitt_lease_get(bitt_store *store, const char *name, bitt_buf *owner_out, uint64_t *epoch_out,
                   int64_t *expires_at_out)
{
    bitt__error_reset();
    int rc = check_lease(store, name, NULL);
    if (rc)
        return rc;
    bitt_buf owner = BITT_BUF_INIT;
    uint64_t epoch = 0;
    int64_t expires_at = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->lease_get(store->be, &t, name, &owner, &epoch, &expires_at);
    bitt__store_leave(store);
    if (rc == BITT_OK) {
        if (owner_out) {
            bitt_buf_dispose(owner_out);
            *owner_out = owner;
            owner = (bitt_buf)BITT_BUF_INIT;
        }
        if (epoch_out)
            *epoch_out = epoch;
        if (expires_at_out)
            *expires_at_out = expires_at;
    }
    bitt_buf_dispose(&owner);
    return rc;
}
