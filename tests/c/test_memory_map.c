/*
 * Unit tests of the memory backend's ordered map (core/memory/ordered_map.c):
 * insert, replace, remove, bounds, iteration both ways, and a randomized
 * comparison against a plain sorted array.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memory/ordered_map.h"

/* A test item: the node and its key in one allocation. */
typedef struct item {
    bitt_omap_node node;
    int value;
    size_t len;
    uint8_t key[];
} item;

static item *item_new(const void *key, size_t len, int value)
{
    item *it = malloc(sizeof *it + len + 1);
    assert_non_null(it);
    memcpy(it->key, key, len);
    it->key[len] = 0; /* so tests can print keys */
    it->len = len;
    it->value = value;
    it->node.key = it->key;
    it->node.key_len = (uint32_t)len;
    return it;
}

static item *item_of(bitt_omap_node *n)
{
    return n ? (item *)((char *)n - offsetof(item, node)) : NULL;
}

static void free_node(bitt_omap_node *n, void *ctx)
{
    ++*(size_t *)ctx;
    free(item_of(n));
}

static void drain(bitt_omap *m)
{
    size_t expect = m->count, freed = 0;
    bitt__omap_drain(m, free_node, &freed);
    assert_int_equal(freed, expect);
    assert_null(m->root);
    assert_int_equal(m->count, 0);
}

static item *put(bitt_omap *m, const char *key, int value)
{
    item *it = item_new(key, strlen(key), value);
    bitt_omap_node *old = bitt__omap_insert(m, &it->node);
    if (old) {
        bitt__omap_replace(m, old, &it->node);
        free(item_of(old));
    }
    assert_int_equal(bitt__omap_verify(m), 0);
    return it;
}

static int get(const bitt_omap *m, const char *key)
{
    item *it = item_of(bitt__omap_find(m, (const uint8_t *)key, strlen(key)));
    return it ? it->value : -1;
}

static const char *key_of(bitt_omap_node *n)
{
    return n ? (const char *)item_of(n)->key : NULL;
}

/* The keys from n onwards (dir 1) or backwards (dir 0), joined by ','. */
static void walk(bitt_omap_node *n, int dir, char *out, size_t cap)
{
    out[0] = '\0';
    for (; n; n = dir ? bitt__omap_next(n) : bitt__omap_prev(n)) {
        item *it = item_of(n);
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%.*s", used ? "," : "", (int)it->len,
                 (const char *)it->key);
    }
}

static void test_order_is_bytewise_shorter_first(void **state)
{
    (void)state;
    const uint8_t a[] = {0x61}, ab[] = {0x61, 0x62}, a0[] = {0x61, 0x00}, hi[] = {0xff};
    assert_true(bitt__omap_cmp(NULL, 0, a, 1) < 0); /* the empty key is first */
    assert_true(bitt__omap_cmp(NULL, 0, NULL, 0) == 0);
    assert_true(bitt__omap_cmp(a, 1, ab, 2) < 0);
    assert_true(bitt__omap_cmp(a, 1, a0, 2) < 0);
    assert_true(bitt__omap_cmp(a0, 2, ab, 2) < 0);
    assert_true(bitt__omap_cmp(hi, 1, ab, 2) > 0); /* unsigned bytes */
    assert_true(bitt__omap_cmp(ab, 2, ab, 2) == 0);
}

