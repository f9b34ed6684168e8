/* core/fiber.c: fiber stacks and stack switches (fiber.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_STACK */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fiber.h"

/* Valgrind is told where each stack is, or it takes a switch for a huge
 * stack frame. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define FIBER_VALGRIND 1
#endif
#endif

#if defined(__x86_64__) && !defined(BITT_FIBER_UCONTEXT)

/* bitt__fiber_swap(&save_sp, new_sp): the System V callee-saved registers
 * go on the old stack, then come off the new one. */
void bitt__fiber_swap(void **save_sp, void *new_sp);
__asm__(".text\n"
        ".globl bitt__fiber_swap\n"
        ".hidden bitt__fiber_swap\n"
        ".type bitt__fiber_swap,@function\n"
        "bitt__fiber_swap:\n"
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
        ".size bitt__fiber_swap,.-bitt__fiber_swap\n"
        ".section .note.GNU-stack,\"\",@progbits\n"
        ".text\n");

void bitt__fiber_ctx_init(bitt__fiber_ctx *ctx, void *stack, size_t size, void (*entry)(void))
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = NULL;                       /* entry's return address: it never returns */
    memcpy(--sp, &entry, sizeof entry); /* where bitt__fiber_swap's ret goes */
    for (int i = 0; i < 6; i++)
        *--sp = NULL; /* rbp rbx r12 r13 r14 r15 */
    ctx->sp = sp;
}

void bitt__fiber_ctx_switch(bitt__fiber_ctx *from, bitt__fiber_ctx *to)
{
    bitt__fiber_swap(&from->sp, to->sp);
}

#else

void bitt__fiber_ctx_init(bitt__fiber_ctx *ctx, void *stack, size_t size, void (*entry)(void))
{
    getcontext(&ctx->uc);
    ctx->uc.uc_stack.ss_sp = stack;
    ctx->uc.uc_stack.ss_size = size;
    ctx->uc.uc_link = NULL;
    makecontext(&ctx->uc, entry, 0);
}

void bitt__fiber_ctx_switch(bitt__fiber_ctx *from, bitt__fiber_ctx *to)
{
    swapcontext(&from->uc, &to->uc);
}

#endif

int bitt__fiber_stack_new(bitt__fiber_stack *st, size_t size)
{
    long ps = sysconf(_SC_PAGESIZE);
    size_t page = ps > 0 ? (size_t)ps : 4096;
    size = (size + page - 1) / page * page;
    memset(st, 0, sizeof *st);
    void *map = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
        return -1;
    if (mprotect(map, page, PROT_NONE) != 0) {
        munmap(map, size + page);
        return -1;
    }
    st->map = map;
    st->len = size + page;
    st->base = (char *)map + page;
    st->size = size;
#ifdef FIBER_VALGRIND
    st->valgrind_id = VALGRIND_STACK_REGISTER(st->base, (char *)st->base + size);
#endif
    return 0;
}

void bitt__fiber_stack_free(bitt__fiber_stack *st)
{
    if (!st->map)
        return;
#ifdef FIBER_VALGRIND
    VALGRIND_STACK_DEREGISTER(st->valgrind_id);
#endif
    munmap(st->map, st->len);
    memset(st, 0, sizeof *st);
}
