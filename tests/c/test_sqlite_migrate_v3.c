/*
 * The SQLite schema's version-4 migration (queue retention, cron and topic
 * schedules): a file written by version 3 (made here with version 3's DDL
 * and rows written as version 3 wrote them) is refused until migrated,
 * gains the queue's done_at / result / result_kind columns and the two
 * partial indexes of the retention sweep, and the schedule's cron / topic
 * / max_attempts / priority columns, all in place. Its messages (pending,
 * at a priority, leased, dead, delayed, with dedup keys) and its interval
 * schedule work as before, and with retention an old lease acked is kept
 * done and the old dead letter ages out by its failed_at. Several
 * processes may migrate one file at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bitt.h"
#include "sqlite_files.h"

/* Version 3's DDL, as core/sqlite/schema.c had it (no table prefix). */
static const char v3_schema[] =
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL, "
    "version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID;"
    "CREATE INDEX kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;"
    "CREATE TABLE queue (id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, "
    "state INTEGER NOT NULL, due_at INTEGER NOT NULL, attempts INTEGER NOT NULL, "
    "max_attempts INTEGER NOT NULL, token TEXT, last_error TEXT, payload BLOB NOT NULL, "
    "kind INTEGER NOT NULL, created_at INTEGER NOT NULL, failed_at INTEGER NOT NULL, "
    "dedup_key BLOB, priority INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX queue_dead ON queue (topic, id) WHERE state = 2;"
    "CREATE UNIQUE INDEX queue_dedup ON queue (topic, dedup_key) "
    "WHERE dedup_key IS NOT NULL AND state <> 2;"
    "CREATE TABLE lease (name TEXT PRIMARY KEY, owner TEXT, epoch INTEGER NOT NULL, "
    "expires_at INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE outbox (stream TEXT NOT NULL, seq INTEGER NOT NULL, state INTEGER NOT NULL, "
    "payload BLOB NOT NULL, kind INTEGER NOT NULL, attempts INTEGER NOT NULL, "
    "next_attempt_at INTEGER NOT NULL, last_error TEXT, created_at INTEGER NOT NULL, "
    "parked_at INTEGER NOT NULL, reason INTEGER NOT NULL, PRIMARY KEY (stream, seq));"
    "CREATE INDEX outbox_state ON outbox (stream, state, seq);"
    "CREATE TABLE outbox_seq (stream TEXT PRIMARY KEY, last INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE pubsub (id INTEGER PRIMARY KEY AUTOINCREMENT, channel TEXT NOT NULL, "
    "payload BLOB NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);"
    "CREATE INDEX pubsub_channel ON pubsub (channel, id);"
    "CREATE INDEX pubsub_expires ON pubsub (expires_at);"
    "CREATE TABLE budget (name TEXT PRIMARY KEY, level INTEGER NOT NULL, "
    "updated_at INTEGER NOT NULL, period_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE schedule (key TEXT PRIMARY KEY, interval_ms INTEGER NOT NULL, "
    "payload BLOB NOT NULL, kind INTEGER NOT NULL, next_run_at INTEGER NOT NULL);"
    "CREATE INDEX schedule_due ON schedule (next_run_at, key);"
    "CREATE INDEX queue_pick ON queue (topic, state, priority DESC, due_at);"
    "INSERT INTO meta VALUES ('versionstamp', 41), ('schema_version', 3);";

#define TOKEN "0123456789abcdef0123456789abcdef"

/* Topic t as of 1000 ms: 1 pending since 500 (dedup key k1), 2 pending at
 * priority 5, 3 leased until 5000 (attempt 1 of 3, dedup key k3), 4 dead
 * since 300 (its key k4 given up), 5 delayed to 5000. Schedule tick: every
 * second, next due at 900. */
static const char v3_rows[] =
    "INSERT INTO queue (id, topic, state, due_at, attempts, max_attempts, token, last_error, "
    "payload, kind, created_at, failed_at, dedup_key, priority) VALUES "
    "(1, 't', 0, 500, 0, 3, NULL, NULL, x'6f6e65', 0, 500, 0, x'6b31', 0),"
    "(2, 't', 0, 900, 0, 3, NULL, NULL, x'74776f', 0, 100, 0, NULL, 5),"
    "(3, 't', 1, 5000, 1, 3, '" TOKEN "', NULL, x'7468726565', 0, 200, 0, x'6b33', 0),"
    "(4, 't', 2, 300, 3, 3, NULL, 'gave up', x'666f7572', 0, 50, 300, x'6b34', 0),"
    "(5, 't', 0, 5000, 0, 3, NULL, NULL, x'66697665', 0, 600, 0, NULL, 0);"
    "INSERT INTO schedule VALUES ('tick', 1000, x'70', 0, 900);";

