/*
 * List cursors. A cursor is base64url (no padding) of:
 *   0x01 (format) | 8-byte selector hash, big-endian | the last key returned
 * The hash binds a cursor to the selector that made it, so a cursor cannot
 * page past a prefix or be replayed against another range or direction.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CURSOR_FORMAT 1

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Mixes one optional byte string: presence, length, bytes. */
static uint64_t fnv_part(uint64_t h, const void *data, size_t len)
{
    uint8_t present = data != NULL;
    uint64_t n = len;
    h = fnv(h, &present, 1);
    if (!present)
        return h;
    h = fnv(h, &n, sizeof n);
    return fnv(h, data, len);
}

uint64_t bitt__selector_hash(const bitt_list_options *o)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv_part(h, o->prefix, o->prefix_len);
    h = fnv_part(h, o->start, o->start_len);
    h = fnv_part(h, o->end, o->end_len);
    uint8_t reverse = o->reverse != 0;
    return fnv(h, &reverse, 1);
}

int bitt__cursor_encode(uint64_t selector, const uint8_t *key, size_t key_len, char **out)
{
    size_t raw_len = 9 + key_len;
    uint8_t *raw = bitt__malloc(raw_len);
    char *text = bitt__malloc((raw_len + 2) / 3 * 4 + 1);
    if (!raw || !text) {
        free(raw);
        free(text);
        return bitt__fail(BITT_ENOMEM, "out of memory for a cursor");
    }
    raw[0] = CURSOR_FORMAT;
    for (int i = 0; i < 8; i++)
        raw[1 + i] = (uint8_t)(selector >> (56 - 8 * i));
    if (key_len)
        memcpy(raw + 9, key, key_len);
    size_t j = 0;
    for (size_t i = 0; i < raw_len; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16;
        if (i + 1 < raw_len)
            v |= (uint32_t)raw[i + 1] << 8;
        if (i + 2 < raw_len)
            v |= raw[i + 2];
        text[j++] = b64[(v >> 18) & 63];
        text[j++] = b64[(v >> 12) & 63];
        if (i + 1 < raw_len)
            text[j++] = b64[(v >> 6) & 63];
        if (i + 2 < raw_len)
            text[j++] = b64[v & 63];
    }
    text[j] = '\0';
    free(raw);
    *out = text;
    return BITT_OK;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

int bitt__cursor_decode(const char *text, uint64_t selector, size_t max_key, bitt_buf *key_out)
{
    key_out->len = 0;
    size_t n = strlen(text);
    /* 9 header bytes need 12 characters; a key can add at most max_key. */
    if (n < 12 || n % 4 == 1 || n > (9 + max_key + 2) / 3 * 4)
        return bitt__fail(BITT_ECURSOR, "cursor is malformed (length %zu)", n);
    uint8_t header[9];
    size_t got = 0;
    int rc = bitt__buf_reserve(key_out, n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i += 4) {
        size_t chunk = n - i < 4 ? n - i : 4;
        uint32_t v = 0;
        for (size_t k = 0; k < 4; k++) {
            int d = k < chunk ? b64_value(text[i + k]) : 0;
            if (d < 0)
                return bitt__fail(BITT_ECURSOR, "cursor is malformed (bad character)");
            v = v << 6 | (uint32_t)d;
        }
        /* Unused low bits of a short last chunk must be zero (canonical). */
        if ((chunk == 2 && (v & 0xffff)) || (chunk == 3 && (v & 0xff)))
            return bitt__fail(BITT_ECURSOR, "cursor is malformed (trailing bits)");
        for (size_t k = 0; k + 1 < chunk; k++) {
            uint8_t byte = (uint8_t)(v >> (16 - 8 * k));
            if (got < 9)
                header[got] = byte;
            else
                key_out->ptr[key_out->len++] = byte;
            got++;
        }
    }
    key_out->ptr[key_out->len] = '\0';
    /* The length bound above rounds up to whole base64 groups, so it lets
     * through a key of max_key + 1 bytes: refuse that here. */
    if (key_out->len > max_key)
        return bitt__fail(BITT_ECURSOR, "cursor is malformed (its key is over the key limit)");
    if (got < 9 || header[0] != CURSOR_FORMAT)
        return bitt__fail(BITT_ECURSOR, "cursor is malformed (unknown format)");
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = h << 8 | header[1 + i];
    if (h != selector)
        return bitt__fail(BITT_ECURSOR, "cursor belongs to another selector");
    return BITT_OK;
}
