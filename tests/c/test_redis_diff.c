/*
 * The Redis backend against the memory backend: the same random operations
 * on both, with manual clocks moving together, and every status, entry,
 * list page, versionstamp, message, lease, outbox event, budget answer and
 * schedule must be the same. Keys include NUL, 0xff and pattern bytes;
 * values include counters at the int64 edges. Ack tokens are random per
 * backend, so each side uses the token its own delivery gave.
 *
 * The server: $BITT_TEST_REDIS_URL (scripts/test starts one). The run is
 * the same every time; $BITT_TEST_SEED picks another one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bitt.h"

enum { MEM = 0, RED = 1, N = 2 };

static const char *g_url;
static uint64_t g_rng = 0x2545f4914f6cdd1dULL;
static int g_step;

static uint32_t rnd(uint32_t n)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

static int need_server(void **state)
{
    (void)state;
    g_url = getenv("BITT_TEST_REDIS_URL");
    if (!g_url || !*g_url) {
        fprintf(stderr, "test_redis_diff: BITT_TEST_REDIS_URL is not set. Start a server with "
                        "scripts/redis-test-server start DIR and export the URL it prints "
                        "(scripts/test does both).\n");
        return -1;
    }
    const char *seed = getenv("BITT_TEST_SEED"); /* to replay or vary a run */
    if (seed && *seed)
        g_rng = strtoull(seed, NULL, 0) | 1;
    return 0;
}

static void open_pair(bitt_store **s, const char *name, const char *options)
{
    char url[512];
    snprintf(url, sizeof url, "memory:%s%s", options[0] ? "?" : "", options);
    assert_int_equal(bitt_store_open(url, &s[MEM]), BITT_OK);
    snprintf(url, sizeof url, "%s?prefix=trd_%ld_%s%s%s", g_url, (long)getpid(), name,
             options[0] ? "&" : "", options);
    if (bitt_store_open(url, &s[RED]))
        fail_msg("open %s: %s", url, bitt_error_last());
    for (int i = 0; i < N; i++)
        assert_int_equal(bitt_clock_set_manual(s[i], 1000000), BITT_OK);
}

/* How often each operation ran and succeeded, printed at the end so a
 * reader sees what the random run exercised. */
static struct {
    const char *what;
    int runs, ok;
} g_seen[64];

static void same_rc(const int *rc, const char *what)
{
    if (rc[MEM] != rc[RED])
        fail_msg("step %d %s: redis gave %d, memory %d", g_step, what, rc[RED], rc[MEM]);
    for (size_t i = 0; i < sizeof g_seen / sizeof *g_seen; i++) {
        if (!g_seen[i].what || !strcmp(g_seen[i].what, what)) {
            g_seen[i].what = what;
            g_seen[i].runs++;
            g_seen[i].ok += rc[MEM] == BITT_OK;
            break;
        }
    }
}

static int report(void **state)
{
    (void)state;
    fprintf(stderr, "test_redis_diff: operations run (succeeded):");
    for (size_t i = 0; i < sizeof g_seen / sizeof *g_seen && g_seen[i].what; i++)
        fprintf(stderr, "%s %s %d (%d)", i ? "," : "", g_seen[i].what, g_seen[i].runs,
                g_seen[i].ok);
    fprintf(stderr, "\n");
    return 0;
}

static void same_i64(int64_t a, int64_t b, const char *what, const char *field)
{
    if (a != b)
        fail_msg("step %d %s: %s: memory %lld, redis %lld", g_step, what, field, (long long)a,
                 (long long)b);
}

static void same_bytes(const void *a, size_t al, const void *b, size_t bl, const char *what,
                       const char *field)
{
    if (al != bl || (al && memcmp(a, b, al)))
        fail_msg("step %d %s: %s differs", g_step, what, field);
}

static void same_str(const char *a, const char *b, const char *what, const char *field)
{
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b)))
        fail_msg("step %d %s: %s: memory \"%s\", redis \"%s\"", g_step, what, field,
                 a ? a : "(none)", b ? b : "(none)");
}

