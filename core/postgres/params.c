/*
 * core/postgres/params.c: bound parameters and result columns in binary
 * format, binary arrays, advisory lock keys and the statement that takes
 * them, the statements every module shares, and messages made from rows.
 */
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

/* Type OIDs of the binary array headers (pg_type.h). */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

/* ---- parameters ----------------------------------------------------------- */

static int next_slot(bitt_pg_params *p)
{
    /* Statements are written with at most BITT_PG_MAX_PARAMS parameters. */
    return p->n < BITT_PG_MAX_PARAMS ? p->n++ : BITT_PG_MAX_PARAMS - 1;
}

void bitt__pg_p_bytes(bitt_pg_params *p, const void *data, size_t len)
{
    int i = next_slot(p);
    /* An empty value is an empty bytea, never NULL. */
    p->values[i] = len ? (const char *)data : "";
    p->lengths[i] = (int)len;
    p->formats[i] = 1;
}

void bitt__pg_p_text(bitt_pg_params *p, const char *s)
{
    if (!s) {
        bitt__pg_p_null(p);
        return;
    }
    int i = next_slot(p);
    p->values[i] = s;
    p->lengths[i] = (int)strlen(s);
    p->formats[i] = 1;
}

void bitt__pg_p_i64(bitt_pg_params *p, int64_t v)
{
    int i = next_slot(p);
    put_be(p->ints[i], (uint64_t)v, 8);
    p->values[i] = (const char *)p->ints[i];
    p->lengths[i] = 8;
    p->formats[i] = 1;
}

void bitt__pg_p_i32(bitt_pg_params *p, int32_t v)
{
    int i = next_slot(p);
    put_be(p->ints[i], (uint32_t)v, 4);
    p->values[i] = (const char *)p->ints[i];
    p->lengths[i] = 4;
    p->formats[i] = 1;
}

void bitt__pg_p_null(bitt_pg_params *p)
{
    int i = next_slot(p);
    p->values[i] = NULL;
    p->lengths[i] = 0;
    p->formats[i] = 1;
}

void bitt__pg_p_now(bitt_pg_params *p, const bitt_time *t)
{
    if (t && t->manual)
        bitt__pg_p_i64(p, t->now);
    else
        bitt__pg_p_null(p);
}

void bitt__pg_p_count(bitt_pg_params *p, size_t n)
{
    bitt__pg_p_i64(p, n > INT64_MAX ? INT64_MAX : (int64_t)n);
}

/* ---- binary arrays ------------------------------------------------------------ */

static int array_head(bitt_buf *buf, uint32_t elem_oid, size_t count)
{
    unsigned char head[20];
    buf->len = 0;
    if (count > INT32_MAX)
        return bitt__fail(BITT_ETOOLARGE, "postgres: an array of %zu items", count);
    put_be(head, count ? 1 : 0, 4); /* dimensions (an empty array has none) */
    put_be(head + 4, 0, 4);         /* no NULLs */
    put_be(head + 8, elem_oid, 4);
    put_be(head + 12, count, 4);
    put_be(head + 16, 1, 4); /* lower bound */
    return bitt__buf_put(buf, head, count ? 20 : 12);
}

static int array_item(bitt_buf *buf, const void *data, size_t len)
{
    unsigned char n[4];
    if (len > INT32_MAX)
        return bitt__fail(BITT_ETOOLARGE, "postgres: an array item of %zu bytes", len);
    put_be(n, len, 4);
    int rc = bitt__buf_put(buf, n, 4);
    return rc ? rc : bitt__buf_put(buf, data, len);
}

int bitt__pg_array_bytea(bitt_buf *buf, const uint8_t *const *items, const size_t *lens,
                         size_t count)
{
    int rc = array_head(buf, OID_BYTEA, count);
    for (size_t i = 0; i < count && !rc; i++)
        rc = array_item(buf, items[i], lens[i]);
    return rc;
}

