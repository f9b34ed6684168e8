/*
 * A PostgreSQL restart in the middle of a run (scripts/postgres-test-server
 * restart, that is pg_ctl restart -m fast): a store opened before it
 * recovers without being reopened. The call that meets the dead session
 * fails cleanly (BITT_EBACKEND, no password in the message), the next one
 * reconnects; committed data survives; a process incrementing all along
 * loses no acknowledged increment; a queue wait and a subscription made
 * before the restart hear work done after it.
 *
 * Needs $BITT_TEST_POSTGRES_DIR (the directory given to
 * scripts/postgres-test-server start) and $BITT_TEST_POSTGRES_URL. So that
 * tests running at the same time on that server are not cut off, this one
 * restarts a cluster of its own, started with the same script beside it
 * ($BITT_TEST_POSTGRES_DIR-restart-<pid>) and removed at the end.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "bitt.h"

#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#define HAVE_LIBPQ 1
#endif

#define SCRIPT BITT_CONTRACT_DIR "/../../scripts/postgres-test-server"

static const char *g_url, *g_dir;
static char g_schema[64];
static char g_private_dir[1024], g_private_url[512];

static int need_server(void **state)
{
    (void)state;
#ifndef HAVE_LIBPQ
    fprintf(stderr, "test_postgres_restart: this build has no libpq (the PostgreSQL backend is "
                    "not built): nothing to test against\n");
    return -1;
#else
    g_url = getenv("BITT_TEST_POSTGRES_URL");
    g_dir = getenv("BITT_TEST_POSTGRES_DIR");
    if (!g_url || !*g_url || strchr(g_url, '?') || !g_dir || !*g_dir) {
        fprintf(stderr, "test_postgres_restart: BITT_TEST_POSTGRES_URL and "
                        "BITT_TEST_POSTGRES_DIR must be set: start a server with "
                        "scripts/postgres-test-server start DIR, export the URL it prints and "
                        "DIR (scripts/test does both).\n");
        return -1;
    }
    snprintf(g_schema, sizeof g_schema, "t_%ld_restart", (long)getpid());
    snprintf(g_private_dir, sizeof g_private_dir, "%s-restart-%ld", g_dir, (long)getpid());
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' start '%s'", SCRIPT, g_private_dir);
    FILE *p = popen(cmd, "r");
    if (!p || !fgets(g_private_url, sizeof g_private_url, p)) {
        fprintf(stderr, "test_postgres_restart: %s failed\n", cmd);
        if (p)
            pclose(p);
        return -1;
    }
    g_private_url[strcspn(g_private_url, "\n")] = '\0';
    if (pclose(p) != 0 || strncmp(g_private_url, "postgres://", 11) != 0) {
        fprintf(stderr, "test_postgres_restart: %s failed\n", cmd);
        return -1;
    }
    g_url = g_private_url;
    return 0;
#endif
}

#ifdef HAVE_LIBPQ

/* Stops and removes the private cluster. */
static int remove_cluster(void **state)
{
    (void)state;
    if (!g_private_dir[0])
        return 0;
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "'%s' stop '%s' >/dev/null 2>&1; rm -rf '%s'", SCRIPT, g_private_dir,
             g_private_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static bitt_store *open_store(void)
{
    char url[512];
    snprintf(url, sizeof url, "%s?schema=%s", g_url, g_schema);
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("open: %d %s", rc, bitt_error_last());
    return s;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The password of the base URL. */
static void url_password(char *out, size_t size)
{
    const char *s = g_url + 11, *at = strrchr(s, '@'), *colon = strchr(s, ':');
    out[0] = '\0';
    if (at && colon && colon < at)
        snprintf(out, size, "%.*s", (int)(at - colon - 1), colon + 1);
}

/* What the incrementing child shares with the parent. */
typedef struct shared {
    int stop;
    int opened; /* the child's store is open: the restart may come */
    uint64_t ok, failed, attempts;
    int bad_status;
    char bad_message[256];
} shared;

static void child_increment(shared *sh)
{
    alarm(600); /* a safety net should the parent die: never reached in a run */
    bitt_store *s = NULL;
    char url[512];
    snprintf(url, sizeof url, "%s?schema=%s", g_url, g_schema);
    int rc = bitt_store_open(url, &s);
    if (rc) {
        sh->bad_status = rc;
        snprintf(sh->bad_message, sizeof sh->bad_message, "open: %s", bitt_error_last());
        _exit(1);
    }
    __atomic_store_n(&sh->opened, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
        __atomic_add_fetch(&sh->attempts, 1, __ATOMIC_SEQ_CST);
        rc = bitt_kv_increment(s, "n", 1, 1, 0, NULL, NULL);
        if (rc == BITT_OK) {
            __atomic_add_fetch(&sh->ok, 1, __ATOMIC_SEQ_CST);
        } else if (rc == BITT_EBACKEND) {
            __atomic_add_fetch(&sh->failed, 1, __ATOMIC_SEQ_CST);
            sleep_ms(20);
        } else if (!sh->bad_status) {
            sh->bad_status = rc;
            snprintf(sh->bad_message, sizeof sh->bad_message, "%s", bitt_error_last());
        }
        sleep_ms(2);
    }
    bitt_store_close(s);
    _exit(0);
}

typedef struct waiter {
    bitt_store *store;
    int rc;
    size_t got;
} waiter;

static void *wait_main(void *arg)
{
    waiter *w = arg;
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.wait_ms = 20000;
    bitt_messages *m = NULL;
    w->rc = bitt_queue_dequeue(w->store, "after", &o, &m);
    w->got = bitt_messages_count(m);
    bitt_messages_free(m);
    return NULL;
}

static void test_restart_in_the_middle(void **state)
{
    (void)state;
    char password[256];
    url_password(password, sizeof password);
    bitt_store *s = open_store();
    assert_int_equal(bitt_kv_set(s, "k", 1, "1", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    assert_int_equal(bitt_queue_enqueue(s, "before", "b", 1, BITT_KIND_BYTES, NULL, NULL), BITT_OK);
    /* A wait now opens the LISTEN connection that the restart will cut. */
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.wait_ms = 100;
    bitt_messages *m = NULL;
    assert_int_equal(bitt_queue_dequeue(s, "idle", &o, &m), BITT_OK);
    bitt_messages_free(m);
    bitt_sub *sub = NULL;
    assert_int_equal(bitt_pubsub_subscribe(s, "news", &sub), BITT_OK);

    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        child_increment(sh);
    /* The restart comes once the child is open and has incremented (on a
     * slow or busy machine that takes a while: waited for, never timed). */
    int child_st = 0;
    while (!(__atomic_load_n(&sh->opened, __ATOMIC_SEQ_CST) &&
             __atomic_load_n(&sh->ok, __ATOMIC_SEQ_CST) > 0)) {
        if (waitpid(child, &child_st, WNOHANG) == child)
            fail_msg("the incrementing process ended before the restart (%d): %s", child_st,
                     sh->bad_message);
        sleep_ms(10);
    }

    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' restart '%s' >/dev/null", SCRIPT, g_private_dir);
    assert_int_equal(system(cmd), 0);

    /* The first call may meet the dead session; a later one works. */
    int failures = 0, rc = BITT_EBACKEND;
    bitt_entry *e = NULL;
    for (int i = 0; i < 300; i++) {
        rc = bitt_kv_get(s, "k", 1, &e);
        if (rc != BITT_EBACKEND)
            break;
        failures++;
        assert_true(bitt_error_last()[0] != '\0');
        if (*password && strstr(bitt_error_last(), password))
            fail_msg("the message \"%s\" shows the password", bitt_error_last());
        sleep_ms(100);
    }
    if (rc != BITT_OK)
        fail_msg("no recovery: %d %s", rc, bitt_error_last());
    assert_true(failures <= 1); /* the server was back: one failed call, then a reconnect */
    size_t len;
    assert_memory_equal(bitt_entry_value(e, &len), "1", 1);
    bitt_entry_free(e);

    /* Let the child go on a little past the restart (however long 20
     * increments take here, unless it ends), then stop it. */
    uint64_t ok_then = __atomic_load_n(&sh->ok, __ATOMIC_SEQ_CST);
    int ended = 0;
    while (__atomic_load_n(&sh->ok, __ATOMIC_SEQ_CST) < ok_then + 20 &&
           !(ended = waitpid(child, &child_st, WNOHANG) == child))
        sleep_ms(20);
    __atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
    if (!ended)
        waitpid(child, &child_st, 0);
    /* its own words first: they say why it failed */
    if (sh->bad_status)
        fail_msg("the incrementing process got %d: %s", sh->bad_status, sh->bad_message);
    if (!WIFEXITED(child_st) || WEXITSTATUS(child_st) != 0)
        fail_msg("the incrementing process ended with status %d", child_st);
    assert_true(sh->ok >= ok_then + 20);
    /* Every acknowledged increment is there; an unacknowledged one may be. */
    assert_int_equal(bitt_kv_get(s, "n", 1, &e), BITT_OK);
    int64_t n = 0;
    assert_int_equal(bitt_entry_counter(e, &n), BITT_OK);
    bitt_entry_free(e);
    assert_true((uint64_t)n >= sh->ok);
    assert_true((uint64_t)n <= sh->ok + sh->failed);

    /* The message enqueued before the restart is still there. */
    o.wait_ms = 0;
    assert_int_equal(bitt_queue_dequeue(s, "before", &o, &m), BITT_OK);
    assert_int_equal(bitt_messages_count(m), 1);
    const bitt_message *msg = bitt_messages_at(m, 0);
    assert_int_equal(bitt_queue_ack(s, "before", bitt_message_id(msg), bitt_message_token(msg)),
                     BITT_OK);
    bitt_messages_free(m);

    /* A wait (its LISTEN connection cut by the restart) hears an enqueue
     * by another handle; so does the subscription. */
    waiter w = {s, 0, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, wait_main, &w), 0);
    sleep_ms(200);
    bitt_store *other = open_store();
    assert_int_equal(bitt_queue_enqueue(other, "after", "a", 1, BITT_KIND_BYTES, NULL, NULL),
                     BITT_OK);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, BITT_OK);
    assert_int_equal(w.got, 1);
    assert_int_equal(bitt_pubsub_publish(other, "news", "n", 1), BITT_OK);
    bitt_message *note = NULL;
    assert_int_equal(bitt_pubsub_next(sub, 20000, &note), BITT_OK);
    bitt_message_free(note);
    bitt_pubsub_close(sub);
    bitt_store_close(other);
    bitt_store_close(s);
    munmap(sh, sizeof *sh);
}

#endif /* HAVE_LIBPQ */

int main(void)
{
#ifdef HAVE_LIBPQ
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_in_the_middle),
    };
    return cmocka_run_group_tests(tests, need_server, remove_cluster);
#else
    return need_server(NULL) ? 1 : 0;
#endif
}
