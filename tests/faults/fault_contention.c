/*
 * fault_contention sqlite|postgres|redis: contention without faults and
 * with paused processes (reliability.md, scenario 5). The other contention
 * figures (8 processes x 10,000 increments = 80,000; 50 concurrent adds,
 * one winner) are the tests test_concurrency, test_postgres_processes and
 * test_redis_procs.
 *  - jobs: N jobs (5,000; 100,000 with BITT_FAULT_LONG=1) enqueued, then
 *    8 processes consume them: completed = N, duplicates = 0, no stale ack.
 *  - leases: 8 processes contend for one lease (TTL 100 ms) until M
 *    acquisitions (300; 10,000 long); each holder makes a fenced commit and
 *    releases. Meanwhile the parent SIGSTOPs the current holder for longer
 *    than the TTL and SIGCONTs it, so it wakes up with a stale epoch.
 *    Stale writes accepted = 0: in versionstamp order the accepted commits'
 *    epochs only go up, and no commit begun after its lease's end was
 *    accepted.
 * BITT_FAULT_JOBS and BITT_FAULT_ACQUISITIONS override the counts.
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

#define PROCS 8
#define TOPIC "contention"
#define LEASE "contended"
#define LEASE_TTL_MS 100

typedef struct fenced {
    uint64_t epoch, version;
    int64_t began, expires; /* wall clock: the commit's start, the lease's end */
    int status;
} fenced;

typedef struct shared {
    int64_t jobs, acquisitions_wanted;
    int64_t acquisitions, busy, stale_acks, errors;
    uint64_t ncommits;
    fenced *commits;
    uint8_t *acked; /* per job id: acks accepted */
} shared;

static shared *g_sh;
static char g_url[700];

static int child_error(const char *what, int rc)
{
    fprintf(stderr, "fault_contention: %s (pid %ld): %s: %s\n", what, (long)getpid(),
            bitt_strerror(rc), bitt_error_last());
    __atomic_add_fetch(&g_sh->errors, 1, __ATOMIC_SEQ_CST);
    return 3;
}

/* ---- jobs ---------------------------------------------------------------- */

static int enqueue_all(bitt_store *s, int64_t n)
{
    for (int64_t id = 1; id <= n;) {
        bitt_txn *txn = NULL;
        int rc = bitt_txn_begin(s, &txn);
        int64_t first = id;
        for (; rc >= 0 && id <= n && id < first + 100; id++) {
            char p[24];
            int len = snprintf(p, sizeof p, "%" PRId64, id);
            rc = bitt_txn_enqueue(txn, TOPIC, p, (size_t)len, BITT_KIND_BYTES, NULL);
        }
        if (rc >= 0)
            rc = bitt_txn_commit(txn, NULL);
        bitt_txn_free(txn);
        if (rc < 0)
            return child_error("enqueue", rc);
    }
    return 0;
}

static int consumer_main(void *arg)
{
    (void)arg;
    bitt_store *s = fault_open(g_url);
    if (!s)
        return 3;
    for (;;) {
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        o.limit = 32;
        o.lease_ms = 60000;
        bitt_messages *list = NULL;
        int rc = bitt_queue_dequeue(s, TOPIC, &o, &list);
        if (rc < 0 && !fault_transient(rc))
            return child_error("dequeue", rc);
        size_t n = rc == BITT_OK ? bitt_messages_count(list) : 0;
        for (size_t i = 0; i < n; i++) {
            const bitt_message *m = bitt_messages_at(list, i);
            int64_t id = fault_payload_id(m);
            do
                rc = bitt_queue_ack(s, TOPIC, bitt_message_id(m), bitt_message_token(m));
            while (fault_transient(rc));
            if (rc == BITT_OK && id >= 1 && id <= g_sh->jobs)
                __atomic_add_fetch(&g_sh->acked[id], 1, __ATOMIC_SEQ_CST);
            else if (rc == BITT_ETOKEN)
                __atomic_add_fetch(&g_sh->stale_acks, 1, __ATOMIC_SEQ_CST);
            else
                return child_error("ack", rc);
        }
        bitt_messages_free(list);
        if (n == 0) { /* everything was enqueued first: empty means done */
            int idle = 0;
            rc = fault_queue_idle(s, TOPIC, &idle);
            if (idle)
                break;
            if (rc < 0 && !fault_transient(rc))
                return child_error("stats", rc);
        }
    }
    bitt_store_close(s);
    return 0;
}

static void run_children(int (*fn)(void *), pid_t *pids)
{
    for (int i = 0; i < PROCS; i++)
        pids[i] = fault_spawn(fn, NULL);
}

static void wait_children(pid_t *pids)
{
    for (int i = 0; i < PROCS; i++) {
        int st = 0;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fault_violation("child %d ended with status %d", i, st);
    }
}

