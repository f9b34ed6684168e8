/*
 * test_secrets.c: a password in a postgres:// or redis:// URL never shows,
 * in bitt_error_last() or in anything the bitt CLI prints, on every error
 * path: connection refused, authentication failed, a bad URL, a bad option,
 * a server that never answers (timeout), one that hangs up at once, and one
 * that goes away in the middle of a session. Each password is plain,
 * percent-encoded, or full of unescaped URL characters, and holds the marker
 * "Zq7K": no message may hold the marker, so a fragment shows too.
 *
 * Needs $BITT_TEST_POSTGRES_URL and $BITT_TEST_REDIS_URL (scripts/test), and
 * $BITT_CLI (the CLI, set by CMake). Also: rediss:// is refused clearly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cmocka.h>

#include "bitt.h"
#include "fake_server.h"

#define MARKER "Zq7K"
#define REDIS_SCRIPT BITT_CONTRACT_DIR "/../../scripts/redis-test-server"

/* As written in the URL; every one holds MARKER, decoded or not. */
static const char *const secrets[] = {
    "Plain0" MARKER "secret", "p%40ss%3Aw0rd%25" MARKER "%2F%3F%23", /* p@ss:w0rd%Zq7K/?# */
    "Sl/ash@At:Co!" MARKER "$&'()*+,;=~", /* unescaped, taken up to the last '@' */
};
#define NSECRETS (sizeof secrets / sizeof *secrets)

static const char *g_pg_url, *g_redis_url, *g_cli;
static char g_pg_user[64], g_pg_password[256], g_pg_db[64];
static int g_pg_port, g_redis_port;

static int setup(void **state)
{
    (void)state;
    g_pg_url = getenv("BITT_TEST_POSTGRES_URL");
    g_redis_url = getenv("BITT_TEST_REDIS_URL");
    g_cli = getenv("BITT_CLI");
    if (!g_pg_url || !g_redis_url || !g_cli) {
        fprintf(stderr, "test_secrets: set BITT_TEST_POSTGRES_URL, BITT_TEST_REDIS_URL "
                        "(scripts/test starts both servers) and BITT_CLI\n");
        return -1;
    }
    if (sscanf(g_pg_url, "postgres://%63[^:]:%255[^@]@127.0.0.1:%d/%63s", g_pg_user, g_pg_password,
               &g_pg_port, g_pg_db) != 4 ||
        sscanf(g_redis_url, "redis://127.0.0.1:%d", &g_redis_port) != 1) {
        fprintf(stderr, "test_secrets: unexpected server URLs\n");
        return -1;
    }
    return 0;
}

/* Fails unless the text is free of MARKER, the real PostgreSQL password and
 * the pieces of the unescaped password between its special characters. */
static void expect_clean(const char *what, const char *text)
{
    static const char *const pieces[] = {MARKER, "Sl/ash", "At:Co", "w0rd"};
    for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++)
        if (strstr(text, pieces[i]))
            fail_msg("%s shows a password (\"%s\"): %s", what, pieces[i], text);
    if (strstr(text, g_pg_password))
        fail_msg("%s shows the server's password: %s", what, text);
}

/* Runs the CLI with `bitt --store URL kv get k`; returns what it printed
 * (stdout and stderr) in out, and its exit status. */
