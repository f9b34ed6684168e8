/* core/memory/ordered_map.c: an intrusive AVL tree keyed by bytes. */
#include <string.h>

#include "memory/ordered_map.h"

int bitt__omap_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

static inline int32_t height(const bitt_omap_node *n)
{
    return n ? n->height : 0;
}

static inline void update_height(bitt_omap_node *n)
{
    int32_t l = height(n->child[0]), r = height(n->child[1]);
    n->height = 1 + (l > r ? l : r);
}

/* Makes `now` the child of parent that `was` used to be (or the root). */
static inline void relink(bitt_omap *m, bitt_omap_node *parent, const bitt_omap_node *was,
                          bitt_omap_node *now)
{
    if (!parent)
        m->root = now;
    else if (parent->child[0] == was)
        parent->child[0] = now;
    else
        parent->child[1] = now;
}

/* Lifts n's child on side d into n's place; returns it. */
static bitt_omap_node *rotate(bitt_omap *m, bitt_omap_node *n, int d)
{
    bitt_omap_node *c = n->child[d];
    bitt_omap_node *inner = c->child[!d];
    bitt_omap_node *parent = n->parent;

    n->child[d] = inner;
    if (inner)
        inner->parent = n;
    c->child[!d] = n;
    n->parent = c;
    c->parent = parent;
    relink(m, parent, n, c);
    update_height(n);
    update_height(c);
    return c;
}

/* Restores the AVL balance at n (whose subtrees are balanced and differ in
 * height by at most 2); returns the subtree's new root. */
static bitt_omap_node *rebalance(bitt_omap *m, bitt_omap_node *n)
{
    int32_t diff = height(n->child[0]) - height(n->child[1]);
    if (diff >= -1 && diff <= 1) {
        update_height(n);
        return n;
    }
    int d = diff > 0 ? 0 : 1; /* the heavy side */
    bitt_omap_node *c = n->child[d];
    if (height(c->child[!d]) > height(c->child[d]))
        rotate(m, c, !d);
    return rotate(m, n, d);
}

/* Walks from n to the root fixing heights and balance; stops as soon as a
 * subtree keeps its former height, since nothing above can change then. */
static void retrace(bitt_omap *m, bitt_omap_node *n)
{
    while (n) {
        int32_t before = n->height;
        bitt_omap_node *top = rebalance(m, n);
        if (top->height == before)
            return;
        n = top->parent;
    }
}

bitt_omap_node *bitt__omap_find(const bitt_omap *m, const uint8_t *key, size_t len)
{
    bitt_omap_node *n = m->root;
    while (n) {
        int c = bitt__omap_cmp(key, len, n->key, n->key_len);
        if (!c)
            return n;
        n = n->child[c > 0];
    }
    return NULL;
}

bitt_omap_node *bitt__omap_insert(bitt_omap *m, bitt_omap_node *node)
{
    bitt_omap_node *parent = NULL, **link = &m->root;
    while (*link) {
        parent = *link;
        int c = bitt__omap_cmp(node->key, node->key_len, parent->key, parent->key_len);
        if (!c)
            return parent;
        link = &parent->child[c > 0];
    }
    node->child[0] = node->child[1] = NULL;
    node->parent = parent;
    node->height = 1;
    *link = node;
    m->count++;
    retrace(m, parent);
    return NULL;
}

void bitt__omap_replace(bitt_omap *m, bitt_omap_node *old, bitt_omap_node *node)
{
    if (old == node)
        return;
    *node = (bitt_omap_node){
        {old->child[0], old->child[1]}, old->parent, node->key, node->key_len, old->height,
    };
    for (int i = 0; i < 2; i++)
        if (node->child[i])
            node->child[i]->parent = node;
    relink(m, node->parent, old, node);
    old->child[0] = old->child[1] = old->parent = NULL;
}

void bitt__omap_remove(bitt_omap *m, bitt_omap_node *z)
{
    bitt_omap_node *parent = z->parent, *start;

    if (!z->child[0] || !z->child[1]) {
        /* At most one child: it takes z's place. */
        bitt_omap_node *c = z->child[0] ? z->child[0] : z->child[1];
        relink(m, parent, z, c);
        if (c)
            c->parent = parent;
        start = parent;
    } else {
        /* Two children: z's successor y (leftmost of the right subtree,
         * so it has no left child) leaves its spot and takes z's place. */
        bitt_omap_node *y = z->child[1];
        while (y->child[0])
            y = y->child[0];
        if (y == z->child[1]) {
            start = y; /* y keeps its right subtree */
        } else {
            bitt_omap_node *yp = y->parent, *x = y->child[1];
            yp->child[0] = x;
            if (x)
                x->parent = yp;
            y->child[1] = z->child[1];
            y->child[1]->parent = y;
            start = yp;
        }
        y->child[0] = z->child[0];
        y->child[0]->parent = y;
        y->parent = parent;
        y->height = z->height; /* the subtree's former height, for retrace */
        relink(m, parent, z, y);
    }
    z->child[0] = z->child[1] = z->parent = NULL;
    m->count--;
    retrace(m, start);
}

