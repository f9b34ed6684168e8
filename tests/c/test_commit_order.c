/*
 * tests/c/test_commit_order.c: versionstamps in commit order, on every
 * backend (issue 20).
 *
 * The rule: once a commit with versionstamp V is visible to anyone, no
 * commit with a stamp below V becomes visible later. "Changes since V" and
 * a change feed stand on it: a reader that has seen V must never find a new
 * commit below it afterwards.
 *
 * WRITERS threads commit on distinct new keys: every BIG_EVERY-th commit is
 * big (BIG_SETS sets in one txn), the others are lone sets (bitt_kv_set).
 * One reader lists the prefix over and over, following cursors, ascending
 * and descending in turn (so that for any two writers' keys one direction
 * reads the later commit's key first), until every writer is done, then
 * once more.
 *
 * The check holds for paged listings. A page is one snapshot (bitt.h) and
 * the reader is one thread, so every version seen in an earlier page was
 * visible when a page started; so was every version a writer's commit had
 * returned by then (the writers publish the highest). Each page keeps the
 * highest of those when it started (its threshold) and the span of keys it
 * covers. A key first seen in listing n was absent from the page of listing
 * n-1 that covered its place; if its version is below that page's
 * threshold, its commit became visible after a higher one was: an
 * inversion. (The highest version of the whole previous listing would not
 * do: the key's page may have been read before that version was seen, and
 * the key may have become visible before it, which the rule allows.)
 *
 * No timing assertions: the writers stop after a fixed number of commits;
 * the test requires 0 inversions, and every key written listed at the end
 * with the version its write returned. It runs on memory: (the threads
 * share the handle), a SQLite file (a handle per thread), PostgreSQL and
 * Redis (a handle per thread; and one handle shared through its pool, where
 * on PostgreSQL the lone sets of threads that meet commit in one
 * transaction). BITT_TEST_SCALE shrinks the commit count (valgrind).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "bitt.h"
#include "contract.h"
#include "scale.h"

#define WRITERS 4
#define COMMITS ts_scaled(200, 12) /* per writer; BITT_TEST_SCALE */
#define BIG_EVERY 4                /* every 4th commit of a writer is big */
#define BIG_SETS 50
#define PAGE 250
#define SHOWN 5 /* inversions printed */

/* "co/W/NNNNNN": W the writer, N its key's serial; one length, so byte
 * order is the order of (W, N). */
#define PREFIX "co/"
#define KEY_LEN 11

static int keys_per_writer(int commits)
{
    int big = commits / BIG_EVERY;
    return (commits - big) + big * BIG_SETS;
}

static size_t make_key(char *buf, int w, int serial)
{
    /* Bounded so the compiler sees every key is KEY_LEN bytes. */
    snprintf(buf, KEY_LEN + 1, PREFIX "%u/%06u", (unsigned)w % 10u, (unsigned)serial % 1000000u);
    return KEY_LEN;
}

/* The writer and serial of a listed key, or -1 for a key of another shape. */
static int parse_key(const uint8_t *key, size_t len, int *w, int *serial)
{
    char text[KEY_LEN + 1];
    if (len != KEY_LEN || memcmp(key, PREFIX, 3) != 0)
        return -1;
    memcpy(text, key, KEY_LEN);
    text[KEY_LEN] = '\0';
    if (sscanf(text, PREFIX "%d/%d", w, serial) != 2 || *w < 0 || *w >= WRITERS || *serial < 0)
        return -1;
    return 0;
}

/* ---- writers ------------------------------------------------------------------------- */

/* What the threads of a run share. */
typedef struct run_state {
    pthread_barrier_t barrier;
    atomic_int running;     /* writers not done yet */
    _Atomic uint64_t acked; /* the highest version a commit returned */
} run_state;

typedef struct writer {
    bitt_store *store;
    run_state *st;
    int id;
    int commits;
    uint64_t *versions; /* by serial: what the write returned */
    int keys;           /* serials written */
    char error[512];
} writer;

