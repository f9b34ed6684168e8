/*
 * tests/c/support/contract_exec.c: executes a prepared ct_op through the
 * public API and records what came back in a ct_result. No JSON and no
 * failure reporting here, so parallel workers can call ct_exec freely; a
 * promise the status cannot express (an out-parameter left set, a page over
 * its limit) is written to res->problem.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract_impl.h"

/* A byte string as an argument: NULL when empty (bitt.h: "A NULL pointer
 * with length 0 is the empty byte string"). */
static const void *arg(const ct_bytes *b)
{
    return b->p;
}

/* A list bound that is given: never NULL, even when empty. */
static const void *given(const ct_bytes *b)
{
    return b->p ? (const void *)b->p : (const void *)"";
}

static void problem(ct_result *r, const char *fmt, ...)
{
    if (r->problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->problem, sizeof r->problem, fmt, ap);
    va_end(ap);
}

/* Records a status, and the thread's last error right after a failure. */
static void capture(ct_result *r, int rc)
{
    r->status = rc;
    if (rc < 0) {
        r->last_code = bitt_error_last_code();
        snprintf(r->message, sizeof r->message, "%s", bitt_error_last());
    }
}

static int add_page(ct_result *r, bitt_entries *page)
{
    bitt_entries **pages = realloc(r->pages, (r->npages + 1) * sizeof *pages);
    size_t n = bitt_entries_count(page);
    const bitt_entry **items = realloc(r->items, (r->nitems + n + 1) * sizeof *items);
    if (pages)
        r->pages = pages;
    if (items)
        r->items = items;
    if (!pages || !items) {
        bitt_entries_free(page);
        problem(r, "runner out of memory");
        return -1;
    }
    r->pages[r->npages++] = page;
    for (size_t i = 0; i < n; i++)
        r->items[r->nitems++] = bitt_entries_at(page, i);
    return 0;
}

int ct_tuple_encode(const ct_tuple *t, ct_bytes *out)
{
    bitt_buf b = BITT_BUF_INIT;
    int rc = BITT_OK;
    for (size_t i = 0; i < t->n && rc == BITT_OK; i++) {
        const ct_part *p = &t->parts[i];
        switch (p->type) {
        case BITT_TUPLE_BYTES: rc = bitt_tuple_push_bytes(&b, p->data.p, p->data.n); break;
        case BITT_TUPLE_STRING:
            rc = bitt_tuple_push_string(&b, (const char *)p->data.p, p->data.n);
            break;
        case BITT_TUPLE_INT: rc = bitt_tuple_push_int(&b, p->i); break;
        case BITT_TUPLE_FLOAT: rc = bitt_tuple_push_float(&b, p->f); break;
        default: rc = bitt_tuple_push_bool(&b, (int)p->i); break;
        }
    }
    if (rc == BITT_OK && b.len && ct_bytes_put(out, b.ptr, b.len))
        rc = BITT_ENOMEM;
    bitt_buf_dispose(&b);
    return rc;
}

int ct_fill_key(const ct_bytes *prefix, size_t width, size_t i, ct_bytes *out)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%0*zu", (int)width, i);
    return ct_bytes_put(out, prefix->p, prefix->n) || ct_bytes_put(out, digits, (size_t)n) ? -1 : 0;
}

