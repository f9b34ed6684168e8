/*
 * core/redis/backend.c: the Redis backend's vtable, open, close and
 * migrate.
 *
 * Open connects at once (so a wrong address fails at open, not at the
 * first call), learns the server's version (Redis 7 gets script flags) and
 * reads maxmemory-policy: a policy that may evict keys would silently drop
 * leases, messages and counters, so any policy other than noeviction is
 * refused, unless the URL says allow_eviction=1 (then a warning goes to
 * stderr). Under noeviction a full server answers OOM and nothing is lost.
 *
 * The backend is `concurrent`: the engine calls it without the store's
 * mutex, from any number of threads; each command runs on a connection of
 * the pool (pool.c) that no other thread holds meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_internal.h"

/* The value of "name:value" in an INFO reply, copied into out. */
static int info_field(const redisReply *r, const char *name, char *out, size_t size)
{
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)
        return -1;
    size_t n = strlen(name);
    for (const char *p = r->str; p && *p;) {
        if (!strncmp(p, name, n) && p[n] == ':') {
            p += n + 1;
            size_t len = strcspn(p, "\r\n");
            if (len >= size)
                len = size - 1;
            memcpy(out, p, len);
            out[len] = '\0';
            return 0;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

static int check_server(bitt_backend *be)
{
    redisReply *r = NULL;
    int rc = bitt__rd_simple(be, "INFO", &r, "INFO", (char *)NULL);
    if (rc)
        return rc;
    char version[32] = "", policy[64] = "";
    if (!info_field(r, "redis_version", version, sizeof version))
        be->server_major = atoi(version);
    info_field(r, "maxmemory_policy", policy, sizeof policy);
    freeReplyObject(r);

    /* CONFIG GET is authoritative; managed servers often refuse it. */
    r = NULL;
    bitt_rd_args a;
    bitt__rd_args_init(&a);
    bitt__rd_arg_str(&a, "CONFIG");
    bitt__rd_arg_str(&a, "GET");
    bitt__rd_arg_str(&a, "maxmemory-policy");
    a.retry = 1;
    rc = bitt__rd_call(be, "CONFIG GET", &a, 1, &r);
    const int lost = a.lost;
    bitt__rd_args_free(&a);
    if (rc == BITT_OK) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_STRING)
            snprintf(policy, sizeof policy, "%s", r->element[1]->str);
        freeReplyObject(r);
    } else if (lost) {
        return rc; /* the connection failed, not just the command */
    }
    bitt__error_reset();

    if (!strcmp(policy, "noeviction"))
        return BITT_OK;
    const char *shown = policy[0] ? policy : "unknown (CONFIG GET and INFO did not say)";
    if (be->allow_eviction) {
        fprintf(stderr,
                "bitt: warning: redis %s has maxmemory-policy %s: keys may be evicted, which "
                "would silently lose leases, messages and values (allow_eviction=1)\n",
                be->where, shown);
        return BITT_OK;
    }
    return bitt__fail(BITT_EBACKEND,
                      "redis %s: maxmemory-policy is %s; bitt needs noeviction, since an evicted "
                      "key silently loses a lease, a message or a value (set maxmemory-policy "
                      "noeviction, or add allow_eviction=1 to the URL to accept the risk)",
                      be->where, shown);
}

static void rd_close(bitt_backend *be)
{
    if (!be)
        return;
    bitt__rd_pool_free(be);
    bitt__rd_waiter_free(&be->waiter);
    bitt__rd_free_location(be);
    free(be);
}

static int rd_open(bitt_url *url, const bitt_limits *limits, bitt_backend **out)
{
    *out = NULL;
    bitt_backend *be = bitt__calloc(1, sizeof *be);
    if (!be)
        return bitt__fail(BITT_ENOMEM, "out of memory opening a redis store");
    be->limits = *limits;
    bitt__rd_waiter_init(&be->waiter);
    int rc = bitt__rd_parse_url(url, be);
    /* Every option is read by now (the engine's before open): refuse a
     * misspelt one before connecting, not after. */
    if (!rc)
        rc = bitt__url_check_all_used(url);
    if (!rc)
        rc = bitt__rd_pool_init(be);
    if (!rc)
        rc = check_server(be);
    if (!rc && be->server_major >= 7)
        rc = bitt__rd_fn_name(be);
    if (rc) {
        rd_close(be);
        return rc;
    }
    *out = be;
    return BITT_OK;
}

