/*
 * group.c: what the command groups (queue, lease, outbox, schedule, budget,
 * pubsub) share: finding the subcommand, and the arguments they all take.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Every --help ends with the options every command takes and every form of
 * store URL: an operator reading any one page learns how to reach a store. */
static const char shared_options[] =
    "\n"
    "Options (before or after the command):\n"
    "  --store URL   the store; default: $BITT_STORE, else sqlite:bitt.db\n"
    "                  memory:                     private to this process\n"
    "                  sqlite:PATH                 a SQLite file, made when missing\n"
    "                  sqlite::memory:             a private in-memory SQLite\n"
    "                  postgres://[USER:PASS@]HOST:PORT/DB?schema=S\n"
    "                                              PostgreSQL (also postgresql://)\n"
    "                  redis://[USER:PASS@]HOST:PORT/DB?prefix=P\n"
    "                                              Redis\n"
    "                  unix:/PATH/redis.sock?db=N  Redis over a unix socket\n"
    "                options are a query string (sqlite:app.db?busy_timeout=2000)\n"
    "  --json        print one JSON document on one line (pubsub listen: one a\n"
    "                message); times are integers, ms since the Unix epoch\n"
    "  --tsv         print tables TAB-separated, with no header, times in ms\n"
    "  -q, --quiet   no reason on stderr when the result is absent (exit 1)\n"
    "  --hex         KEY, VALUE, PAYLOAD, EVENT, DATA and --prefix, --start,\n"
    "                --end, --dedup are hex (\"00ff\")\n"
    "  --hex-out     print keys, values, payloads as hex\n"
    "  --raw         kv get: write the exact value bytes, with no newline\n"
    "  -h, --help    print the usage (of the command, after one)\n";

int cli_help(const char *usage)
{
    fputs(usage, stdout);
    fputs(shared_options, stdout);
    return cli_finish(CLI_OK);
}

int cli_group(cli *c, const char *group, const char *usage, const char *names, const cli_sub *subs,
              size_t nsubs, int argc, char **argv)
{
    /* Shared options may come between the group and the subcommand. */
    int i = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return cli_help(usage);
        cli_args a;
        int wants = strcmp(argv[i], "--store") == 0 && i + 1 < argc;
        int code = cli_parse(c, group, 1 + wants, argv + i, NULL, 0, 0, 0, &a);
        if (code != CLI_OK)
            return code;
        i += wants;
    }
    if (i >= argc)
        return cli_usage_error(group, "missing subcommand (%s)", names);
    for (size_t s = 0; s < nsubs; s++)
        if (strcmp(argv[i], subs[s].name) == 0)
            return subs[s].run(c, argc - i - 1, argv + i + 1);
    return cli_usage_error(group, "unknown subcommand '%s'", argv[i]);
}

int cli_parse_kind(const char *cmd, const char *s, int *kind)
{
    if (strcmp(s, "bytes") == 0)
        *kind = BITT_KIND_BYTES;
    else if (strcmp(s, "json") == 0)
        *kind = BITT_KIND_JSON;
    else if (strcmp(s, "counter") == 0)
        *kind = BITT_KIND_COUNTER;
    else
        return cli_usage_error(cmd, "--kind must be bytes, json or counter: '%s'", s);
    return CLI_OK;
}

int cli_parse_ms(const char *cmd, const char *what, const char *s, int64_t *out)
{
    if (cli_parse_i64(cmd, what, s, out) != CLI_OK)
        return CLI_USAGE;
    if (*out < 0)
        return cli_usage_error(cmd, "%s must not be negative: '%s'", what, s);
    return CLI_OK;
}

int cli_parse_id(const char *cmd, const char *what, const char *s, uint64_t *out)
{
    char *end = NULL;
    if (s[0] < '0' || s[0] > '9')
        goto bad;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || errno == ERANGE || v == 0)
        goto bad;
    *out = (uint64_t)v;
    return CLI_OK;
bad:
    return cli_usage_error(cmd, "%s must be an integer from 1 to %" PRIu64 ": '%s'", what,
                           (uint64_t)UINT64_MAX, s);
}
