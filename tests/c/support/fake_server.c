/* tests/c/support/fake_server.c: see fake_server.h. One thread polls the
 * listener, every accepted connection (and, as a proxy, its upstream), and a
 * wake pipe that stops it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "fake_server.h"

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

int fake_closed_port(void)
{
    int port;
    close(listen_any(&port));
    return port;
}

static int connect_local(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A client connection and, for a proxy, its upstream (-1 otherwise). */
typedef struct conn {
    int client, upstream, answered;
} conn;

static void drop(conn *c)
{
    if (c->client >= 0)
        close(c->client);
    if (c->upstream >= 0)
        close(c->upstream);
    c->client = c->upstream = -1;
}

/* Moves what is readable on from to `to` (to < 0: discards it); 0 on EOF. */
static int pump(int from, int to)
{
    char buf[16384];
    ssize_t got = recv(from, buf, sizeof buf, 0);
    if (got <= 0)
        return 0;
    for (ssize_t off = 0; to >= 0 && off < got;) {
        ssize_t sent = send(to, buf + off, (size_t)(got - off), MSG_NOSIGNAL);
        if (sent <= 0)
            return 0;
        off += sent;
    }
    return 1;
}

static void accept_one(fake_server *f, conn *conns)
{
    int fd = accept(f->listener, NULL, NULL);
    if (fd < 0)
        return;
    conn *slot = NULL;
    for (int i = 0; i < FAKE_MAX_CONNS && !slot; i++)
        if (conns[i].client < 0)
            slot = &conns[i];
    if (!slot || f->mode == FAKE_HANG_UP) {
        close(fd);
        return;
    }
    slot->client = fd;
    slot->answered = 0;
    if (f->mode == FAKE_PROXY && (slot->upstream = connect_local(f->target_port)) < 0)
        drop(slot);
}

static void serve(fake_server *f, conn *c, short client_ev, short upstream_ev)
{
    if (client_ev) {
        int ok = pump(c->client, c->upstream);
        if (ok && f->mode == FAKE_REPLY && !c->answered) {
            c->answered = 1;
            ok = send(c->client, f->reply, strlen(f->reply), MSG_NOSIGNAL) > 0;
        }
        if (!ok) {
            drop(c);
            return;
        }
    }
    if (upstream_ev && !pump(c->upstream, c->client))
        drop(c);
}

static void *fake_main(void *arg)
{
    fake_server *f = arg;
    conn conns[FAKE_MAX_CONNS];
    for (int i = 0; i < FAKE_MAX_CONNS; i++)
        conns[i].client = conns[i].upstream = -1;
    for (;;) {
        struct pollfd p[2 + 2 * FAKE_MAX_CONNS];
        int n = 0;
        p[n++] = (struct pollfd){.fd = f->wake[0], .events = POLLIN};
        p[n++] = (struct pollfd){.fd = f->listener, .events = POLLIN};
        for (int i = 0; i < FAKE_MAX_CONNS; i++) {
            p[n++] = (struct pollfd){.fd = conns[i].client, .events = POLLIN};
            p[n++] = (struct pollfd){.fd = conns[i].upstream, .events = POLLIN};
        }
        if (poll(p, (nfds_t)n, -1) < 0)
            continue;
        if (p[0].revents)
            break;
        if (p[1].revents)
            accept_one(f, conns);
        for (int i = 0; i < FAKE_MAX_CONNS; i++) {
            short ce = p[2 + 2 * i].revents, ue = p[3 + 2 * i].revents;
            if (conns[i].client >= 0 && (ce || ue))
                serve(f, &conns[i], ce, ue);
        }
    }
    for (int i = 0; i < FAKE_MAX_CONNS; i++)
        drop(&conns[i]);
    return NULL;
}

void fake_start(fake_server *f, fake_mode mode, const char *reply, int target_port)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->reply = reply;
    f->target_port = target_port;
    f->listener = listen_any(&f->port);
    assert_int_equal(listen(f->listener, FAKE_MAX_CONNS), 0);
    assert_int_equal(pipe(f->wake), 0);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

void fake_stop(fake_server *f)
{
    ssize_t w = write(f->wake[1], "x", 1);
    (void)w;
    pthread_join(f->thread, NULL);
    close(f->listener);
    close(f->wake[0]);
    close(f->wake[1]);
}
