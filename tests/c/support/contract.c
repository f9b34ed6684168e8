/*
 * tests/c/support/contract.c: the contract runner's frame: loading the
 * suite, one fresh store per case, the manual clock, the step loop,
 * variables, failure messages, and parallel steps.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract_impl.h"

const char *ct_backend_name(ct_backend b)
{
    switch (b) {
    case CT_MEMORY: return "memory";
    case CT_SQLITE_FILE: return "sqlite-file";
    case CT_SQLITE_MEMORY: return "sqlite-memory";
    case CT_POSTGRES: return "postgres";
    case CT_REDIS: return "redis";
    default: return "?";
    }
}

const char *ct_backend_server(ct_backend b)
{
    const char *url = NULL;
    if (b == CT_POSTGRES)
        url = getenv("BITT_TEST_POSTGRES_URL");
    else if (b == CT_REDIS)
        url = getenv("BITT_TEST_REDIS_URL");
    return url && *url ? url : NULL;
}

int ct_backend_wanted(ct_backend b)
{
    const char *list = getenv("BITT_TEST_BACKENDS");
    if (!list || !*list)
        return 1;
    const char *name = ct_backend_name(b);
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* A URL fit for a failure message: any user:password@ becomes "...@". */
static const char *shown_url(const char *url, char *buf, size_t size)
{
    /* The user part ends at the last '@' before the query, as libpq reads it. */
    const char *start = strstr(url, "://");
    const char *query = strchr(url, '?');
    const char *at = NULL;
    for (const char *p = start ? start + 3 : url; start && *p && (!query || p < query); p++)
        if (*p == '@')
            at = p;
    if (!at)
        snprintf(buf, size, "%s", url);
    else
        snprintf(buf, size, "%.*s...%s", (int)(start + 3 - url), url, at);
    return buf;
}

/* ---- bytes ------------------------------------------------------------------------ */

