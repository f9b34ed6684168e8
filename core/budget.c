/*
 * Budgets: a token bucket in integer arithmetic. The level is kept in units
 * of 1/period_ms token, so a refill of `refill` tokens per period adds
 * exactly `refill` units per ms and nothing is ever rounded; every backend
 * stores the state and calls this one function.
 */
#include "internal.h"

#define PARAM_MAX ((int64_t)0x7fffffff)

/* Re-expresses a level kept in units of another period (a caller changed
 * period_ms); whole units only, never more than was there. */
static int64_t rescale(int64_t level, int64_t from_period, int64_t to_period)
{
    if (from_period == to_period || from_period <= 0)
        return level;
    int64_t tokens = level / from_period, rest = level % from_period;
    return tokens * to_period + rest * to_period / from_period;
}

int bitt__budget_apply(bitt_budget_state *s, const bitt_budget_params *p, int64_t now, int64_t n,
                       int64_t *wait_ms)
{
    int64_t full = p->capacity * p->period_ms; /* both < 2^31: no overflow */
    if (!s->exists) {
        s->exists = 1;
        s->level = full;
        s->updated_at = now;
    } else {
        s->level = rescale(s->level, s->period_ms, p->period_ms);
        if (s->level > full)
            s->level = full;
        if (s->level < 0)
            s->level = 0;
        if (now > s->updated_at) {
            int64_t missing = full - s->level;
            int64_t elapsed = now - s->updated_at;
            /* elapsed * refill only when it cannot pass `missing`. */
            if (elapsed >= (missing + p->refill - 1) / p->refill)
                s->level = full;
            else
                s->level += elapsed * p->refill;
            s->updated_at = now;
        }
    }
    s->period_ms = p->period_ms;
    int64_t need = n * p->period_ms;
    if (s->level >= need) {
        s->level -= need;
        *wait_ms = 0;
        return BITT_OK;
    }
    *wait_ms = (need - s->level + p->refill - 1) / p->refill;
    return BITT_DENIED;
}

int bitt_budget_take(bitt_store *store, const char *name, int64_t capacity, int64_t refill,
                     int64_t period_ms, int64_t n, int64_t *wait_ms_out)
{
    bitt__error_reset();
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    int rc = bitt__check_name(name, "budget name");
    if (rc)
        return rc;
    if (capacity < 1 || capacity > PARAM_MAX || refill < 1 || refill > PARAM_MAX || period_ms < 1 ||
        period_ms > PARAM_MAX)
        return bitt__fail(BITT_EINVAL, "budget capacity, refill and period_ms must be in "
                                       "[1, 2^31-1]");
    if (n < 1 || n > capacity)
        return bitt__fail(BITT_EINVAL,
                          "budget take of %lld tokens: n must be in [1, capacity "
                          "%lld]",
                          (long long)n, (long long)capacity);
    if (!store->ops->budget_take)
        return bitt__unsupported(store, "budgets");
    bitt_budget_params p = {.capacity = capacity, .refill = refill, .period_ms = period_ms};
    int64_t wait = 0;
    bitt_time t;
    bitt__store_enter(store, &t);
    rc = store->ops->budget_take(store->be, &t, name, &p, n, &wait);
    bitt__store_leave(store);
    if (wait_ms_out)
        *wait_ms_out = rc == BITT_DENIED ? wait : 0;
    return rc;
}
