/*
 * The PostgreSQL backend (core/postgres/) beyond the contract, on a real
 * server: URL options, libpq parameters passed through and refusals;
 * passwords kept out of every message (a wrong one, a percent-encoded one,
 * an unreachable server, a lost connection); migrations (a newer schema,
 * foreign tables, auto_migrate=0, two prefixes in one schema, a version 1
 * schema with messages brought to the current version; version 2 to 3 is
 * test_postgres_migrate_v2.c); which clock
 * rules (the server's, or the manual one); a killed session and a stopped
 * server process (the next call reconnects); statement_timeout; waits
 * woken by NOTIFY from another handle, with several waiting threads.
 *
 * The server: $BITT_TEST_POSTGRES_URL (scripts/test starts one with
 * scripts/postgres-test-server). Every test uses a schema of its own
 * (t_<pid>_<n>), dropped at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <cmocka.h>

#include "bitt.h"

#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#define HAVE_LIBPQ 1
#endif

static const char *g_url;
/* The schema version the library writes (BITT_PG_SCHEMA_VERSION). */
#define SCHEMA_VERSION 3

/* ---- helpers ------------------------------------------------------------- */

static int need_server(void **state)
{
    (void)state;
#ifndef HAVE_LIBPQ
    fprintf(stderr, "test_postgres_backend: this build has no libpq (the PostgreSQL backend is "
                    "not built): nothing to test against\n");
    return -1;
#else
    g_url = getenv("BITT_TEST_POSTGRES_URL");
    if (!g_url || !*g_url) {
        fprintf(stderr, "test_postgres_backend: BITT_TEST_POSTGRES_URL is not set. Start a server "
                        "with scripts/postgres-test-server start DIR and export the URL it prints "
                        "(scripts/test does both).\n");
        return -1;
    }
    if (strncmp(g_url, "postgres://", 11) != 0 || strchr(g_url, '?')) {
        fprintf(stderr, "test_postgres_backend: BITT_TEST_POSTGRES_URL must be "
                        "postgres://user:password@host:port/db without options\n");
        return -1;
    }
    return 0;
#endif
}

#ifdef HAVE_LIBPQ

static char g_schemas[64][64];
static int g_nschemas;

/* A schema no other test or run uses (dropped by the group teardown). */
static const char *fresh_schema(void)
{
    static int serial;
    assert_true(g_nschemas < 64);
    char *s = g_schemas[g_nschemas++];
    snprintf(s, 64, "t_%ld_%d", (long)getpid(), serial++);
    return s;
}