/* ---- KV -------------------------------------------------------------------------- */

typedef struct bkey {
    const char *bytes;
    size_t len;
} bkey;

static const bkey g_keys[] = {
    {"", 0},  {"a", 1}, {"a\0", 2},  {"a\0b", 3},     {"ab", 2}, {"a_", 2},    {"{t}", 3},
    {"b", 1}, {"%", 1}, {"\xff", 1}, {"\xff\xfe", 2}, {"ba", 2}, {"a\xff", 2}, {"*?[", 3},
};
enum { DKEYS = sizeof g_keys / sizeof *g_keys };

static const bkey *rkey(void)
{
    return &g_keys[rnd(DKEYS)];
}

static void same_entry(const bitt_entry *a, const bitt_entry *b, const char *what)
{
    if (!a || !b) {
        if (a != b)
            fail_msg("step %d %s: one side has an entry, the other not", g_step, what);
        return;
    }
    size_t al, bl;
    const uint8_t *ak = bitt_entry_key(a, &al), *bk = bitt_entry_key(b, &bl);
    same_bytes(ak, al, bk, bl, what, "key");
    ak = bitt_entry_value(a, &al);
    bk = bitt_entry_value(b, &bl);
    same_bytes(ak, al, bk, bl, what, "value");
    same_i64(bitt_entry_kind(a), bitt_entry_kind(b), what, "kind");
    same_i64((int64_t)bitt_entry_version(a), (int64_t)bitt_entry_version(b), what, "version");
    same_i64(bitt_entry_expires_at(a), bitt_entry_expires_at(b), what, "expires_at");
}

static void same_entries(bitt_entries *a, bitt_entries *b, const char *what)
{
    if (!a || !b) {
        if (a != b)
            fail_msg("step %d %s: one list is missing", g_step, what);
        return;
    }
    same_i64((int64_t)bitt_entries_count(a), (int64_t)bitt_entries_count(b), what, "count");
    for (size_t i = 0; i < bitt_entries_count(a); i++)
        same_entry(bitt_entries_at(a, i), bitt_entries_at(b, i), what);
    same_str(bitt_entries_cursor(a), bitt_entries_cursor(b), what, "cursor");
}

