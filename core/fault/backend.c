/* The N-th backend call fails: a wrapper around a store's backend vtable
 * that counts every call and fails the armed one with BITT_EBACKEND, so the
 * engine's handling of each backend failure is exercised (fault-injection
 * build only). */
#include <stdatomic.h>
#include <stdlib.h>

#include "fault/fault.h"

static atomic_uint_fast64_t calls_left; /* calls until the failure; 0 = off */
static atomic_int call_fired;

void bitt__fault_backend_arm(uint64_t n)
{
    atomic_store(&call_fired, 0);
    atomic_store(&calls_left, n);
}

int bitt__fault_backend_fired(void)
{
    return atomic_load(&call_fired);
}

int bitt__fault_backend_call(const char *call)
{
    uint_fast64_t left = atomic_load(&calls_left);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&calls_left, &left, left - 1)) {
            if (left != 1)
                return BITT_OK;
            atomic_store(&call_fired, 1);
            return bitt__fail(BITT_EBACKEND, "injected backend failure in %s", call);
        }
    }
    return BITT_OK;
}

/* This file's bitt_backend: the real backend and its vtable. */
struct bitt_backend {
    const bitt_backend_ops *ops;
    bitt_backend *inner;
    bitt_backend_ops wrapped; /* the vtable the store calls instead */
};