static int open_url(bitt_store **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int open_url(bitt_store **s, const char *fmt, ...)
{
    char url[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(url, sizeof url, fmt, ap);
    va_end(ap);
    return bitt_store_open(url, s);
}

static bitt_store *open_schema(const char *schema, const char *extra)
{
    bitt_store *s = NULL;
    int rc = open_url(&s, "%s?schema=%s%s%s", g_url, schema, extra ? "&" : "", extra ? extra : "");
    if (rc)
        fail_msg("opening schema %s: %d %s", schema, rc, bitt_error_last());
    return s;
}

/* open_schema with a short statement_timeout in extra: the tables are made
 * first under the default one, as creating them can take longer on a busy
 * disk. */
static bitt_store *open_made(const char *schema, const char *extra)
{
    bitt_store_close(open_schema(schema, NULL));
    return open_schema(schema, extra);
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* A plain libpq connection for looking behind bitt's back. */
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

static int64_t raw_int(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    int64_t v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
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

static void expect_no(const char *secret)
{
    if (*secret && strstr(bitt_error_last(), secret))
        fail_msg("the message \"%s\" shows a password", bitt_error_last());
}

/* The password of the base URL (between "user:" and '@'). */
static void url_password(char *out, size_t size)
{
    const char *s = g_url + 11, *at = strrchr(s, '@'), *colon = strchr(s, ':');
    out[0] = '\0';
    if (at && colon && colon < at)
        snprintf(out, size, "%.*s", (int)(at - colon - 1), colon + 1);
}

/* The base URL with another password (percent-encoded as given). */
static void url_with_password(const char *password, char *out, size_t size)
{
    const char *s = g_url + 11, *at = strrchr(s, '@'), *colon = strchr(s, ':');
    assert_non_null(at);
    assert_true(colon && colon < at);
    snprintf(out, size, "postgres://%.*s:%s%s", (int)(colon - s), s, password, at);
}

static int64_t db_now(PGconn *c)
{
    return raw_int(c, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8");
}

/* ---- URL options ------------------------------------------------------------ */

static void test_url_options(void **state)
{
    (void)state;
    const char *schema = fresh_schema();
    bitt_store *s = NULL;
    assert_int_equal(open_url(&s, "%s?schema=bad-name", g_url), BITT_EURL);
    expect_message("schema");
    assert_int_equal(open_url(&s, "%s?schema=a%%22b", g_url), BITT_EURL);
    assert_int_equal(open_url(&s, "%s?schema=%s&table_prefix=x;y", g_url, schema), BITT_EURL);
    assert_int_equal(open_url(&s, "%s?schema=%s&table_prefix=%s", g_url, schema,
                              "p23456789012345678901234567890123"),
                     BITT_EURL);
    assert_int_equal(open_url(&s, "%s?schema=%s&no_such_option=1", g_url, schema), BITT_EURL);
    expect_message("no_such_option");
    assert_int_equal(open_url(&s, "%s?schema=%s&statement_timeout=0", g_url, schema), BITT_EURL);
    assert_int_equal(open_url(&s, "%s?schema=%s&spin_us=-5", g_url, schema), BITT_EURL);
    expect_message("spin_us");
    assert_int_equal(open_url(&s, "%s?schema=%s&max_key_size=4000", g_url, schema), BITT_EURL);
    expect_message("max_key_size");
    assert_int_equal(bitt_store_open("postgres:nothing", &s), BITT_EURL);
    assert_null(s);
    /* The whole URL is checked before connecting: nobody listens on port 1,
     * and still a bad option is BITT_EURL, never a connection failure. */
    static const char *const before[] = {"nosuchoption=1", "max_key_size=2401", "busy_timeout=5",
                                         "statement_timeout=-1", "queue_backoff=exp:x"};
    for (size_t i = 0; i < sizeof before / sizeof *before; i++) {
        char nowhere[256];
        snprintf(nowhere, sizeof nowhere, "postgres://u:pw@127.0.0.1:1/db?%s", before[i]);
        int rc = bitt_store_open(nowhere, &s);
        if (rc != BITT_EURL)
            fail_msg("%s gave %d (%s), not BITT_EURL", before[i], rc, bitt_error_last());
        assert_null(strstr(bitt_error_last(), "pw"));
    }
    /* every backend holds keys up to BITT_KEY_SIZE_MAX */
    assert_int_equal(open_url(&s, "%s?schema=%s&max_key_size=%d", g_url, schema, BITT_KEY_SIZE_MAX),
                     BITT_OK);
    bitt_store_close(s);

    /* libpq's own parameters go through; the scheme may be postgresql. */
    char url[1024];
    snprintf(url, sizeof url,
             "postgresql%s?schema=%s&sslmode=disable&connect_timeout=5&"
             "application_name=bitt_opt_%ld&statement_timeout=10000&table_prefix=app_&spin_us=0",
             g_url + 8, schema, (long)getpid());
    assert_int_equal(bitt_store_open(url, &s), BITT_OK);
    assert_string_equal(bitt_store_backend(s), "postgres");
    assert_int_equal(bitt_kv_set(s, "k", 1, "v", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    PGconn *c = raw();
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
             "'bitt_opt_%ld'",
             (long)getpid());
    assert_true(raw_int(c, sql) >= 1);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM \"%s\".app_kv", schema);
    assert_int_equal(raw_int(c, sql), 1);
    PQfinish(c);
    bitt_store_close(s);

    /* Host lists, IPv6 in brackets: libpq tries [::1] (nobody there), then
     * the server. */
    const char *at = strrchr(g_url, '@'), *colon = strrchr(at, ':');
    int port = atoi(colon + 1);
    snprintf(url, sizeof url, "%.*s@[::1]:%d,127.0.0.1:%d%s?schema=%s&connect_timeout=5",
             (int)(at - g_url), g_url, port, port, strchr(colon, '/'), schema);
    assert_int_equal(bitt_store_open(url, &s), BITT_OK);
    assert_int_equal(bitt_kv_get(s, "k", 1, &(bitt_entry *){NULL}), BITT_NOTFOUND); /* no prefix */
    bitt_store_close(s);
}

/* ---- passwords ---------------------------------------------------------------- */

static void test_password_never_in_messages(void **state)
{
    (void)state;
    char real[256], url[1024];
    url_password(real, sizeof real);
    bitt_store *s = NULL;

    url_with_password("WrongSecret123", url, sizeof url);
    assert_int_equal(bitt_store_open(url, &s), BITT_EBACKEND);
    assert_null(s);
    expect_message("password authentication failed");
    expect_no("WrongSecret123");
    expect_no(real);

    /* Percent-encoded: neither the decoded nor the encoded form shows. */
    url_with_password("p%40ss%3Aw0rd%25x", url, sizeof url);
    assert_int_equal(bitt_store_open(url, &s), BITT_EBACKEND);
    expect_no("p@ss:w0rd%x");
    expect_no("p%40ss%3Aw0rd%25x");

    /* Unescaped '/', '@' and ':' in it: still taken whole, still hidden. */
    url_with_password("Sl/ash@At:Co", url, sizeof url);
    assert_int_equal(bitt_store_open(url, &s), BITT_EBACKEND);
    expect_message("password authentication failed");
    expect_no("Sl/ash");
    expect_no("At:Co");

    /* Given as an option, too. */
    const char *user = g_url + 11;
    snprintf(url, sizeof url, "postgres://%.*s@%s&password=OptionSecret77",
             (int)strcspn(user, ":@"), user, strrchr(g_url, '@') + 1);
    *strchr(url + 11, '&') = '?';
    assert_int_equal(bitt_store_open(url, &s), BITT_EBACKEND);
    expect_no("OptionSecret77");

    /* A port nobody listens on. */
    snprintf(url, sizeof url, "postgres://bitt:PortSecret99@127.0.0.1:1/db?connect_timeout=2");
    assert_int_equal(bitt_store_open(url, &s), BITT_EBACKEND);
    expect_no("PortSecret99");
    expect_message("cannot connect");

    /* A session killed under the store. */
    const char *schema = fresh_schema();
    char extra[96];
    snprintf(extra, sizeof extra, "application_name=bitt_pw_%ld", (long)getpid());
    s = open_schema(schema, extra);
    PGconn *c = raw();
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
             "WHERE application_name = 'bitt_pw_%ld'",
             (long)getpid());
    assert_true(raw_int(c, sql) >= 1);
    PQfinish(c);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_EBACKEND);
    assert_true(bitt_error_last()[0] != '\0');
    expect_no(real);
    bitt_store_close(s);
}

/* A server that accepts and never answers: connect_timeout bounds open. */
static void *silent_main(void *arg)
{
    int listener = *(int *)arg;
    for (int i = 0; i < 2; i++) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0)
            return NULL;
        char buf[512];
        while (recv(fd, buf, sizeof buf, 0) > 0) {
        }
        close(fd);
    }
    return NULL;
}

static void test_silent_server_times_out(void **state)
{
    (void)state;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(listener >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(listener, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(listener, 4), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(listener, (struct sockaddr *)&a, &len), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, silent_main, &listener), 0);
    char url[256];
    snprintf(url, sizeof url, "postgres://bitt:SilentSecret1@127.0.0.1:%d/db?connect_timeout=2",
             ntohs(a.sin_port));
    bitt_store *s = NULL;
    assert_int_equal(bitt_store_open(url, &s), BITT_EBACKEND);
    expect_no("SilentSecret1");
    shutdown(listener, SHUT_RDWR);
    close(listener);
    pthread_join(th, NULL);
}

/* ---- migrations ---------------------------------------------------------------- */

static void test_migrations(void **state)
{
    (void)state;
    const char *schema = fresh_schema();
    char sql[512];
    PGconn *c = raw();

    /* auto_migrate=0 on an empty schema: refused until migrated. */
    bitt_store *s = open_schema(schema, "auto_migrate=0");
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_ESCHEMA);
    expect_message("not migrated");
    assert_int_equal(bitt_store_migrate(s), BITT_OK);
    assert_int_equal(bitt_store_migrate(s), BITT_OK); /* idempotent */
    assert_int_equal(bitt_kv_set(s, "k", 1, "v", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    bitt_store_close(s);
    snprintf(sql, sizeof sql, "SELECT value FROM \"%s\".meta WHERE name = 'schema_version'",
             schema);
    assert_int_equal(raw_int(c, sql), SCHEMA_VERSION);

    /* Another prefix in the same schema is another store. */
    s = open_schema(schema, "table_prefix=other_");
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_NOTFOUND);
    bitt_store_close(s);

    /* A newer schema version is refused, never misread. */
    snprintf(sql, sizeof sql, "UPDATE \"%s\".meta SET value = 99 WHERE name = 'schema_version'",
             schema);
    raw_exec(c, sql);
    bitt_store *t = NULL;
    assert_int_equal(open_url(&t, "%s?schema=%s", g_url, schema), BITT_ESCHEMA);
    expect_message("newer");
    assert_int_equal(open_url(&t, "%s?schema=%s&auto_migrate=0", g_url, schema), BITT_OK);
    assert_int_equal(bitt_kv_get(t, "k", 1, &e), BITT_ESCHEMA);
    assert_int_equal(bitt_store_migrate(t), BITT_ESCHEMA);
    bitt_store_close(t);

    /* Someone else's table of one of bitt's names: refused, left alone. */
    const char *foreign = fresh_schema();
    snprintf(sql, sizeof sql, "CREATE SCHEMA \"%s\"; CREATE TABLE \"%s\".kv (x int)", foreign,
             foreign);
    raw_exec(c, sql);
    assert_int_equal(open_url(&t, "%s?schema=%s", g_url, foreign), BITT_ESCHEMA);
    expect_message("not bitt's");
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM information_schema.columns WHERE "
             "table_schema = '%s' AND table_name = 'kv'",
             foreign);
    assert_int_equal(raw_int(c, sql), 1);
    PQfinish(c);
}

