/*
 * fault_outage MODE: the server crashes (or freezes) under load and comes
 * back (reliability.md, scenario 4). MODE: postgres, postgres-async,
 * postgres-freeze, redis-always, redis-everysec, redis-none, redis-freeze.
 * PostgreSQL stops with pg_ctl stop -m immediate (no checkpoint: crash
 * recovery on start); Redis is kill -9ed, with appendonly yes and
 * appendfsync always or everysec, or without persistence. WRITERS processes
 * set fresh keys all along; each outage lasts about a second, then the
 * server restarts on the same port and data. The -freeze modes SIGSTOP the
 * server instead (it still accepts connections, and never answers) for
 * longer than a call may wait, then SIGCONT it: the calls meet their
 * timeout. The program measures, and checks:
 *  - the store handles opened before the crash reconnect by themselves;
 *  - no call lasts longer than the configured timeout plus a generous
 *    margin (a bound on behaviour: a call never hangs);
 *  - every acknowledged write is there at the end (PostgreSQL with
 *    synchronous_commit on, and Redis with appendfsync always: asserted;
 *    postgres-async (synchronous_commit=off), everysec and no persistence:
 *    the count of lost acknowledged writes is reported, since that is what
 *    the mode promises or does not).
 * Outages: BITT_FAULT_OUTAGES (default 2; 10 with BITT_FAULT_LONG=1).
 */
#define _DEFAULT_SOURCE 1
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"

#define WRITERS 2
#define MAX_WRITES (1u << 22) /* per writer */
#define REDIS_TIMEOUT_MS 1000
#define PG_STATEMENT_TIMEOUT_MS 2000
#define PG_CLIENT_GRACE_MS 5000 /* core/postgres/conn.c: statement_timeout + 5 s */
#define MARGIN_MS 5000          /* generous: the machine is shared and slow */

typedef struct outage_shared {
    int stop;
    int64_t ok, failed, errors;
    int64_t max_call_ms;
    int64_t first_ok_after; /* mono ms of the first ack after crash_at, 0 = none yet */
    int64_t crash_at;       /* mono ms; 0 = no outage running */
    uint32_t next[WRITERS];
    uint8_t *acked; /* WRITERS * MAX_WRITES */
} outage_shared;

static outage_shared *g_sh;
static char g_url[700];

static void atomic_max(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v > cur &&
           !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

static int writer_main(void *arg)
{
    int w = (int)(intptr_t)arg;
    bitt_store *s = fault_open(g_url);
    if (!s)
        return 3;
    while (!__atomic_load_n(&g_sh->stop, __ATOMIC_SEQ_CST)) {
        uint32_t i = g_sh->next[w]++;
        if (i >= MAX_WRITES)
            break;
        char key[32];
        int klen = snprintf(key, sizeof key, "w/%d/%" PRIu32, w, i);
        int64_t t0 = fault_mono_ms();
        int rc = bitt_kv_set(s, key, (size_t)klen, "x", 1, BITT_KIND_BYTES, BITT_TTL_NONE, NULL);
        int64_t t1 = fault_mono_ms();
        atomic_max(&g_sh->max_call_ms, t1 - t0);
        if (rc == BITT_OK) {
            g_sh->acked[(size_t)w * MAX_WRITES + i] = 1;
            __atomic_add_fetch(&g_sh->ok, 1, __ATOMIC_SEQ_CST);
            int64_t crash = __atomic_load_n(&g_sh->crash_at, __ATOMIC_SEQ_CST), none = 0;
            if (crash && t0 > crash)
                __atomic_compare_exchange_n(&g_sh->first_ok_after, &none, t1, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST);
        } else if (fault_transient(rc)) {
            __atomic_add_fetch(&g_sh->failed, 1, __ATOMIC_SEQ_CST);
            fault_sleep_ms(10);
        } else {
            fprintf(stderr, "fault_outage: writer %d: %s: %s\n", w, bitt_strerror(rc),
                    bitt_error_last());
            __atomic_add_fetch(&g_sh->errors, 1, __ATOMIC_SEQ_CST);
            fault_sleep_ms(10);
        }
    }
    bitt_store_close(s);
    return 0;
}

typedef struct lost_ctx {
    uint8_t *seen; /* WRITERS * MAX_WRITES */
} lost_ctx;

static void mark_seen(void *arg, const uint8_t *key, size_t len)
{
    lost_ctx *c = arg;
    char buf[40];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < 39 ? len : 39), (const char *)key);
    int w = -1;
    unsigned long i = 0;
    if (sscanf(buf, "w/%d/%lu", &w, &i) == 2 && w >= 0 && w < WRITERS && i < MAX_WRITES)
        c->seen[(size_t)w * MAX_WRITES + i] = 1;
}

