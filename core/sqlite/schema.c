/*
 * core/sqlite/schema.c: the SQLite schema, its migrations, and the check
 * that a database is bitt's and not newer than this library.
 *
 * Version 1:
 *   <p>meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL)
 *       'schema_version' (BITT_SQ_SCHEMA_VERSION) and the 'versionstamp'
 *       counter every commit increments
 *   <p>kv(key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL,
 *         version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID
 *       expires_at NULL = never; a partial index on the rows that expire
 * Version 2 adds (new tables only, so a version-1 file migrates in place):
 *   <p>queue     messages; state 0 pending, 1 processing, 2 dead. Indexes:
 *                (topic, state, due_at) (then id: the rowid) for claims,
 *                sweeps and stats;
 *                (topic, id) WHERE dead, for dead-letter pages; UNIQUE
 *                (topic, dedup_key) over the live messages that have one
 *   <p>lease     name -> owner (NULL = released), epoch, expires_at
 *   <p>outbox    (stream, seq) events; state 0 pending, 1 parked; index
 *                (stream, state, seq)
 *   <p>outbox_seq  the last sequence number handed out per stream
 *   <p>pubsub    the publish log: AUTOINCREMENT ids (never reused), kept
 *                until expires_at (publish time + retention); indexes
 *                (channel, id) for fetches and (expires_at) for pruning
 *   <p>budget    token buckets: level, updated_at, period_ms
 *   <p>schedule  key -> interval, payload, next_run_at; index (next_run_at,
 *                key) for claims
 *
 * Version 3 (priorities) alters a version-2 queue in place:
 *   <p>queue     gains priority INTEGER NOT NULL DEFAULT 0 (so every message
 *                it held has priority 0); the claim index becomes (topic,
 *                state, priority DESC, due_at) (then id), which also serves
 *                sweeps and stats, and replaces (topic, state, due_at)
 *
 * Version 4 (queue retention, cron and topic schedules) alters a version-3
 * file in place (ALTER TABLE ADD COLUMN, so every row keeps its meaning):
 *   <p>queue     gains done_at INTEGER (NULL until done), result BLOB (NULL =
 *                none) and result_kind INTEGER NOT NULL DEFAULT 0; state 3
 *                is done (acked and kept for queue_done_retention, no dedup
 *                key). Partial indexes (topic, done_at) WHERE done and
 *                (topic, failed_at) WHERE dead let a retention sweep find
 *                what outlived it without a scan; without retention no row
 *                is done, and the sweep runs no statement for it
 *   <p>schedule  gains cron TEXT (NULL: an interval schedule, interval_ms 0
 *                otherwise), topic TEXT (NULL: none), max_attempts INTEGER
 *                NOT NULL DEFAULT 1 and priority INTEGER NOT NULL DEFAULT 0
 *                (a version-3 schedule is an interval one without a topic)
 *
 * A table of one of those names without bitt's columns belongs to someone
 * else: it is refused, never altered. Migrations run in BEGIN IMMEDIATE,
 * so several processes may run them at once: one creates, the others find
 * it done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_internal.h"

enum { SQ_TABLE_MISSING, SQ_TABLE_OURS, SQ_TABLE_FOREIGN };

#define SQ_STR2(x) #x
#define SQ_STR(x) SQ_STR2(x)

/* bitt's tables and the columns that make one ours; meta and kv first. */
typedef struct sq_table {
    const char *suffix;
    const char *const *cols;
} sq_table;

static const char *const sq_meta_columns[] = {"name", "value", NULL};
static const char *const sq_kv_columns[] = {"key", "value", "kind", "version", "expires_at", NULL};
static const char *const sq_queue_columns[] = {
    "id",         "topic",   "state", "due_at",     "attempts",  "max_attempts", "token",
    "last_error", "payload", "kind",  "created_at", "failed_at", "dedup_key",    NULL};
static const char *const sq_lease_columns[] = {"name", "owner", "epoch", "expires_at", NULL};
static const char *const sq_outbox_columns[] = {
    "stream",          "seq",        "state",      "payload",   "kind",   "attempts",
    "next_attempt_at", "last_error", "created_at", "parked_at", "reason", NULL};
static const char *const sq_outbox_seq_columns[] = {"stream", "last", NULL};
static const char *const sq_pubsub_columns[] = {"id",         "channel",    "payload",
                                                "created_at", "expires_at", NULL};
static const char *const sq_budget_columns[] = {"name", "level", "updated_at", "period_ms", NULL};
static const char *const sq_schedule_columns[] = {"key",  "interval_ms", "payload",
                                                  "kind", "next_run_at", NULL};