static int big_commit(writer *w, uint64_t *version)
{
    bitt_txn *t = NULL;
    int rc = bitt_txn_begin(w->store, &t);
    char key[KEY_LEN + 1];
    for (int i = 0; !rc && i < BIG_SETS; i++) {
        size_t n = make_key(key, w->id, w->keys + i);
        rc = bitt_txn_set(t, key, n, "big", 3, BITT_KIND_BYTES, BITT_TTL_NONE);
    }
    if (!rc)
        rc = bitt_txn_commit(t, version);
    bitt_txn_free(t);
    return rc;
}

static void *writer_main(void *arg)
{
    writer *w = arg;
    pthread_barrier_wait(&w->st->barrier);
    for (int c = 0; c < w->commits; c++) {
        uint64_t version = 0;
        int big = c % BIG_EVERY == BIG_EVERY - 1;
        int rc;
        if (big) {
            rc = big_commit(w, &version);
        } else {
            char key[KEY_LEN + 1];
            size_t n = make_key(key, w->id, w->keys);
            rc = bitt_kv_set(w->store, key, n, "one", 3, BITT_KIND_BYTES, BITT_TTL_NONE, &version);
        }
        if (rc) {
            snprintf(w->error, sizeof w->error, "writer %d, commit %d: status %d: %s", w->id, c, rc,
                     bitt_error_last());
            break;
        }
        for (int i = 0; i < (big ? BIG_SETS : 1); i++)
            w->versions[w->keys++] = version;
        /* Returned, so visible: from now on, a commit below it that is not
         * visible yet is an inversion once it shows. */
        uint64_t seen = atomic_load(&w->st->acked);
        while (seen < version && !atomic_compare_exchange_weak(&w->st->acked, &seen, version))
            ;
    }
    atomic_fetch_sub(&w->st->running, 1);
    return NULL;
}

/* ---- the reader ---------------------------------------------------------------------- */

/* The keys a page covers: between lo and hi (exclusive; a new key never
 * equals a listed one), either end open when absent. */
typedef struct span {
    char lo[KEY_LEN], hi[KEY_LEN];
    int has_lo, has_hi;
    uint64_t threshold; /* the highest version visible (listed or returned)
                         * before the page started */
} span;

typedef struct span_list {
    span *items;
    size_t count, cap;
} span_list;

typedef struct reader {
    bitt_store *store;
    run_state *st;
    uint8_t *seen[WRITERS];      /* by serial: listed before */
    uint64_t *versions[WRITERS]; /* by serial: the version listed */
    int keys_max;
    span_list prev, cur;
    int have_prev;
    uint64_t max_seen;
    long listings, pages, entries, first_seen, checked, inversions;
    uint64_t *bad; /* the version of each inversion (a commit has several keys) */
    char shown[SHOWN][160];
    char error[512];
} reader;

static int covers(const span *s, const uint8_t *key)
{
    return (!s->has_lo || memcmp(s->lo, key, KEY_LEN) < 0) &&
           (!s->has_hi || memcmp(key, s->hi, KEY_LEN) < 0);
}

/* The threshold of the previous listing's page that covered key. */
static int prev_threshold(const reader *r, const uint8_t *key, uint64_t *out)
{
    for (size_t i = 0; i < r->prev.count; i++)
        if (covers(&r->prev.items[i], key)) {
            *out = r->prev.items[i].threshold;
            return 1;
        }
    return 0;
}

static int push_span(span_list *l, const span *s)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        span *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return -1;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->count++] = *s;
    return 0;
}

/* One entry of a page: a key seen for the first time must not be below
 * the threshold of the page that last missed it. */
