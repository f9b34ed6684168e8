/*
 * fence.c: leases as fencing tokens, shown once before the workers start.
 * A holder whose lease expired and was taken by someone else still believes
 * it holds it; its fenced commit is refused, and nothing it wrote lands.
 */
#include <stdio.h>
#include <string.h>

#include "jobs.h"

#define FENCE_LEASE "jobs/fence-check"
#define FENCE_KEY "jobs/fence-check"

static int fenced_write(bitt_store *store, const char *owner, uint64_t epoch)
{
    bitt_txn *txn = NULL;
    int rc = bitt_txn_begin(store, &txn);
    if (rc >= 0)
        rc = bitt_txn_fence(txn, FENCE_LEASE, owner, epoch);
    if (rc >= 0)
        rc = bitt_txn_set(txn, FENCE_KEY, strlen(FENCE_KEY), owner, strlen(owner), BITT_KIND_BYTES,
                          BITT_TTL_NONE);
    if (rc >= 0)
        rc = bitt_txn_commit(txn, NULL);
    bitt_txn_free(txn);
    return rc;
}

int jobs_fence_check(bitt_store *store, uint64_t *stale_epoch, uint64_t *new_epoch)
{
    int64_t expires = 0;
    int rc = bitt_lease_acquire(store, FENCE_LEASE, "slow-holder", 30, stale_epoch, &expires);
    if (rc != BITT_OK)
        return rc < 0 ? jobs_fail("fence check: acquire", rc) : 2;
    /* The slow holder stalls past its lease; then another takes it over. */
    int64_t until = jobs_clock_ms() + 5000;
    while ((rc = bitt_lease_acquire(store, FENCE_LEASE, "next-holder", 5000, new_epoch,
                                    &expires)) == BITT_EXISTS &&
           jobs_clock_ms() < until)
        jobs_sleep_ms(10);
    if (rc != BITT_OK)
        return rc < 0 ? jobs_fail("fence check: take over", rc) : 2;

    int stale = fenced_write(store, "slow-holder", *stale_epoch);
    bitt_entry *e = NULL;
    int found = bitt_kv_get(store, FENCE_KEY, strlen(FENCE_KEY), &e);
    bitt_entry_free(e);
    int fresh = fenced_write(store, "next-holder", *new_epoch);
    int cleanup = bitt_kv_delete(store, FENCE_KEY, strlen(FENCE_KEY));
    if (cleanup >= 0)
        cleanup = bitt_lease_release(store, FENCE_LEASE, "next-holder", *new_epoch);
    if (cleanup < 0)
        return jobs_fail("fence check: clean up", cleanup);
    if (stale != BITT_ELEASELOST || found != BITT_NOTFOUND || fresh != BITT_OK ||
        *new_epoch <= *stale_epoch) {
        fprintf(stderr,
                "jobs: VIOLATION: fencing: the stale holder's commit gave %s (want %s), its "
                "write is %s, the new holder's commit gave %s\n",
                bitt_strerror(stale), bitt_strerror(BITT_ELEASELOST),
                found == BITT_NOTFOUND ? "absent" : "there", bitt_strerror(fresh));
        return 1;
    }
    return 0;
}
