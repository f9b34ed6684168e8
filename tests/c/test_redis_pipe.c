/*
 * tests/c/test_redis_pipe.c: Redis calls on fibers of one thread
 * (core/io_wait.h, core/redis/pipe.c), as the Node binding runs them.
 *
 * The test brings its own scheduler: ucontext fibers and a poll() loop that
 * implements the thread's wait hook. On a private server:
 *  - FIBERS (BITT_RD_PIPE_DEPTH) fibers on a store with pool=1 share its one connection (the
 *    server sees one client besides the test's own): sets, gets and
 *    increments interleave, every reply reaches its caller (values name
 *    their writer), the counter is exact, and no wait ever ends by its
 *    deadline (a reply read by another fiber wakes its caller at once).
 *  - CLIENT KILL of the shared connection between rounds: the reads of the
 *    next round, all queued on the dead connection, succeed (a read is
 *    sent again on a new connection).
 *  - CLIENT PAUSE past the store's timeout with fibers in flight: each call
 *    fails with EBACKEND and its own timeout message (the error is per
 *    fiber, not per thread), and the next round succeeds.
 *  - a call on the thread's own stack while fibers hold the only pool slot
 *    completes (an extra connection) instead of deadlocking.
 * No timing assertions: only values, counts and statuses.
 */
#define _GNU_SOURCE /* pthread_getattr_np: the main stack, for ASan's fiber switches */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "bitt.h"
#include "internal.h"
#include "io_wait.h"
#include "redis/redis_internal.h"
#include "private_redis.h"

#if defined(__SANITIZE_ADDRESS__)
#define ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_FIBERS 1
#endif
#endif
#ifdef ASAN_FIBERS
#include <sanitizer/common_interface_defs.h>
#endif

#define FIBERS BITT_RD_PIPE_DEPTH /* all on one connection */
#define ROUNDS 20
#define STACK (256 * 1024)

static ts_server g_srv;
static redisContext *g_raw;

/* ---- a minimal scheduler ---------------------------------------------------------- */
typedef struct fiber {
    ucontext_t uc;
    char *stack;
    void (*fn)(struct fiber *);
    void *arg;
    int id;
    int fd;
    short events;
    int64_t deadline;
    int waiting, result, done;
} fiber;

static fiber g_fib[FIBERS];
static fiber *g_cur;
static ucontext_t g_main;
static int g_timeouts; /* waits on a socket that ended by their deadline */
static int g_nfib;

static void switch_to(ucontext_t *from, ucontext_t *to, const char *stack, size_t size)
{
#ifdef ASAN_FIBERS
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, stack, size);
    swapcontext(from, to);
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    (void)stack;
    (void)size;
    swapcontext(from, to);
#endif
}

static void main_stack(const void **bottom, size_t *size)
{
    pthread_attr_t attr;
    *bottom = NULL;
    *size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr = NULL;
        pthread_attr_getstack(&attr, &addr, size);
        *bottom = addr;
        pthread_attr_destroy(&attr);
    }
}

static void to_main(fiber *f)
{
    const void *bottom;
    size_t size;
    main_stack(&bottom, &size);
    switch_to(&f->uc, &g_main, bottom, size);
}

static int hook_wait(void *ctx, int fd, short events, int64_t deadline)
{
    (void)ctx;
    fiber *f = g_cur;
    f->fd = fd;
    f->events = events;
    f->deadline = deadline;
    f->waiting = 1;
    to_main(f);
    return f->result;
}

static void *hook_self(void *ctx)
{
    (void)ctx;
    return g_cur;
}

static void hook_wake(void *ctx, void *p)
{
    (void)ctx;
    fiber *f = p;
    if (f->waiting) {
        f->waiting = 0;
        f->result = 1;
    }
}

static const bitt__io_hook g_hook = {.wait = hook_wait, .self = hook_self, .wake = hook_wake};

static void entry(void)
{
#ifdef ASAN_FIBERS
    __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
    fiber *f = g_cur;
    f->fn(f);
    f->done = 1;
    to_main(f);
}

static void spawn(void (*fn)(fiber *), void *arg)
{
    fiber *f = &g_fib[g_nfib];
    memset(f, 0, sizeof *f);
    f->id = g_nfib++;
    f->fn = fn;
    f->arg = arg;
    f->stack = malloc(STACK);
    assert_non_null(f->stack);
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = STACK;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, entry, 0);
}

static void resume(fiber *f)
{
    g_cur = f;
    switch_to(&g_main, &f->uc, f->stack, STACK);
    g_cur = NULL;
}

/* One pass: runs every fiber that can run, else polls for one; 0 when all
 * are done. */
