/*
 * fault_kill_storm BACKEND: the kill storm (reliability.md, scenario 1, and
 * for SQLite scenario 2). A producer and 4 worker processes share a store;
 * every 50-500 ms one of them, picked at random, is SIGKILLed and started
 * again. Workers lease batches, commit each job's effect in one atomic
 * commit (the key done/<id> must be absent, the counter "done" goes up
 * with it) and then ack; 2% of deliveries stall past their lease first, so
 * their acks must be refused as stale. After the last kill the queue is
 * drained and the program checks:
 *  - every acknowledged enqueue was completed (lost = 0), none twice (the
 *    counter equals the number of done keys, no job committed twice);
 *  - no message was claimed again before its previous lease ended, and no
 *    ack was accepted after the lease it belongs to had ended;
 *  - SQLite: PRAGMA integrity_check is "ok" after every kill (read-only
 *    connection), and every commit acknowledged under synchronous=full is
 *    there at the end.
 * Kills: BITT_FAULT_KILLS (default 20; 1,000 with BITT_FAULT_LONG=1).
 * PostgreSQL and Redis run as private servers in a temp dir.
 */
#define _DEFAULT_SOURCE 1
#include <inttypes.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "storm_log.h"

#define WORKERS 4
#define TOPIC "storm"
#define LEASE_MS 800
#define BACKLOG 300      /* the producer stays this far ahead of completions */
#define STALL_PERCENT 2  /* deliveries that stall past their lease */
#define MAX_JOBS 4000000 /* ids the shared state can track */

static storm_shared *g_sh;
static char g_url[700];
static const char *g_backend;

static int child_fail(const char *what, int rc)
{
    fprintf(stderr, "fault_kill_storm: %s (pid %ld): %s: %s\n", what, (long)getpid(),
            bitt_strerror(rc), bitt_error_last());
    __atomic_add_fetch(&g_sh->child_errors, 1, __ATOMIC_SEQ_CST);
    return 3;
}

static int producer_main(void *arg)
{
    (void)arg;
    bitt_store *s = fault_open(g_url);
    if (!s)
        return child_fail("producer: open", BITT_EBACKEND);
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.max_attempts = 10000; /* kills cost attempts: none may end as a dead letter */
    while (!__atomic_load_n(&g_sh->stop_producing, __ATOMIC_SEQ_CST)) {
        int64_t ahead = __atomic_load_n(&g_sh->next_job, __ATOMIC_SEQ_CST) -
                        __atomic_load_n(&g_sh->completed, __ATOMIC_SEQ_CST);
        if (ahead > BACKLOG) {
            fault_sleep_ms(5);
            continue;
        }
        int64_t id = __atomic_add_fetch(&g_sh->next_job, 1, __ATOMIC_SEQ_CST);
        if (id >= MAX_JOBS)
            break;
        char payload[24];
        int n = snprintf(payload, sizeof payload, "%" PRId64, id);
        __atomic_store_n(&g_sh->state[id], JOB_ATTEMPTED, __ATOMIC_SEQ_CST);
        int rc = bitt_queue_enqueue(s, TOPIC, payload, (size_t)n, BITT_KIND_BYTES, &o, NULL);
        if (rc == BITT_OK)
            __atomic_store_n(&g_sh->state[id], JOB_ACKED, __ATOMIC_SEQ_CST);
        else if (!fault_transient(rc))
            return child_fail("producer: enqueue", rc);
    }
    bitt_store_close(s);
    return 0;
}

/* The job's effect, once: done/<id> and the counter in one commit. */
static int commit_effect(bitt_store *s, int64_t job, uint32_t attempt)
{
    char key[32], value[16];
    int klen = snprintf(key, sizeof key, "done/%" PRId64, job);
    int vlen = snprintf(value, sizeof value, "%" PRIu32, attempt);
    bitt_txn *txn = NULL;
    int rc = bitt_txn_begin(s, &txn);
    if (rc >= 0)
        rc = bitt_txn_check(txn, key, (size_t)klen, 0);
    if (rc >= 0)
        rc = bitt_txn_set(txn, key, (size_t)klen, value, (size_t)vlen, BITT_KIND_BYTES,
                          BITT_TTL_NONE);
    if (rc >= 0)
        rc = bitt_txn_sum(txn, "done", 4, 1);
    if (rc >= 0)
        rc = bitt_txn_commit(txn, NULL);
    bitt_txn_free(txn);
    return rc;
}

