/*
 * core/postgres/pg_internal.h: what the files of the PostgreSQL backend share.
 *
 *   url.c       the URL (user:password@host:port/db), options, libpq
 *               parameters, password redaction
 *   conn.c      connect and reconnect, prepared statements, pipelines,
 *               error mapping, transactions
 *   params.c    bound parameters, binary arrays, result columns, lock keys,
 *               the statements every module shares
 *   schema.c    migrations and the "is this schema ours" check
 *   kv.c        get, get-many, list, purge
 *   commit.c    atomic commits (checks, fences, set, delete, sum, enqueue,
 *               outbox append)
 *   queue.c     claim (one topic or several), ack, nack, extend, snooze,
 *               the expired-lease sweep
 *   queue_retention.c  done messages and dead letters that outlived their
 *               retention: the sweep's second half, and purge
 *   queue_txn.c  messages by id: get, and the queue ops of commits
 *   queue_dead.c  dead letters (list, retry, delete) and stats
 *   lease.c     leases and the fence read of commits
 *   outbox.c    per-stream event logs, parked events
 *   pubsub.c    the publish/subscribe log
 *   listen.c    wait_remote: LISTEN on a connection of its own
 *   budget.c    token buckets
 *   schedule.c  schedules (interval or cron, with or without a topic) and
 *               the schedule advance of commits
 *   pool.c      the store's connections: a call takes one, then gives it
 *               back
 *   set_group.c  lone sets of threads that meet, in one transaction
 *   backend.c   open, close, the vtable (each entry on a pooled connection)
 *
 * Every statement is prepared once per connection (re-prepared after a
 * reconnect) and takes bound parameters only; keys and values travel as
 * bytea in binary format. Identifiers (schema, table prefix) are validated
 * as [A-Za-z0-9_] and quoted when statements are made from their templates:
 * "@name" in a template stands for "schema"."<prefix>name", "#name" for
 * "<prefix>name" (index names).
 *
 * Clocks. When the engine's clock is manual (t->manual), every time a
 * statement compares or computes is t->now, bound as a parameter. Otherwise
 * the database decides: NOW is floor(extract(epoch from statement_timestamp())
 * * 1000), one value for the whole statement, so expiry, leases, claims,
 * schedules, budgets and pubsub retention follow the server's clock and all
 * processes agree whatever their own clocks say. (A multi-statement step
 * that needs the time in C, the budget, reads clock_timestamp() after its
 * locks are taken.) Only schedule_set's default first run (now + interval,
 * or the cron expression's next minute) is resolved by the engine with the
 * local clock; schedule_due reports the server's now it judged at, from
 * which the engine works out the next occurrence.
 */
#ifndef BITT_PG_INTERNAL_H
#define BITT_PG_INTERNAL_H

#include <libpq-fe.h>
#include <pthread.h>

#include "internal.h"
#include "io_wait.h"

/* The schema version this library writes and understands. */
#define BITT_PG_SCHEMA_VERSION 3
#define BITT_PG_IDENT_MAX 63 /* NAMEDATALEN - 1 */
#define BITT_PG_PREFIX_MAX 32
/* Every backend holds keys up to BITT_KEY_SIZE_MAX: a btree index entry
 * takes at most 2704 bytes, and the queue's (topic, dedup key) index must
 * hold a 255-byte topic beside the longest dedup key. */
_Static_assert(BITT_KEY_SIZE_MAX + BITT_NAME_MAX + 32 <= 2704,
               "a key of BITT_KEY_SIZE_MAX bytes must fit PostgreSQL's btree indexes");
#define BITT_PG_MAX_PARAMS 12

/* The time of a statement: $n when the engine's clock is manual (bound),
 * else the server's, fixed for the statement. */
#define PG_NOW(n)                                                                                  \
    "COALESCE($" #n "::int8, floor(extract(epoch FROM statement_timestamp()) * 1000)::int8)"
/* a + b (b >= 0) saturating at INT64_MAX: bitt__time_add in SQL. */
#define PG_AFTER(a, b)                                                                             \
    "(CASE WHEN (" b ") > 9223372036854775807 - (" a ") THEN 9223372036854775807 ELSE (" a         \
    ") + (" b ") END)"
/* A KV row (unqualified columns) that is live at NOW(n). */
#define PG_LIVE(n) "(expires_at IS NULL OR expires_at > " PG_NOW(n) ")"

