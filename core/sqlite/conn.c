/*
 * core/sqlite/conn.c: the SQLite connection: URL options, open and pragmas,
 * the prepared statement cache, error mapping, transactions, and the
 * backend's vtable.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_internal.h"

/* ---- statements ------------------------------------------------------------- */

/* The SQL of every cached statement; "{p}" stands for the table prefix. A
 * row is live iff expires_at IS NULL OR expires_at > now. */
#define SQ_LIVE "(expires_at IS NULL OR expires_at > ?2)"
#define SQ_LIST(hi, order)                                                                         \
    "SELECT key, value, kind, version, expires_at FROM \"{p}kv\" WHERE key >= ?1" hi               \
    " AND (expires_at IS NULL OR expires_at > ?3) ORDER BY key " order " LIMIT ?4"

static const char *const sq_sql[SQ_KV_END] = {
    [SQ_BEGIN] = "BEGIN",
    [SQ_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    /* Not one UPDATE ... RETURNING: SQLite buffers RETURNING rows in an
     * ephemeral table, and opening and closing it cost a fifth of a
     * one-key commit (callgrind). The write lock makes the pair atomic. */
    [SQ_STAMP] = "UPDATE \"{p}meta\" SET value = value + 1 WHERE name = 'versionstamp'",
    [SQ_STAMP_READ] = "SELECT value FROM \"{p}meta\" WHERE name = 'versionstamp'",
    [SQ_GET] = "SELECT value, kind, version, expires_at FROM \"{p}kv\" WHERE key = ?1 "
               "AND " SQ_LIVE,
    [SQ_VERSION] = "SELECT version FROM \"{p}kv\" WHERE key = ?1 AND " SQ_LIVE,
    [SQ_UPSERT] = "INSERT INTO \"{p}kv\" (key, value, kind, version, expires_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key) DO UPDATE SET "
                  "value = excluded.value, kind = excluded.kind, "
                  "version = excluded.version, expires_at = excluded.expires_at",
    /* A delete reads the row, then deletes it: DELETE ... RETURNING
     * would buffer the row in an ephemeral table, as for the stamp. */
    [SQ_PEEK] = "SELECT value, kind, version, expires_at FROM \"{p}kv\" WHERE key = ?1",
    [SQ_DELETE] = "DELETE FROM \"{p}kv\" WHERE key = ?1",
    [SQ_LIST_ASC] = SQ_LIST("", "ASC"),
    [SQ_LIST_DESC] = SQ_LIST("", "DESC"),
    [SQ_LIST_ASC_HI] = SQ_LIST(" AND key < ?2", "ASC"),
    [SQ_LIST_DESC_HI] = SQ_LIST(" AND key < ?2", "DESC"),
    [SQ_PURGE] = "DELETE FROM \"{p}kv\" WHERE expires_at IS NOT NULL AND expires_at <= ?1",
};

char *bitt__sq_expand(const char *tmpl, const char *prefix)
{
    size_t plen = strlen(prefix), n = 0;
    for (const char *s = tmpl; *s; s++)
        n += strncmp(s, "{p}", 3) == 0 ? plen : 1;
    char *out = bitt__malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *s = tmpl; *s;) {
        if (strncmp(s, "{p}", 3) == 0) {
            memcpy(o, prefix, plen);
            o += plen;
            s += 3;
        } else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

int bitt__sq_prepare(bitt_backend *be, bitt_sq_id from, bitt_sq_id to)
{
    for (int id = from; id < (int)to && id < SQ_KV_END; id++) {
        if (be->stmts[id])
            continue;
        char *sql = bitt__sq_expand(sq_sql[id], be->prefix);
        if (!sql)
            return bitt__fail(BITT_ENOMEM, "sqlite: out of memory preparing a statement");
        int rc =
            sqlite3_prepare_v3(be->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &be->stmts[id], NULL);
        free(sql);
        if (rc != SQLITE_OK) {
            int status = bitt__sq_fail(be, rc, "preparing a statement");
            sqlite3_finalize(be->stmts[id]);
            be->stmts[id] = NULL;
            return status;
        }
    }
    return BITT_OK;
}

int bitt__sq_stmt(bitt_backend *be, bitt_sq_id id, const char *tmpl, sqlite3_stmt **out)
{
    if ((*out = be->stmts[id]) != NULL)
        return BITT_OK;
    char *sql = bitt__sq_expand(tmpl, be->prefix);
    if (!sql)
        return bitt__fail(BITT_ENOMEM, "sqlite: out of memory preparing a statement");
    int rc = sqlite3_prepare_v3(be->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &be->stmts[id], NULL);
    free(sql);
    if (rc != SQLITE_OK) {
        int status = bitt__sq_fail(be, rc, "preparing a statement");
        sqlite3_finalize(be->stmts[id]);
        be->stmts[id] = NULL;
        return status;
    }
    *out = be->stmts[id];
    return BITT_OK;
}

/* ---- errors and transactions ------------------------------------------------ */

int bitt__sq_fail(bitt_backend *be, int rc, const char *what)
{
    int code;
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: code = BITT_EBUSY; break;
    case SQLITE_NOMEM: code = BITT_ENOMEM; break;
    default: code = BITT_EBACKEND; break;
    }
    const char *msg = be && be->db ? sqlite3_errmsg(be->db) : sqlite3_errstr(rc);
    return bitt__fail(code, "sqlite: %s failed: %s (code %d)", what, msg, rc);
}

int bitt__sq_exec(bitt_backend *be, bitt_sq_id id, const char *what)
{
    sqlite3_stmt *st = be->stmts[id];
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
        sqlite3_reset(st);
        return BITT_OK;
    }
    int status = bitt__sq_fail(be, rc, what);
    sqlite3_reset(st);
    return status;
}

