/*
 * tests/c/support/contract_check.c: compares a ct_result with a step's
 * "expect" (README.md, "Result fields"), validates expect and save before a
 * step runs, and stores saved variables.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract_impl.h"

#define VERSION_FIELDS "version_eq", "version_ne", "version_gt", "version_lt"
#define ENTRY_FIELDS "key", "value", "kind", "expires_at", "counter", VERSION_FIELDS

/* ---- validation before the step runs ---------------------------------------------- */

static int op_is(const ct_op *op, int a, int b, int c, int d)
{
    return op->code == a || op->code == b || op->code == c || op->code == d;
}

int ct_validate_expect(ct_run *run, const ct_op *op, const js_value *step)
{
    static const char *const E_ENTRY[] = {"status", ENTRY_FIELDS, NULL};
    static const char *const E_WRITE[] = {"status", VERSION_FIELDS, NULL};
    static const char *const E_INCR[] = {"status", "counter", VERSION_FIELDS, NULL};
    static const char *const E_MANY[] = {"status", "entries", "keys", "count", NULL};
    static const char *const E_LIST[] = {"status",     "entries", "keys", "count",
                                         "has_cursor", "pages",   NULL};
    static const char *const E_PURGE[] = {"status", "removed", NULL};
    static const char *const E_NOW[] = {"status", "now", NULL};
    static const char *const E_HEX[] = {"status", "hex", NULL};
    static const char *const E_TUPLE[] = {"status", "tuple", NULL};
    static const char *const E_STATUS[] = {"status", NULL};
    const char *const *allowed = E_STATUS;
    switch (op->code) {
    case OP_GET:
    case OP_TAKE: allowed = E_ENTRY; break;
    case OP_SET:
    case OP_ADD:
    case OP_TXN: allowed = E_WRITE; break;
    case OP_INCREMENT: allowed = E_INCR; break;
    case OP_GET_MANY: allowed = E_MANY; break;
    case OP_LIST: allowed = E_LIST; break;
    case OP_PURGE: allowed = E_PURGE; break;
    case OP_CLOCK_NOW: allowed = E_NOW; break;
    case OP_TUPLE_ENCODE: allowed = E_HEX; break;
    case OP_TUPLE_DECODE: allowed = E_TUPLE; break;
    }
    if (CT_IS_MODULE_OP(op->code))
        allowed = ct_module_expect(op->code);
    const js_value *expect = js_get(step, "expect");
    if (expect) {
        if (ct_members(run, expect, "expect", allowed))
            return -1;
        const js_value *st = js_get(expect, "status");
        int code = BITT_OK;
        if (st && (st->type != JS_STRING || (code = ct_status_code(st->str)) == -100))
            return ct_broken(run, "unknown status %s",
                             st->type == JS_STRING ? st->str : "(not a string)");
        size_t fields = expect->count - (st != NULL) - (js_get(expect, "note") != NULL);
        if (fields && (code < 0 || (op_is(op, OP_GET, OP_TAKE, 0, 0) && code != BITT_OK)))
            return ct_broken(run, "result fields given with status %s", ct_status_name(code));
        if (js_get(expect, "pages") && !op->follow)
            return ct_broken(run, "pages is only a result of a list with follow");
    }
    if (op->recommit) {
        static const char *const E_RE[] = {"status", VERSION_FIELDS, NULL};
        const js_value *st = js_get(op->recommit, "status");
        if (ct_members(run, op->recommit, "recommit", E_RE) ||
            (st && (st->type != JS_STRING || ct_status_code(st->str) == -100)))
            return ct_broken(run, "recommit needs a known status");
    }
    const js_value *save = js_get(step, "save");
    if (save) {
        static const char *const S_VERSION[] = {"version", NULL};
        static const char *const S_CURSOR[] = {"cursor", NULL};
        static const char *const S_NONE[] = {NULL};
        const char *const *s =
            op_is(op, OP_GET, OP_TAKE, OP_SET, OP_ADD) || op_is(op, OP_INCREMENT, OP_TXN, 0, 0)
                ? S_VERSION
            : op->code == OP_LIST && !op->follow ? S_CURSOR
                                                 : S_NONE;
        if (CT_IS_MODULE_OP(op->code))
            s = ct_module_save(op->code);
        if (ct_members(run, save, "save", s))
            return -1;
        for (size_t i = 0; i < save->count; i++) {
            const js_value *sv = save->items[i];
            int list = !strcmp(save->keys[i], "ids") || !strcmp(save->keys[i], "tokens");
            if (list && sv->type == JS_ARRAY) {
                for (size_t k = 0; k < sv->count; k++)
                    if (sv->items[k]->type != JS_STRING && sv->items[k]->type != JS_NULL)
                        return ct_broken(run, "save %s is an array of names (or null)",
                                         save->keys[i]);
            } else if (list || sv->type != JS_STRING) {
                return ct_broken(run, "save names a variable with a string%s",
                                 list ? " array" : "");
            }
        }
    }
    return 0;
}

