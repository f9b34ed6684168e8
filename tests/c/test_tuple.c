/* Tests of the tuple-key codec (core/tuple.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- a reference model of tuples ------------------------------------- */

typedef struct part {
    int type; /* BITT_TUPLE_* */
    uint8_t data[16];
    size_t len;
    int64_t i; /* ints and bools */
    double f;
} part;

#define MAX_PARTS 5

typedef struct tuple {
    part parts[MAX_PARTS];
    size_t count;
    bitt_buf enc;
} tuple;

static int type_rank(const part *p)
{
    switch (p->type) {
    case BITT_TUPLE_BYTES: return 0;
    case BITT_TUPLE_STRING: return 1;
    case BITT_TUPLE_INT: return 2;
    case BITT_TUPLE_FLOAT: return 3;
    default: return p->i ? 5 : 4; /* false < true */
    }
}

static int cmp_part(const part *a, const part *b)
{
    int ra = type_rank(a), rb = type_rank(b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    switch (a->type) {
    case BITT_TUPLE_BYTES:
    case BITT_TUPLE_STRING: {
        size_t n = a->len < b->len ? a->len : b->len;
        int c = n ? memcmp(a->data, b->data, n) : 0;
        if (c)
            return c < 0 ? -1 : 1;
        return a->len == b->len ? 0 : (a->len < b->len ? -1 : 1);
    }
    case BITT_TUPLE_INT: return a->i == b->i ? 0 : (a->i < b->i ? -1 : 1);
    case BITT_TUPLE_FLOAT: return a->f == b->f ? 0 : (a->f < b->f ? -1 : 1);
    default: return 0;
    }
}

static int cmp_tuple(const tuple *a, const tuple *b)
{
    size_t n = a->count < b->count ? a->count : b->count;
    for (size_t k = 0; k < n; k++) {
        int c = cmp_part(&a->parts[k], &b->parts[k]);
        if (c)
            return c;
    }
    return a->count == b->count ? 0 : (a->count < b->count ? -1 : 1);
}

static int cmp_enc(const bitt_buf *a, const bitt_buf *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return a->len == b->len ? 0 : (a->len < b->len ? -1 : 1);
}

static int qsort_cmp(const void *x, const void *y)
{
    return cmp_tuple(*(const tuple *const *)x, *(const tuple *const *)y);
}

static void push_part(bitt_buf *buf, const part *p)
{
    switch (p->type) {
    case BITT_TUPLE_BYTES:
        assert_int_equal(bitt_tuple_push_bytes(buf, p->data, p->len), BITT_OK);
        break;
    case BITT_TUPLE_STRING:
        assert_int_equal(bitt_tuple_push_string(buf, (const char *)p->data, p->len), BITT_OK);
        break;
    case BITT_TUPLE_INT: assert_int_equal(bitt_tuple_push_int(buf, p->i), BITT_OK); break;
    case BITT_TUPLE_FLOAT: assert_int_equal(bitt_tuple_push_float(buf, p->f), BITT_OK); break;
    default: assert_int_equal(bitt_tuple_push_bool(buf, (int)p->i), BITT_OK); break;
    }
}

static void encode(tuple *t)
{
    for (size_t k = 0; k < t->count; k++)
        push_part(&t->enc, &t->parts[k]);
}

/* Decodes t->enc from an exact-size heap copy (so ASan sees any over-read)
 * and checks it gives t's parts back. */
static void check_round_trip(const tuple *t)
{
    uint8_t *copy = malloc(t->enc.len ? t->enc.len : 1);
    assert_non_null(copy);
    if (t->enc.len)
        memcpy(copy, t->enc.ptr, t->enc.len);
    bitt_buf data = BITT_BUF_INIT;
    size_t off = 0;
    for (size_t k = 0; k < t->count; k++) {
        const part *p = &t->parts[k];
        int type = 0;
        int64_t iv = -99;
        double fv = -99.0;
        assert_int_equal(bitt_tuple_next(copy, t->enc.len, &off, &type, &data, &iv, &fv), BITT_OK);
        assert_int_equal(type, p->type);
        switch (type) {
        case BITT_TUPLE_BYTES:
        case BITT_TUPLE_STRING:
            assert_int_equal(data.len, p->len);
            if (p->len)
                assert_memory_equal(data.ptr, p->data, p->len);
            break;
        case BITT_TUPLE_INT: assert_true(iv == p->i); break;
        case BITT_TUPLE_FLOAT: {
            double want = p->f == 0.0 ? 0.0 : p->f;
            assert_true(memcmp(&fv, &want, sizeof fv) == 0);
            break;
        }
        default: assert_true(iv == (p->i != 0)); break;
        }
    }
    int type = 0;
    assert_int_equal(bitt_tuple_next(copy, t->enc.len, &off, &type, &data, NULL, NULL),
                     BITT_NOTFOUND);
    assert_int_equal(off, t->enc.len);
    bitt_buf_dispose(&data);
    free(copy);
}

/* ---- random tuples ---------------------------------------------------- */

static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(0x2545F4914F6CDD1D);
}

