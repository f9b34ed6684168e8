/*
 * core/redis/scripts.c: the script registry.
 *
 * Every multi-key operation is one Lua script, so Redis runs it atomically.
 * A script's text is a shebang line on Redis 7+ ("#!lua", or "#!lua
 * flags=no-writes" for the read-only ones, which may then run while the
 * server is over maxmemory, and which Redis 7 refuses to run at all when
 * they would write past it: all or nothing), the base library, the
 * libraries it asks for, bind(KEYS, ARGV), and its body. On Redis 7+
 * every script is a function of one library instead, called with FCALL
 * (functions.c: far less server time per call); elsewhere, or when the
 * server refuses Functions, scripts are called with EVALSHA: the SHA of
 * each is learned with SCRIPT LOAD on first use, and again after a
 * NOSCRIPT reply (the server restarted or flushed its cache).
 *
 * Every script gets KEYS[1] = "{prefix}" (the hash tag every key of the
 * store shares: the Cluster slot the script runs in) and ARGV[1] = now.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_internal.h"

#define S(id, name, body, flags) [id] = {name, body, flags}
#define Q (RS_LIB_QCORE | RS_LIB_QUEUE)

const bitt_rd_script bitt__rd_scripts[RS_COUNT] = {
    S(RS_GET_MANY, "kv get_many", bitt__rd_lua_get_many, RS_READONLY),
    S(RS_LIST, "kv list", bitt__rd_lua_list, RS_READONLY),
    S(RS_PURGE, "kv purge", bitt__rd_lua_purge, 0),
    /* One body: its queue ops' branches, which call the queue library,
     * run only in the second (an EVALSHA script defines each function of
     * its libraries on every call, so the first, for the KV commits, goes
     * without; as Functions both are compiled with every library) */
    S(RS_COMMIT, "commit", bitt__rd_lua_commit, RS_LIB_QCORE),
    S(RS_Q_CLAIM, "queue claim", bitt__rd_lua_q_claim, Q),
    S(RS_Q_ACK, "queue ack", bitt__rd_lua_q_ack, Q),
    S(RS_Q_NACK, "queue nack", bitt__rd_lua_q_nack, Q),
    S(RS_Q_EXTEND, "queue extend", bitt__rd_lua_q_extend, Q),
    S(RS_Q_STATS, "queue stats", bitt__rd_lua_q_stats, Q),
    S(RS_Q_DEAD_LIST, "queue dead list", bitt__rd_lua_q_dead_list, Q),
    S(RS_Q_DEAD_RETRY, "queue dead retry", bitt__rd_lua_q_dead_retry, Q),
    S(RS_Q_DEAD_DELETE, "queue dead delete", bitt__rd_lua_q_dead_delete, Q),
    S(RS_L_ACQUIRE, "lease acquire", bitt__rd_lua_l_acquire, 0),
    S(RS_L_RENEW, "lease renew", bitt__rd_lua_l_renew, 0),
    S(RS_L_RELEASE, "lease release", bitt__rd_lua_l_release, 0),
    S(RS_O_PENDING, "outbox pending", bitt__rd_lua_o_pending, RS_READONLY),
    S(RS_O_ACK, "outbox ack", bitt__rd_lua_o_ack, 0),
    S(RS_O_FAIL, "outbox fail", bitt__rd_lua_o_fail, 0),
    S(RS_O_PARK, "outbox park", bitt__rd_lua_o_park, 0),
    S(RS_O_PARKED, "outbox parked", bitt__rd_lua_o_parked, RS_READONLY),
    S(RS_O_MOVE, "outbox retry/discard", bitt__rd_lua_o_move, 0),
    S(RS_O_COUNTS, "outbox counts", bitt__rd_lua_o_counts, RS_READONLY),
    S(RS_P_PUBLISH, "publish", bitt__rd_lua_p_publish, 0),
    S(RS_P_FETCH, "subscription fetch", bitt__rd_lua_p_fetch, RS_READONLY),
    S(RS_B_TAKE, "budget take", bitt__rd_lua_b_take, RS_LIB_BIG),
    S(RS_S_SET, "schedule set", bitt__rd_lua_s_set, 0),
    S(RS_S_DUE, "schedule due", bitt__rd_lua_s_due, RS_READONLY),
    S(RS_S_LIST, "schedule list", bitt__rd_lua_s_list, RS_READONLY),
    S(RS_S_DELETE, "schedule delete", bitt__rd_lua_s_delete, 0),
    S(RS_Q_ACK_MANY, "queue ack_many", bitt__rd_lua_q_ack_many, Q),
    S(RS_KV_SET, "commit", bitt__rd_lua_kv_set, 0),
    S(RS_KV_DELETE, "commit", bitt__rd_lua_kv_delete, RS_ALLOW_OOM),
    S(RS_KV_SET_MANY, "set", bitt__rd_lua_kv_set_many, 0),
    S(RS_Q_SNOOZE, "queue snooze", bitt__rd_lua_q_snooze, Q),
    S(RS_Q_GET, "queue get", bitt__rd_lua_q_get, Q),
    S(RS_COMMIT_QUEUE, "commit", bitt__rd_lua_commit, Q),
    S(RS_Q_PURGE, "queue purge", bitt__rd_lua_q_purge, Q),
};