/* ---- comparisons ------------------------------------------------------------------- */

static int check_status(ct_run *run, const char *what, const js_value *st, int got, int last_code,
                        const char *message)
{
    int want = st ? ct_status_code(st->str) : BITT_OK;
    if (want != got)
        return ct_fail(run, "%sstatus: expected %s (%d), got %s (%d)%s%s", what,
                       ct_status_name(want), want, ct_status_name(got), got,
                       got < 0 ? ", message: " : "", got < 0 ? message : "");
    if (got < 0 && last_code != got)
        return ct_fail(run, "%sbitt_error_last_code() is %d right after status %d", what, last_code,
                       got);
    if (got < 0 && !message[0])
        return ct_fail(run, "%sbitt_error_last() is empty right after status %s", what,
                       ct_status_name(got));
    return 0;
}

static int check_bytes(ct_run *run, const char *where, const char *field, const uint8_t *got,
                       size_t n, const js_value *spec)
{
    ct_bytes want = {0};
    if (ct_bytes_of(run, spec, &want))
        return -1;
    int same = want.n == n && (n == 0 || memcmp(want.p, got, n) == 0);
    if (!same) {
        size_t at = 0;
        while (at < n && at < want.n && want.p[at] == got[at])
            at++;
        char *a = ct_show(want.p, want.n), *b = ct_show(got, n);
        ct_fail(run, "%s%s: expected %s, got %s (first difference at byte %zu)", where, field, a, b,
                at);
        free(a);
        free(b);
    }
    ct_bytes_free(&want);
    return same ? 0 : -1;
}

static int check_int(ct_run *run, const char *where, const char *field, int64_t got,
                     const js_value *exp)
{
    int64_t want;
    if (ct_int64_of(run, exp, field, &want))
        return -1;
    if (want != got)
        return ct_fail(run, "%s%s: expected %" PRId64 ", got %" PRId64, where, field, want, got);
    return 0;
}

static int check_versions(ct_run *run, const char *where, uint64_t got, const js_value *exp)
{
    static const char *const ops[] = {"version_eq", "version_ne", "version_gt", "version_lt"};
    static const char *const sym[] = {"==", "!=", ">", "<"};
    for (int i = 0; i < 4; i++) {
        const js_value *name = js_get(exp, ops[i]);
        if (!name)
            continue;
        const ct_var *var = name->type == JS_STRING ? ct_var_find(run, name->str) : NULL;
        if (!var || !var->text)
            return ct_broken(run, "%s: no saved version named %s", ops[i],
                             name->type == JS_STRING ? name->str : "(not a string)");
        uint64_t v = strtoull(var->text, NULL, 10);
        int ok = i == 0 ? got == v : i == 1 ? got != v : i == 2 ? got > v : got < v;
        if (!ok)
            return ct_fail(run, "%sversion: expected %s %s (%" PRIu64 "), got %" PRIu64, where,
                           sym[i], name->str, v, got);
    }
    return 0;
}

