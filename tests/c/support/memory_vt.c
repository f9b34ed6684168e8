/* tests/c/support/memory_vt.c: see memory_vt.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "memory_vt.h"

bitt_backend *memory_vt_open(void)
{
    bitt_url url = {.scheme = "memory", .rest = ""};
    bitt_limits limits = {.max_key_size = BITT_DEFAULT_MAX_KEY_SIZE,
                          .max_value_size = BITT_DEFAULT_MAX_VALUE_SIZE};
    bitt_backend *be = NULL;
    assert_int_equal(VT.open(&url, &limits, &be), BITT_OK);
    assert_int_equal(VT.migrate(be), BITT_OK);
    return be;
}
