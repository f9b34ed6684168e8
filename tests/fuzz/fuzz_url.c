/*
 * fuzz_url: store URLs (core/url.c) and the parsers of every scheme
 * (core/postgres/url.c, core/redis/url.c, the memory and SQLite options),
 * and password redaction. Nothing connects.
 *
 * Byte 0 picks the mode. Raw mode (even): the rest is the URL text, run
 * through every parser: no crash, every failure has a message.
 * Password mode (odd): the URL is built from the input as
 * scheme://user:PASSWORD@host/path?options, where the password (in the
 * location, or as a password= option) is made of URL delimiters and a
 * secret character, written raw (U+00A7, bytes C2 A7) or escaped (%C2%A7).
 * Every other part is printable ASCII that cannot spell those escapes, nor
 * escape any byte >= 0x80. So
 * any byte >= 0x80, or "%C2"/"%A7", in a message, a where-string or a
 * redacted text is a piece of the password that leaked.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "url_backends.h"

static void fail(const char *what, const char *text)
{
    fprintf(stderr, "fuzz_url: %s: \"%s\"\n", what, text ? text : "(null)");
    abort();
}

static int g_has_secret; /* the URL being checked holds a password */

static void check_text(const char *text, void *ctx)
{
    (void)ctx;
    if (!g_has_secret)
        return;
    for (const char *p = text; *p; p++) {
        if ((unsigned char)*p >= 0x80)
            fail("a password byte leaked", text);
        if (*p == '%' && (!strncasecmp(p, "%C2", 3) || !strncasecmp(p, "%A7", 3)))
            fail("a password escape leaked", text);
    }
}

static void check_failure(int rc)
{
    if (rc < 0 && !bitt_error_last()[0])
        fail("a failure without a message", "");
    if (rc < 0)
        check_text(bitt_error_last(), NULL);
}

/* Opens memory: and sqlite::memory: URLs for real (nothing else: a SQLite
 * path would create a file, a server URL would connect). */
static void open_local(const bitt_url *url, const char *text)
{
    int is_sqlite = !strcmp(url->scheme, "sqlite");
    if (strcmp(url->scheme, "memory") && !(is_sqlite && !strcmp(url->rest, ":memory:")))
        return;
    bitt_store *s = NULL;
    int rc = bitt_store_open(text, &s);
    if (rc == BITT_OK && !s)
        fail("open succeeded without a store", text);
    check_failure(rc);
    bitt_store_close(s);
}

static void run_parsers(const char *text)
{
    bitt_url url;
    int rc = bitt__url_parse(text, &url);
    check_failure(rc);
    if (rc == BITT_OK) {
        if (!strcmp(url.scheme, "postgres") || !strcmp(url.scheme, "postgresql"))
            rc = fz_pg_url(&url, check_text, NULL);
        else if (!strcmp(url.scheme, "redis") || !strcmp(url.scheme, "unix"))
            rc = fz_rd_url(&url, check_text, NULL);
        if (rc == BITT_OK)
            check_failure(bitt__url_check_all_used(&url));
        const char *backoff = bitt__url_param(&url, "queue_backoff");
        if (backoff) {
            bitt_backoff b;
            check_failure(bitt__backoff_parse(backoff, &b));
        }
        open_local(&url, text);
    }
    bitt__url_free(&url);
}

/* ---- password mode: building the URL ---------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t take(reader *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

/* A field of up to 31 bytes: its length, then its bytes. */
static size_t field(reader *r, const uint8_t **out)
{
    size_t n = take(r) % 32u;
    if (n > r->n)
        n = r->n;
    *out = r->p;
    r->p += n;
    r->n -= n;
    return n;
}

typedef struct text {
    char s[4096];
    size_t n;
} text;

static void add(text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->n + n < sizeof t->s) {
        memcpy(t->s + t->n, s, n);
        t->n += n;
        t->s[t->n] = '\0';
    }
}