/* Turns a current schema back into version 1: no priority column, version
 * 1's claim index, none of version 3's columns and indexes. What version 1
 * wrote is all there is to migrate. */
static void make_version_1(PGconn *c, const char *schema)
{
    char sql[2048];
    snprintf(sql, sizeof sql,
             "DROP INDEX \"%s\".queue_claim; ALTER TABLE \"%s\".queue DROP COLUMN priority; "
             "CREATE INDEX queue_ready ON \"%s\".queue (topic, due_at, id) WHERE state < 2; "
             "DROP INDEX \"%s\".queue_done; DROP INDEX \"%s\".queue_aging; "
             "ALTER TABLE \"%s\".queue DROP COLUMN done_at, DROP COLUMN result, "
             "DROP COLUMN result_kind; ALTER TABLE \"%s\".schedule DROP COLUMN cron, "
             "DROP COLUMN topic, DROP COLUMN max_attempts, DROP COLUMN priority; "
             "UPDATE \"%s\".meta SET value = 1 WHERE name = 'schema_version'",
             schema, schema, schema, schema, schema, schema, schema, schema);
    raw_exec(c, sql);
}

static int64_t index_count(PGconn *c, const char *schema, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_indexes WHERE schemaname = '%s' AND indexname = '%s'", schema,
             name);
    return raw_int(c, sql);
}