static int step(void)
{
    int live = 0, ran = 0;
    for (int i = 0; i < g_nfib; i++) {
        fiber *f = &g_fib[i];
        if (f->done)
            continue;
        live++;
        if (!f->waiting) {
            resume(f);
            ran = 1;
        }
    }
    if (!live || ran)
        return live;
    struct pollfd p[FIBERS];
    int n = 0, map[FIBERS];
    int64_t now = bitt__monotonic_ms(), first = INT64_MAX;
    for (int i = 0; i < g_nfib; i++) {
        fiber *f = &g_fib[i];
        if (f->done || !f->waiting)
            continue;
        if (f->deadline < first)
            first = f->deadline;
        if (f->fd >= 0) {
            p[n].fd = f->fd;
            p[n].events = f->events;
            p[n].revents = 0;
            map[n++] = i;
        }
    }
    int wait = first <= now ? 0 : (int)(first - now > 1000 ? 1000 : first - now);
    int got = poll(p, (nfds_t)n, wait);
    assert_true(got >= 0 || errno == EINTR);
    for (int k = 0; k < n && got > 0; k++)
        if (p[k].revents) {
            g_fib[map[k]].waiting = 0;
            g_fib[map[k]].result = 1;
        }
    now = bitt__monotonic_ms();
    for (int i = 0; i < g_nfib; i++) {
        fiber *f = &g_fib[i];
        if (!f->done && f->waiting && f->deadline <= now) {
            f->waiting = 0;
            f->result = 0;
            g_timeouts += f->fd >= 0; /* not a yield (pipe.c gathers commands) */
        }
    }
    return live;
}

static void run_all(void)
{
    while (step())
        ;
    for (int i = 0; i < g_nfib; i++)
        free(g_fib[i].stack);
    g_nfib = 0;
}

/* ---- the store and the server ----------------------------------------------------- */
static int start_server(void **state)
{
    (void)state;
    return ts_redis_start(&g_srv, "rpipe", &g_raw);
}

static int stop_server(void **state)
{
    (void)state;
    ts_redis_stop(&g_srv, &g_raw, "test_redis_pipe");
    return 0;
}

static long long raw_int(const char *cmd)
{
    redisReply *r = redisCommand(g_raw, cmd);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", cmd, r->str);
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    return v;
}

static long long connected_clients(void)
{
    redisReply *r = redisCommand(g_raw, "INFO clients");
    assert_non_null(r);
    const char *p = strstr(r->str, "connected_clients:");
    assert_non_null(p);
    long long n = atoll(p + strlen("connected_clients:"));
    freeReplyObject(r);
    return n;
}

static bitt_store *open_store(const char *prefix, const char *options)
{
    char url[512];
    snprintf(url, sizeof url, "%s?prefix=%s&pool=1%s", g_srv.url, prefix, options);
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("open %s: %d %s", url, rc, bitt_error_last());
    return s;
}

typedef struct job {
    bitt_store *store;
    int round;
    int failures, timeouts_seen;
    char message[300];
} job;

static void failed(job *j, const char *what, int rc)
{
    if (j->failures++ == 0)
        snprintf(j->message, sizeof j->message, "%s: %d %s", what, rc, bitt_error_last());
}

static int value_of(char *buf, size_t size, int id, int round)
{
    return snprintf(buf, size, "fiber %d wrote this in round %d", id, round);
}

/* A fiber's work: a set, an increment and a read-back of its own key. */
static void writer(fiber *f)
{
    job *j = f->arg;
    char key[32], value[64], want[64];
    int kn = snprintf(key, sizeof key, "f%02d", f->id);
    int vn = value_of(value, sizeof value, f->id, j->round);
    uint64_t version = 0;
    int rc = bitt_kv_set(j->store, key, (size_t)kn, value, (size_t)vn, BITT_KIND_BYTES,
                         BITT_TTL_NONE, &version);
    if (rc)
        failed(j, "set", rc);
    rc = bitt_kv_increment(j->store, "n", 1, 1, BITT_TTL_NONE, NULL, NULL);
    if (rc)
        failed(j, "increment", rc);
    bitt_entry *e = NULL;
    rc = bitt_kv_get(j->store, key, (size_t)kn, &e);
    if (rc) {
        failed(j, "get", rc);
        return;
    }
    size_t len = 0;
    const uint8_t *v = bitt_entry_value(e, &len);
    int wn = value_of(want, sizeof want, f->id, j->round);
    if (len != (size_t)wn || memcmp(v, want, len) || bitt_entry_version(e) != version)
        failed(j, "get read another fiber's reply", -1);
    bitt_entry_free(e);
}

/* A call that must fail: its message must be its own (a timeout). */
static void doomed(fiber *f)
{
    job *j = f->arg;
    char key[32];
    int kn = snprintf(key, sizeof key, "f%02d", f->id);
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(j->store, key, (size_t)kn, &e);
    bitt_entry_free(e);
    if (rc == BITT_EBACKEND && strstr(bitt_error_last(), "no reply in time"))
        j->timeouts_seen++;
    else
        failed(j, "a call during CLIENT PAUSE", rc);
}

/* A fiber's read of its key (after writer in the same round number). */
static void reader(fiber *f)
{
    job *j = f->arg;
    char key[32], want[64];
    int kn = snprintf(key, sizeof key, "f%02d", f->id);
    int wn = value_of(want, sizeof want, f->id, j->round);
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(j->store, key, (size_t)kn, &e);
    if (rc) {
        failed(j, "get", rc);
        return;
    }
    size_t len = 0;
    const uint8_t *v = bitt_entry_value(e, &len);
    if (len != (size_t)wn || memcmp(v, want, len))
        failed(j, "get read another fiber's reply", -1);
    bitt_entry_free(e);
}

