/*
 * workflow.h: a small workflow engine on bitt.h alone (issue 23's proof that
 * queue control is enough for one).
 *
 * A run is one message of topic "wf.runs"; its id is the run's id. A worker
 * that holds the message's delivery does the run's next step and, in ONE
 * atomic commit, records the step (its position counter, its effect, its
 * result) together with what becomes of the delivery: snoozed (at once to
 * go on, or for a sleep), snoozed until an event (guarded by a check that
 * the event is still absent), or acked with the run's final status. A
 * worker killed mid-step commits nothing, its lease runs out, and another
 * worker does the step again: every step is recorded exactly once. An event
 * is stored and wakes its run in one commit (reschedule to now); a cancel
 * records the run's position and deletes its message in one commit, so a
 * worker inside the run is refused at its commit (BITT_ETOKEN).
 *
 * Keys, for run R: wf/R/pos (counter: the next step), wf/R/fx/S (counter:
 * times step S took effect), wf/R/out/S (step S's result), wf/R/ev/NAME
 * (an event), wf/R/status ("done", or "cancelled@P" at position P).
 */
#ifndef WORKFLOW_H
#define WORKFLOW_H

#include <stddef.h>
#include <stdint.h>

#include <bitt.h>

#define WF_TOPIC "wf.runs"
#define WF_EVENT "shipped"
#define WF_LEASE_MS 2000   /* a delivery's lease: a killed worker's step waits this long */
#define WF_MAX_ATTEMPTS 50 /* deliveries a run may use up (kills and lost leases) */
#define WF_WAIT_MS 3600000 /* how long a waiting run sleeps before it looks again */
#define WF_SLEEP_MS 30     /* the sleep step */

typedef enum wf_kind { WF_WORK, WF_SLEEP, WF_WAIT } wf_kind;

typedef struct wf_step {
    wf_kind kind;
    const char *name;
} wf_step;

/* The one workflow every run follows. */
extern const wf_step wf_steps[];
extern const size_t wf_step_count;

/* "wf/<run>/<what>" into buf (at least 96 bytes); its length. */
size_t wf_key(char *buf, uint64_t run, const char *what);
/* A counter key's value, 0 when absent; its version into *version. */
int wf_counter(bitt_store *s, const char *key, int64_t *value, uint64_t *version);

/* Runs the next step of the run whose delivery this is. BITT_OK when it was
 * committed, BITT_ETOKEN when the delivery is no longer ours (cancelled, or
 * the lease ran out), another status on failure. die_now: the worker
 * crashes (exit) after the step's work, before its commit. */
int wf_step_run(bitt_store *s, const bitt_message *m, int die_now);

/* A worker process's loop, until SIGTERM; die_at > 0: _exit mid-step at
 * the first WORK step from its die_at-th delivery on. */
int wf_worker_main(const char *url, int die_at);

/* Stores the event of run and wakes it, in one commit. */
int wf_send_event(bitt_store *s, uint64_t run);
/* Cancels run unless it ended: records its position and deletes its
 * message in one commit. *applied: whether it was cancelled. */
int wf_cancel(bitt_store *s, uint64_t run, int *applied);

/* Checks every invariant of the runs; prints each that breaks. 0 = all hold. */
int wf_verify(bitt_store *s, const uint64_t *runs, size_t count);

#endif /* WORKFLOW_H */
