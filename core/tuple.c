/*
 * core/tuple.c: the order-preserving tuple-key codec of bitt.h.
 *
 * A key is the concatenation of its parts' encodings; each part is a type
 * byte followed by a self-delimiting body:
 *
 *   0x01 bytes    the data with every 0x00 written as 0x00 0xFF, then 0x00
 *   0x02 string   the same, on the UTF-8 bytes (which must be valid UTF-8)
 *   0x14 integer  8 bytes big-endian of (uint64_t)v ^ 0x8000000000000000
 *   0x21 float    8 bytes big-endian of the IEEE-754 binary64 bits, all
 *                 bits flipped when the sign bit is set, only the sign bit
 *                 flipped otherwise (-0.0 is written as 0.0; NaN refused)
 *   0x26 false
 *   0x27 true
 *
 * Why memcmp() orders encodings as the tuples:
 *  - Type bytes increase in the order bytes < string < integer < float <
 *    false < true, so parts of different types compare by type.
 *  - Integers: flipping the sign bit maps INT64_MIN..INT64_MAX onto
 *    0..UINT64_MAX in order; big-endian makes memcmp compare them as
 *    numbers. Floats: the flips map -inf..+inf (with -0.0 gone) onto an
 *    increasing range of uint64, the same way.
 *  - Bytes and strings: an escaped 0x00 is 0x00 0xFF, while the terminator
 *    0x00 is followed by the end of the key or by the next part's type byte
 *    (0x01..0x27), both of which sort before 0xFF. So a part sorts before
 *    its own extensions ("a" < "a\0" < "a\0\0" < "ab"), and data bytes
 *    compare as themselves otherwise. For valid UTF-8, byte order is code
 *    point order.
 *  - Every body is self-delimiting, so two keys' parts line up until the
 *    first part that differs, and the end of a key sorts before any part:
 *    a tuple comes before its extensions.
 *
 * A consequence for prefix reads: the keys that extend a tuple key P by one
 * or more parts are exactly those in [P 0x01, P 0xFF), while a byte-prefix
 * read on P also returns P itself and, when P ends in a bytes or string
 * part, that part's extensions ("a" -> "a\0...", encoded P 0xFF ...).
 *
 * The decoder accepts exactly what the encoder writes: an unknown type byte,
 * a truncated or unterminated body, invalid UTF-8 in a string, and a float
 * body holding NaN or -0.0 are refused with BITT_EINVAL. (There is no
 * malformed escape: a 0x00 followed by 0xFF is always an escaped NUL and any
 * other 0x00 ends the part.) The decoder never reads past key_len.
 */
#include <string.h>

#include "internal.h"
#include "utf8.h"

#define TUPLE_TAG_BYTES 0x01
#define TUPLE_TAG_STRING 0x02
#define TUPLE_TAG_INT 0x14
#define TUPLE_TAG_FLOAT 0x21
#define TUPLE_TAG_FALSE 0x26
#define TUPLE_TAG_TRUE 0x27

#define SIGN_BIT UINT64_C(0x8000000000000000)

/* Writes n bytes at the end of key, whose room was reserved already. */
static void put_raw(bitt_buf *key, const void *p, size_t n)
{
    memcpy(key->ptr + key->len, p, n);
    key->len += n;
    key->ptr[key->len] = '\0';
}

static void put_u64(bitt_buf *key, uint8_t tag, uint64_t u)
{
    uint8_t b[9];
    b[0] = tag;
    for (int i = 0; i < 8; i++)
        b[1 + i] = (uint8_t)(u >> (56 - 8 * i));
    put_raw(key, b, sizeof b);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u = (u << 8) | p[i];
    return u;
}

/* Appends tag, the escaped data and the terminator: all or nothing. */
static int push_escaped(bitt_buf *key, uint8_t tag, const uint8_t *data, size_t len,
                        const char *what)
{
    if (len > (SIZE_MAX - 2) / 2)
        return bitt__fail(BITT_ETOOLARGE, "tuple %s part of %zu bytes is too large", what, len);
    size_t nuls = 0;
    for (size_t i = 0; i < len; i++)
        nuls += data[i] == 0;
    int rc = bitt__buf_reserve(key, 1 + len + nuls + 1);
    if (rc)
        return rc;
    uint8_t *out = key->ptr + key->len;
    *out++ = tag;
    for (size_t i = 0; i < len; i++) {
        *out++ = data[i];
        if (data[i] == 0)
            *out++ = 0xFF;
    }
    *out++ = 0x00;
    key->len = (size_t)(out - key->ptr);
    key->ptr[key->len] = '\0';
    return BITT_OK;
}

