/*
 * core/fault/fault.h: the fault-injection build's controls (CMake
 * BITT_FAULT_INJECTION=ON only). A test arms a countdown, makes one call,
 * and reads whether the armed failure was reached: the N-th allocation (of
 * bitt and, once bitt__fault_sqlite_install ran, of SQLite) returns NULL, or
 * the N-th call into the backend vtable fails with BITT_EBACKEND.
 * Only that one call fails; the ones after it succeed again.
 */
#ifndef BITT_FAULT_H
#define BITT_FAULT_H

#include <stdint.h>

#include "internal.h"

/* Fail the n-th allocation from now (n >= 1); 0 disarms. Resets the counts. */
void bitt__fault_alloc_arm(uint64_t n);
/* Fail the n-th backend call from now (n >= 1); 0 disarms. */
void bitt__fault_backend_arm(uint64_t n);
/* Whether the armed failure happened since the last arm. */
int bitt__fault_alloc_fired(void);
int bitt__fault_backend_fired(void);
/* Routes SQLite's allocations through the same countdown. Call before any
 * SQLite use (sqlite3_config needs an uninitialised library). */
int bitt__fault_sqlite_install(void);

/* Used by the engine: BITT_OK, or the injected failure (reported with
 * bitt__fail naming call) when this backend call is the armed one. */
int bitt__fault_backend_call(const char *call);
/* Replaces a store's backend with a wrapper that counts (and fails) every
 * vtable call; the real backend is closed by the wrapper's close. */
int bitt__fault_wrap_backend(const bitt_backend_ops **ops, bitt_backend **be);

#endif /* BITT_FAULT_H */