static void test_migration_from_version_1(void **state)
{
    (void)state;
    const char *schema = fresh_schema();
    char sql[512];
    PGconn *c = raw();

    /* Version 1 with messages in every state: pending, delayed, leased. */
    bitt_store *s = open_schema(schema, NULL);
    uint64_t old_id = 0, delayed_id = 0, leased_id = 0;
    bitt_enqueue_options later = BITT_ENQUEUE_OPTIONS_INIT;
    later.delay_ms = 3600000;
    assert_int_equal(bitt_queue_enqueue(s, "t", "leased", 6, BITT_KIND_BYTES, NULL, &leased_id),
                     BITT_OK);
    assert_int_equal(bitt_queue_enqueue(s, "t", "old", 3, BITT_KIND_BYTES, NULL, &old_id), BITT_OK);
    assert_int_equal(bitt_queue_enqueue(s, "t", "later", 5, BITT_KIND_BYTES, &later, &delayed_id),
                     BITT_OK);
    bitt_messages *got = NULL;
    assert_int_equal(bitt_queue_dequeue(s, "t", NULL, &got), BITT_OK);
    assert_int_equal(bitt_messages_count(got), 1);
    const bitt_message *m = bitt_messages_at(got, 0);
    assert_int_equal(bitt_message_id(m), leased_id);
    char token[64];
    snprintf(token, sizeof token, "%s", bitt_message_token(m));
    bitt_messages_free(got);
    bitt_store_close(s);
    make_version_1(c, schema);

    /* An older schema is not used until migrated. */
    s = open_schema(schema, "auto_migrate=0");
    bitt_message *one = NULL;
    assert_int_equal(bitt_queue_get(s, "t", old_id, &one), BITT_ESCHEMA);
    expect_message("not migrated");
    assert_int_equal(bitt_store_migrate(s), BITT_OK);
    snprintf(sql, sizeof sql, "SELECT value FROM \"%s\".meta WHERE name = 'schema_version'",
             schema);
    assert_int_equal(raw_int(c, sql), SCHEMA_VERSION);
    assert_int_equal(index_count(c, schema, "queue_claim"), 1);
    assert_int_equal(index_count(c, schema, "queue_ready"), 0);
    assert_int_equal(index_count(c, schema, "queue_done"), 1);
    assert_int_equal(index_count(c, schema, "queue_aging"), 1);

    /* Every message is kept at priority 0, the leased one with its
     * delivery. */
    assert_int_equal(bitt_queue_get(s, "t", old_id, &one), BITT_OK);
    assert_int_equal(bitt_message_state(one), BITT_MSG_PENDING);
    assert_int_equal(bitt_message_priority(one), 0);
    bitt_message_free(one);
    assert_int_equal(bitt_queue_get(s, "t", delayed_id, &one), BITT_OK);
    assert_int_equal(bitt_message_state(one), BITT_MSG_DELAYED);
    bitt_message_free(one);
    assert_int_equal(bitt_queue_get(s, "t", leased_id, &one), BITT_OK);
    assert_int_equal(bitt_message_state(one), BITT_MSG_LEASED);
    bitt_message_free(one);
    assert_int_equal(bitt_queue_ack(s, "t", leased_id, token), BITT_OK);

    /* New work of a higher priority goes first; the old work follows. */
    bitt_enqueue_options urgent = BITT_ENQUEUE_OPTIONS_INIT;
    urgent.priority = 5;
    uint64_t urgent_id = 0;
    assert_int_equal(bitt_queue_enqueue(s, "t", "urgent", 6, BITT_KIND_BYTES, &urgent, &urgent_id),
                     BITT_OK);
    bitt_dequeue_options two = BITT_DEQUEUE_OPTIONS_INIT;
    two.limit = 5;
    assert_int_equal(bitt_queue_dequeue(s, "t", &two, &got), BITT_OK);
    assert_int_equal(bitt_messages_count(got), 2);
    assert_int_equal(bitt_message_id(bitt_messages_at(got, 0)), urgent_id);
    assert_int_equal(bitt_message_priority(bitt_messages_at(got, 0)), 5);
    assert_int_equal(bitt_message_id(bitt_messages_at(got, 1)), old_id);
    bitt_messages_free(got);
    assert_int_equal(bitt_store_migrate(s), BITT_OK); /* nothing more to do */
    bitt_store_close(s);
    PQfinish(c);
}