/* Printable ASCII that never spells %C2 or %A7, nor any escape of a byte
 * >= 0x80 (which would decode to what looks like a password byte). */
static void add_plain(text *t, reader *r)
{
    const uint8_t *p;
    size_t n = field(r, &p);
    for (size_t i = 0; i < n; i++) {
        char c[2] = {(char)(0x20 + p[i] % 95u), 0};
        if (t->n && t->s[t->n - 1] == '%' && strchr("89ABCDEFabcdef", c[0]))
            c[0] = 'x';
        add(t, c);
    }
}

static void add_secret(text *t, reader *r)
{
    static const char delims[] = "?&=#@/:%+;, []\\\"'";
    const uint8_t *p;
    size_t n = field(r, &p);
    if (!n)
        add(t, "%C2%A7"); /* never empty: an empty password cannot leak */
    for (size_t i = 0; i < n; i++) {
        if (p[i] % 4 == 0) {
            char c[2] = {delims[(p[i] / 4u) % (sizeof delims - 1)], 0};
            add(t, c);
        } else {
            add(t, p[i] % 4 == 1 ? "%C2%A7" : "\xC2\xA7");
        }
    }
}

static const char *const g_schemes[] = {"postgres", "postgresql", "redis",    "unix",
                                        "memory",   "sqlite",     "POSTGRES", "Redis"};
static const char *const g_options[] = {
    "password",         "user",           "schema",      "table_prefix", "statement_timeout",
    "prefix",           "timeout",        "db",          "sslmode",      "allow_eviction",
    "max_key_size",     "max_value_size", "queue_lease", "busy_timeout", "queue_backoff",
    "application_name", "host",           "synchronous", "spin_us",      "pool"};
enum { NOPTIONS = sizeof g_options / sizeof *g_options };

static void build(reader *r, text *t)
{
    uint8_t shape = take(r);
    const char *scheme = g_schemes[shape % 8u];
    add(t, scheme);
    add(t, ":");
    if (!strcasecmp(scheme, "sqlite")) {
        add(t, ":memory:");
    } else if (!strcmp(scheme, "unix")) {
        add(t, "/");
        add_plain(t, r);
    } else if (strcmp(scheme, "memory")) {
        add(t, "//");
        add_plain(t, r); /* user */
        if (shape & 8) {
            add(t, ":");
            add_secret(t, r);
        }
        /* A password is always followed by the '@' before the host: with a
         * raw '@' of its own and none after it, "user:pa@ss" names host
         * "ss", as RFC 3986 reads it, and a host may be quoted. */
        if (shape & 24)
            add(t, "@");
        add_plain(t, r); /* host[:port] */
        if (shape & 32) {
            add(t, "/");
            add_plain(t, r);
        }
    }
    size_t options = take(r) % 5u;
    for (size_t i = 0; i < options; i++) {
        add(t, i ? "&" : "?");
        uint8_t which = take(r);
        if (which % 4 == 0) {
            add_plain(t, r); /* a free-form option */
            continue;
        }
        const char *name = g_options[(which / 4u) % NOPTIONS];
        add(t, name);
        add(t, "=");
        if (!strcmp(name, "password"))
            add_secret(t, r);
        else
            add_plain(t, r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] % 2 == 0) {
        char *url = malloc(size);
        if (!url)
            abort();
        memcpy(url, data + 1, size - 1);
        url[size - 1] = '\0';
        g_has_secret = 0;
        run_parsers(url);
        free(url);
        return 0;
    }
    reader r = {data + 1, size - 1};
    text t = {{0}, 0};
    build(&r, &t);
    g_has_secret = strstr(t.s, "\xC2\xA7") || strstr(t.s, "%C2%A7");
    if (getenv("BITT_FUZZ_VERBOSE")) /* shows the URL an input stands for */
        fprintf(stderr, "fuzz_url: URL \"%s\"\n", t.s);
    run_parsers(t.s);
    return 0;
}
