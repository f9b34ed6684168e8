/*
 * tests/c/support/contract_modules_prep.c: the steps of the 0.2 modules
 * (queue, leases, outbox, publish/subscribe, budgets, schedules) and the txn
 * actions enqueue, fence and outbox_append, read from JSON into a ct_op
 * (README.md, "Queue", "Leases", ...). Like contract_prep.c: anything a case
 * says that the README does not define is a broken case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract_impl.h"

/* ---- the ops: name first, then the arguments -------------------------------------- */

static const char *const A_ENQUEUE[] = {"queue.enqueue", "topic", "payload",  "kind", "delay",
                                        "max_attempts",  "dedup", "priority", NULL};
static const char *const A_DEQUEUE[] = {"queue.dequeue", "topic", "topics", "limit",
                                        "lease",         "wait",  "cancel", NULL};
static const char *const A_QGET[] = {"queue.get", "topic", "id", NULL};
static const char *const A_QCANCEL[] = {"queue.cancel", "topic", "id", NULL};
static const char *const A_RESCHEDULE[] = {"queue.reschedule", "topic", "id", "delay", NULL};
static const char *const A_ACK[] = {"queue.ack", "topic",       "id", "token",
                                    "result",    "result_kind", NULL};
static const char *const A_QPURGE[] = {"queue.purge", "topic", NULL};
static const char *const A_ACK_MANY[] = {"queue.ack_many", "topic", "items", NULL};
static const char *const A_NACK[] = {"queue.nack", "topic", "id", "token", "error", "delay", NULL};
static const char *const A_EXTEND[] = {"queue.extend", "topic", "id", "token", "lease", NULL};
static const char *const A_SNOOZE[] = {"queue.snooze", "topic", "id", "token", "delay", NULL};
static const char *const A_DEAD_LIST[] = {"queue.dead_list", "topic", "after", "limit", NULL};
static const char *const A_DEAD_RETRY[] = {"queue.dead_retry", "topic", "id", NULL};
static const char *const A_DEAD_DELETE[] = {"queue.dead_delete", "topic", "id", NULL};
static const char *const A_STATS[] = {"queue.stats", "topic", NULL};
static const char *const A_ACQUIRE[] = {"lease.acquire", "name", "owner", "ttl", NULL};
static const char *const A_RENEW[] = {"lease.renew", "name", "owner", "epoch", "ttl", NULL};
static const char *const A_RELEASE[] = {"lease.release", "name", "owner", "epoch", NULL};
static const char *const A_LGET[] = {"lease.get", "name", NULL};
static const char *const A_APPEND[] = {"outbox.append", "stream", "event", "kind", NULL};
static const char *const A_PENDING[] = {"outbox.pending", "stream", "limit", NULL};
static const char *const A_OACK[] = {"outbox.ack", "stream", "seqs", NULL};
static const char *const A_FAIL[] = {"outbox.fail", "stream",          "seq",
                                     "error",       "next_attempt_at", NULL};
static const char *const A_PARK[] = {"outbox.park", "stream", "seq", "reason", "error", NULL};
static const char *const A_PARKED[] = {"outbox.parked", "stream", "reason", "limit", NULL};
static const char *const A_RETRY[] = {"outbox.retry", "stream", "seqs", NULL};
static const char *const A_DISCARD[] = {"outbox.discard", "stream", "seqs", NULL};
static const char *const A_COUNTS[] = {"outbox.counts", "stream", NULL};
static const char *const A_SUBSCRIBE[] = {"pubsub.subscribe", "channel", NULL};
static const char *const A_PUBLISH[] = {"pubsub.publish", "channel", "data", NULL};
static const char *const A_NEXT[] = {"pubsub.next", "sub", "timeout", "cancel", NULL};
static const char *const A_CLOSE[] = {"pubsub.close", "sub", NULL};
static const char *const A_TAKE[] = {"budget.take", "name", "capacity", "refill",
                                     "period",      "n",    NULL};
static const char *const A_UPSERT[] = {
    "schedule.upsert", "key",          "interval", "payload", "kind", "first_run_at", "cron",
    "topic",           "max_attempts", "priority", NULL};
