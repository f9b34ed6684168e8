/*
 * tests/c/support/contract_prep.c: reads a step's JSON into a prepared
 * ct_op (byte strings built, numbers parsed, variables resolved), so that
 * executing it needs no JSON and can run on many threads. Anything in a case
 * that the README does not define is a broken case, never ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract_impl.h"

/* An optional byte string: absent or null is "not given". */
static int opt_bytes(ct_run *run, const js_value *v, int *has, ct_bytes *out)
{
    *has = v && v->type != JS_NULL;
    return *has ? ct_bytes_of(run, v, out) : 0;
}

/* ---- ops ------------------------------------------------------------------------ */

static const char *const A_KEY[] = {"key", NULL};
static const char *const A_KEYS[] = {"keys", NULL};
static const char *const A_SET[] = {"key", "value", "kind", "ttl", NULL};
static const char *const A_INCR[] = {"key", "delta", "ttl", NULL};
static const char *const A_LIST[] = {"prefix",  "start",  "end",    "limit",
                                     "reverse", "cursor", "follow", NULL};
static const char *const A_NONE[] = {NULL};
static const char *const A_FILL[] = {"prefix", "count", "width", "value", "kind", "ttl", NULL};
static const char *const A_TXN[] = {"actions", "recommit", NULL};
static const char *const A_NOW[] = {"now", NULL};
static const char *const A_MS[] = {"ms", NULL};
static const char *const A_TUPLE[] = {"tuple", NULL};
static const char *const A_TUPLES[] = {"tuples", NULL};
static const char *const A_PAR[] = {"threads", "repeat", "step", "expect_counts", NULL};
static const char *const A_OPEN[] = {"options", NULL};

static const struct {
    const char *name;
    int code;
    const char *const *args;
} OPS[] = {
    {"kv.get", OP_GET, A_KEY},
    {"kv.take", OP_TAKE, A_KEY},
    {"kv.get_many", OP_GET_MANY, A_KEYS},
    {"kv.set", OP_SET, A_SET},
    {"kv.add", OP_ADD, A_SET},
    {"kv.delete", OP_DELETE, A_KEY},
    {"kv.increment", OP_INCREMENT, A_INCR},
    {"kv.list", OP_LIST, A_LIST},
    {"kv.purge", OP_PURGE, A_NONE},
    {"kv.fill", OP_FILL, A_FILL},
    {"txn", OP_TXN, A_TXN},
    {"clock.set", OP_CLOCK_SET, A_NOW},
    {"clock.advance", OP_CLOCK_ADVANCE, A_MS},
    {"clock.now", OP_CLOCK_NOW, A_NONE},
    {"tuple.encode", OP_TUPLE_ENCODE, A_TUPLE},
    {"tuple.decode", OP_TUPLE_DECODE, A_KEY},
    {"tuple.order", OP_TUPLE_ORDER, A_TUPLES},
    {"parallel", OP_PARALLEL, A_PAR},
    {"store.open", OP_STORE_OPEN, A_OPEN},
    {"kv.roundtrip", OP_ROUNDTRIP, A_KEY},
};

static int required(ct_run *run, const js_value *v, const char *name)
{
    return v ? 0 : ct_broken(run, "\"%s\" is required", name);
}

/* A list with {"copies": N, "of": x} elements: the element count it expands to. */
static int expanded(ct_run *run, const js_value *arr, const char *what, size_t *total)
{
    static const char *const names[] = {"copies", "of", NULL};
    if (!arr || arr->type != JS_ARRAY)
        return ct_broken(run, "%s must be an array", what);
    *total = 0;
    for (size_t i = 0; i < arr->count; i++) {
        const js_value *e = arr->items[i];
        size_t n = 1;
        if (e->type == JS_OBJECT && js_get(e, "copies")) {
            if (ct_members(run, e, what, names) ||
                ct_size_of(run, js_get(e, "copies"), "copies", 1000000, &n) ||
                required(run, js_get(e, "of"), "of"))
                return -1;
        }
        *total += n;
    }
    return 0;
}

/* `refused`: the status name the action's add must give. */
static int prep_refused(ct_run *run, const js_value *a, ct_action *out)
{
    const js_value *refused = js_get(a, "refused");
    if (!refused)
        return 0;
    int code = refused->type == JS_STRING ? ct_status_code(refused->str) : 0;
    if (code >= 0 || code == -100) /* -100: no such name */
        return ct_broken(run, "a txn action's refused must name an error status");
    out->refused = code;
    return 1;
}

