/*
 * core/postgres/schema.c: the PostgreSQL schema, its migrations, and the
 * check that the tables are bitt's and not newer than this library.
 *
 * Version 1 (in the URL's schema, every name prefixed by table_prefix):
 *   meta(name, value)      'schema_version'
 *   kv(key bytea PRIMARY KEY, value bytea, kind, version, expires_at)
 *                          expires_at NULL = never; a partial index on the
 *                          rows that expire; sequence versionstamp
 *   queue                  messages: state 0 pending, 1 processing, 2 dead.
 *                          Partial indexes: (topic, due_at, id) over the
 *                          live ones (claims, in claim order; version 2
 *                          replaces it), (topic,
 *                          due_at) over processing last attempts (the
 *                          sweep), (topic, id) over the dead; UNIQUE
 *                          (topic, dedup_key) over the messages holding one
 *   lease(name, owner, epoch, expires_at)   owner NULL = released
 *   outbox(stream, seq, state, ...)   state 0 pending, 1 parked
 *   outbox_seq(stream, last)          the last sequence per stream
 *   pubsub(id, channel, payload, created_at)   ids from sequence pubsub_id
 *   budget(name, level, updated_at, period_ms)
 *   schedule(key, interval_ms, payload, kind, next_run_at)
 * Version 2: queue.priority (int4, default 0, so version 1's messages
 *   keep their order), and the claim index (topic, priority DESC, due_at,
 *   id) over the live messages replaces version 1's (topic, due_at, id).
 *   A relation is still recognized as ours by version 1's columns, so a
 *   version 1 queue is migrated, not refused.
 * Version 3: queue retention and cron/topic schedules. queue.done_at,
 *   result, result_kind (state 3 = done, kept by an ack with done
 *   retention), and two partial indexes for the retention sweep: (topic,
 *   done_at) over the done rows, (topic, failed_at) over the dead ones.
 *   Without retention no row is done (the first index stays empty) and no
 *   statement reads either. schedule.cron (NULL: an interval schedule),
 *   topic (NULL: none), max_attempts and priority (for the topic's
 *   messages; an older schedule reads the defaults).
 * Names (topics, streams, ...) are text COLLATE "C": byte order, as in
 * memory and SQLite.
 *
 * A relation of one of those names without bitt's columns belongs to
 * someone else: it is refused, never altered. Migrations run in one
 * transaction under pg_advisory_xact_lock(a key of the schema), so several
 * processes may run them at once: one creates, the others find it done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

#define STR2(x) #x
#define STR(x) STR2(x)

enum { T_MISSING, T_OURS, T_FOREIGN };

typedef struct pg_rel {
    const char *suffix;
    char kind; /* 'r' table, 'S' sequence */
    const char *cols;
} pg_rel;

/* bitt's relations and the columns that make one ours: version 1's, so
 * that an older schema is recognized and migrated. meta first. */
static const pg_rel rels[] = {
    {"meta", 'r', "name value"},
    {"kv", 'r', "key value kind version expires_at"},
    {"queue", 'r',
     "id topic state due_at attempts max_attempts token last_error payload kind created_at "
     "failed_at dedup_key"},
    {"lease", 'r', "name owner epoch expires_at"},
    {"outbox", 'r',
     "stream seq state payload kind attempts next_attempt_at last_error created_at parked_at "
     "reason"},
    {"outbox_seq", 'r', "stream last"},
    {"pubsub", 'r', "id channel payload created_at"},
    {"budget", 'r', "name level updated_at period_ms"},
    {"schedule", 'r', "key interval_ms payload kind next_run_at"},
    {"versionstamp", 'S', ""},
    {"pubsub_id", 'S', ""},
};
#define NRELS (sizeof rels / sizeof *rels)

typedef struct schema_info {
    int state[NRELS];
    long long version; /* 0 when none */
} schema_info;

static const char sql_rels[] =
    "SELECT c.relname::text, c.relkind::text, a.attname::text "
    "FROM pg_catalog.pg_class c "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
    "AND NOT a.attisdropped "
    "WHERE n.nspname = $1::text AND c.relname = ANY($2::text[])";
static const char sql_version[] = "SELECT value FROM @meta WHERE name = 'schema_version'";
static const char sql_ns[] = "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1::text";

/* Whether the space-separated list cols names col. */
static int has_word(const char *cols, const char *col, size_t n)
{
    for (const char *s = cols; *s;) {
        size_t len = strcspn(s, " ");
        if (len == n && !strncmp(s, col, n))
            return 1;
        s += len;
        s += *s == ' ';
    }
    return 0;
}

