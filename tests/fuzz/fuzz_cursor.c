/*
 * fuzz_cursor: list cursors (core/cursor.c, core/list.c).
 *
 * Input layout: byte 0 holds flags (1 prefix, 2 start, 4 end, 8 reverse),
 * bytes 1..3 the lengths (mod 8) of prefix, start and end, which follow;
 * the rest is the cursor text (cut at its first NUL). The properties:
 *  - decoding gives BITT_OK or BITT_ECURSOR, never reads out of range (ASan);
 *  - a decoded cursor names a key no longer than the key limit and encodes
 *    back to the same text (one spelling per cursor);
 *  - bitt_kv_list on a store with that selector and cursor gives BITT_OK, a
 *    refusal of the selector (EINVAL) or BITT_ECURSOR, and a page whose keys
 *    all follow (or, reversed, precede) the cursor's key inside the range.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_cursor: %s\n", what);
    abort();
}

static int compare(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : (al > bl) - (al < bl);
}

static bitt_store *g_store;

/* A few keys around the usual selector bytes, so pages are not empty. */
static void fill(bitt_store *s)
{
    static const char *const keys[] = {"", "a", "ab", "b", "\xff", "a\xff", "ba"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (bitt_kv_set(s, keys[i], strlen(keys[i]), "v", 1, BITT_KIND_BYTES, 0, NULL))
            fail("cannot fill the store");
    if (bitt_kv_set(s, "a\0b", 3, "v", 1, BITT_KIND_BYTES, 0, NULL))
        fail("cannot fill the store");
}

static void check_page(const bitt_entries *page, const bitt_buf *key, int reverse)
{
    for (size_t i = 0; i < bitt_entries_count(page); i++) {
        size_t n;
        const uint8_t *k = bitt_entry_key(bitt_entries_at(page, i), &n);
        int c = compare(k, n, key->ptr, key->len);
        if (reverse ? c >= 0 : c <= 0)
            fail("a page after a cursor holds a key on the wrong side of it");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_store) {
        if (bitt_store_open("memory:", &g_store))
            fail("cannot open a memory store");
        fill(g_store);
    }
    if (size < 4)
        return 0;
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    size_t lens[3] = {data[1] % 8u, data[2] % 8u, data[3] % 8u}, at = 4;
    const void **ptrs[3] = {&o.prefix, &o.start, &o.end};
    size_t *len_out[3] = {&o.prefix_len, &o.start_len, &o.end_len};
    for (int i = 0; i < 3; i++) {
        if (!(data[0] & (1u << i)))
            continue;
        size_t n = lens[i] < size - at ? lens[i] : size - at;
        *ptrs[i] = data + at;
        *len_out[i] = n;
        at += n;
    }
    o.reverse = (data[0] & 8) != 0;
    o.limit = 3;

    size_t text_len = strnlen((const char *)data + at, size - at);
    char *text = malloc(text_len + 1);
    if (!text)
        fail("out of memory");
    memcpy(text, data + at, text_len);
    text[text_len] = '\0';

    bitt_buf key = BITT_BUF_INIT;
    uint64_t selector = bitt__selector_hash(&o);
    int rc = bitt__cursor_decode(text, selector, BITT_DEFAULT_MAX_KEY_SIZE, &key);
    if (rc != BITT_OK && rc != BITT_ECURSOR)
        fail("decoding a cursor gave a status other than OK or ECURSOR");
    if (rc == BITT_OK) {
        if (key.len > BITT_DEFAULT_MAX_KEY_SIZE)
            fail("a cursor names a key over the key limit");
        char *again = NULL;
        if (bitt__cursor_encode(selector, key.ptr, key.len, &again))
            fail("a decoded cursor does not encode again");
        if (strcmp(again, text))
            fail("a decoded cursor encodes to another text");
        free(again);
    }

    o.cursor = text;
    bitt_entries *page = NULL;
    int lrc = bitt_kv_list(g_store, &o, &page);
    if (lrc != BITT_OK && lrc != BITT_ECURSOR && lrc != BITT_EINVAL)
        fail("listing with a cursor gave an unexpected status");
    if (lrc == BITT_EINVAL && rc == BITT_OK && !strstr(bitt_error_last(), "outside the prefix"))
        fail("a list with a decodable cursor was refused with EINVAL for another reason");
    if (lrc == BITT_OK) {
        if (rc != BITT_OK)
            fail("a list accepted a cursor the decoder refuses");
        check_page(page, &key, o.reverse);
    }
    bitt_entries_free(page);
    bitt_buf_dispose(&key);
    free(text);
    return 0;
}
