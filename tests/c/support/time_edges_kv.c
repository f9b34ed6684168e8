/*
 * tests/c/support/time_edges_kv.c: the time edges of the KV (TTLs), leases
 * and budgets (time_edges.h).
 */
#include <stdio.h>
#include <string.h>

#include "time_edges.h"

/* KV TTLs are not capped like the other durations: anything >= 0 goes. */
static const int64_t ttls[] = {0, 1, 10, TE_DMAX, TE_MAX / 2, TE_MAX - 10, TE_MAX - 1, TE_MAX, -1};
#define TTL_MAX_INDEX 7
#define NTTLS (sizeof ttls / sizeof *ttls)

/* Reads key at clock `at`: live or not, and then with expiry want. */
static void get_at(te_run *r, bitt_store *s, const char *key, int64_t at, int live, int64_t want)
{
    char call[160];
    snprintf(call, sizeof call, "kv.get %s at %lld", key, (long long)at);
    te_at(r, s, at);
    bitt_entry *e = NULL;
    if (te_status(r, call, bitt_kv_get(s, key, strlen(key), &e), live ? BITT_OK : BITT_NOTFOUND) &&
        e) {
        int64_t x = bitt_entry_expires_at(e);
        te_note(r, "  expires_at %lld", (long long)x);
        if (x != want)
            te_bad(r, "%s: expires_at %lld, expected %lld", call, (long long)x, (long long)want);
    }
    bitt_entry_free(e);
}

/* The key written at now expires at want (0 = never): it is there until
 * want and gone from it; a saturated expiry is never reached, so the key
 * is still there at MAX-1. The clock is left at now. */
static void expiry(te_run *r, bitt_store *s, const char *key, int64_t now, int64_t want)
{
    get_at(r, s, key, now, 1, want);
    if (want) {
        get_at(r, s, key, want - 1, 1, want);
        if (want < TE_MAX)
            get_at(r, s, key, want, 0, 0);
    }
    get_at(r, s, key, TE_MAX - 1, !want || want == TE_MAX, want);
    te_at(r, s, now);
}

static int txn_set_sum(bitt_store *s, const char *key, int64_t ttl, int sum)
{
    bitt_txn *t = NULL;
    int rc = bitt_txn_begin(s, &t);
    size_t len = strlen(key);
    if (!rc)
        rc = sum ? bitt_txn_sum(t, key, len, 1)
                 : bitt_txn_set(t, key, len, "5", 1, BITT_KIND_COUNTER, ttl);
    if (!rc)
        rc = bitt_txn_commit(t, NULL);
    bitt_txn_free(t);
    return rc;
}

/* One write of each kind with ttl at now. */
static void writes(te_run *r, bitt_store *s, size_t i, size_t j)
{
    const int64_t now = te_times[i], ttl = ttls[j];
    const int want_rc = ttl < 0 ? BITT_EINVAL : BITT_OK;
    const int64_t want = ttl > 0 ? te_sum(now, ttl) : 0;
    static const char *const calls[] = {"kv.set", "kv.add", "kv.increment", "txn.set"};
    for (int c = 0; c < 4; c++) {
        char key[64], call[200];
        snprintf(key, sizeof key, "%s/%zu/%zu", calls[c], i, j);
        snprintf(call, sizeof call, "%s %s now %lld ttl %lld", calls[c], key, (long long)now,
                 (long long)ttl);
        te_at(r, s, now);
        size_t len = strlen(key);
        int64_t v = 0;
        int rc = c == 0   ? bitt_kv_set(s, key, len, "v", 1, BITT_KIND_BYTES, ttl, NULL)
                 : c == 1 ? bitt_kv_add(s, key, len, "v", 1, BITT_KIND_BYTES, ttl, NULL)
                 : c == 2 ? bitt_kv_increment(s, key, len, 1, ttl, &v, NULL)
                          : txn_set_sum(s, key, ttl, 0);
        if (!te_status(r, call, rc, want_rc) || want_rc)
            continue;
        /* A live counter keeps its TTL through an increment or a sum. */
        if (c == 2)
            te_status(r, "  kv.increment again", bitt_kv_increment(s, key, len, 1, 1, &v, NULL),
                      BITT_OK);
        if (c == 3)
            te_status(r, "  txn.sum", txn_set_sum(s, key, 0, 1), BITT_OK);
        expiry(r, s, key, now, want);
    }
}

void te_kv(te_run *r)
{
    bitt_store *s = te_store(r, "");
    if (!s)
        return;
    for (size_t i = 0; i < te_ntimes; i++)
        for (size_t j = 0; j < NTTLS; j++)
            writes(r, s, i, j);
    /* A purge at the last clock value keeps what never expires. */
    te_at(r, s, TE_MAX - 1);
    uint64_t removed = 0;
    te_status(r, "kv.purge at MAX-1", bitt_kv_purge_expired(s, &removed), BITT_OK);
    for (size_t i = 0; i < te_ntimes; i++) {
        char key[64];
        snprintf(key, sizeof key, "kv.set/%zu/%d", i, TTL_MAX_INDEX);
        get_at(r, s, key, TE_MAX - 1, 1, TE_MAX);
    }
}

/* ---- leases ----------------------------------------------------------------------- */

