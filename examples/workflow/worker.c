/*
 * worker.c: a worker process: claim a run, do its next step, again, until
 * SIGTERM. The loop holds no rule of its own: the step's commit decides.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "workflow.h"

static volatile sig_atomic_t g_stop;

static void on_term(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* One delivery: its step, again while a concurrent write moved the run
 * (an event came, a cancel looked) and the delivery is still ours. */
static int one_delivery(bitt_store *s, const bitt_message *m, int die_now)
{
    int rc;
    do
        rc = wf_step_run(s, m, die_now);
    while (rc == BITT_ECONFLICT);
    /* no longer ours: the run was cancelled, or the lease ran out and
     * another worker has the step */
    return rc == BITT_ETOKEN ? BITT_OK : rc;
}

int wf_worker_main(const char *url, int die_at)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s) != BITT_OK) {
        fprintf(stderr, "workflow worker: %s\n", bitt_error_last());
        return 1;
    }
    int steps = 0, rc = BITT_OK;
    while (!g_stop && rc == BITT_OK) {
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        o.lease_ms = WF_LEASE_MS;
        o.wait_ms = 100;
        bitt_messages *list = NULL;
        rc = bitt_queue_dequeue(s, WF_TOPIC, &o, &list);
        for (size_t i = 0; rc == BITT_OK && i < bitt_messages_count(list); i++)
            rc = one_delivery(s, bitt_messages_at(list, i), die_at > 0 && ++steps >= die_at);
        bitt_messages_free(list);
    }
    if (rc != BITT_OK)
        fprintf(stderr, "workflow worker: %s (%s)\n", bitt_strerror(rc), bitt_error_last());
    bitt_store_close(s);
    return rc == BITT_OK ? 0 : 1;
}
