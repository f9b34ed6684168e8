/* core/redis/queue_lua.c: the queue scripts (queue.c runs them). Each one
 * first dead-letters the topic's expired last leases (sweep) and, with a
 * retention, drops what outlived it (retire); the claim meets expired last
 * leases on its way instead. */
#include "redis_internal.h"

const char bitt__rd_lua_q_claim[] =
    "-- ARGV: now, limit, due (now + lease), token base (24 hex digits), then\n"
    "-- the topics (distinct); out: 14 fields per leased message, in claim order\n"
    "local topics = {}\n"
    "for i = 5, #ARGV do topics[#topics + 1] = ARGV[i] end\n"
    "local out = {0}\n"
    "if RD ~= '0' or RX ~= '0' then\n"
    "  for _, topic in ipairs(topics) do retire(topic, NOW) end\n"
    "end\n"
    "claim(topics, tonumber(ARGV[2]), ARGV[3], ARGV[4], out)\n"
    "return out\n";

const char bitt__rd_lua_q_ack[] =
    "-- ARGV: now, topic, id, token; out: 0, or the code of a stale token and why\n"
    "-- (no sweep: a lease that ran out is refused here whoever deals with it)\n"
    "local why = ack(ARGV[2], ARGV[3], ARGV[4], NOW)\n"
    "if why then return {-14, stale(ARGV[2], ARGV[3], why)} end\n"
    "return {0}\n";

const char bitt__rd_lua_q_ack_many[] =
    "-- ARGV: now, topic, then id, token pairs; out: 0, then per pair in order 1\n"
    "-- (acked) or 0 (stale: a repeated id finds its message gone). No sweep, as\n"
    "-- in ack: a lease that ran out is refused here whoever deals with it.\n"
    "local out = {0}\n"
    "for i = 3, #ARGV - 1, 2 do\n"
    "  out[#out + 1] = ack(ARGV[2], ARGV[i], ARGV[i + 1], NOW) and 0 or 1\n"
    "end\n"
    "return out\n";

const char bitt__rd_lua_q_nack[] =
    "-- ARGV: now, topic, id, token, has_error, error, delay (-1 = backoff),\n"
    "-- backoff: 'e' base cap | 'l' d1 d2 ...\n"
    "local topic, id = ARGV[2], ARGV[3]\n"
    "local why, h, last = delivery(topic, id, ARGV[4], NOW)\n"
    "if why then return {-14, stale(topic, id, why)} end\n"
    "nack(topic, id, h, last, ARGV[5] == '1' and ARGV[6], ARGV[7], ARGV, 8)\n"
    "if not last then wake() end\n"
    "return {0}\n";

/* extend and snooze: the same arguments, the step of lua_queue.c's move */
#define MOVE_SCRIPT(snooze)                                                                        \
    "-- ARGV: now, topic, id, token, due (now + ms), wake\n"                                       \
    "local topic, id = ARGV[2], ARGV[3]\n"                                                         \
    "local why, h, last = delivery(topic, id, ARGV[4], NOW)\n"                                     \
    "if why then return {-14, stale(topic, id, why)} end\n"                                        \
    "move(topic, id, h, last, ARGV[5], " snooze ")\n"                                              \
    "if ARGV[6] == '1' then wake() end\n"                                                          \
    "return {0}\n"

const char bitt__rd_lua_q_extend[] = MOVE_SCRIPT("false");
const char bitt__rd_lua_q_snooze[] = MOVE_SCRIPT("true");

const char bitt__rd_lua_q_get[] =
    "-- ARGV: now, topic, id; out: 0 and the message's 14 fields, done_at, result\n"
    "-- and its kind (0, nil, 0 unless done), or 1 (not found)\n"
    "local topic, id = ARGV[2], ARGV[3]\n"
    "sweep(topic, NOW)\n"
    "local h = redis.call('HMGET', mkey(id), unpack(MF))\n"
    "if h[1] ~= topic then return {1} end\n"
    "local out = {0}\n"
    "push_msg(out, id, h, false, h[4], h[8], msg_state(h[10], h[4], h[5], h[8], NOW))\n"
    "if h[10] == 'c' then\n"
    "  local d = redis.call('HMGET', mkey(id), 'da', 'r', 'rk')\n"
    "  out[16], out[17], out[18] = d[1] or '0', d[2], d[3] or '0'\n"
    "else\n"
    "  out[16], out[17], out[18] = '0', false, '0'\n"
    "end\n"
    "return out\n";

