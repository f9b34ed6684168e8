/* Names of topics, leases, owners, streams, channels, buckets, schedules. */
#include <string.h>

#include "internal.h"
#include "utf8.h"

int bitt__check_name(const char *name, const char *what)
{
    if (!name)
        return bitt__fail(BITT_EINVAL, "%s must not be NULL", what);
    size_t n = strnlen(name, BITT_NAME_MAX + 1);
    if (n == 0)
        return bitt__fail(BITT_EINVAL, "%s must not be empty", what);
    if (n > BITT_NAME_MAX)
        return bitt__fail(BITT_EINVAL, "%s is longer than %d bytes", what, BITT_NAME_MAX);
    const uint8_t *p = (const uint8_t *)name;
    for (size_t i = 0; i < n;) {
        size_t bad = 0, len = bitt__utf8_seq(p + i, n - i, &bad);
        if (!len)
            return bitt__fail(BITT_EINVAL, "%s is not valid UTF-8 (byte %zu)", what, i + bad);
        i += len;
    }
    return BITT_OK;
}

int bitt__check_duration(int64_t ms, int64_t min, const char *what)
{
    if (ms < min || ms > BITT_MAX_DURATION_MS)
        return bitt__fail(BITT_EINVAL, "%s must be in [%lld, %lld] ms, got %lld", what,
                          (long long)min, (long long)BITT_MAX_DURATION_MS, (long long)ms);
    return BITT_OK;
}

int bitt__unsupported(const bitt_store *store, const char *what)
{
    return bitt__fail(BITT_EUNSUPPORTED, "the %s backend does not support %s", store->ops->name,
                      what);
}