static void kv_step(bitt_store **s, char **cursor)
{
    int rc[N];
    uint64_t ver[N] = {0};
    int64_t val[N] = {0};
    bitt_entry *e[N] = {0};
    bitt_entries *es[N] = {0};
    const char *what;
    const bkey *k = rkey();
    static const char *const values[] = {
        "",          "x",   "0", "-7", "12", "9223372036854775807", "-9223372036854775808",
        "{\"a\":1}", "v\0v"};
    const char *v = values[rnd(9)];
    size_t vlen = v[0] == 'v' ? 3 : strlen(v);
    int kind = rnd(3) == 0 ? BITT_KIND_COUNTER : rnd(4) == 0 ? BITT_KIND_JSON : BITT_KIND_BYTES;
    int64_t ttl = rnd(3) == 0 ? (int64_t)rnd(50) + 1 : 0;
    int64_t delta = rnd(10) == 0 ? INT64_MAX : rnd(10) == 0 ? INT64_MIN : (int64_t)rnd(21) - 10;
    uint32_t op = rnd(100);
    if (op < 15) {
        what = "set";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_kv_set(s[i], k->bytes, k->len, v, vlen, kind, ttl, &ver[i]);
    } else if (op < 22) {
        what = "add";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_kv_add(s[i], k->bytes, k->len, v, vlen, kind, ttl, &ver[i]);
    } else if (op < 28) {
        what = "delete";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_kv_delete(s[i], k->bytes, k->len);
    } else if (op < 33) {
        what = "take";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_kv_take(s[i], k->bytes, k->len, &e[i]);
    } else if (op < 45) {
        what = "increment";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_kv_increment(s[i], k->bytes, k->len, delta, ttl, &val[i], &ver[i]);
    } else if (op < 58) {
        what = "get";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_kv_get(s[i], k->bytes, k->len, &e[i]);
    } else if (op < 63) {
        what = "get_many";
        const void *keys[4];
        size_t lens[4], n = rnd(5);
        for (size_t j = 0; j < n; j++) {
            const bkey *kk = rkey();
            keys[j] = kk->bytes;
            lens[j] = kk->len;
        }
        for (int i = 0; i < N; i++)
            rc[i] = bitt_kv_get_many(s[i], keys, lens, n, &es[i]);
    } else if (op < 76) {
        what = "list";
        bitt_list_options o = BITT_LIST_OPTIONS_INIT;
        const bkey *a = rkey(), *b = rkey();
        switch (rnd(4)) {
        case 0:
            o.prefix = a->bytes;
            o.prefix_len = a->len;
            break;
        case 1:
            o.start = a->bytes;
            o.start_len = a->len;
            break;
        case 2:
            o.start = a->bytes;
            o.start_len = a->len;
            o.end = b->bytes;
            o.end_len = b->len;
            break;
        default: break;
        }
        o.limit = rnd(5);
        o.reverse = (int)rnd(2);
        if (*cursor && rnd(3) == 0)
            o.cursor = *cursor;
        for (int i = 0; i < N; i++)
            rc[i] = bitt_kv_list(s[i], &o, &es[i]);
        if (rc[MEM] == BITT_OK && bitt_entries_cursor(es[MEM])) {
            free(*cursor);
            *cursor = strdup(bitt_entries_cursor(es[MEM]));
        }
    } else if (op < 90) {
        what = "txn";
        bitt_txn *t[N];
        for (int i = 0; i < N; i++)
            assert_int_equal(bitt_txn_begin(s[i], &t[i]), BITT_OK);
        uint32_t nops = rnd(5);
        for (uint32_t j = 0; j < nops; j++) {
            const bkey *kk = rkey();
            uint32_t type = rnd(4);
            uint64_t cv = 0;
            if (type == 0 && rnd(2)) {
                bitt_entry *cur;
                if (bitt_kv_get(s[MEM], kk->bytes, kk->len, &cur) == BITT_OK) {
                    cv = bitt_entry_version(cur) + (rnd(4) == 0);
                    bitt_entry_free(cur);
                }
            }
            int arc[N];
            for (int i = 0; i < N; i++) {
                switch (type) {
                case 0: arc[i] = bitt_txn_check(t[i], kk->bytes, kk->len, cv); break;
                case 1: arc[i] = bitt_txn_set(t[i], kk->bytes, kk->len, v, vlen, kind, ttl); break;
                case 2: arc[i] = bitt_txn_delete(t[i], kk->bytes, kk->len); break;
                default: arc[i] = bitt_txn_sum(t[i], kk->bytes, kk->len, delta); break;
                }
            }
            same_rc(arc, "txn action");
        }
        for (int i = 0; i < N; i++) {
            rc[i] = bitt_txn_commit(t[i], &ver[i]);
            bitt_txn_free(t[i]);
        }
    } else {
        what = "purge";
        for (int i = 0; i < N; i++) {
            uint64_t removed = 0;
            rc[i] = bitt_kv_purge_expired(s[i], &removed);
            val[i] = (int64_t)removed;
        }
    }
    same_rc(rc, what);
    if (rc[MEM] >= 0) {
        same_i64((int64_t)ver[MEM], (int64_t)ver[RED], what, "version");
        same_i64(val[MEM], val[RED], what, "value");
        same_entry(e[MEM], e[RED], what);
        same_entries(es[MEM], es[RED], what);
    }
    for (int i = 0; i < N; i++) {
        bitt_entry_free(e[i]);
        bitt_entries_free(es[i]);
    }
}

