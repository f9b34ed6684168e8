/*
 * Process-wide wake-ups. Waits (dequeue with wait, a subscription's next)
 * poll their store, which sees other processes' work; this counter lets
 * work done in this process wake them at once instead of at the next poll.
 */
#include <errno.h>
#include <time.h>

#include "internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static uint64_t generation;

uint64_t bitt__notify_generation(void)
{
    pthread_mutex_lock(&lock);
    uint64_t g = generation;
    pthread_mutex_unlock(&lock);
    return g;
}

void bitt__notify_all(void)
{
    pthread_mutex_lock(&lock);
    generation++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

void bitt__notify_wait(uint64_t seen, int64_t max_ms)
{
    if (max_ms <= 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(max_ms / 1000);
    until.tv_nsec += (long)(max_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&lock);
    while (generation == seen) {
        if (pthread_cond_timedwait(&changed, &lock, &until) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&lock);
}

#define WAIT_POLL_MS 50 /* how often a wait looks for other processes' work */

void bitt__store_wait(bitt_store *store, uint64_t seen, int64_t left_ms)
{
    if (store->ops->wait_remote) {
        store->ops->wait_remote(store->be, left_ms);
        bitt__error_reset();
        return;
    }
    bitt__notify_wait(seen, left_ms < WAIT_POLL_MS ? left_ms : WAIT_POLL_MS);
}