static int run_cli(const char *url, char *out, size_t size)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        execl(g_cli, g_cli, "--store", url, "kv", "get", "k", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t got;
    while ((got = read(fds[0], out + n, size - 1 - n)) > 0 && n + 1 < size)
        n += (size_t)got;
    out[n] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Opens url: it must fail with `expected` and a clean, non-empty message;
 * then the CLI on the same URL must fail (status 2) and print nothing of the
 * password either. */
static void expect_open_fails(const char *url, int expected, const char *path)
{
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    char what[320];
    snprintf(what, sizeof what, "the message (%s)", path);
    if (rc != expected)
        fail_msg("%s: status %d, expected %d: %s", path, rc, expected, bitt_error_last());
    assert_null(s);
    assert_true(bitt_error_last()[0] != '\0');
    expect_clean(what, bitt_error_last());
    char out[4096];
    int status = run_cli(url, out, sizeof out);
    snprintf(what, sizeof what, "the CLI's output (%s)", path);
    if (status != 2)
        fail_msg("%s: exit status %d, expected 2: %s", what, status, out);
    assert_true(out[0] != '\0');
    expect_clean(what, out);
}

/* scheme://user:SECRET@127.0.0.1:PORT/PATH?QUERY */
static const char *url_for(const char *scheme, const char *secret, int port, const char *path,
                           const char *query)
{
    static char url[1024];
    snprintf(url, sizeof url, "%s://bitt:%s@127.0.0.1:%d/%s%s%s", scheme, secret, port, path,
             query ? "?" : "", query ? query : "");
    return url;
}

/* ---- every path that fails at open, on both backends ------------------------- */

typedef struct bad_option {
    const char *query;
    int status; /* PostgreSQL refuses an unknown option after it connects */
} bad_option;

typedef struct backend {
    const char *scheme, *path, *good_query;
    bad_option bad_options[3];
    int *server_port;
    const char *timeout_query;
} backend;

static const backend backends[] = {
    {"postgres",
     "bitt_test",
     "connect_timeout=2",
     {{"no_such_option=1", BITT_EURL}, /* refused before connecting */
      {"statement_timeout=abc", BITT_EURL},
      {"schema=bad-name", BITT_EURL}},
     &g_pg_port,
     "connect_timeout=2"},
    {"redis",
     "0",
     "prefix=sec&timeout=2000",
     {{"no_such_option=1", BITT_EURL},
      {"timeout=abc", BITT_EURL},
      {"prefix=bad%20prefix", BITT_EURL}},
     &g_redis_port,
     "prefix=sec&timeout=300"},
};

static void test_open_paths(void **state)
{
    (void)state;
    for (size_t b = 0; b < sizeof backends / sizeof *backends; b++) {
        const backend *be = &backends[b];
        for (size_t i = 0; i < NSECRETS; i++) {
            const char *sc = be->scheme, *sec = secrets[i];
            char path[128];
#define PATH(what) (snprintf(path, sizeof path, "%s, password %zu: %s", sc, i, what), path)
            expect_open_fails(url_for(sc, sec, fake_closed_port(), be->path, be->good_query),
                              BITT_EBACKEND, PATH("connection refused"));
            expect_open_fails(url_for(sc, sec, *be->server_port, be->path, be->good_query),
                              BITT_EBACKEND, PATH("authentication failed"));
            expect_open_fails(url_for(sc, sec, 99999, be->path, be->good_query),
                              !strcmp(sc, "redis") ? BITT_EURL : BITT_EBACKEND,
                              PATH("a port out of range"));
            char bad[1200];
            snprintf(bad, sizeof bad, "%s://u%%zz:%s@127.0.0.1:1/%s", sc, sec, be->path);
            expect_open_fails(bad, BITT_EURL, PATH("a bad escape in the user"));
            for (size_t o = 0; o < 3; o++) {
                const bad_option *bo = &be->bad_options[o];
                expect_open_fails(url_for(sc, sec, *be->server_port, be->path, bo->query),
                                  bo->status, PATH(bo->query));
            }
            fake_server f;
            fake_start(&f, FAKE_SILENT, NULL, 0);
            expect_open_fails(url_for(sc, sec, f.port, be->path, be->timeout_query), BITT_EBACKEND,
                              PATH("a server that never answers"));
            fake_stop(&f);
            fake_start(&f, FAKE_HANG_UP, NULL, 0);
            expect_open_fails(url_for(sc, sec, f.port, be->path, be->good_query), BITT_EBACKEND,
                              PATH("a server that hangs up"));
            fake_stop(&f);
#undef PATH
        }
    }
}

/* ---- a server that goes away in the middle of a session ---------------------- */

/* Opens through a proxy, writes, cuts every connection (the port then
 * refuses), and checks the failing calls. */
static void cut_mid_session(const char *url_through_proxy, fake_server *proxy)
{
    bitt_store *s = NULL;
    if (bitt_store_open(url_through_proxy, &s) != BITT_OK)
        fail_msg("open through the proxy: %s", bitt_error_last());
    assert_int_equal(bitt_kv_set(s, "k", 1, "v", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    fake_stop(proxy);
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(s, "k", 1, &e);
    if (rc != BITT_EBACKEND)
        fail_msg("get after the cut: %d %s", rc, bitt_error_last());
    expect_clean("the message (get after the cut)", bitt_error_last());
    rc = bitt_kv_set(s, "k", 1, "w", 1, BITT_KIND_BYTES, 0, NULL);
    assert_int_equal(rc, BITT_EBACKEND);
    expect_clean("the message (set after the cut)", bitt_error_last());
    bitt_store_close(s);
}

static void test_postgres_gone_mid_session(void **state)
{
    (void)state;
    fake_server proxy;
    fake_start(&proxy, FAKE_PROXY, NULL, g_pg_port);
    char query[128];
    snprintf(query, sizeof query, "table_prefix=sec%ld&connect_timeout=2", (long)getpid());
    cut_mid_session(url_for("postgres", g_pg_password, proxy.port, g_pg_db, query), &proxy);
}

static void test_redis_gone_mid_session(void **state)
{
    (void)state;
    /* A private server that wants a password with the marker in it. */
#define PASSWORD "Red1s" MARKER "pw"
    char dir[64], cmd[512], line[256] = "";
    snprintf(dir, sizeof dir, "/tmp/bitt-sec-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "'%s' start '%s'", REDIS_SCRIPT, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    int started = pclose(p) == 0;
    int port = 0;
    if (started && sscanf(line, "redis://127.0.0.1:%d", &port) == 1) {
        /* Set after the start: the script's readiness probe has no password. */
        snprintf(cmd, sizeof cmd,
                 "redis-cli -h 127.0.0.1 -p %d config set requirepass " PASSWORD " >/dev/null",
                 port);
        assert_int_equal(system(cmd), 0);
        fake_server proxy;
        fake_start(&proxy, FAKE_PROXY, NULL, port);
        char url[256];
        snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d/0?prefix=sec&timeout=2000", PASSWORD,
                 proxy.port);
        cut_mid_session(url, &proxy);
        /* Without it again, so that the script can stop the server. */
        snprintf(cmd, sizeof cmd,
                 "redis-cli -h 127.0.0.1 -p %d -a " PASSWORD
                 " --no-auth-warning config set requirepass '' >/dev/null",
                 port);
        assert_int_equal(system(cmd), 0);
    }
    snprintf(cmd, sizeof cmd, "'%s' stop '%s' >/dev/null 2>&1; rm -rf '%s'", REDIS_SCRIPT, dir,
             dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_secrets: could not stop the server in %s\n", dir);
    if (!port)
        fail_msg("could not start a private redis server: %s", line);
}

/* A raw '?' in a password starts the options early: the open is refused,
 * and option "names" made of the password's tail are never quoted (a tail
 * that reads as a plain "name=value", like "Ask?Zq7K=1", cannot be told
 * from an option: the README asks for %3F). */
static void test_raw_question_mark(void **state)
{
    (void)state;
    /* No '=': the name runs into "@127.0.0.1:PORT/db". A name given twice. */
    static const char *const tails[] = {"Ask?" MARKER "x", "Ask?p%40" MARKER "=1&p%40" MARKER "=2"};
    for (size_t b = 0; b < sizeof backends / sizeof *backends; b++)
        for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
            char url[512];
            snprintf(url, sizeof url, "%s://bitt:%s@127.0.0.1:%d/%s", backends[b].scheme, tails[i],
                     *backends[b].server_port, backends[b].path);
            expect_open_fails(url, BITT_EURL, "a raw '?' in the password");
        }
    /* An unknown option whose name no option could have. */
    expect_open_fails("memory:?" MARKER "-y@x=1", BITT_EURL, "an odd unknown option");
}

/* ---- rediss:// --------------------------------------------------------------- */

static void test_rediss_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSECRETS; i++) {
        expect_open_fails(url_for("rediss", secrets[i], g_redis_port, "0", NULL), BITT_EUNSUPPORTED,
                          "rediss://");
        if (!strstr(bitt_error_last(), "TLS"))
            fail_msg("the refusal does not say why: %s", bitt_error_last());
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_paths),
        cmocka_unit_test(test_postgres_gone_mid_session),
        cmocka_unit_test(test_redis_gone_mid_session),
        cmocka_unit_test(test_raw_question_mark),
        cmocka_unit_test(test_rediss_refused),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