static int prep_action(ct_run *run, const js_value *a, ct_action *out)
{
    static const char *const names[] = {"op",    "key",     "value",   "kind", "ttl",
                                        "delta", "version", "refused", NULL};
    const js_value *op = js_get(a, "op");
    if (!op || op->type != JS_STRING)
        return ct_broken(run, "a txn action needs an op");
    /* module actions (enqueue, fence, outbox_append, queue_*) check their own members */
    if (strcmp(op->str, "enqueue") && strcmp(op->str, "fence") &&
        strcmp(op->str, "outbox_append") && strncmp(op->str, "queue_", 6) &&
        ct_members(run, a, "a txn action", names))
        return -1;
    const char *o = op->str;
    int mod = ct_prepare_module_action(run, a, o, out);
    if (mod <= 0)
        return mod;
    out->type = !strcmp(o, "check")    ? ACT_CHECK
                : !strcmp(o, "set")    ? ACT_SET
                : !strcmp(o, "delete") ? ACT_DELETE
                : !strcmp(o, "sum")    ? ACT_SUM
                                       : 0;
    if (!out->type)
        return ct_broken(run, "unknown txn action \"%s\"", o);
    if (required(run, js_get(a, "key"), "key") || ct_bytes_of(run, js_get(a, "key"), &out->key))
        return -1;
    const js_value *value = js_get(a, "value"), *kind = js_get(a, "kind"), *ttl = js_get(a, "ttl");
    const js_value *delta = js_get(a, "delta"), *version = js_get(a, "version");
    if ((out->type != ACT_SET && (value || kind || ttl)) || (out->type != ACT_SUM && delta) ||
        (out->type != ACT_CHECK && version))
        return ct_broken(run, "txn action %s has a member of another action", o);
    if (out->type == ACT_SET &&
        ((value && ct_bytes_of(run, value, &out->value)) || ct_kind_of(run, kind, &out->kind) ||
         (ttl && ct_int64_of(run, ttl, "ttl", &out->ttl))))
        return -1;
    if (out->type == ACT_SUM &&
        (required(run, delta, "delta") || ct_int64_of(run, delta, "delta", &out->delta)))
        return -1;
    if (out->type == ACT_CHECK) {
        if (required(run, version, "version"))
            return -1;
        if (version->type == JS_OBJECT) {
            const char *form = NULL;
            const js_value *name = ct_only_member(version, &form);
            const ct_var *var = name && name->type == JS_STRING && !strcmp(form, "var")
                                    ? ct_var_find(run, name->str)
                                    : NULL;
            if (!var || !var->text)
                return ct_broken(run, "check version: no saved version {\"var\": ...} here");
            out->version = strtoull(var->text, NULL, 10);
        } else if (ct_uint64_of(run, version, "version", &out->version)) {
            return -1;
        }
    }
    return 0;
}

static int prep_txn(ct_run *run, const js_value *step, ct_op *op)
{
    const js_value *actions = js_get(step, "actions");
    size_t total = 0;
    if (expanded(run, actions, "actions", &total))
        return -1;
    op->actions = calloc(total + 1, sizeof *op->actions);
    if (!op->actions)
        return ct_broken(run, "out of memory");
    for (size_t i = 0; i < actions->count; i++) {
        const js_value *e = actions->items[i];
        size_t copies = 1;
        if (e->type == JS_OBJECT && js_get(e, "copies")) {
            ct_size_of(run, js_get(e, "copies"), "copies", 1000000, &copies);
            e = js_get(e, "of");
        }
        ct_action a = {0};
        int rc = prep_action(run, e, &a);
        if (!rc) {
            int refused = prep_refused(run, e, &a);
            rc = refused < 0 ? -1 : 0;
            op->commit_anyway |= refused > 0;
        }
        for (size_t k = 0; k < copies && !rc; k++) {
            ct_action *d = &op->actions[op->nactions++];
            *d = a;
            d->key = (ct_bytes){0};
            d->value = (ct_bytes){0};
            d->name = (ct_bytes){0};
            d->owner = (ct_bytes){0};
            d->dedup = (ct_bytes){0};
            if (ct_bytes_put(&d->key, a.key.p, a.key.n) ||
                ct_bytes_put(&d->value, a.value.p, a.value.n) ||
                ct_bytes_put(&d->name, a.name.p, a.name.n) ||
                ct_bytes_put(&d->owner, a.owner.p, a.owner.n) ||
                ct_bytes_put(&d->dedup, a.dedup.p, a.dedup.n))
                rc = ct_broken(run, "out of memory");
        }
        ct_bytes_free(&a.key);
        ct_bytes_free(&a.value);
        ct_bytes_free(&a.name);
        ct_bytes_free(&a.owner);
        ct_bytes_free(&a.dedup);
        if (rc)
            return -1;
    }
    op->recommit = js_get(step, "recommit");
    return 0;
}