/* Acknowledged writes that are not in the store. */
static int64_t count_lost(bitt_store *s)
{
    lost_ctx c = {calloc((size_t)WRITERS * MAX_WRITES, 1)};
    /* The handle's session may have died with the server: its first call
     * then fails cleanly and the next one reconnects. */
    int rc = BITT_EBACKEND;
    for (int tries = 0; tries < 5 && fault_transient(rc); tries++)
        rc = fault_list_keys(s, "w/", mark_seen, &c);
    if (rc != BITT_OK)
        fault_violation("listing the writes: %s: %s", bitt_strerror(rc), bitt_error_last());
    int64_t lost = 0;
    for (size_t i = 0; i < (size_t)WRITERS * MAX_WRITES; i++)
        lost += g_sh->acked[i] && !c.seen[i];
    free(c.seen);
    return lost;
}

/* Waits until n more writes were acknowledged (bounded); 0 or -1. */
static int wait_acks(int64_t n, int64_t limit_ms)
{
    int64_t want = __atomic_load_n(&g_sh->ok, __ATOMIC_SEQ_CST) + n;
    int64_t until = fault_mono_ms() + limit_ms;
    while (__atomic_load_n(&g_sh->ok, __ATOMIC_SEQ_CST) < want) {
        if (fault_mono_ms() > until)
            return -1;
        fault_sleep_ms(5);
    }
    return 0;
}

typedef struct mode {
    const char *name, *backend, *redis_args;
    int must_keep; /* every acknowledged write must survive */
    int freeze;    /* SIGSTOP the server instead of crashing it */
    int async;     /* PostgreSQL with synchronous_commit=off */
} mode;

static const mode modes[] = {
    {"postgres", "postgres", NULL, 1, 0, 0},
    {"postgres-async", "postgres", NULL, 0, 0, 1},
    {"postgres-freeze", "postgres", NULL, 1, 1, 0},
    {"redis-always", "redis", "--appendonly yes --appendfsync always", 1, 0, 0},
    {"redis-everysec", "redis", "--appendonly yes --appendfsync everysec", 0, 0, 0},
    {"redis-none", "redis", "--appendonly no", 0, 0, 0},
    {"redis-freeze", "redis", "--appendonly yes --appendfsync everysec", 1, 1, 0},
};