static int rd_migrate(bitt_backend *be)
{
    char meta[BITT_RD_PREFIX_MAX + 16], version[16];
    snprintf(meta, sizeof meta, "%s:meta", be->anchor);
    snprintf(version, sizeof version, "%d", BITT_RD_SCHEMA_VERSION);
    redisReply *r = NULL;
    int rc = bitt__rd_simple(be, "migrate", &r, "HSETNX", meta, "schema", version, (char *)NULL);
    if (rc)
        return rc;
    freeReplyObject(r);
    rc = bitt__rd_simple(be, "migrate", &r, "HGET", meta, "schema", (char *)NULL);
    if (rc)
        return rc;
    int ok = r->type == REDIS_REPLY_STRING && !strcmp(r->str, version);
    int newer = !ok && r->type == REDIS_REPLY_STRING && r->len && r->len < 10 &&
                strspn(r->str, "0123456789") == r->len && atoi(r->str) > BITT_RD_SCHEMA_VERSION;
    freeReplyObject(r);
    if (newer)
        return bitt__fail(BITT_ESCHEMA,
                          "redis %s: the data under prefix '%s' was written by a "
                          "newer bitt (schema newer than %d)",
                          be->where, be->prefix, BITT_RD_SCHEMA_VERSION);
    if (!ok)
        return bitt__fail(BITT_ESCHEMA, "redis %s: '%s:meta' does not hold a bitt schema version",
                          be->where, be->anchor);
    return BITT_OK;
}

const bitt_backend_ops bitt__redis_backend = {
    .version = BITT_BACKEND_OPS_VERSION,
    .name = "redis",
    .open = rd_open,
    .close = rd_close,
    .migrate = rd_migrate,
    .kv_get = bitt__rd_kv_get,
    .kv_get_many = bitt__rd_kv_get_many,
    .kv_list = bitt__rd_kv_list,
    .commit = bitt__rd_commit,
    .kv_purge = bitt__rd_kv_purge,
    .queue_claim = bitt__rd_queue_claim,
    .queue_ack = bitt__rd_queue_ack,
    .queue_nack = bitt__rd_queue_nack,
    .queue_extend = bitt__rd_queue_extend,
    .queue_dead_list = bitt__rd_queue_dead_list,
    .queue_dead_retry = bitt__rd_queue_dead_retry,
    .queue_dead_delete = bitt__rd_queue_dead_delete,
    .queue_stats = bitt__rd_queue_stats,
    .lease_acquire = bitt__rd_lease_acquire,
    .lease_renew = bitt__rd_lease_renew,
    .lease_release = bitt__rd_lease_release,
    .lease_get = bitt__rd_lease_get,
    .outbox_pending = bitt__rd_outbox_pending,
    .outbox_ack = bitt__rd_outbox_ack,
    .outbox_fail = bitt__rd_outbox_fail,
    .outbox_park = bitt__rd_outbox_park,
    .outbox_parked = bitt__rd_outbox_parked,
    .outbox_retry = bitt__rd_outbox_retry,
    .outbox_discard = bitt__rd_outbox_discard,
    .outbox_counts = bitt__rd_outbox_counts,
    .pubsub_publish = bitt__rd_pubsub_publish,
    .pubsub_head = bitt__rd_pubsub_head,
    .pubsub_fetch = bitt__rd_pubsub_fetch,
    .budget_take = bitt__rd_budget_take,
    .schedule_get = bitt__rd_schedule_get,
    .schedule_list = bitt__rd_schedule_list,
    .schedule_delete = bitt__rd_schedule_delete,
    .wait_remote = bitt__rd_wait_remote,

    .queue_ack_many = bitt__rd_queue_ack_many,
    .queue_snooze = bitt__rd_queue_snooze,
    .queue_claim_topics = bitt__rd_queue_claim_topics,
    .queue_get = bitt__rd_queue_get,

    .queue_purge = bitt__rd_queue_purge,
    .schedule_set = bitt__rd_schedule_set,
    .schedule_due = bitt__rd_schedule_due,
    .concurrent = 1,
    .io_slots = bitt__rd_io_slots,
};
