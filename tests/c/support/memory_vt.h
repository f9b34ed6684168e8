/*
 * tests/c/support/memory_vt.h: the memory backend opened through its
 * vtable, for the tests that drive the backend's entries directly.
 */
#ifndef BITT_TEST_MEMORY_VT_H
#define BITT_TEST_MEMORY_VT_H

#include "internal.h"

#define VT bitt__memory_backend

/* A fresh memory backend with the default limits (a cmocka failure
 * otherwise); close it with VT.close. */
bitt_backend *memory_vt_open(void);

#endif /* BITT_TEST_MEMORY_VT_H */
