/*
 * The PostgreSQL schema's migration from version 2 to 3 (queue retention,
 * cron/topic schedules), on a real server: a version-2 schema with
 * messages (leased, dead, holding a dedup key) and an interval schedule is
 * refused until migrated, then gains the columns and the partial indexes
 * of the retention sweep; its messages and schedule work as before, the
 * old lease acked with done retention is kept done with its result, the
 * old dead letter ages out by failed_at, and purge drops both. Also: the
 * sweep's statements are served by those partial indexes (planned with
 * sequential scans off, so a table of a few rows still shows which index
 * a statement can use).
 *
 * The server: $BITT_TEST_POSTGRES_URL. Every test uses a schema of its own
 * (m2_<pid>_<n>), dropped at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bitt.h"

#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#define HAVE_LIBPQ 1
#endif

static const char *g_url;

static int need_server(void **state)
{
    (void)state;
#ifndef HAVE_LIBPQ
    fprintf(stderr, "test_postgres_migrate_v2: this build has no libpq: nothing to test\n");
    return -1;
#else
    g_url = getenv("BITT_TEST_POSTGRES_URL");
    if (!g_url || !*g_url || strncmp(g_url, "postgres://", 11) != 0 || strchr(g_url, '?')) {
        fprintf(stderr, "test_postgres_migrate_v2: set BITT_TEST_POSTGRES_URL to "
                        "postgres://user:password@host:port/db without options (scripts/test "
                        "starts a server with scripts/postgres-test-server)\n");
        return -1;
    }
    return 0;
#endif
}

#ifdef HAVE_LIBPQ

static char g_schemas[8][64];
static int g_nschemas;

static const char *fresh_schema(void)
{
    static int serial;
    assert_true(g_nschemas < 8);
    char *s = g_schemas[g_nschemas++];
    snprintf(s, 64, "m2_%ld_%d", (long)getpid(), serial++);
    return s;
}

static bitt_store *open_schema(const char *schema, const char *extra)
{
    char url[1024];
    snprintf(url, sizeof url, "%s?schema=%s%s%s", g_url, schema, extra ? "&" : "",
             extra ? extra : "");
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("opening schema %s: %d %s", schema, rc, bitt_error_last());
    return s;
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static PGconn *raw(void)
{
    PGconn *c = PQconnectdb(g_url);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("raw connection: %s", PQerrorMessage(c));
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

static void raw_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

static int64_t raw_int(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t raw_int(PGconn *c, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    int64_t v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

/* The plan of sql (one line per row, joined), with sequential scans off. */
static void raw_plan(PGconn *c, const char *sql, char *out, size_t cap)
{
    raw_exec(c, "SET enable_seqscan = off");
    char explain[1024];
    snprintf(explain, sizeof explain, "EXPLAIN %s", sql);
    PGresult *r = PQexec(c, explain);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", explain, PQresultErrorMessage(r));
    out[0] = '\0';
    for (int i = 0; i < PQntuples(r); i++) {
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s\n", PQgetvalue(r, i, 0));
    }
    PQclear(r);
    raw_exec(c, "RESET enable_seqscan");
}

static int drop_schemas(void **state)
{
    (void)state;
    if (!g_url || !*g_url)
        return 0;
    PGconn *c = PQconnectdb(g_url);
    PQsetNoticeProcessor(c, quiet, NULL);
    for (int i = 0; i < g_nschemas && PQstatus(c) == CONNECTION_OK; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS \"%s\" CASCADE", g_schemas[i]);
        PQclear(PQexec(c, sql));
    }
    PQfinish(c);
    return 0;
}

static void expect_message(const char *part)
{
    if (!strstr(bitt_error_last(), part))
        fail_msg("expected \"%s\" in the message \"%s\"", part, bitt_error_last());
}

static int64_t db_now(PGconn *c)
{
    return raw_int(c, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8");
}

/* Turns a current schema back into version 2: no retention columns or
 * indexes, no schedule columns past version 2's. What version 2 wrote is
 * all there is to migrate. */
static void make_version_2(PGconn *c, const char *s)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "DROP INDEX \"%s\".queue_done; DROP INDEX \"%s\".queue_aging; "
             "ALTER TABLE \"%s\".queue DROP COLUMN done_at, DROP COLUMN result, "
             "DROP COLUMN result_kind; "
             "ALTER TABLE \"%s\".schedule DROP COLUMN cron, DROP COLUMN topic, "
             "DROP COLUMN max_attempts, DROP COLUMN priority; "
             "UPDATE \"%s\".meta SET value = 2 WHERE name = 'schema_version'",
             s, s, s, s, s);
    raw_exec(c, sql);
}

