/*
 * core/sqlite/schema.c: the SQLite schema, its migrations, and the check
 * that a database is bitt's and not newer than this library.
 *
 *   <p>meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL)
 *       'schema_version' (BITT_SQ_SCHEMA_VERSION) and the 'versionstamp'
 *       counter every commit increments
 *   <p>kv(key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL,
 *         version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID
 *       expires_at NULL = never; a partial index on the rows that expire
 *
 * A table of that name without bitt's columns belongs to someone else: it
 * is refused, never altered. Migrations run in BEGIN IMMEDIATE, so several
 * processes may run them at once: one creates, the others find it done.
 */
#include <stdio.h>
#include <string.h>

#include "sqlite_internal.h"

enum { SQ_TABLE_MISSING, SQ_TABLE_OURS, SQ_TABLE_FOREIGN };

typedef struct sq_schema_info {
    int meta;          /* SQ_TABLE_* */
    int kv;            /* SQ_TABLE_* */
    long long version; /* recorded schema version, 0 when none */
} sq_schema_info;

static const char *const sq_meta_columns[] = {"name", "value", NULL};
static const char *const sq_kv_columns[] = {"key", "value", "kind", "version", "expires_at", NULL};

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
    int status = sq_table_state(be, "meta", sq_meta_columns, &info->meta);
    if (status == BITT_OK)
        status = sq_table_state(be, "kv", sq_kv_columns, &info->kv);
    if (status != BITT_OK || info->meta != SQ_TABLE_OURS)
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
    if (info->meta == SQ_TABLE_FOREIGN)
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: table \"%smeta\" exists without bitt's columns (name, value); "
                          "bitt never alters it: choose another table_prefix",
                          be->prefix);
    if (info->kv == SQ_TABLE_FOREIGN)
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: table \"%skv\" exists without bitt's columns (key, value, "
                          "kind, version, expires_at); bitt never alters it: choose another "
                          "table_prefix",
                          be->prefix);
    /* bitt creates both tables and the version row in one transaction:
     * one without the other was made by someone else. */
    if (info->meta == SQ_TABLE_OURS && info->version == 0)
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: table \"%smeta\" exists but records no bitt schema version, so "
                          "it is not bitt's; bitt never alters it: choose another table_prefix",
                          be->prefix);
    if (info->meta == SQ_TABLE_MISSING && info->kv == SQ_TABLE_OURS)
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: table \"%skv\" exists without \"%smeta\", so it is not "
                          "bitt's; bitt never alters it: choose another table_prefix",
                          be->prefix, be->prefix);
    if (info->version > BITT_SQ_SCHEMA_VERSION)
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: the database has bitt schema version %lld, newer than this "
                          "library's version %d: upgrade bitt to use it",
                          info->version, BITT_SQ_SCHEMA_VERSION);
    if (!migrating && (info->meta != SQ_TABLE_OURS || info->kv != SQ_TABLE_OURS ||
                       info->version < BITT_SQ_SCHEMA_VERSION))
        return bitt__fail(BITT_ESCHEMA,
                          "sqlite: the database is not migrated (schema version %lld, this "
                          "library needs %d): call bitt_store_migrate() or open with "
                          "auto_migrate=1",
                          info->version, BITT_SQ_SCHEMA_VERSION);
    return BITT_OK;
}

/* Creates whatever is missing and records the schema version. */
static int sq_create(bitt_backend *be)
{
    const char *p = be->prefix;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "CREATE TABLE IF NOT EXISTS \"%smeta\" ("
             "name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
             "CREATE TABLE IF NOT EXISTS \"%skv\" ("
             "key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL, "
             "version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID;"
             "CREATE INDEX IF NOT EXISTS \"%skv_expires\" ON \"%skv\" (expires_at) "
             "WHERE expires_at IS NOT NULL;"
             "INSERT OR IGNORE INTO \"%smeta\" (name, value) VALUES ('versionstamp', 0);"
             "INSERT INTO \"%smeta\" (name, value) VALUES ('schema_version', %d) "
             "ON CONFLICT (name) DO UPDATE SET value = excluded.value "
             "WHERE value < excluded.value;",
             p, p, p, p, p, p, BITT_SQ_SCHEMA_VERSION);
    int rc = sqlite3_exec(be->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? BITT_OK : bitt__sq_fail(be, rc, "migrate (creating tables)");
}

int bitt__sq_migrate(bitt_backend *be)
{
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
        status = bitt__sq_prepare(be, SQ_FIRST_TABLE, SQ_COUNT);
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
        status = bitt__sq_prepare(be, SQ_FIRST_TABLE, SQ_COUNT);
    be->schema_ok = status == BITT_OK;
    return status;
}