/* Statements name their time parameter: PG_NOW_n is $n or the server's
 * time, PG_LIVE_n a live KV row at it, PG_NOW_n_PLUS_d the time $d ms
 * after it (saturating). */
#define PG_NOW_1 PG_NOW(1)
#define PG_NOW_2 PG_NOW(2)
#define PG_NOW_3 PG_NOW(3)
#define PG_NOW_4 PG_NOW(4)
#define PG_NOW_5 PG_NOW(5)
#define PG_NOW_6 PG_NOW(6)
#define PG_NOW_7 PG_NOW(7)
#define PG_NOW_8 PG_NOW(8)
#define PG_LIVE_1 PG_LIVE(1)
#define PG_LIVE_2 PG_LIVE(2)
#define PG_NOW_2_PLUS_4 PG_AFTER(PG_NOW(2), "$4::int8")
#define PG_NOW_4_PLUS_3 PG_AFTER(PG_NOW(4), "$3::int8")
#define PG_NOW_5_PLUS_4 PG_AFTER(PG_NOW(5), "$4::int8")
#define PG_NOW_6_PLUS_5 PG_AFTER(PG_NOW(6), "$5::int8")
#define PG_NOW_7_PLUS_4 PG_AFTER(PG_NOW(7), "$4::int8")
#define PG_NOW_8_PLUS_4 PG_AFTER(PG_NOW(8), "$4::int8")

/* Every prepared statement. Its SQL lives beside the code that runs it. */
typedef enum bitt_pg_id {
    PG_BEGIN,
    PG_COMMIT,
    PG_LOCK,   /* advisory transaction locks on an int8[] of keys, in order */
    PG_CLOCK,  /* the server's clock_timestamp() in ms */
    PG_NOTIFY, /* pg_notify(channel, '') */
    PG_SCHEMA_NS,
    PG_SCHEMA_RELS,
    PG_SCHEMA_VERSION,
    PG_KV_GET,
    PG_KV_GET_MANY,
    PG_KV_LIST_ASC,
    PG_KV_LIST_DESC,
    PG_KV_LIST_ASC_HI,
    PG_KV_LIST_DESC_HI,
    PG_KV_PURGE,
    PG_C_CHECK,
    PG_C_FENCE,
    PG_C_ORDER, /* the store's stamp order lock (commit.c) */
    PG_C_STAMP,
    PG_C_SET,
    PG_C_SET_STAMPED, /* a lone set of a group: its own nextval (commit.c) */
    PG_C_DELETE,
    PG_C_DELETE_OLD,
    PG_C_SUM,
    PG_C_ENQUEUE,
    PG_C_OUTBOX,
    PG_Q_SWEEP,
    PG_Q_SWEEP_TOPICS,
    PG_Q_CLAIM,
    PG_Q_CLAIM_TOPICS,
    PG_Q_GET,
    PG_Q_LOCK,
    PG_Q_CANCEL,
    PG_Q_RESCHEDULE,
    PG_Q_ACK,
    PG_Q_ACK_MANY,
    PG_Q_FINISH,      /* ack with done retention: kept done, with the result */
    PG_Q_FINISH_MANY, /* ack_many with done retention */
    PG_Q_WHY,
    PG_Q_HELD,
    PG_Q_RETRY,
    PG_Q_BURY,
    PG_Q_EXTEND,
    PG_Q_SNOOZE,
    PG_Q_DEAD_LIST,
    PG_Q_DEAD_RETRY_ONE,
    PG_Q_DEAD_RETRY_ALL,
    PG_Q_DEAD_DELETE_ONE,
    PG_Q_DEAD_DELETE_ALL,
    PG_Q_STATS,
    PG_Q_DROP_DONE, /* queue_retention.c: a topic's done messages past retention */
    PG_Q_DROP_DEAD, /* ... its dead letters past retention */
    PG_Q_DROP_DONE_TOPICS,
    PG_Q_DROP_DEAD_TOPICS,
    PG_Q_DROP_DONE_ALL, /* purge of every topic */
    PG_Q_DROP_DEAD_ALL,
    PG_Q_SWEEP_ALL,
    PG_L_ACQUIRE,
    PG_L_RENEW,
    PG_L_RELEASE,
    PG_L_GET,
    PG_O_PENDING,
    PG_O_PARKED_ANY,
    PG_O_PARKED_REASON,
    PG_O_ACK,
    PG_O_FAIL,
    PG_O_PARK,
    PG_O_RETRY_SOME,
    PG_O_RETRY_ALL,
    PG_O_DISCARD_SOME,
    PG_O_DISCARD_ALL,
    PG_O_COUNTS,
    PG_P_PRUNE,
    PG_P_INSERT,
    PG_P_HEAD,
    PG_P_FETCH,
    PG_B_GET,
    PG_B_PUT,
    PG_S_SET,
    PG_S_DUE,
    PG_S_AT,      /* a commit's schedule advance: its guard's read */
    PG_S_ADVANCE, /* ... and its write */
    PG_S_GET,
    PG_S_LIST,
    PG_S_DELETE,
    PG_COUNT
} bitt_pg_id;