int bitt__pg_array_int8(bitt_buf *buf, const int64_t *items, size_t count)
{
    int rc = array_head(buf, OID_INT8, count);
    for (size_t i = 0; i < count && !rc; i++) {
        unsigned char v[8];
        put_be(v, (uint64_t)items[i], 8);
        rc = array_item(buf, v, 8);
    }
    return rc;
}

int bitt__pg_array_text(bitt_buf *buf, const char *const *items, size_t count)
{
    int rc = array_head(buf, OID_TEXT, count);
    for (size_t i = 0; i < count && !rc; i++)
        rc = array_item(buf, items[i], strlen(items[i]));
    return rc;
}

/* ---- result columns ------------------------------------------------------------ */

int64_t bitt__pg_i64(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        return 0;
    const unsigned char *v = (const unsigned char *)PQgetvalue(res, row, col);
    switch (PQftype(res, col)) {
    case OID_BOOL: return v[0] != 0;
    case OID_INT2: return (int16_t)get_be(v, 2);
    case OID_INT4: return (int32_t)get_be(v, 4);
    default: return (int64_t)get_be(v, 8);
    }
}

const uint8_t *bitt__pg_bytes(const PGresult *res, int row, int col, size_t *len)
{
    *len = PQgetisnull(res, row, col) ? 0 : (size_t)PQgetlength(res, row, col);
    return *len ? (const uint8_t *)PQgetvalue(res, row, col) : (const uint8_t *)"";
}

const char *bitt__pg_text(const PGresult *res, int row, int col)
{
    /* libpq NUL-terminates every value, binary ones included. */
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* ---- lock keys ---------------------------------------------------------------- */

uint64_t bitt__pg_hash(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

int64_t bitt__pg_lock_key(const bitt_backend *be, char tag, const void *a, size_t alen,
                          const void *b, size_t blen)
{
    /* Lengths first, so (a, b) pairs never run into each other. */
    unsigned char head[17];
    head[0] = (unsigned char)tag;
    put_be(head + 1, alen, 8);
    put_be(head + 9, blen, 8);
    uint64_t h = bitt__pg_hash(be->ns_seed, head, sizeof head);
    h = bitt__pg_hash(h, a, alen);
    h = bitt__pg_hash(h, b, blen);
    /* A final mix, so nearby keys spread over the whole range. */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (int64_t)h;
}

/* ---- shared statements and the lock step ------------------------------------ */

const char bitt__pg_begin_sql[] = "BEGIN";
const char bitt__pg_commit_sql[] = "COMMIT";
const char bitt__pg_lock_sql[] =
    "SELECT count(pg_advisory_xact_lock(h)) FROM unnest($1::int8[]) AS u(h)";
const char bitt__pg_clock_sql[] =
    "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8";

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int bitt__pg_lock_step(bitt_pg_step *step, bitt_pg_params *p, bitt_buf *buf, int64_t *keys,
                       size_t count)
{
    /* One order for every locker: no deadlock between two commits. */
    qsort(keys, count, sizeof *keys, cmp_key);
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (!n || keys[n - 1] != keys[i])
            keys[n++] = keys[i];
    int rc = bitt__pg_array_int8(buf, keys, n);
    if (rc)
        return rc;
    memset(p, 0, sizeof *p);
    bitt__pg_p_bytes(p, buf->ptr, buf->len);
    *step = (bitt_pg_step){PG_LOCK, bitt__pg_lock_sql, p, NULL};
    return BITT_OK;
}

/* ---- messages ------------------------------------------------------------------- */

int bitt__pg_push_message(bitt_messages *out, const bitt_message *fields)
{
    bitt_message *m = bitt__message_new(fields);
    if (!m)
        return BITT_ENOMEM;
    return bitt__messages_push(out, m);
}

void bitt__pg_messages_truncate(bitt_messages *out, size_t base)
{
    while (out->count > base)
        bitt_message_free(out->items[--out->count]);
}
