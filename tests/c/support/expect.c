/*
 * tests/c/support/expect.c: checks several test programs make on a store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"

void ts_expect_counter(bitt_store *s, const char *key, int64_t want)
{
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, key, strlen(key), &e), BITT_OK);
    int64_t v = 0;
    assert_int_equal(bitt_entry_counter(e, &v), BITT_OK);
    bitt_entry_free(e);
    if (v != want)
        fail_msg("counter %s is %lld, want %lld", key, (long long)v, (long long)want);
}
