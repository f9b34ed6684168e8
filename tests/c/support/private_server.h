/* A private server for one test program, started with the project's
 * scripts/<kind>-test-server in a fresh temp dir, so the test may stop,
 * restart or reconfigure it without touching the shared servers. */
#ifndef BITT_TEST_PRIVATE_SERVER_H
#define BITT_TEST_PRIVATE_SERVER_H

#include <stddef.h>

typedef struct ts_server {
    char script[512]; /* scripts/<kind>-test-server */
    char dir[64];     /* its temp dir */
    char url[256];    /* the URL the script printed */
} ts_server;

/* Starts a server of KIND ("redis" or "postgres") in a new /tmp dir named
 * after TAG: 0, or -1 after saying why on stderr. */
int ts_server_start(ts_server *s, const char *kind, const char *tag);

/* Stops it and removes its dir: 0, or -1 when the script failed. */
int ts_server_stop(ts_server *s);

#endif