static void lease_get_at(te_run *r, bitt_store *s, const char *name, int64_t at, int live,
                         int64_t want)
{
    char call[160];
    snprintf(call, sizeof call, "lease.get %s at %lld", name, (long long)at);
    te_at(r, s, at);
    int64_t x = 0;
    if (te_status(r, call, bitt_lease_get(s, name, NULL, NULL, &x),
                  live ? BITT_OK : BITT_NOTFOUND) &&
        live) {
        te_note(r, "  expires_at %lld", (long long)x);
        if (x != want)
            te_bad(r, "%s: expires_at %lld, expected %lld", call, (long long)x, (long long)want);
    }
}

static void acquired(te_run *r, const char *call, uint64_t epoch, uint64_t want_epoch, int64_t x,
                     int64_t want)
{
    te_note(r, "  epoch %llu expires_at %lld", (unsigned long long)epoch, (long long)x);
    if (epoch != want_epoch || x != want)
        te_bad(r, "%s: epoch %llu expires_at %lld, expected %llu and %lld", call,
               (unsigned long long)epoch, (long long)x, (unsigned long long)want_epoch,
               (long long)want);
}

static void lease_at(te_run *r, bitt_store *s, size_t i, size_t j)
{
    const int64_t now = te_times[i], ttl = te_durations[j];
    const int valid = ttl >= 1 && ttl <= TE_DMAX;
    char name[64], call[200];
    snprintf(name, sizeof name, "l/%zu/%zu", i, j);
    snprintf(call, sizeof call, "lease.acquire %s now %lld ttl %lld", name, (long long)now,
             (long long)ttl);
    te_at(r, s, now);
    uint64_t epoch = 0;
    int64_t x = 0;
    if (!te_status(r, call, bitt_lease_acquire(s, name, "o", ttl, &epoch, &x),
                   valid ? BITT_OK : BITT_EINVAL) ||
        !valid)
        return;
    const int64_t want = te_sum(now, ttl);
    acquired(r, call, epoch, 1, x, want);
    if (te_status(r, "  lease.renew", bitt_lease_renew(s, name, "o", 1, ttl, &x), BITT_OK))
        acquired(r, "lease.renew", 1, 1, x, want);
    lease_get_at(r, s, name, want - 1, 1, want);
    lease_get_at(r, s, name, TE_MAX - 1, want == TE_MAX, want);
    if (want == TE_MAX)
        return;
    lease_get_at(r, s, name, want, 0, 0);
    snprintf(call, sizeof call, "lease.acquire %s again at %lld", name, (long long)want);
    if (te_status(r, call, bitt_lease_acquire(s, name, "p", ttl, &epoch, &x), BITT_OK))
        acquired(r, call, epoch, 2, x, te_sum(want, ttl));
}

void te_lease(te_run *r)
{
    bitt_store *s = te_store(r, "");
    for (size_t i = 0; s && i < te_ntimes; i++)
        for (size_t j = 0; j < te_ndurations; j++)
            lease_at(r, s, i, j);
}

/* ---- budgets ---------------------------------------------------------------------- */

#define P31 INT64_C(0x7fffffff)

static void take(te_run *r, bitt_store *s, const char *name, const int64_t *p, int64_t at,
                 int64_t n, int want_rc, int64_t want_wait)
{
    char call[200];
    snprintf(call, sizeof call, "budget.take %s (%lld, %lld, %lld) n %lld at %lld", name,
             (long long)p[0], (long long)p[1], (long long)p[2], (long long)n, (long long)at);
    te_at(r, s, at);
    int64_t wait = -1;
    int rc = bitt_budget_take(s, name, p[0], p[1], p[2], n, &wait);
    te_note(r, "%s -> %d wait %lld", call, rc, (long long)wait);
    if (want_rc >= 0 && (rc != want_rc || wait != want_wait))
        te_bad(r, "%s: status %d wait %lld, expected %d wait %lld (%s)", call, rc, (long long)wait,
               want_rc, (long long)want_wait, rc < 0 ? bitt_error_last() : "");
}

/* A bucket emptied at now, then taken from at MAX-1 (a refill over up
 * to 2^63 ms) and at 0 (the clock went back: no refill). */
static void bucket(te_run *r, bitt_store *s, size_t i, size_t k, const int64_t *p)
{
    const int64_t now = te_times[i], cap = p[0], refill = p[1], period = p[2];
    char name[64];
    snprintf(name, sizeof name, "b/%zu/%zu", i, k);
    take(r, s, name, p, now, cap, BITT_OK, 0);
    take(r, s, name, p, now, 1, BITT_DENIED, (period + refill - 1) / refill);
    /* Full again when elapsed * refill reaches cap * period (< 2^62). */
    const int64_t elapsed = TE_MAX - 1 - now, full = cap * period;
    if (elapsed >= (full + refill - 1) / refill)
        take(r, s, name, p, TE_MAX - 1, cap, BITT_OK, 0);
    else
        take(r, s, name, p, TE_MAX - 1, cap, BITT_DENIED,
             (full - elapsed * refill + refill - 1) / refill);
    take(r, s, name, p, 0, 1, -1, 0);
}

void te_budget(te_run *r)
{
    static const int64_t params[][3] = {{1, 1, 1},   {P31, P31, P31}, {P31, 1, P31},
                                        {1, P31, 1}, {P31, 1, 1},     {1, 1, P31}};
    bitt_store *s = te_store(r, "");
    for (size_t i = 0; s && i < te_ntimes; i++)
        for (size_t k = 0; k < sizeof params / sizeof *params; k++)
            bucket(r, s, i, k, params[k]);
}