/* The LISTEN side of wait_remote (listen.c). */
typedef struct bitt_pg_listener {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    PGconn *conn;        /* used by the polling thread only */
    int polling;         /* a thread is polling conn */
    uint64_t generation; /* bumped by every notification heard */
    int64_t retry_at;    /* after a failed connect: no new try before this */
} bitt_pg_listener;

/* The connections of a store (pool.c): each is a bitt_backend of its own
 * (a slot) sharing the store's settings. */
typedef struct bitt_pg_pool {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ready;
    size_t size;          /* URL option pool: most slots */
    size_t made;          /* slots made so far, in slots[] */
    bitt_backend **slots; /* size of them */
    bitt_backend **idle;  /* a stack: open connections on top */
    size_t nidle;
} bitt_pg_pool;

/* Lone sets of several threads waiting to run as one transaction
 * (set_group.c), under the pool's lock. */
typedef struct bitt_pg_set_waiter bitt_pg_set_waiter;
typedef struct bitt_pg_set_groups {
    size_t leaders;                  /* groups being run */
    bitt_pg_set_waiter *head, *tail; /* sets waiting for the next group */
} bitt_pg_set_groups;

/* A store's backend (the home), or one of its connections (a slot): a
 * slot's settings are copied from the home (its pointers borrowed); conn,
 * prepared, spin, failed_step, sqlstate and schema_ok are a slot's own.
 * Module calls get a slot; the pool and the listener live in the home. */
struct bitt_backend {
    PGconn *conn; /* NULL: connect before the next statement */
    int schema_ok;
    char schema[BITT_PG_IDENT_MAX + 1];
    char prefix[BITT_PG_PREFIX_MAX + 1];
    char channel[32]; /* the NOTIFY channel of this schema + prefix */
    /* the queue retentions the store was opened with (0 = none): acks keep
     * done messages, sweeps drop what outlived them */
    int64_t done_retention_ms;
    int64_t dead_retention_ms;
    uint64_t ns_seed;          /* seeds lock keys: schema and prefix */
    int64_t statement_timeout; /* ms */
    bitt__io_spin spin;        /* URL spin_us: before a wait for results blocks */
    /* libpq connection parameters (NULL-terminated arrays), kept to
     * reconnect; password and password_raw (as written in the URL) are
     * redacted from every message. */
    char **keywords;
    char **values;
    size_t nparams;
    char *password;
    char *password_raw;
    unsigned char prepared[PG_COUNT];
    /* set by a failed bitt__pg_run: which step failed, and its SQLSTATE */
    int failed_step;
    char sqlstate[6];
    bitt_pg_listener listen; /* the home's */
    bitt_pg_pool pool;       /* the home's */
    bitt_pg_set_groups sets; /* the home's */
};

/* ---- params.c ------------------------------------------------------------ */

/* Bound parameters of one statement, all in binary format. Pointers may
 * point into the struct (integers) or at the caller's bytes: a pg_params
 * must not be copied or moved once filled. */
typedef struct bitt_pg_params {
    int n;
    const char *values[BITT_PG_MAX_PARAMS];
    int lengths[BITT_PG_MAX_PARAMS];
    int formats[BITT_PG_MAX_PARAMS];
    unsigned char ints[BITT_PG_MAX_PARAMS][8];
} bitt_pg_params;