static const char *const A_CLAIM[] = {"schedule.claim", "prefix", NULL};
static const char *const A_SGET[] = {"schedule.get", "key", NULL};
static const char *const A_SLIST[] = {"schedule.list", NULL};
static const char *const A_SDELETE[] = {"schedule.delete", "key", NULL};

static const struct {
    int code;
    const char *const *args;
    int parallel_ok;
} MODULE_OPS[] = {
    {OP_Q_ENQUEUE, A_ENQUEUE, 1},
    {OP_Q_DEQUEUE, A_DEQUEUE, 1},
    {OP_Q_ACK, A_ACK, 0},
    {OP_Q_ACK_MANY, A_ACK_MANY, 0},
    {OP_Q_NACK, A_NACK, 0},
    {OP_Q_EXTEND, A_EXTEND, 0},
    {OP_Q_SNOOZE, A_SNOOZE, 0},
    {OP_Q_DEAD_LIST, A_DEAD_LIST, 0},
    {OP_Q_DEAD_RETRY, A_DEAD_RETRY, 0},
    {OP_Q_DEAD_DELETE, A_DEAD_DELETE, 0},
    {OP_Q_STATS, A_STATS, 0},
    {OP_Q_GET, A_QGET, 0},
    {OP_Q_CANCEL, A_QCANCEL, 0},
    {OP_Q_RESCHEDULE, A_RESCHEDULE, 0},
    {OP_Q_PURGE, A_QPURGE, 0},
    {OP_L_ACQUIRE, A_ACQUIRE, 1},
    {OP_L_RENEW, A_RENEW, 0},
    {OP_L_RELEASE, A_RELEASE, 0},
    {OP_L_GET, A_LGET, 0},
    {OP_O_APPEND, A_APPEND, 1},
    {OP_O_PENDING, A_PENDING, 0},
    {OP_O_ACK, A_OACK, 0},
    {OP_O_FAIL, A_FAIL, 0},
    {OP_O_PARK, A_PARK, 0},
    {OP_O_PARKED, A_PARKED, 0},
    {OP_O_RETRY, A_RETRY, 0},
    {OP_O_DISCARD, A_DISCARD, 0},
    {OP_O_COUNTS, A_COUNTS, 0},
    {OP_P_SUBSCRIBE, A_SUBSCRIBE, 0},
    {OP_P_PUBLISH, A_PUBLISH, 1},
    {OP_P_NEXT, A_NEXT, 0},
    {OP_P_CLOSE, A_CLOSE, 0},
    {OP_B_TAKE, A_TAKE, 1},
    {OP_S_UPSERT, A_UPSERT, 0},
    {OP_S_CLAIM, A_CLAIM, 1},
    {OP_S_GET, A_SGET, 0},
    {OP_S_LIST, A_SLIST, 0},
    {OP_S_DELETE, A_SDELETE, 0},
};
#define NMODULE_OPS (sizeof MODULE_OPS / sizeof MODULE_OPS[0])

const char *const *ct_module_args(int code, int *parallel_ok)
{
    for (size_t i = 0; i < NMODULE_OPS; i++)
        if (MODULE_OPS[i].code == code) {
            *parallel_ok = MODULE_OPS[i].parallel_ok;
            return MODULE_OPS[i].args;
        }
    return NULL;
}

/* ---- argument forms ----------------------------------------------------------------- */

static int required(ct_run *run, const js_value *v, const char *name)
{
    return v ? 0 : ct_broken(run, "\"%s\" is required", name);
}

/* The saved variable a {"var": name} object names, or NULL (broken case). */
static const ct_var *var_of(ct_run *run, const js_value *v, const char *what)
{
    const char *form = NULL;
    const js_value *name = ct_only_member(v, &form);
    const ct_var *var = name && name->type == JS_STRING && !strcmp(form, "var")
                            ? ct_var_find(run, name->str)
                            : NULL;
    if (!var || !var->text) {
        ct_broken(run, "%s: no saved variable %s here", what,
                  name && name->type == JS_STRING ? name->str : "{\"var\": name}");
        return NULL;
    }
    return var;
}