static size_t rnd_below(size_t n)
{
    return (size_t)(rnd() % n);
}

static const char *const string_atoms[] = {
    "",
    "a",
    "b",
    "\0",
    "\xc3\xa9" /* U+00E9 */,
    "\xef\xbf\xbf" /* U+FFFF */,
    "\xf4\x8f\xbf\xbf" /* U+10FFFF */,
    "\x7f",
    "\xe2\x82\xac" /* U+20AC */,
};
static const size_t string_atom_lens[] = {0, 1, 1, 1, 2, 3, 4, 1, 3};

static void random_part(part *p)
{
    memset(p, 0, sizeof *p);
    switch (rnd_below(6)) {
    case 0: { /* bytes: a small alphabet so prefixes and NULs collide */
        static const uint8_t alphabet[] = {0x00, 0x01, 0xFF, 'a', 0xFE, 0x02};
        p->type = BITT_TUPLE_BYTES;
        p->len = rnd_below(4);
        for (size_t k = 0; k < p->len; k++)
            p->data[k] = alphabet[rnd_below(sizeof alphabet)];
        break;
    }
    case 1: { /* strings: valid UTF-8 atoms, including U+0000 */
        p->type = BITT_TUPLE_STRING;
        size_t atoms = rnd_below(3);
        for (size_t k = 0; k < atoms; k++) {
            size_t a = rnd_below(sizeof string_atom_lens / sizeof string_atom_lens[0]);
            memcpy(p->data + p->len, string_atoms[a], string_atom_lens[a]);
            p->len += string_atom_lens[a];
        }
        break;
    }
    case 2: {
        static const int64_t edges[] = {INT64_MIN, INT64_MIN + 1, -256, -255,          -1,       0,
                                        1,         255,           256,  INT64_MAX - 1, INT64_MAX};
        p->type = BITT_TUPLE_INT;
        if (rnd_below(2))
            p->i = edges[rnd_below(sizeof edges / sizeof edges[0])];
        else
            p->i = (int64_t)(rnd() >> rnd_below(64)) * (rnd_below(2) ? -1 : 1);
        break;
    }
    case 3: {
        static const double edges[] = {-INFINITY, -DBL_MAX, -1.5,     -1.0,    -DBL_MIN, -4.9e-324,
                                       -0.0,      0.0,      4.9e-324, DBL_MIN, 1e-310,   1.0,
                                       1.5,       DBL_MAX,  INFINITY, -1e-310};
        p->type = BITT_TUPLE_FLOAT;
        if (rnd_below(2)) {
            p->f = edges[rnd_below(sizeof edges / sizeof edges[0])];
        } else {
            uint64_t bits;
            do {
                bits = rnd();
                memcpy(&p->f, &bits, sizeof p->f);
            } while (p->f != p->f);
        }
        break;
    }
    default:
        p->type = BITT_TUPLE_BOOL;
        p->i = (int64_t)rnd_below(2);
        break;
    }
}

static void random_tuple(tuple *t)
{
    memset(t, 0, sizeof *t);
    t->count = rnd_below(MAX_PARTS + 1);
    for (size_t k = 0; k < t->count; k++)
        random_part(&t->parts[k]);
}

#define N_RANDOM 4000