/* store.open: the case's URL with `options` appended in order, as
 * url_options are. */
static int prep_open(ct_run *run, const js_value *step, ct_op *op)
{
    const js_value *opts = js_get(step, "options");
    if (!opts || opts->type != JS_OBJECT)
        return ct_broken(run, "store.open needs \"options\": an object of strings");
    size_t cap = strlen(run->url) + 1;
    for (size_t i = 0; i < opts->count; i++) {
        if (opts->items[i]->type != JS_STRING)
            return ct_broken(run, "store.open options are strings");
        cap += strlen(opts->keys[i]) + strlen(opts->items[i]->str) + 2;
    }
    if (!(op->url = malloc(cap)))
        return ct_broken(run, "out of memory");
    size_t len = (size_t)snprintf(op->url, cap, "%s", run->url);
    for (size_t i = 0; i < opts->count; i++)
        len +=
            (size_t)snprintf(op->url + len, cap - len, "%c%s=%s", strchr(op->url, '?') ? '&' : '?',
                             opts->keys[i], opts->items[i]->str);
    return 0;
}

int ct_key_list(ct_run *run, const js_value *arr, int allow_null, ct_bytes **keys,
                unsigned char **nulls, size_t *n)
{
    static const char *const fill[] = {"fill", NULL}, *const args[] = {"prefix", "count", "width",
                                                                       NULL};
    size_t total = 0, count = 0, width = 0, copies;
    *keys = NULL;
    *nulls = NULL;
    *n = 0;
    if (!arr || arr->type != JS_ARRAY)
        return ct_broken(run, "a key list must be an array");
    for (int pass = 0; pass < 2; pass++) { /* count, then build */
        if (pass &&
            (!(*keys = calloc(total + 1, sizeof **keys)) || !(*nulls = calloc(total + 1, 1))))
            return ct_broken(run, "out of memory");
        for (size_t i = 0; i < arr->count; i++) {
            const js_value *e = arr->items[i], *f = js_get(e, "fill");
            ct_bytes pre = {0};
            if (f) {
                if (ct_members(run, e, "a key list", fill) || ct_members(run, f, "fill", args) ||
                    required(run, js_get(f, "count"), "count") ||
                    ct_size_of(run, js_get(f, "count"), "count", 1000000, &count) ||
                    (js_get(f, "width") &&
                     ct_size_of(run, js_get(f, "width"), "width", 20, &width)) ||
                    (pass && js_get(f, "prefix") && ct_bytes_of(run, js_get(f, "prefix"), &pre)))
                    return -1;
                for (size_t c = 0; pass && c < count; c++)
                    if (ct_fill_key(&pre, width, c, &(*keys)[(*n)++])) {
                        ct_bytes_free(&pre);
                        return ct_broken(run, "out of memory");
                    }
                ct_bytes_free(&pre);
                total += count;
                continue;
            }
            copies = 1;
            if (e->type == JS_OBJECT && js_get(e, "copies")) {
                static const char *const names[] = {"copies", "of", NULL};
                if (ct_members(run, e, "a key list", names) ||
                    ct_size_of(run, js_get(e, "copies"), "copies", 1000000, &copies) ||
                    required(run, js_get(e, "of"), "of"))
                    return -1;
                e = js_get(e, "of");
            }
            total += copies;
            if (e->type == JS_NULL && !allow_null)
                return ct_broken(run, "null is not a key");
            if (!pass)
                continue;
            if (e->type != JS_NULL && ct_bytes_of(run, e, &pre))
                return -1;
            for (size_t c = 0; c < copies; c++) {
                (*nulls)[*n] = e->type == JS_NULL;
                if (ct_bytes_put(&(*keys)[(*n)++], pre.p, pre.n)) {
                    ct_bytes_free(&pre);
                    return ct_broken(run, "out of memory");
                }
            }
            ct_bytes_free(&pre);
        }
    }
    return 0;
}

void ct_key_list_free(ct_bytes *keys, unsigned char *nulls, size_t n)
{
    for (size_t i = 0; keys && i < n; i++)
        ct_bytes_free(&keys[i]);
    free(keys);
    free(nulls);
}

static int prep_get_many(ct_run *run, const js_value *step, ct_op *op)
{
    unsigned char *nulls = NULL;
    int rc = ct_key_list(run, js_get(step, "keys"), 0, &op->keys, &nulls, &op->nkeys);
    free(nulls);
    return rc;
}

