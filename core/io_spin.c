/*
 * core/io_spin.c: a short spin before a wait for a reply blocks (io_wait.h).
 *
 * Why: on a fast server (loopback, the same rack) the reply of a round
 * trip is back within tens of microseconds, but a thread asleep in poll()
 * runs again only after the kernel, and on a virtual machine the
 * hypervisor, has woken its idle CPU: ~50 us on the 2-core machine of
 * bench/, more than the round trip itself (a Redis SET from C: 78 us per
 * call blocking, 28 us spinning first, for about the same CPU time per
 * call, since the sleep and the wake-up cost as much as the spin).
 *
 * The spin looks at the socket without blocking and yields the CPU between
 * looks (a server on the same CPU runs). Its window adapts, as KVM's halt
 * polling does before a virtual CPU sleeps (up to 200 us by default): it
 * starts at 50 us, about what a sleep and a wake-up cost here; a reply
 * that came after the window but within the store's budget (URL option
 * spin_us, default 200) doubles it, up to the budget. A reply later than
 * the budget is a miss: the window starts over, and the next waits of that
 * connection block at once, 1, 3, 7, ... up to 1023 of them, so a slow or
 * remote server costs almost no spinning; a reply caught by a spin ends
 * the misses.
 *
 * At most half the CPUs (at least one) spin at once in a process, as Go's
 * scheduler limits its spinning threads: more spinners than that take the
 * CPUs the server and the threads with work to do need (Node, 4 queue
 * workers woken together on 2 cores: 20% fewer jobs/s with every waiter
 * spinning). A wait that finds them all taken sleeps at once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity: the CPUs this process may run on */
#endif
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "io_wait.h"

#define MISSES_MAX 10      /* at most 1023 waits block at once after a miss */
#define WINDOW_START_US 50 /* about a sleep and a wake-up on a virtual machine */

int64_t bitt__io_spin_begin(bitt__io_spin *s)
{
    if (!s || s->budget_us <= 0)
        return 0;
    if (s->skip > 0) {
        s->skip--;
        return 0;
    }
    if (s->window_us <= 0 || s->window_us > s->budget_us)
        s->window_us = s->budget_us < WINDOW_START_US ? s->budget_us : WINDOW_START_US;
    return (int64_t)s->window_us * 1000;
}

void bitt__io_spin_end(bitt__io_spin *s, int hit, int64_t waited_ns)
{
    if (hit) {
        s->misses = 0;
        return;
    }
    if (waited_ns <= (int64_t)s->budget_us * 1000) {
        /* just late: a wider window would have caught it */
        s->window_us = s->window_us > s->budget_us / 2 ? s->budget_us : s->window_us * 2;
        return;
    }
    s->window_us = 0; /* starts over */
    if (s->misses < MISSES_MAX)
        s->misses++;
    s->skip = (1u << s->misses) - 1;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int bitt__io_spin_several(bitt__io_spin **spins, size_t n, struct pollfd *fds, size_t nfds,
                          int64_t *from)
{
    *from = 0;
    int64_t budget = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t w = bitt__io_spin_begin(spins[i]);
        if (w <= 0)
            spins[i] = NULL;
        budget = w > budget ? w : budget;
    }
    if (!budget)
        return 0;
    int64_t start = now_ns();
    int rc = bitt__io_spin_poll(fds, nfds, budget);
    for (size_t i = 0; i < n; i++) {
        if (!spins[i] || rc == BITT__SPIN_BUSY) {
            spins[i] = NULL; /* did not spin: nothing to learn */
        } else if (rc > 0) {
            bitt__io_spin_end(spins[i], 1, 0);
            spins[i] = NULL;
        }
    }
    if (rc == BITT__SPIN_BUSY)
        return 0;
    *from = start;
    return rc;
}

void bitt__io_spin_missed(bitt__io_spin *s, int64_t from, int ready)
{
    if (s && from)
        bitt__io_spin_end(s, 0, ready ? now_ns() - from : INT64_MAX);
}

static _Atomic int spinners;

int bitt__io_spinners_max(void)
{
    static _Atomic int max; /* 0: not known yet */
    int m = atomic_load_explicit(&max, memory_order_relaxed);
    if (m == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef __linux__
        cpu_set_t set; /* taskset, cpusets: fewer than the machine has */
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
            cpus = CPU_COUNT(&set);
#endif
        m = cpus >= 4 ? (int)(cpus / 2) : 1;
        atomic_store_explicit(&max, m, memory_order_relaxed);
    }
    return m;
}

int bitt__io_spin_poll(struct pollfd *fds, size_t n, int64_t budget_ns)
{
    if (atomic_fetch_add(&spinners, 1) >= bitt__io_spinners_max()) {
        atomic_fetch_sub(&spinners, 1);
        return BITT__SPIN_BUSY;
    }
    int64_t end = now_ns() + budget_ns;
    int r;
    for (;;) {
        r = poll(fds, (nfds_t)n, 0);
        if (r != 0 && !(r < 0 && errno == EINTR))
            break;
        r = 0;
        if (now_ns() >= end)
            break;
        sched_yield();
    }
    atomic_fetch_sub(&spinners, 1);
    return r;
}
