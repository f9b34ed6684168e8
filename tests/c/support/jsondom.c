/*
 * tests/c/support/jsondom.c: a recursive-descent JSON parser into a DOM (see
 * jsondom.h). Strict RFC 8259 grammar; depth limited so a broken file cannot
 * exhaust the stack.
 */
#include "jsondom.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JS_MAX_DEPTH 200

typedef struct parser {
    const char *s;
    size_t len;
    size_t pos;
    char *err;
    size_t err_len;
    int failed;
    int depth;
    /* the line of line_pos: values are made in order, so each one's line
     * is counted on from the last (counting from the start was quadratic:
     * 10 s of every contract run under valgrind) */
    size_t line_pos;
    int line;
} parser;

static void where(const parser *p, size_t pos, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < pos && i < p->len; i++) {
        if (p->s[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static js_value *fail(parser *p, const char *fmt, ...)
{
    if (p->failed)
        return NULL;
    p->failed = 1;
    int line, col;
    where(p, p->pos, &line, &col);
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->err && p->err_len)
        snprintf(p->err, p->err_len, "line %d col %d: %s", line, col, msg);
    return NULL;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static js_value *new_value(parser *p, js_type type)
{
    js_value *v = calloc(1, sizeof *v);
    if (!v)
        return fail(p, "out of memory");
    v->type = type;
    if (p->line == 0 || p->pos < p->line_pos) {
        p->line = 1;
        p->line_pos = 0;
    }
    for (; p->line_pos < p->pos && p->line_pos < p->len; p->line_pos++)
        p->line += p->s[p->line_pos] == '\n';
    v->line = p->line;
    return v;
}

/* A growable byte string. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static int sb_put(sbuf *b, const void *data, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return -1;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int hex4(parser *p, unsigned *out)
{
    if (p->pos + 4 > p->len)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos + i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -1;
        v = v << 4 | d;
    }
    p->pos += 4;
    *out = v;
    return 0;
}

static size_t utf8_put(unsigned cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a string at p->pos (which is at the opening quote). */
static char *parse_string_raw(parser *p, size_t *len_out)
{
    sbuf b = {0};
    p->pos++; /* the quote */
    for (;;) {
        if (p->pos >= p->len) {
            free(b.p);
            fail(p, "unterminated string");
            return NULL;
        }
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            free(b.p);
            fail(p, "control character in a string");
            return NULL;
        }
        if (c != '\\') {
            /* Copy a run of plain bytes at once. */
            size_t start = p->pos;
            while (p->pos < p->len && p->s[p->pos] != '"' && p->s[p->pos] != '\\' &&
                   (unsigned char)p->s[p->pos] >= 0x20)
                p->pos++;
            if (sb_put(&b, p->s + start, p->pos - start)) {
                free(b.p);
                fail(p, "out of memory");
                return NULL;
            }
            continue;
        }
        p->pos++;
        if (p->pos >= p->len)
            continue; /* reported as unterminated above */
        char e = p->s[p->pos++];
        char out[4];
        size_t n = 1;
        switch (e) {
        case '"': out[0] = '"'; break;
        case '\\': out[0] = '\\'; break;
        case '/': out[0] = '/'; break;
        case 'b': out[0] = '\b'; break;
        case 'f': out[0] = '\f'; break;
        case 'n': out[0] = '\n'; break;
        case 'r': out[0] = '\r'; break;
        case 't': out[0] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(p, &cp))
                goto bad_escape;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (p->pos + 2 > p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                    goto bad_escape;
                p->pos += 2;
                if (hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    goto bad_escape;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                goto bad_escape;
            }
            n = utf8_put(cp, out);
            break;
        }
        default: goto bad_escape;
        }
        if (sb_put(&b, out, n)) {
            free(b.p);
            fail(p, "out of memory");
            return NULL;
        }
        continue;
    bad_escape:
        free(b.p);
        fail(p, "bad escape in a string");
        return NULL;
    }
    if (!b.p && sb_put(&b, "", 0)) {
        fail(p, "out of memory");
        return NULL;
    }
    *len_out = b.n;
    return b.p;
}

static js_value *parse_value(parser *p);

static int push_item(parser *p, js_value *v, js_value *item, char *key)
{
    /* Capacity is 4, then doubles: grow at 0 and at every power of two >= 4. */
    if (v->count == 0 || (v->count >= 4 && (v->count & (v->count - 1)) == 0)) {
        size_t cap = v->count ? v->count * 2 : 4;
        js_value **items = realloc(v->items, cap * sizeof *items);
        if (items)
            v->items = items;
        if (!items ||
            (v->type == JS_OBJECT && !(v->keys = realloc(v->keys, cap * sizeof(char *))))) {
            js_free(item);
            free(key);
            fail(p, "out of memory");
            return -1;
        }
    }
    v->items[v->count] = item;
    if (v->type == JS_OBJECT)
        v->keys[v->count] = key;
    v->count++;
    return 0;
}

static js_value *parse_container(parser *p, js_type type)
{
    char close = type == JS_ARRAY ? ']' : '}';
    js_value *v = new_value(p, type);
    if (!v)
        return NULL;
    if (++p->depth > JS_MAX_DEPTH) {
        js_free(v);
        return fail(p, "nested too deeply");
    }
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        p->depth--;
        return v;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(p);
        if (type == JS_OBJECT) {
            size_t klen;
            if (p->pos >= p->len || p->s[p->pos] != '"') {
                js_free(v);
                return fail(p, "expected a member name");
            }
            key = parse_string_raw(p, &klen);
            if (!key) {
                js_free(v);
                return NULL;
            }
            for (size_t i = 0; i < v->count; i++) {
                if (strcmp(v->keys[i], key) == 0) {
                    fail(p, "duplicate member \"%s\"", key); /* before key is freed */
                    free(key);
                    js_free(v);
                    return NULL;
                }
            }
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                free(key);
                js_free(v);
                return fail(p, "expected ':'");
            }
            p->pos++;
        }
        js_value *item = parse_value(p);
        if (!item || push_item(p, v, item, key)) {
            if (!item)
                free(key);
            js_free(v);
            return NULL;
        }
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            p->depth--;
            return v;
        }
        js_free(v);
        return fail(p, "expected ',' or '%c'", close);
    }
}