int ct_u64_arg(ct_run *run, const js_value *v, const char *what, uint64_t *out)
{
    if (v && v->type == JS_OBJECT) {
        const ct_var *var = var_of(run, v, what);
        if (!var)
            return -1;
        const char *p = var->text;
        if (!*p || strspn(p, "0123456789") != strlen(p))
            return ct_broken(run, "%s: variable %s holds \"%s\", not a number", what, var->name, p);
        *out = strtoull(p, NULL, 10);
        return 0;
    }
    return ct_uint64_of(run, v, what, out);
}

int ct_text_arg(ct_run *run, const js_value *v, const char *what, char **out)
{
    if (v && v->type == JS_STRING) {
        *out = strdup(v->str);
    } else if (v && v->type == JS_OBJECT) {
        const ct_var *var = var_of(run, v, what);
        if (!var)
            return -1;
        *out = strdup(var->text);
    } else {
        return ct_broken(run, "%s is a string or {\"var\": name}", what);
    }
    return *out ? 0 : ct_broken(run, "out of memory");
}

/* A name argument (topic, lease, owner, stream, channel, budget, key): a byte
 * string, passed as a NUL-terminated string. */
static int name_arg(ct_run *run, const js_value *v, const char *member, ct_bytes *out)
{
    if (required(run, v, member) || ct_bytes_of(run, v, out))
        return -1;
    if (out->n && memchr(out->p, 0, out->n))
        return ct_broken(run, "%s: a name cannot hold a NUL byte (it is a C string)", member);
    return 0;
}

/* An optional int64: absent leaves *out (the default). */
static int opt_i64(ct_run *run, const js_value *step, const char *member, int64_t *out)
{
    const js_value *v = js_get(step, member);
    return v ? ct_int64_of(run, v, member, out) : 0;
}

static int req_i64(ct_run *run, const js_value *step, const char *member, int64_t *out)
{
    const js_value *v = js_get(step, member);
    return required(run, v, member) || ct_int64_of(run, v, member, out);
}

/* An optional text: absent or null is NULL. */
static int opt_text(ct_run *run, const js_value *step, const char *member, char **out)
{
    const js_value *v = js_get(step, member);
    *out = NULL;
    if (!v || v->type == JS_NULL)
        return 0;
    if (v->type == JS_STRING || (v->type == JS_OBJECT && js_get(v, "var")))
        return ct_text_arg(run, v, member, out);
    /* any other byte string form: any bytes but NUL (text that is not UTF-8) */
    ct_bytes b = {0};
    if (ct_bytes_of(run, v, &b))
        return -1;
    int rc = b.n && memchr(b.p, 0, b.n) ? ct_broken(run, "%s cannot hold a NUL byte", member) : 0;
    if (!rc && !(*out = malloc(b.n + 1)))
        rc = ct_broken(run, "out of memory");
    if (!rc) {
        if (b.n)
            memcpy(*out, b.p, b.n);
        (*out)[b.n] = '\0';
    }
    ct_bytes_free(&b);
    return rc;
}

static int opt_u32(ct_run *run, const js_value *step, const char *member, uint32_t *out)
{
    const js_value *v = js_get(step, member);
    size_t n = 0;
    if (!v)
        return 0;
    if (ct_size_of(run, v, member, UINT32_MAX, &n))
        return -1;
    *out = (uint32_t)n;
    return 0;
}

/* An optional int32 (a priority): absent leaves *out. */
static int opt_i32(ct_run *run, const js_value *step, const char *member, int32_t *out)
{
    const js_value *v = js_get(step, member);
    int64_t n;
    if (!v)
        return 0;
    if (ct_int64_of(run, v, member, &n))
        return -1;
    if (n < INT32_MIN || n > INT32_MAX)
        return ct_broken(run, "%s is an int32", member);
    *out = (int32_t)n;
    return 0;
}

/* A dequeue's "topic" (a name) or "topics" (an array of names, kept in
 * op->keys), exactly one of them. */