static const sq_table sq_tables[] = {
    {"meta", sq_meta_columns},         {"kv", sq_kv_columns},
    {"queue", sq_queue_columns},       {"lease", sq_lease_columns},
    {"outbox", sq_outbox_columns},     {"outbox_seq", sq_outbox_seq_columns},
    {"pubsub", sq_pubsub_columns},     {"budget", sq_budget_columns},
    {"schedule", sq_schedule_columns},
};

enum { SQ_T_META, SQ_T_KV, SQ_T_COUNT = sizeof sq_tables / sizeof *sq_tables };

typedef struct sq_schema_info {
    int state[SQ_T_COUNT]; /* SQ_TABLE_* of each of sq_tables */
    long long version;     /* recorded schema version, 0 when none */
} sq_schema_info;

/* Whether the table prefix+suffix is missing, has every column of cols, or
 * is someone else's. */
static int sq_table_state(bitt_backend *be, const char *suffix, const char *const *cols, int *state)
{
    char name[BITT_SQ_PREFIX_MAX + 16];
    snprintf(name, sizeof name, "%s%s", be->prefix, suffix);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(be->db, "SELECT name FROM pragma_table_info(?1)", -1, &st, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        return bitt__sq_fail(be, rc, "reading the schema");
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    unsigned found = 0, ncols = 0;
    size_t want = 0;
    while (cols[want])
        want++;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(st, 0);
        ncols++;
        for (size_t i = 0; col && i < want; i++)
            if (sqlite3_stricmp(col, cols[i]) == 0)
                found |= 1u << i;
    }
    if (rc != SQLITE_DONE) {
        int status = bitt__sq_fail(be, rc, "reading the schema");
        sqlite3_finalize(st);
        return status;
    }
    sqlite3_finalize(st);
    if (ncols == 0)
        *state = SQ_TABLE_MISSING;
    else
        *state = found == (1u << want) - 1 ? SQ_TABLE_OURS : SQ_TABLE_FOREIGN;
    return BITT_OK;
}

static int sq_inspect(bitt_backend *be, sq_schema_info *info)
{
    info->version = 0;
    int status = BITT_OK;
    for (int i = 0; i < SQ_T_COUNT && status == BITT_OK; i++)
        status = sq_table_state(be, sq_tables[i].suffix, sq_tables[i].cols, &info->state[i]);
    if (status != BITT_OK || info->state[SQ_T_META] != SQ_TABLE_OURS)
        return status;

    char sql[128];
    snprintf(sql, sizeof sql, "SELECT value FROM \"%smeta\" WHERE name = 'schema_version'",
             be->prefix);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(be->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            info->version = sqlite3_column_int64(st, 0);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "reading the schema version");
    sqlite3_finalize(st);
    return status;
}

/* Refuses foreign tables and newer schemas; when !migrating, also a
 * schema that is missing or older (the caller must migrate first). */
static int sq_judge(bitt_backend *be, const sq_schema_info *info, int migrating)
{
    const char *p = be->prefix;
    for (int i = 0; i < SQ_T_COUNT; i++) {
        if (info->state[i] != SQ_TABLE_FOREIGN)
            continue;
        char cols[256] = "";
        for (const char *const *c = sq_tables[i].cols; *c; c++)
            snprintf(cols + strlen(cols), sizeof cols - strlen(cols), "%s%s",
                     c == sq_tables[i].cols ? "" : ", ", *c);
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: table \"%s%s\" exists without bitt's columns (%s); bitt never "
                          "alters it: choose another table_prefix",
                          p, sq_tables[i].suffix, cols);
    }
    /* bitt creates its tables and the version row in one transaction:
     * one without the other was made by someone else. */
    if (info->state[SQ_T_META] == SQ_TABLE_OURS && info->version == 0)
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: table \"%smeta\" exists but records no bitt schema version, so "
                          "it is not bitt's; bitt never alters it: choose another table_prefix",
                          p);
    if (info->state[SQ_T_META] == SQ_TABLE_MISSING)
        for (int i = 0; i < SQ_T_COUNT; i++)
            if (info->state[i] == SQ_TABLE_OURS)
                return bitt__fail(BITT_ESCHEMA,
                                  "sqlite: table \"%s%s\" exists without \"%smeta\", so it is not "
                                  "bitt's; bitt never alters it: choose another table_prefix",
                                  p, sq_tables[i].suffix, p);
    if (info->version > BITT_SQ_SCHEMA_VERSION)
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: the database has bitt schema version %lld, newer than this "
                          "library's version %d: upgrade bitt to use it",
                          info->version, BITT_SQ_SCHEMA_VERSION);
    int complete = info->version == BITT_SQ_SCHEMA_VERSION;
    for (int i = 0; i < SQ_T_COUNT; i++)
        complete = complete && info->state[i] == SQ_TABLE_OURS;
    if (!migrating && !complete)
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: the database is not migrated (schema version %lld, this "
                          "library needs %d): call bitt_store_migrate() or open with "
                          "auto_migrate=1",
                          info->version, BITT_SQ_SCHEMA_VERSION);
    return BITT_OK;
}