#define REAL(be) ((be)->ops)
#define INNER(be) ((be)->inner)
/* A wrapper for vtable entry `name` whose first parameter is `be`. */
#define WRAP(name, params, ...)                                                                    \
    static int w_##name params                                                                     \
    {                                                                                              \
        int rc = bitt__fault_backend_call(#name);                                                  \
        return rc ? rc : REAL(be)->name(INNER(be), __VA_ARGS__);                                   \
    }

static int w_migrate(bitt_backend *be)
{
    int rc = bitt__fault_backend_call("migrate");
    return rc ? rc : REAL(be)->migrate(INNER(be));
}

static void w_close(bitt_backend *be)
{
    REAL(be)->close(INNER(be));
    free(be);
}

typedef const bitt_time T;
WRAP(kv_get, (bitt_backend * be, T *t, const uint8_t *k, size_t n, bitt_entry **o), t, k, n, o)
WRAP(kv_get_many,
     (bitt_backend * be, T *t, const uint8_t *const *k, const size_t *n, size_t c, bitt_entries *o),
     t, k, n, c, o)
WRAP(kv_list, (bitt_backend * be, T *t, const bitt_range *r, bitt_entries *o), t, r, o)
WRAP(commit, (bitt_backend * be, bitt_commit *c), c)
WRAP(kv_purge, (bitt_backend * be, T *t, uint64_t *r), t, r)
WRAP(queue_claim,
     (bitt_backend * be, T *t, const char *topic, size_t l, int64_t ms, bitt_messages *o), t, topic,
     l, ms, o)
WRAP(queue_ack, (bitt_backend * be, T *t, const char *topic, uint64_t id, const char *tok), t,
     topic, id, tok)
WRAP(queue_nack,
     (bitt_backend * be, T *t, const char *topic, uint64_t id, const char *tok, const char *e,
      int64_t d, const bitt_backoff *b),
     t, topic, id, tok, e, d, b)
WRAP(queue_extend,
     (bitt_backend * be, T *t, const char *topic, uint64_t id, const char *tok, int64_t ms), t,
     topic, id, tok, ms)
WRAP(queue_snooze,
     (bitt_backend * be, T *t, const char *topic, uint64_t id, const char *tok, int64_t ms), t,
     topic, id, tok, ms)
WRAP(queue_claim_topics,
     (bitt_backend * be, T *t, const char *const *topics, size_t n, size_t l, int64_t ms,
      bitt_messages *o),
     t, topics, n, l, ms, o)
WRAP(queue_get, (bitt_backend * be, T *t, const char *topic, uint64_t id, bitt_message **o), t,
     topic, id, o)
WRAP(queue_purge, (bitt_backend * be, T *t, const char *topic, uint64_t *r), t, topic, r)
WRAP(schedule_set, (bitt_backend * be, T *t, const bitt_schedule_def *d, int64_t f), t, d, f)
WRAP(schedule_due, (bitt_backend * be, T *t, const char *p, bitt_schedule **o), t, p, o)
WRAP(queue_dead_list,
     (bitt_backend * be, T *t, const char *topic, uint64_t a, size_t l, bitt_messages *o), t, topic,
     a, l, o)
WRAP(queue_dead_retry, (bitt_backend * be, T *t, const char *topic, uint64_t id, uint64_t *c), t,
     topic, id, c)
WRAP(queue_dead_delete, (bitt_backend * be, T *t, const char *topic, uint64_t id, uint64_t *c), t,
     topic, id, c)
WRAP(queue_stats, (bitt_backend * be, T *t, const char *topic, bitt_queue_stats *o), t, topic, o)
WRAP(lease_acquire,
     (bitt_backend * be, T *t, const char *n, const char *w, int64_t ttl, uint64_t *e, int64_t *x),
     t, n, w, ttl, e, x)
WRAP(lease_renew,
     (bitt_backend * be, T *t, const char *n, const char *w, uint64_t e, int64_t ttl, int64_t *x),
     t, n, w, e, ttl, x)
WRAP(lease_release, (bitt_backend * be, T *t, const char *n, const char *w, uint64_t e), t, n, w, e)
WRAP(lease_get, (bitt_backend * be, T *t, const char *n, bitt_buf *w, uint64_t *e, int64_t *x), t,
     n, w, e, x)
WRAP(outbox_pending, (bitt_backend * be, T *t, const char *s, size_t l, bitt_messages *o), t, s, l,
     o)
WRAP(outbox_ack, (bitt_backend * be, T *t, const char *s, const uint64_t *q, size_t c, uint64_t *r),
     t, s, q, c, r)
WRAP(outbox_fail, (bitt_backend * be, T *t, const char *s, uint64_t q, const char *e, int64_t a), t,
     s, q, e, a)
WRAP(outbox_park, (bitt_backend * be, T *t, const char *s, uint64_t q, int why, const char *e), t,
     s, q, why, e)
WRAP(outbox_parked, (bitt_backend * be, T *t, const char *s, int why, size_t l, bitt_messages *o),
     t, s, why, l, o)
WRAP(outbox_retry,
     (bitt_backend * be, T *t, const char *s, const uint64_t *q, size_t c, uint64_t *r), t, s, q, c,
     r)
WRAP(outbox_discard,
     (bitt_backend * be, T *t, const char *s, const uint64_t *q, size_t c, uint64_t *r), t, s, q, c,
     r)
WRAP(outbox_counts, (bitt_backend * be, T *t, const char *s, uint64_t *p, uint64_t *k), t, s, p, k)
WRAP(pubsub_publish,
     (bitt_backend * be, T *t, const char *c, const uint8_t *d, size_t n, int64_t keep), t, c, d, n,
     keep)
WRAP(pubsub_head, (bitt_backend * be, T *t, uint64_t *last), t, last)
WRAP(pubsub_fetch,
     (bitt_backend * be, T *t, const char *c, uint64_t after, size_t l, bitt_messages *o), t, c,
     after, l, o)
WRAP(budget_take,
     (bitt_backend * be, T *t, const char *n, const bitt_budget_params *p, int64_t k, int64_t *w),
     t, n, p, k, w)
WRAP(schedule_get, (bitt_backend * be, T *t, const char *k, bitt_schedule **o), t, k, o)
WRAP(schedule_list, (bitt_backend * be, T *t, bitt_schedule_array *o), t, o)
WRAP(schedule_delete, (bitt_backend * be, T *t, const char *k), t, k)
WRAP(wait_remote, (bitt_backend * be, int64_t ms), ms)
WRAP(queue_ack_many,
     (bitt_backend * be, T *t, const char *topic, const uint64_t *ids, const char *const *tok,
      size_t c, int *st),
     t, topic, ids, tok, c, st)

/* An entry the real backend lacks stays NULL: the engine's fallback runs. */
#define KEEP(name) w->wrapped.name = real->name ? w_##name : NULL

int bitt__fault_wrap_backend(const bitt_backend_ops **ops, bitt_backend **be)
{
    const bitt_backend_ops *real = *ops;
    bitt_backend *w = calloc(1, sizeof *w);
    if (!w)
        return bitt__fail(BITT_ENOMEM, "fault injection: out of memory for the backend wrapper");
    w->ops = real;
    w->inner = *be;
    w->wrapped = *real;
    w->wrapped.close = w_close;
    KEEP(migrate);
    KEEP(kv_get);
    KEEP(kv_get_many);
    KEEP(kv_list);
    KEEP(commit);
    KEEP(kv_purge);
    KEEP(queue_claim);
    KEEP(queue_ack);
    KEEP(queue_nack);
    KEEP(queue_extend);
    KEEP(queue_dead_list);
    KEEP(queue_dead_retry);
    KEEP(queue_dead_delete);
    KEEP(queue_stats);
    KEEP(lease_acquire);
    KEEP(lease_renew);
    KEEP(lease_release);
    KEEP(lease_get);
    KEEP(outbox_pending);
    KEEP(outbox_ack);
    KEEP(outbox_fail);
    KEEP(outbox_park);
    KEEP(outbox_parked);
    KEEP(outbox_retry);
    KEEP(outbox_discard);
    KEEP(outbox_counts);
    KEEP(pubsub_publish);
    KEEP(pubsub_head);
    KEEP(pubsub_fetch);
    KEEP(budget_take);
    KEEP(schedule_get);
    KEEP(schedule_list);
    KEEP(schedule_delete);
    KEEP(wait_remote);
    KEEP(queue_ack_many);
    KEEP(queue_snooze);
    KEEP(queue_claim_topics);
    KEEP(queue_get);
    KEEP(queue_purge);
    KEEP(schedule_set);
    KEEP(schedule_due);
    *ops = &w->wrapped;
    *be = w;
    return BITT_OK;
}
