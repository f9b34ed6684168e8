/*
 * tests/c/support/diff_core.c: the differential run's set-up and its
 * comparisons (see diff.h). A mismatch names the step, the operation, the
 * field and both stores' results.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "utf8.h"

int diff_init(diff_ctx *c, int n, uint32_t (*rnd)(void *, uint32_t), void *rng,
              void (*fail)(const char *))
{
    memset(c, 0, sizeof *c);
    c->n = n;
    c->rnd = rnd;
    c->rng = rng;
    c->fail = fail;
    c->max_id = 1;
    c->token = calloc(DIFF_MAX_STORES, sizeof *c->token);
    c->stale = calloc(DIFF_MAX_STORES, sizeof *c->stale);
    if (!c->token || !c->stale) {
        diff_free(c);
        return -1;
    }
    return 0;
}

void diff_free(diff_ctx *c)
{
    for (int i = 0; i < c->n; i++) {
        bitt_pubsub_close(c->subs[i]);
        c->subs[i] = NULL;
    }
    for (int i = 0; i < DIFF_MAX_STORES; i++) {
        free(c->vmap[i].ref);
        free(c->vmap[i].got);
        c->vmap[i] = (struct diff_vmap){0};
        free(c->idmap[i].ref);
        free(c->idmap[i].got);
        c->idmap[i] = (struct diff_vmap){0};
    }
    free(c->token);
    free(c->stale);
    free(c->cursor);
    c->token = c->stale = NULL;
    c->cursor = NULL;
}

uint32_t diff_rnd(diff_ctx *c, uint32_t n)
{
    return c->rnd(c->rng, n);
}

void diff_fail(diff_ctx *c, const char *fmt, ...)
{
    char msg[1024];
    int len = snprintf(msg, sizeof msg, "step %d: ", c->step);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + len, sizeof msg - (size_t)len, fmt, ap);
    va_end(ap);
    c->fail(msg);
    abort(); /* fail must not return */
}

void diff_subscribe(diff_ctx *c)
{
    for (int i = 0; i < c->n; i++)
        if (bitt_pubsub_subscribe(c->s[i], "c1", &c->subs[i]))
            diff_fail(c, "subscribe on %s: %s", c->names[i], bitt_error_last());
}

void diff_manual_clock(diff_ctx *c, int64_t now_ms)
{
    for (int i = 0; i < c->n; i++)
        if (bitt_clock_set_manual(c->s[i], now_ms))
            diff_fail(c, "manual clock on %s: %s", c->names[i], bitt_error_last());
    c->now = now_ms;
}

void diff_advance(diff_ctx *c, int64_t ms)
{
    for (int i = 0; i < c->n; i++)
        if (bitt_clock_advance(c->s[i], ms))
            diff_fail(c, "clock advance on %s: %s", c->names[i], bitt_error_last());
    c->now += ms;
}

void diff_same_rc(diff_ctx *c, const int *rc, const char *what)
{
    if (c->trace) {
        fprintf(c->trace, "step %d %s:", c->step, what);
        for (int i = 0; i < c->n; i++)
            fprintf(c->trace, " %s %d", c->names[i], rc[i]);
        fprintf(c->trace, "\n");
    }
    for (int i = 1; i < c->n; i++)
        if (rc[i] != rc[0])
            diff_fail(c, "%s: %s gave %d (%s), %s gave %d", what, c->names[i], rc[i],
                      bitt_strerror(rc[i]), c->names[0], rc[0]);
    for (size_t i = 0; i < sizeof c->seen / sizeof *c->seen; i++) {
        if (!c->seen[i].what || !strcmp(c->seen[i].what, what)) {
            c->seen[i].what = what;
            c->seen[i].runs++;
            c->seen[i].ok += rc[0] == BITT_OK;
            break;
        }
    }
}

void diff_same_i64(diff_ctx *c, const int64_t *v, const char *what, const char *field)
{
    for (int i = 1; i < c->n; i++)
        if (v[i] != v[0])
            diff_fail(c, "%s: %s: %s gave %lld, %s gave %lld", what, field, c->names[i],
                      (long long)v[i], c->names[0], (long long)v[0]);
}

/* Printable: bytes as C escapes, cut at 60. */
static const char *show(const uint8_t *p, size_t n, char *buf, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 5 < cap && i < 60; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
            buf[j++] = (char)p[i];
        else
            j += (size_t)snprintf(buf + j, cap - j, "\\x%02x", p[i]);
    }
    buf[j] = '\0';
    return buf;
}

