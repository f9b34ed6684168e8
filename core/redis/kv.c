/*
 * core/redis/kv.c: the KV reads of the Redis backend, and the purge.
 *
 * A value is the hash P k:<key> (v value, t kind, s version, e expires_at,
 * 0 = never); P kidx orders every key (a sorted set with all scores 0, read
 * with ZRANGEBYLEX: byte order) and P kexp scores the keys with a TTL by
 * their expiry (a key set again without one may stay there until the purge
 * finds its row has none and drops it). Expiry is decided by the store's
 * clock (t->now) on every read; expired rows are removed by writes that
 * touch them and by purge.
 */
#include <stdlib.h>
#include <string.h>

#include "redis_internal.h"

#define PURGE_BATCH 1000
#define PURGE_CALLS_MAX 100000 /* bounds the loop: 10^8 expired rows per purge */

int bitt__rd_entry(const redisReply *r, size_t at, const uint8_t *key, size_t key_len, int64_t now,
                   bitt_entry **out, const char *what)
{
    *out = NULL;
    size_t vlen, tlen, slen, elen;
    const char *v = bitt__rd_str(r, at, &vlen);
    const char *t = bitt__rd_str(r, at + 1, &tlen);
    const char *s = bitt__rd_str(r, at + 2, &slen);
    const char *e = bitt__rd_str(r, at + 3, &elen);
    if (!s)
        return BITT_OK; /* absent */
    int64_t version, expires_at, kind;
    int rc = bitt__rd_parse_i64(s, slen, &version, what);
    if (!rc)
        rc = bitt__rd_parse_i64(e, elen, &expires_at, what);
    if (!rc)
        rc = bitt__rd_parse_i64(t, tlen, &kind, what);
    if (rc)
        return rc;
    if (!bitt__live(expires_at, now))
        return BITT_OK;
    *out =
        bitt__entry_new(key, key_len, v ? v : "", vlen, (int)kind, (uint64_t)version, expires_at);
    return *out ? BITT_OK : BITT_ENOMEM;
}

/* "P k:" + key, in buf when it fits, else malloc'd (*heap). */
static const char *entry_key(const bitt_backend *be, const uint8_t *key, size_t key_len, char *buf,
                             size_t size, char **heap, size_t *len)
{
    size_t plen = strlen(be->anchor);
    *len = plen + 3 + key_len;
    char *k = *len <= size ? buf : (*heap = bitt__malloc(*len));
    if (!k)
        return NULL;
    memcpy(k, be->anchor, plen);
    memcpy(k + plen, ":k:", 3);
    if (key_len)
        memcpy(k + plen + 3, key, key_len);
    return k;
}

int bitt__rd_kv_get(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                    bitt_entry **out)
{
    *out = NULL;
    char buf[512], *heap = NULL;
    size_t klen;
    const char *k = entry_key(be, key, key_len, buf, sizeof buf, &heap, &klen);
    if (!k)
        return bitt__fail(BITT_ENOMEM, "redis: out of memory for a key");
    /* One hash, one command: no script needed for a consistent read. */
    bitt_rd_args a;
    bitt__rd_args_init(&a);
    bitt__rd_arg_str(&a, "HMGET");
    bitt__rd_arg(&a, k, klen);
    bitt__rd_arg_str(&a, "v");
    bitt__rd_arg_str(&a, "t");
    bitt__rd_arg_str(&a, "s");
    bitt__rd_arg_str(&a, "e");
    a.retry = 1;
    redisReply *r = NULL;
    int rc = bitt__rd_call(be, "kv get", &a, 1, &r);
    bitt__rd_args_free(&a);
    free(heap);
    if (rc)
        return rc;
    rc = bitt__rd_elem_count(r, 0, 4, "kv get");
    if (!rc)
        rc = bitt__rd_entry(r, 0, key, key_len, t->now, out, "kv get");
    freeReplyObject(r);
    if (rc)
        return rc;
    return *out ? BITT_OK : BITT_NOTFOUND;
}

int bitt__rd_kv_get_many(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                         const size_t *key_lens, size_t count, bitt_entries *out)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    for (size_t i = 0; i < count; i++)
        bitt__rd_arg(&a, keys[i], key_lens[i]);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_GET_MANY, &a, count, &r);
    if (rc)
        return rc;
    rc = bitt__rd_elem_count(r, 1, 4 * count, "kv get_many");
    for (size_t i = 0; !rc && i < count; i++) {
        bitt_entry *e = NULL;
        rc = bitt__rd_entry(r, 1 + 4 * i, keys[i], key_lens[i], t->now, &e, "kv get_many");
        if (!rc)
            rc = bitt__entries_push(out, e);
    }
    freeReplyObject(r);
    return rc;
}

int bitt__rd_kv_list(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                     bitt_entries *out)
{
    bitt_rd_args a;
    bitt__rd_script_args(be, &a, t);
    bitt__rd_arg(&a, range->lo, range->lo_len);
    bitt__rd_arg(&a, range->has_hi ? range->hi : NULL, range->has_hi ? range->hi_len : 0);
    bitt__rd_arg_str(&a, range->has_hi ? "1" : "0");
    bitt__rd_arg_str(&a, range->reverse ? "1" : "0");
    bitt__rd_arg_u64(&a, range->limit);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_LIST, &a, range->limit, &r);
    if (rc)
        return rc;
    if ((r->elements - 1) % 5 || (r->elements - 1) / 5 > range->limit)
        rc = bitt__fail(BITT_EBACKEND, "redis: kv list: the reply has an unexpected shape");
    for (size_t i = 1; !rc && i < r->elements; i += 5) {
        size_t klen;
        const char *key = bitt__rd_str(r, i, &klen);
        bitt_entry *e = NULL;
        rc = bitt__rd_entry(r, i + 1, (const uint8_t *)(key ? key : ""), klen, t->now, &e,
                            "kv list");
        if (!rc && e)
            rc = bitt__entries_push(out, e);
    }
    freeReplyObject(r);
    return rc;
}

int bitt__rd_kv_purge(bitt_backend *be, const bitt_time *t, uint64_t *removed)
{
    uint64_t total = 0;
    int rc = BITT_OK;
    for (int calls = 0; calls < PURGE_CALLS_MAX; calls++) {
        bitt_rd_args a;
        bitt__rd_script_args(be, &a, t);
        bitt__rd_arg_u64(&a, PURGE_BATCH);
        redisReply *r = NULL;
        rc = bitt__rd_run(be, RS_PURGE, &a, 1, &r);
        if (rc)
            break;
        int64_t n = 0, more = 0;
        rc = bitt__rd_elem_count(r, 1, 2, "kv purge");
        if (!rc)
            rc = bitt__rd_i64(r, 1, &n, "kv purge");
        if (!rc)
            rc = bitt__rd_i64(r, 2, &more, "kv purge");
        freeReplyObject(r);
        if (rc)
            break;
        total += (uint64_t)n;
        if (!more)
            break;
    }
    if (removed)
        *removed = total;
    return rc;
}
