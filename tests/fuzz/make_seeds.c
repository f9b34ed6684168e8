/*
 * make_seeds: writes the seed inputs of the fuzzers that need the library
 * to make them: encoded tuple pairs (fuzz_tuple), cursors from real list
 * pages with their selectors (fuzz_cursor) and operation sequences
 * (fuzz_diff). Run once by hand into tests/fuzz/corpus/; the files are
 * committed. Usage: make_seeds CORPUS_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitt.h"

static const char *g_dir;

static void save(const char *fuzzer, const char *name, const void *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", g_dir, fuzzer, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
        perror(path);
        exit(1);
    }
}

static void must(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "make_seeds: %s: %s\n", what, bitt_error_last());
        exit(1);
    }
}

/* ---- tuples: byte 0 = length of the first key, then both keys ---------- */

static void tuple_a(bitt_buf *k, int variant)
{
    switch (variant) {
    case 0:
        must(bitt_tuple_push_string(k, "users", 5), "push");
        must(bitt_tuple_push_int(k, 42), "push");
        break;
    case 1:
        must(bitt_tuple_push_string(k, "users", 5), "push");
        must(bitt_tuple_push_int(k, 42), "push");
        must(bitt_tuple_push_string(k, "name", 4), "push");
        break;
    case 2: must(bitt_tuple_push_bytes(k, "a\0b", 3), "push"); break;
    case 3:
        must(bitt_tuple_push_float(k, -1.5), "push");
        must(bitt_tuple_push_float(k, 0.0), "push");
        break;
    case 4:
        must(bitt_tuple_push_bool(k, 0), "push");
        must(bitt_tuple_push_bool(k, 1), "push");
        break;
    case 5:
        must(bitt_tuple_push_int(k, INT64_MIN), "push");
        must(bitt_tuple_push_int(k, INT64_MAX), "push");
        break;
    case 6: must(bitt_tuple_push_string(k, "\xc3\xa9t\xc3\xa9", 6), "push"); break;
    case 7:
        must(bitt_tuple_push_bytes(k, "", 0), "push");
        must(bitt_tuple_push_string(k, "", 0), "push");
        break;
    default:
        must(bitt_tuple_push_float(k, 1e308), "push");
        must(bitt_tuple_push_int(k, -1), "push");
        break;
    }
}

static void tuples(void)
{
    for (int a = 0; a < 9; a++) {
        int b = (a * 5 + 3) % 9;
        bitt_buf ka = BITT_BUF_INIT, kb = BITT_BUF_INIT;
        tuple_a(&ka, a);
        tuple_a(&kb, b);
        uint8_t buf[512];
        buf[0] = (uint8_t)ka.len;
        memcpy(buf + 1, ka.ptr, ka.len);
        memcpy(buf + 1 + ka.len, kb.ptr, kb.len);
        char name[32];
        snprintf(name, sizeof name, "pair-%d-%d", a, b);
        save("tuple", name, buf, 1 + ka.len + kb.len);
        bitt_buf_dispose(&ka);
        bitt_buf_dispose(&kb);
    }
}

/* ---- cursors: flags, three lengths, the selector's bytes, the cursor --- */

static void cursors(void)
{
    bitt_store *s;
    must(bitt_store_open("memory:", &s), "open");
    static const char *const keys[] = {"", "a", "ab", "abc", "b", "\xff", "a\xff", "ba"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        must(bitt_kv_set(s, keys[i], strlen(keys[i]), "v", 1, BITT_KIND_BYTES, 0, NULL), "set");
    struct {
        unsigned flags;
        const char *prefix, *start, *end;
    } sels[] = {
        {0, "", "", ""},  {8, "", "", ""},   {1, "a", "", ""},        {9, "a", "", ""},
        {2, "", "a", ""}, {6, "", "a", "b"}, {7, "a", "ab", "a\xff"}, {14, "", "", "\xff"},
    };
    for (size_t i = 0; i < sizeof sels / sizeof *sels; i++) {
        bitt_list_options o = BITT_LIST_OPTIONS_INIT;
        uint8_t buf[256];
        size_t at = 4;
        const char *parts[3] = {sels[i].prefix, sels[i].start, sels[i].end};
        const void **ptrs[3] = {&o.prefix, &o.start, &o.end};
        size_t *lens[3] = {&o.prefix_len, &o.start_len, &o.end_len};
        buf[0] = (uint8_t)sels[i].flags;
        for (int j = 0; j < 3; j++) {
            size_t n = strlen(parts[j]);
            buf[1 + j] = (uint8_t)n;
            if (!(sels[i].flags & (1u << j)))
                continue;
            *ptrs[j] = parts[j];
            *lens[j] = n;
            memcpy(buf + at, parts[j], n);
            at += n;
        }
        o.reverse = (sels[i].flags & 8) != 0;
        o.limit = 1; /* the fuzzer lists 3 at a time; any page's cursor resumes */
        bitt_entries *page;
        must(bitt_kv_list(s, &o, &page), "list");
        const char *cursor = bitt_entries_cursor(page);
        if (cursor) {
            memcpy(buf + at, cursor, strlen(cursor));
            at += strlen(cursor);
            char name[32];
            snprintf(name, sizeof name, "page-%zu", i);
            save("cursor", name, buf, at);
        }
        bitt_entries_free(page);
    }
    bitt_store_close(s);
}

/* ---- operation sequences: random bytes of a few lengths ---------------- */

static void sequences(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 12; i++) {
        uint8_t buf[400];
        size_t n = 40 + (size_t)i * 30;
        for (size_t j = 0; j < n; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[j] = (uint8_t)x;
        }
        char name[32];
        snprintf(name, sizeof name, "ops-%02d", i);
        save("diff", name, buf, n);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds CORPUS_DIR\n");
        return 2;
    }
    g_dir = argv[1];
    tuples();
    cursors();
    sequences();
    return 0;
}
