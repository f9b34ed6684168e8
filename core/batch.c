/*
 * core/batch.c: bitt_batch_run, many calls of one thread in flight at once.
 *
 * Each task runs on a fiber (core/fiber.h) of the calling thread, and this
 * file is the thread's wait hook (core/io_wait.h) while they run: where a
 * network backend would block in poll() for its socket, the task's fiber
 * is suspended and the thread runs the others; when none can run, one
 * poll() waits for every socket at once. Redis calls of one thread share
 * connections (core/redis/pipe.c), so n tasks' commands go out in one send
 * and their replies come back in one read. Backends that never wait
 * through the hook (memory, SQLite, PostgreSQL) run each task to its end.
 *
 * Order of a turn: every task ready at its start (new, woken, or yielding
 * once so that others append to a shared send) runs until it waits again
 * or returns; tasks readied meanwhile wait for the next turn. Stacks are
 * kept per thread (at most BITT_BATCH_AT_ONCE) and unmapped when the
 * thread exits.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fiber.h"
#include "internal.h"
#include "io_wait.h"

#if defined(__SANITIZE_ADDRESS__)
#define BATCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BATCH_ASAN 1
#endif
#endif
#ifdef BATCH_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define STACK_SIZE (256 * 1024)

enum { T_FREE, T_READY, T_WAITING, T_DONE };

typedef struct task {
    bitt__fiber_ctx ctx;
    bitt__fiber_stack stack;
    size_t index; /* the i passed to fn */
    int state, started;
    int fd;
    short events;
    int64_t deadline;
    bitt__io_spin *spin; /* a wait for a reply that may come soon (io_spin.c) */
    int64_t spun_from;   /* its spin missed: when it began (ns) */
    int result;          /* what the suspended wait returns */
    void *fake;          /* ASan's fake stack while switched away */
} task;

typedef struct batch {
    bitt_batch_fn fn;
    void *arg;
    size_t n, next, live, ntasks;
    task *tasks;
    task *ready[BITT_BATCH_AT_ONCE]; /* a ring: each task at most once */
    size_t rhead, rlen;
    size_t failed;             /* the lowest i of a task that failed, or n */
    int failed_rc;             /* its status */
    bitt__error_state failure; /* and its error */
    task *cur;                 /* the running task, NULL on the thread's stack */
    bitt__fiber_ctx main;
    bitt__io_hook hook;
    void *main_fake;
    const void *main_bottom;
    size_t main_size;
} batch;

/* ---- stacks kept per thread ------------------------------------------------ */
typedef struct stack_cache {
    bitt__fiber_stack s[BITT_BATCH_AT_ONCE];
    size_t n;
} stack_cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_key_ok;

static void cache_free(void *p)
{
    stack_cache *c = p;
    while (c->n)
        bitt__fiber_stack_free(&c->s[--c->n]);
    free(c);
}

static void cache_key_make(void)
{
    cache_key_ok = pthread_key_create(&cache_key, cache_free) == 0;
}

static stack_cache *cache_get(void)
{
    pthread_once(&cache_once, cache_key_make);
    if (!cache_key_ok)
        return NULL;
    stack_cache *c = pthread_getspecific(cache_key);
    if (!c) {
        c = calloc(1, sizeof *c);
        if (c && pthread_setspecific(cache_key, c) != 0) {
            free(c);
            c = NULL;
        }
    }
    return c;
}

/* Up to want stacks into tasks[]: how many it made (0: none). */
static size_t stacks_take(task *tasks, size_t want)
{
    stack_cache *c = cache_get();
    size_t got = 0;
    for (; got < want; got++) {
        if (c && c->n)
            tasks[got].stack = c->s[--c->n];
        else if (bitt__fiber_stack_new(&tasks[got].stack, STACK_SIZE) != 0)
            break;
    }
    return got;
}

static void stacks_give(task *tasks, size_t n)
{
    stack_cache *c = cache_get();
    for (size_t i = 0; i < n; i++) {
        if (c && c->n < BITT_BATCH_AT_ONCE)
            c->s[c->n++] = tasks[i].stack;
        else
            bitt__fiber_stack_free(&tasks[i].stack);
    }
}

