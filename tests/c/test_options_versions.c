/*
 * test_options_versions: a caller compiled against an older bitt.h passes an
 * older, shorter options struct with its version; the library must neither
 * write nor read past that version's members (0.6: bitt_enqueue_options
 * version 2 added priority after dedup_key_len).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bitt.h"

/* bitt_enqueue_options as bitt.h 0.5 declared it (version 1), followed by
 * what lies after the caller's struct in its memory. */
typedef struct {
    unsigned int version;
    int64_t delay_ms;
    uint32_t max_attempts;
    const void *dedup_key;
    size_t dedup_key_len;
} enqueue_options_v1;

typedef struct {
    enqueue_options_v1 opts;
    unsigned char after[sizeof(bitt_enqueue_options)];
} v1_caller;

static void test_init_writes_only_a_v1_struct(void **state)
{
    (void)state;
    v1_caller c;
    memset(&c, 0xA5, sizeof c);
    assert_int_equal(bitt_enqueue_options_init((bitt_enqueue_options *)(void *)&c.opts, 1),
                     BITT_OK);
    assert_int_equal(c.opts.version, 1);
    assert_int_equal(c.opts.delay_ms, 0);
    assert_int_equal(c.opts.max_attempts, 0);
    assert_null(c.opts.dedup_key);
    assert_int_equal(c.opts.dedup_key_len, 0);
    for (size_t i = 0; i < sizeof c.after; i++)
        assert_int_equal(c.after[i], 0xA5);
}

static void test_init_refuses_unknown_versions(void **state)
{
    (void)state;
    bitt_enqueue_options o;
    assert_int_equal(bitt_enqueue_options_init(&o, 0), BITT_EINVAL);
    assert_non_null(strstr(bitt_error_last(), "version 0"));
    assert_int_equal(bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION + 1), BITT_EINVAL);
    assert_int_equal(bitt_enqueue_options_init(NULL, 1), BITT_EINVAL);
    assert_int_equal(bitt_enqueue_options_init(&o, BITT_ENQUEUE_OPTIONS_VERSION), BITT_OK);
    assert_int_equal(o.version, BITT_ENQUEUE_OPTIONS_VERSION);
    assert_int_equal(o.priority, 0);
}

/* Whatever follows a v1 struct is not its priority: the message is at 0. */
static void test_enqueue_reads_only_a_v1_struct(void **state)
{
    (void)state;
    bitt_store *s = NULL;
    assert_int_equal(bitt_store_open("memory:", &s), BITT_OK);
    v1_caller c;
    memset(&c, 0x7F, sizeof c);
    assert_int_equal(bitt_enqueue_options_init((bitt_enqueue_options *)(void *)&c.opts, 1),
                     BITT_OK);
    c.opts.max_attempts = 4;
    uint64_t id = 0;
    assert_int_equal(bitt_queue_enqueue(s, "t", "p", 1, BITT_KIND_BYTES,
                                        (const bitt_enqueue_options *)(const void *)&c.opts, &id),
                     BITT_OK);
    bitt_message *m = NULL;
    assert_int_equal(bitt_queue_get(s, "t", id, &m), BITT_OK);
    assert_int_equal(bitt_message_priority(m), 0);
    assert_int_equal(bitt_message_max_attempts(m), 4);
    bitt_message_free(m);

    bitt_enqueue_options v2 = BITT_ENQUEUE_OPTIONS_INIT;
    v2.priority = -3;
    assert_int_equal(bitt_queue_enqueue(s, "t", "q", 1, BITT_KIND_BYTES, &v2, &id), BITT_OK);
    assert_int_equal(bitt_queue_get(s, "t", id, &m), BITT_OK);
    assert_int_equal(bitt_message_priority(m), -3);
    bitt_message_free(m);
    bitt_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_writes_only_a_v1_struct),
        cmocka_unit_test(test_init_refuses_unknown_versions),
        cmocka_unit_test(test_enqueue_reads_only_a_v1_struct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
