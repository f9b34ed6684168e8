/*
 * tests/c/test_cancel.c: cancel tokens (bitt.h, "cancellation") ending
 * waits from another thread, on memory:, a SQLite file and the servers of
 * $BITT_TEST_POSTGRES_URL and $BITT_TEST_REDIS_URL ($BITT_TEST_BACKENDS
 * leaves backends out, as for test_contract).
 *
 * A waiting call is seen to be waiting through a hook: the store's vtable
 * is swapped for a copy whose queue_claim and pubsub_fetch count their
 * calls, so the token fires once the waiter has made its first look and
 * found nothing, past the check a call makes before it starts. Every wait
 * asked for is 60 s: a cancelled wait is checked by its result (a wait that
 * ran out gives BITT_OK or BITT_NOTFOUND, never BITT_ECANCELED), and the
 * hang guard, far longer, only ends a test that would never end. The same
 * hook fires the token right after a claim that got messages, so the
 * hand-back of core/queue.c runs on every backend, not only when a race
 * lands there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "bitt.h"
#include "contract.h"
#include "internal.h"
#include "scale.h"

#define WAIT_MS 60000
#define GUARD_S 600 /* a hang guard, never a timing check */
#define FIRERS 8
#define MAX_SNOOZED 16

/* ---- the hooked vtable -------------------------------------------------------- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    const bitt_backend_ops *real;
    bitt_backend_ops hooked;
    int claims, fetches;        /* calls that returned */
    bitt_cancel *fire_on_claim; /* fired after a claim that got messages */
    int snoozes;
    uint64_t snoozed[MAX_SNOOZED];
    char snoozed_token[MAX_SNOOZED][BITT_TOKEN_LEN + 1];
    int64_t snooze_delay_max;
} H = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void signal_hook(int *counter)
{
    pthread_mutex_lock(&H.lock);
    ++*counter;
    pthread_cond_broadcast(&H.cond);
    pthread_mutex_unlock(&H.lock);
}

static int hooked_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                        int64_t lease_ms, bitt_messages *out)
{
    int rc = H.real->queue_claim(be, t, topic, limit, lease_ms, out);
    if (!rc && out->count && H.fire_on_claim)
        bitt_cancel_fire(H.fire_on_claim);
    signal_hook(&H.claims);
    return rc;
}

static int hooked_fetch(bitt_backend *be, const bitt_time *t, const char *channel, uint64_t after,
                        size_t limit, bitt_messages *out)
{
    int rc = H.real->pubsub_fetch(be, t, channel, after, limit, out);
    signal_hook(&H.fetches);
    return rc;
}

static int hooked_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                         const char *token, int64_t delay_ms)
{
    pthread_mutex_lock(&H.lock);
    if (H.snoozes < MAX_SNOOZED) {
        H.snoozed[H.snoozes] = id;
        snprintf(H.snoozed_token[H.snoozes], sizeof H.snoozed_token[0], "%s", token);
    }
    H.snoozes++;
    if (delay_ms > H.snooze_delay_max)
        H.snooze_delay_max = delay_ms;
    pthread_mutex_unlock(&H.lock);
    return H.real->queue_snooze(be, t, topic, id, token, delay_ms);
}

static void install_hooks(bitt_store *s)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&H.cond, &attr);
    pthread_condattr_destroy(&attr);
    H.real = s->ops;
    H.hooked = *s->ops;
    H.hooked.queue_claim = hooked_claim;
    H.hooked.pubsub_fetch = hooked_fetch;
    assert_non_null(H.real->queue_snooze);
    H.hooked.queue_snooze = hooked_snooze;
    H.claims = H.fetches = H.snoozes = 0;
    H.fire_on_claim = NULL;
    H.snooze_delay_max = -1;
    s->ops = &H.hooked;
}

/* Waits until *counter >= n; a test that never gets there hangs: abort. */
static void await_count(const int *counter, int n, const char *what)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += GUARD_S;
    pthread_mutex_lock(&H.lock);
    while (*counter < n)
        if (pthread_cond_timedwait(&H.cond, &H.lock, &until)) {
            fprintf(stderr, "test_cancel: hang guard: no %s after %d s\n", what, GUARD_S);
            abort();
        }
    pthread_mutex_unlock(&H.lock);
}

/* ---- stores ------------------------------------------------------------------- */

