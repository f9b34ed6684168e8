/*
 * core/memory/ordered_map.h: an ordered map keyed by arbitrary bytes.
 *
 * An intrusive AVL tree with parent pointers. The caller embeds a
 * bitt_omap_node in its own struct (so one allocation holds the node, the
 * key and whatever else), points node->key at the key bytes, and gets its
 * struct back with container-of arithmetic. The map never allocates, so
 * insert, replace and remove cannot fail.
 *
 * Keys order as memcmp() over the common length, a shorter key before its
 * extensions. Lookup, insert and remove are O(log n); next/prev are O(1)
 * amortised, so a walk from any bound in either direction is cheap.
 */
#ifndef BITT_MEMORY_ORDERED_MAP_H
#define BITT_MEMORY_ORDERED_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct bitt_omap_node {
    struct bitt_omap_node *child[2]; /* [0] smaller keys, [1] greater keys */
    struct bitt_omap_node *parent;
    const uint8_t *key; /* set by the caller before insert; must not change */
    uint32_t key_len;
    int32_t height; /* of the subtree rooted here; a leaf is 1 */
} bitt_omap_node;

typedef struct bitt_omap {
    bitt_omap_node *root;
    size_t count;
} bitt_omap;

/* An empty map is all zeroes: bitt_omap m = {0}; */

/* <0, 0, >0 as (a, alen) orders before, with, after (b, blen). */
int bitt__omap_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* The node whose key equals (key, len), or NULL. */
bitt_omap_node *bitt__omap_find(const bitt_omap *m, const uint8_t *key, size_t len);

/* Inserts node (its key and key_len set; key_len < 2^32). When a node with
 * an equal key is already there, returns it and leaves the map unchanged;
 * otherwise links node in and returns NULL. */
bitt_omap_node *bitt__omap_insert(bitt_omap *m, bitt_omap_node *node);

/* Puts node where old is (their keys must be equal); old is unlinked. */
void bitt__omap_replace(bitt_omap *m, bitt_omap_node *old, bitt_omap_node *node);

/* Unlinks node, which must be in m. The caller still owns it. */
void bitt__omap_remove(bitt_omap *m, bitt_omap_node *node);

/* The smallest / greatest node, or NULL when the map is empty. */
bitt_omap_node *bitt__omap_first(const bitt_omap *m);
bitt_omap_node *bitt__omap_last(const bitt_omap *m);
/* The node after / before n in key order, or NULL. */
bitt_omap_node *bitt__omap_next(const bitt_omap_node *n);
bitt_omap_node *bitt__omap_prev(const bitt_omap_node *n);

/* Bounds: the first node >= key (ceil), > key (higher), and the last node
 * <= key (floor), < key (lower); NULL when there is none. */
bitt_omap_node *bitt__omap_ceil(const bitt_omap *m, const uint8_t *key, size_t len);
bitt_omap_node *bitt__omap_higher(const bitt_omap *m, const uint8_t *key, size_t len);
bitt_omap_node *bitt__omap_floor(const bitt_omap *m, const uint8_t *key, size_t len);
bitt_omap_node *bitt__omap_lower(const bitt_omap *m, const uint8_t *key, size_t len);

/* Empties the map in O(n), calling fn on every node after unlinking it
 * (children before parents), so fn may free the node. */
void bitt__omap_drain(bitt_omap *m, void (*fn)(bitt_omap_node *node, void *ctx), void *ctx);

/* Checks every invariant (order, parent links, heights, AVL balance,
 * count); returns 0 when all hold, -1 otherwise. For tests. */
int bitt__omap_verify(const bitt_omap *m);

#endif /* BITT_MEMORY_ORDERED_MAP_H */
