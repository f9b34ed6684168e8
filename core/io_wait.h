/*
 * core/io_wait.h: where a network backend waits for its socket.
 *
 * By default a backend blocks its thread in poll(). Code that runs calls
 * on cooperative fibers of one thread (bitt_batch_run in core/batch.c,
 * Node's event loop) installs a hook on that thread instead: the call's fiber is suspended while
 * the socket is not ready, and the thread runs other work meanwhile. The hook is per thread and
 * tells, through `self`, whether the code running now is such a fiber: on the thread's own stack
 * the backend still polls.
 *
 * A suspended fiber may be woken before its socket is ready (`wake`): a
 * Redis connection shared by several fibers (pipelining, core/redis/pipe.c)
 * reads the replies of all of them, and wakes each whose reply it read.
 *
 * Internal (hidden) API: the Node addon compiles the core in and uses it;
 * nothing here is part of the public ABI.
 */
#ifndef BITT_IO_WAIT_H
#define BITT_IO_WAIT_H

#include <stddef.h>
#include <stdint.h>

struct pollfd;

/* A connection's spin before it blocks for a reply (io_spin.c). Zeroed
 * with budget_us set: budget_us 0 never spins. */
typedef struct bitt__io_spin {
    int32_t budget_us; /* the widest window, us (URL spin_us) */
    int32_t window_us; /* the current window (0: the start) */
    uint32_t skip;     /* waits left that block at once, after a miss */
    uint32_t misses;   /* misses in a row */
} bitt__io_spin;

/* How long (ns) this wait may spin before it blocks: 0 when it blocks at
 * once (no budget, or a recent miss; the call counts). */
int64_t bitt__io_spin_begin(bitt__io_spin *s);
/* After a spin from bitt__io_spin_begin: hit when the reply came during it;
 * else waited_ns is how long after the spin's start the reply came (when
 * the blocking wait ended; INT64_MAX: it never did). */
void bitt__io_spin_end(bitt__io_spin *s, int hit, int64_t waited_ns);
/* poll(fds, n, 0) again and again, yielding the CPU between looks, until
 * one is ready (> 0), poll fails (-1), or budget_ns passes (0); or
 * BITT__SPIN_BUSY at once, without a look: as many threads of the process
 * spin already as may (then the wait sleeps, and the spin state is left
 * as it is: no end). */
#define BITT__SPIN_BUSY (-2)
int bitt__io_spin_poll(struct pollfd *fds, size_t n, int64_t budget_ns);
/* How many threads of the process may spin at once: half the CPUs, at
 * least one. */
int bitt__io_spinners_max(void);

/* The spin before waits for replies block, for one wait or several whose
 * sockets are among fds[0..nfds): spins[i] is a wait's state, or NULL.
 * Spins for the widest window of theirs until one of fds is ready: > 0
 * when one is (a hit for each that spun), 0 when none is by then or none
 * spun (no window, or the spinning slots were all taken), -1 when poll
 * failed. On return spins[i] is still set only for a wait whose spin
 * missed; *from is when the spin began, for bitt__io_spin_missed once the
 * wait ends. */
int bitt__io_spin_several(bitt__io_spin **spins, size_t n, struct pollfd *fds, size_t nfds,
                          int64_t *from);
/* The wait after a missed spin (s from bitt__io_spin_several, begun at
 * from) ended: ready when its reply came. A no-op for NULL s or from 0. */
void bitt__io_spin_missed(bitt__io_spin *s, int64_t from, int ready);

typedef struct bitt__io_hook {
    /* Suspends the running fiber until fd has `events` (POLLIN/POLLOUT),
     * it is woken, or deadline (bitt__monotonic_ms) passes: 1 ready or
     * woken, 0 the deadline passed, -1 the wait could not be set up. */
    int (*wait)(void *ctx, int fd, short events, int64_t deadline);
    /* The running fiber, or NULL on the thread's own stack. */
    void *(*self)(void *ctx);
    /* Makes a suspended fiber's wait return 1 soon (a no-op for NULL or a
     * fiber that is not waiting). */
    void (*wake)(void *ctx, void *fiber);
    void *ctx;
    /* Optional: nonzero when other fibers will run before the thread
     * waits (they were started together): a sender lets them append to
     * the same send first (core/redis/pipe.c). */
    int (*others_ready)(void *ctx);
    /* Optional: wait, for a reply that may come back soon; the hook may
     * spin (bitt__io_spin_several, then bitt__io_spin_missed when the
     * wait ends) before the thread sleeps. */
    int (*wait_spin)(void *ctx, int fd, short events, int64_t deadline, bitt__io_spin *spin);
} bitt__io_hook;

/* Installs (or, with NULL, removes) the calling thread's hook; the struct
 * must outlive its installation. */
void bitt__io_hook_set(const bitt__io_hook *hook);
/* The calling thread's hook, or NULL. */
const bitt__io_hook *bitt__io_hook_get(void);

/* The running fiber when the calling thread has a hook and runs on a
 * fiber, else NULL: such a caller must never block the thread. */
void *bitt__io_self(void);

/* 1 when the calling thread has a hook: even on its own stack it must not
 * wait for something its fibers hold (they cannot run meanwhile). */
int bitt__io_hooked(void);

/* Waits for fd: through the hook on a fiber, else poll(). 1 ready (or
 * woken), 0 deadline passed (a deadline already past still looks once),
 * -1 failure. The thread's last error (bitt_error_last) is the same after
 * as before: other fibers may fail meanwhile. */
int bitt__io_wait(int fd, short events, int64_t deadline);
/* bitt__io_wait for a reply on fd (POLLIN) that may come back within
 * spin's budget: the thread spins before it blocks (io_spin.c). spin may
 * be NULL (no spin). */
int bitt__io_wait_reply(int fd, int64_t deadline, bitt__io_spin *spin);

/* The hook's others_ready on a fiber; 0 elsewhere. */
int bitt__io_others_ready(void);

/* Wakes a fiber from bitt__io_self (NULL: nothing). */
void bitt__io_wake(void *fiber);

#endif
