/*
 * fuzz_value: the value kinds (core/json.c, core/value.c).
 *
 * The input is a candidate value. The properties:
 *  - the JSON checker and the counter parser never crash or read past the
 *    input, and bitt__value_check agrees with them;
 *  - the checker and an independent strict parser (tests/c/support/jsondom)
 *    accept the same texts (where both nest deep enough);
 *  - an accepted JSON text, parsed and written back in a canonical form,
 *    is accepted again and parses back to the same canonical text;
 *  - a counter that parses is written back by bitt__counter_format to the
 *    same bytes (one spelling per number);
 *  - a memory store takes a value of each kind exactly when the checker
 *    does, and gives back the same bytes and kind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "jsondom.h"
#include "utf8.h"

#define DOM_MAX_DEPTH 200 /* jsondom's limit; bitt's is 512 */

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_value: %s\n", what);
    abort();
}

/* The deepest nesting of [ and { outside strings (valid or not). */
static size_t nesting(const uint8_t *s, size_t n)
{
    size_t depth = 0, max = 0;
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        if (in_string) {
            if (s[i] == '\\')
                i++;
            else if (s[i] == '"')
                in_string = 0;
        } else if (s[i] == '"') {
            in_string = 1;
        } else if (s[i] == '[' || s[i] == '{') {
            if (++depth > max)
                max = depth;
        } else if ((s[i] == ']' || s[i] == '}') && depth) {
            depth--;
        }
    }
    return max;
}

static void put(bitt_buf *b, const void *p, size_t n)
{
    if (bitt__buf_put(b, p, n))
        fail("out of memory");
}

static void write_string(bitt_buf *b, const char *s, size_t n)
{
    put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(b, esc, 2);
        } else if (c < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put(b, esc, 6);
        } else {
            put(b, &c, 1);
        }
    }
    put(b, "\"", 1);
}

/* A canonical JSON text of v: no whitespace, members in their order. */
static void write_value(bitt_buf *b, const js_value *v)
{
    switch (v->type) {
    case JS_NULL: put(b, "null", 4); break;
    case JS_FALSE: put(b, "false", 5); break;
    case JS_TRUE: put(b, "true", 4); break;
    case JS_NUMBER: put(b, v->str, v->len); break;
    case JS_STRING: write_string(b, v->str, v->len); break;
    case JS_ARRAY:
    case JS_OBJECT: {
        int obj = v->type == JS_OBJECT;
        put(b, obj ? "{" : "[", 1);
        for (size_t i = 0; i < v->count; i++) {
            if (i)
                put(b, ",", 1);
            if (obj) {
                write_string(b, v->keys[i], strlen(v->keys[i]));
                put(b, ":", 1);
            }
            write_value(b, v->items[i]);
        }
        put(b, obj ? "}" : "]", 1);
        break;
    }
    }
}

static void check_json(const uint8_t *data, size_t size)
{
    size_t bad = bitt__json_invalid_at(data, size);
    if (bad > size + 1)
        fail("the JSON checker points past the end of the input");
    int rc = bitt__value_check(BITT_KIND_JSON, data, size);
    if ((rc == BITT_OK) != (bad == 0))
        fail("bitt__value_check disagrees with bitt__json_invalid_at");
    /* RFC 8259 texts are UTF-8: bitt refuses anything else. jsondom does
     * not check encodings, so it is compared on UTF-8 input only. */
    if (bitt__utf8_invalid_at(data, size)) {
        if (!bad)
            fail("the JSON checker takes text that is not UTF-8");
        return;
    }
    if (nesting(data, size) > DOM_MAX_DEPTH)
        return;
    char err[128];
    js_value *dom = js_parse((const char *)data, size, err, sizeof err);
    /* RFC 8259 allows duplicate member names, which bitt takes; jsondom
     * refuses them (contract files must not have any). */
    if (!dom && !bad && strstr(err, "duplicate member"))
        return;
    if ((dom != NULL) != (bad == 0)) {
        fprintf(stderr, "fuzz_value: checker says %s (at %zu), jsondom says %s\n",
                bad ? "invalid" : "valid", bad, dom ? "valid" : err);
        fail("the JSON checker and jsondom disagree");
    }
    if (!dom)
        return;
    bitt_buf once = BITT_BUF_INIT, twice = BITT_BUF_INIT;
    write_value(&once, dom);
    js_free(dom);
    if (bitt__json_invalid_at(once.ptr, once.len))
        fail("a canonical rewrite of valid JSON is refused");
    dom = js_parse((const char *)once.ptr, once.len, err, sizeof err);
    if (!dom)
        fail("a canonical rewrite of valid JSON does not parse");
    write_value(&twice, dom);
    js_free(dom);
    if (once.len != twice.len || memcmp(once.ptr, twice.ptr, once.len))
        fail("JSON does not re-parse to the same value");
    bitt_buf_dispose(&once);
    bitt_buf_dispose(&twice);
}

static void check_counter(const uint8_t *data, size_t size)
{
    int64_t v;
    int rc = bitt__counter_parse(data, size, &v);
    if (rc != BITT_OK && rc != BITT_EINVAL)
        fail("the counter parser gave a status other than OK or EINVAL");
    if (rc != bitt__value_check(BITT_KIND_COUNTER, data, size))
        fail("bitt__value_check disagrees with bitt__counter_parse");
    if (rc)
        return;
    char text[21];
    size_t n = bitt__counter_format(v, text);
    if (n != size || memcmp(text, data, n))
        fail("a counter is not written back to the same bytes");
}

/* Every kind through a memory store: taken exactly when valid, given back
 * byte for byte. */
static void check_store(bitt_store *store, const uint8_t *data, size_t size)
{
    for (int kind = BITT_KIND_BYTES; kind <= BITT_KIND_COUNTER; kind++) {
        int valid = bitt__value_check(kind, data, size) == BITT_OK;
        int rc = bitt_kv_set(store, "k", 1, data, size, kind, 0, NULL);
        if (size > BITT_DEFAULT_MAX_VALUE_SIZE) {
            if (rc != BITT_ETOOLARGE && rc != BITT_EINVAL)
                fail("an oversized value is not refused");
            continue;
        }
        if ((rc == BITT_OK) != valid || (rc && rc != BITT_EINVAL))
            fail("the store's verdict on a value differs from the checker's");
        if (rc)
            continue;
        bitt_entry *e = NULL;
        if (bitt_kv_get(store, "k", 1, &e) != BITT_OK)
            fail("a value just set cannot be read");
        size_t n;
        const uint8_t *p = bitt_entry_value(e, &n);
        if (n != size || (n && memcmp(p, data, n)) || p[n] != 0 || bitt_entry_kind(e) != kind)
            fail("a value comes back from the store changed");
        bitt_entry_free(e);
    }
}

static bitt_store *g_store;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_store && bitt_store_open("memory:", &g_store))
        fail("cannot open a memory store");
    check_json(data, size);
    check_counter(data, size);
    check_store(g_store, data, size);
    return 0;
}
