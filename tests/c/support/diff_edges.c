/*
 * tests/c/support/diff_edges.c: the edge values and refused calls of a
 * differential run (diff.h, with edges set), and the txn builder that
 * checks the rule of a failed txn on every store.
 *
 * An edge replaces the usual value only now and then: a run that is mostly
 * refusals never builds the state (leased messages, dead letters, parked
 * events, due schedules) where the edges matter.
 */
#include <stdio.h>
#include <string.h>

#include "diff.h"

#define N DIFF_MAX_STORES
#define DEFAULT_MAX_KEY 2048
#define DEFAULT_MAX_VALUE 65536

/* Bytes for the keys, values and error texts at and over the limits (the
 * largest limit a test sets is the default value limit). */
static char g_big[DEFAULT_MAX_VALUE + 2];
static char g_bad_error[DEFAULT_MAX_VALUE + 2];
static char g_name255[256], g_name256[257], g_name255_utf8[256], g_name256_utf8[257];
static char g_json[DEFAULT_MAX_VALUE + 2];

static void fill_once(void)
{
    if (g_big[0])
        return;
    for (size_t i = 0; i < sizeof g_big - 1; i++)
        g_big[i] = (char)('a' + i % 26);
    memset(g_name255, 'n', 255);
    memset(g_name256, 'n', 256);
    /* 255 and 256 bytes ending in a 3-byte character: a store that cut a
     * name by bytes would split it */
    memset(g_name255_utf8, 'n', 252);
    memcpy(g_name255_utf8 + 252, "\xe2\x82\xac", 3);
    memset(g_name256_utf8, 'n', 253);
    memcpy(g_name256_utf8 + 253, "\xe2\x82\xac", 3);
}

static size_t max_key(const diff_ctx *c)
{
    return c->max_key ? c->max_key : DEFAULT_MAX_KEY;
}

static size_t max_value(const diff_ctx *c)
{
    return c->max_value ? c->max_value : DEFAULT_MAX_VALUE;
}

/* Whether to replace the usual value: 1 in n draws with edges. */
static int edge(diff_ctx *c, uint32_t n)
{
    return c->edges && diff_rnd(c, n) == 0;
}

int diff_edge_key(diff_ctx *c, const void **key, size_t *len)
{
    if (!edge(c, 25))
        return 0;
    fill_once();
    *key = g_big;
    *len = max_key(c) + diff_rnd(c, 2);
    return 1;
}

/* A value the engine must refuse, or one at its limit. */
static void odd_value(diff_ctx *c, const void **value, size_t *len, int *kind)
{
    static const struct {
        const char *text;
        int kind;
    } bad[] = {
        {"{", BITT_KIND_JSON},
        {"[1,]", BITT_KIND_JSON},
        {"\"\xff\"", BITT_KIND_JSON},
        {"01", BITT_KIND_JSON},
        {"x", BITT_KIND_COUNTER},
        {"-0", BITT_KIND_COUNTER},
        {"", BITT_KIND_COUNTER},
        {"9223372036854775808", BITT_KIND_COUNTER},
        {"v", 3},
        {"v", -1},
    };
    fill_once();
    uint32_t pick = diff_rnd(c, 14);
    if (pick < 10) {
        *value = bad[pick].text;
        *len = strlen(bad[pick].text);
        *kind = bad[pick].kind;
    } else if (pick < 12) { /* bytes at the limit, and one over */
        *value = g_big;
        *len = max_value(c) + (pick == 11);
        *kind = BITT_KIND_BYTES;
    } else { /* a JSON string at the limit, and one over */
        size_t n = max_value(c) + (pick == 13);
        g_json[0] = '"';
        memset(g_json + 1, 'j', n - 2);
        g_json[n - 1] = '"';
        *value = g_json;
        *len = n;
        *kind = BITT_KIND_JSON;
    }
}

int diff_edge_value(diff_ctx *c, const void **value, size_t *len, int *kind)
{
    if (!edge(c, 12))
        return 0;
    odd_value(c, value, len, kind);
    return 1;
}

int64_t diff_edge_ttl(diff_ctx *c, int64_t usual)
{
    if (!edge(c, 12))
        return usual;
    switch (diff_rnd(c, 6)) {
    case 0: return INT64_MAX;
    case 1: return BITT_DURATION_MAX_MS;
    case 2: return INT64_MAX - c->now; /* ends exactly at the end of time */
    case 3: return c->now < INT64_MAX ? INT64_MAX - c->now - 1 : 1;
    case 4: return -1;
    default: return INT64_MIN;
    }
}

int64_t diff_edge_duration(diff_ctx *c, int64_t usual, int64_t min)
{
    if (!edge(c, 12))
        return usual;
    switch (diff_rnd(c, 6)) {
    case 0: return BITT_DURATION_MAX_MS;
    case 1: return BITT_DURATION_MAX_MS + 1;
    case 2: return BITT_DURATION_MAX_MS - 1;
    case 3: return min - 1;
    case 4: return INT64_MAX;
    default: return INT64_MIN;
    }
}