/* The columns of table called name in the migrated file. */
static long long columns(const char *path, const char *table, const char *names)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s') WHERE name IN (%s)",
             table, names);
    return ts_raw_int(path, sql);
}

static void expect_get(bitt_store *s, uint64_t id, int state, int32_t priority)
{
    bitt_message *m;
    assert_int_equal(bitt_queue_get(s, "t", id, &m), BITT_OK);
    assert_int_equal(bitt_message_state(m), state);
    assert_int_equal(bitt_message_priority(m), priority);
    bitt_message_free(m);
}

static void expect_stats(bitt_store *s, uint64_t pending, uint64_t delayed, uint64_t processing,
                         uint64_t dead, uint64_t done)
{
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    assert_int_equal(st.pending, pending);
    assert_int_equal(st.delayed, delayed);
    assert_int_equal(st.processing, processing);
    assert_int_equal(st.dead, dead);
    assert_int_equal(st.done, done);
}

static void check_schema(const char *path)
{
    assert_int_equal(ts_raw_int(path, "SELECT value FROM meta WHERE name = 'schema_version'"), 4);
    assert_int_equal(columns(path, "queue", "'done_at', 'result', 'result_kind'"), 3);
    assert_int_equal(columns(path, "schedule", "'cron', 'topic', 'max_attempts', 'priority'"), 4);
    /* the retention sweep's partial indexes */
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
                                      "((name = 'queue_done' AND sql LIKE '%(topic, done_at)%' "
                                      "AND sql LIKE '%WHERE state = 3') OR (name = 'queue_aging' "
                                      "AND sql LIKE '%(topic, failed_at)%' AND sql LIKE "
                                      "'%WHERE state = 2'))"),
                     2);
}