static void test_kv(void **state)
{
    (void)state;
    bitt_store *s[N];
    open_pair(s, "kv", "");
    char *cursor = NULL;
    for (g_step = 0; g_step < 4000; g_step++) {
        kv_step(s, &cursor);
        if (rnd(8) == 0) {
            int64_t ms = rnd(40);
            for (int i = 0; i < N; i++)
                assert_int_equal(bitt_clock_advance(s[i], ms), BITT_OK);
        }
    }
    free(cursor);
    for (int i = 0; i < N; i++)
        bitt_store_close(s[i]);
}

/* ---- queue, leases, outbox, budgets, schedules, pubsub ------------------------------ */

static void same_messages(bitt_messages *a, bitt_messages *b, const char *what)
{
    same_i64((int64_t)bitt_messages_count(a), (int64_t)bitt_messages_count(b), what, "count");
    for (size_t i = 0; i < bitt_messages_count(a); i++) {
        const bitt_message *x = bitt_messages_at(a, i), *y = bitt_messages_at(b, i);
        same_i64((int64_t)bitt_message_id(x), (int64_t)bitt_message_id(y), what, "id");
        same_str(bitt_message_topic(x), bitt_message_topic(y), what, "topic");
        size_t xl, yl;
        const uint8_t *xp = bitt_message_payload(x, &xl), *yp = bitt_message_payload(y, &yl);
        same_bytes(xp, xl, yp, yl, what, "payload");
        same_i64(bitt_message_kind(x), bitt_message_kind(y), what, "kind");
        same_i64(bitt_message_attempts(x), bitt_message_attempts(y), what, "attempts");
        same_i64(bitt_message_max_attempts(x), bitt_message_max_attempts(y), what, "max_attempts");
        same_str(bitt_message_last_error(x), bitt_message_last_error(y), what, "last_error");
        same_i64(bitt_message_created_at(x), bitt_message_created_at(y), what, "created_at");
        same_i64(bitt_message_due_at(x), bitt_message_due_at(y), what, "due_at");
        same_i64(bitt_message_failed_at(x), bitt_message_failed_at(y), what, "failed_at");
        same_i64(bitt_message_park_reason(x), bitt_message_park_reason(y), what, "park_reason");
        same_i64(bitt_message_token(x) != NULL, bitt_message_token(y) != NULL, what, "token");
    }
}

#define MAX_IDS 4096

/* The tokens of the latest delivery of each message, per side, and one
 * older one to try as a stale token. */
static char g_token[N][MAX_IDS][33];
static char g_stale[N][MAX_IDS][33];

static const char *const g_topics[] = {"t1", "t2"};
static const char *const g_dedups[] = {NULL, "d1", "d2"};
static const char *const g_errors[] = {NULL, "boom", ""};

/* The ids of the latest deliveries, so acks, nacks and extends mostly hit
 * a message that is leased (or was, a moment ago). */
static uint64_t g_recent[8];
static uint64_t g_max_id = 1;

static uint64_t pick_id(void)
{
    uint64_t id = g_recent[rnd(8)];
    if (!id || rnd(5) == 0)
        id = 1 + rnd((uint32_t)g_max_id);
    return id;
}

