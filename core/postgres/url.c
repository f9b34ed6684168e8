/*
 * core/postgres/url.c: postgres://user:password@host:port/dbname?options.
 *
 * The location is parsed here (the engine only splits scheme, location and
 * query); user, password, host and dbname are percent-decoded. Options:
 *   schema=NAME            where bitt's tables live (default public),
 *                          [A-Za-z0-9_]{1,63}; created when missing
 *   table_prefix=P         prepended to every table name, [A-Za-z0-9_]{0,32}
 *   statement_timeout=MS   bound on every statement (default 30000); also
 *                          idle_in_transaction_session_timeout
 *   spin_us=US             how long a wait for results spins before it
 *                          sleeps (default 200, 0 never; core/io_spin.c)
 *   pool=N                 most connections the store opens (default 16,
 *                          1 to 256; pool.c)
 * and every libpq connection parameter this libpq knows (sslmode,
 * connect_timeout, application_name, target_session_attrs, ...), passed
 * through as given; host, port, dbname, user and password given as options
 * override the location's. Any other option is refused by the engine.
 * client_encoding is always UTF8.
 *
 * The password is kept for reconnecting, and every message the backend
 * records goes through bitt__pg_redact first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

#define DEFAULT_STATEMENT_TIMEOUT 30000
#define DEFAULT_CONNECT_TIMEOUT "10"

static int ident_ok(const char *s, size_t min, size_t max)
{
    size_t n = strlen(s);
    if (n < min || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

/* Appends keyword=value (both copied) to the connection parameters. */
static int add_param(bitt_backend *be, const char *kw, const char *value)
{
    for (size_t i = 0; i < be->nparams; i++) {
        if (!strcmp(be->keywords[i], kw)) { /* a later one overrides */
            char *v = bitt__strdup(value);
            if (!v)
                return bitt__fail(BITT_ENOMEM, "postgres: out of memory");
            free(be->values[i]);
            be->values[i] = v;
            return BITT_OK;
        }
    }
    char **k = bitt__realloc(be->keywords, (be->nparams + 2) * sizeof *k);
    if (k)
        be->keywords = k;
    char **v = bitt__realloc(be->values, (be->nparams + 2) * sizeof *v);
    if (v)
        be->values = v;
    if (!k || !v)
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory");
    be->keywords[be->nparams] = bitt__strdup(kw);
    be->values[be->nparams] = bitt__strdup(value);
    if (!be->keywords[be->nparams] || !be->values[be->nparams]) {
        free(be->keywords[be->nparams]);
        free(be->values[be->nparams]);
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory");
    }
    be->nparams++;
    be->keywords[be->nparams] = NULL;
    be->values[be->nparams] = NULL;
    return BITT_OK;
}

/* A decoded part of the location, added as keyword when not empty. */
static int add_part(bitt_backend *be, const char *kw, const char *s, size_t n)
{
    if (!n)
        return BITT_OK;
    char *d = NULL;
    int rc = bitt__percent_decode(s, n, kw, &d);
    if (!rc)
        rc = add_param(be, kw, d);
    free(d);
    return rc;
}

/* host[:port] lists: "h1:5432,[::1]:5433" -> host "h1,::1", port
 * "5432,5433" (libpq takes comma-separated lists). */
static int add_hosts(bitt_backend *be, const char *s, size_t n)
{
    char *hosts = bitt__calloc(1, n + 1), *ports = bitt__calloc(1, n + 1);
    int rc = hosts && ports ? BITT_OK : bitt__fail(BITT_ENOMEM, "postgres: out of memory");
    int any_port = 0;
    size_t hl = 0, pl = 0;
    for (size_t i = 0; i < n && !rc;) {
        size_t end = i;
        while (end < n && s[end] != ',')
            end++;
        const char *h = s + i, *port = NULL;
        size_t h_len = end - i, p_len = 0;
        if (h_len && h[0] == '[') { /* [IPv6]:port */
            const char *close = memchr(h, ']', h_len);
            if (!close)
                rc = bitt__fail(BITT_EURL, "postgres: an IPv6 host lacks its ']'");
            else {
                if ((size_t)(close - h) + 1 < h_len && close[1] == ':') {
                    port = close + 2;
                    p_len = h_len - (size_t)(port - h);
                }
                h_len = (size_t)(close - h) - 1;
                h++;
            }
        } else {
            const char *colon = memchr(h, ':', h_len);
            if (colon) {
                port = colon + 1;
                p_len = h_len - (size_t)(port - h);
                h_len = (size_t)(colon - h);
            }
        }
        if (!rc) {
            if (i) {
                hosts[hl++] = ',';
                ports[pl++] = ',';
            }
            memcpy(hosts + hl, h, h_len);
            hl += h_len;
            if (port) {
                memcpy(ports + pl, port, p_len);
                pl += p_len;
                any_port = 1;
            }
        }
        i = end + 1;
    }
    if (!rc)
        rc = add_part(be, "host", hosts, hl);
    if (!rc && any_port)
        rc = add_part(be, "port", ports, pl);
    free(hosts);
    free(ports);
    return rc;
}

