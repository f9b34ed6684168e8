/*
 * fuzz_tuple: the tuple-key codec (core/tuple.c).
 *
 * The input is two keys: byte 0 says where the first one ends. Each key is
 * decoded part by part with bitt_tuple_next; the properties:
 *  - decoding never reads past the key (ASan) and ends in BITT_OK parts,
 *    then BITT_NOTFOUND, or BITT_EINVAL;
 *  - a key that decodes whole re-encodes, part by part with
 *    bitt_tuple_push_*, to exactly its bytes (one spelling per tuple);
 *  - for two keys that both decode, memcmp order (a shorter key first on a
 *    tie) is the tuple order of bitt.h: part by part, by type first
 *    (bytes < string < integer < float < false < true), then by value, and
 *    a tuple before its extensions.
 * The same bytes are then read as two tuples to build (see build()): the
 * encoder refuses exactly NaN and invalid UTF-8, what it writes decodes to
 * the same parts (-0.0 as 0.0), and the two encodings order as the tuples.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitt.h"
#include "utf8.h"

#define MAX_PARTS 64

typedef struct part {
    int type;
    const uint8_t *data; /* bytes and strings: into the part's buffer */
    size_t len;
    int64_t i;
    double f;
} part;

typedef struct tuple {
    part parts[MAX_PARTS];
    bitt_buf bufs[MAX_PARTS];
    size_t count;
} tuple;

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_tuple: %s\n", what);
    abort();
}

/* Decodes key into t; 1 when the whole key is a tuple encoding. */
static int decode(const uint8_t *key, size_t len, tuple *t)
{
    size_t off = 0;
    t->count = 0;
    for (;;) {
        if (t->count == MAX_PARTS)
            return 0;
        part *p = &t->parts[t->count];
        bitt_buf *b = &t->bufs[t->count];
        size_t before = off;
        int rc = bitt_tuple_next(key, len, &off, &p->type, b, &p->i, &p->f);
        if (rc == BITT_NOTFOUND) {
            if (off != len)
                fail("NOTFOUND before the end of the key");
            return 1;
        }
        if (rc == BITT_EINVAL) {
            if (off != before)
                fail("a refused part moved the offset");
            if (!bitt_error_last()[0])
                fail("BITT_EINVAL without a message");
            return 0;
        }
        if (rc != BITT_OK)
            fail("bitt_tuple_next gave a status other than OK, NOTFOUND, EINVAL");
        if (off <= before || off > len)
            fail("the offset did not move forward inside the key");
        p->data = b->ptr;
        p->len = b->len;
        t->count++;
    }
}

static void encode(const tuple *t, bitt_buf *out)
{
    for (size_t i = 0; i < t->count; i++) {
        const part *p = &t->parts[i];
        int rc = BITT_EINVAL;
        switch (p->type) {
        case BITT_TUPLE_BYTES: rc = bitt_tuple_push_bytes(out, p->data, p->len); break;
        case BITT_TUPLE_STRING:
            rc = bitt_tuple_push_string(out, (const char *)p->data, p->len);
            break;
        case BITT_TUPLE_INT: rc = bitt_tuple_push_int(out, p->i); break;
        case BITT_TUPLE_FLOAT: rc = bitt_tuple_push_float(out, p->f); break;
        case BITT_TUPLE_BOOL: rc = bitt_tuple_push_bool(out, (int)p->i); break;
        default: fail("unknown part type");
        }
        if (rc != BITT_OK)
            fail("a decoded part does not encode again");
    }
}

static int sign(long long v)
{
    return (v > 0) - (v < 0);
}

/* The type's place in the order of bitt.h (false and true are two places). */
static int rank(const part *p)
{
    switch (p->type) {
    case BITT_TUPLE_BYTES: return 0;
    case BITT_TUPLE_STRING: return 1;
    case BITT_TUPLE_INT: return 2;
    case BITT_TUPLE_FLOAT: return 3;
    default: return p->i ? 5 : 4;
    }
}

static int compare_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? sign(c) : sign((long long)(al > bl) - (long long)(al < bl));
}

static int compare_parts(const part *a, const part *b)
{
    int ra = rank(a), rb = rank(b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    switch (a->type) {
    case BITT_TUPLE_BYTES:
    case BITT_TUPLE_STRING: return compare_bytes(a->data, a->len, b->data, b->len);
    case BITT_TUPLE_INT: return (a->i > b->i) - (a->i < b->i);
    case BITT_TUPLE_FLOAT: return (a->f > b->f) - (a->f < b->f);
    default: return 0;
    }
}

static int compare_tuples(const tuple *a, const tuple *b)
{
    for (size_t i = 0; i < a->count && i < b->count; i++) {
        int c = compare_parts(&a->parts[i], &b->parts[i]);
        if (c)
            return c;
    }
    return (a->count > b->count) - (a->count < b->count);
}

static void check_round_trip(const uint8_t *key, size_t len, const tuple *t)
{
    bitt_buf again = BITT_BUF_INIT;
    encode(t, &again);
    if (again.len != len || (len && memcmp(again.ptr, key, len)))
        fail("a decoded key re-encodes to other bytes");
    bitt_buf_dispose(&again);
}

static tuple g_a, g_b, g_c, g_d;

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint64_t take(reader *r, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes && r->n; i++, r->n--)
        v = v << 8 | *r->p++;
    return v;
}

