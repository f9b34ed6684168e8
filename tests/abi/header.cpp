/*
 * header.cpp: bitt.h compiles alone as C++ (tests/abi.cmake checks C++11
 * and C++17 with -Wall -Wextra -pedantic -Werror -fsyntax-only). Included
 * twice to check the include guard; the INIT and version macros are used.
 */
#include "bitt.h"
#include "bitt.h"

static_assert(BITT_VERSION_NUMBER ==
                  BITT_VERSION_MAJOR * 1000000 + BITT_VERSION_MINOR * 1000 + BITT_VERSION_PATCH,
              "BITT_VERSION_NUMBER does not match its parts");
static_assert(BITT_OK == 0 && BITT_EINVAL < 0, "status codes");

int bitt_header_test();

int bitt_header_test()
{
    bitt_buf buf = BITT_BUF_INIT;
    bitt_list_options opts = BITT_LIST_OPTIONS_INIT;
    int (*open_fn)(const char *, bitt_store **) = &bitt_store_open;
    return static_cast<int>(buf.len) + static_cast<int>(opts.version) -
           BITT_LIST_OPTIONS_VERSION + open_fn("memory:", nullptr);
}