/* b extends a by one or more parts exactly when enc(b) lies in
 * [enc(a) 0x01, enc(a) 0xFF): the children range of a tuple prefix. */
static void check_extension(const tuple *a, const tuple *b)
{
    int extends = b->count > a->count;
    for (size_t p = 0; extends && p < a->count; p++)
        extends = cmp_part(&a->parts[p], &b->parts[p]) == 0;
    int in_range = b->enc.len > a->enc.len &&
                   (a->enc.len == 0 || memcmp(a->enc.ptr, b->enc.ptr, a->enc.len) == 0) &&
                   b->enc.ptr[a->enc.len] >= 0x01 && b->enc.ptr[a->enc.len] < 0xFF;
    if (extends != in_range)
        fail_msg("extension %d but children range %d", extends, in_range);
}

static void test_random_order_and_round_trip(void **state)
{
    (void)state;
    const char *seed = getenv("BITT_TEST_SEED");
    if (seed && *seed)
        rng_state = strtoull(seed, NULL, 0) | 1;
    tuple *all = calloc(N_RANDOM, sizeof *all);
    tuple **order = calloc(N_RANDOM, sizeof *order);
    size_t *base_of = calloc(N_RANDOM, sizeof *base_of);
    assert_non_null(base_of);
    assert_non_null(all);
    assert_non_null(order);
    for (size_t k = 0; k < N_RANDOM; k++) {
        random_tuple(&all[k]);
        /* Some tuples extend an earlier one, to exercise prefixes. */
        if (k && all[k].count < MAX_PARTS && rnd_below(4) == 0) {
            base_of[k] = rnd_below(k);
            tuple *base = &all[base_of[k]];
            all[k].count = base->count;
            memcpy(all[k].parts, base->parts, sizeof base->parts);
            if (all[k].count < MAX_PARTS && rnd_below(2))
                random_part(&all[k].parts[all[k].count++]);
        }
        encode(&all[k]);
        check_round_trip(&all[k]);
        order[k] = &all[k];
    }
    qsort(order, N_RANDOM, sizeof *order, qsort_cmp);
    for (size_t k = 0; k + 1 < N_RANDOM; k++) {
        int want = cmp_tuple(order[k], order[k + 1]);
        int got = cmp_enc(&order[k]->enc, &order[k + 1]->enc);
        if (want != got)
            fail_msg("tuples %zu and %zu: reference order %d, encoding order %d", k, k + 1, want,
                     got);
    }
    /* Random pairs, directly, then pairs where one often extends the other
     * (neighbours in order, and each derived tuple with its base). */
    for (size_t k = 0; k < 20000; k++) {
        const tuple *a = &all[rnd_below(N_RANDOM)], *b = &all[rnd_below(N_RANDOM)];
        assert_int_equal(cmp_tuple(a, b), cmp_enc(&a->enc, &b->enc));
        check_extension(a, b);
    }
    for (size_t k = 0; k + 1 < N_RANDOM; k++) {
        check_extension(order[k], order[k + 1]);
        check_extension(order[k + 1], order[k]);
        check_extension(&all[base_of[k]], &all[k]);
    }
    for (size_t k = 0; k < N_RANDOM; k++)
        bitt_buf_dispose(&all[k].enc);
    free(base_of);
    free(order);
    free(all);
}

/* ---- fixed cases ------------------------------------------------------- */