void bitt__pg_p_bytes(bitt_pg_params *p, const void *data, size_t len);
/* A NUL-terminated string as text; NULL binds SQL NULL. */
void bitt__pg_p_text(bitt_pg_params *p, const char *s);
void bitt__pg_p_i64(bitt_pg_params *p, int64_t v);
void bitt__pg_p_i32(bitt_pg_params *p, int32_t v);
void bitt__pg_p_null(bitt_pg_params *p);
/* The statement's time: t->now when manual, else NULL (the server's). */
void bitt__pg_p_now(bitt_pg_params *p, const bitt_time *t);
/* A count (a limit) as int8. */
void bitt__pg_p_count(bitt_pg_params *p, size_t n);

/* Binary one-dimensional arrays for bound parameters, built into buf:
 * bytea[] (NULL-free), int8[]. */
int bitt__pg_array_bytea(bitt_buf *buf, const uint8_t *const *items, const size_t *lens,
                         size_t count);
int bitt__pg_array_int8(bitt_buf *buf, const int64_t *items, size_t count);
int bitt__pg_array_text(bitt_buf *buf, const char *const *items, size_t count);

/* Result columns in binary format. */
int64_t bitt__pg_i64(const PGresult *res, int row, int col);
/* bytea or text: a pointer into res (never NULL) and its length. */
const uint8_t *bitt__pg_bytes(const PGresult *res, int row, int col, size_t *len);
/* text or NULL: a pointer into res (NUL-terminated) or NULL. */
const char *bitt__pg_text(const PGresult *res, int row, int col);

/* The advisory lock key of (tag, a, b) in this store's namespace. */
int64_t bitt__pg_lock_key(const bitt_backend *be, char tag, const void *a, size_t alen,
                          const void *b, size_t blen);
/* A 64-bit FNV-1a hash, continued from h. */
uint64_t bitt__pg_hash(uint64_t h, const void *data, size_t len);

/* Copies fields into a new message and appends it; BITT_ENOMEM. */
int bitt__pg_push_message(bitt_messages *out, const bitt_message *fields);
/* Frees the messages of out from index base on. */
void bitt__pg_messages_truncate(bitt_messages *out, size_t base);

/* ---- url.c ------------------------------------------------------------------ */

/* Reads the URL and the backend's options into be (schema, prefix,
 * statement timeout, libpq parameters); BITT_EURL or BITT_ENOMEM. */
int bitt__pg_read_url(bitt_url *url, bitt_backend *be);
/* Writes in into out (cap bytes, NUL-terminated) with every occurrence of
 * a password (decoded or as written in the URL, or a password= option)
 * replaced by "***"; a cut at cap never leaves part of one. */
void bitt__pg_redact(const bitt_backend *be, const char *in, char *out, size_t cap);
void bitt__pg_free_params(bitt_backend *be);

/* ---- conn.c ----------------------------------------------------------------- */

/* One statement of a pipeline: run with params (NULL: none); res is set
 * on success (free with bitt__pg_clear). */
typedef struct bitt_pg_step {
    bitt_pg_id id;
    const char *sql; /* the template, prepared on first use on a connection */
    bitt_pg_params *params;
    PGresult *res;
} bitt_pg_step;

/* (params.c) The statements every module uses: BEGIN, COMMIT, advisory
 * transaction locks on an int8[] of keys (taken in array order), and the
 * server's clock_timestamp() in ms. */
extern const char bitt__pg_begin_sql[];
extern const char bitt__pg_commit_sql[];
extern const char bitt__pg_lock_sql[];
extern const char bitt__pg_clock_sql[];
/* Takes the advisory locks of keys (sorted and deduplicated here, so
 * every caller locks in one order) as a step to put in a pipeline: fills
 * p and buf (to dispose after the run). */
int bitt__pg_lock_step(bitt_pg_step *step, bitt_pg_params *p, bitt_buf *buf, int64_t *keys,
                       size_t count);

/* A new connection with the stored parameters, nonblocking, quiet, with
 * the session's timeouts set; NULL with the thread's error set. */
PGconn *bitt__pg_connect(bitt_backend *be, const char *what);
/* Runs SQL text on another connection (LISTEN). */
int bitt__pg_exec_conn(bitt_backend *be, PGconn *conn, const char *sql, const char *what);
/* Connects when there is no connection (first use, or after one was
 * lost). */
int bitt__pg_ensure(bitt_backend *be);
/* Runs steps in one pipeline (one round trip; without an explicit BEGIN
 * they form one implicit transaction that commits at the end). BITT_OK
 * with every res set, or a status with a message naming `what`; then no
 * res is kept, be->failed_step and be->sqlstate say what failed, and any
 * transaction left open is rolled back. */
