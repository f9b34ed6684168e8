/*
 * tests/c/support/time_edges.c: the trace, the oracle and the edge values
 * of test_time_edges (time_edges.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time_edges.h"

const int64_t te_times[] = {
    0,
    1,
    1000000,
    TE_MAX / 2,
    TE_MAX - TE_DMAX - 1,
    TE_MAX - TE_DMAX,
    TE_MAX - 1000,
    TE_MAX - 10,
    TE_MAX - 2,
    TE_MAX - 1,
};
const size_t te_ntimes = sizeof te_times / sizeof *te_times;

const int64_t te_durations[] = {
    0, 1, 10, TE_DMAX - 1, TE_DMAX, TE_DMAX + 1, TE_MAX, -1,
};
const size_t te_ndurations = sizeof te_durations / sizeof *te_durations;

static char *vformat(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = n < 0 ? NULL : malloc((size_t)n + 1);
    if (!s)
        abort();
    vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

static void push(te_run *r, char *line)
{
    if (r->count == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 1024;
        r->lines = realloc(r->lines, r->cap * sizeof *r->lines);
        if (!r->lines)
            abort();
    }
    r->lines[r->count++] = line;
}

void te_note(te_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    push(r, vformat(fmt, ap));
    va_end(ap);
}

void te_bad(te_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(fmt, ap);
    va_end(ap);
    te_note(r, "VIOLATION %s", msg);
    if (r->nbad < TE_BAD_KEPT)
        r->bad[r->nbad] = msg;
    else
        free(msg);
    r->nbad++;
}

int te_status(te_run *r, const char *call, int status, int want)
{
    te_note(r, "%s -> %d", call, status);
    if (status != want)
        te_bad(r, "%s: status %d (%s), expected %d: %s", call, status, bitt_strerror(status), want,
               status < 0 ? bitt_error_last() : "");
    return status == want;
}

void te_at(te_run *r, bitt_store *s, int64_t now)
{
    if (bitt_clock_set_manual(s, now) != BITT_OK)
        te_bad(r, "bitt_clock_set_manual(%lld): %s", (long long)now, bitt_error_last());
}

int64_t te_sum(int64_t t, int64_t d)
{
    return d > TE_MAX - t ? TE_MAX : t + d;
}

bitt_store *te_store(te_run *r, const char *options)
{
    if (r->nstores == sizeof r->stores / sizeof *r->stores) {
        te_bad(r, "more stores open at once than te_run keeps");
        return NULL;
    }
    bitt_store *s = r->open(r, options);
    if (s)
        r->stores[r->nstores++] = s;
    return s;
}

void te_close_all(te_run *r)
{
    for (size_t i = 0; i < r->nstores; i++)
        bitt_store_close(r->stores[i]);
    r->nstores = 0;
}

void te_free(te_run *r)
{
    te_close_all(r);
    for (size_t i = 0; i < r->count; i++)
        free(r->lines[i]);
    for (size_t i = 0; i < r->nbad && i < TE_BAD_KEPT; i++)
        free(r->bad[i]);
    free(r->lines);
    memset(r, 0, sizeof *r);
}

/* The end of time: INT64_MAX is after every clock value, so a time that
 * saturated there never comes. */
void te_clock_rules(te_run *r)
{
    bitt_store *s = te_store(r, "");
    if (!s)
        return;
    te_status(r, "clock.set MAX", bitt_clock_set_manual(s, TE_MAX), BITT_EINVAL);
    te_status(r, "clock.set MAX-1", bitt_clock_set_manual(s, TE_MAX - 1), BITT_OK);
    te_status(r, "clock.advance 1 at MAX-1", bitt_clock_advance(s, 1), BITT_EINVAL);
    te_status(r, "clock.advance 0 at MAX-1", bitt_clock_advance(s, 0), BITT_OK);
    te_status(r, "clock.set MAX-10", bitt_clock_set_manual(s, TE_MAX - 10), BITT_OK);
    te_status(r, "clock.advance 10 at MAX-10", bitt_clock_advance(s, 10), BITT_EINVAL);
    te_status(r, "clock.advance 9 at MAX-10", bitt_clock_advance(s, 9), BITT_OK);
    int64_t now = 0;
    bitt_clock_now(s, &now);
    te_note(r, "clock.now -> %lld", (long long)now);
    if (now != TE_MAX - 1)
        te_bad(r, "clock.now after the refused advances: %lld, expected MAX-1", (long long)now);
}
