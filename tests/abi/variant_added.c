/* variant_added.c: one more exported function, for the ABI check's own test
 * (tests/abi/variants.cmake): an addition in a new version node must pass,
 * the same addition in a released node must fail. Never part of libbitt. */
#include "bitt.h"

BITT_API int bitt_abi_variant_added(void);

int bitt_abi_variant_added(void)
{
    return 1;
}