int bitt__sq_run(bitt_backend *be, sqlite3_stmt *st, int bind_rc, const char *what,
                 uint64_t *changes)
{
    int rc = bind_rc;
    if (rc == SQLITE_OK)
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            ;
    int status = rc == SQLITE_DONE ? BITT_OK : bitt__sq_fail(be, rc, what);
    sqlite3_reset(st);
    if (changes)
        *changes = status == BITT_OK ? (uint64_t)sqlite3_changes(be->db) : 0;
    return status;
}

void bitt__sq_rollback(bitt_backend *be)
{
    if (sqlite3_get_autocommit(be->db))
        return; /* nothing open (or SQLite already rolled back) */
    sqlite3_stmt *st = be->stmts[SQ_ROLLBACK];
    if (st) {
        sqlite3_step(st);
        sqlite3_reset(st);
    }
    if (!sqlite3_get_autocommit(be->db))
        sqlite3_exec(be->db, "ROLLBACK", NULL, NULL, NULL);
}

int bitt__sq_begin_write(bitt_backend *be, const char *what)
{
    return bitt__sq_exec(be, SQ_BEGIN_IMMEDIATE, what);
}

int bitt__sq_begin_read(bitt_backend *be, const char *what)
{
    return bitt__sq_exec(be, SQ_BEGIN, what);
}

int bitt__sq_commit(bitt_backend *be, const char *what)
{
    int status = bitt__sq_exec(be, SQ_COMMIT, what);
    if (status != BITT_OK)
        bitt__sq_rollback(be);
    return status;
}

int bitt__sq_end(bitt_backend *be, int status, const char *what)
{
    if (status < 0) {
        bitt__sq_rollback(be);
        return status;
    }
    int rc = bitt__sq_commit(be, what);
    return rc != BITT_OK ? rc : status;
}

int bitt__sq_write(bitt_backend *be, const char *what)
{
    int status = bitt__sq_schema(be);
    return status != BITT_OK ? status : bitt__sq_begin_write(be, what);
}

/* ---- options ----------------------------------------------------------------- */