static int check_entry(ct_run *run, const char *where, const bitt_entry *e, const js_value *exp)
{
    static const char *const names[] = {"status", ENTRY_FIELDS, NULL};
    if (exp->type == JS_NULL) {
        if (!e)
            return 0;
        size_t n;
        const uint8_t *k = bitt_entry_key(e, &n);
        char *s = ct_show(k, n);
        ct_fail(run, "%sexpected a miss (NULL slot), got the key %s", where, s);
        free(s);
        return -1;
    }
    if (ct_members(run, exp, "an expected entry", names))
        return -1;
    if (!e)
        return ct_fail(run, "%sexpected an entry, got a miss (NULL)", where);
    uint64_t version = bitt_entry_version(e);
    if (version < 1)
        return ct_fail(run, "%sentry version is 0", where);
    size_t n;
    const uint8_t *p = bitt_entry_value(e, &n);
    if (!p && n)
        return ct_fail(run, "%sbitt_entry_value gave NULL with length %zu", where, n);
    if (p && p[n] != 0)
        return ct_fail(run, "%sthe value is not NUL-terminated", where);
    const js_value *v;
    if ((v = js_get(exp, "key"))) {
        const uint8_t *k = bitt_entry_key(e, &n);
        if (check_bytes(run, where, "key", k, n, v))
            return -1;
    }
    if ((v = js_get(exp, "value"))) {
        p = bitt_entry_value(e, &n);
        if (check_bytes(run, where, "value", p, n, v))
            return -1;
    }
    if ((v = js_get(exp, "kind"))) {
        int want;
        if (ct_kind_of(run, v, &want))
            return -1;
        if (bitt_entry_kind(e) != want)
            return ct_fail(run, "%skind: expected %s (%d), got %s (%d)", where, ct_kind_name(want),
                           want, ct_kind_name(bitt_entry_kind(e)), bitt_entry_kind(e));
    }
    if ((v = js_get(exp, "expires_at")) &&
        check_int(run, where, "expires_at", bitt_entry_expires_at(e), v))
        return -1;
    if ((v = js_get(exp, "counter"))) {
        int64_t c = 0;
        int rc = bitt_entry_counter(e, &c);
        if (v->type == JS_NULL) {
            if (rc != BITT_ENOTCOUNTER)
                return ct_fail(run, "%sbitt_entry_counter: expected not_counter, got %s (%d)",
                               where, ct_status_name(rc), rc);
        } else if (rc != BITT_OK) {
            return ct_fail(run, "%sbitt_entry_counter: expected ok, got %s (%d)", where,
                           ct_status_name(rc), rc);
        } else if (check_int(run, where, "counter", c, v)) {
            return -1;
        }
    }
    return check_versions(run, where, version, exp);
}

static int slot_count_fail(ct_run *run, size_t want, const ct_result *r)
{
    size_t n = 0;
    const uint8_t *k =
        want < r->nitems && r->items[want] ? bitt_entry_key(r->items[want], &n) : NULL;
    char *s = k ? ct_show(k, n) : NULL;
    ct_fail(run, "expected %zu slots, got %zu%s%s", want, r->nitems,
            s ? "; the first extra key is " : "", s ? s : "");
    free(s);
    return -1;
}