static bitt_store *open_store(ct_backend b)
{
    static int opened;
    char url[1200];
    int n = ++opened;
    if (b == CT_MEMORY) {
        snprintf(url, sizeof url, "memory:");
    } else if (b == CT_SQLITE_FILE) {
        char path[900];
        snprintf(path, sizeof path, "%s/cancel-%ld-%d.db", ct_tmpdir(), (long)getpid(), n);
        unlink(path);
        snprintf(url, sizeof url, "sqlite:%s", path);
    } else {
        const char *base = ct_backend_server(b);
        if (!base)
            fail_msg("%s: set BITT_TEST_%s_URL (scripts/test starts a server), or leave the "
                     "backend out with BITT_TEST_BACKENDS",
                     ct_backend_name(b), b == CT_POSTGRES ? "POSTGRES" : "REDIS");
        snprintf(url, sizeof url, "%s%c%s=cancel_%ld_%d%s", base, strchr(base, '?') ? '&' : '?',
                 b == CT_POSTGRES ? "schema" : "prefix", (long)getpid(), n,
                 b == CT_POSTGRES ? "&connect_timeout=300" : "");
    }
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s) != BITT_OK)
        fail_msg("%s: open: %s", ct_backend_name(b), bitt_error_last());
    assert_int_equal(bitt_clock_set_manual(s, 1000000), BITT_OK);
    install_hooks(s);
    return s;
}

static void close_store(bitt_store *s)
{
    s->ops = H.real;
    bitt_store_close(s);
    pthread_cond_destroy(&H.cond);
}

static uint64_t enqueue(bitt_store *s, const char *payload, uint32_t max_attempts)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.max_attempts = max_attempts;
    uint64_t id = 0;
    assert_int_equal(bitt_queue_enqueue(s, "t", payload, strlen(payload), BITT_KIND_BYTES, &o, &id),
                     BITT_OK);
    return id;
}

static void expect_stats(bitt_store *s, uint64_t pending, uint64_t processing, uint64_t dead)
{
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    assert_int_equal(st.pending, pending);
    assert_int_equal(st.processing, processing);
    assert_int_equal(st.dead, dead);
}

/* A plain dequeue of up to limit messages: each has attempts 1. */
static bitt_messages *dequeue_fresh(bitt_store *s, uint32_t limit, size_t want)
{
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = limit;
    bitt_messages *list = NULL;
    assert_int_equal(bitt_queue_dequeue(s, "t", &o, &list), BITT_OK);
    assert_int_equal(bitt_messages_count(list), want);
    for (size_t i = 0; i < want; i++)
        assert_int_equal(bitt_message_attempts(bitt_messages_at(list, i)), 1);
    return list;
}

/* The next plain dequeue takes message id, on its first attempt. */
static void expect_dequeued(bitt_store *s, uint64_t id)
{
    bitt_messages *list = dequeue_fresh(s, 1, 1);
    assert_int_equal(bitt_message_id(bitt_messages_at(list, 0)), id);
    bitt_messages_free(list);
}

/* The next plain subscription call gets payload (a string). */
static void expect_next(bitt_sub *sub, const char *payload)
{
    bitt_message *m = NULL;
    assert_int_equal(bitt_pubsub_next(sub, WAIT_MS, &m), BITT_OK);
    size_t len = 0;
    const uint8_t *p = bitt_message_payload(m, &len);
    assert_int_equal(len, strlen(payload));
    assert_memory_equal(p, payload, len);
    bitt_message_free(m);
}

static bitt_cancel *new_cancel(void)
{
    bitt_cancel *c = NULL;
    assert_int_equal(bitt_cancel_new(&c), BITT_OK);
    assert_non_null(c);
    return c;
}

/* ---- a waiting call on another thread ------------------------------------------ */

typedef struct waiter {
    pthread_t thread;
    bitt_store *store;
    bitt_sub *sub; /* NULL: a dequeue */
    bitt_cancel *cancel;
    uint32_t limit;
    int rc, last_code;
    bitt_messages *msgs;
    bitt_message *msg;
    int done;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    if (w->sub) {
        w->msg = (bitt_message *)w; /* the call must set *out, also to NULL */
        w->rc = bitt_pubsub_next_cancel(w->sub, WAIT_MS, w->cancel, &w->msg);
    } else {
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        o.limit = w->limit;
        o.wait_ms = WAIT_MS;
        w->msgs = (bitt_messages *)w;
        w->rc = bitt_queue_dequeue_cancel(w->store, "t", &o, w->cancel, &w->msgs);
    }
    w->last_code = bitt_error_last_code();
    signal_hook(&w->done);
    return NULL;
}

