/*
 * core/redis/schedule.c: interval schedules on Redis. A schedule is the
 * hash P s:<key> (i interval, p payload, k kind, n next_run_at); P sk
 * orders the keys, P sd the (next_run_at, key) pairs (pad(next) key), so a
 * claim reads the earliest due one and advances it with the rule of
 * bitt__schedule_advance (core/schedule.c) on exact bignums, in one script:
 * one claim per occurrence across every process.
 */
#include <stdio.h>
#include <string.h>

#include "redis_internal.h"

#define LIST_PAGE 500

const char bitt__rd_lua_s_upsert[] =
    "-- ARGV: now, key, interval, payload, kind, first_run_at\n"
    "local key, interval = ARGV[2], ARGV[3]\n"
    "local k = P .. 's:' .. key\n"
    "local h = redis.call('HMGET', k, 'i', 'n')\n"
    "local next = ARGV[6]\n"
    "if h[1] and h[1] == interval then next = h[2] end\n"
    "if h[2] then redis.call('ZREM', P .. 'sd', pad(h[2]) .. key) end\n"
    "redis.call('HSET', k, 'i', interval, 'p', ARGV[4], 'k', ARGV[5], 'n', next)\n"
    "redis.call('ZADD', P .. 'sk', 0, key)\n"
    "redis.call('ZADD', P .. 'sd', 0, pad(next) .. key)\n"
    "return {0}\n";

const char bitt__rd_lua_s_claim[] =
    "-- ARGV: now, prefix ('' = all); out: 0, key, interval, payload, kind,\n"
    "-- new next_run_at, occurrence | 1 (none due)\n"
    "local prefix = ARGV[2]\n"
    "local sd = P .. 'sd'\n"
    "local min, max = '-', upto(NOW)\n"
    "local found = nil\n"
    "while not found do\n"
    "  local r = redis.call('ZRANGEBYLEX', sd, min, max, 'LIMIT', 0, 200)\n"
    "  for _, member in ipairs(r) do\n"
    "    if prefix == '' or sub(member, 20, 19 + #prefix) == prefix then\n"
    "      found = member\n"
    "      break\n"
    "    end\n"
    "  end\n"
    "  if found or #r < 200 then break end\n"
    "  min = '(' .. r[#r]\n"
    "end\n"
    "if not found then return {1} end\n"
    "local key, occurrence = sub(found, 20), unpad(sub(found, 1, 19))\n"
    "local k = P .. 's:' .. key\n"
    "local h = redis.call('HMGET', k, 'i', 'p', 'k')\n"
    "-- bitt__schedule_advance (core/schedule.c): the first occurrence + j *\n"
    "-- interval (j >= 1) after now, or INT64_MAX when that passes int64\n"
    "local interval = tonumber(h[1])\n"
    "local j = bnadd(bnq(bnsub(bnd(NOW), bnd(occurrence)), interval), bn(1))\n"
    "local next = MAX\n"
    "if bncmp(j, bnq(bnsub(bnd(MAX), bnd(occurrence)), interval)) <= 0 then\n"
    "  next = bns(bnadd(bnd(occurrence), bnmul(j, interval)))\n"
    "end\n"
    "redis.call('HSET', k, 'n', next)\n"
    "redis.call('ZREM', sd, found)\n"
    "redis.call('ZADD', sd, 0, pad(next) .. key)\n"
    "return {0, key, h[1], h[2], h[3], next, occurrence}\n";

const char bitt__rd_lua_s_list[] =
    "-- ARGV: now, after ('' = from the first), limit; out: key interval payload kind next\n"
    "-- per schedule, in key order\n"
    "local min = '-'\n"
    "if ARGV[2] ~= '' then min = '(' .. ARGV[2] end\n"
    "local r = redis.call('ZRANGEBYLEX', P .. 'sk', min, '+', 'LIMIT', 0, tonumber(ARGV[3]))\n"
    "local out = {0}\n"
    "for _, key in ipairs(r) do\n"
    "  local h = redis.call('HMGET', P .. 's:' .. key, 'i', 'p', 'k', 'n')\n"
    "  if h[1] then\n"
    "    local n = #out\n"
    "    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = key, h[1], h[2], h[3], h[4]\n"
    "  end\n"
    "end\n"
    "return out\n";

const char bitt__rd_lua_s_delete[] = "-- ARGV: now, key; out: 0 | 1 (none)\n"
                                     "local key = ARGV[2]\n"
                                     "local k = P .. 's:' .. key\n"
                                     "local n = redis.call('HGET', k, 'n')\n"
                                     "if not n then return {1} end\n"
                                     "redis.call('DEL', k)\n"
                                     "redis.call('ZREM', P .. 'sk', key)\n"
                                     "redis.call('ZREM', P .. 'sd', pad(n) .. key)\n"
                                     "return {0}\n";

