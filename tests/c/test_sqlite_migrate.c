/*
 * The SQLite schema's version-3 migration (priorities): a file written by
 * version 2 (made here with version 2's DDL and rows written as version 2
 * wrote them) is refused until migrated, gains the priority column (every
 * old message at priority 0) and the claim index by priority in place of
 * the old one, and its messages, pending, delayed, expired and dead, are
 * where they were: claimable at priority 0 in their old order, below a
 * higher priority and above a lower one. Several processes may migrate one
 * file at once.
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

/* Version 2's DDL, as core/sqlite/schema.c had it (no table prefix). */
static const char v2_schema[] =
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL, "
    "version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID;"
    "CREATE INDEX kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;"
    "CREATE TABLE queue (id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, "
    "state INTEGER NOT NULL, due_at INTEGER NOT NULL, attempts INTEGER NOT NULL, "
    "max_attempts INTEGER NOT NULL, token TEXT, last_error TEXT, payload BLOB NOT NULL, "
    "kind INTEGER NOT NULL, created_at INTEGER NOT NULL, failed_at INTEGER NOT NULL, "
    "dedup_key BLOB);"
    "CREATE INDEX queue_claim ON queue (topic, state, due_at);"
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
    "INSERT INTO meta VALUES ('versionstamp', 41), ('schema_version', 2);";

/* Topic t as of 1000 ms: 1 pending since 500, 2 pending since 900, 3 a
 * lease (attempt 1 of 3) that ran out at 800, 4 dead, 5 delayed to 5000;
 * 6 waits in another topic. */
static const char v2_rows[] =
    "INSERT INTO queue (id, topic, state, due_at, attempts, max_attempts, token, last_error, "
    "payload, kind, created_at, failed_at, dedup_key) VALUES "
    "(1, 't', 0, 500, 0, 3, NULL, NULL, x'6f6e65', 0, 500, 0, NULL),"
    "(2, 't', 0, 900, 1, 3, NULL, 'boom', x'74776f', 0, 100, 0, x'6b32'),"
    "(3, 't', 1, 800, 1, 3, '0123456789abcdef0123456789abcdef', NULL, x'7468726565', 0, 200, 0, "
    "NULL),"
    "(4, 't', 2, 300, 3, 3, NULL, 'gave up', x'666f7572', 0, 50, 300, NULL),"
    "(5, 't', 0, 5000, 0, 3, NULL, NULL, x'66697665', 0, 600, 0, NULL),"
    "(6, 'u', 0, 700, 0, 3, NULL, NULL, x'736978', 0, 700, 0, NULL);";

static void enqueue_at(bitt_store *s, const char *payload, int32_t priority, uint64_t want_id)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.priority = priority;
    uint64_t id = 0;
    assert_int_equal(bitt_queue_enqueue(s, "t", payload, strlen(payload), 0, &o, &id), BITT_OK);
    assert_int_equal(id, want_id);
}

/* A message by id: its state and priority after the migration. */
static void expect_get(bitt_store *s, uint64_t id, int state, uint32_t attempts)
{
    bitt_message *m;
    assert_int_equal(bitt_queue_get(s, "t", id, &m), BITT_OK);
    assert_int_equal(bitt_message_state(m), state);
    assert_int_equal(bitt_message_priority(m), 0);
    assert_int_equal(bitt_message_attempts(m), attempts);
    bitt_message_free(m);
}

