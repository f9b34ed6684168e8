/* The loaded library's version, so bindings can compare it with the header. */
#include "internal.h"

const char *bitt_version(void)
{
    return BITT_VERSION_STRING;
}

int bitt_version_number(void)
{
    return BITT_VERSION_NUMBER;
}