int ct_bytes_put(ct_bytes *b, const void *data, size_t n)
{
    if (n == 0)
        return 0;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16;
        while (cap < b->n + n + 1)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

void ct_bytes_free(ct_bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

char *ct_show(const uint8_t *p, size_t n)
{
    size_t shown = n > 64 ? 48 : n;
    char *out = malloc(shown * 4 + 64);
    if (!out)
        return NULL;
    size_t j = 0;
    out[j++] = '"';
    for (size_t i = 0; i < shown; i++) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\')
            j += (size_t)sprintf(out + j, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            out[j++] = (char)c;
        else
            j += (size_t)sprintf(out + j, "\\x%02x", c);
    }
    out[j++] = '"';
    if (shown < n)
        j += (size_t)sprintf(out + j, "... (%zu bytes)", n);
    out[j] = '\0';
    return out;
}

/* ---- failures and variables ----------------------------------------------------------- */

static int vfail(ct_run *run, const char *kind, const char *fmt, va_list ap)
{
    if (run->fail)
        return -1;
    char msg[2048], step[64];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (run->step == SIZE_MAX)
        snprintf(step, sizeof step, "setup");
    else
        snprintf(step, sizeof step, "step %zu (%s, line %d)", run->step,
                 run->opname ? run->opname : "?", run->step_line);
    size_t len = strlen(msg) + strlen(run->c->file) + strlen(run->c->name) + 256;
    run->fail = malloc(len);
    if (run->fail)
        snprintf(run->fail, len, "%s.json: case \"%s\" on %s, %s: %s%s", run->c->file, run->c->name,
                 ct_backend_name(run->backend), step, kind, msg);
    return -1;
}

int ct_fail(ct_run *run, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(run, "", fmt, ap);
    va_end(ap);
    return -1;
}

int ct_broken(ct_run *run, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(run, "broken case: ", fmt, ap);
    va_end(ap);
    return -1;
}

const ct_var *ct_var_find(const ct_run *run, const char *name)
{
    for (size_t i = 0; i < run->nvars; i++)
        if (strcmp(run->vars[i].name, name) == 0)
            return &run->vars[i];
    return NULL;
}

int ct_var_set(ct_run *run, const char *name, const char *text)
{
    ct_var *v = (ct_var *)ct_var_find(run, name);
    if (!v) {
        ct_var *vars = realloc(run->vars, (run->nvars + 1) * sizeof *vars);
        if (!vars)
            return ct_broken(run, "out of memory");
        run->vars = vars;
        v = &run->vars[run->nvars++];
        v->name = strdup(name);
        v->text = NULL;
    }
    free(v->text);
    v->text = text ? strdup(text) : NULL;
    return 0;
}

/* ---- the suite --------------------------------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_error(ct_suite *s, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char **errors = realloc(s->errors, (s->nerrors + 1) * sizeof *errors);
    if (!errors)
        return;
    s->errors = errors;
    s->errors[s->nerrors++] = strdup(msg);
}

static void load_file(ct_suite *s, const char *dir, const char *fname)
{
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    js_value *doc = js_parse_file(path, err, sizeof err);
    if (!doc) {
        add_error(s, "%s: %s", fname, err);
        return;
    }
    const js_value *cases = js_get(doc, "cases");
    if (!cases || cases->type != JS_ARRAY) {
        add_error(s, "%s: the top level needs \"cases\": [...]", fname);
        js_free(doc);
        return;
    }
    s->docs = realloc(s->docs, (s->ndocs + 1) * sizeof *s->docs);
    s->stems = realloc(s->stems, (s->ndocs + 1) * sizeof *s->stems);
    s->cases = realloc(s->cases, (s->ncases + cases->count + 1) * sizeof *s->cases);
    if (!s->docs || !s->stems || !s->cases) {
        fprintf(stderr, "contract: out of memory\n");
        abort();
    }
    char *stem = strdup(fname);
    stem[strlen(stem) - 5] = '\0';
    s->docs[s->ndocs] = doc;
    s->stems[s->ndocs++] = stem;
    for (size_t i = 0; i < cases->count; i++) {
        const js_value *c = cases->items[i], *name = js_get(c, "name");
        if (!name || name->type != JS_STRING || !name->len) {
            add_error(s, "%s: case %zu (line %d) has no name", fname, i, c->line);
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            const js_value *other = js_get(cases->items[j], "name");
            if (other && other->type == JS_STRING && strcmp(other->str, name->str) == 0)
                add_error(s, "%s: two cases are named \"%s\"", fname, name->str);
        }
        s->cases[s->ncases++] = (ct_case){.file = stem, .name = name->str, .index = i, .json = c};
    }
}

int ct_suite_load(const char *dir, ct_suite *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d) {
        add_error(s, "cannot open the contract directory %s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0 && de->d_name[0] != '.') {
            names = realloc(names, (n + 1) * sizeof *names);
            names[n++] = strdup(de->d_name);
        }
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        load_file(s, dir, names[i]);
        free(names[i]);
    }
    free(names);
    if (!n)
        add_error(s, "no *.json files in %s", dir);
    return 0;
}

void ct_suite_free(ct_suite *s)
{
    for (size_t i = 0; i < s->ndocs; i++) {
        js_free(s->docs[i]);
        free(s->stems[i]);
    }
    for (size_t i = 0; i < s->nerrors; i++)
        free(s->errors[i]);
    free(s->docs);
    free(s->stems);
    free(s->cases);
    free(s->errors);
    memset(s, 0, sizeof *s);
}

const char *ct_tmpdir(void)
{
    static char dir[4096];
    const char *env = getenv("BITT_TEST_TMP");
    snprintf(dir, sizeof dir, "%s", env && *env ? env : "/tmp");
    for (char *p = dir + 1; *p; p++) { /* mkdir -p */
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(dir, 0700);
        *p = '/';
    }
    mkdir(dir, 0700);
    return dir;
}

/* ---- parallel steps ------------------------------------------------------------------ */

#define NCODES 32 /* statuses -16..15 */

typedef struct worker {
    bitt_store *store;
    const ct_op *op;
    long repeat;
    pthread_barrier_t *barrier;
    long counts[NCODES];
    char message[256]; /* the first failure's message */
    char problem[512];
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->barrier);
    for (long i = 0; i < w->repeat; i++) {
        ct_result r;
        ct_exec(w->store, w->op, &r);
        if (r.problem[0] && !w->problem[0])
            snprintf(w->problem, sizeof w->problem, "%s", r.problem);
        if (r.status < 0 && r.last_code != r.status && !w->problem[0])
            snprintf(w->problem, sizeof w->problem, "bitt_error_last_code() is %d after status %d",
                     r.last_code, r.status);
        if (r.status < 0 && !w->message[0])
            snprintf(w->message, sizeof w->message, "%s: %.200s", ct_status_name(r.status),
                     r.message);
        int idx = r.status + NCODES / 2;
        w->counts[idx >= 0 && idx < NCODES ? idx : 0]++;
        ct_result_free(&r);
    }
    return NULL;
}

