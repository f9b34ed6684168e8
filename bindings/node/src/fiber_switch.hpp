/*
 * fiber_switch.hpp: switching between the event loop's stack and a fiber's
 * (fibers.hpp), by the core's switch (core/fiber.h: a register swap on
 * x86-64, ucontext elsewhere).
 *
 *   bittw_ctx_init(ctx, stack, size, entry)  a context that starts entry()
 *   bittw_ctx_switch(from, to)               saves into from, resumes to
 *
 * entry() must never return: it switches away for the last time.
 */
#ifndef BITT_NODE_FIBER_SWITCH_HPP
#define BITT_NODE_FIBER_SWITCH_HPP

#include <cstddef>

#include "fiber.h"

using BittwCtx = bitt__fiber_ctx;

static inline void bittw_ctx_init(BittwCtx *ctx, void *stack, size_t size, void (*entry)(void))
{
    bitt__fiber_ctx_init(ctx, stack, size, entry);
}

static inline void bittw_ctx_switch(BittwCtx *from, BittwCtx *to)
{
    bitt__fiber_ctx_switch(from, to);
}

#endif
