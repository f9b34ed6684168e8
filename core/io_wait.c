/* core/io_wait.c: the per-thread wait hook (io_wait.h). */
#include <errno.h>
#include <poll.h>

#include "internal.h"
#include "io_wait.h"

static _Thread_local const bitt__io_hook *hook;

void bitt__io_hook_set(const bitt__io_hook *h)
{
    hook = h;
}

const bitt__io_hook *bitt__io_hook_get(void)
{
    return hook;
}

int bitt__io_hooked(void)
{
    return hook != NULL;
}

void *bitt__io_self(void)
{
    return hook ? hook->self(hook->ctx) : NULL;
}

int bitt__io_others_ready(void)
{
    return hook && hook->others_ready && hook->self(hook->ctx) ? hook->others_ready(hook->ctx) : 0;
}

void bitt__io_wake(void *fiber)
{
    if (hook && fiber)
        hook->wake(hook->ctx, fiber);
}

static int poll_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - bitt__monotonic_ms();
        if (left < 0)
            left = 0;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 1;
        if (n == 0 && bitt__monotonic_ms() >= deadline)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static int wait_on_fiber(int fd, short events, int64_t deadline, bitt__io_spin *spin)
{
    /* Other fibers run while this one waits, and fail on the same
     * thread: the last error is this fiber's again when it resumes. */
    bitt__error_state saved;
    bitt__error_save(&saved);
    int rc = spin && hook->wait_spin ? hook->wait_spin(hook->ctx, fd, events, deadline, spin)
                                     : hook->wait(hook->ctx, fd, events, deadline);
    bitt__error_restore(&saved);
    return rc;
}

int bitt__io_wait(int fd, short events, int64_t deadline)
{
    if (!bitt__io_self())
        return poll_fd(fd, events, deadline);
    return wait_on_fiber(fd, events, deadline, NULL);
}

int bitt__io_wait_reply(int fd, int64_t deadline, bitt__io_spin *spin)
{
    if (bitt__io_self())
        return wait_on_fiber(fd, POLLIN, deadline, spin);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int64_t from = 0;
    if (fd >= 0 && bitt__io_spin_several(&spin, 1, &p, 1, &from) > 0)
        return 1;
    int rc = poll_fd(fd, POLLIN, deadline);
    bitt__io_spin_missed(spin, from, rc > 0);
    return rc;
}
