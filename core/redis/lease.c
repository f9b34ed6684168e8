/*
 * core/redis/lease.c: leases on Redis. A lease is the hash P l:<name> (o
 * owner, absent when free; e epoch; x expires_at), kept after release so
 * the epoch keeps increasing: it is the fencing token. Live iff an owner is
 * set and now < expires_at, by the store's clock.
 */
#include <stdio.h>
#include <string.h>

#include "redis_internal.h"

const char bitt__rd_lua_l_acquire[] =
    "-- ARGV: now, name, owner, expires_at; out: 0, epoch, expires_at | 2 (held)\n"
    "local k = P .. 'l:' .. ARGV[2]\n"
    "local h = redis.call('HMGET', k, 'o', 'e', 'x')\n"
    "if h[1] and lt(NOW, h[3]) then return {2} end\n"
    "local epoch = add(h[2] or '0', '1')\n"
    "redis.call('HSET', k, 'o', ARGV[3], 'e', epoch, 'x', ARGV[4])\n"
    "return {0, epoch, ARGV[4]}\n";

const char bitt__rd_lua_l_renew[] =
    "-- ARGV: now, name, owner, epoch, expires_at; out: 0 | -15 (not held)\n"
    "local k = P .. 'l:' .. ARGV[2]\n"
    "local h = redis.call('HMGET', k, 'o', 'e', 'x')\n"
    "if not (h[1] and h[1] == ARGV[3] and h[2] == ARGV[4] and lt(NOW, h[3])) then return {-15} "
    "end\n"
    "redis.call('HSET', k, 'x', ARGV[5])\n"
    "return {0}\n";

const char bitt__rd_lua_l_release[] =
    "-- ARGV: now, name, owner, epoch; out: 0 | -15 (not held). The epoch stays.\n"
    "local k = P .. 'l:' .. ARGV[2]\n"
    "local h = redis.call('HMGET', k, 'o', 'e', 'x')\n"
    "if not (h[1] and h[1] == ARGV[3] and h[2] == ARGV[4] and lt(NOW, h[3])) then return {-15} "
    "end\n"
    "redis.call('HDEL', k, 'o')\n"
    "redis.call('HSET', k, 'x', '0')\n"
    "return {0}\n";

static int lost(const char *name, const char *owner, uint64_t epoch)
{
    return bitt__fail(BITT_ELEASELOST, "lease '%s' is not held by '%s' at epoch %llu", name, owner,
                      (unsigned long long)epoch);
}

int bitt__rd_lease_acquire(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, int64_t ttl_ms, uint64_t *epoch, int64_t *expires_at)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, name);
    bitt__rd_arg_str(&a, owner);
    bitt__rd_arg_i64(&a, bitt__time_add(t->now, ttl_ms));
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_L_ACQUIRE, &a, 1, &r);
    if (rc == BITT_OK) {
        uint64_t e = 0;
        int64_t x = 0;
        rc = bitt__rd_elem_count(r, 1, 2, "lease acquire");
        if (!rc)
            rc = bitt__rd_u64(r, 1, &e, "lease acquire");
        if (!rc)
            rc = bitt__rd_i64(r, 2, &x, "lease acquire");
        if (!rc && epoch)
            *epoch = e;
        if (!rc && expires_at)
            *expires_at = x;
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

/* renew and release: the same check, then their write. */
static int held_op(bitt_backend *be, bitt_rd_script_id id, const bitt_time *t, const char *name,
                   const char *owner, uint64_t epoch, int64_t expires_at)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, name);
    bitt__rd_arg_str(&a, owner);
    bitt__rd_arg_u64(&a, epoch);
    if (id == RS_L_RENEW)
        bitt__rd_arg_i64(&a, expires_at);
    redisReply *r = NULL;
    int rc = bitt__rd_eval(be, id, &a, 1, &r);
    bitt__rd_args_free(&a);
    if (rc)
        return rc;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == BITT_ELEASELOST)
        rc = lost(name, owner, epoch);
    else
        rc = bitt__rd_status(r, bitt__rd_scripts[id].name);
    freeReplyObject(r);
    return rc;
}

int bitt__rd_lease_renew(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                         uint64_t epoch, int64_t ttl_ms, int64_t *expires_at)
{
    int64_t x = bitt__time_add(t->now, ttl_ms);
    int rc = held_op(be, RS_L_RENEW, t, name, owner, epoch, x);
    if (!rc && expires_at)
        *expires_at = x;
    return rc;
}

int bitt__rd_lease_release(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, uint64_t epoch)
{
    return held_op(be, RS_L_RELEASE, t, name, owner, epoch, 0);
}

int bitt__rd_lease_get(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                       uint64_t *epoch, int64_t *expires_at)
{
    if (owner) {
        owner->len = 0;
        if (owner->ptr)
            owner->ptr[0] = '\0';
    }
    char key[BITT_RD_PREFIX_MAX + BITT_NAME_MAX + 16];
    snprintf(key, sizeof key, "%s:l:%s", be->anchor, name);
    redisReply *r = NULL;
    int rc = bitt__rd_simple(be, "lease get", &r, "HMGET", key, "o", "e", "x", (char *)NULL);
    if (rc)
        return rc;
    rc = bitt__rd_elem_count(r, 0, 3, "lease get");
    size_t olen = 0;
    const char *o = rc ? NULL : bitt__rd_str(r, 0, &olen);
    int64_t e = 0, x = 0;
    if (!rc && o)
        rc = bitt__rd_i64(r, 1, &e, "lease get");
    if (!rc && o)
        rc = bitt__rd_i64(r, 2, &x, "lease get");
    if (!rc && !(o && t->now < x))
        rc = BITT_NOTFOUND;
    if (!rc && owner)
        rc = bitt__buf_put(owner, o, olen);
    if (!rc && epoch)
        *epoch = (uint64_t)e;
    if (!rc && expires_at)
        *expires_at = x;
    freeReplyObject(r);
    return rc;
}