static int check_slots(ct_run *run, const ct_op *op, const js_value *expect, const ct_result *r)
{
    char where[64];
    if (op->code == OP_LIST) {
        for (size_t i = 0; i < r->nitems; i++) {
            if (!r->items[i])
                return ct_fail(run, "list slot %zu is NULL", i);
            if (i == 0)
                continue;
            size_t an, bn;
            const uint8_t *a = bitt_entry_key(r->items[i - 1], &an);
            const uint8_t *b = bitt_entry_key(r->items[i], &bn);
            size_t m = an < bn ? an : bn;
            int c = m ? memcmp(a, b, m) : 0;
            c = c ? c : (an > bn) - (an < bn);
            if (op->reverse ? c <= 0 : c >= 0) {
                char *sa = ct_show(a, an), *sb = ct_show(b, bn);
                ct_fail(run, "list order: key %zu %s is not %s key %zu %s", i - 1, sa,
                        op->reverse ? "after" : "before", i, sb);
                free(sa);
                free(sb);
                return -1;
            }
        }
    }
    const js_value *v;
    if ((v = js_get(expect, "count")) && check_int(run, "", "count", (int64_t)r->nitems, v))
        return -1;
    if ((v = js_get(expect, "keys"))) {
        ct_bytes *keys;
        unsigned char *nulls;
        size_t n;
        int rc = ct_key_list(run, v, 1, &keys, &nulls, &n);
        for (size_t i = 0; !rc && i < n && i < r->nitems; i++) {
            snprintf(where, sizeof where, "slot %zu: ", i);
            if (nulls[i] || !r->items[i]) {
                rc = check_entry(run, where, r->items[i],
                                 nulls[i] ? &(js_value){.type = JS_NULL}
                                          : &(js_value){.type = JS_OBJECT});
            } else {
                size_t kn;
                const uint8_t *kp = bitt_entry_key(r->items[i], &kn);
                const uint8_t *want = keys[i].p ? keys[i].p : (const uint8_t *)"";
                if (kn != keys[i].n || (kn && memcmp(kp, want, kn))) {
                    char *a = ct_show(want, keys[i].n), *b = ct_show(kp, kn);
                    rc = ct_fail(run, "%skey: expected %s, got %s", where, a, b);
                    free(a);
                    free(b);
                }
            }
        }
        if (!rc && n != r->nitems)
            rc = slot_count_fail(run, n, r);
        ct_key_list_free(keys, nulls, n);
        if (rc)
            return -1;
    }
    const js_value *entries = js_get(expect, "entries");
    if (entries) {
        if (entries->type != JS_ARRAY)
            return ct_broken(run, "entries is an array");
        for (size_t i = 0; i < entries->count && i < r->nitems; i++) {
            snprintf(where, sizeof where, "slot %zu: ", i);
            if (check_entry(run, where, r->items[i], entries->items[i]))
                return -1;
        }
        if (entries->count != r->nitems)
            return slot_count_fail(run, entries->count, r);
    }
    if ((v = js_get(expect, "has_cursor"))) {
        if (v->type != JS_TRUE && v->type != JS_FALSE)
            return ct_broken(run, "has_cursor is true or false");
        if ((v->type == JS_TRUE) != r->has_cursor)
            return ct_fail(run, "has_cursor: expected %s, got %s (cursor %s)",
                           v->type == JS_TRUE ? "true" : "false", r->has_cursor ? "true" : "false",
                           r->cursor ? r->cursor : "NULL");
    }
    if ((v = js_get(expect, "pages")) && check_int(run, "", "pages", (int64_t)r->npages, v))
        return -1;
    return 0;
}

/* A tuple part for messages: "string \"a\"", "int -5", ... malloc'd. */
static char *show_part(const ct_part *p)
{
    char *data = NULL, *out = malloc(128 + (p->data.n + 1) * 4 + 64);
    if (!out)
        return NULL;
    switch (p->type) {
    case BITT_TUPLE_BYTES:
    case BITT_TUPLE_STRING:
        data = ct_show(p->data.p, p->data.n);
        sprintf(out, "%s %s", p->type == BITT_TUPLE_BYTES ? "bytes" : "string", data ? data : "?");
        free(data);
        break;
    case BITT_TUPLE_INT: sprintf(out, "int %" PRId64, p->i); break;
    case BITT_TUPLE_FLOAT: sprintf(out, "float %.17g", p->f); break;
    case BITT_TUPLE_BOOL: sprintf(out, "bool %s", p->i ? "true" : "false"); break;
    default: sprintf(out, "type %d", p->type);
    }
    return out;
}

static int check_tuple(ct_run *run, const js_value *exp, const ct_tuple *got)
{
    ct_tuple want = {0};
    int rc = ct_tuple_of(run, exp, &want);
    for (size_t i = 0; !rc && i < want.n && i < got->n; i++) {
        const ct_part *a = &want.parts[i], *b = &got->parts[i];
        int same = a->type == b->type;
        if (same && (a->type == BITT_TUPLE_BYTES || a->type == BITT_TUPLE_STRING))
            same =
                a->data.n == b->data.n && (!a->data.n || !memcmp(a->data.p, b->data.p, a->data.n));
        else if (same && a->type == BITT_TUPLE_FLOAT)
            same = memcmp(&a->f, &b->f, sizeof a->f) == 0;
        else if (same)
            same = a->i == b->i;
        if (!same) {
            char *sa = show_part(a), *sb = show_part(b);
            rc = ct_fail(run, "tuple part %zu: expected %s, got %s", i, sa ? sa : "?",
                         sb ? sb : "?");
            free(sa);
            free(sb);
        }
    }
    if (!rc && want.n != got->n)
        rc = ct_fail(run, "tuple: expected %zu parts, got %zu", want.n, got->n);
    ct_tuple_free(&want);
    return rc;
}

