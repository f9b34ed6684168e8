/*
 * tests/c/test_io_spin.c: the spin before a wait for a reply blocks
 * (core/io_spin.c, bitt__io_wait_reply in core/io_wait.c), without a server.
 *
 *  - the policy: no budget never spins; a hit keeps spinning; a miss makes
 *    the next 1, 3, 7, ... waits block at once, at most 1023; a hit after
 *    misses starts over.
 *  - bitt__io_spin_poll returns as soon as a descriptor is ready (data, or
 *    the peer gone) and 0 when its budget passes with nothing.
 *  - no more threads spin at once than bitt__io_spinners_max: the next
 *    finds them busy and does not look; once they are done it spins again.
 *  - bitt__io_wait_reply on the thread's own stack: a reply already there is
 *    a hit; none by the deadline is 0 and a miss; on a fiber it hands the
 *    connection's spin state to the hook's wait_spin, or calls wait when the
 *    hook has none.
 *  - in bitt_batch_run (core/batch.c): a task whose reply another task
 *    sends is a hit; one whose reply never comes is a miss, learnt when its
 *    wait ends.
 * No timing assertions: only results and counts.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bitt.h"
#include "internal.h"
#include "io_wait.h"

#define LATE INT64_MAX /* a reply past any budget, or none */

/* `n` waits, each that spins followed by end(hit, waited): how many spun. */
static int spun_of(bitt__io_spin *s, int n, int hit, int64_t waited)
{
    int spun = 0;
    for (int i = 0; i < n; i++)
        if (bitt__io_spin_begin(s) > 0) {
            spun++;
            bitt__io_spin_end(s, hit, waited);
        }
    return spun;
}

static void test_policy(void **state)
{
    (void)state;
    bitt__io_spin off = {.budget_us = 0};
    assert_int_equal(bitt__io_spin_begin(&off), 0);
    assert_int_equal(bitt__io_spin_begin(NULL), 0);
    bitt__io_spin small = {.budget_us = 30}; /* below the starting window */
    assert_int_equal(bitt__io_spin_begin(&small), 30000);

    bitt__io_spin s = {.budget_us = 200};
    assert_int_equal(bitt__io_spin_begin(&s), 50000); /* the window starts at 50 us */
    bitt__io_spin_end(&s, 1, 0);
    assert_int_equal(spun_of(&s, 50, 1, 0), 50); /* hits: every wait spins */

    /* Replies just after the window, within the budget: it doubles, up to
     * the budget, and no wait blocks at once. */
    assert_int_equal(bitt__io_spin_begin(&s), 50000);
    bitt__io_spin_end(&s, 0, 80000);
    assert_int_equal(bitt__io_spin_begin(&s), 100000);
    bitt__io_spin_end(&s, 0, 150000);
    assert_int_equal(bitt__io_spin_begin(&s), 200000);
    bitt__io_spin_end(&s, 0, 199000);
    assert_int_equal(bitt__io_spin_begin(&s), 200000);

    /* A reply past the budget: a miss. The window starts over; then spin,
     * block 1, spin, block 3, spin, block 7, ... */
    bitt__io_spin_end(&s, 0, 300000);
    assert_int_equal(bitt__io_spin_begin(&s), 0);
    assert_int_equal(bitt__io_spin_begin(&s), 50000);
    bitt__io_spin_end(&s, 0, LATE);
    for (int i = 0; i < 3; i++)
        assert_int_equal(bitt__io_spin_begin(&s), 0);
    assert_true(bitt__io_spin_begin(&s) > 0);
    bitt__io_spin_end(&s, 1, 0); /* a hit ends the misses */
    assert_int_equal(spun_of(&s, 10, 1, 0), 10);

    /* Always missing: 1 + 2 + 4 + ... waits per spin, up to 1024 (10 misses
     * in a row and more: 1023 block at once between two spins). */
    bitt__io_spin m = {.budget_us = 100};
    assert_int_equal(spun_of(&m, 1 + 2 + 4 + 8 + 16 + 32 + 64 + 128 + 256 + 512 + 1024, 0, LATE),
                     11);
    assert_int_equal(spun_of(&m, 1024 * 3, 0, LATE), 3); /* 1023 blocked, 1 spun, ... */
    assert_int_equal(m.skip, 1023);
}

