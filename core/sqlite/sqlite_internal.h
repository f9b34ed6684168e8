/*
 * core/sqlite/sqlite_internal.h: what the files of the SQLite backend share.
 *
 *   conn.c    open, options, pragmas, the prepared statement cache, errors,
 *             transactions, the vtable
 *   schema.c  migrations and the "is this database ours" check
 *   kv.c      get, get-many, list, purge
 *   commit.c  atomic commits (checks, fences, set, delete, sum, enqueue,
 *             outbox append)
 *   rows.c    messages made from rows, shared by queue, outbox and pubsub
 *   queue.c   ack, nack, extend, snooze (alone and in commits), the
 *             expired-lease sweep, enqueue
 *   queue_claim.c  claims of one topic or several, by priority
 *   queue_byid.c   get, and the cancel and reschedule ops of commits
 *   queue_dead.c  dead letters (list, retry, delete) and per-topic stats
 *   lease.c   leases and the fence check of commits
 *   outbox.c  per-stream event logs, parked events
 *   pubsub.c  the publish/subscribe log
 *   budget.c  token buckets
 *   queue_retention.c  done messages and dead letters that outlived their
 *             retention: the sweep's second half, and purge
 *   schedule.c  schedules (interval or cron, with or without a topic) and
 *             the schedule advance of commits
 *
 * The engine holds the store's mutex around every backend call, so one
 * connection (opened SQLITE_OPEN_NOMUTEX) is used by one thread at a time.
 */
#ifndef BITT_SQLITE_INTERNAL_H
#define BITT_SQLITE_INTERNAL_H

#include <sqlite3.h>

#include "internal.h"

/* The schema version this library writes and understands. */
#define BITT_SQ_SCHEMA_VERSION 4
#define BITT_SQ_PREFIX_MAX 32

/* Every statement the backend runs, prepared once and kept for the
 * connection's life (reused with sqlite3_reset). Those before
 * SQ_FIRST_TABLE are prepared at open; the KV ones (SQL in conn.c) as soon
 * as the schema is known to be there; those from SQ_KV_END on (SQL beside
 * the code that runs them) on first use, with bitt__sq_stmt(). */
