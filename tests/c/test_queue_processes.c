/*
 * tests/c/test_queue_processes.c: the queue, leases and schedules across
 * processes sharing one SQLite file (reliability.md, scenario 5). Each child
 * opens its own handle after fork() and writes what it saw to a file of its
 * own; the parent checks the union. Every loop is bounded in count and in
 * time, and nothing asserts on timing: a slow machine only means fewer rounds.
 *
 *  - 4 processes consume 20,000 messages (enqueued first by the parent) in
 *    batches under a lease, and ack them: every id is acked exactly once,
 *    none is lost, and the queue ends empty.
 *  - 4 processes contend for one lease with a 50 ms TTL on the real clock; a
 *    holder sometimes stalls past its TTL and then tries a fenced commit:
 *    every such commit is BITT_ELEASELOST. The epochs acquired are unique
 *    and, together, exactly 1..N; the commits that did land, in versionstamp
 *    order, never go back to an older epoch.
 *  - 4 processes claim one schedule with a 5 ms interval for 200
 *    occurrences: no occurrence is claimed twice, and the claims chain (each
 *    claim's next run is the next claim's occurrence), so none is lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bitt.h"
#include "contract.h"
#include "scale.h"

#define CHILDREN 4

static char db_path[4300];
static char db_url[4400];
static char rec_dir[4000];
static long parent_pid; /* names the record files, the same in parent and children */

static void remove_db(const char *path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    char p[4400];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
}

static void fresh_db(const char *name)
{
    parent_pid = (long)getpid();
    snprintf(rec_dir, sizeof rec_dir, "%s", ct_tmpdir());
    snprintf(db_path, sizeof db_path, "%s/qproc-%s-%ld.db", rec_dir, name, (long)getpid());
    remove_db(db_path);
    snprintf(db_url, sizeof db_url, "sqlite:%s?busy_timeout=60000", db_path);
}

static void record_path(char *out, size_t n, const char *test, int child)
{
    snprintf(out, n, "%s/qproc-%s-%ld-%d.bin", rec_dir, test, parent_pid, child);
}

/* Milliseconds on a monotonic clock, for the time bounds. */
static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* In a child: report a failure on stderr (the parent's cmocka output). */
static void child_say(int child, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "child %d (pid %ld): %s\n", child, (long)getpid(), msg);
}

static bitt_store *child_open(int child)
{
    bitt_store *store = NULL;
    int rc = bitt_store_open(db_url, &store);
    if (rc) {
        child_say(child, "open: %d %s", rc, bitt_error_last());
        _exit(2);
    }
    return store;
}