/* ---- clocks -------------------------------------------------------------------- */

static void test_clocks(void **state)
{
    (void)state;
    bitt_store *s = open_schema(fresh_schema(), NULL);
    PGconn *c = raw();

    /* No manual clock: the server's clock sets expiries and leases. */
    int64_t before = db_now(c);
    assert_int_equal(bitt_kv_set(s, "t", 1, "v", 1, BITT_KIND_BYTES, 60000, NULL), BITT_OK);
    int64_t expires_at = 0;
    uint64_t epoch = 0;
    assert_int_equal(bitt_lease_acquire(s, "l", "me", 60000, &epoch, &expires_at), BITT_OK);
    int64_t after = db_now(c);
    assert_true(expires_at >= before + 60000 && expires_at <= after + 60000);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "t", 1, &e), BITT_OK);
    assert_true(bitt_entry_expires_at(e) >= before + 60000);
    assert_true(bitt_entry_expires_at(e) <= after + 60000);
    bitt_entry_free(e);

    /* A manual clock rules every time it is given. */
    assert_int_equal(bitt_clock_set_manual(s, 5000), BITT_OK);
    assert_int_equal(bitt_kv_set(s, "m", 1, "v", 1, BITT_KIND_BYTES, 100, NULL), BITT_OK);
    assert_int_equal(bitt_kv_get(s, "m", 1, &e), BITT_OK);
    assert_int_equal(bitt_entry_expires_at(e), 5100);
    bitt_entry_free(e);
    assert_int_equal(bitt_kv_get(s, "t", 1, &e), BITT_OK); /* live at 5000 */
    bitt_entry_free(e);
    assert_int_equal(bitt_clock_advance(s, 100), BITT_OK);
    assert_int_equal(bitt_kv_get(s, "m", 1, &e), BITT_NOTFOUND);
    assert_int_equal(bitt_lease_acquire(s, "l2", "me", 10, &epoch, &expires_at), BITT_OK);
    assert_int_equal(expires_at, 5110);
    assert_int_equal(bitt_clock_use_system(s), BITT_OK);
    assert_int_equal(bitt_kv_get(s, "m", 1, &e), BITT_NOTFOUND); /* 5100 is long gone */
    assert_int_equal(bitt_lease_get(s, "l2", NULL, NULL, NULL), BITT_NOTFOUND);
    PQfinish(c);
    bitt_store_close(s);
}

