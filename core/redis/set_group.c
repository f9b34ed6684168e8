/*
 * core/redis/set_group.c: lone sets of fibers of one thread in one script.
 *
 * A set is one FCALL of bitt__rd_lua_kv_set, and most of its server time is
 * the function call itself, not its writes (INFO commandstats: ~10 us per
 * call against ~1.5 us for its HINCRBY and HSET). When many fibers of one
 * thread set at once (bitt_batch_run, core/batch.c), each would pay it:
 * instead the first one opens a group, yields once so that the others
 * ready to run join it, and sends one FCALL of bitt__rd_lua_kv_set_many
 * for all of them. Each set keeps its own semantics: its own versionstamp,
 * its own status and message (a set the server refuses fails alone), and
 * nothing is grouped into a transaction the caller can observe.
 *
 * Fibers of one thread never run at once and switch only inside
 * bitt__io_wait, so the thread's open groups need no lock. A group lives on
 * its leader's stack; a member's item lives on the member's stack, and the
 * leader writes its result and wakes it. A member whose wait fails (its
 * fiber is being torn down) leaves the group before the leader writes.
 */
#include <stdio.h>

#include "redis_internal.h"

typedef struct set_item {
    const bitt_op *op;
    int64_t expires;
    void *fiber;
    int done, rc;
    uint64_t version;
    char why[400]; /* a failure's message */
} set_item;

typedef struct set_group {
    bitt_backend *be;
    set_item *items[BITT_RD_SET_GROUP_MAX]; /* NULL: a member that left */
    size_t n;
    int sealed; /* sent: nobody joins any more */
    struct set_group *next;
} set_group;

static _Thread_local set_group *open_groups;

static set_group *open_group(bitt_backend *be)
{
    for (set_group *g = open_groups; g; g = g->next)
        if (g->be == be && !g->sealed && g->n < BITT_RD_SET_GROUP_MAX)
            return g;
    return NULL;
}

static void unlist(set_group *g)
{
    for (set_group **q = &open_groups; *q; q = &(*q)->next)
        if (*q == g) {
            *q = g->next;
            return;
        }
}

static void item_fail(set_item *it, int rc, const char *why)
{
    it->rc = rc;
    snprintf(it->why, sizeof it->why, "%s", why && *why ? why : bitt_strerror(rc));
}

/* A member: waits for the leader's result. */
static int join(set_group *g, set_item *it, bitt_commit *c)
{
    g->items[g->n++] = it;
    while (!it->done) {
        if (bitt__io_wait(-1, 0, INT64_MAX) < 0 && !it->done) {
            for (size_t i = 0; i < g->n; i++)
                if (g->items[i] == it)
                    g->items[i] = NULL;
            return bitt__fail(BITT_EBACKEND,
                              "redis %s: set: the wait was cancelled (the set may still be "
                              "applied)",
                              g->be->where);
        }
    }
    if (it->rc < 0)
        return bitt__fail(it->rc, "%s", it->why);
    c->version = it->version;
    return BITT_OK;
}

/* The leader's script call and the result of each set. */
static void run(set_group *g, const bitt_time *t)
{
    bitt_backend *be = g->be;
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg_u64(&a, g->n);
    for (size_t i = 0; i < g->n; i++) {
        const bitt_op *op = g->items[i]->op;
        bitt__rd_arg(&a, op->key, op->key_len);
        bitt__rd_arg(&a, op->value, op->value_len);
        bitt__rd_arg_i64(&a, op->kind);
        bitt__rd_arg_i64(&a, g->items[i]->expires);
    }
    redisReply *r = NULL;
    int rc = bitt__rd_eval(be, RS_KV_SET_MANY, &a, g->n + 1, &r);
    bitt__rd_args_free(&a);
    if (!rc)
        rc = bitt__rd_elem_count(r, 0, 1 + 2 * g->n, "set");
    if (!rc && (r->element[0]->type != REDIS_REPLY_INTEGER || r->element[0]->integer != 0))
        rc = bitt__fail(BITT_EBACKEND, "redis: set: the reply has an unexpected shape");
    const char *group_why = bitt_error_last();
    for (size_t i = 0; i < g->n; i++) {
        set_item *it = g->items[i];
        if (!it)
            continue;
        if (rc) {
            item_fail(it, rc, group_why);
            continue;
        }
        int64_t failed = 0;
        int irc = bitt__rd_i64(r, 1 + 2 * i, &failed, "set");
        if (!irc && failed) {
            size_t n = 0;
            const char *s = bitt__rd_str(r, 2 + 2 * i, &n);
            irc = bitt__rd_server_error(be, "set", s ? s : "", n);
        } else if (!irc) {
            irc = bitt__rd_u64(r, 2 + 2 * i, &it->version, "set");
        }
        if (irc)
            item_fail(it, irc, bitt_error_last());
        else
            it->rc = BITT_OK;
    }
    freeReplyObject(r);
}

int bitt__rd_set_grouped(bitt_backend *be, bitt_commit *c)
{
    void *self = bitt__io_self();
    if (!self || c->count != 1 || c->ops[0].type != BITT_OP_SET)
        return BITT_RD_UNGROUPED;
    set_item me = {
        .op = &c->ops[0], .expires = bitt__expiry(c->time.now, c->ops[0].ttl_ms), .fiber = self};
    set_group *open = open_group(be);
    if (open)
        return join(open, &me, c);
    if (!bitt__io_others_ready())
        return BITT_RD_UNGROUPED; /* alone: the lone set's own script */

    set_group g = {.be = be, .next = open_groups};
    g.items[g.n++] = &me;
    open_groups = &g;
    bitt__io_wait(-1, 0, bitt__monotonic_ms()); /* the others ready join */
    unlist(&g);
    g.sealed = 1;
    if (g.n == 1)
        return BITT_RD_UNGROUPED;
    run(&g, &c->time);
    /* the members' results are written: wake them (this fiber's own last) */
    for (size_t i = 1; i < g.n; i++) {
        if (g.items[i]) {
            g.items[i]->done = 1;
            bitt__io_wake(g.items[i]->fiber);
        }
    }
    if (me.rc < 0)
        return bitt__fail(me.rc, "%s", me.why);
    c->version = me.version;
    return BITT_OK;
}
