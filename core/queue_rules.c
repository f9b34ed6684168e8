/* Queue rules every backend shares: ack tokens and retry backoff. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Tokens need to be unique and unguessable by another worker, not secret
 * keys: a per-thread splitmix64 stream seeded from the kernel once. */
static _Thread_local uint64_t token_state;
static _Thread_local pid_t token_pid; /* 0 = not seeded */

static uint64_t splitmix64(void)
{
    uint64_t z = (token_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void seed_tokens(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        /* No getrandom (old kernel, seccomp): mix what differs anyway. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40) ^
               (uint64_t)(uintptr_t)&token_state;
    }
    token_state = seed;
    token_pid = getpid();
}

void bitt__token_new(char *out)
{
    static const char hex[] = "0123456789abcdef";
    /* A forked child inherits the stream: reseed, or two children would
     * hand out the same tokens. */
    if (token_pid != getpid())
        seed_tokens();
    for (int half = 0; half < 2; half++) {
        uint64_t v = splitmix64();
        for (int i = 0; i < 16; i++)
            out[half * 16 + i] = hex[(v >> (60 - 4 * i)) & 15];
    }
    out[BITT_TOKEN_LEN] = '\0';
}

int64_t bitt__backoff_delay(const bitt_backoff *b, uint32_t attempts)
{
    uint32_t step = attempts ? attempts - 1 : 0;
    if (!b->exponential)
        return b->delays[step < b->delay_count ? step : b->delay_count - 1];
    int64_t d = b->base;
    for (uint32_t i = 0; i < step && d < b->cap; i++)
        d = d > INT64_MAX / 2 ? INT64_MAX : d * 2;
    return d < b->cap ? d : b->cap;
}

static int parse_ms(const char *s, const char **end, int64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    int64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (INT64_MAX - (*s - '0')) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *end = s;
    *out = v;
    return 0;
}

int bitt__backoff_parse(const char *text, bitt_backoff *out)
{
    memset(out, 0, sizeof *out);
    const char *p = text;
    if (!strncmp(p, "exp:", 4)) {
        out->exponential = 1;
        p += 4;
        if (parse_ms(p, &p, &out->base) || *p++ != ':' || parse_ms(p, &p, &out->cap) || *p ||
            out->base < 1 || out->cap < out->base)
            return bitt__fail(BITT_EURL,
                              "store URL: queue_backoff=exp:BASE:CAP needs 1 <= BASE <= CAP (ms)");
        return BITT_OK;
    }
    for (;;) {
        if (out->delay_count == sizeof out->delays / sizeof *out->delays)
            return bitt__fail(BITT_EURL, "store URL: queue_backoff lists more than %zu delays",
                              sizeof out->delays / sizeof *out->delays);
        if (parse_ms(p, &p, &out->delays[out->delay_count]))
            return bitt__fail(BITT_EURL, "store URL: queue_backoff must be delays in ms "
                                         "separated by commas, or exp:BASE:CAP");
        out->delay_count++;
        if (!*p)
            return BITT_OK;
        if (*p++ != ',')
            return bitt__fail(BITT_EURL, "store URL: queue_backoff must be delays in ms "
                                         "separated by commas, or exp:BASE:CAP");
    }
}