int ct_check(ct_run *run, const ct_op *op, const js_value *expect, const ct_result *r)
{
    if (r->problem[0])
        return ct_fail(run, "%s", r->problem);
    if (check_status(run, "", expect ? js_get(expect, "status") : NULL, r->status, r->last_code,
                     r->message))
        return -1;
    if (r->status < 0)
        return 0;
    static const js_value empty = {.type = JS_OBJECT};
    if (!expect)
        expect = &empty;
    const js_value *v;
    switch (op->code) {
    case OP_GET:
    case OP_TAKE: return r->status == BITT_OK ? check_entry(run, "", r->entry, expect) : 0;
    case OP_SET:
    case OP_ADD:
    case OP_INCREMENT:
    case OP_TXN:
        if (r->status == BITT_OK && r->version < 1)
            return ct_fail(run, "the new versionstamp is 0");
        if (r->status == BITT_OK && check_versions(run, "", r->version, expect))
            return -1;
        if (op->code == OP_INCREMENT && (v = js_get(expect, "counter")) &&
            check_int(run, "", "counter", r->counter, v))
            return -1;
        if (op->recommit) {
            if (check_status(run, "recommit: ", js_get(op->recommit, "status"), r->recommit_status,
                             r->recommit_last_code, r->recommit_message))
                return -1;
            if (r->recommit_status == BITT_OK &&
                check_versions(run, "recommit: ", r->recommit_version, op->recommit))
                return -1;
        }
        return 0;
    case OP_GET_MANY:
    case OP_LIST: return check_slots(run, op, expect, r);
    case OP_PURGE:
        return (v = js_get(expect, "removed"))
                   ? check_int(run, "", "removed", (int64_t)r->removed, v)
                   : 0;
    case OP_CLOCK_NOW:
        return (v = js_get(expect, "now")) ? check_int(run, "", "now", r->now, v) : 0;
    case OP_TUPLE_ENCODE: {
        if (!(v = js_get(expect, "hex")))
            return 0;
        char *names[] = {"hex"};
        js_value *items[] = {(js_value *)v};
        js_value spec = {.type = JS_OBJECT, .count = 1, .keys = names, .items = items};
        return check_bytes(run, "", "encoding", r->encoded.p, r->encoded.n, &spec);
    }
    case OP_TUPLE_DECODE:
        return (v = js_get(expect, "tuple")) ? check_tuple(run, v, &r->decoded) : 0;
    default: return CT_IS_MODULE_OP(op->code) ? ct_check_module(run, op, expect, r) : 0;
    }
}

int ct_save(ct_run *run, const ct_op *op, const js_value *save, ct_result *r)
{
    if (CT_IS_MODULE_OP(op->code))
        return ct_save_module(run, op, save, r);
    if (!save)
        return 0;
    const js_value *v;
    if ((v = js_get(save, "version"))) {
        uint64_t version = r->version;
        if (op->code == OP_GET || op->code == OP_TAKE)
            version = r->entry ? bitt_entry_version(r->entry) : 0;
        if (r->status != BITT_OK || !version)
            return ct_broken(run, "save version: the step has no version to save");
        char text[32];
        snprintf(text, sizeof text, "%" PRIu64, version);
        return ct_var_set(run, v->str, text);
    }
    if ((v = js_get(save, "cursor"))) {
        if (r->status != BITT_OK)
            return ct_broken(run, "save cursor: the step failed");
        return ct_var_set(run, v->str, r->cursor);
    }
    return 0;
}