int main(int argc, char **argv)
{
    fault_set_program("fault_outage");
    const mode *m = NULL;
    for (size_t i = 0; argc == 2 && i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            m = &modes[i];
    if (!m) {
        fprintf(stderr, "usage: fault_outage postgres|postgres-async|postgres-freeze|"
                        "redis-always|redis-everysec|redis-none|redis-freeze\n");
        return 2;
    }
    const char *mode = m->name;
    int redis = strcmp(m->backend, "redis") == 0;
    int64_t outages = fault_count("BITT_FAULT_OUTAGES", 2, 10);
    fault_server server;
    if (fault_server_start(&server, m->backend, m->redis_args) != 0)
        return 2;
    char options[128];
    int64_t bound;
    if (redis) {
        snprintf(options, sizeof options, "timeout=%d", REDIS_TIMEOUT_MS);
        bound = REDIS_TIMEOUT_MS;
    } else {
        /* postgres-async: the session commits with synchronous_commit=off
         * (libpq's options parameter), which acknowledges before the WAL
         * is flushed. */
        snprintf(options, sizeof options, "statement_timeout=%d&connect_timeout=2%s",
                 PG_STATEMENT_TIMEOUT_MS, m->async ? "&options=-c%20synchronous_commit%3Doff" : "");
        bound = PG_STATEMENT_TIMEOUT_MS + PG_CLIENT_GRACE_MS;
    }
    fault_url(&server, g_url, sizeof g_url, options);
    g_sh = fault_shared(sizeof *g_sh);
    g_sh->acked = fault_shared((size_t)WRITERS * MAX_WRITES);
    bitt_store *s = fault_open(g_url); /* the schema, before the writers */
    if (!s) {
        fault_server_stop(&server);
        return 2;
    }
    printf("fault_outage %s: %" PRId64 " outages, call bound %" PRId64 " ms + %d ms margin\n", mode,
           outages, bound, MARGIN_MS);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++)
        pids[w] = fault_spawn(writer_main, (void *)(intptr_t)w);

    int64_t worst_restart = 0, worst_first_ok = 0, worst_outage = 0;
    if (wait_acks(100, 60000) != 0)
        fault_violation("the writers made no progress before the first outage");
    for (int64_t k = 0; k < outages && !fault_violations(); k++) {
        fault_sleep_ms(500); /* load */
        __atomic_store_n(&g_sh->first_ok_after, 0, __ATOMIC_SEQ_CST);
        if ((m->freeze ? fault_server_freeze(&server, 1) : fault_server_crash(&server)) != 0) {
            fault_violation("crashing or freezing the server failed");
            break;
        }
        /* From here on the server is gone: an ack needs the restart. */
        int64_t crash = fault_mono_ms();
        __atomic_store_n(&g_sh->crash_at, crash, __ATOMIC_SEQ_CST);
        /* Down for a second; frozen for longer than a call may wait, so
         * that the calls meet their timeout. */
        fault_sleep_ms(m->freeze ? bound + 3000 : 1000);
        int64_t restart = fault_mono_ms();
        if ((m->freeze ? fault_server_freeze(&server, 0) : fault_server_restart(&server)) != 0) {
            fault_violation("restarting or thawing the server failed");
            break;
        }
        int64_t back = fault_mono_ms();
        if (wait_acks(50, 60000) != 0) {
            fault_violation("outage %" PRId64 ": the writers did not reconnect within 60 s", k);
            break;
        }
        int64_t first = __atomic_load_n(&g_sh->first_ok_after, __ATOMIC_SEQ_CST);
        __atomic_store_n(&g_sh->crash_at, 0, __ATOMIC_SEQ_CST);
        worst_restart = back - restart > worst_restart ? back - restart : worst_restart;
        worst_first_ok = first - back > worst_first_ok ? first - back : worst_first_ok;
        worst_outage = first - crash > worst_outage ? first - crash : worst_outage;
    }
    __atomic_store_n(&g_sh->stop, 1, __ATOMIC_SEQ_CST);
    for (int w = 0; w < WRITERS; w++) {
        int st = 0;
        waitpid(pids[w], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fault_violation("writer %d ended with status %d", w, st);
    }
    /* The handle opened before the first crash reads everything back. */
    int64_t lost = count_lost(s);
    const char *b = mode;
    fault_figure(b, "outages", "%" PRId64, outages);
    fault_figure(b, "writes_acknowledged", "%" PRId64, g_sh->ok);
    fault_figure(b, "writes_failed_during_outages", "%" PRId64, g_sh->failed);
    fault_figure(b, "acknowledged_writes_lost", "%" PRId64, lost);
    fault_figure(b, "longest_call_ms", "%" PRId64 " (bound %" PRId64 " + %d)", g_sh->max_call_ms,
                 bound, MARGIN_MS);
    fault_figure(b, "max_restart_ms", "%" PRId64, worst_restart);
    fault_figure(b, "max_ms_restart_done_to_first_ack", "%" PRId64, worst_first_ok);
    fault_figure(b, "max_ms_crash_to_first_ack", "%" PRId64, worst_outage);
    if (g_sh->errors)
        fault_violation("%" PRId64 " calls failed with an unexpected status", g_sh->errors);
    if (g_sh->max_call_ms > bound + MARGIN_MS)
        fault_violation("a call took %" PRId64 " ms (timeout %" PRId64 " ms)", g_sh->max_call_ms,
                        bound);
    if (m->must_keep && lost)
        fault_violation("%" PRId64 " acknowledged writes were lost", lost);
    bitt_store_close(s);
    fault_server_stop(&server);
    fault_figure(b, "violations", "%" PRId64, fault_violations());
    return fault_violations() ? 1 : 0;
}