static void queue_step(bitt_store **s)
{
    int rc[N];
    const char *topic = g_topics[rnd(2)];
    uint32_t op = rnd(100);
    const char *what;
    if (op < 25) {
        what = "enqueue";
        bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
        o.delay_ms = rnd(3) == 0 ? rnd(100) : 0;
        o.max_attempts = rnd(4);
        const char *d = g_dedups[rnd(3)];
        o.dedup_key = d;
        o.dedup_key_len = d ? 2 : 0;
        uint64_t id[N] = {0};
        char payload[16];
        int len = snprintf(payload, sizeof payload, "p%d", g_step);
        for (int i = 0; i < N; i++)
            rc[i] =
                bitt_queue_enqueue(s[i], topic, payload, (size_t)len, BITT_KIND_BYTES, &o, &id[i]);
        same_rc(rc, what);
        same_i64((int64_t)id[MEM], (int64_t)id[RED], what, "id");
        if (id[MEM] > g_max_id)
            g_max_id = id[MEM];
    } else if (op < 45) {
        what = "dequeue";
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        o.limit = 1 + rnd(3);
        o.lease_ms = rnd(2) ? 1 + rnd(80) : 5000 + rnd(80);
        bitt_messages *l[N] = {0};
        for (int i = 0; i < N; i++)
            rc[i] = bitt_queue_dequeue(s[i], topic, &o, &l[i]);
        same_rc(rc, what);
        if (!rc[MEM]) {
            same_messages(l[MEM], l[RED], what);
            for (int i = 0; i < N; i++) {
                for (size_t j = 0; j < bitt_messages_count(l[i]); j++) {
                    const bitt_message *m = bitt_messages_at(l[i], j);
                    uint64_t id = bitt_message_id(m);
                    if (i == MEM)
                        g_recent[rnd(8)] = id;
                    if (id < MAX_IDS) {
                        memcpy(g_stale[i][id], g_token[i][id], 33);
                        snprintf(g_token[i][id], 33, "%s", bitt_message_token(m));
                    }
                }
            }
        }
        for (int i = 0; i < N; i++)
            bitt_messages_free(l[i]);
    } else if (op < 70) {
        uint64_t id = pick_id();
        int stale = rnd(5) == 0;
        const char *tok[N];
        for (int i = 0; i < N; i++) {
            tok[i] = stale ? g_stale[i][id] : g_token[i][id];
            if (!tok[i][0])
                tok[i] = "0123456789abcdef0123456789abcdef";
        }
        uint32_t kind = rnd(3);
        if (kind == 0) {
            what = "ack";
            for (int i = 0; i < N; i++)
                rc[i] = bitt_queue_ack(s[i], topic, id, tok[i]);
        } else if (kind == 1) {
            what = "nack";
            const char *err = g_errors[rnd(3)];
            int64_t delay = rnd(2) ? -1 : (int64_t)rnd(50);
            for (int i = 0; i < N; i++)
                rc[i] = bitt_queue_nack(s[i], topic, id, tok[i], err, delay);
        } else {
            what = "extend";
            int64_t lease = rnd(4) == 0 ? 0 : rnd(80);
            for (int i = 0; i < N; i++)
                rc[i] = bitt_queue_extend(s[i], topic, id, tok[i], lease);
        }
        same_rc(rc, what);
    } else if (op < 80) {
        what = "stats";
        bitt_queue_stats st[N];
        for (int i = 0; i < N; i++) {
            st[i] = (bitt_queue_stats){.version = BITT_QUEUE_STATS_VERSION};
            rc[i] = bitt_queue_stats_get(s[i], topic, &st[i]);
        }
        same_rc(rc, what);
        same_i64((int64_t)st[MEM].pending, (int64_t)st[RED].pending, what, "pending");
        same_i64((int64_t)st[MEM].delayed, (int64_t)st[RED].delayed, what, "delayed");
        same_i64((int64_t)st[MEM].processing, (int64_t)st[RED].processing, what, "processing");
        same_i64((int64_t)st[MEM].dead, (int64_t)st[RED].dead, what, "dead");
        same_i64(st[MEM].oldest_pending_at, st[RED].oldest_pending_at, what, "oldest");
    } else if (op < 88) {
        what = "dead list";
        bitt_messages *l[N] = {0};
        uint64_t after = rnd(3) ? 0 : pick_id();
        uint32_t limit = rnd(4);
        for (int i = 0; i < N; i++)
            rc[i] = bitt_queue_dead_list(s[i], topic, after, limit, &l[i]);
        same_rc(rc, what);
        if (!rc[MEM])
            same_messages(l[MEM], l[RED], what);
        for (int i = 0; i < N; i++)
            bitt_messages_free(l[i]);
    } else {
        what = op < 95 ? "dead retry" : "dead delete";
        uint64_t id = rnd(3) ? pick_id() : 0, count[N] = {0};
        for (int i = 0; i < N; i++)
            rc[i] = op < 95 ? bitt_queue_dead_retry(s[i], topic, id, &count[i])
                            : bitt_queue_dead_delete(s[i], topic, id, &count[i]);
        same_rc(rc, what);
        same_i64((int64_t)count[MEM], (int64_t)count[RED], what, "count");
    }
}

