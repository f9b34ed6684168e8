/*
 * tests/faults/support/fault.c: see fault.h.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS, mkdtemp */
#include "fault.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCRIPTS BITT_SOURCE_DIR "/scripts"

static const char *g_program = "fault";
static int64_t g_violations;
static uint64_t g_rand = 88172645463325252ull;

int64_t fault_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fault_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fault_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

void fault_seed(uint64_t seed)
{
    g_rand = seed ? seed : 88172645463325252ull;
}

int64_t fault_rand(int64_t lo, int64_t hi)
{
    /* xorshift64: enough to pick victims and delays. */
    g_rand ^= g_rand << 13;
    g_rand ^= g_rand >> 7;
    g_rand ^= g_rand << 17;
    return lo + (int64_t)(g_rand % (uint64_t)(hi - lo + 1));
}

void *fault_shared(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("fault: mmap");
        exit(2);
    }
    return p; /* anonymous mappings start zeroed */
}

int fault_long(void)
{
    const char *v = getenv("BITT_FAULT_LONG");
    return v && strcmp(v, "1") == 0;
}

int64_t fault_count(const char *env, int64_t short_count, int64_t long_count)
{
    const char *v = env ? getenv(env) : NULL;
    if (v && *v) {
        char *end = NULL;
        long long n = strtoll(v, &end, 10);
        if (*end == '\0' && n > 0)
            return n;
        fprintf(stderr, "%s: %s=%s is not a positive count; using the default\n", g_program, env,
                v);
    }
    return fault_long() ? long_count : short_count;
}

void fault_set_program(const char *name)
{
    g_program = name;
    setvbuf(stdout, NULL, _IOLBF, 0);
}

void fault_figure(const char *backend, const char *name, const char *fmt, ...)
{
    char value[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    printf("FIGURE %s %s %s %s\n", g_program, backend, name, value);
    fflush(stdout);
}

void fault_violation(const char *fmt, ...)
{
    va_list ap;
    if (g_violations++ < 20) { /* the first few tell the story */
        fprintf(stderr, "%s: VIOLATION: ", g_program);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
}

int64_t fault_violations(void)
{
    return g_violations;
}

/* Runs a script command; its first output line into out (may be NULL). */
static int run_script(const char *cmd, char *out, size_t size)
{
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[512] = "";
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    char rest[512];
    while (fgets(rest, sizeof rest, p))
        ;
    int st = pclose(p);
    line[strcspn(line, "\n")] = '\0';
    if (out)
        snprintf(out, size, "%s", line);
    return st == 0 ? 0 : -1;
}

static const char *script_of(const fault_server *s)
{
    return strcmp(s->backend, "postgres") == 0 ? SCRIPTS "/postgres-test-server"
                                               : SCRIPTS "/redis-test-server";
}

int fault_server_start(fault_server *s, const char *backend, const char *redis_args)
{
    memset(s, 0, sizeof *s);
    snprintf(s->backend, sizeof s->backend, "%s", backend);
    snprintf(s->dir, sizeof s->dir, "/tmp/bitt-fault-XXXXXX");
    if (!mkdtemp(s->dir)) {
        perror("fault: mkdtemp");
        return -1;
    }
    chmod(s->dir, 0755); /* the postgres user must reach DIR/server when run as root */
    if (strcmp(backend, "sqlite") == 0) {
        snprintf(s->url, sizeof s->url, "sqlite:%s/store.db", s->dir);
        return 0;
    }
    if (strcmp(backend, "postgres") != 0 && strcmp(backend, "redis") != 0) {
        fprintf(stderr, "%s: unknown backend '%s' (sqlite, postgres, redis)\n", g_program, backend);
        return -1;
    }
    char cmd[1024];
    /* The data lives in a subdirectory: postgres-test-server chowns its
     * dir to the postgres user when run as root. */
    snprintf(cmd, sizeof cmd, "'%s' start '%s/server' %s", script_of(s), s->dir,
             redis_args ? redis_args : "");
    if (run_script(cmd, s->url, sizeof s->url) != 0 || strstr(s->url, "://") == NULL) {
        fprintf(stderr,
                "%s: could not start a private %s server (%s); is it installed? "
                "(scripts/install-deps)\n",
                g_program, backend, cmd);
        fault_server_stop(s);
        return -1;
    }
    s->started = 1;
    return 0;
}

void fault_server_stop(fault_server *s)
{
    char cmd[1024];
    if (s->started) {
        snprintf(cmd, sizeof cmd, "'%s' stop '%s/server' >/dev/null 2>&1", script_of(s), s->dir);
        run_script(cmd, NULL, 0);
        s->started = 0;
    }
    if (s->dir[0] && strncmp(s->dir, "/tmp/bitt-fault-", 16) == 0 && !getenv("BITT_FAULT_KEEP")) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
        run_script(cmd, NULL, 0);
    }
}

int fault_server_crash(fault_server *s)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' crash '%s/server'", script_of(s), s->dir);
    return run_script(cmd, NULL, 0);
}

