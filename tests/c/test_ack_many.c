/*
 * bitt_queue_ack_many's arguments the contract cannot write down (NULL
 * arrays, a NULL token, NULL outputs), on memory: and SQLite. Each bad call
 * must fail whole, name the problem, and leave the deliveries acknowledgeable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bitt.h"

typedef struct fixture {
    bitt_store *store;
    uint64_t ids[3];
    char tokens[3][64];
} fixture;

/* Three messages on topic "t", all leased. */
static void lease_three(fixture *f, const char *url)
{
    assert_int_equal(bitt_store_open(url, &f->store), BITT_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(bitt_queue_enqueue(f->store, "t", "x", 1, BITT_KIND_BYTES, NULL, NULL),
                         BITT_OK);
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = 3;
    bitt_messages *list = NULL;
    assert_int_equal(bitt_queue_dequeue(f->store, "t", &o, &list), BITT_OK);
    assert_int_equal(bitt_messages_count(list), 3);
    for (size_t i = 0; i < 3; i++) {
        const bitt_message *m = bitt_messages_at(list, i);
        f->ids[i] = bitt_message_id(m);
        snprintf(f->tokens[i], sizeof f->tokens[i], "%s", bitt_message_token(m));
    }
    bitt_messages_free(list);
}

static uint64_t processing(bitt_store *s)
{
    bitt_queue_stats st = {.version = BITT_QUEUE_STATS_VERSION};
    assert_int_equal(bitt_queue_stats_get(s, "t", &st), BITT_OK);
    return st.processing;
}

static void expect_refused(int rc, int code, const char *words)
{
    assert_int_equal(rc, code);
    assert_int_equal(bitt_error_last_code(), code);
    assert_non_null(strstr(bitt_error_last(), words));
}

static void run_bad_inputs(const char *url)
{
    fixture f = {0};
    lease_three(&f, url);
    const char *tok[3] = {f.tokens[0], f.tokens[1], f.tokens[2]};
    int st[3] = {7, 7, 7};
    size_t acked = 99;

    expect_refused(bitt_queue_ack_many(NULL, "t", f.ids, tok, 3, st, &acked), BITT_EINVAL, "store");
    expect_refused(bitt_queue_ack_many(f.store, NULL, f.ids, tok, 3, st, &acked), BITT_EINVAL,
                   "topic");
    expect_refused(bitt_queue_ack_many(f.store, "t", NULL, tok, 3, st, &acked), BITT_EINVAL,
                   "NULL");
    expect_refused(bitt_queue_ack_many(f.store, "t", f.ids, NULL, 3, st, &acked), BITT_EINVAL,
                   "NULL");
    const char *with_null[3] = {f.tokens[0], NULL, f.tokens[2]};
    expect_refused(bitt_queue_ack_many(f.store, "t", f.ids, with_null, 3, st, &acked), BITT_EINVAL,
                   "token 1 is NULL");
    expect_refused(bitt_queue_ack_many(f.store, "t", f.ids, tok, BITT_ACK_MANY_MAX + 1, st, &acked),
                   BITT_ETOOLARGE, "maximum");
    assert_int_equal(acked, 0);
    assert_int_equal(st[0], 7); /* a refused call writes no status */
    assert_int_equal(processing(f.store), 3);

    /* count 0 with NULL arrays is a no-op */
    assert_int_equal(bitt_queue_ack_many(f.store, "t", NULL, NULL, 0, NULL, &acked), BITT_OK);
    assert_int_equal(acked, 0);

    /* NULL outputs; then the stale remainder reports through statuses, and
     * the call itself leaves no error behind */
    assert_int_equal(bitt_queue_ack_many(f.store, "t", f.ids, tok, 1, NULL, NULL), BITT_OK);
    assert_int_equal(bitt_queue_ack_many(f.store, "t", f.ids, tok, 3, st, &acked), BITT_OK);
    assert_int_equal(st[0], BITT_ETOKEN);
    assert_int_equal(st[1], BITT_OK);
    assert_int_equal(st[2], BITT_OK);
    assert_int_equal(acked, 2);
    assert_int_equal(bitt_error_last_code(), BITT_OK);
    assert_int_equal(processing(f.store), 0);
    bitt_store_close(f.store);
}

static void test_bad_inputs_memory(void **state)
{
    (void)state;
    run_bad_inputs("memory:");
}

static void test_bad_inputs_sqlite(void **state)
{
    (void)state;
    run_bad_inputs("sqlite::memory:");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_inputs_memory),
        cmocka_unit_test(test_bad_inputs_sqlite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
