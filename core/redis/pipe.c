/*
 * core/redis/pipe.c: calls on fibers sharing one connection (pipelining).
 *
 * A binding that runs calls on fibers of one thread (core/io_wait.h: Node's
 * event loop) may have dozens in flight; one connection each would mean
 * dozens of connections and a send and a read per call. Instead the calls
 * of one thread share a connection: each appends its command to the
 * connection's output and joins a queue; Redis answers in order, so the
 * n-th reply read belongs to the n-th request queued.
 *
 * Fibers of one thread never run at once and switch only inside
 * bitt__io_wait, so the state here needs no lock; the pool (pool.c) only
 * lets fibers of the connection's owner thread join it.
 *
 *   sending   the first caller that finds nobody sending flushes out,
 *             including what others append while it waits for the socket;
 *             when calls are already in flight, or other fibers are ready
 *             to run, it first yields once, so that one send carries
 *             every command of that turn
 *   reading   only the request at the head of the queue waits on the
 *             socket; it reads whatever arrived, hands every complete
 *             reply to its request and wakes that request's fiber; the
 *             others wait to be woken, and the new head takes over
 *   failing   any failure (I/O, timeout, protocol, a reply over its bound)
 *             breaks the connection: every queued call fails with the
 *             same reason, and the last call to leave closes it (pool.c),
 *             so no fiber is ever left waiting on a closed descriptor
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "redis_internal.h"

static const char timeout_why[] =
    "no reply in time (timeout; the command may still have been applied)";

void bitt__rd_pipe_break(bitt_rd_conn *conn, const char *why)
{
    if (!conn->broken) {
        conn->broken = 1;
        conn->why = why;
    }
    void *self = bitt__io_self();
    for (bitt_rd_req *q = conn->head; q; q = q->next) {
        q->done = -1;
        if (q->fiber != self)
            bitt__io_wake(q->fiber);
    }
    conn->head = conn->tail = NULL;
}

int bitt__rd_pipe_await_connect(bitt_rd_conn *conn, void *fiber, int64_t deadline)
{
    bitt_rd_req me = {.fiber = fiber, .next = conn->connect_waiters};
    conn->connect_waiters = &me;
    int rc = 0;
    while (conn->connecting && !me.done && !rc) {
        int w = bitt__io_wait(-1, 0, deadline);
        if (w <= 0 && !me.done && conn->connecting)
            rc = w == 0 ? -2 : -1; /* -1: the wait was cancelled (teardown) */
    }
    /* still listed when it left early: nobody may wake a fiber that left */
    for (bitt_rd_req **q = &conn->connect_waiters; *q; q = &(*q)->next)
        if (*q == &me) {
            *q = me.next;
            break;
        }
    return rc;
}

void bitt__rd_pipe_connect_done(bitt_rd_conn *conn)
{
    conn->connecting = 0;
    bitt_rd_req *q = conn->connect_waiters;
    conn->connect_waiters = NULL;
    for (; q; q = q->next) {
        q->done = 1;
        bitt__io_wake(q->fiber);
    }
}

void bitt__rd_pipe_reset(bitt_rd_conn *conn)
{
    conn->out.len = conn->out_sent = 0;
    conn->flushing = 0;
    conn->broken = conn->timed_out = 0;
    conn->why = NULL;
    conn->head = conn->tail = NULL;
}

/* Sends out until it is empty (others may append meanwhile), or the
 * connection is broken. With `gather`, it first lets the thread run once
 * (a wait that ends at once), so that the calls started meanwhile go out
 * in the same send. */
static void flush(bitt_rd_conn *conn, int gather, int64_t deadline)
{
    conn->flushing = 1;
    if (gather)
        bitt__io_wait(-1, 0, bitt__monotonic_ms());
    while (!conn->broken && conn->out_sent < conn->out.len) {
        ssize_t n = send(conn->c->fd, conn->out.p + conn->out_sent, conn->out.len - conn->out_sent,
                         MSG_NOSIGNAL);
        if (n > 0) {
            conn->out_sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = bitt__io_wait(conn->c->fd, POLLOUT, deadline);
            if (w > 0)
                continue;
            if (w == 0) {
                bitt__rd_pipe_break(conn, "timed out sending a command");
                conn->timed_out = 1;
                break;
            }
        }
        bitt__rd_pipe_break(conn, "the connection was lost while sending");
    }
    conn->flushing = 0;
}