static void lease_step(bitt_store **s, uint64_t *epochs)
{
    int rc[N];
    const char *owner = rnd(2) ? "o1" : "o2";
    uint64_t epoch = epochs[0] + (rnd(4) == 0 ? (uint64_t)rnd(3) - 1 : 0);
    uint32_t op = rnd(5);
    int64_t x[N] = {0};
    uint64_t e[N] = {0};
    int64_t ttl = 1 + rnd(60);
    if (op == 0) {
        for (int i = 0; i < N; i++)
            rc[i] = bitt_lease_acquire(s[i], "L", owner, ttl, &e[i], &x[i]);
        same_rc(rc, "lease acquire");
        if (!rc[MEM])
            epochs[0] = e[MEM];
    } else if (op == 1) {
        for (int i = 0; i < N; i++)
            rc[i] = bitt_lease_renew(s[i], "L", owner, epoch, ttl, &x[i]);
        same_rc(rc, "lease renew");
    } else if (op == 2) {
        for (int i = 0; i < N; i++)
            rc[i] = bitt_lease_release(s[i], "L", owner, epoch);
        same_rc(rc, "lease release");
    } else if (op == 3) {
        bitt_buf o[N] = {BITT_BUF_INIT, BITT_BUF_INIT};
        for (int i = 0; i < N; i++)
            rc[i] = bitt_lease_get(s[i], "L", &o[i], &e[i], &x[i]);
        same_rc(rc, "lease get");
        same_bytes(o[MEM].ptr, o[MEM].len, o[RED].ptr, o[RED].len, "lease get", "owner");
        for (int i = 0; i < N; i++)
            bitt_buf_dispose(&o[i]);
    } else {
        /* A commit fenced by the lease, with an enqueue and an outbox append. */
        bitt_txn *t[N];
        uint64_t ver[N] = {0};
        for (int i = 0; i < N; i++) {
            assert_int_equal(bitt_txn_begin(s[i], &t[i]), BITT_OK);
            assert_int_equal(bitt_txn_fence(t[i], "L", owner, epoch), BITT_OK);
            assert_int_equal(bitt_txn_sum(t[i], "fenced", 6, 1), BITT_OK);
            assert_int_equal(bitt_txn_enqueue(t[i], "t1", "f", 1, BITT_KIND_BYTES, NULL), BITT_OK);
            assert_int_equal(bitt_txn_outbox_append(t[i], "s1", "ev", 2, BITT_KIND_BYTES), BITT_OK);
            rc[i] = bitt_txn_commit(t[i], &ver[i]);
            bitt_txn_free(t[i]);
        }
        same_rc(rc, "fenced commit");
        same_i64((int64_t)ver[MEM], (int64_t)ver[RED], "fenced commit", "version");
    }
    if (rc[MEM] == BITT_OK) {
        same_i64((int64_t)e[MEM], (int64_t)e[RED], "lease", "epoch");
        same_i64(x[MEM], x[RED], "lease", "expires_at");
    }
}