static int topics_of(ct_run *run, const js_value *step, ct_op *op)
{
    const js_value *v = js_get(step, "topics");
    if (!v)
        return name_arg(run, js_get(step, "topic"), "topic", &op->mname);
    if (js_get(step, "topic"))
        return ct_broken(run, "a dequeue names \"topic\" or \"topics\", not both");
    if (v->type != JS_ARRAY)
        return ct_broken(run, "\"topics\" is an array of names");
    op->has_topics = 1;
    op->has_mname = 0;
    op->keys = calloc(v->count ? v->count : 1, sizeof *op->keys);
    if (!op->keys)
        return ct_broken(run, "out of memory");
    for (size_t i = 0; i < v->count; i++, op->nkeys++)
        if (name_arg(run, v->items[i], "topics", &op->keys[i]))
            return -1;
    return 0;
}

/* A park reason: "poison", "invalid", "any" (0) or an integer. */
static int reason_of(ct_run *run, const js_value *v, int *out)
{
    if (v && v->type == JS_STRING && !strcmp(v->str, "poison"))
        *out = BITT_PARK_POISON;
    else if (v && v->type == JS_STRING && !strcmp(v->str, "invalid"))
        *out = BITT_PARK_INVALID;
    else if (v && v->type == JS_STRING && !strcmp(v->str, "any"))
        *out = 0;
    else {
        int64_t n;
        if (!v || v->type != JS_NUMBER || ct_int64_of(run, v, "reason", &n) || n < -1000 ||
            n > 1000)
            return ct_broken(run, "reason is poison, invalid, any or a small integer");
        *out = (int)n;
    }
    return 0;
}

/* One element of a list: a seq (numbers, {"var": name}), or with tokens an
 * ack_many item {"id", "token"} (*token malloc'd). */
static int element_of(ct_run *run, const js_value *e, int with_tokens, uint64_t *id, char **token)
{
    static const char *const item_names[] = {"id", "token", NULL};
    if (!with_tokens)
        return ct_u64_arg(run, e, "seqs", id);
    if (e->type != JS_OBJECT)
        return ct_broken(run, "an ack_many item is an object {\"id\", \"token\"}");
    return ct_members(run, e, "an ack_many item", item_names) ||
                   required(run, js_get(e, "id"), "id") ||
                   ct_u64_arg(run, js_get(e, "id"), "id", id) ||
                   required(run, js_get(e, "token"), "token") ||
                   ct_text_arg(run, js_get(e, "token"), "token", token)
               ? -1
               : 0;
}

/* The seqs of the outbox (with_tokens 0) or the items of queue.ack_many
 * (1: op->tokens too), each element possibly {"copies": N, "of": element}. */
static int list_of(ct_run *run, const js_value *v, ct_op *op, int with_tokens)
{
    static const char *const names[] = {"copies", "of", NULL};
    const char *what = with_tokens ? "items" : "seqs";
    if (!v || v->type != JS_ARRAY)
        return ct_broken(run, "%s is an array", what);
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass && (!(op->ids = calloc(total + 1, sizeof *op->ids)) ||
                     (with_tokens && !(op->tokens = calloc(total + 1, sizeof *op->tokens)))))
            return ct_broken(run, "out of memory");
        for (size_t i = 0; i < v->count; i++) {
            const js_value *e = v->items[i];
            size_t copies = 1;
            if (e->type == JS_OBJECT && js_get(e, "copies")) {
                if (ct_members(run, e, what, names) ||
                    ct_size_of(run, js_get(e, "copies"), "copies", 100000, &copies) ||
                    required(run, js_get(e, "of"), "of"))
                    return -1;
                e = js_get(e, "of");
            }
            if (!pass) {
                total += copies;
                continue;
            }
            uint64_t id;
            char *token = NULL;
            if (element_of(run, e, with_tokens, &id, &token))
                return -1;
            for (size_t c = 0; c < copies; c++) {
                if (with_tokens && !(op->tokens[op->nids] = c ? strdup(token) : token))
                    return ct_broken(run, "out of memory");
                op->ids[op->nids++] = id;
            }
        }
    }
    op->has_ids = 1;
    return 0;
}