typedef enum bitt_sq_id {
    SQ_BEGIN,           /* BEGIN (deferred: read snapshots) */
    SQ_BEGIN_IMMEDIATE, /* BEGIN IMMEDIATE (every write) */
    SQ_COMMIT,
    SQ_ROLLBACK,
    SQ_FIRST_TABLE,
    SQ_STAMP = SQ_FIRST_TABLE, /* advances the versionstamp */
    SQ_STAMP_READ,             /* reads it back */
    SQ_GET,                    /* a live row by key: value, kind, version, expires_at */
    SQ_VERSION,                /* a live row's version */
    SQ_UPSERT,                 /* key, value, kind, version, expires_at */
    SQ_PEEK,                   /* a row by key, live or not: value, kind, version, expires_at */
    SQ_DELETE,                 /* by key */
    SQ_LIST_ASC,               /* [lo, +inf), ascending */
    SQ_LIST_DESC,              /* [lo, +inf), descending */
    SQ_LIST_ASC_HI,            /* [lo, hi), ascending */
    SQ_LIST_DESC_HI,
    SQ_PURGE, /* deletes rows with expires_at <= now */
    SQ_KV_END,
    /* queue.c, queue_dead.c */
    SQ_Q_SWEEP = SQ_KV_END, /* dead-letters a topic's expired last attempts */
    SQ_Q_LEVEL,             /* a topic's next priority down */
    SQ_Q_PICK,              /* claimable ids at one priority, (due_at, id) order */
    SQ_Q_ROW,               /* a picked row */
    SQ_Q_LEASE,             /* one claimed row: processing, token, lease */
    SQ_Q_ACK,
    SQ_Q_FINISH, /* ack with done retention: done, with the result */
    SQ_Q_HELD,   /* attempts of a live lease (id, topic, token) */
    SQ_Q_RETRY,  /* nack: pending again */
    SQ_Q_BURY,   /* nack: dead */
    SQ_Q_EXTEND,
    SQ_Q_SNOOZE, /* pending again, the attempt given back */
    SQ_Q_WHY,    /* why a token was refused */
    SQ_Q_DEDUP,  /* the live message holding a dedup key */
    SQ_Q_INSERT,
    SQ_Q_DEAD_LIST,
    SQ_Q_DEAD_RETRY_ONE,
    SQ_Q_DEAD_RETRY_ALL,
    SQ_Q_DEAD_DELETE_ONE,
    SQ_Q_DEAD_DELETE_ALL,
    SQ_Q_STATS,
    SQ_Q_GET,
    SQ_Q_CANCEL,
    SQ_Q_RESCHEDULE,
    /* queue_retention.c */
    SQ_Q_DROP_DONE,  /* a topic's done messages done by a cutoff */
    SQ_Q_DROP_DEAD,  /* a topic's dead letters failed by a cutoff */
    SQ_Q_NEXT_TOPIC, /* the first topic after one */
    /* lease.c */
    SQ_L_ACQUIRE,
    SQ_L_RENEW,
    SQ_L_RELEASE,
    SQ_L_GET,
    /* outbox.c */
    SQ_O_NEXT_SEQ,
    SQ_O_INSERT,
    SQ_O_PENDING,
    SQ_O_ACK,
    SQ_O_FAIL,
    SQ_O_PARK,
    SQ_O_PARKED_ANY,
    SQ_O_PARKED_REASON,
    SQ_O_RETRY_ONE,
    SQ_O_RETRY_ALL,
    SQ_O_DISCARD_ONE,
    SQ_O_DISCARD_ALL,
    SQ_O_COUNTS,
    /* pubsub.c */
    SQ_P_PRUNE,
    SQ_P_INSERT,
    SQ_P_HEAD,
    SQ_P_FETCH,
    /* budget.c */
    SQ_B_GET,
    SQ_B_PUT,
    /* schedule.c */
    SQ_S_SET,
    SQ_S_DUE_ALL,
    SQ_S_DUE_RANGE,
    SQ_S_AT, /* a schedule's next_run_at (the advance's guard) */
    SQ_S_ADVANCE,
    SQ_S_GET,
    SQ_S_LIST,
    SQ_S_DELETE,
    SQ_COUNT
} bitt_sq_id;

struct bitt_backend {
    sqlite3 *db;
    char prefix[BITT_SQ_PREFIX_MAX + 1];
    int schema_ok; /* the schema was checked (or created) on this handle */
    int is_memory; /* ":memory:" */
    /* the queue retentions the store was opened with (0 = none): acks keep
     * done messages, sweeps drop what outlived them */
    int64_t done_retention_ms;
    int64_t dead_retention_ms;
    sqlite3_stmt *stmts[SQ_COUNT];
};

/* ---- conn.c ---------------------------------------------------------------- */

/* Prepares the statements [from, to) that are not prepared yet (only
 * those whose SQL lives in conn.c: to <= SQ_KV_END). */
int bitt__sq_prepare(bitt_backend *be, bitt_sq_id from, bitt_sq_id to);
/* The cached statement id into *out, prepared from tmpl ("{p}" = the
 * table prefix) on first use; a status with a message when that fails. */
int bitt__sq_stmt(bitt_backend *be, bitt_sq_id id, const char *tmpl, sqlite3_stmt **out);
/* tmpl with every "{p}" replaced by prefix, malloc'd; NULL on out of
 * memory. */
char *bitt__sq_expand(const char *tmpl, const char *prefix);

/* Maps an SQLite result code to a bitt status (BUSY/LOCKED -> BITT_EBUSY,
 * NOMEM -> BITT_ENOMEM, anything else -> BITT_EBACKEND) and records a
 * message naming the operation and sqlite3_errmsg(). Returns the status. */
int bitt__sq_fail(bitt_backend *be, int rc, const char *what);

/* Steps st, bound by the caller (bind_rc: the first failed binding's
 * code, or SQLITE_OK), to its end and resets it; *changes (optional) gets
 * the rows it changed. A statement that returns rows runs to its end. */
