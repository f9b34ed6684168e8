/*
 * The Redis backend's scripts as one Redis Functions library
 * (core/redis/functions.c), on a private server (FUNCTION FLUSH and ACL
 * users would disturb tests sharing $BITT_TEST_REDIS_URL's):
 *
 *   - the first call loads one library, named bitt_<16 hex digits>, and
 *     every script runs as FCALL of it (no EVALSHA);
 *   - after FUNCTION FLUSH the next call loads it again, writes included;
 *   - a user whose ACL refuses FCALL and FUNCTION gets the same results
 *     through EVALSHA, SCRIPT FLUSH included.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "bitt.h"
#include "private_redis.h"

static ts_server g_srv;
static redisContext *g_raw;

static int start_server(void **state)
{
    (void)state;
    return ts_redis_start(&g_srv, "rfn", &g_raw);
}

static int stop_server(void **state)
{
    (void)state;
    ts_redis_stop(&g_srv, &g_raw, "test_redis_functions");
    return 0;
}

/* A raw command whose reply must not be an error; the reply, or NULL. */
static redisReply *raw(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(g_raw, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", fmt, r->str);
    return r;
}

/* calls= of a command in INFO commandstats (0 when never called). */
static long calls_of(const char *command)
{
    redisReply *r = raw("INFO commandstats");
    char field[64];
    snprintf(field, sizeof field, "cmdstat_%s:calls=", command);
    const char *at = strstr(r->str, field);
    long n = at ? atol(at + strlen(field)) : 0;
    freeReplyObject(r);
    return n;
}

/* The names of the libraries on the server, joined by spaces. */
static void library_names(char *out, size_t size)
{
    redisReply *r = raw("FUNCTION LIST");
    out[0] = '\0';
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *lib = r->element[i];
        for (size_t j = 0; j + 1 < lib->elements; j += 2)
            if (!strcmp(lib->element[j]->str, "library_name")) {
                strncat(out, lib->element[j + 1]->str, size - strlen(out) - 2);
                strcat(out, " ");
            }
    }
    freeReplyObject(r);
}

static bitt_store *open_store(const char *userinfo, const char *prefix)
{
    char url[512];
    snprintf(url, sizeof url, "redis://%s%s?prefix=%s", userinfo, g_srv.url + 8, prefix);
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc)
        fail_msg("bitt_store_open: %d %s", rc, bitt_error_last());
    return s;
}

/* A commit, a queue round trip and a read; the counter's value after. */
static int64_t some_work(bitt_store *s)
{
    int64_t v = 0;
    assert_int_equal(bitt_kv_increment(s, "n", 1, 1, 0, &v, NULL), BITT_OK);
    uint64_t id = 0;
    assert_int_equal(bitt_queue_enqueue(s, "t", "job", 3, BITT_KIND_BYTES, NULL, &id), BITT_OK);
    bitt_messages *m = NULL;
    assert_int_equal(bitt_queue_dequeue(s, "t", NULL, &m), BITT_OK);
    assert_int_equal(bitt_messages_count(m), 1);
    const bitt_message *msg = bitt_messages_at(m, 0);
    assert_true(bitt_message_id(msg) == id);
    assert_int_equal(bitt_queue_ack(s, "t", id, bitt_message_token(msg)), BITT_OK);
    bitt_messages_free(m);
    const void *keys[1] = {"n"};
    size_t lens[1] = {1};
    bitt_entries *e = NULL;
    assert_int_equal(bitt_kv_get_many(s, keys, lens, 1, &e), BITT_OK);
    bitt_entries_free(e);
    return v;
}

static void test_one_library_loaded_again_after_flush(void **state)
{
    (void)state;
    freeReplyObject(raw("FUNCTION FLUSH"));
    freeReplyObject(raw("CONFIG RESETSTAT"));
    bitt_store *s = open_store("", "fn");
    assert_true(some_work(s) == 1);
    char names[256];
    library_names(names, sizeof names);
    assert_int_equal(strlen(names), strlen("bitt_0123456789abcdef "));
    assert_true(!strncmp(names, "bitt_", 5));
    assert_true(strspn(names + 5, "0123456789abcdef") == 16);
    assert_int_equal(calls_of("function|load"), 1);
    assert_true(calls_of("fcall") >= 5);
    assert_int_equal(calls_of("evalsha"), 0);

    /* The server forgets it: the next call (a write) loads it again. */
    freeReplyObject(raw("FUNCTION FLUSH"));
    assert_true(some_work(s) == 2);
    assert_int_equal(calls_of("function|load"), 2);
    char again[256];
    library_names(again, sizeof again);
    assert_string_equal(again, names);
    assert_int_equal(calls_of("evalsha"), 0);
    bitt_store_close(s);
}

static void test_acl_without_functions_uses_scripts(void **state)
{
    (void)state;
    freeReplyObject(raw("FUNCTION FLUSH"));
    freeReplyObject(raw("ACL SETUSER nofn on >pw ~* &* +@all -fcall -fcall_ro -function"));
    freeReplyObject(raw("CONFIG RESETSTAT"));
    bitt_store *s = open_store("nofn:pw@", "nofn");
    assert_true(some_work(s) == 1);
    /* The script cache goes too: NOSCRIPT, SCRIPT LOAD, the same answer. */
    freeReplyObject(raw("SCRIPT FLUSH"));
    assert_true(some_work(s) == 2);
    bitt_store_close(s);
    char names[256];
    library_names(names, sizeof names);
    assert_string_equal(names, "");
    assert_int_equal(calls_of("function|load"), 0);
    assert_true(calls_of("evalsha") >= 10);
    freeReplyObject(raw("ACL DELUSER nofn"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_library_loaded_again_after_flush),
        cmocka_unit_test(test_acl_without_functions_uses_scripts),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
