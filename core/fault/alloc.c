/* The N-th allocation fails: the countdown behind core/alloc.h and the
 * SQLite allocator that shares it (fault-injection build only). */
#include <sqlite3.h>
#include <stdatomic.h>

#include "fault/fault.h"

static atomic_uint_fast64_t alloc_left; /* allocations until the failure; 0 = off */
static atomic_int alloc_fired;

void bitt__fault_alloc_arm(uint64_t n)
{
    atomic_store(&alloc_fired, 0);
    atomic_store(&alloc_left, n);
}

int bitt__fault_alloc_fired(void)
{
    return atomic_load(&alloc_fired);
}

int bitt__fault_alloc_fails(void)
{
    uint_fast64_t left = atomic_load(&alloc_left);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&alloc_left, &left, left - 1)) {
            if (left != 1)
                return 0;
            atomic_store(&alloc_fired, 1);
            return 1;
        }
    }
    return 0;
}

/* SQLite's own allocator, wrapped: malloc and realloc take part in the
 * countdown; the rest forwards unchanged. */
static sqlite3_mem_methods sqlite_real;

static void *sqlite_malloc(int n)
{
    return bitt__fault_alloc_fails() ? NULL : sqlite_real.xMalloc(n);
}

static void sqlite_free(void *p)
{
    sqlite_real.xFree(p);
}

static void *sqlite_realloc(void *p, int n)
{
    return bitt__fault_alloc_fails() ? NULL : sqlite_real.xRealloc(p, n);
}

static int sqlite_size(void *p)
{
    return sqlite_real.xSize(p);
}

static int sqlite_roundup(int n)
{
    return sqlite_real.xRoundup(n);
}

static int sqlite_init(void *app)
{
    return sqlite_real.xInit(app);
}

static void sqlite_shutdown(void *app)
{
    sqlite_real.xShutdown(app);
}

int bitt__fault_sqlite_install(void)
{
    if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sqlite_real) != SQLITE_OK)
        return bitt__fail(BITT_EBACKEND, "fault injection: cannot read SQLite's allocator");
    sqlite3_mem_methods wrapped = sqlite_real;
    wrapped.xMalloc = sqlite_malloc;
    wrapped.xFree = sqlite_free;
    wrapped.xRealloc = sqlite_realloc;
    wrapped.xSize = sqlite_size;
    wrapped.xRoundup = sqlite_roundup;
    wrapped.xInit = sqlite_init;
    wrapped.xShutdown = sqlite_shutdown;
    /* Lookaside buffers would serve small allocations past the countdown. */
    if (sqlite3_config(SQLITE_CONFIG_MALLOC, &wrapped) != SQLITE_OK ||
        sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0) != SQLITE_OK)
        return bitt__fail(BITT_EBACKEND, "fault injection: SQLite is already initialised");
    return BITT_OK;
}