/* ---- lost sessions and timeouts --------------------------------------------------- */

static void kill_sessions(const char *app, const char *how)
{
    PGconn *c = raw();
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(%s(pid)) FROM pg_stat_activity WHERE "
             "application_name = '%s'",
             how, app);
    assert_true(raw_int(c, sql) >= 1);
    PQfinish(c);
}

static void test_reconnect(void **state)
{
    (void)state;
    char app[64], extra[128];
    snprintf(app, sizeof app, "bitt_rc_%ld", (long)getpid());
    snprintf(extra, sizeof extra, "application_name=%s", app);
    bitt_store *s = open_schema(fresh_schema(), extra);
    assert_int_equal(bitt_kv_set(s, "k", 1, "v1", 2, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    for (int round = 0; round < 3; round++) {
        kill_sessions(app, "pg_terminate_backend");
        bitt_entry *e = NULL;
        /* The call that finds the session gone fails cleanly... */
        assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_EBACKEND);
        expect_message("postgres");
        /* ... and the next one reconnects and re-prepares. */
        assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_OK);
        bitt_entry_free(e);
        assert_int_equal(bitt_kv_increment(s, "n", 1, 1, 0, NULL, NULL), BITT_OK);
    }
    bitt_store_close(s);
}

static void test_statement_timeout(void **state)
{
    (void)state;
    const char *schema = fresh_schema();
    bitt_store *s = open_made(schema, "statement_timeout=300");
    assert_int_equal(bitt_kv_set(s, "k", 1, "v", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    PGconn *c = raw();
    char sql[256];
    snprintf(sql, sizeof sql, "BEGIN; LOCK TABLE \"%s\".kv IN ACCESS EXCLUSIVE MODE", schema);
    raw_exec(c, sql);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_EBUSY);
    expect_message("statement timeout");
    assert_int_equal(bitt_kv_set(s, "k", 1, "w", 1, BITT_KIND_BYTES, 0, NULL), BITT_EBUSY);
    raw_exec(c, "ROLLBACK");
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_OK);
    assert_memory_equal(bitt_entry_value(e, NULL), "v", 1);
    bitt_entry_free(e);
    PQfinish(c);
    bitt_store_close(s);
}

/* A server process that stops answering: the client gives up after
 * statement_timeout + its grace, drops the connection, and reconnects. */
static void test_stopped_server_process(void **state)
{
    (void)state;
    char app[64], extra[128];
    snprintf(app, sizeof app, "bitt_stop_%ld", (long)getpid());
    snprintf(extra, sizeof extra, "application_name=%s&statement_timeout=200", app);
    bitt_store *s = open_made(fresh_schema(), extra);
    assert_int_equal(bitt_kv_set(s, "k", 1, "v", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    PGconn *c = raw();
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT pid FROM pg_stat_activity WHERE application_name = '%s'",
             app);
    pid_t pid = (pid_t)raw_int(c, sql);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(s, "k", 1, &e);
    kill(pid, SIGCONT);
    assert_int_equal(rc, BITT_EBACKEND);
    expect_message("no answer");
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_OK);
    bitt_entry_free(e);
    PQfinish(c);
    bitt_store_close(s);
}

/* ---- waits woken by NOTIFY ---------------------------------------------------------- */

typedef struct waiter {
    bitt_store *store;
    const char *topic;
    int rc;
    size_t got;
} waiter;

static void *wait_main(void *arg)
{
    waiter *w = arg;
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.wait_ms = 20000;
    for (int i = 0; i < 3 && !w->got; i++) {
        bitt_messages *m = NULL;
        w->rc = bitt_queue_dequeue(w->store, w->topic, &o, &m);
        w->got += bitt_messages_count(m);
        bitt_messages_free(m);
        if (w->rc)
            break;
    }
    return NULL;
}