static int prep_list(ct_run *run, const js_value *step, ct_op *op)
{
    const js_value *limit = js_get(step, "limit"), *rev = js_get(step, "reverse");
    const js_value *follow = js_get(step, "follow"), *cursor = js_get(step, "cursor");
    if (opt_bytes(run, js_get(step, "prefix"), &op->has_prefix, &op->prefix) ||
        opt_bytes(run, js_get(step, "start"), &op->has_start, &op->start) ||
        opt_bytes(run, js_get(step, "end"), &op->has_end, &op->end))
        return -1;
    if (limit) {
        size_t l = 0;
        if (ct_size_of(run, limit, "limit", UINT32_MAX, &l))
            return -1;
        op->limit = (uint32_t)l;
    }
    if ((rev && rev->type != JS_TRUE && rev->type != JS_FALSE) ||
        (follow && follow->type != JS_TRUE && follow->type != JS_FALSE))
        return ct_broken(run, "reverse and follow are true or false");
    op->reverse = rev && rev->type == JS_TRUE;
    op->follow = follow && follow->type == JS_TRUE;
    if (cursor && cursor->type == JS_STRING) {
        op->cursor = strdup(cursor->str);
    } else if (cursor && cursor->type == JS_OBJECT) {
        const char *form = NULL;
        const js_value *name = ct_only_member(cursor, &form);
        const ct_var *var = name && name->type == JS_STRING && !strcmp(form, "var")
                                ? ct_var_find(run, name->str)
                                : NULL;
        if (!var)
            return ct_broken(run, "cursor: no saved variable {\"var\": ...} here");
        if (!var->text)
            return ct_broken(run,
                             "cursor: variable \"%s\" holds no cursor (the page it came "
                             "from was the last)",
                             name->str);
        op->cursor = strdup(var->text);
    } else if (cursor && cursor->type != JS_NULL) {
        return ct_broken(run, "cursor is a string or {\"var\": name}");
    }
    if (op->follow && op->cursor)
        return ct_broken(run, "follow starts from the first page: no cursor");
    return 0;
}