static int run_parallel(ct_run *run, const js_value *step, ct_op *op)
{
    int64_t threads, repeat = 1;
    const js_value *inner = js_get(step, "step"), *counts = js_get(step, "expect_counts");
    if (js_get(step, "expect") || js_get(step, "save"))
        return ct_broken(run, "parallel takes expect_counts, not expect or save");
    if (ct_int64_of(run, js_get(step, "threads"), "threads", &threads) ||
        (js_get(step, "repeat") && ct_int64_of(run, js_get(step, "repeat"), "repeat", &repeat)))
        return -1;
    if (threads < 1 || threads > CT_MAX_THREADS || repeat < 1 || repeat > 1000000)
        return ct_broken(run, "threads must be 1..%d and repeat 1..1000000", CT_MAX_THREADS);
    if (!inner || !counts || counts->type != JS_OBJECT)
        return ct_broken(run, "parallel needs step and expect_counts");
    op->inner = calloc(1, sizeof *op->inner);
    if (!op->inner || ct_prepare(run, inner, op->inner, 1))
        return -1;
    int64_t want[NCODES] = {0}, total = 0;
    for (size_t i = 0; i < counts->count; i++) {
        int code = ct_status_code(counts->keys[i]);
        int64_t n;
        if (code == -100 || code + NCODES / 2 < 0 || code + NCODES / 2 >= NCODES)
            return ct_broken(run, "expect_counts: unknown status \"%s\"", counts->keys[i]);
        if (ct_int64_of(run, counts->items[i], "expect_counts", &n) || n < 0)
            return ct_broken(run, "expect_counts: counts are integers >= 0");
        want[code + NCODES / 2] = n;
        total += n;
    }
    if (total != threads * repeat)
        return ct_broken(run,
                         "expect_counts add up to %" PRId64 ", not threads x repeat = %" PRId64,
                         total, threads * repeat);

    worker *w = calloc((size_t)threads, sizeof *w);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    pthread_barrier_t barrier;
    int rc = 0;
    int64_t now = 0;
    if (!w || !tids) {
        free(w);
        free(tids);
        return ct_broken(run, "out of memory");
    }
    if (run->file_backed && (rc = bitt_clock_now(run->store, &now)))
        ct_fail(run, "bitt_clock_now gave %d", rc);
    long opened = 0;
    char shown[512];
    for (; !run->fail && opened < threads; opened++) {
        w[opened] = (worker){
            .store = run->store, .op = op->inner, .repeat = (long)repeat, .barrier = &barrier};
        if (!run->file_backed)
            continue;
        w[opened].store = NULL;
        if ((rc = bitt_store_open(run->url, &w[opened].store)))
            ct_fail(run, "worker %ld: bitt_store_open(%s) gave %s (%d): %s", opened,
                    shown_url(run->url, shown, sizeof shown), ct_status_name(rc), rc,
                    bitt_error_last());
        else if ((rc = bitt_clock_set_manual(w[opened].store, now)))
            ct_fail(run, "worker %ld: bitt_clock_set_manual gave %d", opened, rc);
    }
    if (!run->fail) {
        pthread_barrier_init(&barrier, NULL, (unsigned)threads);
        long started = 0;
        for (; started < threads; started++)
            if (pthread_create(&tids[started], NULL, worker_main, &w[started]))
                break;
        if (started < threads) {
            /* Cannot release the barrier short of its count: give up loudly. */
            fprintf(stderr, "contract: could not start %" PRId64 " threads\n", threads);
            abort();
        }
        for (long i = 0; i < threads; i++)
            pthread_join(tids[i], NULL);
        pthread_barrier_destroy(&barrier);
    }
    if (run->file_backed)
        for (long i = 0; i < opened; i++)
            bitt_store_close(w[i].store);
    if (!run->fail) {
        int64_t got[NCODES] = {0};
        const char *message = "", *prob = "";
        for (long i = 0; i < threads; i++) {
            for (int k = 0; k < NCODES; k++)
                got[k] += w[i].counts[k];
            if (!message[0])
                message = w[i].message;
            if (!prob[0])
                prob = w[i].problem;
        }
        char a[512] = "", b[512] = "";
        int differ = 0;
        for (int k = 0; k < NCODES; k++) {
            if (want[k])
                snprintf(a + strlen(a), sizeof a - strlen(a), " %s=%" PRId64,
                         ct_status_name(k - NCODES / 2), want[k]);
            if (got[k])
                snprintf(b + strlen(b), sizeof b - strlen(b), " %s=%" PRId64,
                         ct_status_name(k - NCODES / 2), got[k]);
            differ |= want[k] != got[k];
        }
        if (prob[0])
            ct_fail(run, "parallel %s: %s", op->inner->name, prob);
        else if (differ)
            ct_fail(run, "parallel %s: expected counts {%s }, got {%s }%s%s", op->inner->name, a, b,
                    message[0] ? "; first error: " : "", message);
    }
    free(w);
    free(tids);
    return run->fail ? -1 : 0;
}

/* ---- one case ------------------------------------------------------------------------ */

static void run_step(ct_run *run, const js_value *step)
{
    ct_op op;
    run->opname = NULL;
    if (ct_prepare(run, step, &op, 0) == 0) {
        if (op.code == OP_PARALLEL) {
            run_parallel(run, step, &op);
        } else if (ct_validate_expect(run, &op, step) == 0) {
            ct_result res;
            ct_exec(run->store, &op, &res);
            if (ct_check(run, &op, js_get(step, "expect"), &res) == 0)
                ct_save(run, &op, js_get(step, "save"), &res);
            ct_result_free(&res);
        }
    }
    ct_op_free(&op);
}

