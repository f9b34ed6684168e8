/*
 * core/json.c: a strict RFC 8259 validator for BITT_KIND_JSON values.
 *
 * Accepts exactly one JSON text with optional whitespace (space, tab, LF,
 * CR) around it. Strict means:
 *  - the whole input is UTF-8 per RFC 3629 (checked inside strings, where
 *    it can occur; a byte >= 0x80 anywhere else is simply not JSON), and a
 *    byte order mark is refused;
 *  - strings hold no raw control characters (< 0x20); escapes are the eight
 *    of the grammar or \uXXXX, and a \u escape of a surrogate must be a high
 *    one followed at once by a \u escape of a low one;
 *  - numbers follow the grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
 *    (no '+', no leading zero, no bare '.', no NaN/Infinity);
 *  - true, false and null are lowercase;
 *  - at most BITT_JSON_MAX_DEPTH arrays and objects are open at once.
 *
 * The parser is iterative: containers live on a bit stack (one bit per
 * level: array or object), so deep input never touches the C stack, and
 * nothing is allocated.
 *
 * The result is 0 when the text is valid, else the offset + 1 of the first
 * byte at which it stops being a prefix of some valid text; len + 1 means
 * the text ends too early (an empty input gives 1).
 */
#include <string.h>

#include "internal.h"
#include "utf8.h"

#define BITT_JSON_MAX_DEPTH BITT_JSON_DEPTH_MAX

static int is_ws(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const uint8_t *s, size_t n, size_t i)
{
    while (i < n && is_ws(s[i]))
        i++;
    return i;
}

static int is_digit(uint8_t c)
{
    return c >= '0' && c <= '9';
}

/* The error result for position i: offset + 1, where i == n means "ended
 * too early". */
#define BAD(i) ((size_t)(i) + 1)

/*
 * Reads the 4 hex digits of a \u escape whose 'u' is at s[*pos - 1]; moves
 * *pos past them. 0 or the error result.
 */
static size_t scan_hex4(const uint8_t *s, size_t n, size_t *pos, unsigned *out)
{
    unsigned v = 0;
    size_t i = *pos;
    for (int k = 0; k < 4; k++, i++) {
        if (i >= n)
            return BAD(n);
        int h = bitt__hex_digit(s[i]);
        if (h < 0)
            return BAD(i);
        v = (v << 4) | (unsigned)h;
    }
    *pos = i;
    *out = v;
    return 0;
}

/* A string whose opening quote is at s[*pos]; moves *pos past the closing
 * quote. 0 or the error result. */
static size_t scan_string(const uint8_t *s, size_t n, size_t *pos)
{
    size_t i = *pos + 1;
    for (;;) {
        if (i >= n)
            return BAD(n);
        uint8_t c = s[i];
        if (c == '"') {
            *pos = i + 1;
            return 0;
        }
        if (c < 0x20)
            return BAD(i);
        if (c >= 0x80) {
            size_t bad = 0;
            size_t k = bitt__utf8_seq(s + i, n - i, &bad);
            if (!k)
                return BAD(i + bad);
            i += k;
            continue;
        }
        if (c != '\\') {
            i++;
            continue;
        }
        size_t esc = i; /* the backslash */
        if (i + 1 >= n)
            return BAD(n);
        c = s[i + 1];
        i += 2;
        switch (c) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't': continue;
        case 'u': break;
        default: return BAD(esc + 1);
        }
        unsigned cp = 0;
        size_t rc = scan_hex4(s, n, &i, &cp);
        if (rc)
            return rc;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return BAD(esc); /* a low surrogate with no high one before it */
        if (cp < 0xD800 || cp > 0xDBFF)
            continue;
        /* A high surrogate: a \u escape of a low one must follow. */
        if (i >= n)
            return BAD(n);
        if (s[i] != '\\')
            return BAD(i);
        if (i + 1 >= n)
            return BAD(n);
        if (s[i + 1] != 'u')
            return BAD(i + 1);
        size_t low = i;
        i += 2;
        rc = scan_hex4(s, n, &i, &cp);
        if (rc)
            return rc;
        if (cp < 0xDC00 || cp > 0xDFFF)
            return BAD(low);
    }
}

