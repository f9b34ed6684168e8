/*
 * Bugs the fuzzers found (tests/fuzz), pinned as unit tests so the normal
 * suite keeps them fixed; each input is also in tests/fuzz/corpus/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

/* fuzz_cursor: the cursor text's length bound rounds up to whole base64
 * groups, which let a key of max_key_size + 1 bytes through. */
static void test_cursor_key_over_limit(void **state)
{
    (void)state;
    bitt_store *s;
    assert_int_equal(bitt_store_open("memory:", &s), BITT_OK);
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    uint8_t key[BITT_DEFAULT_MAX_KEY_SIZE + 1];
    memset(key, 'k', sizeof key);
    for (size_t len = sizeof key - 1; len <= sizeof key; len++) {
        char *cursor = NULL;
        assert_int_equal(bitt__cursor_encode(bitt__selector_hash(&o), key, len, &cursor), BITT_OK);
        o.cursor = cursor;
        bitt_entries *page = NULL;
        int rc = bitt_kv_list(s, &o, &page);
        assert_int_equal(rc, len > BITT_DEFAULT_MAX_KEY_SIZE ? BITT_ECURSOR : BITT_OK);
        bitt_entries_free(page);
        free(cursor);
    }
    bitt_store_close(s);
}

/* fuzz_url: a password with a raw '?' puts its tail in the query; the
 * parser quoted that text ("option 'ss@host' has no value"). */
static void test_url_never_quotes_password_tail(void **state)
{
    (void)state;
    static const char *const urls[] = {
        "redis://:pa?ssWORD@127.0.0.1:1/0",
        "postgres://u:pa?ssWORD@127.0.0.1:1/db",
        "postgres://u:pa?x=1&ssWORD@127.0.0.1:1/db",
        "memory:?max_key_size=ssWORD@x",
    };
    for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
        bitt_store *s = NULL;
        assert_int_equal(bitt_store_open(urls[i], &s), BITT_EURL);
        assert_null(s);
        if (strstr(bitt_error_last(), "ssWORD"))
            fail_msg("%s: the message quotes the password: %s", urls[i], bitt_error_last());
    }
    /* Plain option names and integer values are still quoted. */
    bitt_store *s = NULL;
    assert_int_equal(bitt_store_open("memory:?max_key_size=abc", &s), BITT_EURL);
    assert_non_null(strstr(bitt_error_last(), "max_key_size=abc"));
    assert_int_equal(bitt_store_open("memory:?no_value", &s), BITT_EURL);
    assert_non_null(strstr(bitt_error_last(), "'no_value'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_key_over_limit),
        cmocka_unit_test(test_url_never_quotes_password_tail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