/* Creates whatever is missing and records the schema version: every
 * statement is idempotent, so a version-1 database gains the version-2
 * tables, a version-2 one the version-3 index and a version-3 one the
 * version-4 indexes, and nothing else changes. */
static const char sq_ddl[] =
    /* version 1 */
    "CREATE TABLE IF NOT EXISTS \"{p}meta\" ("
    "name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS \"{p}kv\" ("
    "key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL, "
    "version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS \"{p}kv_expires\" ON \"{p}kv\" (expires_at) "
    "WHERE expires_at IS NOT NULL;"
    "INSERT OR IGNORE INTO \"{p}meta\" (name, value) VALUES ('versionstamp', 0);"
    /* version 2 */
    "CREATE TABLE IF NOT EXISTS \"{p}queue\" ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, state INTEGER NOT NULL, "
    "due_at INTEGER NOT NULL, attempts INTEGER NOT NULL, max_attempts INTEGER NOT NULL, "
    "token TEXT, last_error TEXT, payload BLOB NOT NULL, kind INTEGER NOT NULL, "
    "created_at INTEGER NOT NULL, failed_at INTEGER NOT NULL, dedup_key BLOB, "
    "priority INTEGER NOT NULL DEFAULT 0, done_at INTEGER, result BLOB, "
    "result_kind INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS \"{p}queue_dead\" ON \"{p}queue\" (topic, id) WHERE state = 2;"
    "CREATE UNIQUE INDEX IF NOT EXISTS \"{p}queue_dedup\" ON \"{p}queue\" (topic, dedup_key) "
    "WHERE dedup_key IS NOT NULL AND state <> 2;"
    "CREATE TABLE IF NOT EXISTS \"{p}lease\" ("
    "name TEXT PRIMARY KEY, owner TEXT, epoch INTEGER NOT NULL, expires_at INTEGER NOT NULL) "
    "WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS \"{p}outbox\" ("
    "stream TEXT NOT NULL, seq INTEGER NOT NULL, state INTEGER NOT NULL, payload BLOB NOT NULL, "
    "kind INTEGER NOT NULL, attempts INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL, "
    "last_error TEXT, created_at INTEGER NOT NULL, parked_at INTEGER NOT NULL, "
    "reason INTEGER NOT NULL, PRIMARY KEY (stream, seq));"
    "CREATE INDEX IF NOT EXISTS \"{p}outbox_state\" ON \"{p}outbox\" (stream, state, seq);"
    "CREATE TABLE IF NOT EXISTS \"{p}outbox_seq\" ("
    "stream TEXT PRIMARY KEY, last INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS \"{p}pubsub\" ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, channel TEXT NOT NULL, payload BLOB NOT NULL, "
    "created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS \"{p}pubsub_channel\" ON \"{p}pubsub\" (channel, id);"
    "CREATE INDEX IF NOT EXISTS \"{p}pubsub_expires\" ON \"{p}pubsub\" (expires_at);"
    "CREATE TABLE IF NOT EXISTS \"{p}budget\" ("
    "name TEXT PRIMARY KEY, level INTEGER NOT NULL, updated_at INTEGER NOT NULL, "
    "period_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS \"{p}schedule\" ("
    "key TEXT PRIMARY KEY, interval_ms INTEGER NOT NULL, payload BLOB NOT NULL, "
    "kind INTEGER NOT NULL, next_run_at INTEGER NOT NULL, cron TEXT, topic TEXT, "
    "max_attempts INTEGER NOT NULL DEFAULT 1, priority INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS \"{p}schedule_due\" ON \"{p}schedule\" (next_run_at, key);"
    /* version 3 (a version-2 queue got its priority column first: sq_add_columns) */
    "CREATE INDEX IF NOT EXISTS \"{p}queue_pick\" ON \"{p}queue\" "
    "(topic, state, priority DESC, due_at);"
    "DROP INDEX IF EXISTS \"{p}queue_claim\";"
    /* version 4 (older tables got their columns first: sq_add_columns) */
    "CREATE INDEX IF NOT EXISTS \"{p}queue_done\" ON \"{p}queue\" (topic, done_at) "
    "WHERE state = 3;"
    "CREATE INDEX IF NOT EXISTS \"{p}queue_aging\" ON \"{p}queue\" (topic, failed_at) "
    "WHERE state = 2;"
    /* the version goes up, never down */
    "INSERT INTO \"{p}meta\" (name, value) VALUES ('schema_version', " SQ_STR(
        BITT_SQ_SCHEMA_VERSION) ") ON CONFLICT (name) DO UPDATE SET value = excluded.value "
                                "WHERE value < excluded.value;";

