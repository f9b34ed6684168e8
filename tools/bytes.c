/*
 * bytes.c: any bytes in and out of a command line. Arguments are text or,
 * with --hex, hex digits; output is printable UTF-8 as it is, with every
 * other byte escaped as \xNN (and a backslash as \\), or hex.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int cli_hex_decode(const char *hex, uint8_t **out, size_t *out_len)
{
    size_t n = strlen(hex);
    *out = NULL;
    *out_len = 0;
    if (n % 2 != 0)
        return -1;
    uint8_t *buf = malloc(n / 2 + 1); /* + 1: never malloc(0) */
    if (buf == NULL)
        return -2;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hex_digit(hex[2 * i]);
        int lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(buf);
            return -1;
        }
        buf[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = buf;
    *out_len = n / 2;
    return 0;
}

int cli_bytes_arg(const cli *c, const char *cmd, const char *what, const char *arg, cli_bytes *out)
{
    memset(out, 0, sizeof(*out));
    if (!c->hex_in) {
        out->ptr = (const uint8_t *)arg;
        out->len = strlen(arg);
        return CLI_OK;
    }
    int rc = cli_hex_decode(arg, &out->owned, &out->len);
    if (rc == -2) {
        fputs("bitt: out of memory\n", stderr);
        return CLI_ERROR;
    }
    if (rc != 0)
        return cli_usage_error(cmd, "%s is not hex (an even number of 0-9a-f digits): '%s'", what,
                               arg);
    out->ptr = out->owned;
    return CLI_OK;
}

void cli_bytes_free(cli_bytes *b)
{
    free(b->owned);
    memset(b, 0, sizeof(*b));
}

/* The length of the UTF-8 sequence at p (1 to 4) with its code point, or 0
 * when it is not valid: overlong, a surrogate, past U+10FFFF, cut short. */
static size_t utf8_next(const uint8_t *p, size_t n, uint32_t *cp)
{
    uint8_t b = p[0];
    size_t len;
    uint32_t v, min;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if (b >= 0xc2 && b <= 0xdf) {
        len = 2, v = b & 0x1fu, min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
        len = 3, v = b & 0x0fu, min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4, v = b & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Not a C0 or C1 control character, nor DEL. */
static int printable(uint32_t cp)
{
    return cp >= 0x20 && cp != 0x7f && (cp < 0x80 || cp >= 0xa0);
}

int cli_is_utf8(const uint8_t *p, size_t n)
{
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_next(p + i, n - i, &cp);
        if (len == 0)
            return 0;
        i += len;
    }
    return 1;
}

int cli_is_text(const uint8_t *p, size_t n)
{
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_next(p + i, n - i, &cp);
        if (len == 0 || !(printable(cp) || cp == '\t' || cp == '\n'))
            return 0;
        i += len;
    }
    return 1;
}

void cli_put_hex(FILE *f, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        putc(digits[p[i] >> 4], f);
        putc(digits[p[i] & 0xf], f);
    }
}

void cli_put_escaped(FILE *f, const uint8_t *p, size_t n)
{
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_next(p + i, n - i, &cp);
        if (len > 0 && cp == '\\') {
            fputs("\\\\", f);
        } else if (len > 0 && printable(cp)) {
            fwrite(p + i, 1, len, f);
        } else {
            fprintf(f, "\\x%02x", p[i]);
            len = 1;
        }
        i += len;
    }
}

void cli_put_json_string(FILE *f, const uint8_t *p, size_t n)
{
    putc('"', f);
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        switch (b) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (b < 0x20 || b == 0x7f)
                fprintf(f, "\\u%04x", b);
            else
                putc(b, f);
        }
    }
    putc('"', f);
}
