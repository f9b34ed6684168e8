/*
 * header.c: bitt.h compiles alone as C11 with -Wall -Wextra -pedantic
 * -Werror (tests/abi.cmake runs the compiler with -fsyntax-only). Included
 * twice to check the include guard; the INIT macros and the version macros
 * are used so that they are checked too.
 */
#include "bitt.h"
#include "bitt.h"

#if BITT_VERSION_NUMBER !=                                                                         \
    BITT_VERSION_MAJOR * 1000000 + BITT_VERSION_MINOR * 1000 + BITT_VERSION_PATCH
#error "BITT_VERSION_NUMBER does not match its parts"
#endif

_Static_assert(BITT_OK == 0 && BITT_EINVAL < 0, "status codes");
_Static_assert(sizeof(BITT_VERSION_STRING) > 1, "version string");

int bitt_header_test(void);

int bitt_header_test(void)
{
    bitt_buf buf = BITT_BUF_INIT;
    bitt_list_options opts = BITT_LIST_OPTIONS_INIT;
    return (int)buf.len + (int)opts.version - BITT_LIST_OPTIONS_VERSION;
}
