/* A private Redis server with a raw hiredis connection beside it, for the
 * test_redis_* programs that reconfigure or inspect the server directly.
 * Header-only: only programs that link hiredis include it. */
#ifndef BITT_TEST_PRIVATE_REDIS_H
#define BITT_TEST_PRIVATE_REDIS_H

#include <stdio.h>

#include <hiredis/hiredis.h>

#include "private_server.h"

/* Starts the server (TAG names its temp dir) and connects *raw to it: 0,
 * or -1 after saying why. */
static inline int ts_redis_start(ts_server *s, const char *tag, redisContext **raw)
{
    int port = 0;
    *raw = NULL;
    if (ts_server_start(s, "redis", tag) != 0 || sscanf(s->url, "redis://127.0.0.1:%d", &port) != 1)
        return -1;
    *raw = redisConnect("127.0.0.1", port);
    return *raw && !(*raw)->err ? 0 : -1;
}

/* Closes *raw and stops the server; PROGRAM names the test in the message. */
static inline void ts_redis_stop(ts_server *s, redisContext **raw, const char *program)
{
    if (*raw)
        redisFree(*raw);
    *raw = NULL;
    if (ts_server_stop(s) != 0)
        fprintf(stderr, "%s: could not stop the server in %s\n", program, s->dir);
}

#endif