static int take_entry(reader *r, const bitt_entry *e, uint64_t *page_max)
{
    size_t len;
    const uint8_t *key = bitt_entry_key(e, &len);
    uint64_t v = bitt_entry_version(e);
    int w, serial;
    if (parse_key(key, len, &w, &serial) || serial >= r->keys_max) {
        snprintf(r->error, sizeof r->error, "listed a key nobody wrote: %.*s", (int)len,
                 (const char *)key);
        return -1;
    }
    r->entries++;
    if (v > *page_max)
        *page_max = v;
    if (r->seen[w][serial]) {
        if (r->versions[w][serial] != v) {
            snprintf(r->error, sizeof r->error, "%.*s changed version: %" PRIu64 ", then %" PRIu64,
                     (int)len, (const char *)key, r->versions[w][serial], v);
            return -1;
        }
        return 0;
    }
    r->seen[w][serial] = 1;
    r->versions[w][serial] = v;
    r->first_seen++;
    uint64_t threshold;
    if (!r->have_prev || !prev_threshold(r, key, &threshold))
        return 0;
    r->checked++;
    if (v < threshold) {
        if (r->inversions < SHOWN)
            snprintf(r->shown[r->inversions], sizeof r->shown[0],
                     "%.*s appeared at version %" PRIu64 " after version %" PRIu64
                     " was visible (listing %ld)",
                     (int)len, (const char *)key, v, threshold, r->listings + 1);
        uint64_t *bad = realloc(r->bad, (size_t)(r->inversions + 1) * sizeof *bad);
        if (!bad) {
            snprintf(r->error, sizeof r->error, "out of memory");
            return -1;
        }
        r->bad = bad;
        r->bad[r->inversions++] = v;
    }
    return 0;
}

