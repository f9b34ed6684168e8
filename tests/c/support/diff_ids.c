/*
 * tests/c/support/diff_ids.c: queue message ids in a differential run
 * (diff.h). bitt promises ids that are unique and grow in enqueue order,
 * not consecutive ones: PostgreSQL's sequence skips the ids a failed
 * commit's enqueues drew. So on an ordered store each id is learnt where
 * the store hands it out (an enqueue, a delivery, a dead list) and must
 * keep the reference's order among all ids learnt; every other store must
 * give the reference's ids.
 */
#include <stdlib.h>
#include <string.h>

#include "diff.h"

size_t diff_vmap_lower(const struct diff_vmap *m, uint64_t ref)
{
    size_t lo = 0, hi = m->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->ref[mid] < ref)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

long diff_vmap_find(const struct diff_vmap *m, uint64_t ref)
{
    size_t at = diff_vmap_lower(m, ref);
    return at < m->count && m->ref[at] == ref ? (long)at : -1;
}

void diff_vmap_insert(diff_ctx *c, struct diff_vmap *m, size_t at, uint64_t ref, uint64_t got)
{
    if (m->count == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        uint64_t *r = realloc(m->ref, cap * sizeof *r);
        if (r)
            m->ref = r;
        uint64_t *g = realloc(m->got, cap * sizeof *g);
        if (g)
            m->got = g;
        if (!r || !g)
            diff_fail(c, "out of memory");
        m->cap = cap;
    }
    memmove(m->ref + at + 1, m->ref + at, (m->count - at) * sizeof *m->ref);
    memmove(m->got + at + 1, m->got + at, (m->count - at) * sizeof *m->got);
    m->ref[at] = ref;
    m->got[at] = got;
    m->count++;
}

void diff_same_id(diff_ctx *c, int i, uint64_t ref, uint64_t got, const char *what)
{
    if (!c->ordered_ids[i] || !ref || !got) {
        if (ref != got)
            diff_fail(c, "%s: id: %s gave %llu, %s gave %llu", what, c->names[i],
                      (unsigned long long)got, c->names[0], (unsigned long long)ref);
        return;
    }
    struct diff_vmap *m = &c->idmap[i];
    size_t at = diff_vmap_lower(m, ref);
    if (at < m->count && m->ref[at] == ref) {
        if (m->got[at] != got)
            diff_fail(c, "%s: id: %s gave %llu for %s's %llu, which was %llu before", what,
                      c->names[i], (unsigned long long)got, c->names[0], (unsigned long long)ref,
                      (unsigned long long)m->got[at]);
        return;
    }
    /* a new id: between the ids of the reference's neighbours */
    if ((at > 0 && m->got[at - 1] >= got) || (at < m->count && m->got[at] <= got))
        diff_fail(c, "%s: ids out of order: %s gave %llu for %s's %llu, and %llu for its %llu",
                  what, c->names[i], (unsigned long long)got, c->names[0], (unsigned long long)ref,
                  (unsigned long long)m->got[at > 0 ? at - 1 : at],
                  (unsigned long long)m->ref[at > 0 ? at - 1 : at]);
    diff_vmap_insert(c, m, at, ref, got);
}

uint64_t diff_id_for(const diff_ctx *c, int i, uint64_t ref)
{
    if (!c->ordered_ids[i])
        return ref;
    long at = diff_vmap_find(&c->idmap[i], ref);
    return at >= 0 ? c->idmap[i].got[at] : ref;
}

int diff_id_known(const diff_ctx *c, uint64_t ref)
{
    if (!ref || ref == DIFF_NO_ID)
        return 1;
    for (int i = 1; i < c->n; i++)
        if (c->ordered_ids[i] && diff_vmap_find(&c->idmap[i], ref) < 0)
            return 0;
    return 1;
}