/* The columns later versions added to tables an older version made, in
 * order: ALTER TABLE adds each one a table lacks (every row reads its
 * default), which no IF NOT EXISTS can say. A table still missing is
 * created with them all by sq_ddl. */
typedef struct sq_added {
    const char *table;
    const char *column;
    const char *decl;
} sq_added;

static const sq_added sq_added_columns[] = {
    {"queue", "priority", "INTEGER NOT NULL DEFAULT 0"}, /* version 3 */
    {"queue", "done_at", "INTEGER"},                     /* version 4 */
    {"queue", "result", "BLOB"},
    {"queue", "result_kind", "INTEGER NOT NULL DEFAULT 0"},
    {"schedule", "cron", "TEXT"},
    {"schedule", "topic", "TEXT"},
    {"schedule", "max_attempts", "INTEGER NOT NULL DEFAULT 1"},
    {"schedule", "priority", "INTEGER NOT NULL DEFAULT 0"},
};

static int sq_add_columns(bitt_backend *be)
{
    for (size_t i = 0; i < sizeof sq_added_columns / sizeof *sq_added_columns; i++) {
        const sq_added *a = &sq_added_columns[i];
        const char *const cols[] = {a->column, NULL};
        int state;
        int status = sq_table_state(be, a->table, cols, &state);
        if (status != BITT_OK)
            return status;
        if (state != SQ_TABLE_FOREIGN) /* missing, or has the column */
            continue;
        char sql[192];
        snprintf(sql, sizeof sql, "ALTER TABLE \"%s%s\" ADD COLUMN %s %s", be->prefix, a->table,
                 a->column, a->decl);
        int rc = sqlite3_exec(be->db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            char what[96];
            snprintf(what, sizeof what, "migrate (adding column %s to %s%s)", a->column, be->prefix,
                     a->table);
            return bitt__sq_fail(be, rc, what);
        }
    }
    return BITT_OK;
}

static int sq_create(bitt_backend *be)
{
    int status = sq_add_columns(be);
    if (status != BITT_OK)
        return status;
    char *sql = bitt__sq_expand(sq_ddl, be->prefix);
    if (!sql)
        return bitt__fail(BITT_ENOMEM, "sqlite: out of memory migrating");
    int rc = sqlite3_exec(be->db, sql, NULL, NULL, NULL);
    free(sql);
    return rc == SQLITE_OK ? BITT_OK : bitt__sq_fail(be, rc, "migrate (creating tables)");
}

int bitt__sq_migrate(bitt_backend *be)
{
    /* A current schema is only read: opening a file while another process
     * holds the write lock (or is stopped mid-commit) must not wait for it.
     * The write lock is taken only when something is missing or wrong (a
     * refusal is judged again under it, with the same answer). */
    if (bitt__sq_schema_slow(be) == BITT_OK)
        return BITT_OK;
    bitt__error_reset();
    int status = bitt__sq_begin_write(be, "migrate (BEGIN IMMEDIATE)");
    if (status != BITT_OK)
        return status;
    sq_schema_info info;
    status = sq_inspect(be, &info);
    if (status == BITT_OK)
        status = sq_judge(be, &info, 1);
    if (status == BITT_OK)
        status = sq_create(be);
    if (status == BITT_OK)
        status = bitt__sq_commit(be, "migrate (COMMIT)");
    else
        bitt__sq_rollback(be);
    if (status == BITT_OK)
        status = bitt__sq_prepare(be, SQ_FIRST_TABLE, SQ_KV_END);
    be->schema_ok = status == BITT_OK;
    return status;
}

int bitt__sq_schema_slow(bitt_backend *be)
{
    int status = bitt__sq_begin_read(be, "reading the schema (BEGIN)");
    if (status != BITT_OK)
        return status;
    sq_schema_info info;
    status = sq_inspect(be, &info);
    if (status == BITT_OK)
        status = bitt__sq_commit(be, "reading the schema (COMMIT)");
    else
        bitt__sq_rollback(be);
    if (status == BITT_OK)
        status = sq_judge(be, &info, 0);
    if (status == BITT_OK)
        status = bitt__sq_prepare(be, SQ_FIRST_TABLE, SQ_KV_END);
    be->schema_ok = status == BITT_OK;
    return status;
}