static void remove_db(const char *path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    char p[4200];
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
}

static char *build_url(ct_run *run, const char *tmpdir, char *path, size_t path_len)
{
    static const char *const names[] = {"name", "description", "url_options", "steps", NULL};
    char url[8192];
    if (ct_members(run, run->c->json, "a case", names))
        return NULL;
    switch (run->backend) {
    case CT_MEMORY: snprintf(url, sizeof url, "memory:"); break;
    case CT_SQLITE_MEMORY: snprintf(url, sizeof url, "sqlite::memory:"); break;
    case CT_POSTGRES:
    case CT_REDIS: {
        /* A server store is fresh when its schema or prefix is new. */
        const char *base = ct_backend_server(run->backend);
        if (!base) {
            ct_fail(run,
                    "%s: set BITT_TEST_%s_URL (scripts/test starts a server), or leave "
                    "the backend out with BITT_TEST_BACKENDS",
                    ct_backend_name(run->backend),
                    run->backend == CT_POSTGRES ? "POSTGRES" : "REDIS");
            return NULL;
        }
        /* No case is about connecting: a connection set up slowly (valgrind
         * on a loaded machine takes seconds per SCRAM handshake) is waited
         * for, so only the rules are tested, never the machine's speed. */
        snprintf(url, sizeof url, "%s%c%s=ct_%ld_%s_%zu%s", base, strchr(base, '?') ? '&' : '?',
                 run->backend == CT_POSTGRES ? "schema" : "prefix", (long)getpid(), run->c->file,
                 run->c->index, run->backend == CT_POSTGRES ? "&connect_timeout=300" : "");
        run->file_backed = 1; /* parallel steps open a handle per thread */
        break;
    }
    default:
        snprintf(path, path_len, "%s/contract-%s-%zu-%ld.db", tmpdir, run->c->file, run->c->index,
                 (long)getpid());
        remove_db(path);
        /* Parallel steps wait for each other's write lock: however slow the
         * machine (valgrind runs a process's threads on one core), a wait is
         * never the test's answer, so the lock is waited for 600 s. */
        snprintf(url, sizeof url, "sqlite:%s?busy_timeout=600000", path);
        run->file_backed = 1;
    }
    const js_value *opts = js_get(run->c->json, "url_options");
    if (opts && opts->type != JS_OBJECT) {
        ct_broken(run, "url_options is an object");
        return NULL;
    }
    for (size_t i = 0; opts && i < opts->count; i++) {
        const js_value *v = opts->items[i];
        if (v->type != JS_STRING && v->type != JS_NUMBER) {
            ct_broken(run, "url_options values are strings");
            return NULL;
        }
        size_t len = strlen(url);
        snprintf(url + len, sizeof url - len, "%c%s=%s", strchr(url, '?') ? '&' : '?',
                 opts->keys[i], v->str);
    }
    return strdup(url);
}

char *ct_run_case(const ct_case *c, ct_backend backend, const char *tmpdir)
{
    ct_run run = {.c = c, .backend = backend, .step = SIZE_MAX};
    char path[4096] = "";
    const js_value *steps = js_get(c->json, "steps");
    run.url = build_url(&run, tmpdir, path, sizeof path);
    if (run.url && (!steps || steps->type != JS_ARRAY))
        ct_broken(&run, "a case needs \"steps\": [...]");
    if (!run.fail) {
        int rc = bitt_store_open(run.url, &run.store);
        char shown[512];
        if (rc)
            ct_fail(&run, "bitt_store_open(\"%s\") gave %s (%d): %s",
                    shown_url(run.url, shown, sizeof shown), ct_status_name(rc), rc,
                    bitt_error_last());
        else if ((rc = bitt_clock_set_manual(run.store, CT_START_CLOCK)))
            ct_fail(&run, "bitt_clock_set_manual gave %s (%d): %s", ct_status_name(rc), rc,
                    bitt_error_last());
    }
    for (size_t i = 0; !run.fail && i < steps->count; i++) {
        run.step = i;
        run.step_line = steps->items[i]->line;
        run_step(&run, steps->items[i]);
    }
    ct_close_subs(&run);
    bitt_store_close(run.store);
    for (size_t i = 0; i < run.ntokens; i++)
        free(run.tokens[i]);
    free(run.tokens);
    if (path[0] && !run.fail)
        remove_db(path);
    for (size_t i = 0; i < run.nvars; i++) {
        free(run.vars[i].name);
        free(run.vars[i].text);
    }
    free(run.vars);
    free(run.url);
    return run.fail;
}
