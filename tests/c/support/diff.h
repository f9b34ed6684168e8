/*
 * tests/c/support/diff.h: differential runs. The same random operations go
 * to several stores (store 0 is the reference, usually memory:), with
 * manual clocks moving together, and every status, entry, list page,
 * versionstamp, message, lease, outbox event, budget answer and schedule
 * must be the same on every store. Ack tokens are random per backend, so
 * each store uses the token its own delivery gave.
 *
 * The randomness and the failure are the caller's: test_redis_diff and
 * test_sqlite_backend draw from a seeded generator and fail with cmocka;
 * the differential fuzzer (tests/fuzz/fuzz_diff.c) draws from its input and
 * aborts. No cmocka here.
 *
 * With edges set (test_diff_all), the steps also make refused calls and
 * use edge values (diff_edges.c), and check two rules that a comparison
 * alone cannot see, as every backend could break them alike: a txn with a
 * refused add commits nothing and returns that first refusal, and every
 * error text read back is UTF-8.
 */
#ifndef BITT_TEST_DIFF_H
#define BITT_TEST_DIFF_H

#include <stdint.h>
#include <stdio.h>

#include "bitt.h"

#define DIFF_MAX_STORES 4
#define DIFF_MAX_IDS 4096

typedef struct diff_ctx {
    bitt_store *s[DIFF_MAX_STORES];
    bitt_sub *subs[DIFF_MAX_STORES]; /* on channel c1, or NULL */
    const char *names[DIFF_MAX_STORES];
    int n;
    /* A number in [0, n); n >= 1. */
    uint32_t (*rnd)(void *rng, uint32_t n);
    void *rng;
    /* Reports a mismatch; must not return (fail_msg, abort). */
    void (*fail)(const char *msg);
    int step;
    FILE *trace; /* when set, every operation and its statuses are written here */

    /* state carried between steps */
    char *cursor;   /* a cursor of the reference's last list page */
    uint64_t epoch; /* the last lease epoch acquired */
    uint64_t recent[8];
    uint64_t max_id;
    /* the latest delivery's token per store and message id, and the one
     * before it (to try as a stale token) */
    char (*token)[DIFF_MAX_IDS][33];
    char (*stale)[DIFF_MAX_IDS][33];
    struct {
        const char *what;
        int runs, ok;
    } seen[128];
    /* Stores whose versionstamps need only keep the reference's order
     * (bitt promises unique and increasing, not consecutive: a PostgreSQL
     * sequence skips the numbers of failed commits). For them, the
     * reference's stamps seen so far and the store's, pairwise. */
    int ordered_versions[DIFF_MAX_STORES];
    struct diff_vmap {
        uint64_t *ref, *got;
        size_t count, cap;
    } vmap[DIFF_MAX_STORES];
    /* Stores whose queue message ids need only keep the reference's order
     * (a PostgreSQL sequence skips the ids of a failed commit's enqueues).
     * For them, every reference id seen so far and the store's id of the
     * same message, sorted by the reference's. */
    int ordered_ids[DIFF_MAX_STORES];
    struct diff_vmap idmap[DIFF_MAX_STORES];

    /* Refused calls and edge values too (off: the seeds of the other users
     * keep their runs). max_key and max_value are the stores' limits
     * (max_key_size, max_value_size), for the keys and values at and just
     * over them. */
    int edges;
    size_t max_key, max_value;
    int64_t now;      /* the manual clock, as diff_manual_clock/diff_advance set it */
    uint64_t seqs[4]; /* outbox seqs seen lately: fails and parks that find their event */
    uint64_t commits; /* txns built so far: each witness value is new */
} diff_ctx;

/* Sets up c for n stores opened by the caller (s[], names[] filled after);
 * 0, or -1 when out of memory. */
int diff_init(diff_ctx *c, int n, uint32_t (*rnd)(void *, uint32_t), void *rng,
              void (*fail)(const char *));
/* Subscribes every store to channel c1 (for the pubsub steps). */
void diff_subscribe(diff_ctx *c);
/* Closes the subscriptions and frees what diff_init took (not the stores). */
void diff_free(diff_ctx *c);

/* Puts every store on a manual clock at now_ms. */
void diff_manual_clock(diff_ctx *c, int64_t now_ms);
/* Moves every store's manual clock by ms. */
void diff_advance(diff_ctx *c, int64_t ms);

/* One random KV step: set, add, delete, take, increment, get, get-many,
 * list (with prefixes, ranges, cursors), an atomic commit with checks, or
 * purge. */
void diff_kv_step(diff_ctx *c);
/* One random step of the other modules: queue, leases (with a fenced
 * commit), outbox, budgets, schedules, publish/subscribe. */
void diff_module_step(diff_ctx *c);

/* Prints how often each operation ran and succeeded. */
void diff_report(const diff_ctx *c, FILE *f, const char *program);

/* ---- for the step files (diff_kv.c, diff_modules.c) ---------------------- */

