/*
 * main.c: the jobs example's command line and its run: check or reset the
 * store, show fencing, enqueue, start the workers (processes, or threads on
 * one handle for memory stores), dispatch the outbox while they work, then
 * print a summary and check every invariant (exit 1 if one is violated).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobs.h"

#define MAX_WORKERS 64

static const char usage[] =
    "Usage: jobs [STORE_URL] [--jobs N] [--partitions P] [--workers W] [--batch B]\n"
    "            [--threads] [--reset]\n"
    "\n"
    "A job system on bitt: a producer enqueues N jobs (default 2000) on topic\n"
    "\"jobs\" across P partitions (4); W workers (4) process them under a lease\n"
    "per partition, each job's result, sum and outbox event in one fenced\n"
    "atomic commit; every 25th job fails once and is retried, every 200th\n"
    "always fails and ends as a dead letter; a dispatcher delivers the outbox.\n"
    "At the end it prints a summary and checks that every job was settled\n"
    "exactly once (exit 1 if not, 2 on an error).\n"
    "\n"
    "STORE_URL defaults to $BITT_STORE, else sqlite:bitt.db. Workers are\n"
    "processes, each with its own store handle; for memory: (a store lives in\n"
    "one handle) and with --threads they are threads sharing one handle.\n"
    "The store must hold no earlier run: --reset clears one first.\n"
    "\n"
    "  --batch B   messages per dequeue (default 32)\n";

static int parse_int(const char *name, const char *s, int64_t max, int64_t *out)
{
    char *end = NULL;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (s == NULL || *end != '\0' || end == s || v < 1 || v > max) {
        fprintf(stderr, "jobs: %s must be an integer from 1 to %" PRId64 "\n", name, max);
        return 64;
    }
    *out = (int64_t)v;
    return 0;
}

static int parse_args(int argc, char **argv, jobs_config *cfg)
{
    const char *env = getenv("BITT_STORE");
    memset(cfg, 0, sizeof(*cfg));
    cfg->url = env && env[0] ? env : "sqlite:bitt.db";
    cfg->jobs = 2000;
    cfg->partitions = 4;
    cfg->workers = 4;
    cfg->batch = 32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int64_t v = 0;
        int code = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(a, "--threads") == 0) {
            cfg->threads = 1;
        } else if (strcmp(a, "--reset") == 0) {
            cfg->reset = 1;
        } else if (strcmp(a, "--jobs") == 0) {
            code = parse_int(a, argv[++i < argc ? i : argc - 1], 10000000, &v);
            cfg->jobs = v;
        } else if (strcmp(a, "--partitions") == 0) {
            code = parse_int(a, argv[++i < argc ? i : argc - 1], 1000, &v);
            cfg->partitions = (int)v;
        } else if (strcmp(a, "--workers") == 0) {
            code = parse_int(a, argv[++i < argc ? i : argc - 1], MAX_WORKERS, &v);
            cfg->workers = (int)v;
        } else if (strcmp(a, "--batch") == 0) {
            code = parse_int(a, argv[++i < argc ? i : argc - 1], BITT_DEQUEUE_MAX, &v);
            cfg->batch = (int)v;
        } else if (a[0] != '-' && i == 1) {
            cfg->url = a;
        } else {
            fprintf(stderr, "jobs: unexpected argument '%s' (try --help)\n", a);
            return 64;
        }
        if (code != 0)
            return code;
    }
    return 0;
}

/* ---- workers as threads on one handle, or as processes ---------------- */

typedef struct crew {
    const jobs_config *cfg;
    bitt_store *shared; /* thread mode */
    pthread_t threads[MAX_WORKERS];
    pid_t pids[MAX_WORKERS];
    int codes[MAX_WORKERS];
    int index[MAX_WORKERS];
    atomic_int finished;
    int running;  /* started and not yet reaped */
    int failures; /* workers that ended with an error */
    int crashed;  /* worker processes killed by a signal */
} crew;

static crew g_crew;

static void *thread_main(void *arg)
{
    int i = *(int *)arg;
    g_crew.codes[i] = jobs_worker(g_crew.cfg, g_crew.shared, i);
    atomic_fetch_add(&g_crew.finished, 1);
    return NULL;
}

