/*
 * kv list: turns a selector (prefix, start, end, cursor, direction) into one
 * byte range [lo, hi) for the backend. A prefix is a byte range, never a
 * pattern. One extra row is fetched to know whether a cursor is needed.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int bitt_list_options_init(bitt_list_options *opts, unsigned int version)
{
    bitt__error_reset();
    if (!opts)
        return bitt__fail(BITT_EINVAL, "opts must not be NULL");
    if (version != BITT_LIST_OPTIONS_VERSION)
        return bitt__fail(BITT_EINVAL, "unknown bitt_list_options version %u (this library: %d)",
                          version, BITT_LIST_OPTIONS_VERSION);
    *opts = (bitt_list_options)BITT_LIST_OPTIONS_INIT;
    return BITT_OK;
}

static int has_prefix(const void *key, size_t len, const void *prefix, size_t prefix_len)
{
    return len >= prefix_len && (prefix_len == 0 || !memcmp(key, prefix, prefix_len));
}

static int compare(const void *a, size_t a_len, const void *b, size_t b_len)
{
    size_t n = a_len < b_len ? a_len : b_len;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : (a_len > b_len) - (a_len < b_len);
}

/* The smallest key above every key that starts with prefix; none when the
 * prefix is empty or all 0xff. */
static int prefix_end(const uint8_t *prefix, size_t len, bitt_buf *out, int *has)
{
    while (len && prefix[len - 1] == 0xff)
        len--;
    *has = len > 0;
    if (!len)
        return BITT_OK;
    int rc = bitt__buf_put(out, prefix, len);
    if (!rc)
        out->ptr[len - 1]++;
    return rc;
}

static int check_bound(const bitt_store *store, const char *name, const void *p, size_t len)
{
    if (!p && len)
        return bitt__fail(BITT_EINVAL, "list %s is NULL with length %zu", name, len);
    if (p && len > store->limits.max_key_size)
        return bitt__fail(BITT_ETOOLARGE, "list %s of %zu bytes is over the key limit of %zu", name,
                          len, store->limits.max_key_size);
    return BITT_OK;
}

static int check_selector(const bitt_store *store, const bitt_list_options *o)
{
    if (o->version != BITT_LIST_OPTIONS_VERSION)
        return bitt__fail(BITT_EINVAL, "unknown bitt_list_options version %u (this library: %d)",
                          o->version, BITT_LIST_OPTIONS_VERSION);
    int rc = check_bound(store, "prefix", o->prefix, o->prefix_len);
    if (!rc)
        rc = check_bound(store, "start", o->start, o->start_len);
    if (!rc)
        rc = check_bound(store, "end", o->end, o->end_len);
    if (rc)
        return rc;
    if (o->limit > BITT_LIST_LIMIT_MAX)
        return bitt__fail(BITT_ETOOLARGE, "list limit %u is over the maximum of %d", o->limit,
                          BITT_LIST_LIMIT_MAX);
    if (o->prefix && o->start && !has_prefix(o->start, o->start_len, o->prefix, o->prefix_len))
        return bitt__fail(BITT_EINVAL, "list start lies outside the prefix");
    if (o->prefix && o->end && !has_prefix(o->end, o->end_len, o->prefix, o->prefix_len))
        return bitt__fail(BITT_EINVAL, "list end lies outside the prefix");
    return BITT_OK;
}

/* The range of the selector alone, before any cursor. */
static int selector_range(const bitt_list_options *o, bitt_range *r, bitt_buf *hi_buf)
{
    memset(r, 0, sizeof *r);
    r->lo = (const uint8_t *)"";
    if (o->prefix) {
        r->lo = o->prefix;
        r->lo_len = o->prefix_len;
        int rc = prefix_end(o->prefix, o->prefix_len, hi_buf, &r->has_hi);
        if (rc)
            return rc;
        r->hi = hi_buf->ptr;
        r->hi_len = hi_buf->len;
    }
    if (o->start) {
        r->lo = o->start;
        r->lo_len = o->start_len;
    }
    if (o->end) {
        r->hi = o->end;
        r->hi_len = o->end_len;
        r->has_hi = 1;
    }
    r->reverse = o->reverse != 0;
    return BITT_OK;
}

/* Narrows r to what follows the cursor's key; lo_buf holds a new bound. */
static int apply_cursor(const bitt_store *store, const bitt_list_options *o, bitt_range *r,
                        bitt_buf *key, bitt_buf *lo_buf)
{
    int rc =
        bitt__cursor_decode(o->cursor, bitt__selector_hash(o), store->limits.max_key_size, key);
    if (rc)
        return rc;
    if (compare(key->ptr, key->len, r->lo, r->lo_len) < 0 ||
        (r->has_hi && compare(key->ptr, key->len, r->hi, r->hi_len) >= 0))
        return bitt__fail(BITT_ECURSOR, "cursor lies outside the selector's range");
    if (r->reverse) {
        r->hi = key->ptr;
        r->hi_len = key->len;
        r->has_hi = 1;
        return BITT_OK;
    }
    /* The first key after k in byte order is k followed by 0x00. */
    rc = bitt__buf_put(lo_buf, key->ptr, key->len);
    if (!rc)
        rc = bitt__buf_putc(lo_buf, 0);
    r->lo = lo_buf->ptr;
    r->lo_len = lo_buf->len;
    return rc;
}

int bitt_kv_list(bitt_store *store, const bitt_list_options *opts, bitt_entries **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    if (!store)
        return bitt__fail(BITT_EINVAL, "store must not be NULL");
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    if (opts)
        o = *opts;
    int rc = check_selector(store, &o);
    if (rc)
        return rc;
    size_t limit = o.limit ? o.limit : BITT_LIST_LIMIT_DEFAULT;

    bitt_buf hi_buf = BITT_BUF_INIT, lo_buf = BITT_BUF_INIT, key = BITT_BUF_INIT;
    bitt_range r;
    bitt_entries *list = NULL;
    rc = selector_range(&o, &r, &hi_buf);
    if (!rc && o.cursor)
        rc = apply_cursor(store, &o, &r, &key, &lo_buf);
    if (!rc) {
        r.limit = limit + 1;
        list = bitt__entries_new(0);
        rc = list ? BITT_OK : BITT_ENOMEM;
    }
    /* An empty range (lo >= hi) needs no backend call. */
    if (!rc && !(r.has_hi && compare(r.lo, r.lo_len, r.hi, r.hi_len) >= 0)) {
        bitt_time t;
        bitt__store_enter(store, &t);
        rc = store->ops->kv_list(store->be, &t, &r, list);
        bitt__store_leave(store);
    }
    if (!rc && list->count > limit) {
        free(list->items[--list->count]);
        const bitt_entry *last = list->items[list->count - 1];
        rc = bitt__cursor_encode(bitt__selector_hash(&o), last->key, last->key_len, &list->cursor);
    }
    bitt_buf_dispose(&hi_buf);
    bitt_buf_dispose(&lo_buf);
    bitt_buf_dispose(&key);
    if (rc) {
        bitt_entries_free(list);
        return rc;
    }
    *out = list;
    return BITT_OK;
}