static size_t word_count(const char *cols)
{
    size_t n = 0;
    for (const char *s = cols; *s;) {
        size_t len = strcspn(s, " ");
        n += len > 0;
        s += len;
        s += *s == ' ';
    }
    return n;
}

static int inspect(bitt_backend *be, schema_info *info)
{
    memset(info, 0, sizeof *info);
    char names[NRELS][BITT_PG_PREFIX_MAX + 16];
    const char *list[NRELS];
    for (size_t i = 0; i < NRELS; i++) {
        snprintf(names[i], sizeof names[i], "%s%s", be->prefix, rels[i].suffix);
        list[i] = names[i];
    }
    bitt_buf arr = BITT_BUF_INIT;
    int status = bitt__pg_array_text(&arr, list, NRELS);
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, be->schema);
    bitt__pg_p_bytes(&p, arr.ptr, arr.len);
    PGresult *res = NULL;
    if (!status)
        status = bitt__pg_run1(be, PG_SCHEMA_RELS, sql_rels, &p, &res, "reading the schema");
    bitt_buf_dispose(&arr);
    if (status)
        return status;
    size_t found[NRELS] = {0};
    int seen[NRELS] = {0}, wrong_kind[NRELS] = {0};
    for (int r = 0; r < PQntuples(res); r++) {
        const char *rel = bitt__pg_text(res, r, 0), *kind = bitt__pg_text(res, r, 1);
        const char *col = bitt__pg_text(res, r, 2);
        for (size_t i = 0; i < NRELS; i++) {
            if (strcmp(rel, names[i]))
                continue;
            seen[i] = 1;
            int kind_ok =
                rels[i].kind == 'r' ? (kind[0] == 'r' || kind[0] == 'p') : kind[0] == rels[i].kind;
            wrong_kind[i] |= !kind_ok;
            if (col && rels[i].kind == 'r' && has_word(rels[i].cols, col, strlen(col)))
                found[i]++;
        }
    }
    PQclear(res);
    for (size_t i = 0; i < NRELS; i++) {
        if (!seen[i])
            info->state[i] = T_MISSING;
        else if (wrong_kind[i] || found[i] != word_count(rels[i].cols))
            info->state[i] = T_FOREIGN;
        else
            info->state[i] = T_OURS;
    }
    if (info->state[0] != T_OURS)
        return BITT_OK;
    status =
        bitt__pg_run1(be, PG_SCHEMA_VERSION, sql_version, NULL, &res, "reading the schema version");
    if (status)
        return status;
    if (PQntuples(res) > 0)
        info->version = bitt__pg_i64(res, 0, 0);
    PQclear(res);
    return BITT_OK;
}

/* Refuses foreign relations and newer schemas; when !migrating, also a
 * schema that is missing or older. */
static int judge(const bitt_backend *be, const schema_info *info, int migrating)
{
    const char *s = be->schema, *p = be->prefix;
    for (size_t i = 0; i < NRELS; i++)
        if (info->state[i] == T_FOREIGN)
            return bitt__fail(BITT_ESCHEMA,
                              "postgres: \"%s\".\"%s%s\" exists but is not bitt's (%s%s); bitt "
                              "never alters it: choose another schema or table_prefix",
                              s, p, rels[i].suffix, rels[i].kind == 'S' ? "a sequence" : "columns ",
                              rels[i].cols);
    if (info->state[0] == T_OURS && info->version == 0)
        return bitt__fail(BITT_ESCHEMA,
                          "postgres: \"%s\".\"%smeta\" records no bitt schema version, so it is "
                          "not bitt's; bitt never alters it: choose another schema or "
                          "table_prefix",
                          s, p);
    if (info->state[0] == T_MISSING)
        for (size_t i = 1; i < NRELS; i++)
            if (info->state[i] == T_OURS && rels[i].kind == 'r')
                return bitt__fail(BITT_ESCHEMA,
                                  "postgres: \"%s\".\"%s%s\" exists without \"%smeta\", so it is "
                                  "not bitt's; bitt never alters it: choose another schema or "
                                  "table_prefix",
                                  s, p, rels[i].suffix, p);
    if (info->version > BITT_PG_SCHEMA_VERSION)
        return bitt__fail(BITT_ESCHEMA,
                          "postgres: \"%s\" has bitt schema version %lld, newer than this "
                          "library's version %d: upgrade bitt to use it",
                          s, info->version, BITT_PG_SCHEMA_VERSION);
    int complete = info->version == BITT_PG_SCHEMA_VERSION;
    for (size_t i = 0; i < NRELS; i++)
        complete = complete && info->state[i] == T_OURS;
    if (!migrating && !complete)
        return bitt__fail(BITT_ESCHEMA,
                          "postgres: schema \"%s\" is not migrated (bitt schema version %lld, "
                          "this library needs %d): call bitt_store_migrate() or open with "
                          "auto_migrate=1",
                          s, info->version, BITT_PG_SCHEMA_VERSION);
    return complete ? BITT_OK : BITT_NOTFOUND; /* NOTFOUND: work to do */
}

