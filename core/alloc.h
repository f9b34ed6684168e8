/*
 * core/alloc.h: every heap allocation of the core and the backends goes
 * through these, so a fault-injection build (CMake BITT_FAULT_INJECTION=ON,
 * core/fault/) can fail the N-th one and the tests can prove that each
 * failure ends in a clean BITT_ENOMEM with nothing half-written and nothing
 * leaked. In a normal build they are the libc calls, inlined: zero cost.
 */
#ifndef BITT_ALLOC_H
#define BITT_ALLOC_H

#include <stdlib.h>
#include <string.h>

#ifdef BITT_FAULT_INJECTION
/* 1 when this allocation is the one armed to fail (core/fault/alloc.c). */
int bitt__fault_alloc_fails(void);
#else
static inline int bitt__fault_alloc_fails(void)
{
    return 0;
}
#endif

static inline void *bitt__malloc(size_t n)
{
    return bitt__fault_alloc_fails() ? NULL : malloc(n);
}

static inline void *bitt__calloc(size_t count, size_t size)
{
    return bitt__fault_alloc_fails() ? NULL : calloc(count, size);
}

/* Like realloc: on failure ptr is untouched and still owned by the caller. */
static inline void *bitt__realloc(void *ptr, size_t n)
{
    return bitt__fault_alloc_fails() ? NULL : realloc(ptr, n);
}

static inline char *bitt__strdup(const char *s)
{
    return bitt__fault_alloc_fails() ? NULL : strdup(s);
}

static inline char *bitt__strndup(const char *s, size_t n)
{
    return bitt__fault_alloc_fails() ? NULL : strndup(s, n);
}

#endif /* BITT_ALLOC_H */
