/*
 * verify.c: what must hold when every run has ended: a done run did every
 * step exactly once; a cancelled run did each step before its cancel once
 * and none after; nothing is left in the queue.
 */
#include <stdio.h>
#include <string.h>

#include "workflow.h"

static int g_broken;

static void broken(uint64_t run, const char *what, long long got)
{
    if (g_broken++ < 20)
        fprintf(stderr, "workflow: run %llu: %s (got %lld)\n", (unsigned long long)run, what, got);
}

/* The text under key into buf ("" when absent). */
static int text(bitt_store *s, const char *key, char *buf, size_t size)
{
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(s, key, strlen(key), &e);
    buf[0] = '\0';
    if (rc == BITT_NOTFOUND)
        return BITT_OK;
    if (rc)
        return rc;
    size_t n = 0;
    const uint8_t *v = bitt_entry_value(e, &n);
    if (n >= size)
        n = size - 1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    bitt_entry_free(e);
    return BITT_OK;
}

static int verify_run(bitt_store *s, uint64_t run)
{
    char key[96], status[64], out[128], what[32];
    int64_t pos = 0, fx = 0;
    int rc = text(s, (wf_key(key, run, "status"), key), status, sizeof status);
    if (!rc)
        rc = wf_counter(s, (wf_key(key, run, "pos"), key), &pos, NULL);
    if (rc)
        return rc;
    long long end = (long long)wf_step_count;
    if (!strcmp(status, "done")) {
        if (pos != end)
            broken(run, "done, but not at the last step", pos);
    } else if (sscanf(status, "cancelled@%lld", &end) == 1) {
        if (pos != end)
            broken(run, "moved on after its cancel", pos);
    } else {
        broken(run, "never ended", pos);
        return BITT_OK;
    }
    for (size_t i = 0; i < wf_step_count; i++) {
        if (wf_steps[i].kind != WF_WORK)
            continue;
        snprintf(what, sizeof what, "fx/%zu", i);
        if ((rc = wf_counter(s, (wf_key(key, run, what), key), &fx, NULL)) != BITT_OK)
            return rc;
        if (fx != ((long long)i < end ? 1 : 0))
            broken(run,
                   (long long)i < end ? "a step not done exactly once" : "a step after the cancel",
                   fx);
        snprintf(what, sizeof what, "out/%zu", i);
        if ((rc = text(s, (wf_key(key, run, what), key), out, sizeof out)) != BITT_OK)
            return rc;
        if (((long long)i < end) != (out[0] != '\0') ||
            (out[0] && strncmp(out, wf_steps[i].name, strlen(wf_steps[i].name))))
            broken(run, "a step's result is wrong", (long long)i);
    }
    bitt_message *m = NULL;
    rc = bitt_queue_get(s, WF_TOPIC, run, &m);
    bitt_message_free(m);
    if (rc == BITT_OK)
        broken(run, "its message is still queued", 0);
    return rc == BITT_NOTFOUND ? BITT_OK : rc;
}

int wf_verify(bitt_store *s, const uint64_t *runs, size_t count)
{
    g_broken = 0;
    for (size_t i = 0; i < count; i++) {
        int rc = verify_run(s, runs[i]);
        if (rc) {
            fprintf(stderr, "workflow: verify: %s\n", bitt_error_last());
            return 1;
        }
    }
    bitt_queue_stats st;
    memset(&st, 0, sizeof st);
    st.version = BITT_QUEUE_STATS_VERSION;
    if (bitt_queue_stats_get(s, WF_TOPIC, &st) != BITT_OK) {
        fprintf(stderr, "workflow: stats: %s\n", bitt_error_last());
        return 1;
    }
    if (st.pending || st.delayed || st.processing || st.dead) {
        fprintf(stderr,
                "workflow: the queue is not empty: %llu pending, %llu delayed, %llu "
                "processing, %llu dead\n",
                (unsigned long long)st.pending, (unsigned long long)st.delayed,
                (unsigned long long)st.processing, (unsigned long long)st.dead);
        g_broken++;
    }
    return g_broken ? 1 : 0;
}
