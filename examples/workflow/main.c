/*
 * main.c: the workflow example's driver. It starts runs, sends half of them
 * their event before any worker runs (a buffered event) and half while they
 * wait, cancels some mid-run, runs worker processes of which one crashes
 * mid-step and one is killed (SIGKILL), starts others in their place, and
 * when every run has ended checks that every step was done exactly once.
 *
 *   workflow URL [--runs N] [--workers W]
 *   workflow --url-env VAR [...]     the URL in $VAR, in a namespace of its own
 *   workflow --worker URL [--die-at N]   (a worker process; the driver starts them)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workflow.h"

#define MAX_RUNS 1000
#define MAX_WORKERS 16
#define DEADLINE_S 300 /* a bound on the whole run, not a timing assertion */

typedef struct driver {
    const char *url;
    bitt_store *store;
    uint64_t runs[MAX_RUNS];
    size_t nruns;
    pid_t workers[MAX_WORKERS];
    int nworkers;
    int crashed, killed, respawned;
} driver;

static void die(const char *what)
{
    fprintf(stderr, "workflow: %s: %s\n", what, bitt_error_last());
    exit(1);
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static pid_t spawn(const driver *d, int die_at)
{
    char arg[16];
    snprintf(arg, sizeof arg, "%d", die_at);
    pid_t pid = fork();
    if (pid < 0) {
        perror("workflow: fork");
        exit(1);
    }
    if (pid == 0) {
        execl("/proc/self/exe", "workflow", "--worker", d->url, "--die-at", arg, (char *)NULL);
        perror("workflow: exec");
        _exit(1);
    }
    return pid;
}

/* Reaps workers that ended: a crash or a kill is replaced; anything else
 * is a failure. */
static void reap(driver *d)
{
    for (int i = 0; i < d->nworkers; i++) {
        int st;
        pid_t r = waitpid(d->workers[i], &st, WNOHANG);
        if (r == 0)
            continue;
        if (r < 0 || !((WIFEXITED(st) && WEXITSTATUS(st) == 3) ||
                       (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))) {
            fprintf(stderr, "workflow: worker %d ended unexpectedly (status %d)\n",
                    (int)d->workers[i], st);
            exit(1);
        }
        d->workers[i] = spawn(d, 0);
        d->respawned++;
    }
}

static int64_t progress(driver *d)
{
    int64_t sum = 0;
    for (size_t i = 0; i < d->nruns; i++) {
        char key[96];
        int64_t pos = 0;
        wf_key(key, d->runs[i], "pos");
        if (wf_counter(d->store, key, &pos, NULL))
            die("read a run's position");
        sum += pos;
    }
    return sum;
}

static int all_ended(driver *d)
{
    for (size_t i = 0; i < d->nruns; i++) {
        char key[96];
        bitt_entry *e = NULL;
        int rc = bitt_kv_get(d->store, key, wf_key(key, d->runs[i], "status"), &e);
        bitt_entry_free(e);
        if (rc == BITT_NOTFOUND)
            return 0;
        if (rc)
            die("read a run's status");
    }
    return 1;
}

static void send_events(driver *d, size_t parity)
{
    for (size_t i = parity; i < d->nruns; i += 2)
        if (wf_send_event(d->store, d->runs[i]))
            die("send an event");
}

/* The URL in $var, with a schema or key prefix no other run uses. */
static const char *url_from_env(const char *var)
{
    static char url[2048];
    const char *base = getenv(var);
    if (!base || !*base) {
        fprintf(stderr, "workflow: %s is not set (scripts/test starts the servers)\n", var);
        exit(1);
    }
    int redis = !strncmp(base, "redis", 5);
    snprintf(url, sizeof url, "%s%s%s=wf_%ld_%ld%s", base, strchr(base, '?') ? "&" : "?",
             redis ? "prefix" : "schema", (long)getpid(), (long)time(NULL), redis ? "_" : "");
    return url;
}

static void usage(void)
{
    fprintf(stderr, "usage: workflow URL [--runs N] [--workers W]\n"
                    "       workflow --url-env VAR [--runs N] [--workers W]\n");
    exit(64);
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--worker") && !strcmp(argv[3], "--die-at"))
        return wf_worker_main(argv[2], atoi(argv[4]));
    driver d;
    memset(&d, 0, sizeof d);
    long runs = 40, workers = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
            workers = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--url-env") && i + 1 < argc && !d.url)
            d.url = url_from_env(argv[++i]);
        else if (argv[i][0] != '-' && !d.url)
            d.url = argv[i];
        else
            usage();
    }
    if (!d.url || runs < 2 || runs > MAX_RUNS || workers < 2 || workers > MAX_WORKERS)
        usage();
    if (bitt_store_open(d.url, &d.store) != BITT_OK)
        die(d.url);
    bitt_queue_stats st;
    memset(&st, 0, sizeof st);
    st.version = BITT_QUEUE_STATS_VERSION;
    if (bitt_queue_stats_get(d.store, WF_TOPIC, &st) != BITT_OK)
        die("stats");
    if (st.pending || st.delayed || st.processing || st.dead) {
        fprintf(stderr, "workflow: the store holds an earlier run; use a new one\n");
        return 1;
    }

    for (long i = 0; i < runs; i++) {
        bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
        o.max_attempts = WF_MAX_ATTEMPTS;
        if (bitt_queue_enqueue(d.store, WF_TOPIC, "run", 3, BITT_KIND_BYTES, &o,
                               &d.runs[d.nruns++]) != BITT_OK)
            die("start a run");
    }
    send_events(&d, 0); /* buffered: stored before the run waits */

    /* A worker that crashes inside a step (after its work, before its
     * commit), alone, so that it surely does; its step is done again by
     * another worker once its lease runs out. */
    d.workers[0] = spawn(&d, 3);
    d.nworkers = 1;
    int st0;
    if (waitpid(d.workers[0], &st0, 0) < 0 || !WIFEXITED(st0) || WEXITSTATUS(st0) != 3) {
        fprintf(stderr, "workflow: the crashing worker did not crash (status %d)\n", st0);
        return 1;
    }
    d.crashed = 1;
    d.nworkers = (int)workers;
    for (int i = 0; i < d.nworkers; i++)
        d.workers[i] = spawn(&d, 0);

    int64_t total = (int64_t)runs * (int64_t)wf_step_count;
    int cancels_sent = 0, cancelled = 0, events_sent = 0;
    time_t deadline = time(NULL) + DEADLINE_S;
    while (!all_ended(&d)) {
        if (time(NULL) > deadline) {
            fprintf(stderr, "workflow: runs still going after %d s (progress %lld of %lld)\n",
                    DEADLINE_S, (long long)progress(&d), (long long)total);
            return 1;
        }
        reap(&d);
        int64_t done = progress(&d);
        if (!cancels_sent && done >= total / 5) {
            for (size_t i = 2; i < d.nruns; i += 5) {
                int applied = 0;
                if (wf_cancel(d.store, d.runs[i], &applied))
                    die("cancel a run");
                cancelled += applied;
            }
            cancels_sent = 1;
        }
        if (!events_sent && done >= total / 4) {
            send_events(&d, 1); /* most of these runs wait by now */
            events_sent = 1;
        }
        if (!d.killed && done >= total / 3) {
            kill(d.workers[d.nworkers - 1], SIGKILL);
            d.killed = 1;
        }
        pause_ms(20);
    }
    for (int i = 0; i < d.nworkers; i++)
        kill(d.workers[i], SIGTERM);
    for (int i = 0; i < d.nworkers; i++) {
        int ws;
        if (waitpid(d.workers[i], &ws, 0) < 0 ||
            !(WIFEXITED(ws) ? WEXITSTATUS(ws) == 0 : WTERMSIG(ws) == SIGKILL)) {
            fprintf(stderr, "workflow: a worker failed (status %d)\n", ws);
            return 1;
        }
    }
    int bad = wf_verify(d.store, d.runs, d.nruns);
    printf("workflow: %zu runs of %zu steps, %d cancelled mid-run, 1 worker crashed mid-step, "
           "%d killed, %d started in their place: %s\n",
           d.nruns, wf_step_count, cancelled, d.killed, d.respawned,
           bad ? "FAILED" : "every step done exactly once");
    bitt_store_close(d.store);
    return bad;
}
