/*
 * Password redaction of the PostgreSQL backend, without a server: the URL
 * is parsed as the backend does and messages quoting each password are
 * redacted. fuzz_url found a password cut in two by the redaction buffer
 * (its first bytes stayed); these cases keep that fixed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "postgres/pg_internal.h"

static bitt_backend *parse(const char *text, bitt_url *url)
{
    bitt_backend *be = calloc(1, sizeof *be);
    assert_non_null(be);
    assert_int_equal(bitt__url_parse(text, url), BITT_OK);
    assert_int_equal(bitt__pg_read_url(url, be), BITT_OK);
    return be;
}

static void release(bitt_backend *be, bitt_url *url)
{
    bitt__pg_free_params(be);
    free(be);
    bitt__url_free(url);
}

/* "x" * pad, then secret, then a tail, redacted into cap bytes: no run of
 * 3 or more bytes of the secret may remain. */
static void expect_redacted(const bitt_backend *be, const char *secret, size_t pad, size_t cap)
{
    size_t n = strlen(secret);
    char *msg = malloc(pad + n + 16), *out = malloc(cap);
    assert_true(msg && out);
    memset(msg, 'x', pad);
    strcpy(msg + pad, secret);
    strcat(msg, "\" failed");
    bitt__pg_redact(be, msg, out, cap);
    char piece[64];
    for (size_t len = 3; len <= n && len < sizeof piece; len++)
        for (size_t at = 0; at + len <= n; at++)
            if (memcpy(piece, secret + at, len), piece[len] = '\0', strstr(out, piece))
                fail_msg("pad %zu cap %zu: \"%.*s\" of the password is left in \"%s\"", pad, cap,
                         (int)len, secret + at, out);
    free(msg);
    free(out);
}

static void test_redaction_at_every_cut(void **state)
{
    (void)state;
    bitt_url url;
    bitt_backend *be = parse("postgres://u:Sec%2Fret!PW@127.0.0.1:1/db", &url);
    static const size_t pads[] = {0, 100, 390, 398, 1000, 1018, 1020, 1023, 1030};
    static const size_t caps[] = {8, 64, 400, 1024, 2048};
    for (size_t p = 0; p < sizeof pads / sizeof *pads; p++) {
        for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
            expect_redacted(be, "Sec/ret!PW", pads[p], caps[c]);
            expect_redacted(be, "Sec%2Fret!PW", pads[p], caps[c]);
        }
    }
    release(be, &url);
}

/* A password= option wins over the location's for libpq: it is redacted
 * too. */
static void test_option_password_redacted(void **state)
{
    (void)state;
    bitt_url url;
    bitt_backend *be = parse("postgres://u:Location1@127.0.0.1:1/db?password=Option22", &url);
    expect_redacted(be, "Location1", 10, 256);
    expect_redacted(be, "Option22", 10, 256);
    release(be, &url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redaction_at_every_cut),
        cmocka_unit_test(test_option_password_redacted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