/* //[user[:password]@][hosts][/dbname]. The user info ends at the last
 * '@' of the location, so a password with an unescaped '/' or '@' is
 * still taken whole (and redacted), never misread as a host or port that
 * an error message would echo. */
static int parse_location(bitt_url *url, bitt_backend *be)
{
    const char *s = url->raw_rest ? url->raw_rest : "";
    if (strncmp(s, "//", 2) != 0)
        return bitt__fail(BITT_EURL, "postgres: the URL must look like "
                                     "postgres://user:password@host:port/dbname");
    s += 2;
    const char *at = strrchr(s, '@');
    const char *hosts = at ? at + 1 : s;
    const char *slash = strchr(hosts, '/');
    int rc = BITT_OK;
    if (at) {
        const char *colon = memchr(s, ':', (size_t)(at - s));
        size_t user_len = colon ? (size_t)(colon - s) : (size_t)(at - s);
        rc = add_part(be, "user", s, user_len);
        if (!rc && colon) {
            size_t pw_len = (size_t)(at - colon - 1);
            be->password_raw = bitt__strndup(colon + 1, pw_len);
            if (!be->password_raw)
                rc = bitt__fail(BITT_ENOMEM, "postgres: out of memory");
            if (!rc)
                rc = bitt__percent_decode(colon + 1, pw_len, "password", &be->password);
            if (!rc && pw_len)
                rc = add_param(be, "password", be->password);
        }
    }
    if (!rc)
        rc = add_hosts(be, hosts, slash ? (size_t)(slash - hosts) : strlen(hosts));
    if (!rc && slash)
        rc = add_part(be, "dbname", slash + 1, strlen(slash + 1));
    return rc;
}

/* Every parameter this libpq knows, given as an option, goes through. */
static int pass_libpq_options(bitt_url *url, bitt_backend *be)
{
    PQconninfoOption *opts = PQconndefaults();
    if (!opts)
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory reading libpq's parameters");
    int rc = BITT_OK, has_timeout = 0, has_name = 0;
    for (PQconninfoOption *o = opts; o->keyword && !rc; o++) {
        if (!strcmp(o->keyword, "client_encoding") || !strcmp(o->keyword, "replication"))
            continue;
        const char *v = bitt__url_param(url, o->keyword);
        if (!v)
            continue;
        if (!strcmp(o->keyword, "password") && !be->password) {
            be->password = bitt__strdup(v);
            if (!be->password)
                rc = bitt__fail(BITT_ENOMEM, "postgres: out of memory");
        }
        has_timeout |= !strcmp(o->keyword, "connect_timeout");
        has_name |= !strcmp(o->keyword, "fallback_application_name");
        if (!rc)
            rc = add_param(be, o->keyword, v);
    }
    PQconninfoFree(opts);
    if (!rc && !has_timeout)
        rc = add_param(be, "connect_timeout", DEFAULT_CONNECT_TIMEOUT);
    if (!rc && !has_name)
        rc = add_param(be, "fallback_application_name", "bitt");
    if (!rc)
        rc = add_param(be, "client_encoding", "UTF8");
    return rc;
}

