/* core/redis/outbox_lua.c: the outbox scripts (outbox.c runs them). An
 * event is the hash P oe:<pad(seq)>:<stream>; P op:<stream> and
 * P oq:<stream> order the pending and the parked ones by pad(seq). */
#include "redis_internal.h"

const char bitt__rd_lua_o_pending[] =
    "-- ARGV: now, stream, limit; out: 12 fields per pending event, by seq\n"
    "local stream = ARGV[2]\n"
    "local r = redis.call('ZRANGE', P .. 'op:' .. stream, 0, tonumber(ARGV[3]) - 1)\n"
    "local out = {0}\n"
    "for _, member in ipairs(r) do\n"
    "  local h = redis.call('HMGET', P .. 'oe:' .. member .. ':' .. stream, 'p', 'k', 'a', 'e', "
    "'c', 'n', 'f', 'r')\n"
    "  local n = #out\n"
    "  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = unpad(member), stream, h[1], h[2]\n"
    "  out[n + 5], out[n + 6], out[n + 7], out[n + 8] = false, h[3], '0', h[4] or false\n"
    "  out[n + 9], out[n + 10], out[n + 11], out[n + 12] = h[5], h[6], h[7], h[8]\n"
    "end\n"
    "return out\n";

const char bitt__rd_lua_o_parked[] =
    "-- ARGV: now, stream, reason (0 = any), limit; out: 12 fields per parked event\n"
    "local stream, reason, limit = ARGV[2], ARGV[3], tonumber(ARGV[4])\n"
    "local oq = P .. 'oq:' .. stream\n"
    "local out, got, min = {0}, 0, '-'\n"
    "while got < limit do\n"
    "  local r = redis.call('ZRANGEBYLEX', oq, min, '+', 'LIMIT', 0, 200)\n"
    "  for _, member in ipairs(r) do\n"
    "    local h = redis.call('HMGET', P .. 'oe:' .. member .. ':' .. stream, 'p', 'k', 'a', 'e', "
    "'c', 'n', 'f', 'r')\n"
    "    if reason == '0' or h[8] == reason then\n"
    "      local n = #out\n"
    "      out[n + 1], out[n + 2], out[n + 3], out[n + 4] = unpad(member), stream, h[1], h[2]\n"
    "      out[n + 5], out[n + 6], out[n + 7], out[n + 8] = false, h[3], '0', h[4] or false\n"
    "      out[n + 9], out[n + 10], out[n + 11], out[n + 12] = h[5], h[6], h[7], h[8]\n"
    "      got = got + 1\n"
    "      if got == limit then break end\n"
    "    end\n"
    "  end\n"
    "  if #r < 200 then break end\n"
    "  min = '(' .. r[#r]\n"
    "end\n"
    "return out\n";

const char bitt__rd_lua_o_ack[] = "-- ARGV: now, stream, seq...; out: 0, how many were pending\n"
                                  "local stream = ARGV[2]\n"
                                  "local op = P .. 'op:' .. stream\n"
                                  "local n = 0\n"
                                  "for i = 3, #ARGV do\n"
                                  "  local member = pad(ARGV[i])\n"
                                  "  if redis.call('ZREM', op, member) == 1 then\n"
                                  "    redis.call('DEL', P .. 'oe:' .. member .. ':' .. stream)\n"
                                  "    n = n + 1\n"
                                  "  end\n"
                                  "end\n"
                                  "return {0, n}\n";

const char bitt__rd_lua_o_fail[] =
    "-- ARGV: now, stream, seq, has_error, error, next_attempt_at; out: 0 | 1 (not pending)\n"
    "local stream, member = ARGV[2], pad(ARGV[3])\n"
    "if not redis.call('ZSCORE', P .. 'op:' .. stream, member) then return {1} end\n"
    "local k = P .. 'oe:' .. member .. ':' .. stream\n"
    "local a = tonumber(redis.call('HGET', k, 'a') or '0')\n"
    "if a < 4294967295 then a = a + 1 end\n"
    "redis.call('HSET', k, 'a', fmt('%d', a), 'n', ARGV[6])\n"
    "if ARGV[4] == '1' then redis.call('HSET', k, 'e', ARGV[5]) else redis.call('HDEL', k, 'e') "
    "end\n"
    "return {0}\n";

const char bitt__rd_lua_o_park[] =
    "-- ARGV: now, stream, seq, reason, has_error, error; out: 0 | 1 (not pending)\n"
    "local stream, member = ARGV[2], pad(ARGV[3])\n"
    "if redis.call('ZREM', P .. 'op:' .. stream, member) == 0 then return {1} end\n"
    "local k = P .. 'oe:' .. member .. ':' .. stream\n"
    "redis.call('HSET', k, 'f', NOW, 'r', ARGV[4])\n"
    "if ARGV[5] == '1' then redis.call('HSET', k, 'e', ARGV[6]) else redis.call('HDEL', k, 'e') "
    "end\n"
    "redis.call('ZADD', P .. 'oq:' .. stream, 0, member)\n"
    "return {0}\n";

const char bitt__rd_lua_o_move[] =
    "-- ARGV: now, stream, action ('retry' or 'discard'), seq... (none = every\n"
    "-- parked event); out: 0, how many were parked\n"
    "local stream, retry = ARGV[2], ARGV[3] == 'retry'\n"
    "local oq, op = P .. 'oq:' .. stream, P .. 'op:' .. stream\n"
    "local n = 0\n"
    "local function one(member)\n"
    "  if redis.call('ZREM', oq, member) == 0 then return end\n"
    "  local k = P .. 'oe:' .. member .. ':' .. stream\n"
    "  if retry then\n"
    "    redis.call('HSET', k, 'a', '0', 'n', '0', 'f', '0', 'r', '0')\n"
    "    redis.call('HDEL', k, 'e')\n"
    "    redis.call('ZADD', op, 0, member)\n"
    "  else\n"
    "    redis.call('DEL', k)\n"
    "  end\n"
    "  n = n + 1\n"
    "end\n"
    "if #ARGV > 3 then\n"
    "  for i = 4, #ARGV do one(pad(ARGV[i])) end\n"
    "else\n"
    "  while true do\n"
    "    local r = redis.call('ZRANGE', oq, 0, 499)\n"
    "    if #r == 0 then break end\n"
    "    for _, member in ipairs(r) do one(member) end\n"
    "  end\n"
    "end\n"
    "return {0, n}\n";

const char bitt__rd_lua_o_counts[] = "-- ARGV: now, stream; out: 0, pending, parked\n"
                                     "return {0, redis.call('ZCARD', P .. 'op:' .. ARGV[2]), "
                                     "redis.call('ZCARD', P .. 'oq:' .. ARGV[2])}\n";