/* A schedule from key, interval, payload, kind, next at r->element[at...]. */
static int schedule_at(const redisReply *r, size_t at, int64_t occurrence, bitt_schedule **out,
                       const char *what)
{
    int rc = bitt__rd_elem_count(r, at, 5, what);
    int64_t interval = 0, kind = 0, next = 0;
    if (!rc)
        rc = bitt__rd_i64(r, at + 1, &interval, what);
    if (!rc)
        rc = bitt__rd_i64(r, at + 3, &kind, what);
    if (!rc)
        rc = bitt__rd_i64(r, at + 4, &next, what);
    if (rc)
        return rc;
    size_t klen, plen;
    const char *key = bitt__rd_str(r, at, &klen);
    const char *payload = bitt__rd_str(r, at + 2, &plen);
    char name[BITT_NAME_MAX + 1];
    if (!key || klen > BITT_NAME_MAX)
        return bitt__fail(BITT_EBACKEND, "redis: %s: a schedule key is malformed", what);
    memcpy(name, key, klen);
    name[klen] = '\0';
    *out = bitt__schedule_new(name, interval, payload ? payload : "", plen, (int)kind, next,
                              occurrence);
    return *out ? BITT_OK : BITT_ENOMEM;
}

int bitt__rd_schedule_upsert(bitt_backend *be, const bitt_time *t, const char *key,
                             int64_t interval_ms, const uint8_t *payload, size_t len, int kind,
                             int64_t first_run_at)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, key);
    bitt__rd_arg_i64(&a, interval_ms);
    bitt__rd_arg(&a, payload, len);
    bitt__rd_arg_i64(&a, kind);
    bitt__rd_arg_i64(&a, first_run_at);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_S_UPSERT, &a, 1, &r);
    if (r)
        freeReplyObject(r);
    return rc;
}

int bitt__rd_schedule_claim(bitt_backend *be, const bitt_time *t, const char *prefix,
                            bitt_schedule **out)
{
    *out = NULL;
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, prefix);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_S_CLAIM, &a, 1, &r);
    if (rc)
        return rc == BITT_NOTFOUND ? (freeReplyObject(r), BITT_NOTFOUND) : rc;
    int64_t occurrence = 0;
    rc = bitt__rd_elem_count(r, 1, 6, "schedule claim");
    if (!rc)
        rc = bitt__rd_i64(r, 6, &occurrence, "schedule claim");
    if (!rc)
        rc = schedule_at(r, 1, occurrence, out, "schedule claim");
    freeReplyObject(r);
    return rc;
}

int bitt__rd_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                          bitt_schedule **out)
{
    (void)t;
    *out = NULL;
    char k[BITT_RD_PREFIX_MAX + BITT_NAME_MAX + 16];
    snprintf(k, sizeof k, "%s:s:%s", be->anchor, key);
    redisReply *r = NULL;
    int rc = bitt__rd_simple(be, "schedule get", &r, "HMGET", k, "i", "p", "k", "n", (char *)NULL);
    if (rc)
        return rc;
    rc = bitt__rd_elem_count(r, 0, 4, "schedule get");
    size_t len = 0;
    if (!rc && !bitt__rd_str(r, 0, &len)) {
        freeReplyObject(r);
        return BITT_NOTFOUND;
    }
    int64_t interval = 0, kind = 0, next = 0;
    if (!rc)
        rc = bitt__rd_i64(r, 0, &interval, "schedule get");
    if (!rc)
        rc = bitt__rd_i64(r, 2, &kind, "schedule get");
    if (!rc)
        rc = bitt__rd_i64(r, 3, &next, "schedule get");
    if (!rc) {
        const char *payload = bitt__rd_str(r, 1, &len);
        *out = bitt__schedule_new(key, interval, payload ? payload : "", len, (int)kind, next, 0);
        rc = *out ? BITT_OK : BITT_ENOMEM;
    }
    freeReplyObject(r);
    return rc;
}

int bitt__rd_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out)
{
    char after[BITT_NAME_MAX + 1] = "";
    /* Pages of LIST_PAGE keys, each one script; bounded by the keys there are. */
    for (;;) {
        bitt_rd_args a;
        bitt__rd_script_args(be, &a, t);
        bitt__rd_arg_str(&a, after);
        bitt__rd_arg_u64(&a, LIST_PAGE);
        redisReply *r = NULL;
        int rc = bitt__rd_run(be, RS_S_LIST, &a, LIST_PAGE, &r);
        if (rc)
            return rc;
        size_t n = (r->elements - 1) / 5;
        if ((r->elements - 1) % 5)
            rc = bitt__fail(BITT_EBACKEND,
                            "redis: schedule list: the reply has an unexpected shape");
        for (size_t i = 0; !rc && i < n; i++) {
            bitt_schedule *s = NULL;
            rc = schedule_at(r, 1 + 5 * i, 0, &s, "schedule list");
            if (!rc)
                rc = bitt__schedule_array_push(out, s);
        }
        if (!rc && n)
            snprintf(after, sizeof after, "%s", out->items[out->count - 1]->key);
        freeReplyObject(r);
        if (rc)
            return rc;
        if (n < LIST_PAGE)
            return BITT_OK;
    }
}

int bitt__rd_schedule_delete(bitt_backend *be, const bitt_time *t, const char *key)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, key);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_S_DELETE, &a, 1, &r);
    if (r)
        freeReplyObject(r);
    return rc;
}