static void jobs_part(const char *b, bitt_store *s)
{
    int64_t n = g_sh->jobs;
    int64_t t0 = fault_mono_ms();
    if (enqueue_all(s, n) != 0)
        return;
    int64_t t1 = fault_mono_ms();
    pid_t pids[PROCS];
    run_children(consumer_main, pids);
    wait_children(pids);
    int64_t t2 = fault_mono_ms();
    int64_t completed = 0, duplicates = 0, missing = 0;
    for (int64_t id = 1; id <= n; id++) {
        completed += g_sh->acked[id] >= 1;
        duplicates += g_sh->acked[id] > 1;
        missing += g_sh->acked[id] == 0;
    }
    fault_figure(b, "jobs", "%" PRId64 " over %d processes (enqueue %.1f s, consume %.1f s)", n,
                 PROCS, (t1 - t0) / 1000.0, (t2 - t1) / 1000.0);
    fault_figure(b, "jobs_completed", "%" PRId64, completed);
    fault_figure(b, "jobs_duplicates", "%" PRId64, duplicates);
    fault_figure(b, "jobs_stale_acks", "%" PRId64, g_sh->stale_acks);
    if (completed != n || duplicates || missing || g_sh->stale_acks)
        fault_violation("jobs: %" PRId64 " of %" PRId64 " completed, %" PRId64 " twice, %" PRId64
                        " stale acks",
                        completed, n, duplicates, g_sh->stale_acks);
}

/* ---- leases -------------------------------------------------------------- */

static int holder_main(void *arg)
{
    (void)arg;
    bitt_store *s = fault_open(g_url);
    if (!s)
        return 3;
    char owner[32];
    snprintf(owner, sizeof owner, "holder-%ld", (long)getpid());
    while (__atomic_load_n(&g_sh->acquisitions, __ATOMIC_SEQ_CST) < g_sh->acquisitions_wanted) {
        uint64_t epoch = 0;
        int64_t expires = 0;
        int rc = bitt_lease_acquire(s, LEASE, owner, LEASE_TTL_MS, &epoch, &expires);
        if (rc == BITT_EXISTS || fault_transient(rc)) {
            __atomic_add_fetch(&g_sh->busy, 1, __ATOMIC_SEQ_CST);
            fault_sleep_ms(fault_rand(0, 2));
            continue;
        }
        if (rc != BITT_OK)
            return child_error("acquire", rc);
        __atomic_add_fetch(&g_sh->acquisitions, 1, __ATOMIC_SEQ_CST);
        fault_sleep_ms(fault_rand(1, 5)); /* the work the lease protects */
        fenced f = {.epoch = epoch, .expires = expires, .began = fault_now_ms()};
        char value[24];
        int vlen = snprintf(value, sizeof value, "%" PRIu64, epoch);
        bitt_txn *txn = NULL;
        rc = bitt_txn_begin(s, &txn);
        if (rc >= 0)
            rc = bitt_txn_fence(txn, LEASE, owner, epoch);
        if (rc >= 0)
            rc =
                bitt_txn_set(txn, "holder", 6, value, (size_t)vlen, BITT_KIND_BYTES, BITT_TTL_NONE);
        if (rc >= 0)
            rc = bitt_txn_sum(txn, "writes", 6, 1);
        if (rc >= 0)
            rc = bitt_txn_commit(txn, &f.version);
        bitt_txn_free(txn);
        if (rc != BITT_OK && rc != BITT_ELEASELOST && !fault_transient(rc))
            return child_error("fenced commit", rc);
        f.status = rc;
        uint64_t i = __atomic_fetch_add(&g_sh->ncommits, 1, __ATOMIC_SEQ_CST);
        if (i < (uint64_t)g_sh->acquisitions_wanted + 64)
            g_sh->commits[i] = f;
        rc = bitt_lease_release(s, LEASE, owner, epoch);
        if (rc != BITT_OK && rc != BITT_ELEASELOST && !fault_transient(rc))
            return child_error("release", rc);
    }
    bitt_store_close(s);
    return 0;
}

static int by_version(const void *a, const void *b)
{
    const fenced *x = a, *y = b;
    return x->version < y->version ? -1 : x->version > y->version;
}

/* The child that holds the lease now, or 0 (only our own children). */
static pid_t holder_pid(bitt_store *s, const pid_t *pids)
{
    bitt_buf owner = BITT_BUF_INIT;
    pid_t pid = 0;
    if (bitt_lease_get(s, LEASE, &owner, NULL, NULL) == BITT_OK && owner.ptr) {
        long v = 0;
        if (sscanf((const char *)owner.ptr, "holder-%ld", &v) == 1)
            for (int i = 0; i < PROCS; i++)
                if (pids[i] > 0 && pids[i] == (pid_t)v)
                    pid = pids[i];
    }
    bitt_buf_dispose(&owner);
    return pid;
}