static void warm_up(fiber *f)
{
    job *j = f->arg;
    uint64_t v = 0;
    int rc = bitt_kv_set(j->store, "warm", 4, "x", 1, BITT_KIND_BYTES, BITT_TTL_NONE, &v);
    if (rc)
        failed(j, "warm-up set", rc);
}

static void check_round(job *jobs, int round)
{
    for (int i = 0; i < FIBERS; i++)
        if (jobs[i].failures)
            fail_msg("round %d, fiber %d: %d failures, first %s", round, i, jobs[i].failures,
                     jobs[i].message);
}

static void run_round(job *jobs, void (*fn)(fiber *), bitt_store *s, int round)
{
    for (int i = 0; i < FIBERS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].store = s;
        jobs[i].round = round;
        spawn(fn, &jobs[i]);
    }
    run_all();
    check_round(jobs, round);
}

static void test_fibers_share_one_connection(void **state)
{
    (void)state;
    bitt_store *s = open_store("share", "");
    bitt__io_hook_set(&g_hook);
    static job jobs[FIBERS];
    jobs[0].store = s;
    spawn(warm_up, &jobs[0]);
    run_all();
    assert_int_equal(jobs[0].failures, 0);
    long long before = connected_clients(); /* the test's own and the store's */
    g_timeouts = 0;
    for (int round = 0; round < ROUNDS; round++) {
        run_round(jobs, writer, s, round);
        assert_int_equal(connected_clients(), before);
    }
    assert_int_equal(before, 2);
    assert_int_equal(g_timeouts, 0);
    bitt_entry *e = NULL;
    bitt__io_hook_set(NULL);
    assert_int_equal(bitt_kv_get(s, "n", 1, &e), BITT_OK);
    int64_t n = 0;
    assert_int_equal(bitt_entry_counter(e, &n), BITT_OK);
    assert_int_equal(n, FIBERS * ROUNDS);
    bitt_entry_free(e);
    bitt_store_close(s);
}

static void test_killed_connection_is_replaced(void **state)
{
    (void)state;
    bitt_store *s = open_store("kill", "");
    bitt__io_hook_set(&g_hook);
    static job jobs[FIBERS];
    run_round(jobs, writer, s, 0);
    raw_int("CLIENT KILL TYPE normal SKIPME yes");
    /* every read queued on the dead connection is sent again on a new one
     * (a write would not be: it may have been applied) */
    run_round(jobs, reader, s, 0);
    run_round(jobs, writer, s, 1);
    bitt__io_hook_set(NULL);
    bitt_store_close(s);
}

static void test_timeout_fails_each_call_with_its_message(void **state)
{
    (void)state;
    /* The timeout must be one that only the pause can reach: the calls
     * before and after it run under valgrind on a busy machine too, where
     * a reply can take far longer than a few hundred ms. The pause outlasts
     * it by 7 s, a margin for the calls to be sent (CLIENT UNPAUSE, itself
     * held by a PAUSE ALL, returns when the pause ends). */
    bitt_store *s = open_store("pause", "&timeout=3000");
    bitt__io_hook_set(&g_hook);
    static job jobs[FIBERS];
    run_round(jobs, writer, s, 0);
    raw_int("CLIENT PAUSE 10000 ALL");
    g_timeouts = 0;
    run_round(jobs, doomed, s, 1);
    int seen = 0;
    for (int i = 0; i < FIBERS; i++)
        seen += jobs[i].timeouts_seen;
    assert_int_equal(seen, FIBERS);
    assert_true(g_timeouts >= 1);
    raw_int("CLIENT UNPAUSE");
    run_round(jobs, writer, s, 2);
    bitt__io_hook_set(NULL);
    bitt_store_close(s);
}

/* Fibers hold the only slot; the thread's own stack calls meanwhile. */
static void test_own_stack_call_does_not_wait_for_fibers(void **state)
{
    (void)state;
    bitt_store *s = open_store("own", "");
    bitt__io_hook_set(&g_hook);
    static job jobs[FIBERS];
    for (int i = 0; i < FIBERS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].store = s;
        spawn(writer, &jobs[i]);
    }
    /* every fiber starts and suspends on the shared connection */
    for (int i = 0; i < g_nfib; i++)
        resume(&g_fib[i]);
    uint64_t v = 0;
    assert_int_equal(bitt_kv_set(s, "own", 3, "y", 1, BITT_KIND_BYTES, BITT_TTL_NONE, &v), BITT_OK);
    run_all();
    check_round(jobs, 0);
    bitt__io_hook_set(NULL);
    bitt_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fibers_share_one_connection),
        cmocka_unit_test(test_killed_connection_is_replaced),
        cmocka_unit_test(test_timeout_fails_each_call_with_its_message),
        cmocka_unit_test(test_own_stack_call_does_not_wait_for_fibers),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
