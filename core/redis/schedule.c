/*
 * core/redis/schedule.c: schedules on Redis. A schedule is the hash P
 * s:<key> (i interval, 0 for cron; c cron text; p payload, k kind, n
 * next_run_at; t topic; x max_attempts; y priority; c, t, x and y are absent
 * for none / the default, so schedules written before cron and topics read
 * as interval schedules without a topic). P sk orders the keys, P sd the
 * (next_run_at, key) pairs (pad(next) key), so schedule_due reads the
 * earliest due one. The engine claims it (core/schedule_claim.c): it works
 * out the next occurrence and commits BITT_OP_SCHEDULE_ADVANCE guarded by
 * the next_run_at read (commit_lua.c), so one claim per occurrence across
 * every process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "redis_internal.h"

#define LIST_PAGE 500

const char bitt__rd_lua_s_set[] =
    "-- ARGV: now, key, interval, has_cron, cron, payload, kind, has_topic, topic,\n"
    "-- max_attempts, priority, first_run_at. A new schedule, or a changed\n"
    "-- interval or cron text, starts at first_run_at; any other keeps its next run.\n"
    "local key, interval = ARGV[2], ARGV[3]\n"
    "local cron = ARGV[4] == '1' and ARGV[5]\n"
    "local k = P .. 's:' .. key\n"
    "local h = redis.call('HMGET', k, 'i', 'c', 'n')\n"
    "local next = ARGV[12]\n"
    "if h[3] and h[1] == interval and h[2] == cron then next = h[3] end\n"
    "if h[3] then redis.call('ZREM', P .. 'sd', pad(h[3]) .. key) end\n"
    "redis.call('HSET', k, 'i', interval, 'p', ARGV[6], 'k', ARGV[7], 'n', next, 'x', ARGV[10])\n"
    "if cron then redis.call('HSET', k, 'c', cron) else redis.call('HDEL', k, 'c') end\n"
    "if ARGV[8] == '1' then redis.call('HSET', k, 't', ARGV[9]) else redis.call('HDEL', k, 't') "
    "end\n"
    "if ARGV[11] ~= '0' then redis.call('HSET', k, 'y', ARGV[11]) else redis.call('HDEL', k, 'y') "
    "end\n"
    "redis.call('ZADD', P .. 'sk', 0, key)\n"
    "redis.call('ZADD', P .. 'sd', 0, pad(next) .. key)\n"
    "return {0}\n";

/* The fields every read returns after the key, in this order. */
#define SCHEDULE_FIELDS "'i', 'p', 'k', 'n', 'c', 't', 'x', 'y'"
#define SCHEDULE_WIDTH 9 /* the key and the 8 fields */

const char bitt__rd_lua_s_due[] =
    "-- ARGV: now, prefix ('' = all); out: 0, key and its fields | 1 (none due).\n"
    "-- Reads only: the engine claims with a commit.\n"
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
    "local key = sub(found, 20)\n"
    "local h = redis.call('HMGET', P .. 's:' .. key, " SCHEDULE_FIELDS ")\n"
    "return {0, key, h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]}\n";

const char bitt__rd_lua_s_list[] =
    "-- ARGV: now, after ('' = from the first), limit; out: the key and its fields\n"
    "-- per schedule, in key order\n"
    "local min = '-'\n"
    "if ARGV[2] ~= '' then min = '(' .. ARGV[2] end\n"
    "local r = redis.call('ZRANGEBYLEX', P .. 'sk', min, '+', 'LIMIT', 0, tonumber(ARGV[3]))\n"
    "local out = {0}\n"
    "for _, key in ipairs(r) do\n"
    "  local h = redis.call('HMGET', P .. 's:' .. key, " SCHEDULE_FIELDS ")\n"
    "  if h[1] then\n"
    "    local n = #out\n"
    "    out[n + 1] = key\n"
    "    for i = 1, 8 do out[n + 1 + i] = h[i] end\n"
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

/* A NUL-terminated copy of element i (nil: NULL) into buf of cap bytes;
 * BITT_EBACKEND when it does not fit (what a backend never wrote). */
static int text_at(const redisReply *r, size_t i, char *buf, size_t cap, const char **out,
                   const char *what)
{
    size_t len;
    const char *s = bitt__rd_str(r, i, &len);
    *out = NULL;
    if (!s)
        return BITT_OK;
    if (len >= cap || memchr(s, '\0', len))
        return bitt__fail(BITT_EBACKEND, "redis: %s: a schedule field is malformed", what);
    memcpy(buf, s, len);
    buf[len] = '\0';
    *out = buf;
    return BITT_OK;
}

/* A schedule named key from the 8 fields at r->element[at...] (i p k n c t x
 * y); *out NULL without an error when it is absent (i nil). */