int bitt__sq_run(bitt_backend *be, sqlite3_stmt *st, int bind_rc, const char *what,
                 uint64_t *changes);
/* Runs a cached statement that returns no rows (BEGIN, COMMIT, ...). */
int bitt__sq_exec(bitt_backend *be, bitt_sq_id id, const char *what);
/* BEGIN IMMEDIATE / BEGIN; COMMIT (rolls back when COMMIT fails). */
int bitt__sq_begin_write(bitt_backend *be, const char *what);
int bitt__sq_begin_read(bitt_backend *be, const char *what);
int bitt__sq_commit(bitt_backend *be, const char *what);
/* Rolls back when a transaction is open; keeps the thread's error. */
void bitt__sq_rollback(bitt_backend *be);
/* Ends a write or read transaction by the status of its work: commits
 * when status >= 0 (OK or a non-error outcome such as BITT_NOTFOUND) and
 * returns status, or the commit's failure; rolls back and returns status
 * when it is negative. */
int bitt__sq_end(bitt_backend *be, int status, const char *what);
/* Schema check, then BEGIN IMMEDIATE: how every write starts. */
int bitt__sq_write(bitt_backend *be, const char *what);

/* Binds bytes as a BLOB (never NULL, even when empty), without copying:
 * the bytes must outlive the statement's next reset. */
static inline int bitt__sq_bind_bytes(sqlite3_stmt *st, int i, const void *p, size_t n)
{
    return sqlite3_bind_blob(st, i, n ? p : (const void *)"", (int)n, SQLITE_STATIC);
}
/* Binds a NUL-terminated string as TEXT (NULL as NULL), without copying. */
static inline int bitt__sq_bind_str(sqlite3_stmt *st, int i, const char *s)
{
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}
/* Binds a count (a limit) as an integer. */
static inline int bitt__sq_bind_count(sqlite3_stmt *st, int i, size_t n)
{
    return sqlite3_bind_int64(st, i, n > INT64_MAX ? INT64_MAX : (int64_t)n);
}
/* A BLOB column that is never NULL (an empty one reads as ""). */
static inline const void *bitt__sq_column_bytes(sqlite3_stmt *st, int col, size_t *len)
{
    const void *p = sqlite3_column_blob(st, col);
    *len = (size_t)sqlite3_column_bytes(st, col);
    return p ? p : (const void *)"";
}
/* Binds an expiry: 0 (never) is stored as NULL. */
static inline int bitt__sq_bind_expiry(sqlite3_stmt *st, int i, int64_t expires_at)
{
    return expires_at ? sqlite3_bind_int64(st, i, expires_at) : sqlite3_bind_null(st, i);
}

/* ---- schema.c ----------------------------------------------------------------- */

/* BITT_OK once the schema is known to be ours and current; BITT_ESCHEMA
 * ("not migrated", foreign table, newer version) otherwise. Cheap after
 * the first success on a handle. */
int bitt__sq_schema_slow(bitt_backend *be);
static inline int bitt__sq_schema(bitt_backend *be)
{
    return be->schema_ok ? BITT_OK : bitt__sq_schema_slow(be);
}
int bitt__sq_migrate(bitt_backend *be);

/* ---- kv.c ----------------------------------------------------------------------- */

/* An entry from the current row of st whose columns from `col` on are
 * value, kind, version, expires_at. NULL on out of memory. */
bitt_entry *bitt__sq_row_entry(sqlite3_stmt *st, int col, const uint8_t *key, size_t key_len);

int bitt__sq_kv_get(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                    bitt_entry **out);
int bitt__sq_kv_get_many(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                         const size_t *key_lens, size_t count, bitt_entries *out);
int bitt__sq_kv_list(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                     bitt_entries *out);
int bitt__sq_kv_purge(bitt_backend *be, const bitt_time *t, uint64_t *removed);

/* ---- commit.c -------------------------------------------------------------------- */

int bitt__sq_commit_ops(bitt_backend *be, bitt_commit *c);

/* ---- rows.c ---------------------------------------------------------------------- */