typedef struct sq_options {
    int64_t busy_timeout;
    int64_t cache_size;
    const char *synchronous;
    const char *prefix;
} sq_options;

static int sq_read_options(bitt_url *url, sq_options *o)
{
    /* The engine refuses any option nobody read: fetch them all. */
    const char *sync = bitt__url_param(url, "synchronous");
    const char *prefix = bitt__url_param(url, "table_prefix");
    int rc1 = bitt__url_param_int(url, "busy_timeout", 0, INT_MAX, 5000, &o->busy_timeout);
    if (rc1 != BITT_OK)
        return rc1;
    int rc2 = bitt__url_param_int(url, "cache_size", 0, INT_MAX, 65536, &o->cache_size);
    if (rc2 != BITT_OK)
        return rc2;

    if (!sync || strcmp(sync, "normal") == 0)
        o->synchronous = "NORMAL";
    else if (strcmp(sync, "off") == 0)
        o->synchronous = "OFF";
    else if (strcmp(sync, "full") == 0)
        o->synchronous = "FULL";
    else
        return bitt__fail(BITT_EURL, "sqlite: synchronous must be off, normal or full");

    o->prefix = prefix ? prefix : "";
    size_t n = strlen(o->prefix);
    if (n > BITT_SQ_PREFIX_MAX)
        return bitt__fail(BITT_EURL, "sqlite: table_prefix is longer than %d characters",
                          BITT_SQ_PREFIX_MAX);
    for (size_t i = 0; i < n; i++) {
        char ch = o->prefix[i];
        int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                 ch == '_';
        if (!ok)
            return bitt__fail(BITT_EURL,
                              "sqlite: table_prefix may hold only letters, digits and '_' "
                              "(it is part of table names)");
    }
    return BITT_OK;
}

/* ---- open and close ------------------------------------------------------------ */

/* Runs one pragma; with busy_ms > 0, retries while the database is busy
 * (setting journal_mode=WAL takes a lock the busy handler does not wait
 * for). */
static int sq_pragma(bitt_backend *be, const char *sql, int busy_ms)
{
    int waited = 0;
    for (;;) {
        int rc = sqlite3_exec(be->db, sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return BITT_OK;
        if ((rc & 0xff) == SQLITE_BUSY && waited < busy_ms) {
            sqlite3_sleep(10);
            waited += 10;
            continue;
        }
        char what[160];
        snprintf(what, sizeof what, "open (%s)", sql);
        return bitt__sq_fail(be, rc, what);
    }
}

static void sq_close(bitt_backend *be)
{
    if (!be)
        return;
    if (be->db)
        bitt__sq_rollback(be);
    for (int i = 0; i < SQ_COUNT; i++)
        sqlite3_finalize(be->stmts[i]);
    sqlite3_close(be->db); /* a harmless no-op on NULL */
    free(be);
}

static int sq_open(bitt_url *url, const bitt_limits *limits, bitt_backend **out)
{
    /* the engine applies the size limits; the queue keeps the retentions */
    *out = NULL;
    sq_options o;
    int status = sq_read_options(url, &o);
    /* The whole URL is checked before the file is opened: a refused URL
     * never leaves an empty database behind. */
    if (status == BITT_OK)
        status = bitt__url_check_all_used(url);
    if (status != BITT_OK)
        return status;
    const char *path = url->rest ? url->rest : "";
    if (!*path)
        return bitt__fail(BITT_EURL, "sqlite: the URL needs a path (sqlite:FILE or "
                                     "sqlite::memory:)");

    bitt_backend *be = bitt__calloc(1, sizeof *be);
    if (!be)
        return bitt__fail(BITT_ENOMEM, "sqlite: out of memory");
    memcpy(be->prefix, o.prefix, strlen(o.prefix) + 1);
    be->is_memory = strcmp(path, ":memory:") == 0;
    be->done_retention_ms = limits->queue_done_retention_ms;
    be->dead_retention_ms = limits->queue_dead_retention_ms;

    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &be->db, flags, NULL);
    if (rc != SQLITE_OK) {
        status = be->db ? bitt__fail(rc == SQLITE_NOMEM ? BITT_ENOMEM : BITT_EBACKEND,
                                     "sqlite: cannot open \"%s\": %s (code %d)", path,
                                     sqlite3_errmsg(be->db), rc)
                        : bitt__fail(BITT_ENOMEM, "sqlite: out of memory opening \"%s\"", path);
        sq_close(be);
        return status;
    }
    sqlite3_busy_timeout(be->db, (int)o.busy_timeout);

    char sql[96];
    status = bitt__sq_prepare(be, 0, SQ_FIRST_TABLE);
    if (status == BITT_OK && !be->is_memory)
        status = sq_pragma(be, "PRAGMA journal_mode = WAL", (int)o.busy_timeout);
    if (status == BITT_OK) {
        snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", o.synchronous);
        status = sq_pragma(be, sql, 0);
    }
    if (status == BITT_OK) {
        snprintf(sql, sizeof sql, "PRAGMA cache_size = -%lld", (long long)o.cache_size);
        status = sq_pragma(be, sql, 0);
    }
    if (status != BITT_OK) {
        sq_close(be);
        return status;
    }
    *out = be;
    return BITT_OK;
}