static void test_waits_across_handles(void **state)
{
    (void)state;
    const char *schema = fresh_schema();
    bitt_store *a = open_schema(schema, NULL), *b = open_schema(schema, NULL);

    /* Four threads of one handle wait on one topic; another handle
     * enqueues four messages: each thread gets one. */
    enum { WAITERS = 4 };
    waiter w[WAITERS];
    pthread_t th[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        w[i] = (waiter){a, "jobs", 0, 0};
        assert_int_equal(pthread_create(&th[i], NULL, wait_main, &w[i]), 0);
    }
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    for (int i = 0; i < WAITERS; i++)
        assert_int_equal(bitt_queue_enqueue(b, "jobs", "x", 1, BITT_KIND_BYTES, NULL, NULL),
                         BITT_OK);
    size_t total = 0;
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, BITT_OK);
        total += w[i].got;
    }
    assert_int_equal(total, WAITERS);

    /* A subscription on one handle hears a publish on another. */
    bitt_sub *sub = NULL;
    assert_int_equal(bitt_pubsub_subscribe(a, "news", &sub), BITT_OK);
    assert_int_equal(bitt_pubsub_publish(b, "news", "hello", 5), BITT_OK);
    bitt_message *m = NULL;
    assert_int_equal(bitt_pubsub_next(sub, 20000, &m), BITT_OK);
    size_t len;
    assert_memory_equal(bitt_message_payload(m, &len), "hello", 5);
    bitt_message_free(m);
    assert_int_equal(bitt_pubsub_next(sub, 0, &m), BITT_NOTFOUND);
    bitt_pubsub_close(sub);
    bitt_store_close(a);
    bitt_store_close(b);
}

/* The store's NOTIFY channel, read from the LISTEN its first wait ran (the
 * channel is a hash of schema and prefix). */
static void listen_channel(PGconn *c, bitt_store *s, const char *app, char *out, size_t size)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT substring(query FROM 'LISTEN \"([a-z0-9_]+)\"') FROM pg_stat_activity "
             "WHERE application_name = '%s' AND query LIKE 'LISTEN %%'",
             app);
    /* A dequeue that finds nothing waits (and listens) while its wait
     * lasts: again until one did. */
    for (int i = 0; i < 1000; i++) {
        bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
        o.wait_ms = 100;
        bitt_messages *none = NULL;
        assert_int_equal(bitt_queue_dequeue(s, "nobody", &o, &none), BITT_OK);
        bitt_messages_free(none);
        PGresult *r = PQexec(c, sql);
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        int found = PQntuples(r) == 1;
        if (found)
            snprintf(out, size, "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        if (found)
            return;
    }
    fail_msg("no LISTEN connection of %s", app);
}

/* How many notifications the channel got since the last call: the
 * listener c notifies itself with payload "end" and counts the others up
 * to it (a session's notifications arrive in commit order). */
static int notified(PGconn *c, const char *channel)
{
    char sql[128];
    snprintf(sql, sizeof sql, "NOTIFY \"%s\", 'end'", channel);
    raw_exec(c, sql);
    int count = 0;
    for (;;) {
        assert_int_equal(PQconsumeInput(c), 1);
        PGnotify *n;
        while ((n = PQnotifies(c))) {
            int end = !strcmp(n->extra, "end");
            count += !end;
            PQfreemem(n);
            if (end)
                return count;
        }
        struct pollfd pfd = {PQsocket(c), POLLIN, 0};
        assert_true(poll(&pfd, 1, 30000) > 0);
    }
}

static const char *claim_one(bitt_store *s, uint64_t *id)
{
    static char token[64];
    bitt_messages *got = NULL;
    assert_int_equal(bitt_queue_dequeue(s, "t", NULL, &got), BITT_OK);
    assert_int_equal(bitt_messages_count(got), 1);
    *id = bitt_message_id(bitt_messages_at(got, 0));
    snprintf(token, sizeof token, "%s", bitt_message_token(bitt_messages_at(got, 0)));
    bitt_messages_free(got);
    return token;
}

/* A commit of one queue op of txn kind `op` on delivery (id, token). */
static void txn_op(bitt_store *s, char op, uint64_t id, const char *token, int64_t ms)
{
    bitt_txn *x = NULL;
    assert_int_equal(bitt_txn_begin(s, &x), BITT_OK);
    int rc = op == 'n'   ? bitt_txn_queue_nack(x, "t", id, token, "e", ms)
             : op == 's' ? bitt_txn_queue_snooze(x, "t", id, token, ms)
             : op == 'x' ? bitt_txn_queue_extend(x, "t", id, token, ms)
             : op == 'r' ? bitt_txn_queue_reschedule(x, "t", id, ms)
             : op == 'c' ? bitt_txn_queue_cancel(x, "t", id)
                         : bitt_txn_queue_ack(x, "t", id, token);
    assert_int_equal(rc, BITT_OK);
    assert_int_equal(bitt_txn_commit(x, NULL), BITT_OK);
    bitt_txn_free(x);
}

/* Every commit that may make a message claimable wakes the waiters of
 * other processes as an enqueue does: nack, snooze, extend 0, a reschedule
 * that applied. Acks, cancels, longer extends and claims do not. */