int bitt_tuple_push_bytes(bitt_buf *key, const void *data, size_t len)
{
    bitt__error_reset();
    if (!key)
        return bitt__fail(BITT_EINVAL, "tuple key buffer is NULL");
    if (!data && len)
        return bitt__fail(BITT_EINVAL, "tuple bytes part is NULL with length %zu", len);
    return push_escaped(key, TUPLE_TAG_BYTES, data, len, "bytes");
}

int bitt_tuple_push_string(bitt_buf *key, const char *utf8, size_t len)
{
    bitt__error_reset();
    if (!key)
        return bitt__fail(BITT_EINVAL, "tuple key buffer is NULL");
    if (!utf8 && len)
        return bitt__fail(BITT_EINVAL, "tuple string part is NULL with length %zu", len);
    const uint8_t *s = (const uint8_t *)utf8;
    size_t bad = bitt__utf8_invalid_at(s, len);
    if (bad) {
        if (bad > len)
            return bitt__fail(BITT_EINVAL,
                              "tuple string part is not valid UTF-8: it ends inside a "
                              "character (byte %zu)",
                              bad);
        return bitt__fail(BITT_EINVAL, "tuple string part is not valid UTF-8 at byte %zu", bad);
    }
    return push_escaped(key, TUPLE_TAG_STRING, s, len, "string");
}

int bitt_tuple_push_int(bitt_buf *key, int64_t value)
{
    bitt__error_reset();
    if (!key)
        return bitt__fail(BITT_EINVAL, "tuple key buffer is NULL");
    int rc = bitt__buf_reserve(key, 9);
    if (rc)
        return rc;
    put_u64(key, TUPLE_TAG_INT, (uint64_t)value ^ SIGN_BIT);
    return BITT_OK;
}

int bitt_tuple_push_float(bitt_buf *key, double value)
{
    bitt__error_reset();
    if (!key)
        return bitt__fail(BITT_EINVAL, "tuple key buffer is NULL");
    if (value != value)
        return bitt__fail(BITT_EINVAL, "NaN is not a valid tuple float part");
    if (value == 0.0)
        value = 0.0; /* -0.0 and 0.0 are one key */
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    bits = (bits & SIGN_BIT) ? ~bits : bits ^ SIGN_BIT;
    int rc = bitt__buf_reserve(key, 9);
    if (rc)
        return rc;
    put_u64(key, TUPLE_TAG_FLOAT, bits);
    return BITT_OK;
}

int bitt_tuple_push_bool(bitt_buf *key, int value)
{
    bitt__error_reset();
    if (!key)
        return bitt__fail(BITT_EINVAL, "tuple key buffer is NULL");
    int rc = bitt__buf_reserve(key, 1);
    if (rc)
        return rc;
    uint8_t tag = value ? TUPLE_TAG_TRUE : TUPLE_TAG_FALSE;
    put_raw(key, &tag, 1);
    return BITT_OK;
}

/*
 * Decodes the escaped body of a bytes or string part that starts at k[start]
 * (just after the type byte at `at`). On success *end is the offset after the
 * terminator and, when data is not NULL, data holds the unescaped bytes.
 */
