/*
 * core/fiber.h: the stacks and stack switches of cooperative fibers
 * (core/batch.c runs calls on them; the Node addon's fibers.hpp too).
 *
 * On x86-64 a dozen instructions save the callee-saved registers and swap
 * stack pointers; elsewhere ucontext does it (a signal mask syscall per
 * switch, still far cheaper than handing a call to another thread).
 *
 * Internal (hidden) API, usable from C++ (the Node addon compiles the core
 * in).
 */
#ifndef BITT_FIBER_H
#define BITT_FIBER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__x86_64__) && !defined(BITT_FIBER_UCONTEXT)
typedef struct bitt__fiber_ctx {
    void *sp;
} bitt__fiber_ctx;
#else
#include <ucontext.h>
typedef struct bitt__fiber_ctx {
    ucontext_t uc;
} bitt__fiber_ctx;
#endif

/* A context that starts entry() on the stack [stack, stack + size).
 * entry() must never return: it switches away for the last time. */
void bitt__fiber_ctx_init(bitt__fiber_ctx *ctx, void *stack, size_t size, void (*entry)(void));

/* Saves the running context into from and resumes to. */
void bitt__fiber_ctx_switch(bitt__fiber_ctx *from, bitt__fiber_ctx *to);

/* A fiber stack: a private mapping of size usable bytes with a guard page
 * below it (an overflow faults instead of writing over other memory).
 * NULL when it cannot be made. */
typedef struct bitt__fiber_stack {
    void *map;   /* the mapping, guard page first */
    size_t len;  /* of the mapping */
    void *base;  /* the usable bytes */
    size_t size; /* of them */
    unsigned valgrind_id;
} bitt__fiber_stack;

int bitt__fiber_stack_new(bitt__fiber_stack *st, size_t size);
void bitt__fiber_stack_free(bitt__fiber_stack *st);

#ifdef __cplusplus
}
#endif

#endif
