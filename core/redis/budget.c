/*
 * core/redis/budget.c: token buckets on Redis. A bucket is the hash P
 * b:<name> (l level in units of 1/period_ms token, u updated_at, p the
 * period l is expressed in). One script loads it, runs the arithmetic of
 * bitt__budget_apply (core/budget.c) step for step on exact bignums (the
 * level reaches 2^62, past what Lua's doubles hold), and stores it when
 * tokens were taken, driven by the store's clock, never by Redis TIME.
 */
#include "redis_internal.h"

const char bitt__rd_lua_b_take[] =
    "-- ARGV: now, name, capacity, refill, period_ms, n; out: 0 | 3 (denied), wait_ms\n"
    "-- The arithmetic of bitt__budget_apply (core/budget.c), step for step.\n"
    "local k = P .. 'b:' .. ARGV[2]\n"
    "local cap, refill, period, n = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), "
    "tonumber(ARGV[6])\n"
    "local h = redis.call('HMGET', k, 'l', 'u', 'p')\n"
    "local full = bnmul(bn(cap), period)\n"
    "local level, updated\n"
    "if not h[1] then\n"
    "  level, updated = full, NOW\n"
    "else\n"
    "  if sub(h[1], 1, 1) == '-' then level = bn(0) else level = bnd(h[1]) end\n"
    "  local from = tonumber(h[3] or '0')\n"
    "  if from > 0 and from ~= period then\n"
    "    local tokens, rest = bndiv(level, from)\n"
    "    level = bnadd(bnmul(tokens, period), bnq(bnmul(bn(rest), period), from))\n"
    "  end\n"
    "  if bncmp(level, full) > 0 then level = full end\n"
    "  updated = h[2] or NOW\n"
    "  if lt(updated, NOW) then\n"
    "    local missing = bnsub(full, level)\n"
    "    if bncmp(bnsub(bnd(NOW), bnd(updated)), bnq(bnadd(missing, bn(refill - 1)), refill)) >= 0 "
    "then\n"
    "      level = full\n"
    "    else\n"
    "      level = bnadd(level, bnmul(bnsub(bnd(NOW), bnd(updated)), refill))\n"
    "    end\n"
    "    updated = NOW\n"
    "  end\n"
    "end\n"
    "local need = bnmul(bn(n), period)\n"
    "if bncmp(level, need) >= 0 then\n"
    "  redis.call('HSET', k, 'l', bns(bnsub(level, need)), 'u', updated, 'p', fmt('%d', period))\n"
    "  return {0, '0'}\n"
    "end\n"
    "return {3, bns(bnq(bnadd(bnsub(need, level), bn(refill - 1)), refill))}\n";

int bitt__rd_budget_take(bitt_backend *be, const bitt_time *t, const char *name,
                         const bitt_budget_params *p, int64_t n, int64_t *wait_ms)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, name);
    bitt__rd_arg_i64(&a, p->capacity);
    bitt__rd_arg_i64(&a, p->refill);
    bitt__rd_arg_i64(&a, p->period_ms);
    bitt__rd_arg_i64(&a, n);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_B_TAKE, &a, 1, &r);
    if (rc < 0)
        return rc;
    int64_t wait = 0;
    int status = rc;
    rc = bitt__rd_elem_count(r, 1, 1, "budget take");
    if (!rc)
        rc = bitt__rd_i64(r, 1, &wait, "budget take");
    freeReplyObject(r);
    if (rc)
        return rc;
    *wait_ms = wait;
    return status;
}
