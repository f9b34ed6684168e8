/*
 * tests/c/support/contract_args.c: the value forms of the contract files
 * (README.md): status and kind names, integers kept exact, byte strings
 * (hex, repeat, concat, tuple) and tuple parts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract_impl.h"
#include "internal.h"

/* ---- names ------------------------------------------------------------------ */

static const struct {
    const char *name;
    int code;
} STATUSES[] = {
    {"ok", BITT_OK},
    {"not_found", BITT_NOTFOUND},
    {"exists", BITT_EXISTS},
    {"denied", BITT_DENIED},
    {"invalid", BITT_EINVAL},
    {"nomem", BITT_ENOMEM},
    {"too_large", BITT_ETOOLARGE},
    {"not_counter", BITT_ENOTCOUNTER},
    {"overflow", BITT_EOVERFLOW},
    {"conflict", BITT_ECONFLICT},
    {"backend", BITT_EBACKEND},
    {"busy", BITT_EBUSY},
    {"schema", BITT_ESCHEMA},
    {"url", BITT_EURL},
    {"cursor", BITT_ECURSOR},
    {"usage", BITT_EUSAGE},
    {"unsupported", BITT_EUNSUPPORTED},
    {"token", BITT_ETOKEN},
    {"lease_lost", BITT_ELEASELOST},
    {"canceled", BITT_ECANCELED},
};
#define NSTATUS (sizeof STATUSES / sizeof STATUSES[0])

int ct_status_code(const char *name)
{
    for (size_t i = 0; i < NSTATUS; i++)
        if (strcmp(STATUSES[i].name, name) == 0)
            return STATUSES[i].code;
    return -100;
}

const char *ct_status_name(int code)
{
    for (size_t i = 0; i < NSTATUS; i++)
        if (STATUSES[i].code == code)
            return STATUSES[i].name;
    return "?";
}

const char *ct_kind_name(int kind)
{
    switch (kind) {
    case BITT_KIND_BYTES: return "bytes";
    case BITT_KIND_JSON: return "json";
    case BITT_KIND_COUNTER: return "counter";
    default: return "?";
    }
}

/* ---- members ------------------------------------------------------------------- */

int ct_members(ct_run *run, const js_value *obj, const char *what, const char *const *names)
{
    if (!obj || obj->type != JS_OBJECT)
        return ct_broken(run, "%s must be an object", what);
    for (size_t i = 0; i < obj->count; i++) {
        const char *k = obj->keys[i];
        int known = strcmp(k, "note") == 0;
        for (size_t j = 0; names[j] && !known; j++)
            known = strcmp(k, names[j]) == 0;
        if (!known)
            return ct_broken(run, "%s has an unknown member \"%s\" (line %d)", what, k,
                             obj->items[i]->line);
    }
    return 0;
}

/* ---- numbers ------------------------------------------------------------------- */

/* Decimal digits with an optional '-': the magnitude and the sign. */
static int parse_decimal(const char *s, size_t n, int *neg, uint64_t *mag)
{
    size_t i = 0;
    *neg = 0;
    *mag = 0;
    if (i < n && s[i] == '-') {
        *neg = 1;
        i++;
    }
    if (i == n)
        return -1;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (*mag > (UINT64_MAX - d) / 10)
            return -1;
        *mag = *mag * 10 + d;
    }
    return 0;
}

static int number_text(ct_run *run, const js_value *v, const char *what, int *neg, uint64_t *mag)
{
    if (!v || (v->type != JS_NUMBER && v->type != JS_STRING))
        return ct_broken(run, "%s must be an integer or a string of digits", what);
    if (parse_decimal(v->str, v->len, neg, mag))
        return ct_broken(run, "%s: \"%s\" is not a 64-bit integer", what, v->str);
    return 0;
}

int ct_int64_of(ct_run *run, const js_value *v, const char *what, int64_t *out)
{
    int neg = 0;
    uint64_t mag = 0;
    if (number_text(run, v, what, &neg, &mag))
        return -1;
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return ct_broken(run, "%s: %s is outside int64", what, v->str);
    *out = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    return 0;
}

int ct_uint64_of(ct_run *run, const js_value *v, const char *what, uint64_t *out)
{
    int neg = 0;
    if (number_text(run, v, what, &neg, out))
        return -1;
    if (neg && *out)
        return ct_broken(run, "%s must not be negative", what);
    return 0;
}

int ct_size_of(ct_run *run, const js_value *v, const char *what, size_t max, size_t *out)
{
    int64_t n;
    if (ct_int64_of(run, v, what, &n))
        return -1;
    if (n < 0 || (uint64_t)n > max)
        return ct_broken(run, "%s must be in 0..%zu", what, max);
    *out = (size_t)n;
    return 0;
}

int ct_kind_of(ct_run *run, const js_value *v, int *out)
{
    if (!v) {
        *out = BITT_KIND_BYTES;
        return 0;
    }
    if (v->type == JS_STRING) {
        for (int k = 0; k <= 2; k++)
            if (strcmp(v->str, ct_kind_name(k)) == 0) {
                *out = k;
                return 0;
            }
        return ct_broken(run, "unknown kind \"%s\"", v->str);
    }
    int64_t k;
    if (v->type != JS_NUMBER || ct_int64_of(run, v, "kind", &k) || k < -1000000 || k > 1000000)
        return ct_broken(run, "kind must be bytes, json, counter or a small integer");
    *out = (int)k;
    return 0;
}

/* ---- byte strings ---------------------------------------------------------------- */