static void test_insert_replace_remove(void **state)
{
    (void)state;
    bitt_omap m = {0};
    assert_null(bitt__omap_first(&m));
    assert_null(bitt__omap_last(&m));
    assert_null(bitt__omap_find(&m, (const uint8_t *)"x", 1));

    put(&m, "b", 1);
    put(&m, "a", 2);
    put(&m, "c", 3);
    put(&m, "", 4);
    assert_int_equal(m.count, 4);
    assert_int_equal(get(&m, "a"), 2);
    assert_int_equal(get(&m, ""), 4);
    assert_int_equal(get(&m, "d"), -1);

    /* Insert of an existing key returns the node there and changes nothing. */
    item *dup = item_new("a", 1, 99);
    assert_ptr_equal(bitt__omap_insert(&m, &dup->node), bitt__omap_find(&m, dup->key, 1));
    assert_int_equal(get(&m, "a"), 2);
    assert_int_equal(m.count, 4);
    free(dup);

    /* Replace puts the new node in the old one's place. */
    item *b2 = put(&m, "b", 10);
    assert_int_equal(m.count, 4);
    assert_int_equal(get(&m, "b"), 10);
    assert_ptr_equal(bitt__omap_find(&m, (const uint8_t *)"b", 1), &b2->node);

    /* Remove a leaf, a node with two children, the root, the last one. */
    const char *order[] = {"c", "b", "", "a"};
    for (size_t i = 0; i < 4; i++) {
        bitt_omap_node *n = bitt__omap_find(&m, (const uint8_t *)order[i], strlen(order[i]));
        assert_non_null(n);
        bitt__omap_remove(&m, n);
        free(item_of(n));
        assert_int_equal(bitt__omap_verify(&m), 0);
        assert_int_equal(m.count, 3 - i);
        assert_int_equal(get(&m, order[i]), -1);
    }
    assert_null(m.root);
}

static void test_keys_with_nul_and_high_bytes(void **state)
{
    (void)state;
    bitt_omap m = {0};
    const uint8_t k1[] = {'a', 0, 'b'}, k2[] = {'a', 0}, k3[] = {'a', 0xff}, k4[] = {'a'};
    const uint8_t *keys[] = {k1, k2, k3, k4};
    size_t lens[] = {3, 2, 2, 1};
    for (int i = 0; i < 4; i++)
        assert_null(bitt__omap_insert(&m, &item_new(keys[i], lens[i], i)->node));
    assert_int_equal(bitt__omap_verify(&m), 0);
    int expect[] = {3, 1, 0, 2}; /* a, a\0, a\0b, a\xff */
    int i = 0;
    for (bitt_omap_node *n = bitt__omap_first(&m); n; n = bitt__omap_next(n))
        assert_int_equal(item_of(n)->value, expect[i++]);
    assert_int_equal(i, 4);
    drain(&m);
}

static void test_iteration_from_bounds(void **state)
{
    (void)state;
    bitt_omap m = {0};
    const char *keys[] = {"b", "d", "f", "h", "dd", "d0"};
    for (size_t i = 0; i < 6; i++)
        put(&m, keys[i], (int)i);
    char buf[256];

    walk(bitt__omap_first(&m), 1, buf, sizeof buf);
    assert_string_equal(buf, "b,d,d0,dd,f,h");
    walk(bitt__omap_last(&m), 0, buf, sizeof buf);
    assert_string_equal(buf, "h,f,dd,d0,d,b");

    const uint8_t *d = (const uint8_t *)"d", *e = (const uint8_t *)"e";
    assert_string_equal(key_of(bitt__omap_ceil(&m, d, 1)), "d");
    assert_string_equal(key_of(bitt__omap_higher(&m, d, 1)), "d0");
    assert_string_equal(key_of(bitt__omap_floor(&m, d, 1)), "d");
    assert_string_equal(key_of(bitt__omap_lower(&m, d, 1)), "b");
    assert_string_equal(key_of(bitt__omap_ceil(&m, e, 1)), "f");
    assert_string_equal(key_of(bitt__omap_floor(&m, e, 1)), "dd");
    assert_string_equal(key_of(bitt__omap_lower(&m, e, 1)), "dd");

    /* Ascending from a bound, descending from just below one. */
    walk(bitt__omap_ceil(&m, d, 1), 1, buf, sizeof buf);
    assert_string_equal(buf, "d,d0,dd,f,h");
    walk(bitt__omap_lower(&m, (const uint8_t *)"f", 1), 0, buf, sizeof buf);
    assert_string_equal(buf, "dd,d0,d,b");

    /* Past either end. */
    assert_null(bitt__omap_ceil(&m, (const uint8_t *)"i", 1));
    assert_null(bitt__omap_higher(&m, (const uint8_t *)"h", 1));
    assert_null(bitt__omap_lower(&m, (const uint8_t *)"b", 1));
    assert_null(bitt__omap_floor(&m, (const uint8_t *)"a", 1));
    assert_string_equal(key_of(bitt__omap_ceil(&m, NULL, 0)), "b");
    assert_null(bitt__omap_lower(&m, NULL, 0));
    drain(&m);
}

