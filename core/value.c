/*
 * core/value.c: value kinds and the counter arithmetic every backend shares.
 *
 * A BITT_KIND_COUNTER value is the canonical decimal of an int64: an
 * optional '-', then "0" or a digit 1-9 followed by digits, no "-0", no
 * '+', no spaces, within INT64_MIN..INT64_MAX. Canonical text means one
 * number has one spelling, so backends can store and compare it as bytes.
 */
#include <inttypes.h>
#include <string.h>

#include "internal.h"

static const char *kind_name(int kind)
{
    switch (kind) {
    case BITT_KIND_BYTES: return "bytes";
    case BITT_KIND_JSON: return "json";
    case BITT_KIND_COUNTER: return "counter";
    default: return NULL;
    }
}

int bitt__value_check(int kind, const uint8_t *value, size_t len)
{
    if (!value && len)
        return bitt__fail(BITT_EINVAL, "value is NULL with length %zu", len);
    switch (kind) {
    case BITT_KIND_BYTES: return BITT_OK;
    case BITT_KIND_JSON: {
        size_t at = bitt__json_invalid_at(value, len);
        if (!at)
            return BITT_OK;
        if (len == 0)
            return bitt__fail(BITT_EINVAL, "value is not valid JSON: it is empty");
        if (at > len)
            return bitt__fail(BITT_EINVAL, "value is not valid JSON: it ends early (at byte %zu)",
                              at);
        return bitt__fail(BITT_EINVAL, "value is not valid JSON at byte %zu", at);
    }
    case BITT_KIND_COUNTER: {
        int64_t v;
        return bitt__counter_parse(value, len, &v);
    }
    default: return bitt__fail(BITT_EINVAL, "unknown value kind %d", kind);
    }
}

int bitt__counter_parse(const uint8_t *text, size_t len, int64_t *out)
{
    static const char what[] = "counter is not a canonical int64 decimal";
    if (!text && len)
        return bitt__fail(BITT_EINVAL, "%s: NULL with length %zu", what, len);
    if (len == 0)
        return bitt__fail(BITT_EINVAL, "%s: it is empty", what);
    size_t i = 0;
    int neg = text[0] == '-';
    if (neg)
        i = 1;
    if (i == len)
        return bitt__fail(BITT_EINVAL, "%s: a sign with no digits", what);
    if (text[i] == '0' && (len - i > 1 || neg))
        return bitt__fail(BITT_EINVAL, "%s: %s", what, neg && len - i == 1 ? "-0" : "leading zero");
    /* The magnitude may reach 2^63 for INT64_MIN. */
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (; i < len; i++) {
        uint8_t c = text[i];
        if (c < '0' || c > '9')
            return bitt__fail(BITT_EINVAL, "%s: byte %zu is not a digit", what, i + 1);
        uint64_t d = (uint64_t)(c - '0');
        if (v > (limit - d) / 10)
            return bitt__fail(BITT_EINVAL, "%s: out of the int64 range", what);
        v = v * 10 + d;
    }
    if (out) {
        if (!neg)
            *out = (int64_t)v;
        else if (v == (uint64_t)INT64_MAX + 1)
            *out = INT64_MIN;
        else
            *out = -(int64_t)v;
    }
    return BITT_OK;
}

size_t bitt__counter_format(int64_t v, char *buf)
{
    char digits[20];
    size_t n = 0, len = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0)
        buf[len++] = '-';
    while (n)
        buf[len++] = digits[--n];
    buf[len] = '\0';
    return len;
}

int bitt__counter_add(int64_t a, int64_t b, int64_t *out)
{
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return bitt__fail(BITT_EOVERFLOW,
                          "counter overflow: %" PRId64 " + %" PRId64 " is outside the int64 range",
                          a, b);
    *out = a + b;
    return BITT_OK;
}

int bitt__sum_apply(int found, int kind, const uint8_t *value, size_t len, int64_t delta,
                    char *text, size_t *text_len, int64_t *result)
{
    int64_t v = delta;
    if (found) {
        if (kind != BITT_KIND_COUNTER) {
            const char *name = kind_name(kind);
            if (name)
                return bitt__fail(BITT_ENOTCOUNTER, "value of kind %s is not a counter", name);
            return bitt__fail(BITT_ENOTCOUNTER, "value of kind %d is not a counter", kind);
        }
        int64_t old;
        if (bitt__counter_parse(value, len, &old) != BITT_OK)
            return bitt__fail(BITT_ENOTCOUNTER,
                              "stored counter value is not a canonical int64 decimal");
        int rc = bitt__counter_add(old, delta, &v);
        if (rc)
            return rc;
    }
    size_t n = bitt__counter_format(v, text);
    if (text_len)
        *text_len = n;
    if (result)
        *result = v;
    return BITT_OK;
}