/* One complete listing of the prefix, page by page. */
static int list_all(reader *r, int reverse)
{
    char cursor[1024] = "";
    int more = 1;
    r->cur.count = 0;
    span s = {.has_lo = 0, .has_hi = 0};
    while (more) {
        bitt_list_options o = BITT_LIST_OPTIONS_INIT;
        o.prefix = PREFIX;
        o.prefix_len = 3;
        o.limit = PAGE;
        o.reverse = reverse;
        o.cursor = *cursor ? cursor : NULL;
        uint64_t acked = atomic_load(&r->st->acked);
        s.threshold = acked > r->max_seen ? acked : r->max_seen;
        bitt_entries *es = NULL;
        int rc = bitt_kv_list(r->store, &o, &es);
        if (rc) {
            snprintf(r->error, sizeof r->error, "list: status %d: %s", rc, bitt_error_last());
            return -1;
        }
        uint64_t page_max = 0;
        size_t n = bitt_entries_count(es);
        for (size_t i = 0; i < n; i++)
            if (take_entry(r, bitt_entries_at(es, i), &page_max)) {
                bitt_entries_free(es);
                return -1;
            }
        const char *next = bitt_entries_cursor(es);
        more = next != NULL;
        if (more && n == 0) {
            snprintf(r->error, sizeof r->error, "list: an empty page with a cursor");
            bitt_entries_free(es);
            return -1;
        }
        /* This page's far end: its last key, or the end of the prefix. */
        char *far = reverse ? s.lo : s.hi;
        int *has_far = reverse ? &s.has_lo : &s.has_hi;
        *has_far = more;
        if (more) {
            size_t len;
            memcpy(far, bitt_entry_key(bitt_entries_at(es, n - 1), &len), KEY_LEN);
            if (strlen(next) >= sizeof cursor) {
                snprintf(r->error, sizeof r->error, "list: a cursor of %zu bytes", strlen(next));
                bitt_entries_free(es);
                return -1;
            }
            memcpy(cursor, next, strlen(next) + 1);
        }
        bitt_entries_free(es);
        if (push_span(&r->cur, &s)) {
            snprintf(r->error, sizeof r->error, "out of memory");
            return -1;
        }
        if (page_max > r->max_seen)
            r->max_seen = page_max;
        r->pages++;
        /* The next page starts where this one ended. */
        if (reverse) {
            memcpy(s.hi, s.lo, KEY_LEN);
            s.has_hi = 1;
            s.has_lo = 0;
        } else {
            memcpy(s.lo, s.hi, KEY_LEN);
            s.has_lo = 1;
            s.has_hi = 0;
        }
    }
    span_list t = r->prev;
    r->prev = r->cur;
    r->cur = t;
    r->have_prev = 1;
    r->listings++;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* How many commits the inversions belong to. */
static long bad_commits(reader *r)
{
    long n = 0;
    if (!r->inversions)
        return 0;
    qsort(r->bad, (size_t)r->inversions, sizeof *r->bad, cmp_u64);
    for (long i = 0; i < r->inversions; i++)
        n += i == 0 || r->bad[i] != r->bad[i - 1];
    return n;
}

static void *reader_main(void *arg)
{
    reader *r = arg;
    pthread_barrier_wait(&r->st->barrier);
    int reverse = 0;
    while (atomic_load(&r->st->running) > 0 && !*r->error) {
        list_all(r, reverse);
        reverse = !reverse;
    }
    /* Once more after the last commit: it must list every key. */
    if (!*r->error)
        list_all(r, reverse);
    return NULL;
}

/* ---- one run ------------------------------------------------------------------------- */

/* Deletes what a run wrote on a server (a store there outlives the test). */
static void clean(bitt_store *s, const writer *w)
{
    bitt_txn *t = NULL;
    int ops = 0;
    for (int i = 0; i < WRITERS; i++)
        for (int k = 0; k < w[i].keys; k++) {
            char key[KEY_LEN + 1];
            if (!t && bitt_txn_begin(s, &t))
                return;
            bitt_txn_delete(t, key, make_key(key, i, k));
            if (++ops == BITT_TXN_OPS_MAX) {
                bitt_txn_commit(t, NULL);
                bitt_txn_free(t);
                t = NULL;
                ops = 0;
            }
        }
    if (t) {
        bitt_txn_commit(t, NULL);
        bitt_txn_free(t);
    }
}

static bitt_store *open_store(const char *url)
{
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("open %s: status %d: %s", url, rc, bitt_error_last());
    return s;
}

/* Runs the writers and the reader on url: one handle each (own), or one
 * for all; then checks what the reader saw. */
static void run_order(const char *name, const char *url, int own)
{
    static writer w[WRITERS];
    static reader r;
    static run_state st;
    int commits = COMMITS;
    int keys = keys_per_writer(commits);
    pthread_t tids[WRITERS + 1];
    bitt_store *shared = open_store(url);
    atomic_init(&st.running, WRITERS);
    atomic_init(&st.acked, 0);
    assert_int_equal(pthread_barrier_init(&st.barrier, NULL, WRITERS + 1), 0);

    memset(&r, 0, sizeof r);
    r.store = own ? open_store(url) : shared;
    r.st = &st;
    r.keys_max = keys;
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer){.store = own ? open_store(url) : shared,
                        .st = &st,
                        .id = i,
                        .commits = commits,
                        .versions = calloc((size_t)keys, sizeof(uint64_t))};
        r.seen[i] = calloc((size_t)keys, 1);
        r.versions[i] = calloc((size_t)keys, sizeof(uint64_t));
        assert_non_null(w[i].versions);
        assert_non_null(r.seen[i]);
        assert_non_null(r.versions[i]);
    }
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&tids[i], NULL, writer_main, &w[i]), 0);
    assert_int_equal(pthread_create(&tids[WRITERS], NULL, reader_main, &r), 0);
    for (int i = 0; i <= WRITERS; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&st.barrier);

    printf("%s: %d writers x %d commits (every %dth of %d sets), %ld listings, %ld pages, "
           "%ld entries read, %ld keys seen, %ld checked, %ld inversions (keys of %ld commits)\n",
           name, WRITERS, commits, BIG_EVERY, BIG_SETS, r.listings, r.pages, r.entries,
           r.first_seen, r.checked, r.inversions, bad_commits(&r));
    for (long i = 0; i < r.inversions && i < SHOWN; i++)
        printf("  inversion: %s\n", r.shown[i]);
    int failed = 0;
    for (int i = 0; i < WRITERS; i++)
        if (*w[i].error) {
            print_error("%s: %s\n", name, w[i].error);
            failed = 1;
        }
    if (*r.error) {
        print_error("%s: reader: %s\n", name, r.error);
        failed = 1;
    }
    /* The last listing saw every key, at the version its write returned. */
    long missing = 0, wrong = 0;
    for (int i = 0; i < WRITERS && !failed; i++)
        for (int k = 0; k < w[i].keys; k++) {
            missing += !r.seen[i][k];
            wrong += r.seen[i][k] && r.versions[i][k] != w[i].versions[k];
        }

    clean(shared, w);
    for (int i = 0; i < WRITERS; i++) {
        if (own)
            bitt_store_close(w[i].store);
        free(w[i].versions);
        free(r.seen[i]);
        free(r.versions[i]);
    }
    if (own)
        bitt_store_close(r.store);
    bitt_store_close(shared);
    free(r.prev.items);
    free(r.cur.items);
    free(r.bad);

    assert_false(failed);
    assert_int_equal(missing, 0);
    assert_int_equal(wrong, 0);
    assert_int_equal(r.inversions, 0);
}

