/*
 * core/postgres/listen.c: wait_remote, the queue's and the subscriptions'
 * wait, over LISTEN/NOTIFY on a connection of its own.
 *
 * Every enqueue, nack, dead-letter retry, hand-back (extend 0) and publish
 * runs pg_notify(channel, '') in its transaction, where the channel names
 * this store's schema and prefix; the server delivers it at commit to
 * every process listening. wait_remote may run on several threads at once
 * (the engine calls it without the store's mutex): one of them at a time
 * polls the LISTEN connection and the others wait on a condition
 * variable; a notification heard wakes them all. A wait lasts at most 50
 * ms, as everywhere else, so work nobody announces (a delay or a lease
 * running out) is seen as soon as on the other backends.
 *
 * When the connection is (re)made, notifications sent before its LISTEN
 * were missed: that wait returns at once so the caller looks again. A
 * failed connect is not retried for a second; waits then just sleep.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <time.h>

#include "postgres/pg_internal.h"

#define WAIT_SLICE_MS 50
#define RETRY_CONNECT_MS 1000

const char bitt__pg_notify_sql[] = "SELECT pg_notify($1::text, '')";

void bitt__pg_notify_params(const bitt_backend *be, bitt_pg_params *p)
{
    bitt__pg_p_text(p, be->channel);
}

void bitt__pg_listen_init(bitt_backend *be)
{
    pthread_mutex_init(&be->listen.lock, NULL);
    pthread_cond_init(&be->listen.cond, NULL);
}

void bitt__pg_listen_close(bitt_backend *be)
{
    if (be->listen.conn)
        PQfinish(be->listen.conn);
    be->listen.conn = NULL;
    pthread_cond_destroy(&be->listen.cond);
    pthread_mutex_destroy(&be->listen.lock);
}

/* A new listening connection, or NULL. */
static PGconn *listen_connect(bitt_backend *be)
{
    PGconn *conn = bitt__pg_connect(be, "listen");
    if (!conn)
        return NULL;
    char sql[64];
    snprintf(sql, sizeof sql, "LISTEN \"%s\"", be->channel); /* bitt_<hex>: no quoting issue */
    if (bitt__pg_exec_conn(be, conn, sql, "listen") != BITT_OK) {
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

static void sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One turn as the poller, without the lock: 1 when the caller should
 * look at the store again (a notification, or a fresh connection). */
static int poll_once(bitt_backend *be, PGconn **connp, int64_t left, int64_t *retry_at)
{
    if (!*connp) {
        if (bitt__monotonic_ms() < *retry_at) {
            sleep_ms(left);
            return 0;
        }
        *connp = listen_connect(be);
        if (!*connp) {
            *retry_at = bitt__monotonic_ms() + RETRY_CONNECT_MS;
            sleep_ms(left);
            return 0;
        }
        return 1;
    }
    PGconn *conn = *connp;
    int heard = 0;
    struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
    int n = pfd.fd >= 0 ? poll(&pfd, 1, (int)left) : -1;
    if (n < 0 && errno == EINTR)
        return 0;
    if (n != 0) {
        if (n < 0 || !PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK) {
            PQfinish(conn);
            *connp = NULL;
            return 1; /* look again; the next wait reconnects */
        }
        for (PGnotify *note; (note = PQnotifies(conn));) {
            heard = 1;
            PQfreemem(note);
        }
    }
    return heard;
}

int bitt__pg_wait_remote(bitt_backend *be, int64_t max_ms)
{
    bitt_pg_listener *l = &be->listen;
    if (max_ms <= 0)
        return BITT_OK;
    int64_t deadline = bitt__monotonic_ms() + (max_ms < WAIT_SLICE_MS ? max_ms : WAIT_SLICE_MS);
    pthread_mutex_lock(&l->lock);
    uint64_t start = l->generation;
    while (l->generation == start) {
        int64_t left = deadline - bitt__monotonic_ms();
        if (left <= 0)
            break;
        if (!l->polling) {
            l->polling = 1;
            PGconn *conn = l->conn;
            int64_t retry_at = l->retry_at;
            pthread_mutex_unlock(&l->lock);
            int wake = poll_once(be, &conn, left, &retry_at);
            pthread_mutex_lock(&l->lock);
            l->conn = conn;
            l->retry_at = retry_at;
            l->polling = 0;
            if (wake)
                l->generation++;
            /* Wakes the others: to see the generation, or to poll next. */
            pthread_cond_broadcast(&l->cond);
        } else {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += (time_t)(left / 1000);
            until.tv_nsec += (long)(left % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&l->cond, &l->lock, &until);
        }
    }
    pthread_mutex_unlock(&l->lock);
    return BITT_OK;
}