/* A number starting at s[*pos] ('-' or a digit); moves *pos past it. */
static size_t scan_number(const uint8_t *s, size_t n, size_t *pos)
{
    size_t i = *pos;
    if (s[i] == '-')
        i++;
    if (i >= n)
        return BAD(n);
    if (s[i] == '0') {
        i++; /* a digit after it is caught by the caller as trailing junk */
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (i < n && is_digit(s[i]))
            i++;
    } else {
        return BAD(i);
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n)
            return BAD(n);
        if (!is_digit(s[i]))
            return BAD(i);
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n)
            return BAD(n);
        if (!is_digit(s[i]))
            return BAD(i);
        while (i < n && is_digit(s[i]))
            i++;
    }
    *pos = i;
    return 0;
}

/* true / false / null at s[*pos]. */
static size_t scan_literal(const uint8_t *s, size_t n, size_t *pos, const char *word)
{
    size_t i = *pos;
    for (size_t k = 0; word[k]; k++, i++) {
        if (i >= n)
            return BAD(n);
        if (s[i] != (uint8_t)word[k])
            return BAD(i);
    }
    *pos = i;
    return 0;
}

enum json_state {
    WANT_VALUE, /* a value must come next */
    WANT_KEY,   /* inside an object, after '{' or ',': a key string */
    AFTER_VALUE /* a value ended: ',' / close / end of text */
};

size_t bitt__json_invalid_at(const uint8_t *text, size_t len)
{
    /* One bit per open container: 1 = object, 0 = array. */
    uint8_t stack[BITT_JSON_MAX_DEPTH / 8] = {0};
    size_t depth = 0;
    const uint8_t *s = text;
    size_t n = text ? len : 0;
    size_t i = skip_ws(s, n, 0);
    enum json_state state = WANT_VALUE;
    size_t rc;

    for (;;) {
        switch (state) {
        case WANT_VALUE: {
            if (i >= n)
                return BAD(n);
            uint8_t c = s[i];
            if (c == '{' || c == '[') {
                if (depth == BITT_JSON_MAX_DEPTH)
                    return BAD(i);
                uint8_t bit = (uint8_t)(1u << (depth % 8));
                if (c == '{')
                    stack[depth / 8] |= bit;
                else
                    stack[depth / 8] &= (uint8_t)~bit;
                depth++;
                i = skip_ws(s, n, i + 1);
                if (i < n && s[i] == (c == '{' ? '}' : ']')) {
                    depth--;
                    i++;
                    state = AFTER_VALUE;
                } else {
                    state = c == '{' ? WANT_KEY : WANT_VALUE;
                }
                continue;
            }
            if (c == '"')
                rc = scan_string(s, n, &i);
            else if (c == '-' || is_digit(c))
                rc = scan_number(s, n, &i);
            else if (c == 't')
                rc = scan_literal(s, n, &i, "true");
            else if (c == 'f')
                rc = scan_literal(s, n, &i, "false");
            else if (c == 'n')
                rc = scan_literal(s, n, &i, "null");
            else
                return BAD(i);
            if (rc)
                return rc;
            state = AFTER_VALUE;
            continue;
        }
        case WANT_KEY:
            if (i >= n)
                return BAD(n);
            if (s[i] != '"')
                return BAD(i);
            rc = scan_string(s, n, &i);
            if (rc)
                return rc;
            i = skip_ws(s, n, i);
            if (i >= n)
                return BAD(n);
            if (s[i] != ':')
                return BAD(i);
            i = skip_ws(s, n, i + 1);
            state = WANT_VALUE;
            continue;
        case AFTER_VALUE: {
            i = skip_ws(s, n, i);
            if (depth == 0)
                return i == n ? 0 : BAD(i);
            if (i >= n)
                return BAD(n);
            int in_object = (stack[(depth - 1) / 8] >> ((depth - 1) % 8)) & 1;
            if (s[i] == ',') {
                i = skip_ws(s, n, i + 1);
                state = in_object ? WANT_KEY : WANT_VALUE;
            } else if (s[i] == (in_object ? '}' : ']')) {
                depth--;
                i++;
            } else {
                return BAD(i);
            }
            continue;
        }
        }
    }
}