/* Copies fields into a new message and appends it to out; BITT_ENOMEM
 * with a message on failure. */
int bitt__sq_push_message(bitt_messages *out, const bitt_message *fields);
/* Frees the messages of out from index base on: a failed call hands back
 * nothing of what it had pushed. */
void bitt__sq_messages_truncate(bitt_messages *out, size_t base);

/* ---- queue.c, queue_dead.c --------------------------------------------------------- */

/* Queue rows: state 0 pending, 1 processing, 2 dead, 3 done. The columns a
 * message is read from, in the order bitt__sq_queue_fields() expects. */
#define BITT_SQ_QUEUE_COLS                                                                         \
    "id, payload, kind, attempts, max_attempts, last_error, created_at, due_at, failed_at, "       \
    "token, priority, done_at, result, result_kind"
#define BITT_SQ_QUEUE_NCOLS 14
/* Fills *f from the current row of st (columns BITT_SQ_QUEUE_COLS); the
 * pointers are valid until st steps or resets. */
void bitt__sq_queue_fields(sqlite3_stmt *st, const char *topic, bitt_message *f);
/* Dead-letters topic's processing messages whose lease ended by now on
 * their last attempt, then drops what outlived the retentions
 * (bitt__sq_queue_drop); inside the caller's write transaction. */
int bitt__sq_queue_sweep(bitt_backend *be, int64_t now, const char *topic);
/* Its first half: only the expired last leases. */
int bitt__sq_queue_sweep_leases(bitt_backend *be, int64_t now, const char *topic);
/* queue_retention.c: deletes topic's done messages and dead letters that
 * outlived the store's retentions by now (no statement for a retention of
 * 0); *removed (optional) gets how many. Inside the caller's transaction. */
int bitt__sq_queue_drop(bitt_backend *be, int64_t now, const char *topic, uint64_t *removed);
int bitt__sq_queue_purge(bitt_backend *be, const bitt_time *t, const char *topic,
                         uint64_t *removed);
/* Schema check, BEGIN IMMEDIATE and the sweep: how every queue call
 * starts. On failure nothing is left open. */
int bitt__sq_queue_begin(bitt_backend *be, int64_t now, const char *topic, const char *what);
/* A commit's BITT_OP_ENQUEUE, inside its transaction. */
int bitt__sq_queue_insert(bitt_backend *be, int64_t now, bitt_op *op);
/* A delivery op (BITT_OP_QUEUE_ACK..EXTEND) judged with a commit's checks:
 * its topic's sweep, then BITT_OK when its token holds a live lease, or
 * BITT_ETOKEN with a message naming op index at. */
int bitt__sq_queue_check(bitt_backend *be, int64_t now, const bitt_op *op, size_t at);
/* Applies a delivery op after the sweep, inside the caller's transaction:
 * the one path of the standalone calls (at = SIZE_MAX) and of commits.
 * BITT_ETOKEN without a live lease; backoff is for a nack's delay < 0. */
int bitt__sq_queue_deliver(bitt_backend *be, int64_t now, const bitt_op *op, size_t at,
                           const bitt_backoff *backoff);
/* A commit's BITT_OP_QUEUE_CANCEL / _RESCHEDULE, after the topic's sweep:
 * op->found = 1 when it applied. */
int bitt__sq_queue_cancel(bitt_backend *be, int64_t now, bitt_op *op);
int bitt__sq_queue_reschedule(bitt_backend *be, int64_t now, bitt_op *op);

int bitt__sq_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                         int64_t lease_ms, bitt_messages *out);
int bitt__sq_queue_claim_topics(bitt_backend *be, const bitt_time *t, const char *const *topics,
                                size_t count, size_t limit, int64_t lease_ms, bitt_messages *out);
int bitt__sq_queue_get(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       bitt_message **out);
int bitt__sq_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       const char *token);
int bitt__sq_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                            const uint64_t *ids, const char *const *tokens, size_t count,
                            int *statuses);
int bitt__sq_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, const char *error, int64_t delay_ms,
                        const bitt_backoff *backoff);