static int bytes_cmp(const ct_bytes *a, const ct_bytes *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    int c = n ? memcmp(a->p, b->p, n) : 0;
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static void exec_decode(const ct_op *op, ct_result *r)
{
    size_t off = 0;
    ct_tuple *t = &r->decoded;
    for (;;) {
        int type = 0;
        int64_t iv = 0;
        double fv = 0;
        bitt_buf data = BITT_BUF_INIT;
        size_t before = off;
        int rc = bitt_tuple_next(arg(&op->key), op->key.n, &off, &type, &data, &iv, &fv);
        if (rc == BITT_NOTFOUND) {
            bitt_buf_dispose(&data);
            capture(r, BITT_OK);
            return;
        }
        if (rc) {
            capture(r, rc);
            bitt_buf_dispose(&data);
            return;
        }
        if (off <= before || off > op->key.n) {
            bitt_buf_dispose(&data);
            problem(r, "bitt_tuple_next moved the offset from %zu to %zu (key of %zu bytes)",
                    before, off, op->key.n);
            return;
        }
        ct_part *parts = realloc(t->parts, (t->n + 1) * sizeof *parts);
        if (!parts) {
            bitt_buf_dispose(&data);
            problem(r, "runner out of memory");
            return;
        }
        t->parts = parts;
        ct_part *p = &t->parts[t->n++];
        memset(p, 0, sizeof *p);
        p->type = type;
        p->i = iv;
        p->f = fv;
        if ((type == BITT_TUPLE_BYTES || type == BITT_TUPLE_STRING) && data.len)
            ct_bytes_put(&p->data, data.ptr, data.len);
        bitt_buf_dispose(&data);
    }
}

static void exec_order(const ct_op *op, ct_result *r)
{
    ct_bytes prev = {0}, cur = {0};
    capture(r, BITT_OK);
    for (size_t i = 0; i < op->ntuples; i++) {
        int rc = ct_tuple_encode(&op->tuples[i], &cur);
        if (rc) {
            capture(r, rc);
            break;
        }
        if (i > 0 && bytes_cmp(&prev, &cur) >= 0) {
            char *a = ct_show(prev.p, prev.n), *b = ct_show(cur.p, cur.n);
            problem(r, "tuple %zu does not sort before tuple %zu: %s >= %s", i - 1, i, a, b);
            free(a);
            free(b);
            break;
        }
        ct_bytes_free(&prev);
        prev = cur;
        cur = (ct_bytes){0};
    }
    ct_bytes_free(&prev);
    ct_bytes_free(&cur);
}

static void exec_list(bitt_store *s, const ct_op *op, ct_result *r)
{
    bitt_list_options o;
    int rc = bitt_list_options_init(&o, BITT_LIST_OPTIONS_VERSION);
    if (rc) {
        capture(r, rc);
        problem(r, "bitt_list_options_init(BITT_LIST_OPTIONS_VERSION) gave %d", rc);
        return;
    }
    if (op->has_prefix) {
        o.prefix = given(&op->prefix);
        o.prefix_len = op->prefix.n;
    }
    if (op->has_start) {
        o.start = given(&op->start);
        o.start_len = op->start.n;
    }
    if (op->has_end) {
        o.end = given(&op->end);
        o.end_len = op->end.n;
    }
    o.limit = op->limit;
    o.reverse = op->reverse;
    size_t max_page = op->limit ? op->limit : BITT_LIST_LIMIT_DEFAULT;
    char *cursor = op->cursor ? strdup(op->cursor) : NULL;
    for (;;) {
        bitt_entries *page = NULL;
        o.cursor = cursor;
        rc = bitt_kv_list(s, &o, &page);
        capture(r, rc);
        if (rc) {
            if (page)
                problem(r, "bitt_kv_list failed (%d) but set *out", rc);
            break;
        }
        if (!page) {
            problem(r, "bitt_kv_list returned BITT_OK with *out = NULL");
            break;
        }
        size_t n = bitt_entries_count(page);
        const char *next = bitt_entries_cursor(page);
        free(cursor);
        cursor = next ? strdup(next) : NULL;
        if (add_page(r, page))
            break;
        if (n > max_page)
            problem(r, "page %zu has %zu entries, over its limit of %zu", r->npages, n, max_page);
        if (!op->follow || !cursor)
            break;
        if (n == 0) {
            problem(r, "page %zu is empty but came with a cursor", r->npages);
            break;
        }
        if (r->npages >= CT_MAX_PAGES) {
            problem(r, "still a cursor after %d pages", CT_MAX_PAGES);
            break;
        }
    }
    r->has_cursor = cursor != NULL;
    r->cursor = cursor;
}

static void exec_txn(bitt_store *s, const ct_op *op, ct_result *r)
{
    char first_refusal[512] = ""; /* with commit_anyway: the commit's message */
    bitt_txn *t = NULL;
    int rc = bitt_txn_begin(s, &t);
    if (rc) {
        capture(r, rc);
        return;
    }
    for (size_t i = 0; i < op->nactions; i++) {
        const ct_action *a = &op->actions[i];
        switch (a->type) {
        case ACT_CHECK: rc = bitt_txn_check(t, arg(&a->key), a->key.n, a->version); break;
        case ACT_SET:
            rc = bitt_txn_set(t, arg(&a->key), a->key.n, arg(&a->value), a->value.n, a->kind,
                              a->ttl);
            break;
        case ACT_DELETE: rc = bitt_txn_delete(t, arg(&a->key), a->key.n); break;
        case ACT_SUM: rc = bitt_txn_sum(t, arg(&a->key), a->key.n, a->delta); break;
        default: rc = ct_exec_module_action(t, a); break;
        }
        if (op->commit_anyway) { /* the refusals are expected: the commit is the step */
            if (rc < 0 && !first_refusal[0])
                snprintf(first_refusal, sizeof first_refusal, "%s", bitt_error_last());
            if (rc != a->refused)
                problem(r, "txn action %zu gave %s (%d: %s), expected %s", i, ct_status_name(rc),
                        rc, rc < 0 ? bitt_error_last() : "", ct_status_name(a->refused));
            else if (rc < 0 && (bitt_error_last_code() != rc || !bitt_error_last()[0]))
                problem(r, "txn action %zu gave %s without its last error", i, ct_status_name(rc));
        } else if (rc) {
            capture(r, rc);
            bitt_txn_free(t);
            return;
        }
    }
    uint64_t v = 0;
    rc = bitt_txn_commit(t, &v);
    capture(r, rc);
    r->version = v;
    if (first_refusal[0] && rc < 0 && strcmp(first_refusal, bitt_error_last()))
        problem(r, "the commit's message \"%s\" is not the first refusal's \"%s\"",
                bitt_error_last(), first_refusal);
    if (op->recommit) {
        v = 0;
        r->recommit_status = bitt_txn_commit(t, &v);
        r->recommit_version = v;
        if (r->recommit_status < 0) {
            r->recommit_last_code = bitt_error_last_code();
            snprintf(r->recommit_message, sizeof r->recommit_message, "%s", bitt_error_last());
        }
    }
    bitt_txn_free(t);
}

static void exec_entry(ct_result *r, int rc, bitt_entry *e, const char *fn)
{
    capture(r, rc);
    r->entry = e;
    if (rc == BITT_OK && !e)
        problem(r, "%s returned BITT_OK with *out = NULL", fn);
    if (rc != BITT_OK && e)
        problem(r, "%s returned %d but set *out", fn, rc);
}

void ct_exec(bitt_store *s, const ct_op *op, ct_result *r)
{
    memset(r, 0, sizeof *r);
    bitt_entry *e = NULL;
    bitt_entries *many = NULL;
    int rc;
    switch (op->code) {
    case OP_GET:
        rc = bitt_kv_get(s, arg(&op->key), op->key.n, &e);
        exec_entry(r, rc, e, "bitt_kv_get");
        break;
    case OP_TAKE:
        rc = bitt_kv_take(s, arg(&op->key), op->key.n, &e);
        exec_entry(r, rc, e, "bitt_kv_take");
        break;
    case OP_ROUNDTRIP: {
        /* What a binding does with a decoded value; in C the value is its
         * bytes and kind, so they go back as they came. */
        rc = bitt_kv_get(s, arg(&op->key), op->key.n, &e);
        if (rc == BITT_OK) {
            size_t n = 0;
            const void *v = bitt_entry_value(e, &n);
            rc = bitt_kv_set(s, arg(&op->key), op->key.n, v, n, bitt_entry_kind(e), 0, NULL);
        }
        bitt_entry_free(e);
        e = NULL;
        r->status = rc;
        break;
    }
    case OP_GET_MANY: {
        const void **ptrs = calloc(op->nkeys + 1, sizeof *ptrs);
        size_t *lens = calloc(op->nkeys + 1, sizeof *lens);
        if (!ptrs || !lens) {
            free(ptrs);
            free(lens);
            problem(r, "runner out of memory");
            break;
        }
        for (size_t i = 0; i < op->nkeys; i++) {
            ptrs[i] = arg(&op->keys[i]);
            lens[i] = op->keys[i].n;
        }
        rc = bitt_kv_get_many(s, ptrs, lens, op->nkeys, &many);
        free(ptrs);
        free(lens);
        capture(r, rc);
        if (rc == BITT_OK && many)
            add_page(r, many);
        else if (rc == BITT_OK)
            problem(r, "bitt_kv_get_many returned BITT_OK with *out = NULL");
        else if (many)
            problem(r, "bitt_kv_get_many returned %d but set *out", rc);
        break;
    }
    case OP_SET:
    case OP_ADD:
        rc = (op->code == OP_SET ? bitt_kv_set : bitt_kv_add)(s, arg(&op->key), op->key.n,
                                                              arg(&op->value), op->value.n,
                                                              op->kind, op->ttl, &r->version);
        capture(r, rc);
        break;
    case OP_DELETE: capture(r, bitt_kv_delete(s, arg(&op->key), op->key.n)); break;
    case OP_INCREMENT:
        rc = bitt_kv_increment(s, arg(&op->key), op->key.n, op->delta, op->ttl, &r->counter,
                               &r->version);
        capture(r, rc);
        break;
    case OP_LIST: exec_list(s, op, r); break;
    case OP_PURGE: capture(r, bitt_kv_purge_expired(s, &r->removed)); break;
    case OP_FILL: {
        capture(r, BITT_OK);
        for (size_t i = 0; i < op->count; i++) {
            ct_bytes key = {0};
            if (ct_fill_key(&op->prefix, op->width, i, &key)) {
                problem(r, "runner out of memory");
                break;
            }
            rc = bitt_kv_set(s, arg(&key), key.n, arg(&op->value), op->value.n, op->kind, op->ttl,
                             NULL);
            ct_bytes_free(&key);
            if (rc) {
                capture(r, rc);
                break;
            }
        }
        break;
    }
    case OP_TXN: exec_txn(s, op, r); break;
    case OP_STORE_OPEN: {
        bitt_store *other = NULL;
        capture(r, bitt_store_open(op->url, &other));
        bitt_store_close(other);
        break;
    }
    case OP_CLOCK_SET: capture(r, bitt_clock_set_manual(s, op->num)); break;
    case OP_CLOCK_ADVANCE: capture(r, bitt_clock_advance(s, op->num)); break;
    case OP_CLOCK_NOW: capture(r, bitt_clock_now(s, &r->now)); break;
    case OP_TUPLE_ENCODE: capture(r, ct_tuple_encode(&op->tuples[0], &r->encoded)); break;
    case OP_TUPLE_DECODE: exec_decode(op, r); break;
    case OP_TUPLE_ORDER: exec_order(op, r); break;
    default:
        if (CT_IS_MODULE_OP(op->code))
            ct_exec_module(s, op, r);
        else
            problem(r, "op %d cannot be executed here", op->code);
    }
}

void ct_result_free(ct_result *r)
{
    bitt_entry_free(r->entry);
    for (size_t i = 0; i < r->npages; i++)
        bitt_entries_free(r->pages[i]);
    free(r->pages);
    free(r->items);
    free(r->cursor);
    ct_bytes_free(&r->encoded);
    ct_tuple_free(&r->decoded);
    bitt_messages_free(r->msgs);
    free(r->statuses);
    bitt_message_free(r->msg);
    bitt_buf_dispose(&r->owner);
    bitt_schedule_free(r->sched);
    bitt_schedule_list_free(r->scheds, r->nscheds);
    bitt_pubsub_close(r->sub); /* a subscription nobody saved */
    memset(r, 0, sizeof *r);
}