static int schedule_fields(const redisReply *r, size_t at, const char *key, int64_t occurrence,
                           bitt_schedule **out, const char *what)
{
    *out = NULL;
    int rc = bitt__rd_elem_count(r, at, 8, what);
    size_t plen = 0;
    if (!rc && !bitt__rd_str(r, at, &plen))
        return BITT_OK;
    int64_t interval = 0, kind = 0, next = 0, attempts = BITT_MAX_ATTEMPTS_DEFAULT, priority = 0;
    if (!rc)
        rc = bitt__rd_i64(r, at, &interval, what);
    if (!rc)
        rc = bitt__rd_i64(r, at + 2, &kind, what);
    if (!rc)
        rc = bitt__rd_i64(r, at + 3, &next, what);
    if (!rc && bitt__rd_str(r, at + 6, &plen))
        rc = bitt__rd_i64(r, at + 6, &attempts, what);
    if (!rc && bitt__rd_str(r, at + 7, &plen))
        rc = bitt__rd_i64(r, at + 7, &priority, what);
    if (!rc &&
        (attempts < 1 || attempts > UINT32_MAX || priority < INT32_MIN || priority > INT32_MAX))
        rc = bitt__fail(BITT_EBACKEND, "redis: %s: a schedule field is malformed", what);
    char cron[BITT_CRON_MAX_LEN + 1], topic[BITT_NAME_MAX + 1];
    bitt_schedule_def def = {.key = key,
                             .interval_ms = interval,
                             .kind = (int)kind,
                             .max_attempts = (uint32_t)attempts,
                             .priority = (int32_t)priority};
    if (!rc)
        rc = text_at(r, at + 4, cron, sizeof cron, &def.cron, what);
    if (!rc)
        rc = text_at(r, at + 5, topic, sizeof topic, &def.topic, what);
    if (rc)
        return rc;
    const char *payload = bitt__rd_str(r, at + 1, &def.payload_len);
    def.payload = (const uint8_t *)(payload ? payload : "");
    *out = bitt__schedule_from_def(&def, next, occurrence);
    return *out ? BITT_OK : BITT_ENOMEM;
}

/* A schedule from its key and fields at r->element[at...] (due, list). */
static int schedule_at(const redisReply *r, size_t at, int64_t occurrence, bitt_schedule **out,
                       const char *what)
{
    *out = NULL;
    int rc = bitt__rd_elem_count(r, at, SCHEDULE_WIDTH, what);
    char name[BITT_NAME_MAX + 1];
    const char *key = NULL;
    if (!rc)
        rc = text_at(r, at, name, sizeof name, &key, what);
    if (!rc && !key)
        rc = bitt__fail(BITT_EBACKEND, "redis: %s: a schedule key is malformed", what);
    if (!rc)
        rc = schedule_fields(r, at + 1, key, occurrence, out, what);
    if (!rc && !*out)
        rc = bitt__fail(BITT_EBACKEND, "redis: %s: schedule %s vanished", what, key);
    return rc;
}

int bitt__rd_schedule_set(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                          int64_t first_run_at)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, def->key);
    bitt__rd_arg_i64(&a, def->interval_ms);
    bitt__rd_arg_str(&a, def->cron ? "1" : "0");
    bitt__rd_arg_str(&a, def->cron ? def->cron : "");
    bitt__rd_arg(&a, def->payload, def->payload_len);
    bitt__rd_arg_i64(&a, def->kind);
    bitt__rd_arg_str(&a, def->topic ? "1" : "0");
    bitt__rd_arg_str(&a, def->topic ? def->topic : "");
    bitt__rd_arg_u64(&a, def->max_attempts);
    bitt__rd_arg_i64(&a, def->priority);
    bitt__rd_arg_i64(&a, first_run_at);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_S_SET, &a, 1, &r);
    if (r)
        freeReplyObject(r);
    return rc;
}

int bitt__rd_schedule_due(bitt_backend *be, const bitt_time *t, const char *prefix,
                          bitt_schedule **out)
{
    *out = NULL;
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_str(&a, prefix);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_S_DUE, &a, 1, &r);
    if (rc)
        return rc == BITT_NOTFOUND ? (freeReplyObject(r), BITT_NOTFOUND) : rc;
    /* judged due at t->now: every time of this backend is the caller's */
    rc = schedule_at(r, 1, t->now, out, "schedule due");
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
    int rc = bitt__rd_simple(be, "schedule get", &r, "HMGET", k, "i", "p", "k", "n", "c", "t", "x",
                             "y", (char *)NULL);
    if (rc)
        return rc;
    rc = schedule_fields(r, 0, key, 0, out, "schedule get");
    freeReplyObject(r);
    if (!rc && !*out)
        return BITT_NOTFOUND;
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
        size_t n = (r->elements - 1) / SCHEDULE_WIDTH;
        if ((r->elements - 1) % SCHEDULE_WIDTH)
            rc = bitt__fail(BITT_EBACKEND,
                            "redis: schedule list: the reply has an unexpected shape");
        for (size_t i = 0; !rc && i < n; i++) {
            bitt_schedule *s = NULL;
            rc = schedule_at(r, 1 + SCHEDULE_WIDTH * i, 0, &s, "schedule list");
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
