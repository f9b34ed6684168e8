/*
 * core/redis/conn.c: the connection to Redis.
 *
 * hiredis connects (with the store's timeout); after that this file does
 * the I/O itself on a non-blocking socket: it formats a command, sends it
 * with MSG_NOSIGNAL (a server that went away must not SIGPIPE the
 * application), and polls for the reply until a deadline, so every
 * command ends within `timeout` ms (a backend call sends one, or a few
 * when a script has to be loaded first). Any failure (I/O, timeout, protocol, a reply
 * over its bound) closes the connection and reports BITT_EBACKEND; the
 * next call connects again. A reply that timed out may still have been
 * applied by the server: the message says so. Only a command that reads
 * (a->retry) is sent once more, on a new connection within the same
 * deadline, when the one it found had been closed (a server restart, an
 * idle timeout): a write never is.
 *
 * Messages name the server as host:port or the socket path, never the
 * user information of the URL.
 *
 * Waiting goes through bitt__io_wait (core/io_wait.h): a caller on a fiber
 * suspends instead of blocking its thread, connects without blocking, and
 * shares a connection with its thread's other fibers (pipe.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "redis_internal.h"

/* ---- raw I/O with a deadline --------------------------------------------------- */

static int send_all(redisContext *c, const char *cmd, size_t len, int64_t deadline,
                    const char **why)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(c->fd, cmd + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = bitt__io_wait(c->fd, POLLOUT, deadline);
            if (w == 0) {
                *why = "timed out sending a command";
                return -2;
            }
            if (w > 0)
                continue;
        }
        *why = "the connection was lost while sending";
        return -1;
    }
    return 0;
}

int bitt__rd_read(redisContext *c, bitt_rd_bound *bound, int64_t deadline, bitt__io_spin *spin,
                  redisReply **out, const char **why)
{
    *out = NULL;
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) {
            *why = bound->exceeded        ? "the reply is larger than any reply this call expects"
                   : bound->out_of_memory ? "out of memory reading the reply (the command may "
                                            "have been applied)"
                                          : "the server sent a malformed reply";
            return -1;
        }
        if (reply) {
            *out = reply;
            return 1;
        }
        if (c->reader->len - c->reader->pos > bound->max_bytes) {
            *why = "the reply is larger than any reply this call expects";
            return -1;
        }
        int w = bitt__io_wait_reply(c->fd, deadline, spin);
        if (w == 0)
            return 0;
        if (w < 0 || redisBufferRead(c) != REDIS_OK) {
            *why = c->err == REDIS_ERR_EOF ? "the server closed the connection"
                                           : "the connection was lost while reading";
            return -1;
        }
    }
}

int bitt__rd_roundtrip(redisContext *c, bitt_rd_bound *bound, const char *cmd, size_t len,
                       int64_t deadline, bitt__io_spin *spin, redisReply **out, const char **why)
{
    *out = NULL;
    int sent = send_all(c, cmd, len, deadline, why);
    if (sent)
        return sent;
    int rc = bitt__rd_read(c, bound, deadline, spin, out, why);
    if (rc == 0) {
        *why = "no reply in time (timeout; the command may still have been applied)";
        return -2;
    }
    return rc < 0 ? -1 : 0;
}

/* ---- connecting ----------------------------------------------------------------- */

static int setup_fail(bitt_backend *be, redisContext *c, const char *step, const char *why)
{
    redisFree(c);
    return bitt__fail(BITT_EBACKEND, "redis %s: %s: %s", be->where, step, why);
}

/* One setup command on a fresh connection; error replies are failures. */
static int setup_command(bitt_backend *be, redisContext *c, bitt_rd_bound *bound, int64_t deadline,
                         const char *step, int argc, const char **argv)
{
    bitt_rd_buf cmd = {0};
    int rc = bitt__rd_resp_format(&cmd, "a setup command", (size_t)argc, argv, NULL);
    if (rc) {
        redisFree(c);
        return rc;
    }
    bound->max_elements = 64;
    bound->max_bytes = 65536;
    bound->elements = bound->bytes = 0;
    bound->exceeded = 0;
    redisReply *r = NULL;
    const char *why = NULL;
    rc = bitt__rd_roundtrip(c, bound, cmd.p, cmd.len, deadline, NULL, &r, &why);
    bitt__rd_buf_free(&cmd);
    if (rc)
        return setup_fail(be, c, step, why);
    if (r->type == REDIS_REPLY_ERROR) {
        char msg[200];
        snprintf(msg, sizeof msg, "%.*s", (int)(r->len > 150 ? 150 : r->len), r->str);
        freeReplyObject(r);
        return setup_fail(be, c, step, msg);
    }
    freeReplyObject(r);
    return BITT_OK;
}