const char bitt__rd_lua_q_stats[] =
    "-- ARGV: now, topic; out: 0, pending, delayed, processing, dead, oldest_pending_at,\n"
    "-- done\n"
    "local topic = ARGV[2]\n"
    "sweep(topic, NOW)\n"
    "local total, pending, oldest = 0, 0, nil\n"
    "for _, y in ipairs(levels(topic)) do\n"
    "  local k = rkey(topic, y)\n"
    "  total = total + redis.call('ZCARD', k)\n"
    "  local n = redis.call('ZLEXCOUNT', k, '-', upto(NOW))\n"
    "  if n > 0 then\n"
    "    pending = pending + n\n"
    "    local first = redis.call('ZRANGE', k, 0, 0)[1]\n"
    "    if not oldest or first < oldest then oldest = first end\n"
    "  end\n"
    "end\n"
    "local processing = redis.call('ZLEXCOUNT', qkey('qp', topic), '[' .. pad(succ(NOW)), '+')\n"
    "local oldest_at = '0'\n"
    "if oldest then oldest_at = unpad(sub(oldest, 1, 19)) end\n"
    "return {0, pending, total - pending - processing, processing,\n"
    "        redis.call('ZCARD', qkey('qx', topic)), oldest_at,\n"
    "        redis.call('ZCARD', qkey('qc', topic))}\n";

const char bitt__rd_lua_q_dead_list[] =
    "-- ARGV: now, topic, after_id, limit; out: 12 fields per dead message\n"
    "local topic = ARGV[2]\n"
    "sweep(topic, NOW)\n"
    "local r = redis.call('ZRANGEBYLEX', qkey('qx', topic), '(' .. pad(ARGV[3]), '+', 'LIMIT', 0,\n"
    "                     tonumber(ARGV[4]))\n"
    "local out = {0}\n"
    "for _, member in ipairs(r) do\n"
    "  local id = unpad(member)\n"
    "  local h = redis.call('HMGET', mkey(id), unpack(MF))\n"
    "  push_msg(out, id, h, false, h[4], h[8], 4)\n"
    "end\n"
    "return out\n";

const char bitt__rd_lua_q_dead_retry[] =
    "-- ARGV: now, topic, id (0 = every dead message); out: 0, count\n"
    "local topic, id = ARGV[2], ARGV[3]\n"
    "sweep(topic, NOW)\n"
    "local qx = qkey('qx', topic)\n"
    "local count = 0\n"
    "local function revive(mid)\n"
    "  redis.call('ZREM', qx, pad(mid))\n"
    "  local m = mkey(mid)\n"
    "  redis.call('ZREM', qkey('qa', topic), pad(redis.call('HGET', m, 'f') or '0') .. pad(mid))\n"
    "  redis.call('HSET', m, 's', 'p', 'a', '0', 'f', '0', 'd', NOW)\n"
    "  redis.call('HDEL', m, 'e', 'tk')\n"
    "  link(topic, mid, 'p', NOW, false, redis.call('HGET', m, 'y'))\n"
    "  count = count + 1\n"
    "end\n"
    "if id ~= '0' then\n"
    "  if redis.call('ZSCORE', qx, pad(id)) then revive(id) end\n"
    "else\n"
    "  while true do\n"
    "    local r = redis.call('ZRANGE', qx, 0, 499)\n"
    "    if #r == 0 then break end\n"
    "    for _, member in ipairs(r) do revive(unpad(member)) end\n"
    "  end\n"
    "end\n"
    "if count > 0 then wake() end\n"
    "return {0, count}\n";

const char bitt__rd_lua_q_dead_delete[] =
    "-- ARGV: now, topic, id (0 = every dead message); out: 0, count\n"
    "local topic, id = ARGV[2], ARGV[3]\n"
    "sweep(topic, NOW)\n"
    "local qx = qkey('qx', topic)\n"
    "local count = 0\n"
    "local function drop(mid)\n"
    "  redis.call('ZREM', qx, pad(mid))\n"
    "  redis.call('ZREM', qkey('qa', topic), pad(redis.call('HGET', mkey(mid), 'f') or '0') .. "
    "pad(mid))\n"
    "  redis.call('DEL', mkey(mid))\n"
    "  count = count + 1\n"
    "end\n"
    "if id ~= '0' then\n"
    "  if redis.call('ZSCORE', qx, pad(id)) then drop(id) end\n"
    "else\n"
    "  while true do\n"
    "    local r = redis.call('ZRANGE', qx, 0, 499)\n"
    "    if #r == 0 then break end\n"
    "    for _, member in ipairs(r) do drop(unpad(member)) end\n"
    "  end\n"
    "end\n"
    "return {0, count}\n";

const char bitt__rd_lua_q_purge[] =
    "-- ARGV: now, topic ('' = every topic with a retention index, qt); out: 0,\n"
    "-- how many messages went\n"
    "local n = 0\n"
    "if ARGV[2] ~= '' then\n"
    "  n = sweep(ARGV[2], NOW)\n"
    "else\n"
    "  local min = '-'\n"
    "  while true do\n"
    "    local r = redis.call('ZRANGEBYLEX', P .. 'qt', min, '+', 'LIMIT', 0, 100)\n"
    "    for _, topic in ipairs(r) do n = n + sweep(topic, NOW) end\n"
    "    if #r < 100 then break end\n"
    "    min = '(' .. r[#r]\n"
    "  end\n"
    "end\n"
    "return {0, fmt('%d', n)}\n";