int bitt__sq_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t lease_ms);
int bitt__sq_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t delay_ms);
int bitt__sq_queue_dead_list(bitt_backend *be, const bitt_time *t, const char *topic,
                             uint64_t after_id, size_t limit, bitt_messages *out);
int bitt__sq_queue_dead_retry(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                              uint64_t *count);
int bitt__sq_queue_dead_delete(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                               uint64_t *count);
int bitt__sq_queue_stats(bitt_backend *be, const bitt_time *t, const char *topic,
                         bitt_queue_stats *out);

/* ---- lease.c --------------------------------------------------------------------- */

/* A commit's BITT_OP_FENCE, inside its transaction: BITT_OK, or
 * BITT_ELEASELOST with a message naming op index i. */
int bitt__sq_lease_fence(bitt_backend *be, int64_t now, const bitt_op *op, size_t i);

int bitt__sq_lease_acquire(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, int64_t ttl_ms, uint64_t *epoch, int64_t *expires_at);
int bitt__sq_lease_renew(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                         uint64_t epoch, int64_t ttl_ms, int64_t *expires_at);
int bitt__sq_lease_release(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, uint64_t epoch);
int bitt__sq_lease_get(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                       uint64_t *epoch, int64_t *expires_at);

/* ---- outbox.c ---------------------------------------------------------------------- */

/* A commit's BITT_OP_OUTBOX_APPEND, inside its transaction. */
int bitt__sq_outbox_insert(bitt_backend *be, int64_t now, bitt_op *op);

int bitt__sq_outbox_pending(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                            bitt_messages *out);
int bitt__sq_outbox_ack(bitt_backend *be, const bitt_time *t, const char *stream,
                        const uint64_t *seqs, size_t count, uint64_t *acked);
int bitt__sq_outbox_fail(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         const char *error, int64_t next_attempt_at);
int bitt__sq_outbox_park(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         int reason, const char *error);
int bitt__sq_outbox_parked(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                           size_t limit, bitt_messages *out);
int bitt__sq_outbox_retry(bitt_backend *be, const bitt_time *t, const char *stream,
                          const uint64_t *seqs, size_t count, uint64_t *moved);
int bitt__sq_outbox_discard(bitt_backend *be, const bitt_time *t, const char *stream,
                            const uint64_t *seqs, size_t count, uint64_t *deleted);
int bitt__sq_outbox_counts(bitt_backend *be, const bitt_time *t, const char *stream,
                           uint64_t *pending, uint64_t *parked);

/* ---- pubsub.c, budget.c, schedule.c -------------------------------------------------- */

int bitt__sq_pubsub_publish(bitt_backend *be, const bitt_time *t, const char *channel,
                            const uint8_t *data, size_t len, int64_t retention_ms);
int bitt__sq_pubsub_head(bitt_backend *be, const bitt_time *t, uint64_t *last_id);
int bitt__sq_pubsub_fetch(bitt_backend *be, const bitt_time *t, const char *channel,
                          uint64_t after_id, size_t limit, bitt_messages *out);

int bitt__sq_budget_take(bitt_backend *be, const bitt_time *t, const char *name,
                         const bitt_budget_params *p, int64_t n, int64_t *wait_ms);

int bitt__sq_schedule_set(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                          int64_t first_run_at);
int bitt__sq_schedule_due(bitt_backend *be, const bitt_time *t, const char *prefix,
                          bitt_schedule **out);
/* A commit's BITT_OP_SCHEDULE_ADVANCE: the guard, judged with the checks
 * (BITT_ECONFLICT unless schedule op->name has next_run_at op->delta),
 * and the move of next_run_at to op->delay_ms. */
int bitt__sq_schedule_advance_check(bitt_backend *be, const bitt_op *op, size_t i);
int bitt__sq_schedule_advance(bitt_backend *be, const bitt_op *op);
int bitt__sq_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                          bitt_schedule **out);
int bitt__sq_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out);
int bitt__sq_schedule_delete(bitt_backend *be, const bitt_time *t, const char *key);

#endif /* BITT_SQLITE_INTERNAL_H */