static void test_queue_ops_notify(void **state)
{
    (void)state;
    const char *schema = fresh_schema();
    char app[64], extra[96], channel[64];
    snprintf(app, sizeof app, "bitt_nt_%ld", (long)getpid());
    snprintf(extra, sizeof extra, "application_name=%s", app);
    bitt_store *waiting = open_made(schema, extra), *s = open_schema(schema, NULL);
    PGconn *c = raw();
    listen_channel(c, waiting, app, channel, sizeof channel);
    char sql[128];
    snprintf(sql, sizeof sql, "LISTEN \"%s\"", channel);
    raw_exec(c, sql);

    uint64_t id, other;
    assert_int_equal(bitt_queue_enqueue(s, "t", "m", 1, BITT_KIND_BYTES, NULL, &id), BITT_OK);
    assert_int_equal(notified(c, channel), 1);
    const char *token = claim_one(s, &id);
    assert_int_equal(notified(c, channel), 0);
    txn_op(s, 'n', id, token, 0);
    assert_int_equal(notified(c, channel), 1);
    txn_op(s, 's', id, claim_one(s, &id), 0);
    assert_int_equal(notified(c, channel), 1);
    token = claim_one(s, &id);
    txn_op(s, 'x', id, token, 60000);
    assert_int_equal(notified(c, channel), 0);
    txn_op(s, 'x', id, token, 0);
    assert_int_equal(notified(c, channel), 1);
    /* A reschedule of a live lease does nothing and wakes nobody. */
    token = claim_one(s, &id);
    txn_op(s, 'r', id, NULL, 0);
    assert_int_equal(notified(c, channel), 0);
    assert_int_equal(bitt_queue_snooze(s, "t", id, token, 60000), BITT_OK);
    assert_int_equal(notified(c, channel), 0);
    assert_int_equal(bitt_queue_reschedule(s, "t", id, 0), BITT_OK);
    assert_int_equal(notified(c, channel), 1);
    txn_op(s, 'a', id, claim_one(s, &id), 0);
    assert_int_equal(notified(c, channel), 0);
    assert_int_equal(bitt_queue_enqueue(s, "t", "o", 1, BITT_KIND_BYTES, NULL, &other), BITT_OK);
    assert_int_equal(notified(c, channel), 1);
    txn_op(s, 'c', other, NULL, 0);
    assert_int_equal(notified(c, channel), 0);
    PQfinish(c);
    bitt_store_close(s);
    bitt_store_close(waiting);
}

/* Names, keys and values that are SQL to someone else stay data. */
static void test_hostile_names(void **state)
{
    (void)state;
    bitt_store *s = open_schema(fresh_schema(), NULL);
    const char *evil = "'; DROP TABLE kv; --\"";
    assert_int_equal(
        bitt_kv_set(s, evil, strlen(evil), evil, strlen(evil), BITT_KIND_BYTES, 0, NULL), BITT_OK);
    assert_int_equal(bitt_queue_enqueue(s, evil, evil, strlen(evil), BITT_KIND_BYTES, NULL, NULL),
                     BITT_OK);
    uint64_t epoch;
    assert_int_equal(bitt_lease_acquire(s, evil, evil, 1000, &epoch, NULL), BITT_OK);
    assert_int_equal(bitt_outbox_append(s, evil, evil, strlen(evil), BITT_KIND_BYTES, NULL),
                     BITT_OK);
    assert_int_equal(bitt_schedule_upsert(s, evil, 1000, evil, strlen(evil), BITT_KIND_BYTES, 1),
                     BITT_OK);
    int64_t wait;
    assert_int_equal(bitt_budget_take(s, evil, 10, 1, 1000, 1, &wait), BITT_OK);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, evil, strlen(evil), &e), BITT_OK);
    bitt_entry_free(e);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, evil, &st), BITT_OK);
    assert_int_equal(st.pending, 1);
    bitt_store_close(s);
}

#endif /* HAVE_LIBPQ */

int main(void)
{
#ifdef HAVE_LIBPQ
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_options),
        cmocka_unit_test(test_password_never_in_messages),
        cmocka_unit_test(test_silent_server_times_out),
        cmocka_unit_test(test_migrations),
        cmocka_unit_test(test_migration_from_version_1),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_reconnect),
        cmocka_unit_test(test_statement_timeout),
        cmocka_unit_test(test_stopped_server_process),
        cmocka_unit_test(test_waits_across_handles),
        cmocka_unit_test(test_queue_ops_notify),
        cmocka_unit_test(test_hostile_names),
    };
    return cmocka_run_group_tests(tests, need_server, drop_schemas);
#else
    return need_server(NULL) ? 1 : 0;
#endif
}