static void start_n(waiter *w, bitt_store *s, bitt_sub *sub, bitt_cancel *cancel, uint32_t limit)
{
    *w = (waiter){.store = s, .sub = sub, .cancel = cancel, .limit = limit};
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

static void start(waiter *w, bitt_store *s, bitt_sub *sub, bitt_cancel *cancel)
{
    start_n(w, s, sub, cancel, 1);
}

static void finish(waiter *w)
{
    await_count(&w->done, 1, "return from the waiting call");
    pthread_join(w->thread, NULL);
}

static void expect_cancelled(const waiter *w)
{
    assert_int_equal(w->rc, BITT_ECANCELED);
    assert_int_equal(w->last_code, BITT_ECANCELED);
    assert_null(w->sub ? (void *)w->msg : (void *)w->msgs);
}

/* A waiting call (a dequeue, or a wait of sub) whose token fires once it
 * has looked once and found nothing: it must end cancelled. */
static void cancel_while_waiting(bitt_store *s, bitt_sub *sub, bitt_cancel *c)
{
    int *looks = sub ? &H.fetches : &H.claims;
    int seen = *looks; /* no other thread runs calls here */
    waiter w;
    start(&w, s, sub, c);
    await_count(looks, seen + 1, sub ? "fetch by the waiter" : "claim by the waiter");
    bitt_cancel_fire(c);
    finish(&w);
    expect_cancelled(&w);
}

/* ---- the tests -------------------------------------------------------------------- */

/* A dequeue waiting on an empty topic ends when its token fires, and has
 * leased nothing: the message enqueued after it goes to the next dequeue
 * on its first attempt. */
static void dequeue_wait_cancelled(ct_backend b)
{
    bitt_store *s = open_store(b);
    bitt_cancel *c = new_cancel();
    cancel_while_waiting(s, NULL, c);
    uint64_t id = enqueue(s, "m", 1);
    expect_stats(s, 1, 0, 0);
    expect_dequeued(s, id);
    bitt_cancel_free(c);
    close_store(s);
}

/* A subscription wait ends when its token fires; the message published
 * afterwards is the next plain call's. */
static void next_wait_cancelled(ct_backend b)
{
    bitt_store *s = open_store(b);
    bitt_sub *sub = NULL;
    assert_int_equal(bitt_pubsub_subscribe(s, "c", &sub), BITT_OK);
    bitt_cancel *c = new_cancel();
    cancel_while_waiting(s, sub, c);
    assert_int_equal(bitt_pubsub_publish(s, "c", "m1", 2), BITT_OK);
    expect_next(sub, "m1");
    bitt_pubsub_close(sub);
    bitt_cancel_free(c);
    close_store(s);
}

/* A token fired before the call: BITT_ECANCELED at once, with a message
 * there to take, and nothing claimed or consumed. */
static void fired_before_call(ct_backend b)
{
    bitt_store *s = open_store(b);
    bitt_sub *sub = NULL;
    assert_int_equal(bitt_pubsub_subscribe(s, "c", &sub), BITT_OK);
    uint64_t id = enqueue(s, "m", 1);
    assert_int_equal(bitt_pubsub_publish(s, "c", "m1", 2), BITT_OK);
    bitt_cancel *c = new_cancel();
    bitt_cancel_fire(c);
    assert_int_equal(bitt_cancel_fired(c), 1);
    waiter w;
    start(&w, s, NULL, c);
    finish(&w);
    expect_cancelled(&w);
    assert_int_equal(H.claims, 0);
    start(&w, s, sub, c);
    finish(&w);
    expect_cancelled(&w);
    assert_int_equal(H.fetches, 0);
    expect_stats(s, 1, 0, 0);
    expect_dequeued(s, id);
    expect_next(sub, "m1");
    bitt_pubsub_close(sub);
    bitt_cancel_free(c);
    close_store(s);
}

/* A fired token ends every call until reset; after a reset it is a token
 * that has not fired. NULL is a token that never fires. */
static void reset_and_null(ct_backend b)
{
    bitt_store *s = open_store(b);
    assert_int_equal(bitt_cancel_new(NULL), BITT_EINVAL);
    bitt_cancel_fire(NULL);
    bitt_cancel_reset(NULL);
    bitt_cancel_free(NULL);
    assert_int_equal(bitt_cancel_fired(NULL), 0);

    bitt_cancel *c = new_cancel();
    assert_int_equal(bitt_cancel_fired(c), 0);
    bitt_cancel_fire(c);
    bitt_cancel_fire(c);
    assert_int_equal(bitt_cancel_fired(c), 1);
    bitt_cancel_reset(c);
    assert_int_equal(bitt_cancel_fired(c), 0);

    enqueue(s, "a", 3);
    enqueue(s, "b", 3);
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    bitt_messages *list = NULL;
    assert_int_equal(bitt_queue_dequeue_cancel(s, "t", &o, c, &list), BITT_OK);
    assert_int_equal(bitt_messages_count(list), 1);
    bitt_messages_free(list);
    bitt_cancel_fire(c);
    assert_int_equal(bitt_queue_dequeue_cancel(s, "t", &o, c, &list), BITT_ECANCELED);
    assert_null(list);
    assert_int_equal(bitt_queue_dequeue_cancel(s, "t", &o, c, &list), BITT_ECANCELED);
    bitt_cancel_reset(c);
    /* NULL: the plain call, which takes the second message */
    assert_int_equal(bitt_queue_dequeue_cancel(s, "t", &o, NULL, &list), BITT_OK);
    assert_int_equal(bitt_messages_count(list), 1);
    assert_int_equal(bitt_message_attempts(bitt_messages_at(list, 0)), 1);
    bitt_messages_free(list);
    assert_int_equal(bitt_queue_dequeue_cancel(s, "t", &o, NULL, &list), BITT_OK);
    assert_int_equal(bitt_messages_count(list), 0);
    bitt_messages_free(list);
    assert_int_equal(bitt_queue_dequeue_cancel(s, "t", &o, NULL, NULL), BITT_EINVAL);
    expect_stats(s, 0, 2, 0);

    bitt_sub *sub = NULL;
    bitt_message *m = NULL;
    assert_int_equal(bitt_pubsub_subscribe(s, "c", &sub), BITT_OK);
    assert_int_equal(bitt_pubsub_next_cancel(sub, 0, NULL, &m), BITT_NOTFOUND);
    assert_int_equal(bitt_pubsub_next_cancel(sub, 0, c, &m), BITT_NOTFOUND);
    assert_int_equal(bitt_pubsub_publish(s, "c", "m1", 2), BITT_OK);
    assert_int_equal(bitt_pubsub_next_cancel(sub, WAIT_MS, NULL, &m), BITT_OK);
    size_t len = 0;
    assert_memory_equal(bitt_message_payload(m, &len), "m1", 2);
    bitt_message_free(m);
    assert_int_equal(bitt_pubsub_next_cancel(NULL, 0, NULL, &m), BITT_EINVAL);
    bitt_pubsub_close(sub);
    bitt_cancel_free(c);
    close_store(s);
}

typedef struct firer {
    pthread_t thread;
    bitt_cancel *cancel;
    pthread_barrier_t *barrier;
    int seen; /* fired() was 1 after its own fire */
} firer;

static void *firer_main(void *arg)
{
    firer *f = arg;
    pthread_barrier_wait(f->barrier);
    f->seen = 1;
    for (int i = 0; i < 1000; i++) {
        bitt_cancel_fire(f->cancel);
        f->seen &= bitt_cancel_fired(f->cancel);
    }
    return NULL;
}

/* One token, fired from FIRERS threads at once, ends two calls waiting on
 * it: a dequeue and a subscription wait. */
static void many_firers(ct_backend b)
{
    bitt_store *s = open_store(b);
    bitt_sub *sub = NULL;
    assert_int_equal(bitt_pubsub_subscribe(s, "c", &sub), BITT_OK);
    bitt_cancel *c = new_cancel();
    waiter wq, wp;
    start(&wq, s, NULL, c);
    start(&wp, s, sub, c);
    await_count(&H.claims, 1, "claim by the waiter");
    await_count(&H.fetches, 1, "fetch by the waiter");
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, FIRERS);
    firer f[FIRERS];
    for (int i = 0; i < FIRERS; i++) {
        f[i] = (firer){.cancel = c, .barrier = &barrier};
        assert_int_equal(pthread_create(&f[i].thread, NULL, firer_main, &f[i]), 0);
    }
    for (int i = 0; i < FIRERS; i++) {
        pthread_join(f[i].thread, NULL);
        assert_int_equal(f[i].seen, 1);
    }
    pthread_barrier_destroy(&barrier);
    finish(&wq);
    finish(&wp);
    expect_cancelled(&wq);
    expect_cancelled(&wp);
    enqueue(s, "m", 1);
    bitt_messages_free(dequeue_fresh(s, 1, 1));
    bitt_pubsub_close(sub);
    bitt_cancel_free(c);
    close_store(s);
}