static void test_migrate_v2(void **state)
{
    (void)state;
    char path[1200];
    bitt_store *s;
    ts_fresh_path("v2.db", path, sizeof path);
    ts_raw_exec(path, v2_schema);
    ts_raw_exec(path, v2_rows);

    /* without auto_migrate, the version-2 file is refused until migrated */
    assert_int_equal(ts_open_url(&s, "sqlite:%s?auto_migrate=0", path), BITT_OK);
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_ESCHEMA);
    ts_expect_message("not migrated");
    assert_int_equal(bitt_store_migrate(s), BITT_OK);
    assert_int_equal(bitt_store_migrate(s), BITT_OK); /* idempotent */
    assert_int_equal(ts_raw_int(path, "SELECT value FROM meta WHERE name = 'schema_version'"), 4);
    assert_int_equal(
        ts_raw_int(path, "SELECT count(*) FROM pragma_table_info('queue') WHERE name = 'priority'"),
        1);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM queue WHERE priority <> 0"), 0);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM queue"), 6);
    /* the claim index by priority replaces the old one */
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' "
                                      "AND name = 'queue_claim'"),
                     0);
    /* (topic, state, priority DESC, due_at), then the rowid id */
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM pragma_index_xinfo('queue_pick') "
                                      "WHERE (seqno = 0 AND name = 'topic') OR "
                                      "(seqno = 1 AND name = 'state') OR "
                                      "(seqno = 2 AND name = 'priority' AND desc) OR "
                                      "(seqno = 3 AND name = 'due_at' AND NOT desc) OR "
                                      "(seqno = 4 AND cid = -1)"),
                     5);

    assert_int_equal(bitt_clock_set_manual(s, 1000), BITT_OK);
    expect_get(s, 1, BITT_MSG_PENDING, 0);
    expect_get(s, 3, BITT_MSG_PENDING, 1);
    expect_get(s, 5, BITT_MSG_DELAYED, 0);
    expect_get(s, 4, BITT_MSG_DEAD, 3);
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    assert_int_equal(st.pending, 3);
    assert_int_equal(st.delayed, 1);
    assert_int_equal(st.dead, 1);

    /* the old messages sort at priority 0 by their old order: below 7,
     * above -1, whatever the ids */
    enqueue_at(s, "high", 7, 7);
    enqueue_at(s, "low", -1, 8);
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = 10;
    bitt_messages *list;
    assert_int_equal(bitt_queue_dequeue(s, "t", &o, &list), BITT_OK);
    static const uint64_t order[] = {7, 1, 3, 2, 8};
    static const int32_t prio[] = {7, 0, 0, 0, -1};
    static const uint32_t attempts[] = {1, 1, 2, 2, 1};
    assert_int_equal(bitt_messages_count(list), 5);
    for (size_t i = 0; i < 5; i++) {
        const bitt_message *m = bitt_messages_at(list, i);
        assert_int_equal(bitt_message_id(m), order[i]);
        assert_int_equal(bitt_message_priority(m), prio[i]);
        assert_int_equal(bitt_message_attempts(m), attempts[i]);
        assert_int_equal(bitt_queue_ack(s, "t", order[i], bitt_message_token(m)), BITT_OK);
    }
    bitt_messages_free(list);
    /* the dedup key of a version-2 row was freed by its ack */
    bitt_enqueue_options d = BITT_ENQUEUE_OPTIONS_INIT;
    d.dedup_key = "k2";
    d.dedup_key_len = 2;
    assert_int_equal(bitt_queue_enqueue(s, "t", "again", 5, 0, &d, NULL), BITT_OK);
    /* and a dead letter retried keeps priority 0 */
    uint64_t n;
    assert_int_equal(bitt_queue_dead_retry(s, "t", 4, &n), BITT_OK);
    assert_int_equal(n, 1);
    expect_get(s, 4, BITT_MSG_PENDING, 0);
    bitt_store_close(s);
}

/* Several processes open one version-2 file at once: one migrates, the
 * others find it done, and every enqueue lands. */
static void test_migrate_v2_processes(void **state)
{
    (void)state;
    char path[1200];
    ts_fresh_path("v2many.db", path, sizeof path);
    ts_raw_exec(path, v2_schema);
    ts_raw_exec(path, v2_rows);
    ts_processes_enqueue(path, 6);
    assert_int_equal(ts_raw_int(path, "SELECT count(*) FROM queue"), 12);
    assert_int_equal(ts_raw_int(path, "SELECT sum(priority) FROM queue"), 15);
    assert_int_equal(ts_raw_int(path, "SELECT value FROM meta WHERE name = 'schema_version'"), 4);
}

int main(void)
{
    const char *tmp = getenv("BITT_TEST_TMP");
    snprintf(ts_dir, sizeof ts_dir, "%s/sqlite_migrate", tmp && *tmp ? tmp : "/tmp/bitt-test");
    char parent[1100];
    snprintf(parent, sizeof parent, "%s", ts_dir);
    *strrchr(parent, '/') = '\0';
    mkdir(parent, 0777);
    mkdir(ts_dir, 0777);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrate_v2),
        cmocka_unit_test(test_migrate_v2_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