static void outbox_step(bitt_store **s)
{
    int rc[N];
    const char *stream = rnd(2) ? "s1" : "s2";
    uint32_t op = rnd(9);
    uint64_t seqs[3] = {1 + rnd(20), 1 + rnd(20), 1 + rnd(20)};
    size_t count = rnd(4);
    uint64_t n[N] = {0}, m[N] = {0};
    bitt_messages *l[N] = {0};
    const char *err = g_errors[rnd(3)];
    const char *what = "outbox";
    uint32_t limit = rnd(4), reason = rnd(3);
    int64_t next = rnd(2) ? 0 : 1000 + rnd(9);
    switch (op) {
    case 0:
        what = "outbox append";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_outbox_append(s[i], stream, "e", 1, BITT_KIND_BYTES, &n[i]);
        break;
    case 1:
        what = "outbox pending";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_outbox_pending(s[i], stream, limit, &l[i]);
        break;
    case 2:
        what = "outbox ack";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_outbox_ack(s[i], stream, seqs, count, &n[i]);
        break;
    case 3:
        what = "outbox fail";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_outbox_fail(s[i], stream, seqs[0], err, next);
        break;
    case 4:
        what = "outbox park";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_outbox_park(s[i], stream, seqs[0], 1 + (int)(reason % 2), err);
        break;
    case 5:
        what = "outbox parked";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_outbox_parked(s[i], stream, (int)reason, limit, &l[i]);
        break;
    case 6:
    case 7:
        what = op == 6 ? "outbox retry" : "outbox discard";
        for (int i = 0; i < N; i++)
            rc[i] = op == 6 ? bitt_outbox_retry(s[i], stream, count ? seqs : NULL, count, &n[i])
                            : bitt_outbox_discard(s[i], stream, count ? seqs : NULL, count, &n[i]);
        break;
    default:
        what = "outbox counts";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_outbox_counts(s[i], stream, &n[i], &m[i]);
        break;
    }
    same_rc(rc, what);
    same_i64((int64_t)n[MEM], (int64_t)n[RED], what, "n");
    same_i64((int64_t)m[MEM], (int64_t)m[RED], what, "m");
    if (l[MEM] && l[RED])
        same_messages(l[MEM], l[RED], what);
    for (int i = 0; i < N; i++)
        bitt_messages_free(l[i]);
}

static void same_schedule(const bitt_schedule *a, const bitt_schedule *b, const char *what)
{
    if (!a || !b) {
        if (a != b)
            fail_msg("step %d %s: one side has a schedule, the other not", g_step, what);
        return;
    }
    same_str(bitt_schedule_key(a), bitt_schedule_key(b), what, "key");
    same_i64(bitt_schedule_interval(a), bitt_schedule_interval(b), what, "interval");
    size_t al, bl;
    const uint8_t *ap = bitt_schedule_payload(a, &al), *bp = bitt_schedule_payload(b, &bl);
    same_bytes(ap, al, bp, bl, what, "payload");
    same_i64(bitt_schedule_kind(a), bitt_schedule_kind(b), what, "kind");
    same_i64(bitt_schedule_next_run_at(a), bitt_schedule_next_run_at(b), what, "next_run_at");
    same_i64(bitt_schedule_occurrence(a), bitt_schedule_occurrence(b), what, "occurrence");
}