/* The subscription a step names with "sub": "name". */
static int sub_of(ct_run *run, const js_value *step, ct_op *op, int detach)
{
    const js_value *v = js_get(step, "sub");
    if (!v || v->type != JS_STRING)
        return ct_broken(run, "\"sub\" names a saved subscription");
    for (size_t i = 0; i < run->nsubs; i++) {
        if (!run->subs[i].name || strcmp(run->subs[i].name, v->str))
            continue;
        op->sub = run->subs[i].sub;
        if (detach) { /* pubsub.close: the op owns it now, and closes it */
            free(run->subs[i].name);
            run->subs[i] = run->subs[--run->nsubs];
        }
        return 0;
    }
    return ct_broken(run, "no open subscription named %s", v->str);
}

/* "cancel": absent, or "fired" (the call gets a bitt_cancel fired before it). */
static int cancel_of(ct_run *run, const js_value *step, ct_op *op)
{
    const js_value *v = js_get(step, "cancel");
    if (!v)
        return 0;
    if (v->type != JS_STRING || strcmp(v->str, "fired"))
        return ct_broken(run, "\"cancel\" is \"fired\" (or absent)");
    op->cancel = 1;
    return 0;
}

/* An ack's "result" (a byte string) and "result_kind" (a kind, bytes when
 * absent); *has 0 when there is no result. */
static int result_of(ct_run *run, const js_value *step, ct_bytes *value, int *kind, int *has)
{
    const js_value *v = js_get(step, "result");
    *has = v && v->type != JS_NULL;
    if (!*has)
        return js_get(step, "result_kind") ? ct_broken(run, "result_kind without a result") : 0;
    return ct_bytes_of(run, v, value) || ct_kind_of(run, js_get(step, "result_kind"), kind);
}

/* A schedule's cron, topic, max_attempts and priority (any of them makes
 * the step call bitt_schedule_set rather than bitt_schedule_upsert). */
static int sched_opts_of(ct_run *run, const js_value *step, ct_op *op)
{
    op->sched_opts = js_get(step, "cron") || js_get(step, "topic") ||
                     js_get(step, "max_attempts") || js_get(step, "priority");
    return opt_text(run, step, "cron", &op->cron) || opt_text(run, step, "topic", &op->stopic) ||
           opt_u32(run, step, "max_attempts", &op->max_attempts) ||
           opt_i32(run, step, "priority", &op->priority);
}

/* ---- ops ---------------------------------------------------------------------------- */