/* Hands every complete reply to its request: -1 when the connection broke. */
static int take_replies(bitt_backend *be, bitt_rd_conn *conn, void *self)
{
    redisContext *c = conn->c;
    while (conn->head) {
        bitt_rd_req *q = conn->head;
        if (conn->bound_seq != q->seq) {
            bitt__rd_bound_reset(be, &conn->bound, q->items);
            conn->bound_seq = q->seq;
        }
        void *reply = NULL;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) {
            bitt__rd_pipe_break(conn, conn->bound.exceeded
                                          ? "the reply is larger than any reply this call expects"
                                      : conn->bound.out_of_memory
                                          ? "out of memory reading the reply (the command may "
                                            "have been applied)"
                                          : "the server sent a malformed reply");
            return -1;
        }
        if (!reply) {
            if (c->reader->len - c->reader->pos > conn->bound.max_bytes) {
                bitt__rd_pipe_break(conn, "the reply is larger than any reply this call expects");
                return -1;
            }
            return 0;
        }
        conn->head = q->next;
        if (!conn->head)
            conn->tail = NULL;
        q->next = NULL;
        q->reply = reply;
        q->done = 1;
        if (q->fiber != self)
            bitt__io_wake(q->fiber);
    }
    if (c->reader->len > c->reader->pos) {
        bitt__rd_pipe_break(conn, "the server sent a reply no call was waiting for");
        return -1;
    }
    return 0;
}

/* The head's turn: reads what arrived (never blocks). */
static void read_some(bitt_backend *be, bitt_rd_conn *conn, void *self)
{
    if (redisBufferRead(conn->c) != REDIS_OK) {
        bitt__rd_pipe_break(conn, conn->c->err == REDIS_ERR_EOF
                                      ? "the server closed the connection"
                                      : "the connection was lost while reading");
        return;
    }
    take_replies(be, conn, self);
}

int bitt__rd_pipe_roundtrip(bitt_backend *be, bitt_rd_conn *conn, void *fiber, const char *what,
                            const bitt_rd_args *a, size_t items, int64_t deadline, redisReply **out,
                            const char **why)
{
    *out = NULL;
    if (conn->broken) {
        *why = conn->why;
        return -1;
    }
    if (conn->out_sent == conn->out.len)
        conn->out.len = conn->out_sent = 0; /* all sent: start over */
    if (bitt__rd_resp_append(&conn->out, what, a->count, a->v, a->len))
        return BITT_RD_PIPE_UNSENT;
    bitt_rd_req req = {.fiber = fiber, .items = items, .seq = ++conn->seq};
    /* Calls already in flight: more are likely to come in this turn of the
     * event loop; or fibers started together are about to run (a batch).
     * Alone, the command goes out at once. */
    int gather = conn->head != NULL || bitt__io_others_ready();
    if (conn->tail)
        conn->tail->next = &req;
    else
        conn->head = &req;
    conn->tail = &req;
    if (!conn->flushing)
        flush(conn, gather, deadline);

    while (!req.done) {
        int w;
        if (conn->head == &req) {
            read_some(be, conn, fiber);
            if (req.done)
                break;
            w = bitt__io_wait_reply(conn->c->fd, deadline, &conn->spin);
        } else {
            /* the head reads for us and wakes us */
            w = bitt__io_wait(-1, 0, deadline);
        }
        if (req.done)
            break;
        if (w == 0) {
            bitt__rd_pipe_break(conn, timeout_why);
            conn->timed_out = 1;
            *why = conn->why;
            return -2;
        }
        if (w < 0)
            bitt__rd_pipe_break(conn, "the connection was lost while waiting");
    }
    /* The next request reads now: it may be waiting to be woken. */
    if (conn->head && conn->head->fiber != fiber)
        bitt__io_wake(conn->head->fiber);
    if (req.done < 0) {
        *why = conn->why;
        return conn->timed_out ? -2 : -1; /* a timeout is no cause to send again */
    }
    *out = req.reply;
    return 0;
}
