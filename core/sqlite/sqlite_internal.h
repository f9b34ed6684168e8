/*
 * core/sqlite/sqlite_internal.h: what the files of the SQLite backend share.
 *
 *   conn.c    open, options, pragmas, the prepared statement cache, errors,
 *             transactions, the vtable
 *   schema.c  migrations and the "is this database ours" check
 *   kv.c      get, get-many, list, purge
 *   commit.c  atomic commits (checks, set, delete, sum)
 *
 * The engine holds the store's mutex around every backend call, so one
 * connection (opened SQLITE_OPEN_NOMUTEX) is used by one thread at a time.
 */
#ifndef BITT_SQLITE_INTERNAL_H
#define BITT_SQLITE_INTERNAL_H

#include <sqlite3.h>

#include "internal.h"

/* The schema version this library writes and understands. */
#define BITT_SQ_SCHEMA_VERSION 1
#define BITT_SQ_PREFIX_MAX 32

/* Every statement the backend runs, prepared once and kept for the
 * connection's life (reused with sqlite3_reset). The SQL lives in conn.c.
 * Those before SQ_FIRST_TABLE are prepared at open; the others, which name
 * bitt's tables, as soon as the schema is known to be there. */
typedef enum bitt_sq_id {
    SQ_BEGIN,           /* BEGIN (deferred: read snapshots) */
    SQ_BEGIN_IMMEDIATE, /* BEGIN IMMEDIATE (every write) */
    SQ_COMMIT,
    SQ_ROLLBACK,
    SQ_FIRST_TABLE,
    SQ_STAMP = SQ_FIRST_TABLE, /* takes the next versionstamp */
    SQ_GET,                    /* a live row by key: value, kind, version, expires_at */
    SQ_VERSION,                /* a live row's version */
    SQ_UPSERT,                 /* key, value, kind, version, expires_at */
    SQ_DELETE,                 /* by key, RETURNING value, kind, version, expires_at */
    SQ_LIST_ASC,               /* [lo, +inf), ascending */
    SQ_LIST_DESC,              /* [lo, +inf), descending */
    SQ_LIST_ASC_HI,            /* [lo, hi), ascending */
    SQ_LIST_DESC_HI,
    SQ_PURGE, /* deletes rows with expires_at <= now */
    SQ_COUNT
} bitt_sq_id;

struct bitt_backend {
    sqlite3 *db;
    char prefix[BITT_SQ_PREFIX_MAX + 1];
    int schema_ok; /* the schema was checked (or created) on this handle */
    int is_memory; /* ":memory:" */
    sqlite3_stmt *stmts[SQ_COUNT];
};

/* ---- conn.c ---------------------------------------------------------------- */

/* Prepares the statements [from, to) that are not prepared yet. */
int bitt__sq_prepare(bitt_backend *be, bitt_sq_id from, bitt_sq_id to);

/* Maps an SQLite result code to a bitt status (BUSY/LOCKED -> BITT_EBUSY,
 * NOMEM -> BITT_ENOMEM, anything else -> BITT_EBACKEND) and records a
 * message naming the operation and sqlite3_errmsg(). Returns the status. */
int bitt__sq_fail(bitt_backend *be, int rc, const char *what);

/* Runs a cached statement that returns no rows (BEGIN, COMMIT, ...). */
int bitt__sq_exec(bitt_backend *be, bitt_sq_id id, const char *what);
/* BEGIN IMMEDIATE / BEGIN; COMMIT (rolls back when COMMIT fails). */
int bitt__sq_begin_write(bitt_backend *be, const char *what);
int bitt__sq_begin_read(bitt_backend *be, const char *what);
int bitt__sq_commit(bitt_backend *be, const char *what);
/* Rolls back when a transaction is open; keeps the thread's error. */
void bitt__sq_rollback(bitt_backend *be);

/* Binds bytes as a BLOB (never NULL, even when empty), without copying:
 * the bytes must outlive the statement's next reset. */
static inline int bitt__sq_bind_bytes(sqlite3_stmt *st, int i, const void *p, size_t n)
{
    return sqlite3_bind_blob(st, i, n ? p : (const void *)"", (int)n, SQLITE_STATIC);
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

#endif /* BITT_SQLITE_INTERNAL_H */
