/*
 * tests/faults/support/fault.h: what the fault programs share: clocks,
 * shared memory that outlives a SIGKILLed child, counts that grow with
 * --long (BITT_FAULT_LONG=1), private PostgreSQL and Redis servers started
 * with the project's scripts in the program's own temp dir (so crashing
 * them disturbs no other test), and the figure lines the programs print.
 */
#ifndef BITT_FAULT_H
#define BITT_FAULT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bitt.h"

/* Wall clock (the clock the stores' leases use) and a monotonic one, ms. */
int64_t fault_now_ms(void);
int64_t fault_mono_ms(void);
void fault_sleep_ms(int64_t ms);
/* A per-process random number in [lo, hi]. */
int64_t fault_rand(int64_t lo, int64_t hi);
void fault_seed(uint64_t seed);

/* Zeroed memory shared with the children forked after it (MAP_SHARED). */
void *fault_shared(size_t size);

/* The count to use: env overrides, else long_count when BITT_FAULT_LONG=1,
 * else short_count. */
int64_t fault_count(const char *env, int64_t short_count, int64_t long_count);
int fault_long(void);

/* Prints "FIGURE <program> <backend> <name> <value>": the lines
 * docs/reliability.md quotes. */
void fault_figure(const char *backend, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fault_set_program(const char *name);
/* Prints a violation and counts it; fault_violations() says how many. */
void fault_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t fault_violations(void);

/* A server (or SQLite file) for one program run. */
typedef struct fault_server {
    char backend[16]; /* sqlite, postgres or redis */
    char dir[256];    /* private temp dir: the file or the server's data */
    char url[512];    /* base URL, without options */
    int started;
} fault_server;

/* Makes a private temp dir and, for postgres/redis, starts a server in it
 * (redis_args: extra redis-server options, may be NULL). 0 or -1 (printed). */
int fault_server_start(fault_server *s, const char *backend, const char *redis_args);
/* Stops the server and removes the dir. */
void fault_server_stop(fault_server *s);
/* Crashes the server (PostgreSQL: pg_ctl stop -m immediate; Redis: kill -9)
 * or restarts it on the same port with the same data. 0 or -1. */
int fault_server_crash(fault_server *s);
int fault_server_restart(fault_server *s);
/* Freezes the server (SIGSTOP to redis-server, or to the postmaster and
 * every child of it) or thaws it (SIGCONT): a server that accepts
 * connections and never answers. 0 or -1. */
int fault_server_freeze(fault_server *s, int freeze);
/* The store URL with options appended (PostgreSQL: schema=; Redis:
 * prefix=; SQLite: the file), e.g. fault_url(s, buf, n, "synchronous=full"). */
const char *fault_url(const fault_server *s, char *buf, size_t size, const char *options);
/* Opens url, retrying while the server is coming up (bounded); NULL on failure. */
bitt_store *fault_open(const char *url);

/* A failure a killed peer or a crashed server may cause (BITT_EBUSY,
 * BITT_EBACKEND): the caller retries. */
int fault_transient(int rc);
/* The decimal id a test message carries as its payload (0 if none). */
int64_t fault_payload_id(const bitt_message *m);
/* BITT_OK with *idle = nothing pending, delayed or processing on topic. */
int fault_queue_idle(bitt_store *store, const char *topic, int *idle);

/* Calls fn(ctx, key, len) for every live key starting with prefix, page
 * by page; BITT_OK or the failing status. */
int fault_list_keys(bitt_store *store, const char *prefix,
                    void (*fn)(void *ctx, const uint8_t *key, size_t len), void *ctx);

/* Forks a child running fn(arg); the child exits with fn's result. */
pid_t fault_spawn(int (*fn)(void *), void *arg);

#endif /* BITT_FAULT_H */