/* Forks CHILDREN children running fn(i); returns how many exited 0. */
static int fork_children(void (*fn)(int))
{
    pid_t pids[CHILDREN];
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < CHILDREN; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            fn(i);
            _exit(0);
        }
    }
    int ok = 0;
    for (int i = 0; i < CHILDREN; i++) {
        int st = 0;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
        else if (WIFEXITED(st))
            print_error("child %d exited with %d\n", i, WEXITSTATUS(st));
        else
            print_error("child %d ended by signal %d\n", i, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    return ok;
}

/* Reads a child's record file: *count records of size rec. malloc'd. */
static void *read_records(const char *test, int child, size_t rec, size_t *count)
{
    char path[4400];
    record_path(path, sizeof path, test, child);
    FILE *f = fopen(path, "rb");
    *count = 0;
    if (!f) {
        print_error("cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1024, n = 0;
    uint8_t *buf = malloc(cap * rec);
    while (buf) {
        if (n == cap) {
            uint8_t *more = realloc(buf, cap * 2 * rec);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
        if (fread(buf + n * rec, rec, 1, f) != 1)
            break;
        n++;
    }
    fclose(f);
    unlink(path);
    *count = n;
    return buf;
}

static FILE *open_records(const char *test, int child)
{
    char path[4400];
    record_path(path, sizeof path, test, child);
    FILE *f = fopen(path, "wb");
    if (!f) {
        child_say(child, "cannot write %s: %s", path, strerror(errno));
        _exit(3);
    }
    return f;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- 4 processes x 20,000 messages ------------------------------------------------------ */

#define MESSAGES_MAX 20000
#define MESSAGES ts_scaled(MESSAGES_MAX, 500) /* BITT_TEST_SCALE */
#define BATCH 50
#define CONSUME_MAX_MS 120000

typedef struct acked {
    uint64_t id;
    uint64_t index; /* the payload: the enqueue's index */
} acked;

static void child_consume(int child)
{
    bitt_store *store = child_open(child);
    FILE *out = open_records("consume", child);
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = BATCH;
    o.lease_ms = 60000; /* no lease runs out without a crash */
    o.wait_ms = 20;
    int64_t deadline = mono_ms() + CONSUME_MAX_MS;
    long failures = 0, empty = 0, empty_with_pending = 0;
    for (long round = 0; round < 10L * MESSAGES && mono_ms() < deadline; round++) {
        bitt_messages *list = NULL;
        int rc = bitt_queue_dequeue(store, "work", &o, &list);
        if (rc) {
            if (failures++ < 5)
                child_say(child, "dequeue: %d %s", rc, bitt_error_last());
            bitt_messages_free(list);
            continue;
        }
        size_t n = bitt_messages_count(list);
        for (size_t i = 0; i < n; i++) {
            const bitt_message *m = bitt_messages_at(list, i);
            size_t len = 0;
            const uint8_t *p = bitt_message_payload(m, &len);
            char text[32] = "";
            memcpy(text, p, len < sizeof text - 1 ? len : sizeof text - 1);
            acked a = {bitt_message_id(m), strtoull(text, NULL, 10)};
            rc = bitt_queue_ack(store, "work", a.id, bitt_message_token(m));
            if (rc) {
                if (failures++ < 5)
                    child_say(child, "ack of %" PRIu64 ": %d %s", a.id, rc, bitt_error_last());
                continue;
            }
            fwrite(&a, sizeof a, 1, out);
        }
        bitt_messages_free(list);
        if (n) {
            empty = 0;
            continue;
        }
        /* Nothing claimable: done once nothing is pending or delayed (what is
         * processing belongs to another child, which acks it). */
        bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
        rc = bitt_queue_stats_get(store, "work", &st);
        if (rc == BITT_OK && st.pending == 0 && st.delayed == 0)
            break;
        if (rc == BITT_OK && empty_with_pending++ == 0)
            child_say(child, "round %ld: an empty batch while %" PRIu64 " messages are pending",
                      round, st.pending);
        if (++empty > 1000)
            break;
    }
    if (empty_with_pending)
        failures++;
    fclose(out);
    bitt_store_close(store);
    if (mono_ms() >= deadline)
        child_say(child, "stopped at the time bound");
    _exit(failures ? 1 : 0);
}

static void test_4_processes_consume_20000(void **state)
{
    (void)state;
    fresh_db("consume");
    bitt_store *store = NULL;
    assert_int_equal(bitt_store_open(db_url, &store), BITT_OK);
    static uint64_t ids[MESSAGES_MAX];
    for (int i = 0; i < MESSAGES; i++) {
        char text[16];
        int n = snprintf(text, sizeof text, "%d", i);
        int rc = bitt_queue_enqueue(store, "work", text, (size_t)n, BITT_KIND_BYTES, NULL, &ids[i]);
        if (rc)
            fail_msg("enqueue %d: %d %s", i, rc, bitt_error_last());
    }
    bitt_store_close(store);

    assert_int_equal(fork_children(child_consume), CHILDREN);

    /* The union of the children's acks: each id once, with its own payload. */
    static acked all[MESSAGES_MAX * 2];
    size_t total = 0;
    for (int c = 0; c < CHILDREN; c++) {
        size_t n = 0;
        acked *recs = read_records("consume", c, sizeof(acked), &n);
        assert_non_null(recs);
        if (total + n > (size_t)MESSAGES * 2)
            fail_msg("the children acked %zu messages and more, of %d", total + n, MESSAGES);
        memcpy(all + total, recs, n * sizeof *recs);
        total += n;
        print_message("child %d acked %zu messages\n", c, n);
        free(recs);
    }
    static unsigned char seen[MESSAGES_MAX];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < total; i++) {
        uint64_t k = all[i].index;
        if (k >= (uint64_t)MESSAGES)
            fail_msg("an acked message has the payload %" PRIu64, k);
        if (ids[k] != all[i].id)
            fail_msg("payload %" PRIu64 " came with id %" PRIu64 ", enqueued as %" PRIu64, k,
                     all[i].id, ids[k]);
        if (seen[k]++)
            fail_msg("message %" PRIu64 " (payload %" PRIu64 ") was acked twice", all[i].id, k);
    }
    for (int k = 0; k < MESSAGES; k++)
        if (!seen[k])
            fail_msg("message %" PRIu64 " (payload %d) was never acked", ids[k], k);
    assert_int_equal(total, MESSAGES);

    assert_int_equal(bitt_store_open(db_url, &store), BITT_OK);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(store, "work", &st), BITT_OK);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.delayed, 0);
    assert_int_equal(st.processing, 0);
    assert_int_equal(st.dead, 0);
    bitt_messages *list = NULL;
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = 10;
    assert_int_equal(bitt_queue_dequeue(store, "work", &o, &list), BITT_OK);
    assert_int_equal(bitt_messages_count(list), 0);
    bitt_messages_free(list);
    bitt_store_close(store);
    remove_db(db_path);
}

/* ---- 4 processes contending for one lease ------------------------------------------------- */

#define LEASE_TTL_MS 50
#define STALL_US 90000 /* past the TTL */
#define ACQUISITIONS 8 /* per child */
#define LEASE_MAX_MS 20000

enum { REC_ACQUIRED = 1, REC_COMMITTED, REC_STALE_REFUSED, REC_STALE_ACCEPTED };

typedef struct lease_rec {
    uint32_t what;
    uint32_t child;
    uint64_t epoch;
    uint64_t version; /* REC_COMMITTED, REC_STALE_ACCEPTED: the commit's versionstamp */
} lease_rec;

/* A fenced commit: the lease must be ours at epoch, and it bumps a counter. */
static int fenced_commit(bitt_store *store, const char *owner, uint64_t epoch, uint64_t *version)
{
    bitt_txn *t = NULL;
    int rc = bitt_txn_begin(store, &t);
    if (!rc)
        rc = bitt_txn_fence(t, "L", owner, epoch);
    if (!rc)
        rc = bitt_txn_sum(t, "fenced", 6, 1);
    if (!rc)
        rc = bitt_txn_commit(t, version);
    bitt_txn_free(t);
    return rc;
}

static void child_lease(int child)
{
    bitt_store *store = child_open(child);
    FILE *out = open_records("lease", child);
    char owner[32];
    snprintf(owner, sizeof owner, "p%d", child);
    int64_t deadline = mono_ms() + LEASE_MAX_MS;
    long failures = 0;
    int acquired = 0;
    srand((unsigned)getpid());
    for (long round = 0; round < 100000 && acquired < ACQUISITIONS && mono_ms() < deadline;
         round++) {
        uint64_t epoch = 0;
        int64_t expires = 0;
        int rc = bitt_lease_acquire(store, "L", owner, LEASE_TTL_MS, &epoch, &expires);
        if (rc == BITT_EXISTS) {
            sleep_us(1000 + rand() % 4000);
            continue;
        }
        if (rc) {
            if (failures++ < 5)
                child_say(child, "acquire: %d %s", rc, bitt_error_last());
            continue;
        }
        acquired++;
        lease_rec r = {REC_ACQUIRED, (uint32_t)child, epoch, 0};
        fwrite(&r, sizeof r, 1, out);
        /* Work under the lease: these may land, or be refused if this
         * process was slow enough to lose the lease already. */
        for (int k = 0; k < 3; k++) {
            uint64_t v = 0;
            rc = fenced_commit(store, owner, epoch, &v);
            if (rc == BITT_OK) {
                r = (lease_rec){REC_COMMITTED, (uint32_t)child, epoch, v};
                fwrite(&r, sizeof r, 1, out);
            } else if (rc != BITT_ELEASELOST && failures++ < 5) {
                child_say(child, "fenced commit: %d %s", rc, bitt_error_last());
            }
        }
        if (acquired % 2) {
            /* Stall past the TTL, then try to write as if nothing happened. */
            sleep_us(STALL_US);
            for (int k = 0; k < 3; k++) {
                uint64_t v = 0;
                rc = fenced_commit(store, owner, epoch, &v);
                r = (lease_rec){rc == BITT_OK ? REC_STALE_ACCEPTED : REC_STALE_REFUSED,
                                (uint32_t)child, epoch, v};
                if (rc == BITT_OK || rc == BITT_ELEASELOST)
                    fwrite(&r, sizeof r, 1, out);
                else if (failures++ < 5)
                    child_say(child, "stale fenced commit: %d %s", rc, bitt_error_last());
                if (rc == BITT_OK)
                    child_say(child, "a fenced commit at stale epoch %" PRIu64 " landed", epoch);
            }
            rc = bitt_lease_renew(store, "L", owner, epoch, LEASE_TTL_MS, NULL);
            if (rc != BITT_ELEASELOST) {
                child_say(child, "renew after a stall: %d, not BITT_ELEASELOST", rc);
                failures++;
            }
        } else {
            rc = bitt_lease_release(store, "L", owner, epoch);
            if (rc != BITT_OK && rc != BITT_ELEASELOST && failures++ < 5)
                child_say(child, "release: %d %s", rc, bitt_error_last());
        }
    }
    fclose(out);
    bitt_store_close(store);
    _exit(failures ? 1 : 0);
}

static int cmp_rec_version(const void *a, const void *b)
{
    const lease_rec *x = a, *y = b;
    return (x->version > y->version) - (x->version < y->version);
}

static void test_4_processes_contend_for_a_lease(void **state)
{
    (void)state;
    fresh_db("lease");
    bitt_store *store = NULL;
    assert_int_equal(bitt_store_open(db_url, &store), BITT_OK); /* creates the schema */
    bitt_store_close(store);

    assert_int_equal(fork_children(child_lease), CHILDREN);

    lease_rec *all = NULL;
    size_t total = 0;
    for (int c = 0; c < CHILDREN; c++) {
        size_t n = 0;
        lease_rec *recs = read_records("lease", c, sizeof(lease_rec), &n);
        assert_non_null(recs);
        all = realloc(all, (total + n + 1) * sizeof *all);
        assert_non_null(all);
        memcpy(all + total, recs, n * sizeof *recs);
        total += n;
        free(recs);
    }
    static uint64_t epochs[CHILDREN * ACQUISITIONS + 1];
    lease_rec *commits = calloc(total + 1, sizeof *commits);
    assert_non_null(commits);
    size_t nepochs = 0, ncommits = 0, refused = 0, accepted = 0;
    uint64_t last_epoch[CHILDREN] = {0};
    for (size_t i = 0; i < total; i++) {
        const lease_rec *r = &all[i];
        switch (r->what) {
        case REC_ACQUIRED:
            if (r->epoch <= last_epoch[r->child])
                fail_msg("child %u acquired epoch %" PRIu64 " after epoch %" PRIu64, r->child,
                         r->epoch, last_epoch[r->child]);
            last_epoch[r->child] = r->epoch;
            assert_true(nepochs < CHILDREN * ACQUISITIONS);
            epochs[nepochs++] = r->epoch;
            break;
        case REC_COMMITTED: commits[ncommits++] = *r; break;
        case REC_STALE_REFUSED: refused++; break;
        default: accepted++;
        }
    }
    print_message("%zu acquisitions, %zu fenced commits landed, %zu stale commits refused\n",
                  nepochs, ncommits, refused);
    assert_int_equal(accepted, 0);
    assert_true(refused > 0);
    assert_true(nepochs > 0);
    /* Every acquisition incremented the epoch: together they are exactly 1..N. */
    qsort(epochs, nepochs, sizeof epochs[0], cmp_u64);
    for (size_t i = 0; i < nepochs; i++)
        if (epochs[i] != i + 1)
            fail_msg("the epochs acquired are not 1..%zu: position %zu holds %" PRIu64
                     " (a duplicate or a gap)",
                     nepochs, i, epochs[i]);
    /* In commit order, the fenced writes never go back to an older epoch. */
    qsort(commits, ncommits, sizeof *commits, cmp_rec_version);
    for (size_t i = 1; i < ncommits; i++) {
        if (commits[i].version == commits[i - 1].version)
            fail_msg("versionstamp %" PRIu64 " was given to two commits", commits[i].version);
        if (commits[i].epoch < commits[i - 1].epoch)
            fail_msg("a commit at epoch %" PRIu64 " (version %" PRIu64 ") landed after one at "
                     "epoch %" PRIu64 " (version %" PRIu64 ")",
                     commits[i].epoch, commits[i].version, commits[i - 1].epoch,
                     commits[i - 1].version);
    }
    /* The counter saw exactly the commits that said they landed. */
    assert_int_equal(bitt_store_open(db_url, &store), BITT_OK);
    bitt_entry *e = NULL;
    int64_t count = 0;
    int rc = bitt_kv_get(store, "fenced", 6, &e);
    if (rc == BITT_OK)
        assert_int_equal(bitt_entry_counter(e, &count), BITT_OK);
    else
        assert_int_equal(rc, BITT_NOTFOUND);
    assert_int_equal(count, (int64_t)ncommits);
    bitt_entry_free(e);
    bitt_store_close(store);
    free(commits);
    free(all);
    remove_db(db_path);
}

/* ---- 4 processes claiming one schedule --------------------------------------------------- */

#define INTERVAL_MS 5
#define OCCURRENCES 200
#define SCHEDULE_MAX_MS 30000

typedef struct claim_rec {
    int64_t occurrence;
    int64_t next_run_at;
} claim_rec;

static int64_t first_run_at;

static void child_claim(int child)
{
    bitt_store *store = child_open(child);
    FILE *out = open_records("schedule", child);
    const int64_t last = first_run_at + (int64_t)(OCCURRENCES - 1) * INTERVAL_MS;
    int64_t deadline = mono_ms() + SCHEDULE_MAX_MS;
    long failures = 0;
    for (long round = 0; round < 10000000 && mono_ms() < deadline; round++) {
        bitt_schedule *s = NULL;
        int rc = bitt_schedule_claim(store, "tick", &s);
        if (rc == BITT_OK) {
            claim_rec r = {bitt_schedule_occurrence(s), bitt_schedule_next_run_at(s)};
            bitt_schedule_free(s);
            fwrite(&r, sizeof r, 1, out);
            if (r.next_run_at > last)
                break;
            continue;
        }
        if (rc != BITT_NOTFOUND) {
            if (failures++ < 5)
                child_say(child, "claim: %d %s", rc, bitt_error_last());
            continue;
        }
        rc = bitt_schedule_get(store, "tick", &s);
        int64_t next = rc == BITT_OK ? bitt_schedule_next_run_at(s) : 0;
        bitt_schedule_free(s);
        if (rc != BITT_OK && failures++ < 5)
            child_say(child, "get: %d %s", rc, bitt_error_last());
        if (next > last)
            break;
        sleep_us(200);
    }
    fclose(out);
    bitt_store_close(store);
    _exit(failures ? 1 : 0);
}

static int cmp_claim(const void *a, const void *b)
{
    const claim_rec *x = a, *y = b;
    return (x->occurrence > y->occurrence) - (x->occurrence < y->occurrence);
}

static void test_4_processes_claim_one_schedule(void **state)
{
    (void)state;
    fresh_db("schedule");
    bitt_store *store = NULL;
    assert_int_equal(bitt_store_open(db_url, &store), BITT_OK);
    int64_t now = 0;
    assert_int_equal(bitt_clock_now(store, &now), BITT_OK);
    first_run_at = now + 200; /* after the children have started */
    assert_int_equal(
        bitt_schedule_upsert(store, "tick", INTERVAL_MS, "p", 1, BITT_KIND_BYTES, first_run_at),
        BITT_OK);
    bitt_store_close(store);

    assert_int_equal(fork_children(child_claim), CHILDREN);

    claim_rec *all = NULL;
    size_t total = 0;
    for (int c = 0; c < CHILDREN; c++) {
        size_t n = 0;
        claim_rec *recs = read_records("schedule", c, sizeof(claim_rec), &n);
        assert_non_null(recs);
        all = realloc(all, (total + n + 1) * sizeof *all);
        assert_non_null(all);
        memcpy(all + total, recs, n * sizeof *recs);
        total += n;
        print_message("child %d claimed %zu occurrences\n", c, n);
        free(recs);
    }
    assert_true(total > 0);
    qsort(all, total, sizeof *all, cmp_claim);
    /* The first occurrence is the first run; each claim's next run is the
     * next claim's occurrence (the claims chain: nothing claimed twice,
     * nothing lost between two claims); occurrences stay on the grid. */
    assert_int_equal(all[0].occurrence, first_run_at);
    int64_t skipped = 0;
    for (size_t i = 0; i < total; i++) {
        const claim_rec *r = &all[i];
        if (i && r->occurrence == all[i - 1].occurrence)
            fail_msg("occurrence %" PRId64 " was claimed twice", r->occurrence);
        if ((r->occurrence - first_run_at) % INTERVAL_MS || r->next_run_at <= r->occurrence ||
            (r->next_run_at - r->occurrence) % INTERVAL_MS)
            fail_msg("claim %zu is off the grid: occurrence %" PRId64 ", next %" PRId64, i,
                     r->occurrence, r->next_run_at);
        if (i + 1 < total && all[i + 1].occurrence != r->next_run_at)
            fail_msg("the claim of %" PRId64 " moved the schedule to %" PRId64
                     ", but the next claim is of %" PRId64,
                     r->occurrence, r->next_run_at, all[i + 1].occurrence);
        skipped += (r->next_run_at - r->occurrence) / INTERVAL_MS - 1;
    }
    const int64_t last = first_run_at + (int64_t)(OCCURRENCES - 1) * INTERVAL_MS;
    if (all[total - 1].next_run_at <= last)
        fail_msg("the claims stopped at %" PRId64 ", before the last occurrence %" PRId64,
                 all[total - 1].next_run_at, last);
    /* Claimed plus missed (skipped because nobody claimed in time) covers
     * every occurrence up to the last one exactly once. */
    assert_int_equal((int64_t)total + skipped,
                     (all[total - 1].next_run_at - first_run_at) / INTERVAL_MS);
    print_message("%zu occurrences claimed, %" PRId64 " missed and skipped\n", total, skipped);

    assert_int_equal(bitt_store_open(db_url, &store), BITT_OK);
    bitt_schedule *s = NULL;
    assert_int_equal(bitt_schedule_get(store, "tick", &s), BITT_OK);
    assert_int_equal(bitt_schedule_next_run_at(s), all[total - 1].next_run_at);
    bitt_schedule_free(s);
    bitt_store_close(store);
    free(all);
    remove_db(db_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_4_processes_consume_20000),
        cmocka_unit_test(test_4_processes_contend_for_a_lease),
        cmocka_unit_test(test_4_processes_claim_one_schedule),
    };
    return cmocka_run_group_tests_name("queue_processes", tests, NULL, NULL);
}