int ct_prepare_module(ct_run *run, const js_value *step, ct_op *op)
{
    const js_value *v;
    op->has_mname = 1;
    switch (op->code) {
    case OP_Q_ENQUEUE:
        if (name_arg(run, js_get(step, "topic"), "topic", &op->mname) ||
            ((v = js_get(step, "payload")) && ct_bytes_of(run, v, &op->value)) ||
            ct_kind_of(run, js_get(step, "kind"), &op->kind) ||
            opt_i64(run, step, "delay", &op->delay) ||
            opt_u32(run, step, "max_attempts", &op->max_attempts) ||
            opt_i32(run, step, "priority", &op->priority))
            return -1;
        v = js_get(step, "dedup");
        op->has_dedup = v && v->type != JS_NULL;
        return op->has_dedup ? ct_bytes_of(run, v, &op->dedup) : 0;
    case OP_Q_DEQUEUE:
        return topics_of(run, step, op) || opt_u32(run, step, "limit", &op->limit) ||
               opt_i64(run, step, "lease", &op->lease_ms) ||
               opt_i64(run, step, "wait", &op->wait_ms) || cancel_of(run, step, op);
    case OP_Q_ACK:
    case OP_Q_NACK:
    case OP_Q_EXTEND:
    case OP_Q_SNOOZE:
        op->delay = op->code == OP_Q_SNOOZE ? 0 : -1;
        if (name_arg(run, js_get(step, "topic"), "topic", &op->mname) ||
            required(run, js_get(step, "id"), "id") ||
            ct_u64_arg(run, js_get(step, "id"), "id", &op->id) ||
            required(run, js_get(step, "token"), "token") ||
            ct_text_arg(run, js_get(step, "token"), "token", &op->token))
            return -1;
        if (op->code == OP_Q_NACK)
            return opt_text(run, step, "error", &op->error) ||
                   opt_i64(run, step, "delay", &op->delay);
        if (op->code == OP_Q_SNOOZE)
            return opt_i64(run, step, "delay", &op->delay);
        if (op->code == OP_Q_EXTEND)
            return req_i64(run, step, "lease", &op->lease_ms);
        return result_of(run, step, &op->value, &op->kind, &op->has_result);
    case OP_Q_ACK_MANY:
        return name_arg(run, js_get(step, "topic"), "topic", &op->mname) ||
               required(run, js_get(step, "items"), "items") ||
               list_of(run, js_get(step, "items"), op, 1);
    case OP_Q_DEAD_LIST:
        return name_arg(run, js_get(step, "topic"), "topic", &op->mname) ||
               ((v = js_get(step, "after")) && ct_u64_arg(run, v, "after", &op->id)) ||
               opt_u32(run, step, "limit", &op->limit);
    case OP_Q_DEAD_RETRY:
    case OP_Q_DEAD_DELETE:
        return name_arg(run, js_get(step, "topic"), "topic", &op->mname) ||
               ((v = js_get(step, "id")) && ct_u64_arg(run, v, "id", &op->id));
    case OP_Q_STATS: return name_arg(run, js_get(step, "topic"), "topic", &op->mname);
    case OP_Q_PURGE:
        v = js_get(step, "topic");
        op->has_mname = v && v->type != JS_NULL;
        return op->has_mname ? name_arg(run, v, "topic", &op->mname) : 0;
    case OP_Q_GET:
    case OP_Q_CANCEL:
    case OP_Q_RESCHEDULE:
        return name_arg(run, js_get(step, "topic"), "topic", &op->mname) ||
               required(run, js_get(step, "id"), "id") ||
               ct_u64_arg(run, js_get(step, "id"), "id", &op->id) ||
               opt_i64(run, step, "delay", &op->delay);

    case OP_L_ACQUIRE:
    case OP_L_RENEW:
    case OP_L_RELEASE:
        if (name_arg(run, js_get(step, "name"), "name", &op->mname) ||
            name_arg(run, js_get(step, "owner"), "owner", &op->owner))
            return -1;
        if (op->code != OP_L_RELEASE && req_i64(run, step, "ttl", &op->ttl))
            return -1;
        if (op->code != OP_L_ACQUIRE && (required(run, js_get(step, "epoch"), "epoch") ||
                                         ct_u64_arg(run, js_get(step, "epoch"), "epoch", &op->id)))
            return -1;
        return 0;
    case OP_L_GET: return name_arg(run, js_get(step, "name"), "name", &op->mname);

    case OP_O_APPEND:
        return name_arg(run, js_get(step, "stream"), "stream", &op->mname) ||
               ((v = js_get(step, "event")) && ct_bytes_of(run, v, &op->value)) ||
               ct_kind_of(run, js_get(step, "kind"), &op->kind);
    case OP_O_PENDING:
        return name_arg(run, js_get(step, "stream"), "stream", &op->mname) ||
               opt_u32(run, step, "limit", &op->limit);
    case OP_O_ACK:
        return name_arg(run, js_get(step, "stream"), "stream", &op->mname) ||
               required(run, js_get(step, "seqs"), "seqs") ||
               list_of(run, js_get(step, "seqs"), op, 0);
    case OP_O_RETRY:
    case OP_O_DISCARD:
        return name_arg(run, js_get(step, "stream"), "stream", &op->mname) ||
               ((v = js_get(step, "seqs")) && v->type != JS_NULL && list_of(run, v, op, 0));
    case OP_O_FAIL:
        return name_arg(run, js_get(step, "stream"), "stream", &op->mname) ||
               required(run, js_get(step, "seq"), "seq") ||
               ct_u64_arg(run, js_get(step, "seq"), "seq", &op->id) ||
               opt_text(run, step, "error", &op->error) ||
               opt_i64(run, step, "next_attempt_at", &op->next_at);
    case OP_O_PARK:
        return name_arg(run, js_get(step, "stream"), "stream", &op->mname) ||
               required(run, js_get(step, "seq"), "seq") ||
               ct_u64_arg(run, js_get(step, "seq"), "seq", &op->id) ||
               required(run, js_get(step, "reason"), "reason") ||
               reason_of(run, js_get(step, "reason"), &op->reason) ||
               opt_text(run, step, "error", &op->error);
    case OP_O_PARKED:
        return name_arg(run, js_get(step, "stream"), "stream", &op->mname) ||
               ((v = js_get(step, "reason")) && reason_of(run, v, &op->reason)) ||
               opt_u32(run, step, "limit", &op->limit);
    case OP_O_COUNTS: return name_arg(run, js_get(step, "stream"), "stream", &op->mname);

    case OP_P_SUBSCRIBE: return name_arg(run, js_get(step, "channel"), "channel", &op->mname);
    case OP_P_PUBLISH:
        return name_arg(run, js_get(step, "channel"), "channel", &op->mname) ||
               ((v = js_get(step, "data")) && ct_bytes_of(run, v, &op->value));
    case OP_P_NEXT:
        return sub_of(run, step, op, 0) || opt_i64(run, step, "timeout", &op->timeout) ||
               cancel_of(run, step, op);
    case OP_P_CLOSE: return sub_of(run, step, op, 1);

    case OP_B_TAKE:
        return name_arg(run, js_get(step, "name"), "name", &op->mname) ||
               req_i64(run, step, "capacity", &op->capacity) ||
               req_i64(run, step, "refill", &op->refill) ||
               req_i64(run, step, "period", &op->period) || req_i64(run, step, "n", &op->n);

    case OP_S_UPSERT:
        return name_arg(run, js_get(step, "key"), "key", &op->mname) ||
               req_i64(run, step, "interval", &op->interval) ||
               ((v = js_get(step, "payload")) && ct_bytes_of(run, v, &op->value)) ||
               ct_kind_of(run, js_get(step, "kind"), &op->kind) ||
               opt_i64(run, step, "first_run_at", &op->first_run_at) ||
               sched_opts_of(run, step, op);
    case OP_S_CLAIM:
        v = js_get(step, "prefix");
        op->has_mname = v && v->type != JS_NULL;
        return op->has_mname ? ct_bytes_of(run, v, &op->mname) : 0;
    case OP_S_GET:
    case OP_S_DELETE: return name_arg(run, js_get(step, "key"), "key", &op->mname);
    case OP_S_LIST: return 0;
    }
    return ct_broken(run, "op %s has no preparation", op->name);
}