static int64_t index_count(PGconn *c, const char *schema, const char *name)
{
    return raw_int(c,
                   "SELECT count(*) FROM pg_indexes WHERE schemaname = '%s' AND indexname = '%s'",
                   schema, name);
}

static int64_t column_count(PGconn *c, const char *schema, const char *table, const char *column)
{
    return raw_int(c,
                   "SELECT count(*) FROM information_schema.columns WHERE table_schema = '%s' "
                   "AND table_name = '%s' AND column_name = '%s'",
                   schema, table, column);
}

/* One message of topic t claimed: its id and token. */
static void claim_one(bitt_store *s, uint64_t *id, char *token, size_t cap)
{
    bitt_messages *got = NULL;
    assert_int_equal(bitt_queue_dequeue(s, "t", NULL, &got), BITT_OK);
    assert_int_equal(bitt_messages_count(got), 1);
    const bitt_message *m = bitt_messages_at(got, 0);
    *id = bitt_message_id(m);
    snprintf(token, cap, "%s", bitt_message_token(m));
    bitt_messages_free(got);
}

static int state_of(bitt_store *s, uint64_t id)
{
    bitt_message *m = NULL;
    int rc = bitt_queue_get(s, "t", id, &m);
    if (rc)
        return -rc;
    int state = bitt_message_state(m);
    bitt_message_free(m);
    return state;
}

