/*
 * tests/c/support/fake_server.h: a tiny TCP server on 127.0.0.1 in a thread,
 * for the error paths a real server will not take on demand: one that never
 * answers, one that hangs up at once, one that sends a fixed (malicious)
 * reply, and a proxy to a real server whose connections the test can cut in
 * the middle of a session. cmocka must be included before this header.
 */
#ifndef BITT_TEST_FAKE_SERVER_H
#define BITT_TEST_FAKE_SERVER_H

#include <pthread.h>

typedef enum fake_mode {
    FAKE_SILENT,  /* accepts, reads, never answers */
    FAKE_HANG_UP, /* accepts and closes at once */
    FAKE_REPLY,   /* answers the first request with `reply`, then reads on */
    FAKE_PROXY    /* forwards both ways to 127.0.0.1:target_port */
} fake_mode;

#define FAKE_MAX_CONNS 8

typedef struct fake_server {
    fake_mode mode;
    const char *reply;
    int target_port;
    int port; /* where it listens */
    int listener;
    int wake[2]; /* a byte here stops the thread */
    pthread_t thread;
} fake_server;

/* Starts listening on a free port of 127.0.0.1 (f->port). */
void fake_start(fake_server *f, fake_mode mode, const char *reply, int target_port);
/* Closes every connection and the listener (later connections are refused),
 * and joins the thread. Safe to call once per start. */
void fake_stop(fake_server *f);
/* A port of 127.0.0.1 where nothing listens (bound, then closed). */
int fake_closed_port(void);

#endif /* BITT_TEST_FAKE_SERVER_H */
