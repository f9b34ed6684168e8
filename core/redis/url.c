/*
 * core/redis/url.c: the Redis store URL and the backend's options.
 *
 *   redis://[user[:password]@]host[:port][/db]?prefix=...&timeout=MS&allow_eviction=1&pool=N&spin_us=US
 *   unix:/path/to/redis.sock?db=N&prefix=...&user=...&password=...
 *
 * The authority is read from the raw (not yet percent-decoded) URL, so a
 * password may hold '@', ':' or '/' written as %40, %3A, %2F. No message
 * here ever quotes the user information.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_internal.h"

#define DEFAULT_PORT 6379
#define TIMEOUT_MAX_MS 86400000 /* a day */

/* A decimal in [min, max] from [s, s + n). */
static int parse_int(const char *s, size_t n, long min, long max, long *out)
{
    if (n == 0 || n > 10)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* user[:password] from the raw user information. */
static int parse_userinfo(const char *s, size_t n, bitt_backend *be)
{
    const char *colon = memchr(s, ':', n);
    size_t user_len = colon ? (size_t)(colon - s) : n;
    int rc = BITT_OK;
    if (user_len)
        rc = bitt__percent_decode(s, user_len, "user name", &be->user);
    if (!rc && colon)
        rc = bitt__percent_decode(colon + 1, n - user_len - 1, "password", &be->password);
    if (!rc && !colon && be->user) {
        /* redis://secret@host: a lone user information is the password,
         * as redis-cli and most clients read it. */
        be->password = be->user;
        be->user = NULL;
    }
    return rc;
}

/* host[:port] or [v6][:port]. */
static int parse_hostport(const char *s, size_t n, bitt_backend *be)
{
    const char *host = s, *port = NULL;
    size_t host_len = n;
    if (n && s[0] == '[') {
        const char *end = memchr(s, ']', n);
        if (!end)
            return bitt__fail(BITT_EURL, "store URL: an IPv6 host needs a closing ']'");
        host = s + 1;
        host_len = (size_t)(end - host);
        if (end + 1 < s + n) {
            if (end[1] != ':')
                return bitt__fail(BITT_EURL, "store URL: expected ':port' after the IPv6 host");
            port = end + 2;
        }
    } else {
        const char *colon = memchr(s, ':', n);
        if (colon) {
            host_len = (size_t)(colon - s);
            port = colon + 1;
        }
    }
    if (!host_len)
        return bitt__fail(BITT_EURL, "store URL: redis:// needs a host (redis://127.0.0.1:6379/0)");
    long p = DEFAULT_PORT;
    if (port && parse_int(port, (size_t)(s + n - port), 1, 65535, &p))
        return bitt__fail(BITT_EURL, "store URL: the port must be a number in [1, 65535]");
    be->port = (int)p;
    int rc = bitt__percent_decode(host, host_len, "host", &be->host);
    if (!rc && be->host[strcspn(be->host, " /?#@")])
        rc = bitt__fail(BITT_EURL, "store URL: the host holds a character it cannot hold");
    return rc;
}

static int parse_tcp(const char *raw, bitt_backend *be)
{
    if (strncmp(raw, "//", 2))
        return bitt__fail(BITT_EURL, "store URL: write redis://host:port/db");
    raw += 2;
    /* The user information ends at the last '@' of the location (a database
     * number never holds one), so a password with an unescaped '/' or '@'
     * is still taken whole, never misread as a host that a connection error
     * would echo. */
    const char *at = strrchr(raw, '@');
    size_t auth_len = (at ? (size_t)(at - raw) : 0) + strcspn(at ? at : raw, "/");
    int rc = BITT_OK;
    const char *hp = raw;
    if (at) {
        rc = parse_userinfo(raw, (size_t)(at - raw), be);
        hp = at + 1;
    }
    if (!rc)
        rc = parse_hostport(hp, (size_t)(raw + auth_len - hp), be);
    if (rc)
        return rc;
    const char *path = raw + auth_len;
    long db = 0;
    if (*path == '/')
        path++;
    if (*path && parse_int(path, strlen(path), 0, 0x7fffffffL, &db))
        return bitt__fail(BITT_EURL,
                          "store URL: the path must be a database number (redis://host:port/0)");
    be->db = (int)db;
    snprintf(be->where, sizeof be->where, "%s:%d", be->host, be->port);
    return BITT_OK;
}

static int parse_unix(bitt_url *url, bitt_backend *be)
{
    if (!url->rest || !url->rest[0])
        return bitt__fail(BITT_EURL, "store URL: write unix:/path/to/redis.sock");
    be->is_unix = 1;
    be->path = bitt__strdup(url->rest);
    if (!be->path)
        return bitt__fail(BITT_ENOMEM, "out of memory parsing the store URL");
    int64_t db;
    int rc = bitt__url_param_int(url, "db", 0, 0x7fffffff, 0, &db);
    if (rc)
        return rc;
    be->db = (int)db;
    const char *user = bitt__url_param(url, "user");
    const char *password = bitt__url_param(url, "password");
    if (user && !(be->user = bitt__strdup(user)))
        return bitt__fail(BITT_ENOMEM, "out of memory parsing the store URL");
    if (password && !(be->password = bitt__strdup(password)))
        return bitt__fail(BITT_ENOMEM, "out of memory parsing the store URL");
    snprintf(be->where, sizeof be->where, "%s", be->path);
    return BITT_OK;
}

static int prefix_ok(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > BITT_RD_PREFIX_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == ':'))
            return 0;
    }
    return 1;
}

int bitt__rd_parse_url(bitt_url *url, bitt_backend *be)
{
    int rc = !strcmp(url->scheme, "unix") ? parse_unix(url, be) : parse_tcp(url->raw_rest, be);
    if (rc)
        return rc;
    const char *prefix = bitt__url_param(url, "prefix");
    if (!prefix)
        prefix = BITT_RD_DEFAULT_PREFIX;
    if (!prefix_ok(prefix))
        return bitt__fail(BITT_EURL,
                          "store URL: prefix must be 1 to %d characters of "
                          "[A-Za-z0-9_.:-]",
                          BITT_RD_PREFIX_MAX);
    snprintf(be->prefix, sizeof be->prefix, "%s", prefix);
    snprintf(be->anchor, sizeof be->anchor, "{%s}", prefix);
    int64_t v;
    rc = bitt__url_param_int(url, "timeout", 1, TIMEOUT_MAX_MS, BITT_RD_DEFAULT_TIMEOUT_MS, &v);
    if (rc)
        return rc;
    be->timeout_ms = v;
    rc = bitt__url_param_int(url, "allow_eviction", 0, 1, 0, &v);
    be->allow_eviction = (int)v;
    if (!rc)
        rc = bitt__url_param_int(url, "pool", 1, BITT_RD_POOL_MAX, BITT_RD_DEFAULT_POOL, &v);
    be->pool.size = rc ? 0 : (size_t)v;
    if (!rc)
        rc = bitt__url_param_int(url, "spin_us", 0, BITT_SPIN_MAX_US, BITT_SPIN_DEFAULT_US, &v);
    be->pool.spin_us = rc ? 0 : (int)v;
    return rc;
}

static void wipe(char *s)
{
    if (s) {
        volatile char *p = s;
        while (*p)
            *p++ = 0;
    }
    free(s);
}

void bitt__rd_free_location(bitt_backend *be)
{
    free(be->host);
    free(be->path);
    free(be->user);
    wipe(be->password);
    be->host = be->path = be->user = be->password = NULL;
}