static int process_main(const jobs_config *cfg, int i)
{
    bitt_store *store = NULL;
    int rc = bitt_store_open(cfg->url, &store);
    int code = rc < 0 ? jobs_fail("worker: open", rc) : jobs_worker(cfg, store, i);
    bitt_store_close(store);
    return code;
}

static int start_workers(crew *c)
{
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < c->cfg->workers; i++) {
        c->index[i] = i;
        if (c->cfg->threads) {
            if (pthread_create(&c->threads[i], NULL, thread_main, &c->index[i]) != 0) {
                fprintf(stderr, "jobs: cannot start a thread\n");
                return 2;
            }
        } else {
            c->pids[i] = fork();
            if (c->pids[i] < 0) {
                perror("jobs: fork");
                return 2;
            }
            if (c->pids[i] == 0)
                exit(process_main(c->cfg, i));
        }
        c->running++;
    }
    return 0;
}

/* Reaps the workers that ended; with wait, all of them. */
static void reap(crew *c, int wait)
{
    if (c->cfg->threads) {
        if (!wait && atomic_load(&c->finished) < c->running)
            return;
        for (int i = 0; i < c->running; i++) {
            pthread_join(c->threads[i], NULL);
            c->failures += c->codes[i] != 0;
        }
        c->running = 0;
        return;
    }
    for (int i = 0; i < c->cfg->workers; i++) {
        int status = 0;
        if (c->pids[i] <= 0 || waitpid(c->pids[i], &status, wait ? 0 : WNOHANG) == 0)
            continue;
        if (WIFSIGNALED(status)) {
            /* A crash: its deliveries and its partition lease run out, and
             * the other workers take its jobs over. */
            fprintf(stderr, "jobs: worker %d (pid %ld) was killed by signal %d\n", i,
                    (long)c->pids[i], WTERMSIG(status));
            c->crashed++;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "jobs: worker %d (pid %ld) ended with status %d\n", i, (long)c->pids[i],
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            c->failures++;
        }
        c->pids[i] = 0;
        c->running--;
    }
}

/* ---- the run ---------------------------------------------------------- */

static int open_store(const jobs_config *cfg, bitt_store **store)
{
    int rc = bitt_store_open(cfg->url, store);
    return rc < 0 ? jobs_fail(cfg->url, rc) : 0;
}

/* Dispatches the outbox while the workers run, and drains it after. */
static int dispatch_until_done(bitt_store *store, jobs_dispatcher *d, crew *c)
{
    int code = 0;
    for (;;) {
        reap(c, 0);
        int workers_done = c->running == 0;
        size_t n = 0;
        if ((code = jobs_dispatch(store, d, &n)) != 0)
            break;
        if (n == 0 && workers_done)
            break;
        if (n == 0)
            jobs_sleep_ms(2);
    }
    reap(c, 1);
    return code;
}

static double secs(int64_t ms)
{
    return (double)ms / 1000.0;
}

static void print_summary(const jobs_config *cfg, const jobs_dispatcher *d, const jobs_summary *s,
                          bitt_store *store, int64_t run_ms)
{
    int64_t t[7] = {0};
    for (int i = 0; i < 7; i++)
        jobs_counter(store, jobs_tally_keys[i], &t[i]);
    int64_t settled = s->done + s->dead;
    printf("processed  %" PRId64 " jobs in %.2f s: %.0f jobs/s\n", settled, secs(run_ms),
           run_ms > 0 ? (double)settled * 1000.0 / (double)run_ms : 0.0);
    printf("  done     %" PRId64 " (%" PRId64 " of them retried after a failed attempt)\n", s->done,
           s->retried);
    printf("  dead     %" PRId64 " (failed all %d attempts; see 'bitt queue dead %s')\n", s->dead,
           JOBS_MAX_ATTEMPTS, JOBS_TOPIC);
    printf("  events   %" PRIu64 " delivered from outbox stream \"%s\" in sequence order,"
           " and acked\n",
           d->events, JOBS_STREAM);
    printf("  workers ");
    for (int i = 0; i < cfg->workers; i++)
        printf(" %" PRId64, s->per_worker[i]);
    printf(" jobs done each\n");
    printf("  leases   %" PRId64 " partition leases taken, %" PRId64 " renewed, %" PRId64
           " tries on a busy partition, %" PRId64 " fenced commits refused\n",
           t[4], t[5], t[6], t[2]);
    printf("  queue    %" PRId64 " nacks, %" PRId64 " repeated deliveries, %" PRId64
           " stale tokens\n",
           t[0], t[1], t[3]);
    printf("  sum      %" PRId64 " (counter stats/sum)\n", s->sum);
}