static void same_bytes(diff_ctx *c, int i, const uint8_t *a, size_t al, const uint8_t *b, size_t bl,
                       const char *what, const char *field)
{
    if (al == bl && (!al || !memcmp(a, b, al)))
        return;
    char x[256], y[256];
    diff_fail(c, "%s: %s: %s gave \"%s\" (%zu bytes), %s gave \"%s\" (%zu bytes)", what, field,
              c->names[i], show(b, bl, y, sizeof y), bl, c->names[0], show(a, al, x, sizeof x), al);
}

static void same_str(diff_ctx *c, int i, const char *a, const char *b, const char *what,
                     const char *field)
{
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b)))
        diff_fail(c, "%s: %s: %s gave \"%s\", %s gave \"%s\"", what, field, c->names[i],
                  b ? b : "(none)", c->names[0], a ? a : "(none)");
}

static void same_num(diff_ctx *c, int i, int64_t a, int64_t b, const char *what, const char *field)
{
    if (a != b)
        diff_fail(c, "%s: %s: %s gave %lld, %s gave %lld", what, field, c->names[i], (long long)b,
                  c->names[0], (long long)a);
}

static void vmap_add(diff_ctx *c, int i, uint64_t ref, uint64_t got, const char *what)
{
    struct diff_vmap *m = &c->vmap[i];
    if (m->count && (ref <= m->ref[m->count - 1] || got <= m->got[m->count - 1]))
        diff_fail(c, "%s: versionstamps out of order: %s gave %llu after %llu, %s %llu after %llu",
                  what, c->names[i], (unsigned long long)got,
                  (unsigned long long)m->got[m->count - 1], c->names[0], (unsigned long long)ref,
                  (unsigned long long)m->ref[m->count - 1]);
    diff_vmap_insert(c, m, m->count, ref, got);
}

void diff_same_version(diff_ctx *c, const uint64_t *ver, const char *what)
{
    for (int i = 1; i < c->n; i++) {
        if (!c->ordered_versions[i] || !ver[0] || !ver[i])
            same_num(c, i, (int64_t)ver[0], (int64_t)ver[i], what, "version");
        else
            vmap_add(c, i, ver[0], ver[i], what);
    }
}

uint64_t diff_version_for(diff_ctx *c, int i, uint64_t ref)
{
    if (!c->ordered_versions[i] || !ref)
        return ref;
    long at = diff_vmap_find(&c->vmap[i], ref);
    if (at >= 0)
        return c->vmap[i].got[at];
    at = diff_vmap_find(&c->vmap[i], ref - 1);
    return at >= 0 ? c->vmap[i].got[at] + 1 : ref;
}

static void version_vs(diff_ctx *c, int i, uint64_t a, uint64_t b, const char *what)
{
    if (!c->ordered_versions[i]) {
        same_num(c, i, (int64_t)a, (int64_t)b, what, "version");
        return;
    }
    long at = diff_vmap_find(&c->vmap[i], a);
    if (at < 0 || c->vmap[i].got[at] != b)
        diff_fail(c, "%s: version: %s gave %llu, %s gave %llu (%s there)", what, c->names[i],
                  (unsigned long long)b, c->names[0], (unsigned long long)a,
                  at < 0 ? "no write made it" : "made by another write");
}

static void entry_vs(diff_ctx *c, int i, const bitt_entry *a, const bitt_entry *b, const char *what)
{
    if (!a || !b) {
        if (a != b)
            diff_fail(c, "%s: %s %s an entry, %s %s", what, c->names[i], b ? "gave" : "gave no",
                      c->names[0], a ? "did" : "did not");
        return;
    }
    size_t al, bl;
    const uint8_t *ap = bitt_entry_key(a, &al), *bp = bitt_entry_key(b, &bl);
    same_bytes(c, i, ap, al, bp, bl, what, "key");
    ap = bitt_entry_value(a, &al);
    bp = bitt_entry_value(b, &bl);
    same_bytes(c, i, ap, al, bp, bl, what, "value");
    same_num(c, i, bitt_entry_kind(a), bitt_entry_kind(b), what, "kind");
    version_vs(c, i, bitt_entry_version(a), bitt_entry_version(b), what);
    same_num(c, i, bitt_entry_expires_at(a), bitt_entry_expires_at(b), what, "expires_at");
}

void diff_same_entry(diff_ctx *c, bitt_entry *const *e, const char *what)
{
    for (int i = 1; i < c->n; i++)
        entry_vs(c, i, e[0], e[i], what);
}