static void test_edge_values_round_trip(void **state)
{
    (void)state;
    static const int64_t ints[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX};
    static const double floats[] = {-INFINITY,
                                    -DBL_MAX,
                                    -1.0,
                                    -DBL_MIN,
                                    -4.9e-324,
                                    -0.0,
                                    0.0,
                                    4.9e-324,
                                    2.2250738585072009e-308 /* largest
                                                            denormal */
                                    ,
                                    DBL_MIN,
                                    1.0,
                                    DBL_MAX,
                                    INFINITY};
    tuple t;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        memset(&t, 0, sizeof t);
        t.count = 1;
        t.parts[0].type = BITT_TUPLE_INT;
        t.parts[0].i = ints[k];
        encode(&t);
        assert_int_equal(t.enc.len, 9);
        assert_int_equal(t.enc.ptr[0], 0x14);
        check_round_trip(&t);
        bitt_buf_dispose(&t.enc);
    }
    for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++) {
        memset(&t, 0, sizeof t);
        t.count = 1;
        t.parts[0].type = BITT_TUPLE_FLOAT;
        t.parts[0].f = floats[k];
        encode(&t);
        assert_int_equal(t.enc.len, 9);
        assert_int_equal(t.enc.ptr[0], 0x21);
        check_round_trip(&t);
        bitt_buf_dispose(&t.enc);
    }
    /* Bytes and strings with NULs and 0xFF, and the empty ones. */
    static const struct {
        int type;
        const char *data;
        size_t len;
    } blobs[] = {
        {BITT_TUPLE_BYTES, "", 0},
        {BITT_TUPLE_BYTES, "\0", 1},
        {BITT_TUPLE_BYTES, "\0\0\xff\0", 4},
        {BITT_TUPLE_BYTES, "\xff\xff", 2},
        {BITT_TUPLE_BYTES, "a\0b\xff", 4},
        {BITT_TUPLE_STRING, "", 0},
        {BITT_TUPLE_STRING, "\0", 1},
        {BITT_TUPLE_STRING, "x\0y\0", 4},
        {BITT_TUPLE_STRING, "\xf0\x9f\x98\x80\0\xc3\xa9", 7},
    };
    for (size_t k = 0; k < sizeof blobs / sizeof blobs[0]; k++) {
        memset(&t, 0, sizeof t);
        t.count = 2;
        t.parts[0].type = blobs[k].type;
        memcpy(t.parts[0].data, blobs[k].data, blobs[k].len);
        t.parts[0].len = blobs[k].len;
        t.parts[1].type = BITT_TUPLE_BOOL;
        t.parts[1].i = 1;
        encode(&t);
        check_round_trip(&t);
        bitt_buf_dispose(&t.enc);
    }
}

static void test_exact_bytes(void **state)
{
    (void)state;
    bitt_buf b = BITT_BUF_INIT;
    assert_int_equal(bitt_tuple_push_bytes(&b, "a\0\xff", 3), BITT_OK);
    assert_int_equal(bitt_tuple_push_string(&b, "", 0), BITT_OK);
    assert_int_equal(bitt_tuple_push_int(&b, -1), BITT_OK);
    assert_int_equal(bitt_tuple_push_float(&b, 1.0), BITT_OK);
    assert_int_equal(bitt_tuple_push_bool(&b, 0), BITT_OK);
    assert_int_equal(bitt_tuple_push_bool(&b, 42), BITT_OK);
    static const uint8_t want[] = {
        0x01, 'a',  0x00, 0xFF, 0xFF, 0x00,                   /* bytes */
        0x02, 0x00,                                           /* "" */
        0x14, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* -1 */
        0x21, 0xBF, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 1.0 */
        0x26, 0x27,
    };
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.ptr, want, sizeof want);
    assert_int_equal(b.ptr[b.len], 0); /* still NUL-terminated */

    /* -0.0 is stored as 0.0. */
    bitt_buf z1 = BITT_BUF_INIT, z2 = BITT_BUF_INIT;
    assert_int_equal(bitt_tuple_push_float(&z1, -0.0), BITT_OK);
    assert_int_equal(bitt_tuple_push_float(&z2, 0.0), BITT_OK);
    assert_int_equal(z1.len, z2.len);
    assert_memory_equal(z1.ptr, z2.ptr, z1.len);
    bitt_buf_dispose(&z1);
    bitt_buf_dispose(&z2);

    /* A NULL pointer with length 0 is the empty part. */
    bitt_buf e = BITT_BUF_INIT;
    assert_int_equal(bitt_tuple_push_bytes(&e, NULL, 0), BITT_OK);
    assert_int_equal(bitt_tuple_push_string(&e, NULL, 0), BITT_OK);
    assert_int_equal(e.len, 4);
    assert_memory_equal(e.ptr, "\x01\x00\x02\x00", 4);
    bitt_buf_dispose(&e);
    bitt_buf_dispose(&b);
}

