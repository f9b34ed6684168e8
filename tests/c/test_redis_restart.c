/*
 * A Redis restart in the middle of a run: the store is never reopened.
 * Calls during the restart fail cleanly (BITT_EBACKEND, within the
 * timeout), the next ones reconnect, and everything acknowledged before
 * survives (scripts/redis-test-server runs appendonly yes and SHUTDOWN
 * writes the append-only file): counters, queued messages, leases. A wait
 * (dequeue with wait_ms) running across the restart gets its subscription
 * back and still receives work enqueued after it.
 *
 * The restart stops the whole server, so this test runs its own one (from
 * scripts/redis-test-server, in a fresh directory under /tmp),
 * never the shared $BITT_TEST_REDIS_URL that parallel tests use; it still
 * needs that variable, as a sign that the environment has Redis.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "bitt.h"
#include "private_server.h"

static ts_server g_srv;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int start_server(void **state)
{
    (void)state;
    const char *shared = getenv("BITT_TEST_REDIS_URL");
    if (!shared || !*shared) {
        fprintf(stderr, "test_redis_restart: BITT_TEST_REDIS_URL is not set. Start a server with "
                        "scripts/redis-test-server start DIR and export the URL it prints "
                        "(scripts/test does both).\n");
        return -1;
    }
    return ts_server_start(&g_srv, "redis", "rtr");
}

static int stop_server(void **state)
{
    (void)state;
    return ts_server_stop(&g_srv);
}

/* Runs "redis-test-server restart DIR" in the background. */
static pid_t restart_async(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "exec \"$0\" restart \"$1\" >/dev/null", g_srv.script,
              g_srv.dir, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static bitt_store *open_store(void)
{
    char url[512];
    snprintf(url, sizeof url, "%s?prefix=restart&timeout=2000", g_srv.url);
    bitt_store *s = NULL;
    if (bitt_store_open(url, &s))
        fail_msg("open: %s", bitt_error_last());
    return s;
}

typedef struct waiter {
    bitt_store *store;
    int got; /* messages received */
    int errors;
    volatile int stop;
} waiter;

/* Dequeues with waits, across the restart, until told to stop. */
static void *waiter_main(void *arg)
{
    waiter *w = arg;
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.wait_ms = 300;
    time_t deadline = time(NULL) + 120;
    while (!w->stop && time(NULL) < deadline) {
        bitt_messages *list = NULL;
        int rc = bitt_queue_dequeue(w->store, "after", &o, &list);
        if (rc) {
            w->errors++;
            sleep_ms(20);
            continue;
        }
        for (size_t i = 0; i < bitt_messages_count(list); i++) {
            const bitt_message *m = bitt_messages_at(list, i);
            if (bitt_queue_ack(w->store, "after", bitt_message_id(m), bitt_message_token(m)) ==
                BITT_OK)
                w->got++;
        }
        bitt_messages_free(list);
    }
    return NULL;
}

static void test_restart_mid_run(void **state)
{
    (void)state;
    bitt_store *s = open_store();
    assert_int_equal(bitt_kv_set(s, "k", 1, "kept", 4, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    assert_int_equal(bitt_queue_enqueue(s, "before", "job", 3, BITT_KIND_BYTES, NULL, NULL),
                     BITT_OK);
    uint64_t epoch = 0;
    assert_int_equal(bitt_lease_acquire(s, "L", "me", 600000, &epoch, NULL), BITT_OK);

    waiter w = {.store = open_store()};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);

    /* Increments, with a restart started after the first 300. */
    int64_t acked = 0, failed = 0, after_ok = 0;
    pid_t restarter = 0;
    int restarted = 0;
    time_t deadline = time(NULL) + 120;
    for (long i = 0; i < 1000000 && time(NULL) < deadline; i++) {
        if (i == 300)
            restarter = restart_async();
        int rc = bitt_kv_increment(s, "n", 1, 1, 0, NULL, NULL);
        if (rc == BITT_OK) {
            acked++;
            after_ok += restarted;
        } else {
            if (rc != BITT_EBACKEND)
                fail_msg("a call during the restart gave %d: %s", rc, bitt_error_last());
            failed++;
            sleep_ms(5);
        }
        if (restarter && !restarted) {
            int st;
            if (waitpid(restarter, &st, WNOHANG) == restarter) {
                if (!WIFEXITED(st) || WEXITSTATUS(st))
                    fail_msg("redis-test-server restart failed");
                restarted = 1;
            }
        }
        if (restarted && after_ok >= 300)
            break;
    }
    assert_true(restarted);
    assert_true(after_ok >= 300);

    /* Work enqueued after the restart reaches the wait that spanned it. */
    assert_int_equal(bitt_queue_enqueue(s, "after", "job", 3, BITT_KIND_BYTES, NULL, NULL),
                     BITT_OK);
    for (int i = 0; i < 2000 && !w.got; i++)
        sleep_ms(10);
    w.stop = 1;
    pthread_join(t, NULL);
    assert_int_equal(w.got, 1);
    bitt_store_close(w.store);

    /* What was acknowledged is there; a call that failed may or may not
     * have been applied before the server went away. */
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "n", 1, &e), BITT_OK);
    int64_t n = 0;
    assert_int_equal(bitt_entry_counter(e, &n), BITT_OK);
    bitt_entry_free(e);
    if (n < acked || n > acked + failed)
        fail_msg("counter %lld after %lld acknowledged and %lld failed increments", (long long)n,
                 (long long)acked, (long long)failed);
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_OK);
    bitt_entry_free(e);
    bitt_buf owner = BITT_BUF_INIT;
    uint64_t held = 0;
    assert_int_equal(bitt_lease_get(s, "L", &owner, &held, NULL), BITT_OK);
    assert_int_equal(held, epoch);
    assert_string_equal((const char *)owner.ptr, "me");
    bitt_buf_dispose(&owner);
    bitt_messages *list = NULL;
    assert_int_equal(bitt_queue_dequeue(s, "before", NULL, &list), BITT_OK);
    assert_int_equal(bitt_messages_count(list), 1);
    bitt_messages_free(list);
    bitt_store_close(s);
    fprintf(stderr, "restart: %lld increments acknowledged, %lld failed during the restart\n",
            (long long)acked, (long long)failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_mid_run),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