/* ---- txn actions ---------------------------------------------------------------------- */

/* The queue ops by id: queue_ack, queue_nack, queue_snooze, queue_extend
 * (with "token"), queue_cancel and queue_reschedule; 1 when o is none. */
static int queue_action(ct_run *run, const js_value *a, const char *o, ct_action *out)
{
    static const char *const N_ACK[] = {"op",     "topic",       "id",      "token",
                                        "result", "result_kind", "refused", NULL};
    static const char *const N_NACK[] = {"op",    "topic", "id",      "token",
                                         "error", "delay", "refused", NULL};
    static const char *const N_SNOOZE[] = {"op", "topic", "id", "token", "delay", "refused", NULL};
    static const char *const N_EXTEND[] = {"op", "topic", "id", "token", "lease", "refused", NULL};
    static const char *const N_CANCEL[] = {"op", "topic", "id", "refused", NULL};
    static const char *const N_RESCHEDULE[] = {"op", "topic", "id", "delay", "refused", NULL};
    static const struct {
        const char *name;
        int type;
        const char *const *members;
    } forms[] = {
        {"queue_ack", ACT_Q_ACK, N_ACK},
        {"queue_nack", ACT_Q_NACK, N_NACK},
        {"queue_snooze", ACT_Q_SNOOZE, N_SNOOZE},
        {"queue_extend", ACT_Q_EXTEND, N_EXTEND},
        {"queue_cancel", ACT_Q_CANCEL, N_CANCEL},
        {"queue_reschedule", ACT_Q_RESCHEDULE, N_RESCHEDULE},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (strcmp(o, forms[i].name))
            continue;
        out->type = forms[i].type;
        out->delay = out->type == ACT_Q_NACK ? -1 : 0;
        if (ct_members(run, a, o, forms[i].members) ||
            name_arg(run, js_get(a, "topic"), "topic", &out->name) ||
            required(run, js_get(a, "id"), "id") ||
            ct_u64_arg(run, js_get(a, "id"), "id", &out->id))
            return -1;
        if (out->type <= ACT_Q_EXTEND &&
            (required(run, js_get(a, "token"), "token") ||
             ct_text_arg(run, js_get(a, "token"), "token", &out->token)))
            return -1;
        if (out->type == ACT_Q_EXTEND)
            return req_i64(run, a, "lease", &out->delay) ? -1 : 0;
        if (out->type == ACT_Q_ACK)
            return result_of(run, a, &out->value, &out->kind, &out->has_result);
        return opt_i64(run, a, "delay", &out->delay) ||
                       (out->type == ACT_Q_NACK && opt_text(run, a, "error", &out->error))
                   ? -1
                   : 0;
    }
    return 1;
}