static int sq_migrate(bitt_backend *be)
{
    return bitt__sq_migrate(be);
}

const bitt_backend_ops bitt__sqlite_backend = {
    .version = BITT_BACKEND_OPS_VERSION,
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .migrate = sq_migrate,
    .kv_get = bitt__sq_kv_get,
    .kv_get_many = bitt__sq_kv_get_many,
    .kv_list = bitt__sq_kv_list,
    .commit = bitt__sq_commit_ops,
    .kv_purge = bitt__sq_kv_purge,
    .queue_claim = bitt__sq_queue_claim,
    .queue_ack = bitt__sq_queue_ack,
    .queue_nack = bitt__sq_queue_nack,
    .queue_extend = bitt__sq_queue_extend,
    .queue_snooze = bitt__sq_queue_snooze,
    .queue_dead_list = bitt__sq_queue_dead_list,
    .queue_dead_retry = bitt__sq_queue_dead_retry,
    .queue_dead_delete = bitt__sq_queue_dead_delete,
    .queue_stats = bitt__sq_queue_stats,
    .lease_acquire = bitt__sq_lease_acquire,
    .lease_renew = bitt__sq_lease_renew,
    .lease_release = bitt__sq_lease_release,
    .lease_get = bitt__sq_lease_get,
    .outbox_pending = bitt__sq_outbox_pending,
    .outbox_ack = bitt__sq_outbox_ack,
    .outbox_fail = bitt__sq_outbox_fail,
    .outbox_park = bitt__sq_outbox_park,
    .outbox_parked = bitt__sq_outbox_parked,
    .outbox_retry = bitt__sq_outbox_retry,
    .outbox_discard = bitt__sq_outbox_discard,
    .outbox_counts = bitt__sq_outbox_counts,
    .pubsub_publish = bitt__sq_pubsub_publish,
    .pubsub_head = bitt__sq_pubsub_head,
    .pubsub_fetch = bitt__sq_pubsub_fetch,
    .budget_take = bitt__sq_budget_take,
    /* schedule_upsert and schedule_claim: replaced by schedule_set and
     * schedule_due (version 7) */
    .schedule_get = bitt__sq_schedule_get,
    .schedule_list = bitt__sq_schedule_list,
    .schedule_delete = bitt__sq_schedule_delete,
    .queue_ack_many = bitt__sq_queue_ack_many,
    .queue_claim_topics = bitt__sq_queue_claim_topics,
    .queue_get = bitt__sq_queue_get,

    .queue_purge = bitt__sq_queue_purge,
    .schedule_set = bitt__sq_schedule_set,
    .schedule_due = bitt__sq_schedule_due,
};
