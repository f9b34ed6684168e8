/*
 * core/redis/pubsub.c: the publish/subscribe log on Redis. A published
 * message is the hash P pm:<id> (c channel, d data, t created_at) with ids
 * from P meta's pid counter (store-wide, increasing); P pi:<channel> orders
 * a channel's ids and P pt every message by (created_at, id), which
 * publish trims to the retention. Publish also PUBLISHes on P wake so that
 * waits in every process (wait.c) look at once.
 */
#include <stdio.h>
#include <string.h>

#include "redis_internal.h"

const char bitt__rd_lua_p_publish[] =
    "-- ARGV: now, channel, data, cutoff ('' = keep all); out: 0, id\n"
    "local channel = ARGV[2]\n"
    "local id = take(META, 'pid', 1)\n"
    "redis.call('HSET', P .. 'pm:' .. id, 'c', channel, 'd', ARGV[3], 't', NOW)\n"
    "redis.call('ZADD', P .. 'pi:' .. channel, 0, pad(id))\n"
    "local pt = P .. 'pt'\n"
    "redis.call('ZADD', pt, 0, pad(NOW) .. pad(id))\n"
    "if ARGV[4] ~= '' then\n"
    "  local max = '(' .. pad(ARGV[4])\n"
    "  while true do\n"
    "    local r = redis.call('ZRANGEBYLEX', pt, '-', max, 'LIMIT', 0, 500)\n"
    "    if #r == 0 then break end\n"
    "    for _, member in ipairs(r) do\n"
    "      local old = unpad(sub(member, 20))\n"
    "      local m = P .. 'pm:' .. old\n"
    "      local c = redis.call('HGET', m, 'c')\n"
    "      if c then redis.call('ZREM', P .. 'pi:' .. c, pad(old)) end\n"
    "      redis.call('DEL', m)\n"
    "      redis.call('ZREM', pt, member)\n"
    "    end\n"
    "  end\n"
    "end\n"
    "wake()\n"
    "return {0, id}\n";

const char bitt__rd_lua_p_fetch[] =
    "-- ARGV: now, channel, after_id, limit; out: 12 fields per message, by id\n"
    "local channel = ARGV[2]\n"
    "local r = redis.call('ZRANGEBYLEX', P .. 'pi:' .. channel, '(' .. pad(ARGV[3]), '+', 'LIMIT', "
    "0,\n"
    "                     tonumber(ARGV[4]))\n"
    "local out = {0}\n"
    "for _, member in ipairs(r) do\n"
    "  local id = unpad(member)\n"
    "  local h = redis.call('HMGET', P .. 'pm:' .. id, 'd', 't')\n"
    "  if h[1] then\n"
    "    local n = #out\n"
    "    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = id, channel, h[1], '0'\n"
    "    out[n + 5], out[n + 6], out[n + 7], out[n + 8] = false, '0', '0', false\n"
    "    out[n + 9], out[n + 10], out[n + 11], out[n + 12] = h[2], '0', '0', '0'\n"
    "  end\n"
    "end\n"
    "return out\n";

int bitt__rd_pubsub_publish(bitt_backend *be, const bitt_time *t, const char *channel,
                            const uint8_t *data, size_t len, int64_t retention_ms)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, channel);
    bitt__rd_arg(&a, data, len);
    /* Messages created before now - retention go (none when that is <= 0:
     * no message is older than the epoch). */
    if (retention_ms >= 0 && t->now > retention_ms)
        bitt__rd_arg_i64(&a, t->now - retention_ms);
    else
        bitt__rd_arg_str(&a, "");
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_P_PUBLISH, &a, 1, &r);
    if (r)
        freeReplyObject(r);
    return rc;
}

int bitt__rd_pubsub_head(bitt_backend *be, const bitt_time *t, uint64_t *last_id)
{
    (void)t;
    char meta[BITT_RD_PREFIX_MAX + 16];
    snprintf(meta, sizeof meta, "%s:meta", be->anchor);
    redisReply *r = NULL;
    int rc = bitt__rd_simple(be, "subscribe", &r, "HGET", meta, "pid", (char *)NULL);
    if (rc)
        return rc;
    int64_t v = 0;
    if (r->type == REDIS_REPLY_STRING)
        rc = bitt__rd_parse_i64(r->str, r->len, &v, "subscribe");
    else if (r->type != REDIS_REPLY_NIL)
        rc = bitt__fail(BITT_EBACKEND, "redis: subscribe: the reply has an unexpected shape");
    freeReplyObject(r);
    if (!rc)
        *last_id = (uint64_t)v;
    return rc;
}

int bitt__rd_pubsub_fetch(bitt_backend *be, const bitt_time *t, const char *channel,
                          uint64_t after_id, size_t limit, bitt_messages *out)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, channel);
    bitt__rd_arg_u64(&a, after_id);
    bitt__rd_arg_u64(&a, limit);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_P_FETCH, &a, limit, &r);
    if (rc)
        return rc;
    rc = bitt__rd_push_messages(r, 1, BITT_RD_MSG_FIELDS, out, "subscription fetch");
    freeReplyObject(r);
    return rc;
}