int bitt__pg_run(bitt_backend *be, bitt_pg_step *steps, int n, const char *what);
/* Runs one statement; *res on success (may be NULL when unwanted). */
int bitt__pg_run1(bitt_backend *be, bitt_pg_id id, const char *sql, bitt_pg_params *p,
                  PGresult **res, const char *what);
/* Runs SQL text without parameters (DDL) in the simple protocol. */
int bitt__pg_simple(bitt_backend *be, const char *sql, const char *what);
/* Rolls back an open transaction; keeps the thread's error. */
void bitt__pg_rollback(bitt_backend *be);
void bitt__pg_clear(bitt_pg_step *steps, int n);
/* Drops the connection (it is reopened by the next call). */
void bitt__pg_drop(bitt_backend *be);
/* tmpl with every "@name" replaced by "schema"."<prefix>name" and every
 * "#name" by "<prefix>name" (quoted); malloc'd, NULL on out of memory. */
char *bitt__pg_expand(const bitt_backend *be, const char *tmpl);
/* The number of rows a command changed. */
uint64_t bitt__pg_changed(const PGresult *res);

/* ---- pool.c ------------------------------------------------------------- */

#define BITT_PG_DEFAULT_POOL 16
#define BITT_PG_POOL_MAX 256

/* Makes the pool of home (pool.size set from the URL): no slot yet. */
int bitt__pg_pool_init(bitt_backend *home);
/* Closes and frees every slot, then the pool. */
void bitt__pg_pool_free(bitt_backend *home);
/* A slot for one call (waits while all pool.size are busy); NULL with the
 * thread's error set on out of memory. */
bitt_backend *bitt__pg_pool_take(bitt_backend *home);
void bitt__pg_pool_give(bitt_backend *home, bitt_backend *slot);

/* ---- set_group.c ---------------------------------------------------------- */

/* A commit of one SET op and nothing else (what bitt_kv_set makes). */
int bitt__pg_lone_set(const bitt_commit *c);
/* Commits lone set c on a slot of home's pool, in one transaction with the
 * lone sets of other threads that meet it; c->version is its own. */
int bitt__pg_set_grouped(bitt_backend *home, bitt_commit *c);

/* ---- schema.c ------------------------------------------------------------ */

int bitt__pg_schema_slow(bitt_backend *be);
/* BITT_OK once the schema is known to be ours and current. */
static inline int bitt__pg_schema(bitt_backend *be)
{
    return be->schema_ok ? BITT_OK : bitt__pg_schema_slow(be);
}
int bitt__pg_migrate(bitt_backend *be);

/* ---- the vtable's entries ------------------------------------------------ */

int bitt__pg_kv_get(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                    bitt_entry **out);
int bitt__pg_kv_get_many(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                         const size_t *key_lens, size_t count, bitt_entries *out);
int bitt__pg_kv_list(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                     bitt_entries *out);
int bitt__pg_kv_purge(bitt_backend *be, const bitt_time *t, uint64_t *removed);
/* An entry from row r of res whose columns from col on are value, kind,
 * version, expires_at. NULL on out of memory. */
bitt_entry *bitt__pg_row_entry(const PGresult *res, int r, int col, const uint8_t *key,
                               size_t key_len);

int bitt__pg_commit(bitt_backend *be, bitt_commit *c);
/* Lone sets cs[0..n) (bitt__pg_lone_set) as one transaction: the locks of
 * every key, the stamp order lock, then for each in order its upsert,
 * which takes its own versionstamp. All are written, each with its
 * version, or none. */
int bitt__pg_commit_sets(bitt_backend *be, bitt_commit *const *cs, size_t n);

/* The statement that dead-letters a topic's expired last leases, to run
 * first in every queue call's pipeline: params topic, now, error. */
extern const char bitt__pg_sweep_sql[];
/* The same over topics: params text[], now, error. */
extern const char bitt__pg_sweep_topics_sql[];
/* Fills p for the sweep of topic at t. */
void bitt__pg_sweep_params(bitt_pg_params *p, const char *topic, const bitt_time *t);

/* The most steps a sweep takes: the expired last leases, then one drop per
 * retention that is set (queue_retention.c). */
