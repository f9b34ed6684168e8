/*
 * tests/c/support/diff_kv.c: the KV step of a differential run (diff.h).
 * Keys include NUL, 0xff and pattern bytes (%, _, *, ?, [, {}); values
 * include counters at the int64 edges, JSON and NUL bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "diff.h"

#define N DIFF_MAX_STORES

typedef struct bkey {
    const char *bytes;
    size_t len;
} bkey;

static const bkey g_keys[] = {
    {"", 0},  {"a", 1}, {"a\0", 2},  {"a\0b", 3},     {"ab", 2}, {"a_", 2},    {"{t}", 3},
    {"b", 1}, {"%", 1}, {"\xff", 1}, {"\xff\xfe", 2}, {"ba", 2}, {"a\xff", 2}, {"*?[", 3},
};
enum { DKEYS = sizeof g_keys / sizeof *g_keys };

/* One of the keys, or with edges now and then one at or over the limit. */
static bkey rkey(diff_ctx *c)
{
    bkey k = g_keys[diff_rnd(c, DKEYS)];
    const void *p;
    if (diff_edge_key(c, &p, &k.len))
        k.bytes = p;
    return k;
}

static void list_options(diff_ctx *c, bitt_list_options *o)
{
    bkey a = rkey(c), b = rkey(c);
    switch (diff_rnd(c, 4)) {
    case 0:
        o->prefix = a.bytes;
        o->prefix_len = a.len;
        break;
    case 1:
        o->start = a.bytes;
        o->start_len = a.len;
        break;
    case 2:
        o->start = a.bytes;
        o->start_len = a.len;
        o->end = b.bytes;
        o->end_len = b.len;
        break;
    default: break;
    }
    o->limit = diff_edge_limit(c, diff_rnd(c, 5));
    o->reverse = (int)diff_rnd(c, 2);
    if (c->cursor && diff_rnd(c, 3) == 0)
        o->cursor = c->cursor;
}

/* A commit of up to 4 checks, sets, deletes and sums; with edges, also
 * refused adds and now and then a txn of BITT_TXN_OPS_MAX ops or one more. */
static void txn(diff_ctx *c, const void *v, size_t vlen, int kind, int64_t ttl, int64_t delta,
                int *rc, uint64_t *ver)
{
    diff_txn x;
    diff_txn_begin(c, &x);
    uint32_t nops = diff_rnd(c, 5);
    for (uint32_t j = 0; j < nops; j++) {
        if (c->edges && diff_rnd(c, 5) == 0) {
            diff_txn_edge_add(c, &x);
            continue;
        }
        bkey kk = rkey(c);
        uint32_t type = diff_rnd(c, 4);
        uint64_t cv = 0;
        if (type == 0 && diff_rnd(c, 2)) {
            bitt_entry *cur;
            if (bitt_kv_get(c->s[0], kk.bytes, kk.len, &cur) == BITT_OK) {
                cv = bitt_entry_version(cur) + (diff_rnd(c, 4) == 0);
                bitt_entry_free(cur);
            }
        }
        int arc[N];
        for (int i = 0; i < c->n; i++) {
            bitt_txn *t = x.t[i];
            int r;
            switch (type) {
            case 0: r = bitt_txn_check(t, kk.bytes, kk.len, diff_version_for(c, i, cv)); break;
            case 1: r = bitt_txn_set(t, kk.bytes, kk.len, v, vlen, kind, ttl); break;
            case 2: r = bitt_txn_delete(t, kk.bytes, kk.len); break;
            default: r = bitt_txn_sum(t, kk.bytes, kk.len, delta); break;
            }
            arc[i] = diff_txn_note(&x, i, r);
        }
        diff_txn_added(c, &x, arc, "txn action");
    }
    if (c->edges && diff_rnd(c, 150) == 0)
        diff_txn_fill(c, &x, diff_rnd(c, 2));
    diff_txn_commit(c, &x, rc, ver);
}