/* The full text of a script, malloc'd; NULL on out of memory. */
static char *script_text(const bitt_backend *be, const bitt_rd_script *s, size_t *len)
{
    const char *shebang = "";
    if (be->server_major >= 7)
        shebang = (s->flags & RS_READONLY)    ? "#!lua flags=no-writes\n"
                  : (s->flags & RS_ALLOW_OOM) ? "#!lua flags=allow-oom\n"
                                              : "#!lua\n";
    const char *parts[7] = {shebang,
                            bitt__rd_lua_base,
                            (s->flags & RS_LIB_QCORE) ? bitt__rd_lua_qcore : "",
                            (s->flags & RS_LIB_QUEUE) ? bitt__rd_lua_queue : "",
                            (s->flags & RS_LIB_BIG) ? bitt__rd_lua_big : "",
                            "bind(KEYS, ARGV)\n",
                            s->body};
    size_t total = 0;
    for (int i = 0; i < 7; i++)
        total += strlen(parts[i]);
    char *text = bitt__malloc(total + 1);
    if (!text)
        return NULL;
    size_t at = 0;
    for (int i = 0; i < 7; i++) {
        size_t n = strlen(parts[i]);
        memcpy(text + at, parts[i], n);
        at += n;
    }
    text[at] = '\0';
    *len = at;
    return text;
}

static int load(bitt_backend *be, bitt_rd_script_id id)
{
    const bitt_rd_script *s = &bitt__rd_scripts[id];
    size_t len = 0;
    char *text = script_text(be, s, &len);
    if (!text)
        return bitt__fail(BITT_ENOMEM, "redis: out of memory for script %s", s->name);
    bitt_rd_args a;
    bitt__rd_args_init(&a);
    bitt__rd_arg_str(&a, "SCRIPT");
    bitt__rd_arg_str(&a, "LOAD");
    bitt__rd_arg(&a, text, len);
    a.retry = 1;
    redisReply *r = NULL;
    int rc = bitt__rd_call(be, "SCRIPT LOAD", &a, 1, &r);
    bitt__rd_args_free(&a);
    free(text);
    if (rc == BITT_OK && (r->type != REDIS_REPLY_STRING || r->len != 40))
        rc = bitt__fail(BITT_EBACKEND, "redis %s: SCRIPT LOAD of %s gave no SHA", be->where,
                        s->name);
    if (rc == BITT_OK)
        bitt__rd_sha_set(be, id, r->str);
    if (r)
        freeReplyObject(r);
    return rc;
}

void bitt__rd_script_args(bitt_backend *be, bitt_rd_args *a, const bitt_time *t)
{
    bitt__rd_args_init(a);
    bitt__rd_arg_str(a, "EVALSHA");
    bitt__rd_arg_str(a, ""); /* the SHA, set by bitt__rd_eval */
    bitt__rd_arg_str(a, "1");
    bitt__rd_arg_str(a, be->anchor);
    bitt__rd_arg_i64(a, t->now);
}

void bitt__rd_queue_args(bitt_backend *be, bitt_rd_args *a, const bitt_time *t)
{
    const bitt_limits *l = &be->limits;
    if (!l->queue_done_retention_ms && !l->queue_dead_retention_ms) {
        bitt__rd_script_args(be, a, t);
        return;
    }
    bitt__rd_args_init(a);
    bitt__rd_arg_str(a, "EVALSHA");
    bitt__rd_arg_str(a, "");
    bitt__rd_arg_str(a, "1");
    bitt__rd_arg_str(a, be->anchor);
    char text[72];
    int n = snprintf(text, sizeof text, "%lld/%lld/%lld", (long long)t->now,
                     (long long)l->queue_done_retention_ms, (long long)l->queue_dead_retention_ms);
    bitt__rd_arg_copy(a, text, (size_t)n);
}

int bitt__rd_eval(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a, size_t items,
                  redisReply **out)
{
    *out = NULL;
    /* An argument list that ran out of memory may have no slots at all:
     * fail before writing the command's name and SHA into them. */
    if (a->oom)
        return bitt__rd_args_finish(a);
    if (be->server_major >= 7 && !be->fn_off) {
        int rc = bitt__rd_fcall(be, id, a, items, out);
        if (rc != BITT_RD_FN_REFUSED)
            return rc;
        a->v[0] = "EVALSHA";
        a->len[0] = 7;
    }
    const char *name = bitt__rd_scripts[id].name;
    /* At most: a load, a NOSCRIPT (the server lost it since), a load again.
     * The SHA is copied: another thread may forget or set it meanwhile. */
    char sha[41];
    for (int attempt = 0; attempt < 2; attempt++) {
        bitt__rd_sha_get(be, id, sha);
        if (!sha[0]) {
            int rc = load(be, id);
            if (rc)
                return rc;
            bitt__rd_sha_get(be, id, sha);
        }
        if (a->count >= 2) {
            a->v[1] = sha;
            a->len[1] = 40;
        }
        a->retry = (bitt__rd_scripts[id].flags & RS_READONLY) != 0;
        int rc = bitt__rd_call(be, name, a, items, out);
        if (rc != BITT_RD_NOSCRIPT)
            return rc;
        bitt__rd_sha_set(be, id, NULL);
    }
    return bitt__fail(BITT_EBACKEND, "redis %s: %s: the server keeps forgetting the script",
                      be->where, name);
}

int bitt__rd_run(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a, size_t items,
                 redisReply **out)
{
    redisReply *r = NULL;
    int rc = bitt__rd_eval(be, id, a, items, &r);
    bitt__rd_args_free(a);
    if (rc)
        return rc;
    rc = bitt__rd_status(r, bitt__rd_scripts[id].name);
    if (rc < 0) {
        freeReplyObject(r);
        return rc;
    }
    *out = r;
    return rc;
}