void diff_same_entries(diff_ctx *c, bitt_entries *const *e, const char *what)
{
    for (int i = 1; i < c->n; i++) {
        if (!e[0] || !e[i]) {
            if (e[0] != e[i])
                diff_fail(c, "%s: only one of %s and %s gave a list", what, c->names[0],
                          c->names[i]);
            continue;
        }
        same_num(c, i, (int64_t)bitt_entries_count(e[0]), (int64_t)bitt_entries_count(e[i]), what,
                 "count");
        for (size_t j = 0; j < bitt_entries_count(e[0]); j++)
            entry_vs(c, i, bitt_entries_at(e[0], j), bitt_entries_at(e[i], j), what);
        same_str(c, i, bitt_entries_cursor(e[0]), bitt_entries_cursor(e[i]), what, "cursor");
    }
}

static void message_vs(diff_ctx *c, int i, const bitt_message *x, const bitt_message *y, int queue,
                       const char *what)
{
    if (queue)
        diff_same_id(c, i, bitt_message_id(x), bitt_message_id(y), what);
    else
        same_num(c, i, (int64_t)bitt_message_id(x), (int64_t)bitt_message_id(y), what, "id");
    same_str(c, i, bitt_message_topic(x), bitt_message_topic(y), what, "topic");
    size_t xl, yl;
    const uint8_t *xp = bitt_message_payload(x, &xl), *yp = bitt_message_payload(y, &yl);
    same_bytes(c, i, xp, xl, yp, yl, what, "payload");
    same_num(c, i, bitt_message_kind(x), bitt_message_kind(y), what, "kind");
    same_num(c, i, bitt_message_attempts(x), bitt_message_attempts(y), what, "attempts");
    same_num(c, i, bitt_message_max_attempts(x), bitt_message_max_attempts(y), what,
             "max_attempts");
    same_str(c, i, bitt_message_last_error(x), bitt_message_last_error(y), what, "last_error");
    same_num(c, i, bitt_message_created_at(x), bitt_message_created_at(y), what, "created_at");
    same_num(c, i, bitt_message_due_at(x), bitt_message_due_at(y), what, "due_at");
    same_num(c, i, bitt_message_failed_at(x), bitt_message_failed_at(y), what, "failed_at");
    same_num(c, i, bitt_message_park_reason(x), bitt_message_park_reason(y), what, "park_reason");
    same_num(c, i, bitt_message_token(x) != NULL, bitt_message_token(y) != NULL, what, "token");
}

/* An error text is stored as UTF-8 whatever the caller gave (bad bytes
 * become U+FFFD), so every binding can read it as a string: a rule that
 * holds on every store, not only the same bytes on all of them. */
static void utf8_error(diff_ctx *c, int i, const bitt_message *m, const char *what)
{
    const char *e = bitt_message_last_error(m);
    size_t len = e ? strlen(e) : 0, at = e ? bitt__utf8_invalid_at((const uint8_t *)e, len) : 0;
    char buf[256];
    if (at)
        diff_fail(c, "%s: last_error on %s is not UTF-8 (byte %zu of %zu): \"%s\"", what,
                  c->names[i], at - 1, len, show((const uint8_t *)e, len, buf, sizeof buf));
}

void diff_same_messages(diff_ctx *c, bitt_messages *const *l, int queue, const char *what)
{
    for (int i = 1; i < c->n; i++) {
        same_num(c, i, (int64_t)bitt_messages_count(l[0]), (int64_t)bitt_messages_count(l[i]), what,
                 "count");
        for (size_t j = 0; j < bitt_messages_count(l[0]); j++)
            message_vs(c, i, bitt_messages_at(l[0], j), bitt_messages_at(l[i], j), queue, what);
    }
    for (int i = 0; c->edges && i < c->n; i++)
        for (size_t j = 0; j < bitt_messages_count(l[i]); j++)
            utf8_error(c, i, bitt_messages_at(l[i], j), what);
}

void diff_report(const diff_ctx *c, FILE *f, const char *program)
{
    fprintf(f, "%s: operations run (succeeded):", program);
    for (size_t i = 0; i < sizeof c->seen / sizeof *c->seen && c->seen[i].what; i++)
        fprintf(f, "%s %s %d (%d)", i ? "," : "", c->seen[i].what, c->seen[i].runs, c->seen[i].ok);
    fprintf(f, "\n");
}