static void test_spin_poll(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct pollfd p = {.fd = sv[0], .events = POLLIN};
    assert_int_equal(bitt__io_spin_poll(&p, 1, 2000000), 0); /* 2 ms, nothing */
    assert_int_equal(write(sv[1], "x", 1), 1);
    assert_int_equal(bitt__io_spin_poll(&p, 1, 1000000000), 1);
    assert_true(p.revents & POLLIN);

    /* The second of two descriptors, its peer gone. */
    int sw[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sw), 0);
    close(sw[1]);
    char c;
    assert_int_equal(read(sv[0], &c, 1), 1);
    struct pollfd two[2] = {{.fd = sv[0], .events = POLLIN}, {.fd = sw[0], .events = POLLIN}};
    assert_int_equal(bitt__io_spin_poll(two, 2, 1000000000), 1);
    assert_int_equal(two[0].revents, 0);
    assert_true(two[1].revents & (POLLIN | POLLHUP));
    close(sw[0]);
    close(sv[0]);
    close(sv[1]);
}

typedef struct spinner {
    pthread_t thread;
    int sv[2];
    int result;
} spinner;

static void *spin_long(void *arg)
{
    spinner *sp = arg;
    struct pollfd p = {.fd = sp->sv[0], .events = POLLIN};
    do /* the test's own looks may hold the slot a moment */
        sp->result = bitt__io_spin_poll(&p, 1, 60 * 1000000000LL); /* until released */
    while (sp->result == BITT__SPIN_BUSY);
    return NULL;
}

static void test_spinners_bounded(void **state)
{
    (void)state;
    int max = bitt__io_spinners_max();
    assert_true(max >= 1);
    spinner *sp = calloc((size_t)max, sizeof *sp);
    assert_non_null(sp);
    for (int i = 0; i < max; i++) {
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp[i].sv), 0);
        assert_int_equal(pthread_create(&sp[i].thread, NULL, spin_long, &sp[i]), 0);
    }
    int quiet[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, quiet), 0);
    struct pollfd q = {.fd = quiet[0], .events = POLLIN};
    /* once every spinner is in: busy (bounded: the spinners wait a minute) */
    int busy = 0;
    for (int tries = 0; tries < 20000 && !busy; tries++) {
        busy = bitt__io_spin_poll(&q, 1, 100000) == BITT__SPIN_BUSY;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL); /* lets a spinner in */
    }
    assert_true(busy);
    for (int i = 0; i < max; i++) {
        assert_int_equal(write(sp[i].sv[1], "x", 1), 1);
        assert_int_equal(pthread_join(sp[i].thread, NULL), 0);
        assert_int_equal(sp[i].result, 1); /* each saw its own reply */
        close(sp[i].sv[0]);
        close(sp[i].sv[1]);
    }
    assert_int_equal(bitt__io_spin_poll(&q, 1, 1000000), 0); /* a slot again */
    close(quiet[0]);
    close(quiet[1]);
    free(sp);
}

static void test_wait_reply_on_thread(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    bitt__io_spin s = {.budget_us = 200};
    /* nothing comes: the deadline passes, the spin was a miss */
    assert_int_equal(bitt__io_wait_reply(sv[0], bitt__monotonic_ms() + 5, &s), 0);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.skip, 1);
    /* the skipped wait blocks at once, and finds the reply */
    assert_int_equal(write(sv[1], "x", 1), 1);
    assert_int_equal(bitt__io_wait_reply(sv[0], bitt__monotonic_ms() + 1000, &s), 1);
    assert_int_equal(s.skip, 0);
    /* the next spins and finds it: a hit clears the misses */
    assert_int_equal(bitt__io_wait_reply(sv[0], bitt__monotonic_ms() + 1000, &s), 1);
    assert_int_equal(s.misses, 0);
    /* no spin state: a plain wait */
    assert_int_equal(bitt__io_wait_reply(sv[0], bitt__monotonic_ms() + 1000, NULL), 1);
    close(sv[0]);
    close(sv[1]);
}