static int hex_of(ct_run *run, const js_value *v, ct_bytes *out)
{
    if (!v || v->type != JS_STRING || v->len % 2)
        return ct_broken(run, "hex must be a string of an even number of hex digits");
    for (size_t i = 0; i < v->len; i += 2) {
        int hi = bitt__hex_digit((unsigned char)v->str[i]),
            lo = bitt__hex_digit((unsigned char)v->str[i + 1]);
        if (hi < 0 || lo < 0)
            return ct_broken(run, "bad hex digit in \"%s\"", v->str);
        uint8_t b = (uint8_t)(hi << 4 | lo);
        if (ct_bytes_put(out, &b, 1))
            return ct_broken(run, "out of memory");
    }
    return 0;
}

/* The one member of a single-member object, or NULL. */
const js_value *ct_only_member(const js_value *v, const char **name)
{
    if (!v || v->type != JS_OBJECT || v->count != 1)
        return NULL;
    *name = v->keys[0];
    return v->items[0];
}

int ct_bytes_of(ct_run *run, const js_value *spec, ct_bytes *out)
{
    if (spec && spec->type == JS_STRING)
        return ct_bytes_put(out, spec->str, spec->len) ? ct_broken(run, "out of memory") : 0;
    const char *form = NULL;
    const js_value *v = ct_only_member(spec, &form);
    if (!v)
        return ct_broken(run,
                         "a byte string is a string or an object with one of hex, repeat, "
                         "concat, tuple (line %d)",
                         spec ? spec->line : 0);
    if (strcmp(form, "hex") == 0)
        return hex_of(run, v, out);
    if (strcmp(form, "concat") == 0) {
        if (v->type != JS_ARRAY)
            return ct_broken(run, "concat must be an array");
        for (size_t i = 0; i < v->count; i++)
            if (ct_bytes_of(run, v->items[i], out))
                return -1;
        return 0;
    }
    if (strcmp(form, "repeat") == 0) {
        static const char *const names[] = {"hex", "string", "count", NULL};
        ct_bytes unit = {0};
        size_t count = 0;
        if (ct_members(run, v, "repeat", names) ||
            ct_size_of(run, js_get(v, "count"), "repeat count", (size_t)1 << 30, &count))
            return -1;
        const js_value *h = js_get(v, "hex"), *s = js_get(v, "string");
        if ((h != NULL) == (s != NULL))
            return ct_broken(run, "repeat needs one of hex and string");
        if (h ? hex_of(run, h, &unit) : ct_bytes_of(run, s, &unit)) {
            ct_bytes_free(&unit);
            return -1;
        }
        for (size_t i = 0; i < count; i++)
            if (ct_bytes_put(out, unit.p, unit.n)) {
                ct_bytes_free(&unit);
                return ct_broken(run, "out of memory");
            }
        ct_bytes_free(&unit);
        return 0;
    }
    if (strcmp(form, "tuple") == 0) {
        ct_tuple t = {0};
        if (ct_tuple_of(run, v, &t))
            return -1;
        int rc = ct_tuple_encode(&t, out);
        ct_tuple_free(&t);
        if (rc)
            return ct_broken(run, "the tuple key (line %d) does not encode: %s", v->line,
                             ct_status_name(rc));
        return 0;
    }
    return ct_broken(run, "unknown byte string form \"%s\"", form);
}

/* ---- tuples -------------------------------------------------------------------- */

static int float_of(ct_run *run, const js_value *v, double *out)
{
    if (v->type == JS_STRING && strcmp(v->str, "nan") == 0)
        *out = NAN;
    else if (v->type == JS_STRING && strcmp(v->str, "inf") == 0)
        *out = INFINITY;
    else if (v->type == JS_STRING && strcmp(v->str, "-inf") == 0)
        *out = -INFINITY;
    else if (v->type == JS_NUMBER || v->type == JS_STRING) {
        char *end;
        *out = strtod(v->str, &end);
        if (end == v->str || *end)
            return ct_broken(run, "bad float \"%s\"", v->str);
    } else {
        return ct_broken(run, "a float is a number or a string");
    }
    return 0;
}

int ct_tuple_of(ct_run *run, const js_value *parts, ct_tuple *out)
{
    if (!parts || parts->type != JS_ARRAY)
        return ct_broken(run, "a tuple is an array of parts");
    out->parts = calloc(parts->count + 1, sizeof *out->parts);
    if (!out->parts)
        return ct_broken(run, "out of memory");
    for (size_t i = 0; i < parts->count; i++) {
        const char *t = NULL;
        const js_value *v = ct_only_member(parts->items[i], &t);
        ct_part *p = &out->parts[out->n++];
        if (!v)
            return ct_broken(run, "a tuple part is an object with one member (line %d)",
                             parts->items[i]->line);
        if (strcmp(t, "bytes_hex") == 0) {
            p->type = BITT_TUPLE_BYTES;
            if (hex_of(run, v, &p->data))
                return -1;
        } else if (strcmp(t, "string") == 0 || strcmp(t, "string_hex") == 0) {
            p->type = BITT_TUPLE_STRING;
            if (t[6]                   ? hex_of(run, v, &p->data)
                : v->type != JS_STRING ? ct_broken(run, "a string part needs a string")
                                       : ct_bytes_put(&p->data, v->str, v->len))
                return -1;
        } else if (strcmp(t, "int") == 0) {
            p->type = BITT_TUPLE_INT;
            if (ct_int64_of(run, v, "int part", &p->i))
                return -1;
        } else if (strcmp(t, "float") == 0) {
            p->type = BITT_TUPLE_FLOAT;
            if (float_of(run, v, &p->f))
                return -1;
        } else if (strcmp(t, "bool") == 0) {
            p->type = BITT_TUPLE_BOOL;
            if (v->type != JS_TRUE && v->type != JS_FALSE)
                return ct_broken(run, "a bool part needs true or false");
            p->i = v->type == JS_TRUE;
        } else {
            return ct_broken(run, "unknown tuple part \"%s\"", t);
        }
    }
    return 0;
}