int ct_prepare_module_action(ct_run *run, const js_value *a, const char *o, ct_action *out)
{
    static const char *const N_ENQUEUE[] = {"op",           "topic", "payload",  "kind",    "delay",
                                            "max_attempts", "dedup", "priority", "refused", NULL};
    static const char *const N_FENCE[] = {"op", "name", "owner", "epoch", "refused", NULL};
    static const char *const N_OUTBOX[] = {"op", "stream", "event", "kind", "refused", NULL};
    const js_value *v;
    int rc = queue_action(run, a, o, out);
    if (rc <= 0)
        return rc;
    if (!strcmp(o, "enqueue")) {
        out->type = ACT_ENQUEUE;
        if (ct_members(run, a, "an enqueue action", N_ENQUEUE) ||
            name_arg(run, js_get(a, "topic"), "topic", &out->name) ||
            ((v = js_get(a, "payload")) && ct_bytes_of(run, v, &out->value)) ||
            ct_kind_of(run, js_get(a, "kind"), &out->kind) ||
            opt_i64(run, a, "delay", &out->delay) ||
            opt_u32(run, a, "max_attempts", &out->max_attempts) ||
            opt_i32(run, a, "priority", &out->priority))
            return -1;
        v = js_get(a, "dedup");
        out->has_dedup = v && v->type != JS_NULL;
        return out->has_dedup ? ct_bytes_of(run, v, &out->dedup) : 0;
    }
    if (!strcmp(o, "fence")) {
        out->type = ACT_FENCE;
        return ct_members(run, a, "a fence action", N_FENCE) ||
                       name_arg(run, js_get(a, "name"), "name", &out->name) ||
                       name_arg(run, js_get(a, "owner"), "owner", &out->owner) ||
                       required(run, js_get(a, "epoch"), "epoch") ||
                       ct_u64_arg(run, js_get(a, "epoch"), "epoch", &out->version)
                   ? -1
                   : 0;
    }
    if (!strcmp(o, "outbox_append")) {
        out->type = ACT_OUTBOX;
        return ct_members(run, a, "an outbox_append action", N_OUTBOX) ||
                       name_arg(run, js_get(a, "stream"), "stream", &out->name) ||
                       ((v = js_get(a, "event")) && ct_bytes_of(run, v, &out->value)) ||
                       ct_kind_of(run, js_get(a, "kind"), &out->kind)
                   ? -1
                   : 0;
    }
    return 1;
}

void ct_close_subs(ct_run *run)
{
    for (size_t i = 0; i < run->nsubs; i++) {
        bitt_pubsub_close(run->subs[i].sub);
        free(run->subs[i].name);
    }
    free(run->subs);
    run->subs = NULL;
    run->nsubs = 0;
}