int64_t diff_edge_time(diff_ctx *c, int64_t usual)
{
    if (!edge(c, 10))
        return usual;
    switch (diff_rnd(c, 6)) {
    case 0: return INT64_MAX;
    case 1: return c->now;
    case 2: return c->now < INT64_MAX ? c->now + 1 : c->now;
    case 3: return c->now > 0 ? c->now - 1 : 0;
    case 4: return -1;
    default: return INT64_MIN;
    }
}

const char *diff_edge_name(diff_ctx *c, const char *usual)
{
    if (!edge(c, 30))
        return usual;
    fill_once();
    const char *names[] = {g_name255,  g_name256,          g_name255_utf8, g_name256_utf8,
                           "",         "caf\xe9",          "ok\xc3",       "\xed\xa0\x80",
                           "\xc0\xaf", "\xf4\x90\x80\x80", "caf\xc3\xa9"};
    return names[diff_rnd(c, sizeof names / sizeof *names)];
}

const char *diff_edge_error(diff_ctx *c, const char *usual)
{
    if (!edge(c, 3))
        return usual;
    fill_once();
    static const char *const texts[] = {
        "caf\xe9 failed",           "\xff",     "ok\xc3", "\xed\xa0\x80 surrogate",
        "\xf4\x90\x80\x80 too big", "\xc0\xaf", "a\x80",  "\xe2\x82\xac fine"};
    uint32_t pick = diff_rnd(c, 10);
    if (pick < 8)
        return texts[pick];
    /* invalid bytes at the value limit (their replacements are longer), and
     * one byte over it */
    size_t len = max_value(c) + (pick == 9);
    memset(g_bad_error, 0xff, len);
    g_bad_error[len] = '\0';
    return g_bad_error;
}

uint32_t diff_edge_limit(diff_ctx *c, uint32_t usual)
{
    if (!edge(c, 15))
        return usual;
    switch (diff_rnd(c, 3)) {
    case 0: return 1000;
    case 1: return 1001;
    default: return UINT32_MAX;
    }
}

/* ---- txns ------------------------------------------------------------------ */

#define WITNESS "\x01w"
#define FILL "\x01n"

void diff_txn_begin(diff_ctx *c, diff_txn *x)
{
    memset(x, 0, sizeof *x);
    for (int i = 0; i < c->n; i++)
        if (bitt_txn_begin(c->s[i], &x->t[i]))
            diff_fail(c, "txn begin on %s: %s", c->names[i], bitt_error_last());
    if (!c->edges)
        return;
    snprintf(x->witness, sizeof x->witness, "w%llu", (unsigned long long)++c->commits);
    int rc[N];
    for (int i = 0; i < c->n; i++)
        rc[i] = diff_txn_note(
            x, i,
            bitt_txn_set(x->t[i], WITNESS, 2, x->witness, strlen(x->witness), BITT_KIND_BYTES, 0));
    diff_txn_added(c, x, rc, "txn witness");
}

int diff_txn_note(diff_txn *x, int i, int rc)
{
    if (rc < 0 && !x->first)
        snprintf(x->message[i], sizeof x->message[i], "%s", bitt_error_last());
    return rc;
}

void diff_txn_added(diff_ctx *c, diff_txn *x, const int *rc, const char *what)
{
    diff_same_rc(c, rc, what);
    x->held += rc[0] == BITT_OK;
    if (!c->edges)
        return;
    if (x->first) {
        for (int i = 0; i < c->n; i++)
            if (rc[i] != x->first)
                diff_fail(c,
                          "%s: txn rule: on %s an add after a refused one gave %d (%s); the txn "
                          "failed with %d (%s) and every later add must give that",
                          what, c->names[i], rc[i], bitt_strerror(rc[i]), x->first,
                          bitt_strerror(x->first));
    } else if (rc[0] < 0) {
        x->first = rc[0];
    }
}