static void test_sequential_keys_stay_balanced(void **state)
{
    (void)state;
    bitt_omap m = {0};
    char key[32];
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "key:%08d", i);
        assert_null(bitt__omap_insert(&m, &item_new(key, strlen(key), i)->node));
    }
    assert_int_equal(bitt__omap_verify(&m), 0);
    /* An AVL tree of n nodes is at most 1.44 log2(n) high: 24 for 100k. */
    assert_true(m.root->height <= 24);
    for (int i = 0; i < n; i += 2) {
        snprintf(key, sizeof key, "key:%08d", i);
        bitt_omap_node *node = bitt__omap_find(&m, (const uint8_t *)key, strlen(key));
        assert_non_null(node);
        bitt__omap_remove(&m, node);
        free(item_of(node));
    }
    assert_int_equal(bitt__omap_verify(&m), 0);
    assert_int_equal(m.count, (size_t)n / 2);
    int expect = 1;
    for (bitt_omap_node *node = bitt__omap_first(&m); node; node = bitt__omap_next(node)) {
        assert_int_equal(item_of(node)->value, expect);
        expect += 2;
    }
    drain(&m);
}

/* ---- randomized comparison against a sorted array ----------------------- */

typedef struct model_key {
    uint8_t bytes[4];
    size_t len;
} model_key;

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Keys of 0 to 3 bytes over an alphabet of `symbols` bytes (at most 20),
 * with NUL and bytes above 0x7f among them: many collisions and prefixes. */
static model_key random_key(unsigned symbols)
{
    static const uint8_t alphabet[20] = {0x00, 0xff, 0x01, 0x80, 0x7f, 'a', 'b', 'c', 'd', 'e',
                                         'f',  'g',  'h',  'i',  'j',  'k', 'l', 'm', 'n', 'o'};
    model_key k;
    k.len = rnd() % 4;
    for (size_t i = 0; i < k.len; i++)
        k.bytes[i] = alphabet[rnd() % symbols];
    return k;
}

static int model_cmp(const model_key *a, const model_key *b)
{
    return bitt__omap_cmp(a->bytes, a->len, b->bytes, b->len);
}

/* The sorted model: keys[i] holds values[i]. Returns the index of the
 * first key >= k; *found tells whether it equals k. */
