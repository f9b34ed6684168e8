/*
 * fiber_switch.hpp: switching between the event loop's stack and a fiber's
 * (fibers.hpp). On x86-64 a dozen instructions save the callee-saved
 * registers and swap stack pointers; elsewhere ucontext does it (a signal
 * mask syscall per switch, still far cheaper than a thread hand-off).
 *
 *   bittw_ctx_init(ctx, stack, size, entry)  a context that starts entry()
 *   bittw_ctx_switch(from, to)               saves into from, resumes to
 *
 * entry() must never return: it switches away for the last time.
 */
#ifndef BITT_NODE_FIBER_SWITCH_HPP
#define BITT_NODE_FIBER_SWITCH_HPP

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && !defined(BITT_NODE_UCONTEXT)

struct BittwCtx {
    void *sp = nullptr;
};

/* bittw_ctx_swap(&save_sp, new_sp): System V callee-saved registers on the
 * old stack, then the new stack's. */
extern "C" void bittw_ctx_swap(void **save_sp, void *new_sp);
__asm__(".text\n"
        ".globl bittw_ctx_swap\n"
        ".hidden bittw_ctx_swap\n"
        ".type bittw_ctx_swap,@function\n"
        "bittw_ctx_swap:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size bittw_ctx_swap,.-bittw_ctx_swap\n");

static inline void bittw_ctx_init(BittwCtx *ctx, void *stack, size_t size, void (*entry)(void))
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = nullptr;        /* entry's return address: it never returns */
    *--sp = (void *)entry;  /* where bittw_ctx_swap's ret goes */
    for (int i = 0; i < 6; i++)
        *--sp = nullptr;    /* rbp rbx r12 r13 r14 r15 */
    ctx->sp = sp;
}

static inline void bittw_ctx_switch(BittwCtx *from, BittwCtx *to)
{
    bittw_ctx_swap(&from->sp, to->sp);
}

#else
#include <ucontext.h>

struct BittwCtx {
    ucontext_t uc;
};

static inline void bittw_ctx_init(BittwCtx *ctx, void *stack, size_t size, void (*entry)(void))
{
    getcontext(&ctx->uc);
    ctx->uc.uc_stack.ss_sp = stack;
    ctx->uc.uc_stack.ss_size = size;
    ctx->uc.uc_link = nullptr;
    makecontext(&ctx->uc, entry, 0);
}

static inline void bittw_ctx_switch(BittwCtx *from, BittwCtx *to)
{
    swapcontext(&from->uc, &to->uc);
}
#endif

#endif