int fault_server_restart(fault_server *s)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' restart '%s/server'", script_of(s), s->dir);
    return run_script(cmd, NULL, 0);
}

/* The first number in file path, or 0. */
static long read_pid(const char *path)
{
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

/* The parent pid of pid, from /proc/PID/stat ("pid (comm) state ppid"). */
static long parent_of(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close = strrchr(buf, ')');
    long ppid = 0;
    char state;
    if (!close || sscanf(close + 1, " %c %ld", &state, &ppid) != 2)
        return 0;
    return ppid;
}

int fault_server_freeze(fault_server *s, int freeze)
{
    char path[400];
    int sig = freeze ? SIGSTOP : SIGCONT;
    if (strcmp(s->backend, "redis") == 0) {
        snprintf(path, sizeof path, "%s/server/redis.pid", s->dir);
        long pid = read_pid(path);
        return pid > 1 && kill((pid_t)pid, sig) == 0 ? 0 : -1;
    }
    snprintf(path, sizeof path, "%s/server/data/postmaster.pid", s->dir);
    long postmaster = read_pid(path);
    if (postmaster <= 1)
        return -1;
    /* The postmaster first when freezing (it starts no child meanwhile),
     * last when thawing. */
    int rc = freeze ? kill((pid_t)postmaster, sig) : 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        long pid = strtol(e->d_name, NULL, 10);
        if (pid > 1 && parent_of(pid) == postmaster)
            kill((pid_t)pid, sig);
    }
    if (d)
        closedir(d);
    if (!freeze)
        rc = kill((pid_t)postmaster, sig);
    return rc == 0 ? 0 : -1;
}

const char *fault_url(const fault_server *s, char *buf, size_t size, const char *options)
{
    const char *sep = options && *options ? "&" : "";
    if (strcmp(s->backend, "sqlite") == 0)
        snprintf(buf, size, "%s%s%s", s->url, options && *options ? "?" : "",
                 options ? options : "");
    else if (strcmp(s->backend, "postgres") == 0)
        snprintf(buf, size, "%s?schema=fault%s%s", s->url, sep, options ? options : "");
    else
        snprintf(buf, size, "%s?prefix=fault%s%s", s->url, sep, options ? options : "");
    return buf;
}

bitt_store *fault_open(const char *url)
{
    bitt_store *store = NULL;
    int64_t until = fault_mono_ms() + 30000;
    for (;;) {
        int rc = bitt_store_open(url, &store);
        if (rc == BITT_OK)
            return store;
        if (fault_mono_ms() > until || (rc != BITT_EBACKEND && rc != BITT_EBUSY)) {
            fprintf(stderr, "%s: open: %s (%s)\n", g_program, bitt_strerror(rc), bitt_error_last());
            return NULL;
        }
        fault_sleep_ms(50);
    }
}

int fault_transient(int rc)
{
    return rc == BITT_EBUSY || rc == BITT_EBACKEND;
}

int64_t fault_payload_id(const bitt_message *m)
{
    size_t len = 0;
    const uint8_t *p = bitt_message_payload(m, &len);
    char buf[24];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < 23 ? len : 23), p ? (const char *)p : "");
    return strtoll(buf, NULL, 10);
}

int fault_queue_idle(bitt_store *store, const char *topic, int *idle)
{
    bitt_queue_stats st;
    memset(&st, 0, sizeof st);
    st.version = BITT_QUEUE_STATS_VERSION;
    int rc = bitt_queue_stats_get(store, topic, &st);
    *idle = rc == BITT_OK && st.pending + st.delayed + st.processing == 0;
    return rc;
}

int fault_list_keys(bitt_store *store, const char *prefix,
                    void (*fn)(void *ctx, const uint8_t *key, size_t len), void *ctx)
{
    char cursor[1024] = "";
    for (;;) {
        bitt_list_options o = BITT_LIST_OPTIONS_INIT;
        o.prefix = prefix;
        o.prefix_len = strlen(prefix);
        o.limit = BITT_LIST_LIMIT_MAX;
        o.cursor = cursor[0] ? cursor : NULL;
        bitt_entries *page = NULL;
        int rc = bitt_kv_list(store, &o, &page);
        if (rc != BITT_OK)
            return rc;
        size_t n = bitt_entries_count(page);
        for (size_t i = 0; i < n; i++) {
            size_t len = 0;
            const uint8_t *k = bitt_entry_key(bitt_entries_at(page, i), &len);
            fn(ctx, k, len);
        }
        const char *next = bitt_entries_cursor(page);
        int more = next && *next && n > 0;
        if (more)
            snprintf(cursor, sizeof cursor, "%s", next);
        bitt_entries_free(page);
        if (!more)
            return BITT_OK;
    }
}

pid_t fault_spawn(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fault: fork");
        exit(2);
    }
    if (pid == 0) {
        fault_seed((uint64_t)getpid() * 2654435761u ^ (uint64_t)fault_mono_ms());
        _exit(fn(arg));
    }
    return pid;
}