static size_t model_search(const model_key *keys, size_t n, const model_key *k, int *found)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (model_cmp(&keys[mid], k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < n && model_cmp(&keys[lo], k) == 0;
    return lo;
}

static void expect_node(bitt_omap_node *n, const model_key *keys, const int *values, size_t n_keys,
                        size_t idx)
{
    if (idx >= n_keys) {
        assert_null(n);
        return;
    }
    assert_non_null(n);
    item *it = item_of(n);
    assert_int_equal(it->len, keys[idx].len);
    assert_memory_equal(it->key, keys[idx].bytes, it->len);
    assert_int_equal(it->value, values[idx]);
}

/* OPS random inserts, replaces, removes and bound lookups, each checked
 * against the sorted array; keys from an alphabet of `symbols` bytes. */
static void run_randomized(unsigned symbols)
{
    enum { OPS = 10000 };
    size_t max_keys = 1 + symbols + symbols * symbols + symbols * symbols * symbols;
    model_key *keys = malloc(max_keys * sizeof *keys);
    int *values = malloc(max_keys * sizeof *values);
    assert_non_null(keys);
    assert_non_null(values);
    size_t n = 0;
    bitt_omap m = {0};

    for (int op = 0; op < OPS; op++) {
        model_key k = random_key(symbols);
        int found;
        size_t at = model_search(keys, n, &k, &found);
        uint32_t what = rnd() % 10;

        if (what < 4) { /* insert or replace */
            int value = (int)(rnd() % 1000000);
            item *it = item_new(k.bytes, k.len, value);
            bitt_omap_node *old = bitt__omap_insert(&m, &it->node);
            assert_int_equal(old != NULL, found);
            if (old) {
                bitt__omap_replace(&m, old, &it->node);
                free(item_of(old));
                values[at] = value;
            } else {
                memmove(&keys[at + 1], &keys[at], (n - at) * sizeof *keys);
                memmove(&values[at + 1], &values[at], (n - at) * sizeof *values);
                keys[at] = k;
                values[at] = value;
                n++;
            }
        } else if (what < 7) { /* remove */
            bitt_omap_node *node = bitt__omap_find(&m, k.bytes, k.len);
            assert_int_equal(node != NULL, found);
            if (node) {
                bitt__omap_remove(&m, node);
                free(item_of(node));
                memmove(&keys[at], &keys[at + 1], (n - at - 1) * sizeof *keys);
                memmove(&values[at], &values[at + 1], (n - at - 1) * sizeof *values);
                n--;
            }
        } else { /* bounds, and a short walk from each in its direction */
            size_t after = found ? at + 1 : at; /* first > k */
            bitt_omap_node *ceil = bitt__omap_ceil(&m, k.bytes, k.len);
            bitt_omap_node *higher = bitt__omap_higher(&m, k.bytes, k.len);
            bitt_omap_node *floor = bitt__omap_floor(&m, k.bytes, k.len);
            bitt_omap_node *lower = bitt__omap_lower(&m, k.bytes, k.len);
            expect_node(ceil, keys, values, n, at);
            expect_node(higher, keys, values, n, after);
            expect_node(floor, keys, values, n, after ? after - 1 : SIZE_MAX);
            expect_node(lower, keys, values, n, at ? at - 1 : SIZE_MAX);
            expect_node(bitt__omap_find(&m, k.bytes, k.len), keys, values, n,
                        found ? at : SIZE_MAX);
            for (size_t i = at; ceil && i < at + 5; i++) {
                expect_node(ceil, keys, values, n, i);
                ceil = ceil ? bitt__omap_next(ceil) : NULL;
            }
            for (size_t i = at; lower && i > 0 && i + 5 > at; i--) {
                expect_node(lower, keys, values, n, i - 1);
                lower = lower ? bitt__omap_prev(lower) : NULL;
            }
        }
        assert_int_equal(m.count, n);
        if (op % 100 == 0)
            assert_int_equal(bitt__omap_verify(&m), 0);
    }

    /* A full walk each way matches the model. */
    assert_int_equal(bitt__omap_verify(&m), 0);
    size_t i = 0;
    for (bitt_omap_node *node = bitt__omap_first(&m); node; node = bitt__omap_next(node))
        expect_node(node, keys, values, n, i++);
    assert_int_equal(i, n);
    for (bitt_omap_node *node = bitt__omap_last(&m); node; node = bitt__omap_prev(node))
        expect_node(node, keys, values, n, --i);
    assert_int_equal(i, 0);
    drain(&m);
    free(keys);
    free(values);
}

/* Five symbols: a small map (at most 156 keys) where most ops collide. */
static void test_randomized_small_key_space(void **state)
{
    (void)state;
    run_randomized(5);
}

/* Twenty symbols: a map of thousands of keys, deep enough for every
 * rotation case. */
static void test_randomized_large_key_space(void **state)
{
    (void)state;
    run_randomized(20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_is_bytewise_shorter_first),
        cmocka_unit_test(test_insert_replace_remove),
        cmocka_unit_test(test_keys_with_nul_and_high_bytes),
        cmocka_unit_test(test_iteration_from_bounds),
        cmocka_unit_test(test_sequential_keys_stay_balanced),
        cmocka_unit_test(test_randomized_small_key_space),
        cmocka_unit_test(test_randomized_large_key_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
