/*
 * output.c: how entries print: a value alone (get) or JSON objects (--json),
 * and the JSON pieces every command's objects are made of.
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

void cli_put_value(const cli *c, const bitt_entry *e)
{
    size_t n = 0;
    const uint8_t *v = bitt_entry_value(e, &n);
    if (c->raw) {
        fwrite(v, 1, n, stdout);
        return;
    }
    if (c->hex_out)
        cli_put_hex(stdout, v, n);
    else if (!c->tsv && cli_is_text(v, n)) /* --tsv: one line, as in a table */
        fwrite(v, 1, n, stdout);
    else
        cli_put_escaped(stdout, v, n);
    putchar('\n');
}

const char *cli_kind_name(int kind)
{
    switch (kind) {
    case BITT_KIND_BYTES: return "bytes";
    case BITT_KIND_JSON: return "json";
    case BITT_KIND_COUNTER: return "counter";
    default: return NULL;
    }
}

/* "name":"text", or "name_hex":"6869" for bytes that are not UTF-8 (or
 * always with --hex-out). */
static void put_json_bytes(const cli *c, const char *name, const uint8_t *p, size_t n)
{
    if (!c->hex_out && cli_is_utf8(p, n)) {
        printf("\"%s\":", name);
        cli_put_json_string(stdout, p, n);
    } else {
        printf("\"%s_hex\":\"", name);
        cli_put_hex(stdout, p, n);
        putchar('"');
    }
}

void cli_put_json_entry(const cli *c, const bitt_entry *e)
{
    size_t klen = 0, vlen = 0;
    const uint8_t *k = bitt_entry_key(e, &klen);
    const uint8_t *v = bitt_entry_value(e, &vlen);
    int kind = bitt_entry_kind(e);
    int64_t counter = 0;

    putchar('{');
    put_json_bytes(c, "key", k, klen);
    putchar(',');
    /* A JSON value is embedded as JSON and a counter as a number, so that
     * `jq .value` gives the value itself. */
    if (!c->hex_out && kind == BITT_KIND_COUNTER && bitt_entry_counter(e, &counter) == BITT_OK) {
        printf("\"value\":%" PRId64, counter);
    } else if (!c->hex_out && kind == BITT_KIND_JSON && vlen > 0 && cli_is_utf8(v, vlen)) {
        fputs("\"value\":", stdout);
        fwrite(v, 1, vlen, stdout);
    } else {
        put_json_bytes(c, "value", v, vlen);
    }

    cli_put_json_kind(kind);
    printf(",\"version\":%" PRIu64, bitt_entry_version(e));
    cli_put_json_time("expires_at", bitt_entry_expires_at(e));
    putchar('}');
}

void cli_put_json_kind(int kind)
{
    const char *name = cli_kind_name(kind);
    if (name)
        printf(",\"kind\":\"%s\"", name);
    else
        printf(",\"kind\":%d", kind);
}

void cli_put_json_time(const char *name, int64_t ms)
{
    /* Integers as the library has them, never through a double. */
    if (ms == 0)
        printf(",\"%s\":null", name);
    else
        printf(",\"%s\":%" PRId64, name, ms);
}

void cli_put_json_null(const cli *c)
{
    if (c->json)
        fputs("null\n", stdout);
}

/* Canonical decimal int64 text, as a counter holds: "0", "-42". */
static int is_integer_text(const uint8_t *p, size_t n)
{
    size_t i = n > 0 && p[0] == '-' ? 1 : 0;
    if (i >= n || n - i > 19 || (p[i] == '0' && n - i > 1))
        return 0;
    for (; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return 0;
    return 1;
}

void cli_put_json_value(const cli *c, const char *name, const uint8_t *p, size_t n, int kind)
{
    if (!c->hex_out && kind == BITT_KIND_COUNTER && is_integer_text(p, n)) {
        printf("\"%s\":", name);
        fwrite(p, 1, n, stdout);
    } else if (!c->hex_out && kind == BITT_KIND_JSON && n > 0 && cli_is_utf8(p, n)) {
        printf("\"%s\":", name);
        fwrite(p, 1, n, stdout);
    } else {
        put_json_bytes(c, name, p, n);
    }
}

void cli_put_json_text(const char *name, const char *s)
{
    printf("\"%s\":", name);
    if (s == NULL) {
        fputs("null", stdout);
        return;
    }
    size_t n = strlen(s);
    if (cli_is_utf8((const uint8_t *)s, n))
        cli_put_json_string(stdout, (const uint8_t *)s, n);
    else
        fputs("null", stdout);
}