/* ---- switching ------------------------------------------------------------------- */
static _Thread_local batch *running_batch;

static void make_ready(batch *b, task *t, int result)
{
    t->state = T_READY;
    t->result = result;
    b->ready[(b->rhead + b->rlen++) % BITT_BATCH_AT_ONCE] = t;
}

static void to_task(batch *b, task *t)
{
    b->cur = t;
#ifdef BATCH_ASAN
    __sanitizer_start_switch_fiber(&b->main_fake, t->stack.base, t->stack.size);
#endif
    bitt__fiber_ctx_switch(&b->main, &t->ctx);
#ifdef BATCH_ASAN
    __sanitizer_finish_switch_fiber(b->main_fake, NULL, NULL);
#endif
    b->cur = NULL;
}

/* From the running task back to the thread's stack; last: it has returned
 * and is never resumed. */
static void to_main(batch *b, task *t, int last)
{
#ifdef BATCH_ASAN
    __sanitizer_start_switch_fiber(last ? NULL : &t->fake, b->main_bottom, b->main_size);
#else
    (void)last;
#endif
    bitt__fiber_ctx_switch(&t->ctx, &b->main);
#ifdef BATCH_ASAN
    __sanitizer_finish_switch_fiber(t->fake, &b->main_bottom, &b->main_size);
#endif
}

static void task_entry(void)
{
    batch *b = running_batch;
    task *t = b->cur;
#ifdef BATCH_ASAN
    __sanitizer_finish_switch_fiber(NULL, &b->main_bottom, &b->main_size);
#endif
    bitt__error_reset();
    int rc = b->fn(b->arg, t->index);
    if (rc < 0 && t->index < b->failed) {
        b->failed = t->index;
        b->failed_rc = rc;
        bitt__error_save(&b->failure);
    }
    t->state = T_DONE;
    to_main(b, t, 1);
    abort(); /* a finished task is never resumed */
}

/* ---- the hook ----------------------------------------------------------------------- */
static int hook_wait(void *ctx, int fd, short events, int64_t deadline)
{
    batch *b = ctx;
    task *t = b->cur;
    if (fd < 0 && deadline <= bitt__monotonic_ms()) {
        make_ready(b, t, 0); /* a yield: back in the next turn */
    } else {                 /* fd < 0: until woken or the deadline */
        t->state = T_WAITING;
        t->fd = fd;
        t->events = events;
        t->deadline = deadline;
    }
    to_main(b, t, 0);
    return t->result;
}

static int hook_wait_spin(void *ctx, int fd, short events, int64_t deadline, bitt__io_spin *spin)
{
    task *t = ((batch *)ctx)->cur;
    t->spin = spin;
    t->spun_from = 0;
    int rc = hook_wait(ctx, fd, events, deadline);
    bitt__io_spin_missed(spin, t->spun_from, rc == 1); /* after a missed spin */
    t->spin = NULL;
    t->spun_from = 0;
    return rc;
}

static void *hook_self(void *ctx)
{
    return ((batch *)ctx)->cur;
}

static int hook_others_ready(void *ctx)
{
    batch *b = ctx;
    return b->rlen > 0;
}

static void hook_wake(void *ctx, void *fiber)
{
    task *t = fiber;
    if (t->state == T_WAITING)
        make_ready(ctx, t, 1);
}

/* ---- the loop ----------------------------------------------------------------------- */
static void start_tasks(batch *b)
{
    for (size_t i = 0; i < b->ntasks && b->next < b->n; i++) {
        task *t = &b->tasks[i];
        if (t->state != T_FREE)
            continue;
        t->index = b->next++;
        t->fake = NULL;
        bitt__fiber_ctx_init(&t->ctx, t->stack.base, t->stack.size, task_entry);
        b->live++;
        make_ready(b, t, 0);
    }
}

static void run_turn(batch *b)
{
    for (size_t k = b->rlen; k > 0; k--) {
        task *t = b->ready[b->rhead];
        b->rhead = (b->rhead + 1) % BITT_BATCH_AT_ONCE;
        b->rlen--;
        to_task(b, t);
        if (t->state == T_DONE) {
            t->state = T_FREE;
            b->live--;
        }
    }
}