#define BITT_PG_SWEEP_MAX 3
/* Puts the whole sweep of topic at t into steps[0..n) (with params[0..n))
 * and returns n: the expired-lease statement, then a DELETE for each
 * retention that is set (none without retention: the default path is as
 * before). topics_arr (a text[] from bitt__pg_array_text; NULL: topic)
 * sweeps several topics at once. */
int bitt__pg_sweep_steps(const bitt_backend *be, const char *topic, const bitt_buf *topics_arr,
                         const bitt_time *t, bitt_pg_step *steps, bitt_pg_params *params);
int bitt__pg_queue_purge(bitt_backend *be, const bitt_time *t, const char *topic,
                         uint64_t *removed);

int bitt__pg_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                         int64_t lease_ms, bitt_messages *out);
int bitt__pg_queue_claim_topics(bitt_backend *be, const bitt_time *t, const char *const *topics,
                                size_t count, size_t limit, int64_t lease_ms, bitt_messages *out);
int bitt__pg_queue_get(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       bitt_message **out);
/* The fields of row r of a message row (columns id, payload, kind, token,
 * attempts, max_attempts, last_error, created_at, due_at, failed_at,
 * priority, topic), pointing into res. Rows: state 0 pending, 1
 * processing, 2 dead, 3 done (with done retention: acked at done_at, with
 * result and result_kind; no token, no dedup key). */
void bitt__pg_row_message(const PGresult *res, int r, bitt_message *f);
/* Appends the message of every row of res; on out of memory none. */
int bitt__pg_push_rows(const PGresult *res, bitt_messages *out);

/* One delivery op (ack, nack, snooze, extend) of a standalone call or a
 * commit: the statement that applies it to a live delivery at t (changing
 * no row otherwise), made by queue.c for both. */
typedef struct bitt_pg_delivery {
    int type; /* BITT_OP_QUEUE_ACK .. BITT_OP_QUEUE_EXTEND */
    const char *topic;
    uint64_t id;
    const char *token;
    const char *error;               /* nack: NULL = none */
    int64_t ms;                      /* nack delay (< 0: the backoff), snooze delay, lease */
    uint64_t attempts, max_attempts; /* nack: the delivery's, to retry or bury */
    /* ack with done retention: kept done with this result (NULL = none) */
    int keep;
    const void *result;
    size_t result_len;
    int result_kind;
} bitt_pg_delivery;
void bitt__pg_delivery_step(const bitt_pg_delivery *d, const bitt_backoff *backoff,
                            const bitt_time *t, bitt_pg_step *step, bitt_pg_params *p);
/* Binds $1 id, $2 topic, $3 token (NULL binds NULL; one that is not
 * ASCII, so no token, binds one that matches none). */
void bitt__pg_held_params(bitt_pg_params *p, const char *topic, uint64_t id, const char *token);
/* BITT_ETOKEN naming why a delivery is not held, from a row (state, token
 * matches, lease live) of message id, or no row. */
int bitt__pg_token_fail(const char *topic, uint64_t id, const PGresult *res);

/* The BITT_OP_QUEUE_* ops of a commit (queue_txn.c). Batch 1 locks each
 * message (its lock key, then its row FOR UPDATE after its topic's sweep)
 * and reads it; the verdict fails the commit (BITT_ETOKEN) or says what
 * batch 2 writes, at the time of the read. */
typedef struct bitt_pg_qop {
    int write;   /* batch 2 has a statement for it */
    int64_t now; /* the read's time */
    uint64_t attempts, max_attempts;
} bitt_pg_qop;
int64_t bitt__pg_qop_lock_key(const bitt_backend *be, const bitt_op *op);
void bitt__pg_qop_read(const bitt_op *op, const bitt_time *t, bitt_pg_step *step,
                       bitt_pg_params *p);
/* BITT_OK (op->found set for cancel and reschedule) or BITT_ETOKEN. */
int bitt__pg_qop_judge(bitt_op *op, const PGresult *res, bitt_pg_qop *q);
void bitt__pg_qop_write(const bitt_backend *be, const bitt_op *op, const bitt_pg_qop *q,
                        const bitt_backoff *backoff, bitt_pg_step *step, bitt_pg_params *p);
int bitt__pg_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                            const uint64_t *ids, const char *const *tokens, size_t count,
                            int *statuses);