/* One delivery: maybe stall, commit the effect, ack. 0 or an exit code. */
static int handle(bitt_store *s, const bitt_message *m)
{
    int64_t job = fault_payload_id(m);
    uint32_t attempt = bitt_message_attempts(m);
    int64_t due = bitt_message_due_at(m);
    storm_record(g_sh, REC_CLAIM, job, attempt, due - LEASE_MS, due);
    if (fault_rand(1, 100) <= STALL_PERCENT) {
        __atomic_add_fetch(&g_sh->stalls, 1, __ATOMIC_SEQ_CST);
        fault_sleep_ms(due - fault_now_ms() + fault_rand(20, 60));
    }
    int rc;
    do
        rc = commit_effect(s, job, attempt);
    while (fault_transient(rc));
    if (rc == BITT_OK)
        storm_record(g_sh, REC_COMMIT, job, attempt, fault_now_ms(), due);
    else if (rc == BITT_ECONFLICT)
        storm_record(g_sh, REC_DUPLICATE, job, attempt, fault_now_ms(), due);
    else
        return child_fail("worker: commit", rc);
    int64_t before = fault_now_ms();
    rc = bitt_queue_ack(s, TOPIC, bitt_message_id(m), bitt_message_token(m));
    if (rc == BITT_OK) {
        storm_record(g_sh, REC_ACK, job, attempt, before, due);
        __atomic_add_fetch(&g_sh->completed, 1, __ATOMIC_SEQ_CST);
    } else if (rc == BITT_ETOKEN) {
        storm_record(g_sh, REC_STALE, job, attempt, before, due);
    } else if (!fault_transient(rc)) {
        return child_fail("worker: ack", rc);
    }
    return 0;
}

static int worker_main(void *arg)
{
    (void)arg;
    bitt_store *s = fault_open(g_url);
    if (!s)
        return child_fail("worker: open", BITT_EBACKEND);
    for (;;) {
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        o.limit = 8;
        o.lease_ms = LEASE_MS;
        o.wait_ms = 100;
        bitt_messages *list = NULL;
        int rc = bitt_queue_dequeue(s, TOPIC, &o, &list);
        if (rc < 0 && !fault_transient(rc))
            return child_fail("worker: dequeue", rc);
        size_t n = rc == BITT_OK ? bitt_messages_count(list) : 0;
        for (size_t i = 0; i < n; i++) {
            int code = handle(s, bitt_messages_at(list, i));
            if (code)
                return code;
        }
        bitt_messages_free(list);
        int idle = 0;
        if (n == 0 && __atomic_load_n(&g_sh->drain, __ATOMIC_SEQ_CST) &&
            fault_queue_idle(s, TOPIC, &idle) == BITT_OK && idle)
            break;
    }
    bitt_store_close(s);
    return 0;
}

/* PRAGMA integrity_check on a read-only connection of its own. */
static int integrity_ok(const char *path)
{
    sqlite3 *db = NULL;
    int ok = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 30000);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            const char *r = (const char *)sqlite3_column_text(st, 0);
            ok = r && strcmp(r, "ok") == 0;
            if (!ok)
                fault_violation("integrity_check: %s", r ? r : "(null)");
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return ok;
}

typedef struct crew {
    pid_t pids[WORKERS + 1]; /* [0] is the producer */
} crew;

static pid_t spawn(int i)
{
    return fault_spawn(i == 0 ? producer_main : worker_main, NULL);
}

/* Notes children that ended by themselves (an error exit is a violation)
 * and starts them again while the storm goes on. */
static void reap_exited(crew *c, int restart)
{
    for (int i = 0; i <= WORKERS; i++) {
        int st = 0;
        if (c->pids[i] <= 0 || waitpid(c->pids[i], &st, WNOHANG) != c->pids[i])
            continue;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fault_violation("child %d ended with status %d", i, st);
        c->pids[i] = restart ? spawn(i) : 0;
    }
}

