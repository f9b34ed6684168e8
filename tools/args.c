/*
 * args.c: the command line of every bitt command, and how failures are
 * reported (usage errors exit 64, library errors exit 2).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fputs("bitt: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'bitt%s%s --help'.\n", cmd[0] ? " " : "", cmd);
    return CLI_USAGE;
}

/* The shared options: returns 1 when name is one (consuming its value). */
static int shared_option(cli *c, const char *name, const char *value, int *wants_value)
{
    *wants_value = 0;
    if (strcmp(name, "store") == 0) {
        *wants_value = 1;
        if (value)
            c->store_url = value;
        return 1;
    }
    if (strcmp(name, "hex") == 0)
        c->hex_in = 1;
    else if (strcmp(name, "hex-out") == 0)
        c->hex_out = 1;
    else if (strcmp(name, "json") == 0)
        c->json = 1;
    else if (strcmp(name, "tsv") == 0)
        c->tsv = 1;
    else if (strcmp(name, "quiet") == 0)
        c->quiet = 1;
    else if (strcmp(name, "raw") == 0)
        c->raw = 1;
    else
        return 0;
    return 1;
}

static int is_number_word(const char *w)
{
    return w[0] == '-' && w[1] >= '0' && w[1] <= '9';
}

int cli_parse(cli *c, const char *cmd, int argc, char **argv, const cli_optspec *specs,
              size_t nspecs, int min_pos, int max_pos, cli_args *out)
{
    int problem = 0; /* report the first problem, unless --help comes later */
    int options_done = 0;
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < argc; i++) {
        const char *w = argv[i];
        if (options_done || w[0] != '-' || w[1] == '\0' || is_number_word(w)) {
            if (out->npos >= CLI_MAX_POS || out->npos >= max_pos) {
                if (!problem)
                    problem = cli_usage_error(cmd, "unexpected argument '%s'", w);
                continue;
            }
            out->pos[out->npos++] = w;
            continue;
        }
        if (strcmp(w, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0) {
            out->help = 1;
            return CLI_OK;
        }
        if (strcmp(w, "-q") == 0) {
            c->quiet = 1;
            continue;
        }
        if (w[1] != '-') {
            if (!problem)
                problem = cli_usage_error(cmd, "unknown option '%s'", w);
            continue;
        }
        /* --name, --name VALUE or --name=VALUE */
        char name[64];
        const char *eq = strchr(w + 2, '=');
        size_t nlen = eq ? (size_t)(eq - (w + 2)) : strlen(w + 2);
        if (nlen >= sizeof(name)) {
            if (!problem)
                problem = cli_usage_error(cmd, "unknown option '%s'", w);
            continue;
        }
        memcpy(name, w + 2, nlen);
        name[nlen] = '\0';
        const char *value = eq ? eq + 1 : NULL;
        int takes_value = 0;
        size_t which = nspecs;
        if (!shared_option(c, name, NULL, &takes_value)) {
            for (which = 0; which < nspecs; which++)
                if (strcmp(specs[which].name, name) == 0)
                    break;
            if (which == nspecs) {
                if (!problem)
                    problem = cli_usage_error(cmd, "unknown option '--%s'", name);
                continue;
            }
            takes_value = specs[which].takes_value;
        }
        if (takes_value && !value) {
            if (i + 1 >= argc) {
                if (!problem)
                    problem = cli_usage_error(cmd, "option '--%s' needs a value", name);
                continue;
            }
            value = argv[++i];
        } else if (!takes_value && value) {
            if (!problem)
                problem = cli_usage_error(cmd, "option '--%s' takes no value", name);
            continue;
        }
        if (which == nspecs)
            shared_option(c, name, value, &takes_value);
        else
            out->value[which] = value ? value : "";
    }
    if (problem)
        return problem;
    if (c->json && c->tsv)
        return cli_usage_error(cmd, "--json does not go with --tsv");
    if (out->npos < min_pos)
        return cli_usage_error(cmd, "missing argument");
    return CLI_OK;
}

int cli_parse_i64(const char *cmd, const char *what, const char *s, int64_t *out)
{
    char *end = NULL;
    const char *digits = s[0] == '-' ? s + 1 : s;
    if (digits[0] < '0' || digits[0] > '9')
        goto bad;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || errno == ERANGE)
        goto bad;
    *out = (int64_t)v;
    return CLI_OK;
bad:
    return cli_usage_error(cmd, "%s must be an integer in the int64 range: '%s'", what, s);
}

int cli_parse_u32(const char *cmd, const char *what, const char *s, uint32_t *out)
{
    char *end = NULL;
    if (s[0] < '0' || s[0] > '9')
        goto bad;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || errno == ERANGE || v > UINT32_MAX)
        goto bad;
    *out = (uint32_t)v;
    return CLI_OK;
bad:
    return cli_usage_error(cmd, "%s must be an integer from 0 to %" PRIu32 ": '%s'", what,
                           (uint32_t)UINT32_MAX, s);
}

int cli_parse_i32(const char *cmd, const char *what, const char *s, int32_t *out)
{
    int64_t v = 0;
    int code = cli_parse_i64(cmd, what, s, &v);
    if (code != CLI_OK)
        return code;
    if (v < INT32_MIN || v > INT32_MAX)
        return cli_usage_error(cmd, "%s must be an integer from %" PRId32 " to %" PRId32 ": '%s'",
                               what, (int32_t)INT32_MIN, (int32_t)INT32_MAX, s);
    *out = (int32_t)v;
    return CLI_OK;
}

int cli_fail(int status)
{
    const char *msg = bitt_error_last();
    if (msg == NULL || msg[0] == '\0')
        msg = bitt_strerror(status);
    fprintf(stderr, "bitt: %s\n", msg);
    return CLI_ERROR;
}

int cli_absent(const cli *c, const char *fmt, ...)
{
    if (c->quiet)
        return CLI_NOTFOUND;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    fflush(stdout); /* what was printed comes first on a terminal */
    fputs("bitt: ", stderr);
    /* Names and keys come from the command line and may hold control
     * characters: escaped, the reason stays one line. */
    if (text)
        cli_put_escaped(stderr, (const uint8_t *)text, (size_t)n);
    else
        fputs("not found", stderr);
    putc('\n', stderr);
    free(text);
    return CLI_NOTFOUND;
}

int cli_open(const cli *c, bitt_store **out)
{
    /* --raw is a shared option, so only here, once the command is known, can
     * it be refused where it means nothing. */
    if (c->raw && !c->raw_ok) {
        *out = NULL;
        return cli_usage_error("", "--raw is for 'kv get' only");
    }
    int rc = bitt_store_open(c->store_url, out);
    if (rc < 0) {
        *out = NULL;
        return cli_fail(rc);
    }
    return CLI_OK;
}

int cli_finish(int code)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "bitt: cannot write the output: %s\n", strerror(errno));
        return CLI_ERROR;
    }
    return code;
}
