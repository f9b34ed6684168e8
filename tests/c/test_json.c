/* Tests of the strict JSON validator (core/json.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Validates (p, n) from an exact-size heap copy, so ASan sees over-reads. */
static size_t check(const char *p, size_t n)
{
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    if (n)
        memcpy(copy, p, n);
    size_t at = bitt__json_invalid_at(copy, n);
    free(copy);
    return at;
}

#define CHECK(lit) check(lit, sizeof(lit) - 1)

static void test_valid(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "0",
        "-0",
        "1",
        "-1",
        "10",
        "1.5",
        "-0.0",
        "0.25e10",
        "1e5",
        "1E5",
        "1e+5",
        "1E-05",
        "123456789012345678901234567890",
        "1.0e-400",
        "true",
        "false",
        "null",
        "\"\"",
        "\"a\"",
        "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
        "\"\\u0000\\u00e9\\uFFFF\"",
        "\"\\ud83d\\ude00\"",
        "\"\\uDBFF\\uDFFF\"",
        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
        "\"\xf4\x8f\xbf\xbf\xef\xbf\xbf\x7f\"",
        "[]",
        "{}",
        "[1]",
        "[1,2,3]",
        "{\"a\":1}",
        "{\"a\":{\"b\":[true,false,null,{}]},\"c\":\"d\"}",
        " \t\r\n[ 1 , 2 ] \n",
        "{ \"a\" : [ ] , \"b\" : { } }",
        "[[[]],[[]]]",
        "\"/\"",
        "[\"]\"]",
        "{\"}\":\"{\"}",
        "[-1.5e-3,0,0.0]",
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        size_t at = check(ok[k], strlen(ok[k]));
        if (at)
            fail_msg("valid text %zu (%s) refused at byte %zu", k, ok[k], at);
    }
}

static void test_invalid(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t len;
        size_t at; /* offset + 1 of the first bad byte */
    } bad[] = {
#define BAD(lit, at) {lit, sizeof(lit) - 1, at}
        BAD("", 1),
        BAD(" ", 2),
        BAD(" \n", 3),
        BAD("01", 2),
        BAD("-01", 3),
        BAD("00", 2),
        BAD("-", 2),
        BAD("-a", 2),
        BAD("+1", 1),
        BAD(".5", 1),
        BAD("1.", 3),
        BAD("1.e5", 3),
        BAD("1e", 3),
        BAD("1e+", 4),
        BAD("1e+a", 4),
        BAD("1.5.5", 4),
        BAD("0x10", 2),
        BAD("NaN", 1),
        BAD("Infinity", 1),
        BAD("-Infinity", 2),
        BAD("True", 1),
        BAD("tru", 4),
        BAD("trux", 4),
        BAD("nul", 4),
        BAD("nulls", 5),
        BAD("1 2", 3),
        BAD("[] x", 4),
        BAD("1\0", 2),
        BAD("[", 2),
        BAD("[1", 3),
        BAD("[1,", 4),
        BAD("[1,]", 4),
        BAD("[,1]", 2),
        BAD("[1 2]", 4),
        BAD("[1]]", 4),
        BAD("[}", 2),
        BAD("{]", 2),
        BAD("{", 2),
        BAD("{a:1}", 2),
        BAD("{\"a\"}", 5),
        BAD("{\"a\" 1}", 6),
        BAD("{\"a\":}", 6),
        BAD("{\"a\":1,}", 8),
        BAD("{\"a\":1", 7),
        BAD("{1:1}", 2),
        BAD("\"abc", 5),
        BAD("\"\\", 3),
        BAD("\"\\x\"", 3),
        BAD("\"\\U0041\"", 3),
        BAD("\"\\u12\"", 6),
        BAD("\"\\u12", 6),
        BAD("\"\\uZZZZ\"", 4),
        BAD("\"\\ud800\"", 8), /* lone high surrogate */
        BAD("\"\\ud800", 8),
        BAD("\"\\ud800\\", 9),
        BAD("\"\\ud800\\n\"", 9),
        BAD("\"\\ud800\\u0041\"", 8), /* high then not low */
        BAD("\"\\ud800\\ud800\"", 8),
        BAD("\"\\udc00\"", 2),        /* lone low surrogate */
        BAD("\"\\ude00\\ud83d\"", 2), /* reversed pair */
        BAD("\"a\x01\"", 3),          /* raw control character */
        BAD("\"\t\"", 2),
        BAD("\"\n\"", 2),
        BAD("\"\x1f\"", 2),
        BAD("\"\xc0\x80\"", 2), /* overlong NUL */
        BAD("\"\xc1\xbf\"", 2),
        BAD("\"\xe0\x80\xaf\"", 3), /* overlong '/' */
        BAD("\"\xf0\x80\x80\xaf\"", 3),
        BAD("\"\xed\xa0\x80\"", 3), /* encoded surrogate */
        BAD("\"\xed\xbf\xbf\"", 3),
        BAD("\"\xf4\x90\x80\x80\"", 3), /* past U+10FFFF */
        BAD("\"\xf5\x80\x80\x80\"", 2),
        BAD("\"\xff\"", 2),
        BAD("\"\x80\"", 2),
        BAD("\"\xc3\"", 3), /* cut by the quote */
        BAD("\"\xe2\x82\"", 4),
        BAD("\"\xe2\x82", 4), /* cut by the end */
        BAD("\xef\xbb\xbf"
            "1",
            1),             /* byte order mark */
        BAD("\xc3\xa9", 1), /* UTF-8 outside a string */
        BAD("\x0b"
            "1",
            1), /* vertical tab is not whitespace */
        BAD("\x0c"
            "1",
            1),
        BAD("1\x0c", 2),
        BAD("'a'", 1),
        BAD("[1,2,3,]", 8),
        BAD("{\"a\":1 \"b\":2}", 8),
#undef BAD
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        size_t at = check(bad[k].text, bad[k].len);
        if (at != bad[k].at)
            fail_msg("invalid text %zu: expected byte %zu, got %zu", k, bad[k].at, at);
    }
    /* NULL with length 0 is the empty text: not JSON. */
    assert_int_equal(bitt__json_invalid_at(NULL, 0), 1);
}