static bitt_omap_node *extreme(bitt_omap_node *n, int d)
{
    if (n)
        while (n->child[d])
            n = n->child[d];
    return n;
}

bitt_omap_node *bitt__omap_first(const bitt_omap *m)
{
    return extreme(m->root, 0);
}

bitt_omap_node *bitt__omap_last(const bitt_omap *m)
{
    return extreme(m->root, 1);
}

/* The neighbour of n on side d (1: next, 0: previous). */
static bitt_omap_node *step(const bitt_omap_node *n, int d)
{
    if (n->child[d])
        return extreme(n->child[d], !d);
    const bitt_omap_node *p = n->parent;
    while (p && p->child[d] == n) {
        n = p;
        p = p->parent;
    }
    return (bitt_omap_node *)p;
}

bitt_omap_node *bitt__omap_next(const bitt_omap_node *n)
{
    return step(n, 1);
}

bitt_omap_node *bitt__omap_prev(const bitt_omap_node *n)
{
    return step(n, 0);
}

/* The nearest node beyond key on side `up` (1: greater, 0: smaller), the
 * key itself included when `inclusive`. */
static bitt_omap_node *bound(const bitt_omap *m, const uint8_t *key, size_t len, int up,
                             int inclusive)
{
    bitt_omap_node *best = NULL, *n = m->root;
    while (n) {
        int c = bitt__omap_cmp(n->key, n->key_len, key, len);
        int beyond = up ? c > 0 : c < 0;
        if (beyond || (inclusive && !c)) {
            best = n;
            n = n->child[!up]; /* look for a nearer one */
        } else {
            n = n->child[up];
        }
    }
    return best;
}

bitt_omap_node *bitt__omap_ceil(const bitt_omap *m, const uint8_t *key, size_t len)
{
    return bound(m, key, len, 1, 1);
}

bitt_omap_node *bitt__omap_higher(const bitt_omap *m, const uint8_t *key, size_t len)
{
    return bound(m, key, len, 1, 0);
}

bitt_omap_node *bitt__omap_floor(const bitt_omap *m, const uint8_t *key, size_t len)
{
    return bound(m, key, len, 0, 1);
}

bitt_omap_node *bitt__omap_lower(const bitt_omap *m, const uint8_t *key, size_t len)
{
    return bound(m, key, len, 0, 0);
}

void bitt__omap_drain(bitt_omap *m, void (*fn)(bitt_omap_node *node, void *ctx), void *ctx)
{
    bitt_omap_node *n = m->root;
    m->root = NULL;
    m->count = 0;
    while (n) {
        if (n->child[0]) {
            n = n->child[0];
        } else if (n->child[1]) {
            n = n->child[1];
        } else {
            bitt_omap_node *p = n->parent;
            if (p)
                p->child[p->child[1] == n] = NULL;
            n->parent = NULL;
            fn(n, ctx);
            n = p;
        }
    }
}

/* Checks the subtree at n (whose parent must be `parent`); returns its
 * height, or -1 on a broken invariant. Recursion depth is the tree height
 * (under 1.45 log2 n), so it cannot run deep. */
static int32_t verify(const bitt_omap_node *n, const bitt_omap_node *parent, size_t *count)
{
    if (!n)
        return 0;
    if (n->parent != parent)
        return -1;
    for (int i = 0; i < 2; i++) {
        const bitt_omap_node *c = n->child[i];
        if (c && (bitt__omap_cmp(c->key, c->key_len, n->key, n->key_len) < 0) != !i)
            return -1;
    }
    int32_t l = verify(n->child[0], n, count);
    int32_t r = verify(n->child[1], n, count);
    if (l < 0 || r < 0 || l - r > 1 || r - l > 1)
        return -1;
    int32_t h = 1 + (l > r ? l : r);
    if (h != n->height)
        return -1;
    ++*count;
    return h;
}

int bitt__omap_verify(const bitt_omap *m)
{
    size_t count = 0;
    if (verify(m->root, NULL, &count) < 0 || count != m->count)
        return -1;
    /* Local order checks miss a key on the wrong side of a grandparent;
     * an in-order walk catches that. */
    const bitt_omap_node *prev = NULL;
    for (const bitt_omap_node *n = bitt__omap_first(m); n; n = bitt__omap_next(n)) {
        if (prev && bitt__omap_cmp(prev->key, prev->key_len, n->key, n->key_len) >= 0)
            return -1;
        prev = n;
    }
    return 0;
}