int bitt__pg_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       const char *token);
int bitt__pg_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, const char *error, int64_t delay_ms,
                        const bitt_backoff *backoff);
int bitt__pg_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t lease_ms);
int bitt__pg_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t delay_ms);
int bitt__pg_queue_dead_list(bitt_backend *be, const bitt_time *t, const char *topic,
                             uint64_t after_id, size_t limit, bitt_messages *out);
int bitt__pg_queue_dead_retry(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                              uint64_t *count);
int bitt__pg_queue_dead_delete(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                               uint64_t *count);
int bitt__pg_queue_stats(bitt_backend *be, const bitt_time *t, const char *topic,
                         bitt_queue_stats *out);

int bitt__pg_lease_acquire(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, int64_t ttl_ms, uint64_t *epoch, int64_t *expires_at);
int bitt__pg_lease_renew(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                         uint64_t epoch, int64_t ttl_ms, int64_t *expires_at);
int bitt__pg_lease_release(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, uint64_t epoch);
int bitt__pg_lease_get(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                       uint64_t *epoch, int64_t *expires_at);
/* The message of a lease not held (renew, release, fence). */
int bitt__pg_lease_lost(const char *name, const char *owner, uint64_t epoch);

int bitt__pg_outbox_pending(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                            bitt_messages *out);
int bitt__pg_outbox_ack(bitt_backend *be, const bitt_time *t, const char *stream,
                        const uint64_t *seqs, size_t count, uint64_t *acked);
int bitt__pg_outbox_fail(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         const char *error, int64_t next_attempt_at);
int bitt__pg_outbox_park(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         int reason, const char *error);
int bitt__pg_outbox_parked(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                           size_t limit, bitt_messages *out);
int bitt__pg_outbox_retry(bitt_backend *be, const bitt_time *t, const char *stream,
                          const uint64_t *seqs, size_t count, uint64_t *moved);
int bitt__pg_outbox_discard(bitt_backend *be, const bitt_time *t, const char *stream,
                            const uint64_t *seqs, size_t count, uint64_t *deleted);
int bitt__pg_outbox_counts(bitt_backend *be, const bitt_time *t, const char *stream,
                           uint64_t *pending, uint64_t *parked);

int bitt__pg_pubsub_publish(bitt_backend *be, const bitt_time *t, const char *channel,
                            const uint8_t *data, size_t len, int64_t retention_ms);
int bitt__pg_pubsub_head(bitt_backend *be, const bitt_time *t, uint64_t *last_id);
int bitt__pg_pubsub_fetch(bitt_backend *be, const bitt_time *t, const char *channel,
                          uint64_t after_id, size_t limit, bitt_messages *out);

int bitt__pg_wait_remote(bitt_backend *be, int64_t max_ms);
void bitt__pg_listen_init(bitt_backend *be);
void bitt__pg_listen_close(bitt_backend *be);
/* Fills p for the NOTIFY that wakes the waiters of this store. */
void bitt__pg_notify_params(const bitt_backend *be, bitt_pg_params *p);
extern const char bitt__pg_notify_sql[];

int bitt__pg_budget_take(bitt_backend *be, const bitt_time *t, const char *name,
                         const bitt_budget_params *p, int64_t n, int64_t *wait_ms);

int bitt__pg_schedule_set(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                          int64_t first_run_at);
int bitt__pg_schedule_due(bitt_backend *be, const bitt_time *t, const char *prefix,
                          bitt_schedule **out);
/* A commit's BITT_OP_SCHEDULE_ADVANCE (commit.c): batch 1 reads schedule
 * op->name FOR UPDATE (under its lock key), the verdict is BITT_ECONFLICT
 * unless it is at op->delta, batch 2 moves it to op->delay_ms. */
int64_t bitt__pg_schedule_lock_key(const bitt_backend *be, const bitt_op *op);
void bitt__pg_schedule_read(const bitt_op *op, bitt_pg_step *step, bitt_pg_params *p);
int bitt__pg_schedule_judge(const bitt_op *op, const PGresult *res);
void bitt__pg_schedule_write(const bitt_op *op, bitt_pg_step *step, bitt_pg_params *p);
int bitt__pg_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                          bitt_schedule **out);
int bitt__pg_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out);
int bitt__pg_schedule_delete(bitt_backend *be, const bitt_time *t, const char *key);

#endif /* BITT_PG_INTERNAL_H */