static char *nest(const char *open, const char *inner, const char *close, size_t depth, size_t *len)
{
    size_t lo = strlen(open), li = strlen(inner), lc = strlen(close);
    size_t n = depth * (lo + lc) + li;
    char *p = malloc(n + 1);
    assert_non_null(p);
    size_t w = 0;
    for (size_t k = 0; k < depth; k++, w += lo)
        memcpy(p + w, open, lo);
    memcpy(p + w, inner, li);
    w += li;
    for (size_t k = 0; k < depth; k++, w += lc)
        memcpy(p + w, close, lc);
    p[w] = '\0';
    *len = n;
    return p;
}

static void test_depth(void **state)
{
    (void)state;
    size_t n;
    char *p;

    p = nest("[", "", "]", 512, &n);
    assert_int_equal(check(p, n), 0);
    free(p);
    p = nest("[", "", "]", 513, &n);
    assert_int_equal(check(p, n), 513); /* the 513th '[' */
    free(p);

    p = nest("{\"k\":", "1", "}", 512, &n);
    assert_int_equal(check(p, n), 0);
    free(p);
    p = nest("{\"k\":", "1", "}", 513, &n);
    assert_int_equal(check(p, n), 512 * 5 + 1);
    free(p);

    p = nest("[{\"a\":", "[]", "}]", 255, &n); /* 510 levels, then one more */
    assert_int_equal(check(p, n), 0);
    free(p);
    p = nest("[{\"a\":", "[[]]", "}]", 255, &n); /* 512 */
    assert_int_equal(check(p, n), 0);
    free(p);
    p = nest("[{\"a\":", "[[[]]]", "}]", 255, &n); /* 513 */
    assert_int_equal(check(p, n), 255 * 6 + 3);
    free(p);

    /* Very deep input is refused at the limit without touching the stack. */
    p = nest("[", "", "", 1000000, &n);
    assert_int_equal(check(p, n), 513);
    free(p);

    /* Containers that close do not count: many siblings at depth 512. */
    size_t n1;
    char *inner = nest("[", "", "]", 511, &n1);
    size_t cap = 2 + 100 * (n1 + 1);
    char *wide = malloc(cap);
    assert_non_null(wide);
    size_t w = 0;
    wide[w++] = '[';
    for (int k = 0; k < 100; k++) {
        if (k)
            wide[w++] = ',';
        memcpy(wide + w, inner, n1);
        w += n1;
    }
    wide[w++] = ']';
    assert_int_equal(check(wide, w), 0);
    free(wide);
    free(inner);
}

