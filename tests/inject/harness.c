/* The injection loop: one case, N = 1, 2, ... failures, every check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fault/fault.h"
#include "harness.h"

/* No representative call needs anywhere near this many allocations. */
#define MAX_ATTEMPTS 20000

/* Frees what a call handed back, keeping the store and what the case's
 * prepare step made. */
static void results_free(inj_ctx *c)
{
    bitt_entry_free(c->entry);
    bitt_entries_free(c->entries);
    bitt_messages_free(c->messages);
    bitt_message_free(c->message);
    bitt_store_close(c->other);
    bitt_schedule_free(c->schedule);
    bitt_schedule_list_free(c->schedules, c->schedule_count);
    bitt_buf_dispose(&c->buf);
    c->entry = NULL;
    c->entries = NULL;
    c->messages = NULL;
    c->message = NULL;
    c->other = NULL;
    c->schedule = NULL;
    c->schedules = NULL;
    c->schedule_count = 0;
}

static void ctx_free(inj_ctx *c)
{
    bitt_entry_free(c->entry);
    bitt_entries_free(c->entries);
    bitt_messages_free(c->messages);
    bitt_message_free(c->message);
    bitt_txn_free(c->txn);
    bitt_pubsub_close(c->sub);
    bitt_store_close(c->other);
    bitt_schedule_free(c->schedule);
    bitt_schedule_list_free(c->schedules, c->schedule_count);
    bitt_buf_dispose(&c->buf);
    bitt_store_close(c->store);
    memset(c, 0, sizeof *c);
}

/* A fresh store (a new empty database) with the fixture and the case's
 * own preparation, all with no fault armed. */
static void fresh(inj_ctx *c, const inj_target *target, const inj_case *k)
{
    memset(c, 0, sizeof *c);
    c->url = target->fresh_url();
    c->new_url = target->new_url();
    int rc = inj_fixture(c);
    if (!rc && k->prepare)
        rc = k->prepare(c);
    if (rc)
        fail_msg("%s on %s: setup failed: %d %s", k->name, target->name, rc, bitt_error_last());
}

static void arm(inj_mode mode, uint64_t n)
{
    if (mode == INJ_ALLOC)
        bitt__fault_alloc_arm(n);
    else
        bitt__fault_backend_arm(n);
}

static int fired(inj_mode mode)
{
    return mode == INJ_ALLOC ? bitt__fault_alloc_fired() : bitt__fault_backend_fired();
}

static int same(const bitt_buf *a, const bitt_buf *b)
{
    return a->len == b->len && (a->len == 0 || !memcmp(a->ptr, b->ptr, a->len));
}

/* Prints where two snapshots start to differ (their parts are printable
 * lines; the tuple encoding's separators show as '|'). */
static void show_difference(const bitt_buf *a, const bitt_buf *b)
{
    size_t i = 0;
    while (i < a->len && i < b->len && a->ptr[i] == b->ptr[i])
        i++;
    size_t from = i > 60 ? i - 60 : 0;
    const bitt_buf *both[2] = {a, b};
    for (int w = 0; w < 2; w++) {
        fputs(w ? "after:  ..." : "before: ...", stderr);
        for (size_t j = from; j < both[w]->len && j < from + 160; j++)
            fputc(both[w]->ptr[j] >= ' ' ? both[w]->ptr[j] : '|', stderr);
        fputc('\n', stderr);
    }
}

/* The status and message a call must give when the injected failure
 * reached it and it could not go on. */
static void check_failure(const inj_case *k, const char *where, inj_mode mode, uint64_t n, int rc,
                          int code, const char *message)
{
    int want = mode == INJ_ALLOC ? BITT_ENOMEM : BITT_EBACKEND;
    const char *needle = mode == INJ_ALLOC ? "out of memory" : "injected backend failure";
    if (rc != want || code != rc || !strstr(message, needle))
        fail_msg("%s on %s, failure #%llu: status %d (want %d), last error %d \"%s\" "
                 "(want it to say \"%s\")",
                 k->name, where, (unsigned long long)n, rc, want, code, message, needle);
}

/* A txn that lost an op keeps that refusal: the op again and the commit
 * give its status and write nothing. */
