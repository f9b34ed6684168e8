/* The store handle: open from a URL, the backend registry, the clock. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#ifdef BITT_FAULT_INJECTION
#include "fault/fault.h"
#endif

/* URL schemes and the backend each one opens. */
static const struct {
    const char *scheme;
    const bitt_backend_ops *ops;
} backends[] = {
    {"memory", &bitt__memory_backend},     {"sqlite", &bitt__sqlite_backend},
#ifdef BITT_HAVE_POSTGRES
    {"postgres", &bitt__postgres_backend}, {"postgresql", &bitt__postgres_backend},
#endif
#ifdef BITT_HAVE_REDIS
    {"redis", &bitt__redis_backend},       {"unix", &bitt__redis_backend},
#endif
};

static const bitt_backend_ops *find_backend(const char *scheme)
{
    for (size_t i = 0; i < sizeof backends / sizeof *backends; i++)
        if (!strcmp(backends[i].scheme, scheme))
            return backends[i].ops;
    return NULL;
}

static const char *known_schemes(void)
{
#if defined(BITT_HAVE_POSTGRES) && defined(BITT_HAVE_REDIS)
    return "memory, sqlite, postgres, redis, unix";
#elif defined(BITT_HAVE_POSTGRES)
    return "memory, sqlite, postgres";
#elif defined(BITT_HAVE_REDIS)
    return "memory, sqlite, redis, unix";
#else
    return "memory, sqlite";
#endif
}

/* Reads the options every backend shares. */
#define DEFAULT_QUEUE_BACKOFF "exp:1000:300000"
#define DEFAULT_QUEUE_LEASE_MS 30000
#define DEFAULT_PUBSUB_RETENTION_MS 60000

/* Reads the options of the queue and pubsub modules into the store. */
static int read_module_options(bitt_url *url, bitt_store *store)
{
    const char *backoff = bitt__url_param(url, "queue_backoff");
    int rc = bitt__backoff_parse(backoff ? backoff : DEFAULT_QUEUE_BACKOFF, &store->backoff);
    if (!rc)
        rc = bitt__url_param_int(url, "queue_lease", 1, BITT_MAX_DURATION_MS,
                                 DEFAULT_QUEUE_LEASE_MS, &store->queue_lease_ms);
    if (!rc)
        rc = bitt__url_param_int(url, "pubsub_retention", 1, BITT_MAX_DURATION_MS,
                                 DEFAULT_PUBSUB_RETENTION_MS, &store->pubsub_retention_ms);
    /* 0: an acked message is deleted at once; a dead letter stays */
    if (!rc)
        rc = bitt__url_param_int(url, "queue_done_retention", 0, BITT_MAX_DURATION_MS, 0,
                                 &store->limits.queue_done_retention_ms);
    if (!rc)
        rc = bitt__url_param_int(url, "queue_dead_retention", 0, BITT_MAX_DURATION_MS, 0,
                                 &store->limits.queue_dead_retention_ms);
    return rc;
}

static int read_common_options(bitt_url *url, bitt_limits *limits, int *auto_migrate)
{
    int64_t key_max, value_max, migrate;
    int rc = bitt__url_param_int(url, "max_key_size", 1, BITT_MAX_KEY_SIZE_CAP,
                                 BITT_DEFAULT_MAX_KEY_SIZE, &key_max);
    if (!rc)
        rc = bitt__url_param_int(url, "max_value_size", 1, BITT_MAX_VALUE_SIZE_CAP,
                                 BITT_DEFAULT_MAX_VALUE_SIZE, &value_max);
    if (!rc)
        rc = bitt__url_param_int(url, "auto_migrate", 0, 1, 1, &migrate);
    if (rc)
        return rc;
    limits->max_key_size = (size_t)key_max;
    limits->max_value_size = (size_t)value_max;
    *auto_migrate = (int)migrate;
    return BITT_OK;
}

int bitt_store_open(const char *url_text, bitt_store **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "bitt_store_open: out must not be NULL");
    *out = NULL;

    bitt_url url;
    int auto_migrate = 1;
    bitt_limits limits;
    int rc = bitt__url_parse(url_text, &url);
    const bitt_backend_ops *ops = NULL;
    if (!rc && !strcmp(url.scheme, "rediss"))
        /* hiredis 0.14 has no TLS: refuse rather than talk in the clear. */
        rc = bitt__fail(BITT_EUNSUPPORTED,
                        "store URL: rediss:// (Redis over TLS) is not supported: the hiredis "
                        "0.14 client has no TLS; reach Redis over a loopback or private network, "
                        "or through a TLS tunnel such as stunnel, with redis://");
    if (!rc) {
        ops = find_backend(url.scheme);
        if (!ops)
            rc = bitt__fail(BITT_EURL, "store URL: unknown scheme '%s' (known: %s)", url.scheme,
                            known_schemes());
    }
    if (!rc)
        rc = read_common_options(&url, &limits, &auto_migrate);

    bitt_store *store = NULL;
    if (!rc) {
        store = bitt__calloc(1, sizeof *store);
        if (!store)
            rc = bitt__fail(BITT_ENOMEM, "out of memory for a store");
    }
    if (!rc) {
        store->ops = ops;
        store->limits = limits;
        if (pthread_mutex_init(&store->lock, NULL)) {
            free(store);
            store = NULL;
            rc = bitt__fail(BITT_ENOMEM, "cannot create the store mutex");
        }
    }
    if (!rc) {
        rc = read_module_options(&url, store);
#ifdef BITT_FAULT_INJECTION
        if (!rc)
            rc = bitt__fault_backend_call("open");
#endif
        if (!rc)
            rc = ops->open(&url, &store->limits, &store->be);
#ifdef BITT_FAULT_INJECTION
        if (!rc)
            rc = bitt__fault_wrap_backend(&store->ops, &store->be);
#endif
        if (!rc)
            rc = bitt__url_check_all_used(&url);
        if (!rc && !store->ops->queue_purge &&
            (store->limits.queue_done_retention_ms || store->limits.queue_dead_retention_ms))
            rc = bitt__unsupported(store, "queue retention (queue_done_retention, "
                                          "queue_dead_retention)");
        if (!rc && auto_migrate)
            rc = store->ops->migrate(store->be);
        if (rc) {
            bitt_store_close(store);
            store = NULL;
        }
    }
    bitt__url_free(&url);
    *out = store;
    return rc;
}