int ct_prepare(ct_run *run, const js_value *step, ct_op *op, int inner)
{
    memset(op, 0, sizeof *op);
    const js_value *name = js_get(step, "op");
    if (!name || name->type != JS_STRING)
        return ct_broken(run, "a step needs \"op\"");
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0] && !op->code; i++)
        if (strcmp(OPS[i].name, name->str) == 0) {
            op->code = OPS[i].code;
            op->name = OPS[i].name;
            const char *names[16] = {"op", "expect", "save"};
            size_t n = inner ? 1 : 3;
            for (size_t j = 0; OPS[i].args[j]; j++)
                names[n++] = OPS[i].args[j];
            if (ct_members(run, step, inner ? "a parallel step's inner step" : "a step", names))
                return -1;
        }
    int parallel_ok = 0;
    if (!op->code) {
        for (int code = OP_Q_ENQUEUE; code <= OP_S_DELETE && !op->code; code++) {
            const char *const *args = ct_module_args(code, &parallel_ok);
            if (!args || strcmp(args[0], name->str) != 0)
                continue;
            op->code = code;
            op->name = args[0];
            const char *names[24] = {"op", "expect", "save"};
            size_t n = inner ? 1 : 3;
            for (size_t j = 1; args[j]; j++)
                names[n++] = args[j];
            names[n] = NULL;
            if (ct_members(run, step, inner ? "a parallel step's inner step" : "a step", names))
                return -1;
        }
    } else {
        parallel_ok = op->code != OP_FILL && op->code < OP_CLOCK_SET;
    }
    if (!op->code) {
        if (!inner)
            run->opname = name->str;
        return ct_broken(run, "unknown op \"%s\"", name->str);
    }
    if (!inner)
        run->opname = op->name;
    if (inner && !parallel_ok)
        return ct_broken(run, "%s cannot run in parallel", op->name);
    if (CT_IS_MODULE_OP(op->code))
        return ct_prepare_module(run, step, op);

    const js_value *key = js_get(step, "key"), *value = js_get(step, "value");
    const js_value *ttl = js_get(step, "ttl"), *delta = js_get(step, "delta");
    switch (op->code) {
    case OP_GET:
    case OP_TAKE:
    case OP_DELETE:
    case OP_ROUNDTRIP:
    case OP_TUPLE_DECODE: return required(run, key, "key") || ct_bytes_of(run, key, &op->key);
    case OP_SET:
    case OP_ADD:
        return required(run, key, "key") || ct_bytes_of(run, key, &op->key) ||
               (value && ct_bytes_of(run, value, &op->value)) ||
               ct_kind_of(run, js_get(step, "kind"), &op->kind) ||
               (ttl && ct_int64_of(run, ttl, "ttl", &op->ttl));
    case OP_INCREMENT:
        return required(run, key, "key") || ct_bytes_of(run, key, &op->key) ||
               required(run, delta, "delta") || ct_int64_of(run, delta, "delta", &op->delta) ||
               (ttl && ct_int64_of(run, ttl, "ttl", &op->ttl));
    case OP_GET_MANY: return prep_get_many(run, step, op);
    case OP_LIST: return prep_list(run, step, op);
    case OP_FILL: {
        const js_value *prefix = js_get(step, "prefix"), *width = js_get(step, "width");
        return (prefix && ct_bytes_of(run, prefix, &op->prefix)) ||
               required(run, js_get(step, "count"), "count") ||
               ct_size_of(run, js_get(step, "count"), "count", 1000000, &op->count) ||
               (width && ct_size_of(run, width, "width", 20, &op->width)) ||
               (value && ct_bytes_of(run, value, &op->value)) ||
               ct_kind_of(run, js_get(step, "kind"), &op->kind) ||
               (ttl && ct_int64_of(run, ttl, "ttl", &op->ttl));
    }
    case OP_TXN: return prep_txn(run, step, op);
    case OP_STORE_OPEN: return prep_open(run, step, op);
    case OP_CLOCK_SET:
        return required(run, js_get(step, "now"), "now") ||
               ct_int64_of(run, js_get(step, "now"), "now", &op->num);
    case OP_CLOCK_ADVANCE:
        return required(run, js_get(step, "ms"), "ms") ||
               ct_int64_of(run, js_get(step, "ms"), "ms", &op->num);
    case OP_TUPLE_ENCODE:
        op->tuples = calloc(1, sizeof *op->tuples);
        op->ntuples = 1;
        return !op->tuples ? ct_broken(run, "out of memory")
                           : ct_tuple_of(run, js_get(step, "tuple"), op->tuples);
    case OP_TUPLE_ORDER: {
        const js_value *ts = js_get(step, "tuples");
        if (!ts || ts->type != JS_ARRAY || ts->count < 2)
            return ct_broken(run, "tuples must be an array of at least two tuples");
        op->tuples = calloc(ts->count, sizeof *op->tuples);
        if (!op->tuples)
            return ct_broken(run, "out of memory");
        op->ntuples = ts->count;
        for (size_t i = 0; i < ts->count; i++)
            if (ct_tuple_of(run, ts->items[i], &op->tuples[i]))
                return -1;
        return 0;
    }
    default: return 0; /* purge, clock.now; parallel is prepared by contract.c */
    }
}

void ct_tuple_free(ct_tuple *t)
{
    for (size_t i = 0; t->parts && i < t->n; i++)
        ct_bytes_free(&t->parts[i].data);
    free(t->parts);
    t->parts = NULL;
    t->n = 0;
}

void ct_op_free(ct_op *op)
{
    ct_bytes_free(&op->key);
    ct_bytes_free(&op->value);
    ct_bytes_free(&op->prefix);
    ct_bytes_free(&op->start);
    ct_bytes_free(&op->end);
    for (size_t i = 0; op->keys && i < op->nkeys; i++)
        ct_bytes_free(&op->keys[i]);
    free(op->keys);
    for (size_t i = 0; op->actions && i < op->nactions; i++) {
        ct_bytes_free(&op->actions[i].key);
        ct_bytes_free(&op->actions[i].value);
        ct_bytes_free(&op->actions[i].name);
        ct_bytes_free(&op->actions[i].owner);
        ct_bytes_free(&op->actions[i].dedup);
        free(op->actions[i].token);
        free(op->actions[i].error);
    }
    free(op->actions);
    for (size_t i = 0; op->tuples && i < op->ntuples; i++)
        ct_tuple_free(&op->tuples[i]);
    free(op->tuples);
    free(op->cursor);
    free(op->url);
    ct_bytes_free(&op->mname);
    ct_bytes_free(&op->owner);
    ct_bytes_free(&op->dedup);
    free(op->token);
    free(op->error);
    free(op->cron);
    free(op->stopic);
    for (size_t i = 0; op->tokens && i < op->nids; i++)
        free(op->tokens[i]);
    free(op->tokens);
    free(op->ids);
    if (op->code == OP_P_CLOSE)
        bitt_pubsub_close(op->sub); /* the step's call: see pubsub.close in README.md */
    if (op->inner) {
        ct_op_free(op->inner);
        free(op->inner);
    }
    memset(op, 0, sizeof *op);
}