/* Creates whatever is missing and records the version; every statement is
 * idempotent, so one text brings an empty schema or any older version to
 * the current one. Version 1's statements come first, then each later
 * version's. */
static const char ddl[] =
    "CREATE TABLE IF NOT EXISTS @meta (name text COLLATE \"C\" PRIMARY KEY, "
    "value bigint NOT NULL);"
    "CREATE TABLE IF NOT EXISTS @kv (key bytea PRIMARY KEY, value bytea NOT NULL, "
    "kind integer NOT NULL, version bigint NOT NULL, expires_at bigint);"
    "CREATE INDEX IF NOT EXISTS #kv_expires ON @kv (expires_at) WHERE expires_at IS NOT NULL;"
    "CREATE SEQUENCE IF NOT EXISTS @versionstamp;"
    "CREATE TABLE IF NOT EXISTS @queue (id bigserial PRIMARY KEY, "
    "topic text COLLATE \"C\" NOT NULL, state smallint NOT NULL, due_at bigint NOT NULL, "
    "attempts bigint NOT NULL, max_attempts bigint NOT NULL, token text, last_error text, "
    "payload bytea NOT NULL, kind integer NOT NULL, created_at bigint NOT NULL, "
    "failed_at bigint NOT NULL, dedup_key bytea);"
    "CREATE INDEX IF NOT EXISTS #queue_last ON @queue (topic, due_at) "
    "WHERE state = 1 AND attempts >= max_attempts;"
    "CREATE INDEX IF NOT EXISTS #queue_dead ON @queue (topic, id) WHERE state = 2;"
    "CREATE UNIQUE INDEX IF NOT EXISTS #queue_dedup ON @queue (topic, dedup_key) "
    "WHERE dedup_key IS NOT NULL;"
    "CREATE TABLE IF NOT EXISTS @lease (name text COLLATE \"C\" PRIMARY KEY, owner text, "
    "epoch bigint NOT NULL, expires_at bigint NOT NULL);"
    "CREATE TABLE IF NOT EXISTS @outbox (stream text COLLATE \"C\" NOT NULL, "
    "seq bigint NOT NULL, state smallint NOT NULL, payload bytea NOT NULL, "
    "kind integer NOT NULL, attempts bigint NOT NULL, next_attempt_at bigint NOT NULL, "
    "last_error text, created_at bigint NOT NULL, parked_at bigint NOT NULL, "
    "reason integer NOT NULL, PRIMARY KEY (stream, seq));"
    "CREATE INDEX IF NOT EXISTS #outbox_state ON @outbox (stream, state, seq);"
    "CREATE TABLE IF NOT EXISTS @outbox_seq (stream text COLLATE \"C\" PRIMARY KEY, "
    "last bigint NOT NULL);"
    "CREATE TABLE IF NOT EXISTS @pubsub (id bigint PRIMARY KEY, "
    "channel text COLLATE \"C\" NOT NULL, payload bytea NOT NULL, created_at bigint NOT NULL);"
    "CREATE SEQUENCE IF NOT EXISTS @pubsub_id;"
    "CREATE INDEX IF NOT EXISTS #pubsub_channel ON @pubsub (channel, id);"
    "CREATE INDEX IF NOT EXISTS #pubsub_created ON @pubsub (created_at);"
    "CREATE TABLE IF NOT EXISTS @budget (name text COLLATE \"C\" PRIMARY KEY, "
    "level bigint NOT NULL, updated_at bigint NOT NULL, period_ms bigint NOT NULL);"
    "CREATE TABLE IF NOT EXISTS @schedule (key text COLLATE \"C\" PRIMARY KEY, "
    "interval_ms bigint NOT NULL, payload bytea NOT NULL, kind integer NOT NULL, "
    "next_run_at bigint NOT NULL);"
    "CREATE INDEX IF NOT EXISTS #schedule_due ON @schedule (next_run_at, key);"
    /* version 2: priorities. ADD COLUMN with a constant default rewrites
     * nothing; the new index is built once, in the migration's
     * transaction. The old claim index would only slow writes down. */
    "ALTER TABLE @queue ADD COLUMN IF NOT EXISTS priority integer NOT NULL DEFAULT 0;"
    "CREATE INDEX IF NOT EXISTS #queue_claim ON @queue (topic, priority DESC, due_at, id) "
    "WHERE state < 2;"
    "DROP INDEX IF EXISTS @queue_ready;"
    /* version 3: retention and cron/topic schedules; as in version 2, the
     * added columns rewrite nothing and the indexes are built once. */
    "ALTER TABLE @queue ADD COLUMN IF NOT EXISTS done_at bigint;"
    "ALTER TABLE @queue ADD COLUMN IF NOT EXISTS result bytea;"
    "ALTER TABLE @queue ADD COLUMN IF NOT EXISTS result_kind integer NOT NULL DEFAULT 0;"
    "CREATE INDEX IF NOT EXISTS #queue_done ON @queue (topic, done_at) WHERE state = 3;"
    "CREATE INDEX IF NOT EXISTS #queue_aging ON @queue (topic, failed_at) WHERE state = 2;"
    "ALTER TABLE @schedule ADD COLUMN IF NOT EXISTS cron text COLLATE \"C\";"
    "ALTER TABLE @schedule ADD COLUMN IF NOT EXISTS topic text COLLATE \"C\";"
    "ALTER TABLE @schedule ADD COLUMN IF NOT EXISTS max_attempts bigint NOT NULL DEFAULT " STR(
        BITT_MAX_ATTEMPTS_DEFAULT) ";"
                                   "ALTER TABLE @schedule ADD COLUMN IF NOT EXISTS priority "
                                   "integer NOT NULL DEFAULT 0;"
                                   /* the version goes up, never down */
                                   "INSERT INTO @meta AS m (name, value) VALUES "
                                   "('schema_version', " STR(
                                       BITT_PG_SCHEMA_VERSION) ") ON CONFLICT (name) DO UPDATE SET "
                                                               "value = excluded.value "
                                                               "WHERE m.value < excluded.value;";