/* Before the batch sleeps: a spin while replies are due soon (io_spin.c).
 * A task whose spin missed learns how late its reply was when its wait
 * ends (hook_wait_spin). */
static int spin_first(task **who, struct pollfd *fds, size_t n)
{
    bitt__io_spin *spins[BITT_BATCH_AT_ONCE];
    for (size_t i = 0; i < n; i++) {
        task *t = who[i];
        spins[i] = !t->spun_from && t->fd >= 0 && (t->events & POLLIN) ? t->spin : NULL;
    }
    int64_t from;
    int rc = bitt__io_spin_several(spins, n, fds, n, &from);
    for (size_t i = 0; i < n; i++)
        if (spins[i])
            who[i]->spun_from = from;
    return rc;
}

/* Readies the waiting tasks whose socket is ready or deadline passed;
 * block: waits for the first of them, else only looks (tasks are ready to
 * run, but a task that yields each turn must not starve the others). */
static void poll_waiting(batch *b, int block)
{
    struct pollfd fds[BITT_BATCH_AT_ONCE];
    task *who[BITT_BATCH_AT_ONCE];
    size_t n = 0, sockets = 0;
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < b->ntasks; i++) {
        task *t = &b->tasks[i];
        if (t->state != T_WAITING)
            continue;
        fds[n] = (struct pollfd){.fd = t->fd, .events = t->events};
        who[n++] = t;
        sockets += t->fd >= 0;
        if (t->deadline < first)
            first = t->deadline;
    }
    if (!n || (!block && !sockets && first > bitt__monotonic_ms()))
        return; /* nothing a look could change */
    int rc = block ? spin_first(who, fds, n) : 0;
    if (rc == 0) {
        int64_t left = block ? first - bitt__monotonic_ms() : 0;
        if (left < 0)
            left = 0;
        rc = poll(fds, (nfds_t)n, left > 60000 ? 60000 : (int)left);
    }
    if (rc < 0 && errno != EINTR) {
        for (size_t i = 0; i < n; i++)
            make_ready(b, who[i], -1); /* each call fails on its own */
        return;
    }
    int64_t now = bitt__monotonic_ms();
    for (size_t i = 0; i < n; i++) {
        if (rc > 0 && fds[i].revents)
            make_ready(b, who[i], 1);
        else if (now >= who[i]->deadline)
            make_ready(b, who[i], 0);
    }
}

int bitt_batch_run(bitt_batch_fn fn, void *arg, size_t n)
{
    bitt__error_reset();
    if (!fn)
        return bitt__fail(BITT_EINVAL, "batch: fn is NULL");
    if (bitt__io_self() || running_batch)
        return bitt__fail(BITT_EUSAGE, "batch: bitt_batch_run called from a running task");
    if (n == 0)
        return BITT_OK;
    task tasks[BITT_BATCH_AT_ONCE];
    size_t want = n < BITT_BATCH_AT_ONCE ? n : BITT_BATCH_AT_ONCE;
    memset(tasks, 0, sizeof tasks);
    size_t got = stacks_take(tasks, want);
    if (!got)
        return bitt__fail(BITT_ENOMEM, "batch: cannot map a task stack");
    batch b = {.fn = fn, .arg = arg, .n = n, .ntasks = got, .tasks = tasks, .failed = n};
    b.hook = (bitt__io_hook){.wait = hook_wait,
                             .self = hook_self,
                             .wake = hook_wake,
                             .ctx = &b,
                             .others_ready = hook_others_ready,
                             .wait_spin = hook_wait_spin};
    const bitt__io_hook *outer = bitt__io_hook_get();
    bitt__io_hook_set(&b.hook);
    running_batch = &b;
    while (b.next < b.n || b.live) {
        start_tasks(&b);
        if (b.rlen)
            run_turn(&b);
        poll_waiting(&b, b.rlen == 0);
    }
    running_batch = NULL;
    bitt__io_hook_set(outer);
    stacks_give(tasks, got);
    if (b.failed < n) {
        bitt__error_restore(&b.failure);
        return b.failed_rc;
    }
    bitt__error_reset();
    return BITT_OK;
}