static void check_txn_failed(inj_ctx *c, const inj_case *k, const char *where, uint64_t n,
                             int failed_rc, const bitt_buf *before, bitt_buf *after)
{
    int rc = k->call(c);
    if (rc != failed_rc || !strstr(bitt_error_last(), "txn already failed"))
        fail_msg("%s on %s: after failure #%llu the same op on that txn gave %d (%s), want %d "
                 "(the txn already failed)",
                 k->name, where, (unsigned long long)n, rc, bitt_error_last(), failed_rc);
    rc = bitt_txn_commit(c->txn, NULL);
    if (rc != failed_rc)
        fail_msg("%s on %s: after failure #%llu the txn committed with %d (%s), want %d", k->name,
                 where, (unsigned long long)n, rc, bitt_error_last(), failed_rc);
    inj_snapshot(c->store, after);
    if (!same(after, before))
        fail_msg("%s on %s: the failed txn of failure #%llu wrote something", k->name, where,
                 (unsigned long long)n);
    bitt_txn_free(c->txn);
    c->txn = NULL;
    rc = k->prepare(c);
    if (rc)
        fail_msg("%s on %s: a new txn after failure #%llu: %d %s", k->name, where,
                 (unsigned long long)n, rc, bitt_error_last());
}

/* After a failure the store still works: the same call, with nothing
 * armed, gives the clean run's status and state (on a new txn when the
 * failure failed the txn it was made on). */
static void check_retry(inj_ctx *c, const inj_case *k, const char *where, uint64_t n, int failed_rc,
                        const bitt_buf *clean, const bitt_buf *before, bitt_buf *after)
{
    results_free(c);
    if (k->after == INJ_AFTER_TXN_FAILED)
        check_txn_failed(c, k, where, n, failed_rc, before, after);
    int rc = k->call(c);
    int want = k->after == INJ_AFTER_USED ? BITT_EUSAGE : k->expect;
    if (rc != want)
        fail_msg("%s on %s: after failure #%llu the same call gave %d (%s), want %d", k->name,
                 where, (unsigned long long)n, rc, bitt_error_last(), want);
    inj_snapshot(c->store, after);
    if (k->after != INJ_AFTER_USED && !same(after, clean))
        fail_msg("%s on %s: after failure #%llu the same call left another state than the "
                 "clean run",
                 k->name, where, (unsigned long long)n);
}

void inj_run_case(const inj_case *k, const inj_target *target, inj_mode mode, inj_totals *totals)
{
    const char *mode_name = mode == INJ_ALLOC ? "allocation" : "backend call";
    char where[128];
    snprintf(where, sizeof where, "%s, failing the N-th %s", target->name, mode_name);
    inj_ctx c;
    bitt_buf clean = BITT_BUF_INIT, before = BITT_BUF_INIT, after = BITT_BUF_INIT;

    /* The clean run: what success looks like. */
    fresh(&c, target, k);
    int rc = k->call(&c);
    if (rc != k->expect)
        fail_msg("%s on %s: clean run gave %d (%s), want %d", k->name, target->name, rc,
                 bitt_error_last(), k->expect);
    inj_snapshot(c.store, &clean);
    ctx_free(&c);

    for (uint64_t n = 1;; n++) {
        if (n > MAX_ATTEMPTS)
            fail_msg("%s on %s: still failing after %d attempts", k->name, where, MAX_ATTEMPTS);
        fresh(&c, target, k);
        inj_snapshot(c.store, &before);
        bitt_error_clear();
        arm(mode, n);
        rc = k->call(&c);
        int hit = fired(mode);
        arm(mode, 0);
        int code = bitt_error_last_code();
        char message[512];
        snprintf(message, sizeof message, "%s", bitt_error_last());
        inj_snapshot(c.store, &after);

        if (hit)
            totals->injected++;
        if (!hit || rc == k->expect) {
            /* Done, or the call got over the failure (a retry, a cache):
             * either way the result must be the clean run's. */
            if (rc != k->expect)
                fail_msg("%s on %s: no failure injected at #%llu, yet status %d (%s)", k->name,
                         where, (unsigned long long)n, rc, message);
            if (!same(&after, &clean))
                fail_msg("%s on %s: success after failure #%llu left another state than the "
                         "clean run",
                         k->name, where, (unsigned long long)n);
            if (hit)
                totals->tolerated++;
        } else {
            check_failure(k, where, mode, n, rc, code, message);
            /* A server that applied a write whose reply could not be read
             * (the message says so, as for a timeout) holds the clean
             * run's state: that one outcome is the other allowed one. */
            int maybe_applied = strstr(message, "may have been applied") != NULL ||
                                strstr(message, "was applied") != NULL;
            if (!same(&after, &before) && !(maybe_applied && same(&after, &clean))) {
                show_difference(&before, &after);
                fail_msg("%s on %s: failure #%llu (%s) left a partial write", k->name, where,
                         (unsigned long long)n, message);
            }
            /* (a write the server already applied is not done again: its
             * state was checked above, the snapshot read it back) */
            if (!(maybe_applied && !same(&after, &before)))
                check_retry(&c, k, where, n, rc, &clean, &before, &after);
        }
        ctx_free(&c);
        if (!hit)
            break;
    }
    totals->cases++;
    bitt_buf_dispose(&clean);
    bitt_buf_dispose(&before);
    bitt_buf_dispose(&after);
}