/* A reference: whether a byte sequence is exactly one valid UTF-8
 * character, computed the slow way (decode, then check the range). */
static int ref_one_char(const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    size_t want;
    uint32_t cp;
    if (p[0] < 0x80) {
        want = 1;
        cp = p[0];
    } else if ((p[0] & 0xE0) == 0xC0) {
        want = 2;
        cp = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        want = 3;
        cp = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        want = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (n != want)
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return 1;
}

static void check_char(const uint8_t *c, size_t n)
{
    char text[8];
    text[0] = '"';
    memcpy(text + 1, c, n);
    text[1 + n] = '"';
    size_t at = bitt__json_invalid_at((const uint8_t *)text, n + 2);
    int want = ref_one_char(c, n) && c[0] >= 0x20 && c[0] != '"';
    if (want != (at == 0))
        fail_msg("sequence %02x %02x %02x %02x (len %zu): reference %d, validator byte %zu", c[0],
                 n > 1 ? c[1] : 0, n > 2 ? c[2] : 0, n > 3 ? c[3] : 0, n, want, at);
    if (!want)
        assert_true(at >= 2 && at <= n + 2);
}

static int special(unsigned b)
{
    return b == '"' || b == '\\';
}

/* Each lead byte with every continuation of the length it announces (4-byte
 * ones with a sample of tails): the validator agrees with the reference. */
static void test_utf8_exhaustive(void **state)
{
    (void)state;
    uint8_t c[4];
    for (unsigned a = 0; a < 256; a++) {
        if (special(a))
            continue;
        c[0] = (uint8_t)a;
        check_char(c, 1);
        if (a < 0x80 || (a >= 0xE0 && a <= 0xF7))
            continue;
        for (unsigned b = 0; b < 256; b++) {
            if (special(b))
                continue;
            c[1] = (uint8_t)b;
            check_char(c, 2);
        }
    }
    for (unsigned a = 0xE0; a <= 0xEF; a++)
        for (unsigned b = 0; b < 256; b++)
            for (unsigned d = 0; d < 256; d++) {
                if (special(b) || special(d))
                    continue;
                c[0] = (uint8_t)a;
                c[1] = (uint8_t)b;
                c[2] = (uint8_t)d;
                check_char(c, 3);
            }
    static const uint8_t tails[] = {0x00, 0x7F, 0x80, 0x8F, 0x90, 0xBF, 0xC0, 0xFF};
    for (unsigned a = 0xF0; a <= 0xFF; a++)
        for (unsigned b = 0; b < 256; b++)
            for (size_t x = 0; x < sizeof tails; x++)
                for (size_t y = 0; y < sizeof tails; y++) {
                    if (special(b))
                        continue;
                    c[0] = (uint8_t)a;
                    c[1] = (uint8_t)b;
                    c[2] = tails[x];
                    c[3] = tails[y];
                    check_char(c, 4);
                }
}

/* Every proper prefix of a valid text that is not itself valid is refused
 * with "ends early" (len + 1) or a byte inside it, never a crash. */
static void test_prefixes(void **state)
{
    (void)state;
    static const char text[] =
        "{\"a\":[1,-2.5e+3,true,false,null,\"x\\u00e9\\ud83d\\ude00\xc3\xa9\"],\"b\":{}}";
    size_t n = sizeof text - 1;
    assert_int_equal(check(text, n), 0);
    for (size_t cut = 0; cut < n; cut++) {
        size_t at = check(text, cut);
        assert_true(at >= 1 && at <= cut + 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),    cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_depth),    cmocka_unit_test(test_utf8_exhaustive),
        cmocka_unit_test(test_prefixes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