static void test_type_order(void **state)
{
    (void)state;
    /* Single-part keys in increasing order: each type's least and greatest
     * value, so the greatest of a type must sort before the least of the
     * next. */
    enum { N = 12 };
    bitt_buf k[N];
    memset(k, 0, sizeof k);
    assert_int_equal(bitt_tuple_push_bytes(&k[0], "", 0), BITT_OK);
    assert_int_equal(bitt_tuple_push_bytes(&k[1], "\xff\xff\xff\xff", 4), BITT_OK);
    assert_int_equal(bitt_tuple_push_string(&k[2], "", 0), BITT_OK);
    assert_int_equal(bitt_tuple_push_string(&k[3], "\xf4\x8f\xbf\xbf", 4), BITT_OK);
    assert_int_equal(bitt_tuple_push_int(&k[4], INT64_MIN), BITT_OK);
    assert_int_equal(bitt_tuple_push_int(&k[5], INT64_MAX), BITT_OK);
    assert_int_equal(bitt_tuple_push_float(&k[6], -INFINITY), BITT_OK);
    assert_int_equal(bitt_tuple_push_float(&k[7], -4.9e-324), BITT_OK);
    assert_int_equal(bitt_tuple_push_float(&k[8], 0.0), BITT_OK);
    assert_int_equal(bitt_tuple_push_float(&k[9], INFINITY), BITT_OK);
    assert_int_equal(bitt_tuple_push_bool(&k[10], 0), BITT_OK);
    assert_int_equal(bitt_tuple_push_bool(&k[11], 1), BITT_OK);
    for (int i = 0; i + 1 < N; i++)
        if (cmp_enc(&k[i], &k[i + 1]) >= 0)
            fail_msg("key %d does not sort before key %d", i, i + 1);
    /* A tuple sorts before its extensions and a string before its own
     * extensions: ["a"] < ["a", true] and ["a"] < ["a\0"]. */
    bitt_buf a = BITT_BUF_INIT, a0 = BITT_BUF_INIT, ax = BITT_BUF_INIT;
    assert_int_equal(bitt_tuple_push_string(&a, "a", 1), BITT_OK);
    assert_int_equal(bitt_tuple_push_string(&a0, "a\0", 2), BITT_OK);
    assert_int_equal(bitt_tuple_push_string(&ax, "a", 1), BITT_OK);
    assert_int_equal(bitt_tuple_push_bool(&ax, 1), BITT_OK);
    assert_true(cmp_enc(&a, &a0) < 0);
    assert_true(cmp_enc(&a, &ax) < 0);
    /* ["a", true] < ["a\0"]: parts compare first, then length. */
    assert_true(cmp_enc(&ax, &a0) < 0);
    bitt_buf_dispose(&a);
    bitt_buf_dispose(&a0);
    bitt_buf_dispose(&ax);
    for (int i = 0; i < N; i++)
        bitt_buf_dispose(&k[i]);
}