/* ---- the backends -------------------------------------------------------------------- */

static void test_memory_shared_handle(void **state)
{
    (void)state;
    if (!ct_backend_wanted(CT_MEMORY))
        skip();
    run_order("memory (one handle)", "memory:", 0);
}

static void test_sqlite_file_handle_each(void **state)
{
    (void)state;
    if (!ct_backend_wanted(CT_SQLITE_FILE))
        skip();
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    char path[4096], url[4200], p[4200];
    snprintf(path, sizeof path, "%s/commit-order-%ld.db", ct_tmpdir(), (long)getpid());
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
    snprintf(url, sizeof url, "sqlite:%s?busy_timeout=60000", path);
    run_order("sqlite-file (a handle per thread)", url, 1);
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
}

/* Which server, and whether each thread has a handle of its own. */
typedef struct server_run {
    ct_backend backend;
    int own;
} server_run;

/* A server store of its own: a new schema or prefix on the test server. */
static void test_server(void **state)
{
    const server_run *run = *state;
    ct_backend b = run->backend;
    if (!ct_backend_wanted(b))
        skip();
    const char *base = ct_backend_server(b);
    if (!base)
        fail_msg("%s: set BITT_TEST_%s_URL (scripts/test starts a server), or leave the "
                 "backend out with BITT_TEST_BACKENDS",
                 ct_backend_name(b), b == CT_POSTGRES ? "POSTGRES" : "REDIS");
    char url[4096], name[64];
    snprintf(url, sizeof url, "%s%c%s=corder_%ld_%s", base, strchr(base, '?') ? '&' : '?',
             b == CT_POSTGRES ? "schema" : "prefix", (long)getpid(), run->own ? "own" : "shared");
    snprintf(name, sizeof name, "%s (%s)", ct_backend_name(b),
             run->own ? "a handle per thread" : "one handle, its pool");
    run_order(name, url, run->own);
}

int main(void)
{
    static server_run pg_own = {CT_POSTGRES, 1}, pg_shared = {CT_POSTGRES, 0};
    static server_run redis_own = {CT_REDIS, 1}, redis_shared = {CT_REDIS, 0};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_shared_handle),
        cmocka_unit_test(test_sqlite_file_handle_each),
        {"test_postgres_handle_each", test_server, NULL, NULL, &pg_own},
        {"test_postgres_shared_handle", test_server, NULL, NULL, &pg_shared},
        {"test_redis_handle_each", test_server, NULL, NULL, &redis_own},
        {"test_redis_shared_handle", test_server, NULL, NULL, &redis_shared},
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
