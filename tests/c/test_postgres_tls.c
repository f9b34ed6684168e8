/*
 * PostgreSQL over TLS: sslmode=verify-full with sslrootcert, given as URL
 * options, reaches libpq and works, and the connection is encrypted (the
 * server's pg_stat_ssl says so); a server certificate from another CA, or a
 * CA file that is not there, fails the open with BITT_EBACKEND and a message
 * that names the TLS failure and holds no password.
 *
 * A private cluster (scripts/postgres-test-server, beside the shared one)
 * gets ssl=on with a CA and a server certificate for 127.0.0.1 and
 * localhost, made here with the openssl tool; all of it is removed at the
 * end. Needs $BITT_TEST_POSTGRES_DIR (to place the cluster) and openssl.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "bitt.h"

#define SCRIPT BITT_CONTRACT_DIR "/../../scripts/postgres-test-server"

static char g_dir[512], g_tls[512], g_url[512], g_password[128];

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "test_postgres_tls: failed (%d): %s\n", rc, cmd);
    return rc;
}

/* A CA, a server certificate it signs (127.0.0.1 and localhost), and a
 * second CA that signed nothing. */
static int make_certificates(void)
{
    return run("set -e; cd '%s'; exec >openssl.log 2>&1\n"
               "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bitt-test-ca "
               "  -keyout ca.key -out ca.crt\n"
               "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bitt-other-ca "
               "  -keyout other.key -out other.crt\n"
               "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 "
               "  -keyout server.key -out server.csr\n"
               "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' >san.ext\n"
               "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
               "  -days 2 -extfile san.ext -out server.crt\n",
               g_tls);
}

/* Starts the private cluster, then turns ssl on with the server certificate
 * (owned like the data directory, the key 0600) and restarts it. */
static int start_tls_cluster(void)
{
    if (run("'%s' start '%s' >'%s/url'", SCRIPT, g_dir, g_tls))
        return -1;
    if (run("set -e; d='%s/data'; t='%s'\n"
            "cp \"$t/server.crt\" \"$t/server.key\" \"$d/\"\n"
            "chown --reference=\"$d\" \"$d/server.crt\" \"$d/server.key\"\n"
            "chmod 600 \"$d/server.key\"\n"
            "printf \"ssl = on\\nssl_cert_file = 'server.crt'\\nssl_key_file = 'server.key'\\n\" "
            "  >>\"$d/postgresql.auto.conf\"\n"
            "'%s' restart '%s' >/dev/null",
            g_dir, g_tls, SCRIPT, g_dir))
        return -1;
    char path[600];
    snprintf(path, sizeof path, "%s/url", g_tls);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(g_url, sizeof g_url, f)) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    g_url[strcspn(g_url, "\n")] = '\0';
    if (sscanf(g_url, "postgres://bitt:%127[^@]@", g_password) != 1)
        return -1;
    return 0;
}

static int setup(void **state)
{
    (void)state;
    const char *shared = getenv("BITT_TEST_POSTGRES_DIR");
    if (!shared || !*shared) {
        fprintf(stderr, "test_postgres_tls: set BITT_TEST_POSTGRES_DIR (scripts/test does): the "
                        "private TLS cluster is placed beside it\n");
        return -1;
    }
    snprintf(g_dir, sizeof g_dir, "%s-tls-%ld", shared, (long)getpid());
    snprintf(g_tls, sizeof g_tls, "/tmp/bitt-tls-XXXXXX");
    if (!mkdtemp(g_tls))
        return -1;
    if (make_certificates() || start_tls_cluster()) {
        fprintf(stderr, "test_postgres_tls: could not set up the TLS cluster (see %s)\n", g_tls);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    run("'%s' stop '%s' >/dev/null 2>&1; rm -rf '%s' '%s'", SCRIPT, g_dir, g_dir, g_tls);
    return 0;
}

/* g_url plus the options. */
static const char *url_with(const char *options)
{
    static char url[2048];
    snprintf(url, sizeof url, "%s?%s", g_url, options);
    return url;
}

static void expect_clean_failure(const char *options, const char *names)
{
    bitt_store *s = NULL;
    int rc = bitt_store_open(url_with(options), &s);
    if (rc != BITT_EBACKEND)
        fail_msg("%s: status %d, expected BITT_EBACKEND: %s", options, rc, bitt_error_last());
    assert_null(s);
    if (!strstr(bitt_error_last(), names))
        fail_msg("%s: the message does not name \"%s\": %s", options, names, bitt_error_last());
    if (strstr(bitt_error_last(), g_password))
        fail_msg("%s: the message shows the password: %s", options, bitt_error_last());
}

static void test_verify_full_works_and_encrypts(void **state)
{
    (void)state;
    char options[1024];
    snprintf(options, sizeof options,
             "sslmode=verify-full&sslrootcert=%s/ca.crt&application_name=bitt_tls_%ld", g_tls,
             (long)getpid());
    bitt_store *s = NULL;
    if (bitt_store_open(url_with(options), &s) != BITT_OK)
        fail_msg("verify-full: %s", bitt_error_last());
    assert_int_equal(bitt_kv_set(s, "k", 1, "v", 1, BITT_KIND_BYTES, 0, NULL), BITT_OK);
    bitt_entry *e = NULL;
    assert_int_equal(bitt_kv_get(s, "k", 1, &e), BITT_OK);
    bitt_entry_free(e);

    /* The server's view of that session: encrypted. */
    PGconn *c = PQconnectdb(g_url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT bool_and(s.ssl), count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a "
             "USING (pid) WHERE a.application_name = 'bitt_tls_%ld'",
             (long)getpid());
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    if (strcmp(PQgetvalue(r, 0, 0), "t") || !strcmp(PQgetvalue(r, 0, 1), "0"))
        fail_msg("bitt's sessions are not all encrypted: ssl=%s, sessions=%s", PQgetvalue(r, 0, 0),
                 PQgetvalue(r, 0, 1));
    PQclear(r);
    PQfinish(c);
    bitt_store_close(s);
}

static void test_verify_full_by_host_name(void **state)
{
    (void)state;
    /* The same server as localhost: the certificate names it too. */
    char options[1024];
    snprintf(options, sizeof options, "sslmode=verify-full&sslrootcert=%s/ca.crt&host=localhost",
             g_tls);
    bitt_store *s = NULL;
    if (bitt_store_open(url_with(options), &s) != BITT_OK)
        fail_msg("verify-full by name: %s", bitt_error_last());
    bitt_store_close(s);
}

static void test_wrong_ca_fails_cleanly(void **state)
{
    (void)state;
    char options[1024];
    snprintf(options, sizeof options, "sslmode=verify-full&sslrootcert=%s/other.crt", g_tls);
    expect_clean_failure(options, "certificate verify failed");
    snprintf(options, sizeof options, "sslmode=verify-full&sslrootcert=%s/no-such.crt", g_tls);
    expect_clean_failure(options, "root certificate file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_full_works_and_encrypts),
        cmocka_unit_test(test_verify_full_by_host_name),
        cmocka_unit_test(test_wrong_ca_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