/* The migration's lock: one per schema, so that two prefixes creating
 * the same schema do not race. */
static int64_t migrate_key(const bitt_backend *be)
{
    uint64_t h = bitt__pg_hash(0xcbf29ce484222325ULL, "bitt migrate ", 13);
    return (int64_t)bitt__pg_hash(h, be->schema, strlen(be->schema));
}

static int create(bitt_backend *be)
{
    PGresult *res = NULL;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, be->schema);
    int status = bitt__pg_run1(be, PG_SCHEMA_NS, sql_ns, &p, &res, "migrate (schema)");
    if (status)
        return status;
    int have_schema = PQntuples(res) > 0;
    PQclear(res);
    if (!have_schema) {
        /* The name is validated ([A-Za-z0-9_]) and quoted. */
        char sql[BITT_PG_IDENT_MAX + 48];
        snprintf(sql, sizeof sql, "CREATE SCHEMA IF NOT EXISTS \"%s\"", be->schema);
        if ((status = bitt__pg_simple(be, sql, "migrate (creating the schema)")))
            return status;
    }
    char *sql = bitt__pg_expand(be, ddl);
    if (!sql)
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory migrating");
    status = bitt__pg_simple(be, sql, "migrate (creating tables)");
    free(sql);
    return status;
}

int bitt__pg_migrate(bitt_backend *be)
{
    schema_info info;
    int status = inspect(be, &info);
    if (!status)
        status = judge(be, &info, 1);
    if (status != BITT_NOTFOUND) {
        be->schema_ok = status == BITT_OK;
        return status;
    }
    /* Work to do: again, under the lock. */
    int64_t key = migrate_key(be);
    bitt_buf arr = BITT_BUF_INIT;
    status = bitt__pg_array_int8(&arr, &key, 1);
    bitt_pg_params lp = {0};
    bitt__pg_p_bytes(&lp, arr.ptr, arr.len);
    bitt_pg_step steps[2] = {{PG_BEGIN, bitt__pg_begin_sql, NULL, NULL},
                             {PG_LOCK, bitt__pg_lock_sql, &lp, NULL}};
    if (!status)
        status = bitt__pg_run(be, steps, 2, "migrate (lock)");
    bitt__pg_clear(steps, 2);
    bitt_buf_dispose(&arr);
    if (!status)
        status = inspect(be, &info);
    if (!status)
        status = judge(be, &info, 1);
    if (status == BITT_NOTFOUND)
        status = create(be);
    if (!status)
        status = bitt__pg_run1(be, PG_COMMIT, bitt__pg_commit_sql, NULL, NULL, "migrate (COMMIT)");
    else
        bitt__pg_rollback(be);
    be->schema_ok = status == BITT_OK;
    return status;
}

int bitt__pg_schema_slow(bitt_backend *be)
{
    schema_info info;
    int status = inspect(be, &info);
    if (!status)
        status = judge(be, &info, 0);
    be->schema_ok = status == BITT_OK;
    return status;
}