static void test_migrate_v3(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("v3.db", path, sizeof path);
    ts_raw_exec(path, v3_schema);
    ts_raw_exec(path, v3_rows);

    /* without auto_migrate, the version-3 file is refused until migrated */
    assert_int_equal(ts_open_url(&s,
                                 "sqlite:%s?auto_migrate=0&queue_done_retention=10000&"
                                 "queue_dead_retention=5000",
                                 path),
                     BITT_OK);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_ESCHEMA);
    ts_expect_message("not migrated");
    bitt_schedule *sc;
    assert_int_equal(bitt_schedule_get(s, "tick", &sc), BITT_ESCHEMA);
    assert_int_equal(bitt_store_migrate(s), BITT_OK);
    assert_int_equal(bitt_store_migrate(s), BITT_OK); /* idempotent */
    check_schema(path);
    /* every old row reads the new columns' defaults */
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM queue WHERE done_at IS NULL AND "
                                      "result IS NULL AND result_kind = 0"),
                     5);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM schedule WHERE cron IS NULL AND "
                                      "topic IS NULL AND max_attempts = 1 AND priority = 0"),
                     1);

    assert_int_equal(bitt_clock_set_manual(s, 1000), BITT_OK);
    expect_get(s, 1, BITT_MSG_PENDING, 0);
    expect_get(s, 2, BITT_MSG_PENDING, 5);
    expect_get(s, 3, BITT_MSG_LEASED, 0);
    expect_get(s, 4, BITT_MSG_DEAD, 0);
    expect_get(s, 5, BITT_MSG_DELAYED, 0);
    expect_stats(s, 2, 1, 1, 1, 0);

    /* an old dedup key still holds; the dead letter's does not */
    bitt_enqueue_options d = BITT_ENQUEUE_OPTIONS_INIT;
    d.dedup_key = "k1";
    d.dedup_key_len = 2;
    uint64_t id = 0;
    assert_int_equal(bitt_queue_enqueue(s, "t", "dup", 3, 0, &d, &id), BITT_EXISTS);
    assert_int_equal(id, 1);

    /* the old lease acked with a result is kept done, its key given up */
    assert_int_equal(bitt_queue_ack_result(s, "t", 3, TOKEN, "{\"n\":3}", 7, BITT_KIND_JSON),
                     BITT_OK);
    bitt_message *m;
    assert_int_equal(bitt_queue_get(s, "t", 3, &m), BITT_OK);
    assert_int_equal(bitt_message_state(m), BITT_MSG_DONE);
    assert_int_equal(bitt_message_done_at(m), 1000);
    size_t len = 0;
    const uint8_t *r = bitt_message_result(m, &len);
    assert_non_null(r);
    assert_int_equal(len, 7);
    assert_memory_equal(r, "{\"n\":3}", 7);
    assert_int_equal(bitt_message_result_kind(m), BITT_KIND_JSON);
    assert_null(bitt_message_token(m));
    bitt_message_free(m);
    assert_int_equal(bitt_queue_ack(s, "t", 3, TOKEN), BITT_ETOKEN);
    expect_stats(s, 2, 1, 0, 1, 1);
    d.dedup_key = "k3";
    assert_int_equal(bitt_queue_enqueue(s, "t", "new", 3, 0, &d, &id), BITT_OK);
    assert_int_equal(id, 6);

    /* claims: priority 5 first, then the old order, never the done one */
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = 10;
    bitt_messages *list;
    assert_int_equal(bitt_queue_dequeue(s, "t", &o, &list), BITT_OK);
    static const uint64_t order[] = {2, 1, 6};
    assert_int_equal(bitt_messages_count(list), 3);
    for (size_t i = 0; i < 3; i++) {
        const bitt_message *c = bitt_messages_at(list, i);
        assert_int_equal(bitt_message_id(c), order[i]);
        assert_int_equal(bitt_queue_ack(s, "t", order[i], bitt_message_token(c)), BITT_OK);
    }
    bitt_messages_free(list);
    expect_stats(s, 0, 1, 0, 1, 4);

    /* the old interval schedule: read back with the new fields' defaults,
     * claimed at its old cadence; setting it again with a topic keeps it */
    assert_int_equal(bitt_schedule_get(s, "tick", &sc), BITT_OK);
    assert_int_equal(bitt_schedule_interval(sc), 1000);
    assert_null(bitt_schedule_cron(sc));
    assert_null(bitt_schedule_topic(sc));
    assert_int_equal(bitt_schedule_next_run_at(sc), 900);
    bitt_schedule_free(sc);
    assert_int_equal(bitt_schedule_claim(s, NULL, &sc), BITT_OK);
    assert_string_equal(bitt_schedule_key(sc), "tick");
    assert_int_equal(bitt_schedule_occurrence(sc), 900);
    assert_int_equal(bitt_schedule_next_run_at(sc), 1900);
    bitt_schedule_free(sc);
    bitt_schedule_options so = BITT_SCHEDULE_OPTIONS_INIT;
    so.topic = "t";
    so.priority = 2;
    assert_int_equal(bitt_schedule_set(s, "tick", 1000, "p", 1, BITT_KIND_BYTES, &so), BITT_OK);
    assert_int_equal(bitt_schedule_get(s, "tick", &sc), BITT_OK);
    assert_int_equal(bitt_schedule_next_run_at(sc), 1900);
    assert_string_equal(bitt_schedule_topic(sc), "t");
    bitt_schedule_free(sc);
    bitt_schedule_options cron = BITT_SCHEDULE_OPTIONS_INIT;
    cron.cron = "0 0 * * *";
    assert_int_equal(bitt_schedule_set(s, "nightly", 0, "n", 1, BITT_KIND_BYTES, &cron), BITT_OK);
    assert_int_equal(bitt_schedule_get(s, "nightly", &sc), BITT_OK);
    assert_string_equal(bitt_schedule_cron(sc), "0 0 * * *");
    assert_int_equal(bitt_schedule_interval(sc), 0);
    assert_int_equal(bitt_schedule_next_run_at(sc), 86400000);
    bitt_schedule_free(sc);

    /* the old dead letter ages out by its failed_at (300 + 5000) */
    assert_int_equal(bitt_clock_set_manual(s, 5299), BITT_OK);
    expect_get(s, 4, BITT_MSG_DEAD, 0);
    assert_int_equal(bitt_clock_set_manual(s, 5300), BITT_OK);
    assert_int_equal(bitt_queue_get(s, "t", 4, &m), BITT_NOTFOUND);
    /* and the done ones at done_at + 10000, all at once by a purge */
    assert_int_equal(bitt_clock_set_manual(s, 11000), BITT_OK);
    uint64_t removed = 0;
    assert_int_equal(bitt_queue_purge(s, NULL, &removed), BITT_OK);
    assert_int_equal(removed, 4);
    /* tick was not claimed since it got its topic: only message 5 is left */
    expect_stats(s, 1, 0, 0, 0, 0);
    bitt_store_close(s);
    check_schema(path);
}

/* Several processes open one version-3 file at once: one migrates, the
 * others find it done, and every enqueue lands. */
static void test_migrate_v3_processes(void **state)
{
    (void)state;
    char path[1200];
    ts_fresh_path("v3many.db", path, sizeof path);
    ts_raw_exec(path, v3_schema);
    ts_raw_exec(path, v3_rows);
    ts_processes_enqueue(path, 6);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM queue"), 11);
    check_schema(path);
}

int main(void)
{
    const char *tmp = getenv("BITT_TEST_TMP");
    snprintf(ts_dir, sizeof ts_dir, "%s/sqlite_migrate_v3", tmp && *tmp ? tmp : "/tmp/bitt-test");
    char parent[1100];
    snprintf(parent, sizeof parent, "%s", ts_dir);
    *strrchr(parent, '/') = '\0';
    mkdir(parent, 0777);
    mkdir(ts_dir, 0777);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrate_v3),
        cmocka_unit_test(test_migrate_v3_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