static js_value *parse_number(parser *p)
{
    size_t start = p->pos, i = p->pos;
    const char *s = p->s;
    if (i < p->len && s[i] == '-')
        i++;
    if (i < p->len && s[i] == '0') {
        i++;
    } else if (i < p->len && s[i] >= '1' && s[i] <= '9') {
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    } else {
        return fail(p, "bad number");
    }
    if (i < p->len && s[i] == '.') {
        i++;
        if (i >= p->len || s[i] < '0' || s[i] > '9')
            return fail(p, "bad number");
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= p->len || s[i] < '0' || s[i] > '9')
            return fail(p, "bad number");
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    js_value *v = new_value(p, JS_NUMBER);
    if (!v)
        return NULL;
    v->len = i - start;
    v->str = malloc(v->len + 1);
    if (!v->str) {
        js_free(v);
        return fail(p, "out of memory");
    }
    memcpy(v->str, s + start, v->len);
    v->str[v->len] = '\0';
    p->pos = i;
    return v;
}

static js_value *parse_value(parser *p)
{
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end of input");
    char c = p->s[p->pos];
    if (c == '{')
        return parse_container(p, JS_OBJECT);
    if (c == '[')
        return parse_container(p, JS_ARRAY);
    if (c == '"') {
        js_value *v = new_value(p, JS_STRING);
        if (!v)
            return NULL;
        v->str = parse_string_raw(p, &v->len);
        if (!v->str) {
            js_free(v);
            return NULL;
        }
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(p);
    static const struct {
        const char *word;
        js_type type;
    } words[] = {{"true", JS_TRUE}, {"false", JS_FALSE}, {"null", JS_NULL}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if (p->len - p->pos >= n && memcmp(p->s + p->pos, words[i].word, n) == 0) {
            js_value *v = new_value(p, words[i].type);
            p->pos += n;
            return v;
        }
    }
    return fail(p, "unexpected character '%c'", c);
}

js_value *js_parse(const char *text, size_t len, char *err, size_t err_len)
{
    parser p = {.s = text, .len = len, .err = err, .err_len = err_len};
    if (err && err_len)
        err[0] = '\0';
    js_value *v = parse_value(&p);
    if (!v)
        return NULL;
    skip_ws(&p);
    if (p.pos != p.len) {
        js_free(v);
        return fail(&p, "text after the JSON value");
    }
    return v;
}

js_value *js_parse_file(const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "cannot open %s", path);
        return NULL;
    }
    sbuf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (sb_put(&b, chunk, n)) {
            fclose(f);
            free(b.p);
            snprintf(err, err_len, "out of memory reading %s", path);
            return NULL;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b.p);
        snprintf(err, err_len, "cannot read %s", path);
        return NULL;
    }
    js_value *v = js_parse(b.p ? b.p : "", b.n, err, err_len);
    free(b.p);
    return v;
}

void js_free(js_value *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->count; i++) {
        js_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const js_value *js_get(const js_value *v, const char *name)
{
    if (!v || v->type != JS_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], name) == 0)
            return v->items[i];
    return NULL;
}

const js_value *js_at(const js_value *v, size_t i)
{
    if (!v || v->type != JS_ARRAY || i >= v->count)
        return NULL;
    return v->items[i];
}

const char *js_type_name(js_type t)
{
    switch (t) {
    case JS_NULL: return "null";
    case JS_FALSE: return "false";
    case JS_TRUE: return "true";
    case JS_NUMBER: return "number";
    case JS_STRING: return "string";
    case JS_ARRAY: return "array";
    case JS_OBJECT: return "object";
    }
    return "?";
}