static void leases_part(const char *b, bitt_store *s)
{
    pid_t pids[PROCS];
    int64_t t0 = fault_mono_ms(), pauses = 0;
    run_children(holder_main, pids);
    while (__atomic_load_n(&g_sh->acquisitions, __ATOMIC_SEQ_CST) < g_sh->acquisitions_wanted &&
           !g_sh->errors) {
        fault_sleep_ms(fault_rand(10, 50));
        pid_t victim = holder_pid(s, pids);
        if (victim <= 0)
            continue;
        kill(victim, SIGSTOP); /* past the TTL: a holder wakes with a stale epoch */
        fault_sleep_ms(LEASE_TTL_MS + fault_rand(20, 200));
        kill(victim, SIGCONT);
        pauses++;
    }
    wait_children(pids);
    int64_t secs10 = (fault_mono_ms() - t0) / 100;
    uint64_t n = g_sh->ncommits;
    if (n > (uint64_t)g_sh->acquisitions_wanted + 64)
        n = (uint64_t)g_sh->acquisitions_wanted + 64;
    fenced *ok = malloc(sizeof *ok * (n ? n : 1));
    size_t nok = 0;
    int64_t refused = 0, stale_tries = 0, stale_accepted = 0, other = 0;
    for (uint64_t i = 0; i < n; i++) {
        const fenced *f = &g_sh->commits[i];
        int late = f->began > f->expires; /* began after the lease's end */
        stale_tries += late;
        if (f->status == BITT_OK) {
            ok[nok++] = *f;
            if (late) {
                stale_accepted++;
                fault_violation("epoch %" PRIu64 ": a commit begun %" PRId64
                                " ms after the lease ended was accepted",
                                f->epoch, f->began - f->expires);
            }
        } else if (f->status == BITT_ELEASELOST) {
            refused++;
        } else {
            other++;
        }
    }
    qsort(ok, nok, sizeof *ok, by_version);
    for (size_t i = 1; i < nok; i++) {
        if (ok[i].epoch <= ok[i - 1].epoch) {
            stale_accepted++;
            fault_violation("epoch %" PRIu64 " committed after epoch %" PRIu64, ok[i].epoch,
                            ok[i - 1].epoch);
        }
    }
    bitt_entry *e = NULL;
    int64_t writes = -1;
    if (bitt_kv_get(s, "writes", 6, &e) == BITT_OK)
        bitt_entry_counter(e, &writes);
    bitt_entry_free(e);
    if (writes != (int64_t)nok)
        fault_violation("the store counted %" PRId64 " fenced writes, %zu were accepted", writes,
                        nok);
    fault_figure(b, "lease_acquisitions",
                 "%" PRId64 " by %d processes in %" PRId64 ".%" PRId64 " s (%" PRId64
                 " tries on a held lease)",
                 g_sh->acquisitions, PROCS, secs10 / 10, secs10 % 10, g_sh->busy);
    fault_figure(b, "lease_pauses", "%" PRId64 " holders SIGSTOPped for %d-%d ms", pauses,
                 LEASE_TTL_MS + 20, LEASE_TTL_MS + 200);
    fault_figure(b, "fenced_commits_accepted", "%zu", nok);
    fault_figure(b, "fenced_commits_refused",
                 "%" PRId64 " (%" PRId64 " begun after the lease ended; %" PRId64
                 " transient errors)",
                 refused, stale_tries, other);
    fault_figure(b, "stale_writes_accepted", "%" PRId64, stale_accepted);
    free(ok);
}

int main(int argc, char **argv)
{
    fault_set_program("fault_contention");
    if (argc != 2) {
        fprintf(stderr, "usage: fault_contention sqlite|postgres|redis\n");
        return 2;
    }
    const char *b = argv[1];
    fault_seed((uint64_t)getpid());
    fault_server server;
    if (fault_server_start(&server, b, NULL) != 0)
        return 2;
    fault_url(&server, g_url, sizeof g_url, strcmp(b, "sqlite") == 0 ? "busy_timeout=30000" : "");
    g_sh = fault_shared(sizeof *g_sh);
    g_sh->jobs = fault_count("BITT_FAULT_JOBS", 5000, 100000);
    g_sh->acquisitions_wanted = fault_count("BITT_FAULT_ACQUISITIONS", 300, 10000);
    g_sh->acked = fault_shared((size_t)g_sh->jobs + 1);
    g_sh->commits = fault_shared(sizeof(fenced) * ((size_t)g_sh->acquisitions_wanted + 64));
    bitt_store *s = fault_open(g_url);
    if (s) {
        jobs_part(b, s);
        leases_part(b, s);
        bitt_store_close(s);
    }
    fault_server_stop(&server);
    fault_figure(b, "violations", "%" PRId64, fault_violations());
    return !s ? 2 : fault_violations() ? 1 : 0;
}
