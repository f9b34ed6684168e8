/*
 * engine.c: one step of a run, and the two calls from outside a run (an
 * event, a cancel). Every change a step makes is in the commit that also
 * says what becomes of the run's delivery, so a step is recorded once or
 * not at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workflow.h"

const wf_step wf_steps[] = {
    {WF_WORK, "reserve"}, {WF_WORK, "charge"}, {WF_SLEEP, "cool-off"},
    {WF_WAIT, WF_EVENT},  {WF_WORK, "notify"},
};
const size_t wf_step_count = sizeof wf_steps / sizeof *wf_steps;

size_t wf_key(char *buf, uint64_t run, const char *what)
{
    return (size_t)snprintf(buf, 96, "wf/%llu/%s", (unsigned long long)run, what);
}

int wf_counter(bitt_store *s, const char *key, int64_t *value, uint64_t *version)
{
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(s, key, strlen(key), &e);
    *value = 0;
    if (version)
        *version = 0;
    if (rc == BITT_NOTFOUND)
        return BITT_OK;
    if (rc)
        return rc;
    rc = bitt_entry_counter(e, value);
    if (version)
        *version = bitt_entry_version(e);
    bitt_entry_free(e);
    return rc;
}

/* Whether key is present; its version into *version (0 = absent). */
static int present(bitt_store *s, const char *key, uint64_t *version)
{
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(s, key, strlen(key), &e);
    *version = 0;
    if (rc == BITT_NOTFOUND)
        return BITT_OK;
    if (!rc)
        *version = bitt_entry_version(e);
    bitt_entry_free(e);
    return rc;
}

/* A WORK step's effect, recorded with the step: its counter and result. */
static int record_work(bitt_txn *txn, uint64_t run, int64_t pos)
{
    char key[96], what[32], out[128];
    snprintf(what, sizeof what, "fx/%lld", (long long)pos);
    size_t n = wf_key(key, run, what);
    int rc = bitt_txn_sum(txn, key, n, 1);
    snprintf(what, sizeof what, "out/%lld", (long long)pos);
    n = wf_key(key, run, what);
    int len =
        snprintf(out, sizeof out, "%s of run %llu", wf_steps[pos].name, (unsigned long long)run);
    if (!rc)
        rc = bitt_txn_set(txn, key, n, out, (size_t)len, BITT_KIND_BYTES, 0);
    return rc;
}

/* The txn ops of a step that advances the run past pos. */
static int advance(bitt_txn *txn, const bitt_message *m, int64_t pos)
{
    uint64_t run = bitt_message_id(m);
    const char *token = bitt_message_token(m);
    char key[96];
    int rc = bitt_txn_sum(txn, key, wf_key(key, run, "pos"), 1);
    if (rc)
        return rc;
    if ((size_t)pos + 1 == wf_step_count) {
        rc = bitt_txn_set(txn, key, wf_key(key, run, "status"), "done", 4, BITT_KIND_BYTES, 0);
        return rc ? rc : bitt_txn_queue_ack(txn, WF_TOPIC, run, token);
    }
    int64_t delay = wf_steps[pos].kind == WF_SLEEP ? WF_SLEEP_MS : 0;
    return bitt_txn_queue_snooze(txn, WF_TOPIC, run, token, delay);
}

int wf_step_run(bitt_store *s, const bitt_message *m, int die_now)
{
    uint64_t run = bitt_message_id(m);
    char key[96], ev[96];
    int64_t pos = 0;
    uint64_t pos_version = 0, ev_version = 0;
    wf_key(key, run, "pos");
    wf_key(ev, run, "ev/" WF_EVENT);
    int rc = wf_counter(s, key, &pos, &pos_version);
    if (rc)
        return rc;
    if (pos < 0 || (size_t)pos >= wf_step_count) {
        fprintf(stderr, "workflow: run %llu is at step %lld of %zu\n", (unsigned long long)run,
                (long long)pos, wf_step_count);
        return BITT_EINVAL;
    }
    const wf_step *step = &wf_steps[pos];
    if (step->kind == WF_WAIT && (rc = present(s, ev, &ev_version)) != BITT_OK)
        return rc;

    bitt_txn *txn = NULL;
    if ((rc = bitt_txn_begin(s, &txn)) != BITT_OK)
        return rc;
    /* the step is judged at the position it was read at */
    rc = bitt_txn_check(txn, key, strlen(key), pos_version);
    if (!rc && step->kind == WF_WORK) {
        rc = record_work(txn, run, pos);
        if (die_now)
            _exit(3); /* the work is done, its commit never happens */
    }
    if (!rc && step->kind == WF_WAIT && !ev_version) {
        /* no event yet: sleep until one wakes the run, unless one arrives
         * before this commit (the check fails, and the step is read again) */
        rc = bitt_txn_check(txn, ev, strlen(ev), 0);
        if (!rc)
            rc = bitt_txn_queue_snooze(txn, WF_TOPIC, run, bitt_message_token(m), WF_WAIT_MS);
    } else if (!rc) {
        rc = advance(txn, m, pos);
    }
    if (!rc)
        rc = bitt_txn_commit(txn, NULL);
    bitt_txn_free(txn);
    return rc;
}

int wf_send_event(bitt_store *s, uint64_t run)
{
    char key[96];
    bitt_txn *txn = NULL;
    int rc = bitt_txn_begin(s, &txn);
    if (!rc)
        rc = bitt_txn_set(txn, key, wf_key(key, run, "ev/" WF_EVENT), "1", 1, BITT_KIND_BYTES, 0);
    /* a waiting run is due at once; a busy one finds the event when it looks */
    if (!rc)
        rc = bitt_txn_queue_reschedule(txn, WF_TOPIC, run, 0);
    if (!rc)
        rc = bitt_txn_commit(txn, NULL);
    bitt_txn_free(txn);
    return rc;
}

int wf_cancel(bitt_store *s, uint64_t run, int *applied)
{
    *applied = 0;
    for (;;) {
        char pos_key[96], status_key[96], status[64];
        uint64_t status_version = 0, pos_version = 0;
        int64_t pos = 0;
        wf_key(status_key, run, "status");
        wf_key(pos_key, run, "pos");
        int rc = present(s, status_key, &status_version);
        if (!rc && status_version)
            return BITT_OK; /* it ended: done, or cancelled already */
        if (!rc)
            rc = wf_counter(s, pos_key, &pos, &pos_version);
        if (rc)
            return rc;
        int len = snprintf(status, sizeof status, "cancelled@%lld", (long long)pos);
        bitt_txn *txn = NULL;
        rc = bitt_txn_begin(s, &txn);
        if (!rc)
            rc = bitt_txn_check(txn, status_key, strlen(status_key), 0);
        if (!rc)
            rc = bitt_txn_check(txn, pos_key, strlen(pos_key), pos_version);
        if (!rc)
            rc = bitt_txn_set(txn, status_key, strlen(status_key), status, (size_t)len,
                              BITT_KIND_BYTES, 0);
        if (!rc)
            rc = bitt_txn_queue_cancel(txn, WF_TOPIC, run);
        if (!rc)
            rc = bitt_txn_commit(txn, NULL);
        bitt_txn_free(txn);
        if (rc == BITT_OK)
            *applied = 1;
        if (rc != BITT_ECONFLICT)
            return rc;
        /* a step or the end came first: look again */
    }
}