static int wait_all(crew *c, int from, int to, int64_t limit_ms)
{
    int64_t until = fault_mono_ms() + limit_ms;
    for (int i = from; i <= to; i++) {
        while (c->pids[i] > 0) {
            int st = 0;
            pid_t r = waitpid(c->pids[i], &st, WNOHANG);
            if (r == c->pids[i]) {
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                    fault_violation("child %d ended with status %d", i, st);
                c->pids[i] = 0;
            } else if (fault_mono_ms() > until) {
                fault_violation("child %d did not finish within %lld s", i,
                                (long long)(limit_ms / 1000));
                kill(c->pids[i], SIGKILL); /* > 0: the loop's condition */
                waitpid(c->pids[i], &st, 0);
                c->pids[i] = 0;
            } else {
                fault_sleep_ms(20);
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    fault_set_program("fault_kill_storm");
    if (argc != 2) {
        fprintf(stderr, "usage: fault_kill_storm sqlite|postgres|redis\n");
        return 2;
    }
    g_backend = argv[1];
    int64_t kills = fault_count("BITT_FAULT_KILLS", 20, 1000);
    fault_server server;
    if (fault_server_start(&server, g_backend, NULL) != 0)
        return 2;
    int sqlite = strcmp(g_backend, "sqlite") == 0;
    /* SQLite: synchronous=full unless BITT_FAULT_SYNC names another mode
     * (a process kill loses nothing in any mode; power loss would). */
    const char *sync = getenv("BITT_FAULT_SYNC");
    char options[96];
    snprintf(options, sizeof options, "synchronous=%s&busy_timeout=30000",
             sync && *sync ? sync : "full");
    fault_url(&server, g_url, sizeof g_url,
              sqlite                            ? options
              : strcmp(g_backend, "redis") == 0 ? "timeout=5000"
                                                : "");
    g_sh = fault_shared(sizeof *g_sh);
    g_sh->state = fault_shared(MAX_JOBS);
    g_sh->recs = fault_shared(sizeof(storm_rec) * STORM_MAX_RECS);
    bitt_store *s = fault_open(g_url); /* creates the schema before the children */
    if (!s) {
        fault_server_stop(&server);
        return 2;
    }
    uint64_t seed = (uint64_t)fault_count("BITT_FAULT_SEED", (int64_t)getpid(), (int64_t)getpid());
    fault_seed(seed);
    printf("fault_kill_storm %s: %" PRId64 " kills, seed %" PRIu64 " (BITT_FAULT_SEED)\n",
           g_backend, kills, seed);
    int64_t t0 = fault_mono_ms(), integrity = 0, producer_kills = 0;
    crew c;
    for (int i = 0; i <= WORKERS; i++)
        c.pids[i] = spawn(i);
    for (int64_t k = 0; k < kills; k++) {
        fault_sleep_ms(fault_rand(50, 500));
        reap_exited(&c, 1);
        int victim = (int)fault_rand(0, WORKERS);
        producer_kills += victim == 0;
        if (c.pids[victim] > 0) { /* never kill(0): that is the whole group */
            kill(c.pids[victim], SIGKILL);
            waitpid(c.pids[victim], NULL, 0);
        }
        if (sqlite)
            integrity += integrity_ok(server.url + 7);
        c.pids[victim] = spawn(victim);
    }
    int64_t storm_ms = fault_mono_ms() - t0;
    __atomic_store_n(&g_sh->stop_producing, 1, __ATOMIC_SEQ_CST);
    wait_all(&c, 0, 0, 60000);
    __atomic_store_n(&g_sh->drain, 1, __ATOMIC_SEQ_CST);
    wait_all(&c, 1, WORKERS, 300000);
    int64_t drain_ms = fault_mono_ms() - t0 - storm_ms;

    storm_report rep;
    storm_verify(g_sh, s, TOPIC, LEASE_MS, &rep);
    const char *b = g_backend;
    if (sqlite)
        fault_figure(b, "synchronous", "%s", sync && *sync ? sync : "full");
    fault_figure(b, "kills", "%" PRId64 " (producer %" PRId64 ", workers %" PRId64 ")", kills,
                 producer_kills, kills - producer_kills);
    fault_figure(b, "storm_seconds", "%.1f (drain %.1f)", storm_ms / 1000.0, drain_ms / 1000.0);
    fault_figure(b, "enqueues_acknowledged", "%" PRId64, rep.acked);
    fault_figure(b, "enqueues_unacknowledged", "%" PRId64 " (%" PRId64 " of them landed)",
                 rep.unacked, rep.unacked_landed);
    fault_figure(b, "jobs_completed", "%" PRId64, rep.done_keys);
    fault_figure(b, "acknowledged_lost", "%" PRId64, rep.lost);
    fault_figure(b, "completed_twice", "%" PRId64, rep.twice);
    fault_figure(b, "duplicate_commits_refused", "%" PRId64, rep.duplicates);
    fault_figure(b, "stalls_past_lease", "%" PRId64, g_sh->stalls);
    fault_figure(b, "stale_acks_rejected", "%" PRId64, rep.stale);
    fault_figure(b, "acks_accepted_after_lease_end", "%" PRId64, rep.late_acks);
    fault_figure(b, "claims_before_previous_lease_end", "%" PRId64, rep.early_claims);
    fault_figure(b, "max_ms_from_lease_end_to_reclaim", "%" PRId64, rep.max_reclaim_ms);
    fault_figure(b, "dead_letters", "%" PRId64, rep.dead);
    if (sqlite)
        fault_figure(b, "integrity_check_ok", "%" PRId64 " of %" PRId64, integrity, kills);
    if (sqlite && integrity != kills)
        fault_violation("integrity_check failed after %" PRId64 " kills", kills - integrity);
    if (g_sh->child_errors)
        fault_violation("%" PRId64 " child errors", g_sh->child_errors);
    bitt_store_close(s);
    fault_server_stop(&server);
    fault_figure(b, "violations", "%" PRId64, fault_violations());
    return fault_violations() ? 1 : 0;
}
