/*
 * core/redis/wait.c: wait_remote on Redis.
 *
 * Enqueues, nacks, retries, hand-backs and publishes PUBLISH on the
 * channel "{prefix}:wake" from inside their scripts. A store's waits share
 * one connection of their own, SUBSCRIBEd to that channel and kept open,
 * so a wake-up that arrives while nobody waits stays in the socket and the
 * next wait returns at once: none is lost between a waiter's look at the
 * store and its wait. One waiter at a time reads the connection (the
 * others sleep on a condition variable); whatever it reads bumps a
 * generation that wakes them all. A new subscription also counts as a
 * wake-up, since anything published before it was not heard.
 *
 * Time-driven work (a delay that ends, a lease that runs out) publishes
 * nothing, so one wait lasts at most WAIT_SLICE_MS: the caller then looks
 * at the store again, as the polling backends do every 50 ms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redis_internal.h"

#define WAIT_SLICE_MS 50
#define RETRY_AFTER_FAILURE_MS 200

void bitt__rd_waiter_init(bitt_rd_waiter *w)
{
    memset(w, 0, sizeof *w);
    if (pthread_mutex_init(&w->lock, NULL))
        return;
    if (pthread_cond_init(&w->cond, NULL)) {
        pthread_mutex_destroy(&w->lock);
        return;
    }
    w->ready = 1;
}

void bitt__rd_waiter_free(bitt_rd_waiter *w)
{
    if (!w->ready)
        return;
    if (w->c)
        redisFree(w->c);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    w->ready = 0;
}

static void set_bound(bitt_rd_bound *b)
{
    b->max_elements = 64;
    b->max_bytes = 65536;
    b->elements = b->bytes = 0;
    b->exceeded = 0;
}

/* Connects and subscribes; 1 when subscribed, -1 on failure. */
static int subscribe(bitt_backend *be, bitt_rd_waiter *w, redisContext **out, int64_t deadline)
{
    redisContext *c = NULL;
    if (bitt__rd_connect(be, &w->bound, deadline, &c))
        return -1;
    char channel[BITT_RD_PREFIX_MAX + 16];
    snprintf(channel, sizeof channel, "%s:wake", be->anchor);
    const char *argv[2] = {"SUBSCRIBE", channel};
    bitt_rd_buf cmd = {0};
    int rc = bitt__rd_resp_format(&cmd, "SUBSCRIBE", 2, argv, NULL) ? -1 : 0;
    redisReply *r = NULL;
    const char *why = NULL;
    set_bound(&w->bound);
    if (!rc)
        rc = bitt__rd_roundtrip(c, &w->bound, cmd.p, cmd.len, deadline, NULL, &r, &why);
    bitt__rd_buf_free(&cmd);
    int ok = !rc && r->type == REDIS_REPLY_ARRAY;
    if (r)
        freeReplyObject(r);
    if (!ok) {
        redisFree(c);
        return -1;
    }
    *out = c;
    return 1;
}

/* Reads c until deadline: 1 when something arrived (everything there is
 * is read), 0 on timeout, -1 on failure (c must go). */
static int read_wakeups(redisContext *c, bitt_rd_bound *b, int64_t deadline)
{
    int got = 0;
    for (;;) {
        redisReply *r = NULL;
        const char *why = NULL;
        set_bound(b);
        int rc = bitt__rd_read(c, b, got ? 0 : deadline, NULL, &r, &why);
        if (rc < 0)
            return -1;
        if (rc == 0)
            return got;
        freeReplyObject(r);
        got = 1;
    }
}

/* One turn as the reader: 1 wake-up, 0 timeout, -1 failure. Without the
 * lock: only the reader touches w->c. */
static int read_turn(bitt_backend *be, bitt_rd_waiter *w, int64_t deadline)
{
    if (!w->c)
        return subscribe(be, w, &w->c, bitt__monotonic_ms() + be->timeout_ms);
    int rc = read_wakeups(w->c, &w->bound, deadline);
    if (rc < 0) {
        redisFree(w->c);
        w->c = NULL;
    }
    return rc;
}

static void timed_wait(bitt_rd_waiter *w, int64_t until_mono)
{
    int64_t left = until_mono - bitt__monotonic_ms();
    if (left <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(left / 1000);
    ts.tv_nsec += (long)(left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cond, &w->lock, &ts);
}

int bitt__rd_wait_remote(bitt_backend *be, int64_t max_ms)
{
    bitt_rd_waiter *w = &be->waiter;
    if (max_ms <= 0)
        return BITT_OK;
    if (max_ms > WAIT_SLICE_MS)
        max_ms = WAIT_SLICE_MS;
    const int64_t deadline = bitt__monotonic_ms() + max_ms;
    if (!w->ready) {
        bitt__notify_wait(bitt__notify_generation(), max_ms);
        return BITT_OK;
    }
    pthread_mutex_lock(&w->lock);
    const uint64_t start = w->generation;
    /* Bounded: each turn ends by the deadline (a connect by its timeout). */
    while (w->generation == start && bitt__monotonic_ms() < deadline) {
        if (w->reading || bitt__monotonic_ms() < w->retry_at) {
            int64_t until = w->reading ? deadline : w->retry_at < deadline ? w->retry_at : deadline;
            timed_wait(w, until);
            continue;
        }
        w->reading = 1;
        pthread_mutex_unlock(&w->lock);
        int rc = read_turn(be, w, deadline);
        pthread_mutex_lock(&w->lock);
        w->reading = 0;
        if (rc > 0)
            w->generation++;
        else if (rc < 0)
            w->retry_at = bitt__monotonic_ms() + RETRY_AFTER_FAILURE_MS;
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
    return BITT_OK;
}