/* The token fires while a claim runs (the hook fires it as the claim
 * returns messages): the call hands them back with snooze 0, so they are
 * pending again with no attempt used, their tokens dead, and a max_attempts
 * 1 message still has its one attempt. */
static void hand_back(ct_backend b)
{
    bitt_store *s = open_store(b);
    uint64_t ids[3];
    for (int i = 0; i < 3; i++)
        ids[i] = enqueue(s, "m", 1);
    bitt_cancel *c = new_cancel();
    H.fire_on_claim = c;
    waiter w;
    start_n(&w, s, NULL, c, 3);
    finish(&w);
    H.fire_on_claim = NULL;
    expect_cancelled(&w);
    assert_int_equal(H.claims, 1);
    assert_int_equal(H.snoozes, 3);
    assert_int_equal(H.snooze_delay_max, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(H.snoozed[i], ids[i]);
        assert_int_equal(bitt_queue_ack(s, "t", ids[i], H.snoozed_token[i]), BITT_ETOKEN);
    }
    expect_stats(s, 3, 0, 0);
    bitt_messages *list = dequeue_fresh(s, 3, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(bitt_message_id(bitt_messages_at(list, (size_t)i)), ids[i]);
    bitt_messages_free(list);
    expect_stats(s, 0, 3, 0);
    bitt_cancel_free(c);
    close_store(s);
}

/* An enqueue and a fire that meet a waiting dequeue: whichever comes first,
 * the message is delivered exactly once, on its first attempt, and never
 * lost. Which way each round goes is not checked. */
static void enqueue_meets_fire(ct_backend b)
{
    bitt_store *s = open_store(b);
    bitt_cancel *c = new_cancel();
    int rounds = ts_scaled(20, 3);
    for (int r = 0; r < rounds; r++) {
        bitt_cancel_reset(c);
        int seen = H.claims;
        waiter w;
        start(&w, s, NULL, c);
        await_count(&H.claims, seen + 1, "claim by the waiter");
        uint64_t id = enqueue(s, "m", 1);
        bitt_cancel_fire(c);
        finish(&w);
        bitt_messages *list = w.rc == BITT_OK ? w.msgs : NULL;
        if (w.rc == BITT_ECANCELED) {
            expect_cancelled(&w);
            list = dequeue_fresh(s, 1, 1);
        }
        assert_non_null(list);
        assert_int_equal(bitt_messages_count(list), 1);
        const bitt_message *m = bitt_messages_at(list, 0);
        assert_int_equal(bitt_message_id(m), id);
        assert_int_equal(bitt_message_attempts(m), 1);
        assert_int_equal(bitt_queue_ack(s, "t", id, bitt_message_token(m)), BITT_OK);
        bitt_messages_free(list);
        expect_stats(s, 0, 0, 0);
    }
    bitt_cancel_free(c);
    close_store(s);
}

/* ---- cmocka ------------------------------------------------------------------------ */

typedef void (*case_fn)(ct_backend);

typedef struct tcase {
    case_fn fn;
    ct_backend b;
} tcase;

static void run_case(void **state)
{
    const tcase *t = *state;
    if (!ct_backend_wanted(t->b))
        skip();
    t->fn(t->b);
}

#define CASES(X)                                                                                   \
    X(dequeue_wait_cancelled)                                                                      \
    X(next_wait_cancelled)                                                                         \
    X(fired_before_call) X(reset_and_null) X(many_firers) X(hand_back) X(enqueue_meets_fire)
#define FN(name) name,
#define NAME(name) #name,

int main(void)
{
    static const case_fn fns[] = {CASES(FN)};
    static const char *const names[] = {CASES(NAME)};
    static const ct_backend backends[] = {CT_MEMORY, CT_SQLITE_FILE, CT_POSTGRES, CT_REDIS};
    enum { NF = sizeof fns / sizeof *fns, NB = sizeof backends / sizeof *backends };
    static tcase cases[NF * NB];
    static char labels[NF * NB][96];
    struct CMUnitTest tests[NF * NB];
    for (size_t i = 0; i < NB; i++)
        for (size_t j = 0; j < NF; j++) {
            size_t k = i * NF + j;
            cases[k] = (tcase){fns[j], backends[i]};
            snprintf(labels[k], sizeof labels[k], "%s [%s]", names[j],
                     ct_backend_name(backends[i]));
            tests[k] = (struct CMUnitTest){
                .name = labels[k], .test_func = run_case, .initial_state = &cases[k]};
        }
    return _cmocka_run_group_tests("cancel", tests, NF * NB, NULL, NULL);
}
