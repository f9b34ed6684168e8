/* core/clock.c: the system clock and TTL arithmetic, in ms since the epoch. */
#include <time.h>

#include "internal.h"

int64_t bitt__expiry(int64_t now, int64_t ttl_ms)
{
    /* The engine refuses a negative TTL before it gets here; treat one like
     * BITT_TTL_NONE rather than compute a nonsense time. */
    if (ttl_ms <= 0)
        return 0;
    int64_t at = bitt__time_add(now, ttl_ms);
    /* 0 means "never": a manual clock before the epoch could land on it
     * exactly; one ms later is the nearest time that still expires. */
    return at == 0 ? 1 : at;
}

int64_t bitt__system_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + (int64_t)(ts.tv_nsec / 1000000);
}

int64_t bitt__monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