/* One add on every store; kind picks which. */
static void edge_add(diff_ctx *c, diff_txn *x, uint32_t kind)
{
    static const char *const what[] = {
        "txn check, key too long", "txn set, key too long",    "txn set, bad value",
        "txn set, bad ttl",        "txn delete, key too long", "txn sum, key too long",
        "txn fence, bad name",     "txn fence, bad owner",     "txn enqueue, bad topic",
        "txn enqueue, bad delay",  "txn enqueue, bad dedup",   "txn enqueue, bad payload",
        "txn append, bad stream",  "txn append, bad event",    "txn set, huge ttl",
        "txn enqueue, far delay"};
    fill_once();
    const char *over_key = g_big, *name = g_name256;
    size_t over = max_key(c) + 1;
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    const void *v = "v";
    size_t vlen = 1;
    int vkind = BITT_KIND_BYTES;
    if (kind == 2 || kind == 11 || kind == 13)
        odd_value(c, &v, &vlen, &vkind);
    if (kind == 6 || kind == 7 || kind == 8 || kind == 12)
        name = diff_rnd(c, 2) ? g_name256 : diff_rnd(c, 2) ? "caf\xe9" : "";
    if (kind == 9)
        o.delay_ms = diff_rnd(c, 2) ? BITT_DURATION_MAX_MS + 1 : -1;
    if (kind == 10) {
        o.dedup_key = g_big;
        o.dedup_key_len = over;
    }
    if (kind == 15)
        o.delay_ms = BITT_DURATION_MAX_MS;
    int64_t bad_ttl = diff_rnd(c, 2) ? -1 : INT64_MIN;
    int rc[N];
    for (int i = 0; i < c->n; i++) {
        bitt_txn *t = x->t[i];
        int r;
        switch (kind) {
        case 0: r = bitt_txn_check(t, over_key, over, 0); break;
        case 1: r = bitt_txn_set(t, over_key, over, "v", 1, BITT_KIND_BYTES, 0); break;
        case 2: r = bitt_txn_set(t, "a", 1, v, vlen, vkind, 0); break;
        case 3: r = bitt_txn_set(t, "a", 1, "v", 1, BITT_KIND_BYTES, bad_ttl); break;
        case 4: r = bitt_txn_delete(t, over_key, over); break;
        case 5: r = bitt_txn_sum(t, over_key, over, 1); break;
        case 6: r = bitt_txn_fence(t, name, "o1", c->epoch); break;
        case 7: r = bitt_txn_fence(t, "L", name, c->epoch); break;
        case 8: r = bitt_txn_enqueue(t, name, "q", 1, BITT_KIND_BYTES, NULL); break;
        case 9:
        case 10:
        case 15: r = bitt_txn_enqueue(t, "t1", "q", 1, BITT_KIND_BYTES, &o); break;
        case 11: r = bitt_txn_enqueue(t, "t1", v, vlen, vkind, NULL); break;
        case 12: r = bitt_txn_outbox_append(t, name, "e", 1, BITT_KIND_BYTES); break;
        case 13: r = bitt_txn_outbox_append(t, "s1", v, vlen, vkind); break;
        default: r = bitt_txn_set(t, "b", 1, "v", 1, BITT_KIND_BYTES, INT64_MAX); break;
        }
        rc[i] = diff_txn_note(x, i, r);
    }
    diff_txn_added(c, x, rc, what[kind]);
}

void diff_txn_edge_add(diff_ctx *c, diff_txn *x)
{
    if (c->edges)
        edge_add(c, x, diff_rnd(c, 16));
}

void diff_txn_fill(diff_ctx *c, diff_txn *x, int over)
{
    int rc[N];
    /* a failed txn holds no more: its adds keep failing, so the loop is
     * bounded by the count too */
    for (int j = 0; x->held < BITT_TXN_OPS_MAX && j < BITT_TXN_OPS_MAX; j++) {
        for (int i = 0; i < c->n; i++)
            rc[i] = diff_txn_note(x, i, bitt_txn_sum(x->t[i], FILL, 2, 1));
        diff_txn_added(c, x, rc, "txn fill");
    }
    if (over) {
        for (int i = 0; i < c->n; i++)
            rc[i] = diff_txn_note(x, i, bitt_txn_sum(x->t[i], FILL, 2, 1));
        diff_txn_added(c, x, rc, "txn op 1001");
    }
}

void diff_txn_commit(diff_ctx *c, diff_txn *x, int *rc, uint64_t *ver)
{
    char message[N][256];
    for (int i = 0; i < c->n; i++) {
        rc[i] = bitt_txn_commit(x->t[i], &ver[i]);
        snprintf(message[i], sizeof message[i], "%s", rc[i] < 0 ? bitt_error_last() : "");
        bitt_txn_free(x->t[i]);
        x->t[i] = NULL;
    }
    if (!c->edges)
        return;
    for (int i = 0; i < c->n; i++) {
        if (x->first && (rc[i] != x->first || strcmp(message[i], x->message[i])))
            diff_fail(c,
                      "txn rule: on %s the commit of a txn whose add was refused with %d (%s: "
                      "\"%s\") gave %d (%s: \"%s\"); it must give that first refusal, message "
                      "and all, and write nothing",
                      c->names[i], x->first, bitt_strerror(x->first), x->message[i], rc[i],
                      bitt_strerror(rc[i]), message[i]);
        /* nothing or everything: the witness, the txn's first op */
        bitt_entry *e = NULL;
        int got = bitt_kv_get(c->s[i], WITNESS, 2, &e);
        size_t len = 0;
        const uint8_t *v = e ? bitt_entry_value(e, &len) : NULL;
        int there = got == BITT_OK && len == strlen(x->witness) && !memcmp(v, x->witness, len);
        bitt_entry_free(e);
        if (got < 0)
            diff_fail(c, "txn witness read on %s: %d (%s)", c->names[i], got, bitt_error_last());
        if (there != (rc[i] == BITT_OK))
            diff_fail(c, "txn: on %s the commit gave %d (%s) but its first set %s written",
                      c->names[i], rc[i], bitt_strerror(rc[i]), there ? "was" : "was not");
    }
}