void diff_kv_step(diff_ctx *c)
{
    int rc[N];
    uint64_t ver[N] = {0};
    int64_t val[N] = {0};
    bitt_entry *e[N] = {0};
    bitt_entries *es[N] = {0};
    const char *what;
    bkey key = rkey(c);
    const bkey *k = &key;
    static const char *const values[] = {
        "",          "x",   "0", "-7", "12", "9223372036854775807", "-9223372036854775808",
        "{\"a\":1}", "v\0v"};
    const void *v = values[diff_rnd(c, 9)];
    size_t vlen = ((const char *)v)[0] == 'v' ? 3 : strlen(v);
    int kind = diff_rnd(c, 3) == 0   ? BITT_KIND_COUNTER
               : diff_rnd(c, 4) == 0 ? BITT_KIND_JSON
                                     : BITT_KIND_BYTES;
    diff_edge_value(c, &v, &vlen, &kind);
    int64_t ttl = diff_edge_ttl(c, diff_rnd(c, 3) == 0 ? (int64_t)diff_rnd(c, 50) + 1 : 0);
    int64_t delta = diff_rnd(c, 10) == 0   ? INT64_MAX
                    : diff_rnd(c, 10) == 0 ? INT64_MIN
                                           : (int64_t)diff_rnd(c, 21) - 10;
    uint32_t op = diff_rnd(c, 100);
    if (op < 15) {
        what = "set";
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_kv_set(c->s[i], k->bytes, k->len, v, vlen, kind, ttl, &ver[i]);
    } else if (op < 22) {
        what = "add";
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_kv_add(c->s[i], k->bytes, k->len, v, vlen, kind, ttl, &ver[i]);
    } else if (op < 28) {
        what = "delete";
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_kv_delete(c->s[i], k->bytes, k->len);
    } else if (op < 33) {
        what = "take";
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_kv_take(c->s[i], k->bytes, k->len, &e[i]);
    } else if (op < 45) {
        what = "increment";
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_kv_increment(c->s[i], k->bytes, k->len, delta, ttl, &val[i], &ver[i]);
    } else if (op < 58) {
        what = "get";
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_kv_get(c->s[i], k->bytes, k->len, &e[i]);
    } else if (op < 63) {
        what = "get_many";
        const void *keys[4];
        size_t lens[4], n = diff_rnd(c, 5);
        for (size_t j = 0; j < n; j++) {
            bkey kk = rkey(c);
            keys[j] = kk.bytes;
            lens[j] = kk.len;
        }
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_kv_get_many(c->s[i], keys, lens, n, &es[i]);
    } else if (op < 76) {
        what = "list";
        bitt_list_options o = BITT_LIST_OPTIONS_INIT;
        list_options(c, &o);
        for (int i = 0; i < c->n; i++)
            rc[i] = bitt_kv_list(c->s[i], &o, &es[i]);
        if (rc[0] == BITT_OK && bitt_entries_cursor(es[0])) {
            char *next = strdup(bitt_entries_cursor(es[0]));
            if (!next)
                diff_fail(c, "out of memory");
            free(c->cursor);
            c->cursor = next;
        }
    } else if (op < 90) {
        what = "txn";
        txn(c, v, vlen, kind, ttl, delta, rc, ver);
    } else {
        what = "purge";
        for (int i = 0; i < c->n; i++) {
            uint64_t removed = 0;
            rc[i] = bitt_kv_purge_expired(c->s[i], &removed);
            val[i] = (int64_t)removed;
        }
    }
    diff_same_rc(c, rc, what);
    if (rc[0] >= 0) {
        diff_same_version(c, ver, what);
        diff_same_i64(c, val, what, "value");
        diff_same_entry(c, e, what);
        diff_same_entries(c, es, what);
    }
    for (int i = 0; i < c->n; i++) {
        bitt_entry_free(e[i]);
        bitt_entries_free(es[i]);
    }
}