static void test_push_refusals_leave_buffer(void **state)
{
    (void)state;
    bitt_buf b = BITT_BUF_INIT;
    assert_int_equal(bitt_tuple_push_string(&b, "users", 5), BITT_OK);
    size_t len = b.len;
    uint8_t before[16];
    memcpy(before, b.ptr, len);

    static const struct {
        const char *s;
        size_t len;
    } bad[] = {
        {"\xc0\x80", 2},                                                   /* overlong NUL */
        {"\xe0\x80\xaf", 3},                                               /* overlong '/' */
        {"\xed\xa0\x80", 3},                                               /* U+D800 */
        {"\xed\xbf\xbf", 3},                                               /* U+DFFF */
        {"\xf4\x90\x80\x80", 4},                                           /* U+110000 */
        {"\xf5\x80\x80\x80", 4}, {"\xff", 1},  {"\x80", 1}, {"ab\xc3", 3}, /* cut short */
        {"\xe2\x82", 2},         {"\xc3(", 2},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_int_equal(bitt_tuple_push_string(&b, bad[k].s, bad[k].len), BITT_EINVAL);
        assert_int_equal(bitt_error_last_code(), BITT_EINVAL);
        assert_non_null(strstr(bitt_error_last(), "UTF-8"));
        assert_int_equal(b.len, len);
        assert_memory_equal(b.ptr, before, len);
    }
    assert_int_equal(bitt_tuple_push_float(&b, NAN), BITT_EINVAL);
    assert_non_null(strstr(bitt_error_last(), "NaN"));
    assert_int_equal(bitt_tuple_push_float(&b, -NAN), BITT_EINVAL);
    assert_int_equal(bitt_tuple_push_bytes(&b, NULL, 3), BITT_EINVAL);
    assert_int_equal(bitt_tuple_push_string(&b, NULL, 1), BITT_EINVAL);
    assert_int_equal(b.len, len);
    assert_memory_equal(b.ptr, before, len);

    /* A NULL key buffer. */
    assert_int_equal(bitt_tuple_push_bytes(NULL, "a", 1), BITT_EINVAL);
    assert_int_equal(bitt_tuple_push_string(NULL, "a", 1), BITT_EINVAL);
    assert_int_equal(bitt_tuple_push_int(NULL, 1), BITT_EINVAL);
    assert_int_equal(bitt_tuple_push_float(NULL, 1.0), BITT_EINVAL);
    assert_int_equal(bitt_tuple_push_bool(NULL, 1), BITT_EINVAL);
    assert_true(strlen(bitt_error_last()) > 0);

    /* Success clears the last error. */
    assert_int_equal(bitt_tuple_push_int(&b, 7), BITT_OK);
    assert_int_equal(bitt_error_last_code(), BITT_OK);
    assert_string_equal(bitt_error_last(), "");
    bitt_buf_dispose(&b);
}

/* Decodes the whole of (p, n) from an exact-size heap copy; returns the
 * first non-OK status. */
static int decode_all(const void *p, size_t n)
{
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    if (n)
        memcpy(copy, p, n);
    bitt_buf data = BITT_BUF_INIT;
    size_t off = 0;
    int rc;
    int64_t iv;
    double fv;
    int type;
    do {
        size_t before = off;
        rc = bitt_tuple_next(copy, n, &off, &type, &data, &iv, &fv);
        if (rc == BITT_OK)
            assert_true(off > before && off <= n);
        else
            assert_int_equal(off, before);
    } while (rc == BITT_OK);
    bitt_buf_dispose(&data);
    free(copy);
    return rc;
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *p;
        size_t n;
        const char *msg; /* a word the message must contain */
    } bad[] = {
        {"\x00", 1, "type byte 0x00"},
        {"\x03", 1, "type byte 0x03"},
        {"\xff", 1, "type byte 0xff"},
        {"\x26\x28", 2, "type byte 0x28"},
        {"\x01", 1, "terminator"},
        {"\x01"
         "abc",
         4, "terminator"},
        {"\x01"
         "a\x00\xff",
         4, "terminator"}, /* only an escape, no end */
        {"\x02"
         "abc",
         4, "terminator"},
        {"\x02\xc3\x00", 3, "UTF-8"},         /* cut by the terminator */
        {"\x02\xc0\x80\x00", 4, "UTF-8"},     /* overlong */
        {"\x02\xed\xa0\x80\x00", 5, "UTF-8"}, /* surrogate */
        {"\x02\xff\x00", 3, "UTF-8"},
        {"\x02\xf4\x90\x80\x80\x00", 6, "UTF-8"},
        {"\x02\xe2\x82", 3, "UTF-8"}, /* cut by the key's end */
        {"\x14", 1, "integer"},
        {"\x14\x80\x00\x00\x00\x00\x00\x00", 8, "integer"},
        {"\x21", 1, "float"},
        {"\x21\xbf\xf0\x00\x00\x00\x00\x00", 8, "float"},
        {"\x21\xff\xf8\x00\x00\x00\x00\x00\x00", 9, "NaN"},
        {"\x21\x00\x07\xff\xff\xff\xff\xff\xff", 9, "NaN"},
        {"\x21\x7f\xff\xff\xff\xff\xff\xff\xff", 9, "-0.0"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int rc = decode_all(bad[k].p, bad[k].n);
        if (rc != BITT_EINVAL)
            fail_msg("case %zu: status %d", k, rc);
        if (!strstr(bitt_error_last(), bad[k].msg))
            fail_msg("case %zu: message \"%s\" lacks \"%s\"", k, bitt_error_last(), bad[k].msg);
        assert_int_equal(bitt_error_last_code(), BITT_EINVAL);
    }
    /* Raw 0xFF in bytes is data, not an escape problem. */
    assert_int_equal(decode_all("\x01\xff\x00", 3), BITT_NOTFOUND);

    /* Arguments. */
    size_t off = 0;
    int type;
    assert_int_equal(bitt_tuple_next(NULL, 0, &off, &type, NULL, NULL, NULL), BITT_NOTFOUND);
    assert_int_equal(bitt_tuple_next(NULL, 3, &off, &type, NULL, NULL, NULL), BITT_EINVAL);
    assert_int_equal(bitt_tuple_next("\x26", 1, NULL, &type, NULL, NULL, NULL), BITT_EINVAL);
    assert_int_equal(bitt_tuple_next("\x26", 1, &off, NULL, NULL, NULL, NULL), BITT_EINVAL);
    off = 2;
    assert_int_equal(bitt_tuple_next("\x26", 1, &off, &type, NULL, NULL, NULL), BITT_EINVAL);
    assert_int_equal(off, 2);

    /* Outputs may be NULL; data is reset first. */
    bitt_buf data = BITT_BUF_INIT;
    assert_int_equal(bitt__buf_put(&data, "junk", 4), BITT_OK);
    off = 0;
    assert_int_equal(bitt_tuple_next("\x27", 1, &off, &type, &data, NULL, NULL), BITT_OK);
    assert_int_equal(type, BITT_TUPLE_BOOL);
    assert_int_equal(data.len, 0);
    off = 0;
    assert_int_equal(bitt_tuple_next("\x01"
                                     "ab\x00",
                                     4, &off, &type, NULL, NULL, NULL),
                     BITT_OK);
    assert_int_equal(type, BITT_TUPLE_BYTES);
    assert_int_equal(off, 4);
    bitt_buf_dispose(&data);
}