void bitt_store_close(bitt_store *store)
{
    if (!store)
        return;
    if (store->be)
        store->ops->close(store->be);
    pthread_mutex_destroy(&store->lock);
    free(store);
}

int bitt_store_migrate(bitt_store *store)
{
    bitt__error_reset();
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    bitt_time t;
    bitt__store_enter(store, &t);
    int rc = store->ops->migrate(store->be);
    bitt__store_leave(store);
    return rc;
}

const char *bitt_store_backend(const bitt_store *store)
{
    return store ? store->ops->name : NULL;
}

/* A concurrent backend (one that serializes what it must itself, e.g. the
 * Redis connection pool) is called without the mutex, so calls from
 * several threads are in flight at once; the clock is still read under
 * it, so a manual clock set or advanced by another thread is seen whole. */
void bitt__store_enter(bitt_store *store, bitt_time *t)
{
    pthread_mutex_lock(&store->lock);
    t->manual = store->manual_clock;
    t->now = store->manual_clock ? store->manual_now : bitt__system_now();
    if (store->ops->concurrent)
        pthread_mutex_unlock(&store->lock);
}

void bitt__store_leave(bitt_store *store)
{
    if (!store->ops->concurrent)
        pthread_mutex_unlock(&store->lock);
}

void bitt__store_lock_state(bitt_store *store)
{
    if (store->ops->concurrent)
        pthread_mutex_lock(&store->lock);
}

void bitt__store_unlock_state(bitt_store *store)
{
    if (store->ops->concurrent)
        pthread_mutex_unlock(&store->lock);
}

/* ---- the clock ---------------------------------------------------------- */

int bitt_clock_set_manual(bitt_store *store, int64_t now_ms)
{
    bitt__error_reset();
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    if (now_ms < 0)
        return bitt__fail(BITT_EINVAL, "manual clock time must be >= 0, got %lld",
                          (long long)now_ms);
    /* INT64_MAX is the end of time, where saturated times (a TTL, a lease,
     * a next run that long) lie: a clock there would see them come. */
    if (now_ms == INT64_MAX)
        return bitt__fail(BITT_EINVAL,
                          "manual clock time must be below INT64_MAX (the end of time, where "
                          "saturated times lie), got %lld",
                          (long long)now_ms);
    pthread_mutex_lock(&store->lock);
    store->manual_clock = 1;
    store->manual_now = now_ms;
    pthread_mutex_unlock(&store->lock);
    return BITT_OK;
}

int bitt_clock_advance(bitt_store *store, int64_t ms)
{
    bitt__error_reset();
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    if (ms < 0)
        return bitt__fail(BITT_EINVAL, "the clock only moves forward: advance by %lld ms",
                          (long long)ms);
    int rc = BITT_OK;
    pthread_mutex_lock(&store->lock);
    if (!store->manual_clock)
        rc = bitt__fail(BITT_EUSAGE, "no manual clock installed (bitt_clock_set_manual)");
    else if (ms >= INT64_MAX - store->manual_now)
        rc = bitt__fail(BITT_EINVAL,
                        "advancing the clock by %lld ms reaches INT64_MAX (the end of time, "
                        "where saturated times lie)",
                        (long long)ms);
    else
        store->manual_now += ms;
    pthread_mutex_unlock(&store->lock);
    return rc;
}

int bitt_clock_use_system(bitt_store *store)
{
    bitt__error_reset();
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    pthread_mutex_lock(&store->lock);
    store->manual_clock = 0;
    pthread_mutex_unlock(&store->lock);
    return BITT_OK;
}

int bitt_clock_now(bitt_store *store, int64_t *out)
{
    bitt__error_reset();
    if (!store || !out)
        return bitt__fail(BITT_EINVAL, "store and out must not be NULL");
    bitt_time t;
    bitt__store_enter(store, &t);
    bitt__store_leave(store);
    *out = t.now;
    return BITT_OK;
}

size_t bitt__store_io_slots(bitt_store *store)
{
    return store && store->ops->io_slots ? store->ops->io_slots(store->be) : 0;
}