static int run(jobs_config *cfg)
{
    bitt_store *store = NULL;
    jobs_dispatcher d;
    jobs_summary s;
    uint64_t stale = 0, fresh = 0;
    int code = open_store(cfg, &store);
    if (code != 0)
        return code;
    const char *backend = bitt_store_backend(store);
    if (strcmp(backend, "memory") == 0 || strncmp(cfg->url, "sqlite::memory:", 15) == 0)
        cfg->threads = 1; /* the store lives in this handle: share it */
    printf("bitt %s jobs example: %" PRId64 " jobs, %d partitions, %d worker %s, store %s (%s)\n",
           bitt_version(), cfg->jobs, cfg->partitions, cfg->workers,
           cfg->threads ? "threads" : "processes", cfg->url, backend);

    code = cfg->reset ? jobs_reset(store) : jobs_check_fresh(store);
    if (code == 0 && (code = jobs_fence_check(store, &stale, &fresh)) == 0)
        printf("fencing    ok: a stale holder's commit (epoch %" PRIu64
               ") was refused, and nothing of it written, once epoch %" PRIu64 " held the lease\n",
               stale, fresh);
    int64_t t0 = jobs_clock_ms();
    if (code == 0 && (code = jobs_produce(store, cfg)) == 0)
        printf("enqueued   %" PRId64 " jobs in %.2f s, %d per atomic commit\n", cfg->jobs,
               secs(jobs_clock_ms() - t0), JOBS_ENQUEUE_BATCH);
    if (code != 0 || (code = jobs_dispatcher_init(&d, cfg->jobs)) != 0) {
        bitt_store_close(store);
        return code;
    }

    /* A forked process must not inherit an open store: close it first. */
    g_crew.cfg = cfg;
    g_crew.shared = store;
    if (!cfg->threads) {
        bitt_store_close(store);
        store = NULL;
    }
    int64_t t1 = jobs_clock_ms();
    code = start_workers(&g_crew);
    if (code == 0 && store == NULL)
        code = open_store(cfg, &store);
    if (code == 0)
        code = dispatch_until_done(store, &d, &g_crew);
    else
        reap(&g_crew, 1);
    int64_t run_ms = jobs_clock_ms() - t1;

    memset(&s, 0, sizeof(s));
    s.per_worker = calloc((size_t)cfg->workers, sizeof(int64_t));
    if (code == 0 && s.per_worker == NULL)
        code = jobs_fail("out of memory", BITT_ENOMEM);
    if (code == 0)
        code = jobs_verify(store, cfg, &d, &s);
    if (code == 0) {
        print_summary(cfg, &d, &s, store, run_ms);
        if (s.violations == 0)
            printf("checks     ok: done + dead == %" PRId64 "; each done job has one result and"
                   " one delivered event; the dead are the jobs that always fail; counters"
                   " match; queue and outbox are empty\n",
                   cfg->jobs);
        else
            printf("checks     FAILED: %" PRId64 " violations (on stderr)\n", s.violations);
        if (g_crew.crashed > 0)
            printf("crashed    %d worker%s killed; the others took over\n", g_crew.crashed,
                   g_crew.crashed > 1 ? "s were" : " was");
        code = s.violations > 0 ? 1 : g_crew.failures > 0 ? 2 : 0;
    }
    free(s.per_worker);
    jobs_dispatcher_free(&d);
    bitt_store_close(store);
    return code;
}

int main(int argc, char **argv)
{
    jobs_config cfg;
    int code = parse_args(argc, argv, &cfg);
    if (code != 0)
        return code;
    return run(&cfg);
}