/* Every truncation of a valid key either stops at a part boundary or is
 * refused; random bytes never crash the decoder or read past the end. */
static void test_truncation_and_noise(void **state)
{
    (void)state;
    for (int round = 0; round < 300; round++) {
        tuple t;
        random_tuple(&t);
        encode(&t);
        size_t boundaries[MAX_PARTS + 1], nb = 0, off = 0;
        boundaries[nb++] = 0;
        int type;
        while (bitt_tuple_next(t.enc.ptr, t.enc.len, &off, &type, NULL, NULL, NULL) == BITT_OK)
            boundaries[nb++] = off;
        for (size_t cut = 0; cut < t.enc.len; cut++) {
            int at_boundary = 0;
            for (size_t k = 0; k < nb; k++)
                at_boundary |= boundaries[k] == cut;
            int rc = decode_all(t.enc.ptr, cut);
            /* A bytes/string part cut right after an escaped NUL's 0x00
             * reads as a shorter, terminated part: still a valid key. */
            if (at_boundary)
                assert_int_equal(rc, BITT_NOTFOUND);
            else
                assert_true(rc == BITT_EINVAL || rc == BITT_NOTFOUND);
        }
        bitt_buf_dispose(&t.enc);
    }
    uint8_t noise[24];
    for (int round = 0; round < 20000; round++) {
        size_t n = rnd_below(sizeof noise + 1);
        for (size_t k = 0; k < n; k++) {
            /* Mostly type bytes and the special bytes, to get deep. */
            static const uint8_t pick[] = {0x00, 0x01, 0x02, 0x14, 0x21, 0x26,
                                           0x27, 0xFF, 0x80, 0xC3, 0xE2, 'a'};
            noise[k] = rnd_below(3) ? pick[rnd_below(sizeof pick)] : (uint8_t)rnd();
        }
        int rc = decode_all(noise, n);
        assert_true(rc == BITT_NOTFOUND || rc == BITT_EINVAL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_bytes),
        cmocka_unit_test(test_edge_values_round_trip),
        cmocka_unit_test(test_type_order),
        cmocka_unit_test(test_push_refusals_leave_buffer),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_random_order_and_round_trip),
        cmocka_unit_test(test_truncation_and_noise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
