/*
 * Store URLs: "scheme:rest?name=value&...". The parser knows nothing of any
 * scheme; each backend reads the options it understands and the engine
 * refuses the rest, so a misspelt option is an error, never ignored.
 * Messages name the part that is wrong but never echo the URL, which may
 * carry a password.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int bitt__percent_decode(const char *s, size_t n, const char *what, char **out)
{
    char *d = bitt__malloc(n + 1);
    if (!d)
        return bitt__fail(BITT_ENOMEM, "out of memory parsing the store URL");
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            d[j++] = s[i];
            continue;
        }
        int hi = i + 2 < n ? bitt__hex_digit((unsigned char)s[i + 1]) : -1;
        int lo = i + 2 < n ? bitt__hex_digit((unsigned char)s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(d);
            return bitt__fail(BITT_EURL, "store URL: bad percent-escape in %s", what);
        }
        d[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    d[j] = '\0';
    *out = d;
    return BITT_OK;
}

/* Whether a name or value may be quoted in a message: short, and made of
 * characters no URL delimiter is among. Anything else may be a piece of a
 * password whose raw '?', '&' or '=' cut it into the query. */
static int quotable(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_.-+", s[i]))
            return 0;
    return 1;
}

static int parse_query(const char *q, bitt_url *url)
{
    size_t count = 1;
    for (const char *p = q; *p; p++)
        count += *p == '&';
    url->params = bitt__calloc(count, sizeof *url->params);
    if (!url->params)
        return bitt__fail(BITT_ENOMEM, "out of memory parsing the store URL");
    while (*q) {
        size_t len = strcspn(q, "&");
        const char *eq = memchr(q, '=', len);
        if (len == 0 || eq == q)
            return bitt__fail(BITT_EURL, "store URL: an option has no name");
        if (!eq && quotable(q, len))
            return bitt__fail(BITT_EURL, "store URL: option '%.*s' has no value (write name=value)",
                              (int)len, q);
        if (!eq || !quotable(q, (size_t)(eq - q)))
            return bitt__fail(BITT_EURL,
                              "store URL: an option is not name=value with a name of letters, "
                              "digits, '_', '.', '-' (a password holding '?', '&' or '=' must "
                              "write them %%3F, %%26, %%3D)");
        bitt_url_param *p = &url->params[url->param_count];
        int rc = bitt__percent_decode(q, (size_t)(eq - q), "an option name", &p->name);
        if (!rc)
            rc = bitt__percent_decode(eq + 1, len - (size_t)(eq - q) - 1, "an option value",
                                      &p->value);
        url->param_count++;
        if (rc)
            return rc;
        for (size_t i = 0; i + 1 < url->param_count; i++)
            if (!strcmp(url->params[i].name, p->name))
                return bitt__fail(BITT_EURL, "store URL: option '%s' is given twice", p->name);
        q += len;
        if (*q == '&')
            q++;
    }
    return BITT_OK;
}

int bitt__url_parse(const char *text, bitt_url *url)
{
    memset(url, 0, sizeof *url);
    if (!text)
        return bitt__fail(BITT_EURL, "store URL is NULL");
    size_t scheme_len = 0;
    while (isalnum((unsigned char)text[scheme_len]) || text[scheme_len] == '+' ||
           text[scheme_len] == '-' || text[scheme_len] == '.')
        scheme_len++;
    if (scheme_len == 0 || text[scheme_len] != ':')
        return bitt__fail(BITT_EURL,
                          "store URL must start with a scheme such as memory:, sqlite:PATH");
    url->scheme = bitt__malloc(scheme_len + 1);
    if (!url->scheme)
        return bitt__fail(BITT_ENOMEM, "out of memory parsing the store URL");
    for (size_t i = 0; i < scheme_len; i++)
        url->scheme[i] = (char)tolower((unsigned char)text[i]);
    url->scheme[scheme_len] = '\0';

    const char *rest = text + scheme_len + 1;
    const char *query = strchr(rest, '?');
    size_t rest_len = query ? (size_t)(query - rest) : strlen(rest);
    int rc = bitt__percent_decode(rest, rest_len, "the location", &url->rest);
    if (!rc) {
        url->raw_rest = bitt__malloc(rest_len + 1);
        if (!url->raw_rest)
            rc = bitt__fail(BITT_ENOMEM, "out of memory parsing the store URL");
        else {
            memcpy(url->raw_rest, rest, rest_len);
            url->raw_rest[rest_len] = '\0';
        }
    }
    if (!rc && query)
        rc = parse_query(query + 1, url);
    return rc;
}

void bitt__url_free(bitt_url *url)
{
    if (!url)
        return;
    for (size_t i = 0; i < url->param_count; i++) {
        free(url->params[i].name);
        free(url->params[i].value);
    }
    free(url->params);
    free(url->scheme);
    free(url->rest);
    free(url->raw_rest);
    memset(url, 0, sizeof *url);
}

const char *bitt__url_param(bitt_url *url, const char *name)
{
    for (size_t i = 0; i < url->param_count; i++) {
        if (!strcmp(url->params[i].name, name)) {
            url->params[i].used = 1;
            return url->params[i].value;
        }
    }
    return NULL;
}

int bitt__url_param_int(bitt_url *url, const char *name, int64_t min, int64_t max, int64_t def,
                        int64_t *out)
{
    const char *v = bitt__url_param(url, name);
    if (!v) {
        *out = def;
        return BITT_OK;
    }
    char *end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || isspace((unsigned char)*v)) {
        if (!quotable(v, strlen(v)))
            return bitt__fail(BITT_EURL, "store URL: option %s is not an integer", name);
        return bitt__fail(BITT_EURL, "store URL: option %s=%s is not an integer", name, v);
    }
    if (n < min || n > max)
        return bitt__fail(BITT_EURL, "store URL: option %s=%lld is out of range [%lld, %lld]", name,
                          n, (long long)min, (long long)max);
    *out = n;
    return BITT_OK;
}

int bitt__url_check_all_used(const bitt_url *url)
{
    for (size_t i = 0; i < url->param_count; i++)
        if (!url->params[i].used)
            return bitt__fail(BITT_EURL, "store URL: unknown option '%s' for the %s backend",
                              url->params[i].name, url->scheme);
    return BITT_OK;
}