/* A connection started without blocking: NULL once it is established,
 * else why not. */
static const char *connect_finish(redisContext *c, int64_t deadline)
{
    int w = bitt__io_wait(c->fd, POLLOUT, deadline);
    if (w == 0)
        return "Connection timed out";
    int err = 0;
    socklen_t len = sizeof err;
    if (w < 0 || getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return "cannot wait for the connection";
    return err ? strerror(err) : NULL;
}

int bitt__rd_connect(bitt_backend *be, bitt_rd_bound *bound, int64_t deadline, redisContext **out)
{
    *out = NULL;
    int64_t left = deadline - bitt__monotonic_ms();
    if (left < 1)
        left = 1;
    struct timeval tv = {.tv_sec = (time_t)(left / 1000),
                         .tv_usec = (suseconds_t)(left % 1000) * 1000};
    int on_fiber = bitt__io_self() != NULL;
    redisContext *c = on_fiber      ? (be->is_unix ? redisConnectUnixNonBlock(be->path)
                                                   : redisConnectNonBlock(be->host, be->port))
                      : be->is_unix ? redisConnectUnixWithTimeout(be->path, tv)
                                    : redisConnectWithTimeout(be->host, be->port, tv);
    if (!c)
        return bitt__fail(BITT_ENOMEM, "redis: out of memory connecting");
    if (c->err) {
        char why[160];
        snprintf(why, sizeof why, "%s", c->errstr);
        return setup_fail(be, c, "cannot connect", why);
    }
    if (on_fiber) {
        const char *why = connect_finish(c, deadline);
        if (why)
            return setup_fail(be, c, "cannot connect", why);
    }
    int flags = fcntl(c->fd, F_GETFL);
    if (flags < 0 || fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return setup_fail(be, c, "cannot connect", "cannot make the socket non-blocking");
    c->flags &= ~REDIS_BLOCK; /* EAGAIN is not an error any more */
    bitt__rd_reader_setup(c, bound);

    int rc = BITT_OK;
    if (be->password) {
        const char *argv[3] = {"AUTH", be->user ? be->user : be->password, be->password};
        rc = setup_command(be, c, bound, deadline, "authentication failed", be->user ? 3 : 2, argv);
    }
    if (!rc && be->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", be->db);
        const char *argv[2] = {"SELECT", db};
        rc = setup_command(be, c, bound, deadline, "SELECT failed", 2, argv);
    }
    if (!rc)
        *out = c;
    return rc;
}

/* Closes a connection found broken; a script SHA needs no forgetting: a
 * server that lost its scripts answers NOSCRIPT, and scripts.c loads it
 * again. */
static void disconnect(bitt_rd_conn *conn)
{
    if (conn->c) {
        redisFree(conn->c);
        conn->c = NULL;
    }
}

/* ---- one command ---------------------------------------------------------------- */

/* The script registry's error replies: a script or function the server
 * does not have, or FCALL itself refused (unknown, or not in the user's
 * ACL); 0 for any other error. */
static int reply_kind(const bitt_rd_args *a, const redisReply *r)
{
    if (r->len >= 8 && !memcmp(r->str, "NOSCRIPT", 8))
        return BITT_RD_NOSCRIPT;
    if (a->count == 0 || a->len[0] != 5 || memcmp(a->v[0], "FCALL", 5))
        return 0;
    if (r->len == 22 && !memcmp(r->str, "ERR Function not found", 22))
        return BITT_RD_NOFUNCTION;
    if (r->len >= 19 && !memcmp(r->str, "ERR unknown command", 19))
        return BITT_RD_FN_REFUSED;
    if (r->len >= 6 && !memcmp(r->str, "NOPERM", 6) && strstr(r->str, "'fcall'"))
        return BITT_RD_FN_REFUSED;
    return 0;
}

/* The message of an error reply, cut short. */
int bitt__rd_server_error(bitt_backend *be, const char *what, const char *str, size_t n)
{
    int len = (int)(n > 300 ? 300 : n);
    if (n >= 3 && !memcmp(str, "OOM", 3))
        return bitt__fail(BITT_EBACKEND,
                          "redis %s: %s: the server is out of memory (maxmemory reached; nothing "
                          "was written): %.*s",
                          be->where, what, len, str);
    if (n >= 9 && !memcmp(str, "WRONGTYPE", 9))
        return bitt__fail(BITT_EBACKEND,
                          "redis %s: %s: a key under prefix '%s' holds a value of another type "
                          "(was it written by something else?): %.*s",
                          be->where, what, be->prefix, len, str);
    return bitt__fail(BITT_EBACKEND, "redis %s: %s: %.*s", be->where, what, len, str);
}

static int server_error(bitt_backend *be, const char *what, const redisReply *r)
{
    return bitt__rd_server_error(be, what, r->str, r->len);
}

int bitt__rd_call(bitt_backend *be, const char *what, bitt_rd_args *a, size_t items,
                  redisReply **out)
{
    *out = NULL;
    int rc = bitt__rd_args_finish(a);
    if (rc)
        return rc;
    if (a->count > 0x7fffffff)
        return bitt__fail(BITT_ETOOLARGE, "redis: %s: too many arguments", what);
    const char *why = NULL;
    redisReply *r = NULL;
    a->lost = 0;
    /* A caller on a fiber shares a connection with its thread's other
     * fibers: pipe.c appends its command behind theirs. Any other has one to
     * itself: the command is written into its buffer once, and sent again
     * as it is after a reconnect. */
    void *fiber = bitt__io_self();
    bitt_rd_conn *conn = fiber ? bitt__rd_pool_take_piped(be) : bitt__rd_pool_take(be);
    if (!conn)
        return BITT_ENOMEM;
    if (!fiber && (rc = bitt__rd_resp_format(&conn->out, what, a->count, a->v, a->len))) {
        bitt__rd_pool_give(be, conn);
        return rc;
    }
    /* The deadline starts once a connection is ours. */
    const int64_t deadline = bitt__monotonic_ms() + be->timeout_ms;
    /* A connection that sat idle may have been closed by the server (its
     * idle timeout, a restart): a command that only reads is sent once
     * more on a new connection, within the same deadline. A write is not:
     * it may have been applied. */
    for (int attempt = 0;; attempt++) {
        int waited = !conn->c && fiber && conn->connecting
                         ? bitt__rd_pipe_await_connect(conn, fiber, deadline)
                         : 0;
        if (waited) {
            rc = bitt__fail(BITT_EBACKEND, "redis %s: %s: %s", be->where, what,
                            waited == -2 ? "no connection in time (timeout; nothing was sent)"
                                         : "the wait was cancelled (nothing was sent)");
            break;
        }
        int fresh = !conn->c;
        if (fresh) {
            /* fibers joining meanwhile wait for this connect (pipe.c) */
            conn->connecting = fiber != NULL;
            rc = bitt__rd_connect(be, &conn->bound, deadline, &conn->c);
            if (fiber)
                bitt__rd_pipe_connect_done(conn);
            if (rc)
                break;
        }
        int io;
        if (fiber) {
            io = bitt__rd_pipe_roundtrip(be, conn, fiber, what, a, items, deadline, &r, &why);
            if (io == BITT_RD_PIPE_UNSENT) {
                rc = bitt_error_last_code(); /* recorded by the append */
                break;
            }
        } else {
            bitt__rd_bound_reset(be, &conn->bound, items);
            io = bitt__rd_roundtrip(conn->c, &conn->bound, conn->out.p, conn->out.len, deadline,
                                    &conn->spin, &r, &why);
        }
        if (!io)
            break;
        int exceeded = conn->bound.exceeded, oom = conn->bound.out_of_memory;
        int again = io == -1 && a->retry && !fresh && attempt == 0 && !exceeded && !oom;
        if (fiber) {
            bitt__rd_pool_give_piped(be, conn); /* the last user closes it */
            conn = again ? bitt__rd_pool_take_piped(be) : NULL;
            if (again && !conn) {
                a->lost = 1;
                return BITT_ENOMEM;
            }
        } else {
            disconnect(conn);
        }
        if (again)
            continue;
        rc = bitt__fail(oom ? BITT_ENOMEM : BITT_EBACKEND,
                        "redis %s: %s: %s; the connection was closed and the next call "
                        "reconnects",
                        be->where, what, why);
        break;
    }
    if (conn) {
        if (fiber)
            bitt__rd_pool_give_piped(be, conn);
        else
            bitt__rd_pool_give(be, conn);
    }
    if (rc) {
        a->lost = 1;
        return rc;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        int special = reply_kind(a, r);
        if (special) {
            freeReplyObject(r);
            return special;
        }
        rc = server_error(be, what, r);
        freeReplyObject(r);
        return rc;
    }
    *out = r;
    return BITT_OK;
}

int bitt__rd_simple(bitt_backend *be, const char *what, redisReply **out, ...)
{
    bitt_rd_args a;
    bitt__rd_args_init(&a);
    va_list ap;
    va_start(ap, out);
    for (const char *s; (s = va_arg(ap, const char *));)
        bitt__rd_arg_str(&a, s);
    va_end(ap);
    a.retry = 1; /* setup commands and single-key reads: safe to send again */
    int rc = bitt__rd_call(be, what, &a, 1, out);
    bitt__rd_args_free(&a);
    return rc;
}