static int next_escaped(const uint8_t *k, size_t key_len, size_t at, int is_string, bitt_buf *data,
                        size_t *end)
{
    const char *what = is_string ? "string" : "bytes";
    size_t i = at + 1, out_len = 0;
    for (;;) {
        if (i >= key_len)
            return bitt__fail(BITT_EINVAL,
                              "tuple key is malformed: the %s part at offset %zu has no "
                              "terminator",
                              what, at);
        if (k[i] == 0x00) {
            if (i + 1 < key_len && k[i + 1] == 0xFF) {
                out_len++;
                i += 2;
                continue;
            }
            break;
        }
        if (is_string && k[i] >= 0x80) {
            size_t bad = 0;
            /* A multi-byte sequence never contains 0x00: bound it by the
             * terminator we have not found yet, i.e. by key_len. */
            size_t n = bitt__utf8_seq(k + i, key_len - i, &bad);
            if (!n)
                return bitt__fail(BITT_EINVAL,
                                  "tuple key is malformed: the string part at offset %zu is not "
                                  "valid UTF-8 at offset %zu",
                                  at, i + bad);
            out_len += n;
            i += n;
            continue;
        }
        out_len++;
        i++;
    }
    size_t term = i;
    if (data) {
        int rc = bitt__buf_reserve(data, out_len);
        if (rc)
            return rc;
        uint8_t *out = data->ptr + data->len;
        for (size_t j = at + 1; j < term; j++) {
            *out++ = k[j];
            if (k[j] == 0x00)
                j++; /* skip the 0xFF of the escape */
        }
        data->len += out_len;
        data->ptr[data->len] = '\0';
    }
    *end = term + 1;
    return BITT_OK;
}

int bitt_tuple_next(const void *key, size_t key_len, size_t *offset, int *type, bitt_buf *data,
                    int64_t *int_value, double *float_value)
{
    bitt__error_reset();
    if (data) {
        data->len = 0;
        if (data->ptr)
            data->ptr[0] = '\0';
    }
    if (!key && key_len)
        return bitt__fail(BITT_EINVAL, "tuple key is NULL with length %zu", key_len);
    if (!offset)
        return bitt__fail(BITT_EINVAL, "tuple offset pointer is NULL");
    if (!type)
        return bitt__fail(BITT_EINVAL, "tuple type pointer is NULL");
    size_t at = *offset;
    if (at > key_len)
        return bitt__fail(BITT_EINVAL, "tuple offset %zu is past the end of the key (%zu bytes)",
                          at, key_len);
    if (at == key_len)
        return BITT_NOTFOUND;

    const uint8_t *k = key;
    size_t end = at;
    int rc;
    switch (k[at]) {
    case TUPLE_TAG_BYTES:
    case TUPLE_TAG_STRING: {
        int is_string = k[at] == TUPLE_TAG_STRING;
        rc = next_escaped(k, key_len, at, is_string, data, &end);
        if (rc)
            return rc;
        *type = is_string ? BITT_TUPLE_STRING : BITT_TUPLE_BYTES;
        break;
    }
    case TUPLE_TAG_INT: {
        if (key_len - at < 9)
            return bitt__fail(BITT_EINVAL,
                              "tuple key is malformed: the integer part at offset %zu is cut "
                              "short",
                              at);
        uint64_t u = get_u64(k + at + 1) ^ SIGN_BIT;
        /* Two's complement back to int64 without implementation-defined
         * conversions. */
        int64_t v = u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
        if (int_value)
            *int_value = v;
        *type = BITT_TUPLE_INT;
        end = at + 9;
        break;
    }
    case TUPLE_TAG_FLOAT: {
        if (key_len - at < 9)
            return bitt__fail(BITT_EINVAL,
                              "tuple key is malformed: the float part at offset %zu is cut short",
                              at);
        uint64_t u = get_u64(k + at + 1);
        uint64_t bits = (u & SIGN_BIT) ? u ^ SIGN_BIT : ~u;
        double d;
        memcpy(&d, &bits, sizeof d);
        if (d != d)
            return bitt__fail(BITT_EINVAL,
                              "tuple key is malformed: the float part at offset %zu is NaN", at);
        if (bits == SIGN_BIT)
            return bitt__fail(BITT_EINVAL,
                              "tuple key is malformed: the float part at offset %zu is -0.0 "
                              "(written as 0.0)",
                              at);
        if (float_value)
            *float_value = d;
        *type = BITT_TUPLE_FLOAT;
        end = at + 9;
        break;
    }
    case TUPLE_TAG_FALSE:
    case TUPLE_TAG_TRUE:
        if (int_value)
            *int_value = k[at] == TUPLE_TAG_TRUE;
        *type = BITT_TUPLE_BOOL;
        end = at + 1;
        break;
    default:
        return bitt__fail(BITT_EINVAL,
                          "tuple key is malformed: unknown type byte 0x%02x at offset %zu",
                          (unsigned)k[at], at);
    }
    *offset = end;
    return BITT_OK;
}