static void other_step(bitt_store **s, bitt_sub **subs)
{
    int rc[N];
    static const char *const keys[] = {"a", "a/b", "b", "ab"};
    const char *key = keys[rnd(4)];
    uint32_t op = rnd(9);
    if (op == 0) {
        int64_t wait[N] = {0};
        int64_t cap = 1 + rnd(5), refill = 1 + rnd(3), period = rnd(2) ? 1000 : 1 + rnd(2000);
        int64_t n = 1 + rnd((uint32_t)cap);
        for (int i = 0; i < N; i++)
            rc[i] = bitt_budget_take(s[i], key, cap, refill, period, n, &wait[i]);
        same_rc(rc, "budget take");
        same_i64(wait[MEM], wait[RED], "budget take", "wait");
    } else if (op == 1) {
        int64_t interval = 1 + rnd(3) * 10, first = rnd(2) ? 0 : 1000000 + rnd(100);
        for (int i = 0; i < N; i++)
            rc[i] = bitt_schedule_upsert(s[i], key, interval, "p", 1, BITT_KIND_BYTES, first);
        same_rc(rc, "schedule upsert");
    } else if (op == 2 || op == 3) {
        bitt_schedule *x[N] = {0};
        const char *prefix = rnd(2) ? "" : "a";
        for (int i = 0; i < N; i++)
            rc[i] = op == 2 ? bitt_schedule_claim(s[i], prefix, &x[i])
                            : bitt_schedule_get(s[i], key, &x[i]);
        same_rc(rc, "schedule claim/get");
        same_schedule(x[MEM], x[RED], "schedule claim/get");
        for (int i = 0; i < N; i++)
            bitt_schedule_free(x[i]);
    } else if (op == 4) {
        bitt_schedule **l[N] = {0};
        size_t c[N] = {0};
        for (int i = 0; i < N; i++)
            rc[i] = bitt_schedule_list(s[i], &l[i], &c[i]);
        same_rc(rc, "schedule list");
        same_i64((int64_t)c[MEM], (int64_t)c[RED], "schedule list", "count");
        for (size_t j = 0; j < c[MEM]; j++)
            same_schedule(l[MEM][j], l[RED][j], "schedule list");
        for (int i = 0; i < N; i++)
            bitt_schedule_list_free(l[i], c[i]);
    } else if (op == 5) {
        for (int i = 0; i < N; i++)
            rc[i] = bitt_schedule_delete(s[i], key);
        same_rc(rc, "schedule delete");
    } else if (op == 6) {
        const char *channel = rnd(2) ? "c1" : "c2";
        for (int i = 0; i < N; i++)
            rc[i] = bitt_pubsub_publish(s[i], channel, key, strlen(key));
        same_rc(rc, "publish");
    } else {
        bitt_message *m[N] = {0};
        for (int i = 0; i < N; i++)
            rc[i] = bitt_pubsub_next(subs[i], 0, &m[i]);
        same_rc(rc, "subscription next");
        if (!rc[MEM]) {
            size_t al, bl;
            const uint8_t *a = bitt_message_payload(m[MEM], &al);
            const uint8_t *b = bitt_message_payload(m[RED], &bl);
            same_bytes(a, al, b, bl, "subscription next", "payload");
            same_i64((int64_t)bitt_message_id(m[MEM]), (int64_t)bitt_message_id(m[RED]),
                     "subscription next", "id");
            same_i64(bitt_message_created_at(m[MEM]), bitt_message_created_at(m[RED]),
                     "subscription next", "created_at");
        }
        for (int i = 0; i < N; i++)
            bitt_message_free(m[i]);
    }
}

static void test_modules(void **state)
{
    (void)state;
    bitt_store *s[N];
    open_pair(s, "modules", "queue_backoff=5,10,20&pubsub_retention=200");
    bitt_sub *subs[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(bitt_pubsub_subscribe(s[i], "c1", &subs[i]), BITT_OK);
    memset(g_token, 0, sizeof g_token);
    memset(g_stale, 0, sizeof g_stale);
    uint64_t epochs[1] = {0};
    for (g_step = 0; g_step < 5000; g_step++) {
        uint32_t area = rnd(10);
        if (area < 5)
            queue_step(s);
        else if (area < 7)
            lease_step(s, epochs);
        else if (area < 8)
            outbox_step(s);
        else
            other_step(s, subs);
        if (rnd(6) == 0) {
            int64_t ms = rnd(4) == 0 ? rnd(300) : rnd(20);
            for (int i = 0; i < N; i++)
                assert_int_equal(bitt_clock_advance(s[i], ms), BITT_OK);
        }
    }
    for (int i = 0; i < N; i++) {
        bitt_pubsub_close(subs[i]);
        bitt_store_close(s[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv),
        cmocka_unit_test(test_modules),
    };
    return cmocka_run_group_tests(tests, need_server, report);
}