uint32_t diff_rnd(diff_ctx *c, uint32_t n);
void diff_fail(diff_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Every store's status must be the reference's; counts the operation. */
void diff_same_rc(diff_ctx *c, const int *rc, const char *what);
void diff_same_i64(diff_ctx *c, const int64_t *v, const char *what, const char *field);
/* New versionstamps (0 = none): equal, or in the same order. */
void diff_same_version(diff_ctx *c, const uint64_t *ver, const char *what);
/* The version on store i that stands for the reference's ref, for a check:
 * ref itself, or the store's stamp of the same write; a reference version
 * no write made stands for a version store i never made either. */
uint64_t diff_version_for(diff_ctx *c, int i, uint64_t ref);
void diff_same_entry(diff_ctx *c, bitt_entry *const *e, const char *what);
void diff_same_entries(diff_ctx *c, bitt_entries *const *e, const char *what);
/* queue: 1 for queue messages (their ids go through the id maps). */
void diff_same_messages(diff_ctx *c, bitt_messages *const *l, int queue, const char *what);

/* ---- queue message ids (diff_ids.c) --------------------------------------- */

/* Store i's id of the reference's message ref is got: learns it (the same
 * id, or on an ordered store an id in the same order as every other). */
void diff_same_id(diff_ctx *c, int i, uint64_t ref, uint64_t got, const char *what);
/* Store i's id for the reference's id ref: the store's id of that message,
 * or ref itself when no map has it (an id no store made). */
uint64_t diff_id_for(const diff_ctx *c, int i, uint64_t ref);
/* An id no message reaches, for a call on a message that exists nowhere. */
#define DIFF_NO_ID (UINT64_C(1) << 40)
/* 1 when every ordered store knows its id for ref (0 and DIFF_NO_ID stand
 * for themselves). */
int diff_id_known(const diff_ctx *c, uint64_t ref);
/* The first index of m whose ref is ref or more (m->count: none). */
size_t diff_vmap_lower(const struct diff_vmap *m, uint64_t ref);
/* The index of ref in m, or -1. */
long diff_vmap_find(const struct diff_vmap *m, uint64_t ref);
/* Puts (ref, got) at index at of m. */
void diff_vmap_insert(diff_ctx *c, struct diff_vmap *m, size_t at, uint64_t ref, uint64_t got);

/* ---- edges (diff_edges.c): each returns usual unless c->edges, and then
 * mostly usual too, so that the runs still reach deep states ------------- */

/* A key at or just over max_key: 1 and *key, *len set, or 0. */
int diff_edge_key(diff_ctx *c, const void **key, size_t *len);
/* A value at or over max_value, of a bad kind or bad JSON: 1, or 0. */
int diff_edge_value(diff_ctx *c, const void **value, size_t *len, int *kind);
/* A KV TTL: huge (saturating), up to the end of time, or negative. */
int64_t diff_edge_ttl(diff_ctx *c, int64_t usual);
/* A duration of at least min: BITT_DURATION_MAX_MS, one over, min - 1,
 * or an int64 edge. */
int64_t diff_edge_duration(diff_ctx *c, int64_t usual, int64_t min);
/* A time on the store clock: now, the end of time, 0 or negative. */
int64_t diff_edge_time(diff_ctx *c, int64_t usual);
/* A name of 255 bytes, of 256, empty, or not UTF-8. */
const char *diff_edge_name(diff_ctx *c, const char *usual);
/* An error text that is not UTF-8 (or at the value limit). */
const char *diff_edge_error(diff_ctx *c, const char *usual);
/* A page limit at its maximum or over it. */
uint32_t diff_edge_limit(diff_ctx *c, uint32_t usual);

/* A txn on every store, with the rule of a failed txn: once an add is
 * refused, every later add gives that status, and the commit returns it
 * with its message and writes nothing (a witness set, the first op of
 * every such txn, must be absent after a failed commit and present after
 * a good one). */
typedef struct diff_txn {
    bitt_txn *t[DIFF_MAX_STORES];
    int first;   /* the first refused add's status, or 0 */
    size_t held; /* the ops the reference's txn holds (its adds that were OK) */
    char message[DIFF_MAX_STORES][256]; /* each store's first refusal */
    char witness[24];
} diff_txn;

void diff_txn_begin(diff_ctx *c, diff_txn *x);
/* Keeps store i's message of a first refusal; returns rc. Wraps every add:
 * rc[i] = diff_txn_note(x, i, bitt_txn_set(x->t[i], ...)). */
int diff_txn_note(diff_txn *x, int i, int rc);
/* The statuses of one add on every store: the same, and the rule. */
void diff_txn_added(diff_ctx *c, diff_txn *x, const int *rc, const char *what);
/* One add that is refused (or an edge that is not): a key, value, kind,
 * TTL, name, delay or payload the engine must refuse; with edges only. */
void diff_txn_edge_add(diff_ctx *c, diff_txn *x);
/* Fills the txn to BITT_TXN_OPS_MAX ops, and past it when over. */
void diff_txn_fill(diff_ctx *c, diff_txn *x, int over);
/* Commits and frees on every store (rc, ver: per store) and checks the
 * rule; the caller compares rc. */
void diff_txn_commit(diff_ctx *c, diff_txn *x, int *rc, uint64_t *ver);

#endif /* BITT_TEST_DIFF_H */