/* Builds up to 6 parts from the input: a tag byte (type), then 8 bytes of
 * integer or float bits, or a length byte and that many bytes. Parts the
 * encoder must refuse (NaN, invalid UTF-8) are checked and left out. */
static void build(reader *r, tuple *t, bitt_buf *key)
{
    t->count = 0;
    while (r->n && t->count < 6) {
        part *p = &t->parts[t->count];
        int rc;
        p->type = 1 + (int)(take(r, 1) % 5);
        switch (p->type) {
        case BITT_TUPLE_BYTES:
        case BITT_TUPLE_STRING: {
            size_t n = take(r, 1) % 16;
            n = n < r->n ? n : r->n;
            p->data = r->p; /* the input outlives the call */
            p->len = n;
            r->p += n;
            r->n -= n;
            if (p->type == BITT_TUPLE_BYTES) {
                rc = bitt_tuple_push_bytes(key, p->data, n);
                break;
            }
            rc = bitt_tuple_push_string(key, (const char *)p->data, n);
            if ((rc == BITT_EINVAL) != (bitt__utf8_invalid_at(p->data, n) != 0))
                fail("the encoder's verdict on a string differs from the UTF-8 check");
            break;
        }
        case BITT_TUPLE_INT:
            p->i = (int64_t)take(r, 8);
            rc = bitt_tuple_push_int(key, p->i);
            break;
        case BITT_TUPLE_FLOAT: {
            uint64_t bits = take(r, 8);
            memcpy(&p->f, &bits, sizeof p->f);
            rc = bitt_tuple_push_float(key, p->f);
            if ((rc == BITT_EINVAL) != (p->f != p->f))
                fail("the encoder refuses a float other than NaN, or takes NaN");
            if (p->f == 0.0)
                p->f = 0.0;
            break;
        }
        default:
            p->i = (int64_t)(take(r, 1) & 1);
            rc = bitt_tuple_push_bool(key, (int)p->i);
            break;
        }
        if (rc == BITT_EINVAL && p->type != BITT_TUPLE_INT)
            continue; /* NaN (checked above) or invalid UTF-8 (checked below) */
        if (rc != BITT_OK)
            fail("the encoder refused a valid part");
        t->count++;
    }
}

/* What was built decodes to the same parts. */
static void check_built(const bitt_buf *key, const tuple *built, tuple *decoded)
{
    if (!decode(key->ptr, key->len, decoded) || decoded->count != built->count)
        fail("an encoded tuple does not decode to its parts");
    for (size_t i = 0; i < built->count; i++) {
        const part *a = &built->parts[i], *b = &decoded->parts[i];
        if (a->type != b->type || compare_parts(a, b) != 0 ||
            (a->type == BITT_TUPLE_FLOAT && memcmp(&a->f, &b->f, sizeof a->f)))
            fail("a part comes back from the codec changed");
    }
}

static void release(tuple *t)
{
    for (size_t i = 0; i < MAX_PARTS; i++)
        bitt_buf_dispose(&t->bufs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t split = data[0] < size - 1 ? data[0] : size - 1;
    const uint8_t *a = data + 1, *b = data + 1 + split;
    size_t al = split, bl = size - 1 - split;
    int a_ok = decode(a, al, &g_a);
    if (a_ok)
        check_round_trip(a, al, &g_a);
    int b_ok = decode(b, bl, &g_b);
    if (b_ok)
        check_round_trip(b, bl, &g_b);
    if (a_ok && b_ok && compare_bytes(a, al, b, bl) != compare_tuples(&g_a, &g_b))
        fail("memcmp order of two encodings differs from their tuple order");
    release(&g_a);
    release(&g_b);

    reader r = {data, size};
    bitt_buf ka = BITT_BUF_INIT, kb = BITT_BUF_INIT;
    build(&r, &g_a, &ka);
    build(&r, &g_b, &kb);
    check_built(&ka, &g_a, &g_c);
    check_built(&kb, &g_b, &g_d);
    if (compare_bytes(ka.ptr, ka.len, kb.ptr, kb.len) != compare_tuples(&g_a, &g_b))
        fail("memcmp order of two built encodings differs from their tuple order");
    bitt_buf_dispose(&ka);
    bitt_buf_dispose(&kb);
    release(&g_a);
    release(&g_b);
    release(&g_c);
    release(&g_d);
    return 0;
}