/* A hook whose "fiber" is a marker: records which wait it was given. */
static int g_waits, g_spin_waits;
static bitt__io_spin *g_spin_seen;
static int marker;

static int hook_wait(void *ctx, int fd, short events, int64_t deadline)
{
    (void)ctx, (void)fd, (void)events, (void)deadline;
    g_waits++;
    bitt__fail(BITT_EBACKEND, "another fiber failed meanwhile");
    return 1;
}

static int hook_wait_spin(void *ctx, int fd, short events, int64_t deadline, bitt__io_spin *spin)
{
    (void)ctx, (void)fd, (void)deadline;
    assert_int_equal(events, POLLIN);
    g_spin_waits++;
    g_spin_seen = spin;
    return 1;
}

static void *hook_self(void *ctx)
{
    (void)ctx;
    return &marker;
}

static void hook_wake(void *ctx, void *fiber)
{
    (void)ctx, (void)fiber;
}

static void test_wait_reply_on_fiber(void **state)
{
    (void)state;
    bitt__io_spin s = {.budget_us = 100};
    bitt__io_hook h = {
        .wait = hook_wait, .self = hook_self, .wake = hook_wake, .wait_spin = hook_wait_spin};
    bitt__io_hook_set(&h);
    assert_int_equal(bitt__io_wait_reply(7, INT64_MAX, &s), 1);
    assert_int_equal(g_spin_waits, 1);
    assert_ptr_equal(g_spin_seen, &s);
    assert_int_equal(g_waits, 0);
    /* without a spin state, or a hook without wait_spin: the plain wait,
     * and the caller's last error survives what happened meanwhile */
    bitt__fail(BITT_EINVAL, "the caller's own error");
    assert_int_equal(bitt__io_wait_reply(7, INT64_MAX, NULL), 1);
    h.wait_spin = NULL;
    assert_int_equal(bitt__io_wait_reply(7, INT64_MAX, &s), 1);
    assert_int_equal(g_waits, 2);
    assert_int_equal(g_spin_waits, 1);
    assert_string_equal(bitt_error_last(), "the caller's own error");
    bitt__io_hook_set(NULL);
}

typedef struct batch_case {
    int quiet[2], fed[2];
    bitt__io_spin quiet_spin, fed_spin;
    int quiet_rc, fed_rc;
} batch_case;

static int batch_task(void *arg, size_t i)
{
    batch_case *c = arg;
    if (i == 0) /* nothing ever comes (a deadline well after the first round's look, even
                 * under valgrind) */
        c->quiet_rc = bitt__io_wait_reply(c->quiet[0], bitt__monotonic_ms() + 300, &c->quiet_spin);
    else if (i == 1) /* task 2 sends the reply */
        c->fed_rc = bitt__io_wait_reply(c->fed[0], bitt__monotonic_ms() + 5000, &c->fed_spin);
    else if (write(c->fed[1], "x", 1) != 1)
        return BITT_EBACKEND;
    return BITT_OK;
}

static void test_batch_spins(void **state)
{
    (void)state;
    batch_case c = {.quiet_spin = {.budget_us = 200}, .fed_spin = {.budget_us = 200, .misses = 3}};
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, c.quiet), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, c.fed), 0);
    assert_int_equal(bitt_batch_run(batch_task, &c, 3), BITT_OK);
    assert_int_equal(c.quiet_rc, 0);
    assert_int_equal(c.quiet_spin.misses, 1);
    assert_int_equal(c.quiet_spin.skip, 1);
    assert_int_equal(c.fed_rc, 1);
    assert_int_equal(c.fed_spin.misses, 0); /* a hit ends earlier misses */
    close(c.quiet[0]);
    close(c.quiet[1]);
    close(c.fed[0]);
    close(c.fed[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_spin_poll),
        cmocka_unit_test(test_spinners_bounded),
        cmocka_unit_test(test_wait_reply_on_thread),
        cmocka_unit_test(test_wait_reply_on_fiber),
        cmocka_unit_test(test_batch_spins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
