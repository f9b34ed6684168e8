/*
 * util.c: the jobs example's small helpers: errors, clocks, the rules of a
 * job, and its JSON payloads (flat objects of integers this program writes).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs.h"

const char *const jobs_tally_keys[7] = {
    "stats/nacks",          "stats/duplicates",    "stats/fenced",     "stats/stale_acks",
    "stats/lease_acquired", "stats/lease_renewed", "stats/lease_busy",
};

int jobs_fail(const char *what, int rc)
{
    const char *msg = bitt_error_last();
    fprintf(stderr, "jobs: %s: %s\n", what, msg && msg[0] ? msg : bitt_strerror(rc));
    return 2;
}

int64_t jobs_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void jobs_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int64_t job_value(int64_t id)
{
    return (id * 7919) % 1000;
}

int job_fails(int64_t id, uint32_t attempt)
{
    if (id % JOBS_BROKEN_EVERY == 0)
        return 1;
    return id % JOBS_FLAKY_EVERY == 0 && attempt <= 1;
}

int64_t job_result(int64_t value)
{
    return value * value + 1;
}

int job_format(const job *j, char *out, size_t cap)
{
    int n = snprintf(out, cap, "{\"id\":%" PRId64 ",\"partition\":%d,\"value\":%" PRId64 "}", j->id,
                     j->partition, j->value);
    return n > 0 && (size_t)n < cap ? n : -1;
}

int json_int(const uint8_t *p, size_t n, const char *name, int64_t *out)
{
    char pat[64];
    char text[512];
    if (n >= sizeof(text))
        return -1;
    memcpy(text, p, n);
    text[n] = '\0';
    snprintf(pat, sizeof(pat), "\"%s\":", name);
    const char *at = strstr(text, pat);
    if (at == NULL)
        return -1;
    char *end = NULL;
    long long v = strtoll(at + strlen(pat), &end, 10);
    if (end == at + strlen(pat))
        return -1;
    *out = (int64_t)v;
    return 0;
}

int job_parse(const uint8_t *p, size_t n, job *out)
{
    int64_t partition = 0;
    if (json_int(p, n, "id", &out->id) != 0 || json_int(p, n, "partition", &partition) != 0 ||
        json_int(p, n, "value", &out->value) != 0 || partition < 0 || partition > 1000000)
        return -1;
    out->partition = (int)partition;
    return 0;
}

int jobs_counter(bitt_store *store, const char *key, int64_t *out)
{
    bitt_entry *e = NULL;
    *out = 0;
    int rc = bitt_kv_get(store, key, strlen(key), &e);
    if (rc == BITT_OK)
        rc = bitt_entry_counter(e, out);
    bitt_entry_free(e);
    return rc == BITT_NOTFOUND ? BITT_OK : rc;
}