static int read_own_options(bitt_url *url, bitt_backend *be)
{
    const char *schema = bitt__url_param(url, "schema");
    const char *prefix = bitt__url_param(url, "table_prefix");
    int rc = bitt__url_param_int(url, "statement_timeout", 1, INT32_MAX, DEFAULT_STATEMENT_TIMEOUT,
                                 &be->statement_timeout);
    if (rc)
        return rc;
    int64_t spin;
    rc = bitt__url_param_int(url, "spin_us", 0, BITT_SPIN_MAX_US, BITT_SPIN_DEFAULT_US, &spin);
    if (rc)
        return rc;
    be->spin.budget_us = (int32_t)spin;
    int64_t pool;
    rc = bitt__url_param_int(url, "pool", 1, BITT_PG_POOL_MAX, BITT_PG_DEFAULT_POOL, &pool);
    if (rc)
        return rc;
    be->pool.size = (size_t)pool;
    schema = schema ? schema : "public";
    prefix = prefix ? prefix : "";
    if (!ident_ok(schema, 1, BITT_PG_IDENT_MAX))
        return bitt__fail(BITT_EURL, "postgres: schema must be 1 to %d letters, digits or '_'",
                          BITT_PG_IDENT_MAX);
    if (!ident_ok(prefix, 0, BITT_PG_PREFIX_MAX))
        return bitt__fail(BITT_EURL,
                          "postgres: table_prefix may hold only letters, digits and '_' (at "
                          "most %d; it is part of table names)",
                          BITT_PG_PREFIX_MAX);
    memcpy(be->schema, schema, strlen(schema) + 1);
    memcpy(be->prefix, prefix, strlen(prefix) + 1);
    uint64_t h = bitt__pg_hash(0xcbf29ce484222325ULL, schema, strlen(schema) + 1);
    be->ns_seed = bitt__pg_hash(h, prefix, strlen(prefix));
    snprintf(be->channel, sizeof be->channel, "bitt_%016llx", (unsigned long long)be->ns_seed);
    return BITT_OK;
}

int bitt__pg_read_url(bitt_url *url, bitt_backend *be)
{
    int rc = read_own_options(url, be);
    if (!rc)
        rc = parse_location(url, be);
    if (!rc)
        rc = pass_libpq_options(url, be);
    return rc;
}

void bitt__pg_free_params(bitt_backend *be)
{
    for (size_t i = 0; i < be->nparams; i++) {
        if (!strcmp(be->keywords[i], "password"))
            memset(be->values[i], 0, strlen(be->values[i]));
        free(be->keywords[i]);
        free(be->values[i]);
    }
    free(be->keywords);
    free(be->values);
    if (be->password)
        memset(be->password, 0, strlen(be->password));
    if (be->password_raw)
        memset(be->password_raw, 0, strlen(be->password_raw));
    free(be->password);
    free(be->password_raw);
    be->keywords = be->values = NULL;
    be->password = be->password_raw = NULL;
    be->nparams = 0;
}

/*
 * Every occurrence of a password is replaced by "***": the one of the
 * location (decoded and as written) and every password= the connection
 * uses. The whole input is scanned, and output is cut at cap only after a
 * match is decided, so no cut leaves the first bytes of a password behind
 * (a cut applied before redaction would). At each position the longest
 * matching password wins.
 */
void bitt__pg_redact(const bitt_backend *be, const char *in, char *out, size_t cap)
{
    if (!cap)
        return;
    const char *secrets[8];
    size_t lens[8], count = 0;
    const char *own[2] = {be ? be->password : NULL, be ? be->password_raw : NULL};
    for (size_t i = 0; i < 2; i++)
        if (own[i] && own[i][0])
            secrets[count++] = own[i];
    for (size_t i = 0; be && i < be->nparams && count < 8; i++)
        if (!strcmp(be->keywords[i], "password") && be->values[i][0])
            secrets[count++] = be->values[i];
    for (size_t i = 0; i < count; i++)
        lens[i] = strlen(secrets[i]);
    size_t j = 0;
    for (const char *s = in ? in : ""; *s && j + 1 < cap;) {
        size_t best = 0;
        for (size_t i = 0; i < count; i++)
            if (lens[i] > best && !strncmp(s, secrets[i], lens[i]))
                best = lens[i];
        if (!best) {
            out[j++] = *s++;
            continue;
        }
        for (const char *r = "***"; *r && j + 1 < cap; r++)
            out[j++] = *r;
        s += best;
    }
    out[j] = '\0';
}