static void test_migration_from_version_2(void **state)
{
    (void)state;
    const char *schema = fresh_schema();
    PGconn *c = raw();

    /* Version 2's data: a leased message, a dead letter, a pending one
     * holding a dedup key, an interval schedule due long ago. */
    bitt_store *s = open_schema(schema, NULL);
    uint64_t leased = 0, dying = 0, pending = 0, got_id = 0;
    char leased_token[64], dying_token[64];
    bitt_enqueue_options once = BITT_ENQUEUE_OPTIONS_INIT;
    once.max_attempts = 1;
    bitt_enqueue_options keyed = BITT_ENQUEUE_OPTIONS_INIT;
    keyed.dedup_key = "d1";
    keyed.dedup_key_len = 2;
    assert_int_equal(bitt_queue_enqueue(s, "t", "leased", 6, BITT_KIND_BYTES, NULL, &leased),
                     BITT_OK);
    assert_int_equal(bitt_queue_enqueue(s, "t", "dying", 5, BITT_KIND_BYTES, &once, &dying),
                     BITT_OK);
    claim_one(s, &got_id, leased_token, sizeof leased_token);
    assert_int_equal(got_id, leased);
    claim_one(s, &got_id, dying_token, sizeof dying_token);
    assert_int_equal(got_id, dying);
    assert_int_equal(bitt_queue_nack(s, "t", dying, dying_token, "boom", 0), BITT_OK);
    assert_int_equal(bitt_queue_enqueue(s, "t", "keyed", 5, BITT_KIND_BYTES, &keyed, &pending),
                     BITT_OK);
    assert_int_equal(bitt_schedule_upsert(s, "tick", 60000, "p", 1, BITT_KIND_BYTES, 1000),
                     BITT_OK);
    bitt_store_close(s);
    make_version_2(c, schema);

    /* Refused until migrated; then version 3 with its columns and indexes. */
    s = open_schema(schema, "auto_migrate=0");
    assert_int_equal(state_of(s, leased), -BITT_ESCHEMA);
    expect_message("not migrated");
    assert_int_equal(bitt_store_migrate(s), BITT_OK);
    assert_int_equal(bitt_store_migrate(s), BITT_OK); /* idempotent */
    bitt_store_close(s);
    assert_int_equal(
        raw_int(c, "SELECT value FROM \"%s\".meta WHERE name = 'schema_version'", schema), 3);
    assert_int_equal(index_count(c, schema, "queue_done"), 1);
    assert_int_equal(index_count(c, schema, "queue_aging"), 1);
    static const char *const added[][2] = {{"queue", "done_at"},     {"queue", "result"},
                                           {"queue", "result_kind"}, {"schedule", "cron"},
                                           {"schedule", "topic"},    {"schedule", "max_attempts"},
                                           {"schedule", "priority"}};
    for (size_t i = 0; i < sizeof added / sizeof *added; i++)
        assert_int_equal(column_count(c, schema, added[i][0], added[i][1]), 1);

    /* With retention: the old lease is acked with a result and kept done;
     * the old dead letter and the old dedup key are as they were. */
    s = open_schema(schema, "queue_done_retention=3600000&queue_dead_retention=3600000");
    assert_int_equal(state_of(s, dying), BITT_MSG_DEAD);
    assert_int_equal(state_of(s, pending), BITT_MSG_PENDING);
    assert_int_equal(
        bitt_queue_ack_result(s, "t", leased, leased_token, "{\"ok\":1}", 8, BITT_KIND_JSON),
        BITT_OK);
    assert_int_equal(bitt_queue_ack(s, "t", leased, leased_token), BITT_ETOKEN);
    expect_message("done");
    bitt_message *m = NULL;
    assert_int_equal(bitt_queue_get(s, "t", leased, &m), BITT_OK);
    assert_int_equal(bitt_message_state(m), BITT_MSG_DONE);
    assert_true(bitt_message_done_at(m) > 0);
    assert_null(bitt_message_token(m));
    size_t len = 0;
    const uint8_t *result = bitt_message_result(m, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(result, "{\"ok\":1}", 8);
    assert_int_equal(bitt_message_result_kind(m), BITT_KIND_JSON);
    bitt_message_free(m);
    uint64_t again = 0;
    assert_int_equal(bitt_queue_enqueue(s, "t", "keyed", 5, BITT_KIND_BYTES, &keyed, &again),
                     BITT_EXISTS);
    assert_int_equal(again, pending);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    assert_int_equal(st.pending, 1);
    assert_int_equal(st.dead, 1);
    assert_int_equal(st.done, 1);

    /* The old schedule: an interval one without a topic, claimed as before. */
    bitt_schedule *sc = NULL;
    assert_int_equal(bitt_schedule_get(s, "tick", &sc), BITT_OK);
    assert_int_equal(bitt_schedule_interval(sc), 60000);
    assert_null(bitt_schedule_cron(sc));
    assert_null(bitt_schedule_topic(sc));
    bitt_schedule_free(sc);
    assert_int_equal(
        raw_int(c, "SELECT max_attempts FROM \"%s\".schedule WHERE key = 'tick'", schema), 3);
    assert_int_equal(bitt_schedule_claim(s, NULL, &sc), BITT_OK);
    assert_int_equal(bitt_schedule_occurrence(sc), 1000);
    assert_true(bitt_schedule_next_run_at(sc) > 1000);
    assert_int_equal((bitt_schedule_next_run_at(sc) - 1000) % 60000, 0);
    bitt_schedule_free(sc);

    /* Past both retentions (a manual clock two hours on): purge drops the
     * done message and the dead letter, by done_at and by failed_at. */
    assert_int_equal(bitt_clock_set_manual(s, db_now(c) + 7200000), BITT_OK);
    uint64_t removed = 0;
    assert_int_equal(bitt_queue_purge(s, NULL, &removed), BITT_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(state_of(s, leased), -BITT_NOTFOUND);
    assert_int_equal(state_of(s, dying), -BITT_NOTFOUND);
    assert_int_equal(state_of(s, pending), BITT_MSG_PENDING);
    assert_int_equal(bitt_queue_purge(s, "t", &removed), BITT_OK);
    assert_int_equal(removed, 0);
    bitt_store_close(s);
    PQfinish(c);
}

/* The retention sweep's statements can use the partial indexes (a range of
 * one topic), and the claim index does not hold done rows. */
static void test_sweep_indexes(void **state)
{
    (void)state;
    const char *schema = fresh_schema();
    PGconn *c = raw();
    bitt_store_close(open_schema(schema, NULL));
    char sql[512], plan[4096];
    snprintf(sql, sizeof sql,
             "DELETE FROM \"%s\".queue WHERE id IN (SELECT id FROM \"%s\".queue WHERE topic = 't' "
             "AND state = 3 AND done_at <= 5 FOR UPDATE SKIP LOCKED)",
             schema, schema);
    raw_plan(c, sql, plan, sizeof plan);
    if (!strstr(plan, "queue_done"))
        fail_msg("the done sweep does not use queue_done:\n%s", plan);
    snprintf(sql, sizeof sql,
             "DELETE FROM \"%s\".queue WHERE id IN (SELECT id FROM \"%s\".queue WHERE topic = 't' "
             "AND state = 2 AND failed_at <= 5 FOR UPDATE SKIP LOCKED)",
             schema, schema);
    raw_plan(c, sql, plan, sizeof plan);
    if (!strstr(plan, "queue_aging"))
        fail_msg("the dead sweep does not use queue_aging:\n%s", plan);
    assert_int_equal(raw_int(c,
                             "SELECT count(*) FROM pg_indexes WHERE schemaname = '%s' AND "
                             "indexname = 'queue_claim' AND indexdef LIKE '%%WHERE (state < 2)%%'",
                             schema),
                     1);
    PQfinish(c);
}

#endif /* HAVE_LIBPQ */

int main(void)
{
#ifdef HAVE_LIBPQ
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migration_from_version_2),
        cmocka_unit_test(test_sweep_indexes),
    };
    return cmocka_run_group_tests(tests, need_server, drop_schemas);
#else
    return need_server(NULL) ? 1 : 0;
#endif
}
