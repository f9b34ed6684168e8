/*
 * kv_cmd.c: `bitt kv get|set|del|incr` and the dispatch of `bitt kv`
 * (list lives in kv_list.c).
 */
#include <inttypes.h>

#include "cli.h"

static const char kv_usage[] =
    "Usage: bitt [--store URL] kv <subcommand> [options]\n"
    "\n"
    "Subcommands:\n"
    "  get KEY            print the value of KEY (exit 1 when it is absent)\n"
    "  set KEY VALUE      write VALUE under KEY\n"
    "  del KEY            delete KEY (exit 1 when it was absent)\n"
    "  list               print the entries in key order, a row each\n"
    "  incr KEY [DELTA]   add DELTA (default 1) to a counter and print the result\n"
    "\n"
    "Keys and values are any bytes: --hex takes them as hex, --hex-out prints hex.\n"
    "Run 'bitt kv <subcommand> --help' for the options of each.\n";

static const char get_usage[] =
    "Usage: bitt kv get KEY [--hex] [--hex-out | --raw | --json | --tsv]\n"
    "\n"
    "Prints the value of KEY and a newline. A value that is printable UTF-8\n"
    "(tabs and newlines included) prints as it is; in any other value, each\n"
    "byte that is not printable UTF-8 prints as \\xNN and each backslash as\n"
    "\\\\. For the exact bytes use --raw or --hex-out; --tsv escapes tabs and\n"
    "newlines too, so that the value is one line.\n"
    "\n"
    "Options:\n"
    "  --hex        KEY is hex (\"00ff\")\n"
    "  --hex-out    print the value as hex\n"
    "  --raw        write the exact value bytes, with no newline\n"
    "  --json       print {\"key\",\"value\",\"kind\",\"version\",\"expires_at\"}; keys\n"
    "               and values that are not UTF-8 come as \"key_hex\"/\"value_hex\";\n"
    "               an absent key prints null\n"
    "\n"
    "Exit status: 0 found, 1 absent (\"bitt: key not found: KEY\" on stderr\n"
    "unless --quiet), 2 error, 64 usage.\n";

static const char set_usage[] =
    "Usage: bitt kv set KEY VALUE [--ttl MS] [--kind bytes|json|counter] [--hex]\n"
    "\n"
    "Writes VALUE under KEY. Put -- before a VALUE that starts with '-'.\n"
    "\n"
    "Options:\n"
    "  --ttl MS      expire MS milliseconds from now (0, the default: never)\n"
    "  --kind KIND   bytes (default); json: one valid JSON text; counter: a\n"
    "                decimal int64 such as -42\n"
    "  --hex         KEY and VALUE are hex (\"00ff\")\n"
    "  --json        print {\"version\":N}, the versionstamp of the write\n"
    "\n"
    "Exit status: 0 written, 2 error, 64 usage.\n";

static const char del_usage[] =
    "Usage: bitt kv del KEY [--hex] [--json]\n"
    "\n"
    "Deletes KEY. --hex: KEY is hex. --json: print {\"deleted\":true|false}.\n"
    "\n"
    "Exit status: 0 deleted, 1 it was absent (\"bitt: key not found: KEY\" on\n"
    "stderr unless --quiet), 2 error, 64 usage.\n";

static const char incr_usage[] =
    "Usage: bitt kv incr KEY [DELTA] [--ttl MS] [--hex] [--json]\n"
    "\n"
    "Adds DELTA (an int64, default 1, may be negative) to the counter at KEY\n"
    "and prints the new value. A missing key starts from 0 and gets --ttl MS\n"
    "(default: no expiry); an existing key keeps its TTL. A value that is not a\n"
    "counter, or a result outside int64, is an error and changes nothing.\n"
    "\n"
    "Options:\n"
    "  --ttl MS   the TTL of a key this creates\n"
    "  --hex      KEY is hex\n"
    "  --json     print {\"value\":N,\"version\":V}\n"
    "\n"
    "Exit status: 0 done, 2 error, 64 usage.\n";

static int kv_get(cli *c, int argc, char **argv)
{
    cli_args a;
    cli_bytes key;
    bitt_store *store = NULL;
    bitt_entry *entry = NULL;
    c->raw_ok = 1;
    int code = cli_parse(c, "kv get", argc, argv, NULL, 0, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(get_usage) : code;
    if (c->raw && (c->hex_out || c->json || c->tsv))
        return cli_usage_error("kv get", "--raw does not go with --hex-out, --json or --tsv");
    if ((code = cli_bytes_arg(c, "kv get", "KEY", a.pos[0], &key)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = bitt_kv_get(store, key.ptr, key.len, &entry);
        if (rc < 0) {
            code = cli_fail(rc);
        } else if (rc == BITT_NOTFOUND) {
            cli_put_json_null(c);
            code = cli_absent(c, "key not found: %s", a.pos[0]);
        } else if (c->json) {
            cli_put_json_entry(c, entry);
            putchar('\n');
        } else {
            cli_put_value(c, entry);
        }
    }
    bitt_entry_free(entry);
    bitt_store_close(store);
    cli_bytes_free(&key);
    return cli_finish(code);
}

static int parse_ttl(const char *cmd, const char *s, int64_t *ttl)
{
    *ttl = BITT_TTL_NONE;
    return s ? cli_parse_ms(cmd, "--ttl", s, ttl) : CLI_OK;
}

static int kv_set(cli *c, int argc, char **argv)
{
    static const cli_optspec specs[] = {{"ttl", 1}, {"kind", 1}};
    cli_args a;
    cli_bytes key = {0}, value = {0};
    bitt_store *store = NULL;
    int kind = BITT_KIND_BYTES;
    int64_t ttl = 0;
    int code = cli_parse(c, "kv set", argc, argv, specs, 2, 2, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(set_usage) : code;
    if ((code = parse_ttl("kv set", a.value[0], &ttl)) != CLI_OK ||
        (a.value[1] && (code = cli_parse_kind("kv set", a.value[1], &kind)) != CLI_OK) ||
        (code = cli_bytes_arg(c, "kv set", "KEY", a.pos[0], &key)) != CLI_OK ||
        (code = cli_bytes_arg(c, "kv set", "VALUE", a.pos[1], &value)) != CLI_OK) {
        cli_bytes_free(&key);
        return code;
    }
    if ((code = cli_open(c, &store)) == CLI_OK) {
        uint64_t version = 0;
        int rc = bitt_kv_set(store, key.ptr, key.len, value.ptr, value.len, kind, ttl, &version);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            printf("{\"version\":%" PRIu64 "}\n", version);
    }
    bitt_store_close(store);
    cli_bytes_free(&key);
    cli_bytes_free(&value);
    return cli_finish(code);
}

static int kv_del(cli *c, int argc, char **argv)
{
    cli_args a;
    cli_bytes key;
    bitt_store *store = NULL;
    int code = cli_parse(c, "kv del", argc, argv, NULL, 0, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(del_usage) : code;
    if ((code = cli_bytes_arg(c, "kv del", "KEY", a.pos[0], &key)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = bitt_kv_delete(store, key.ptr, key.len);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            if (c->json)
                printf("{\"deleted\":%s}\n", rc == BITT_OK ? "true" : "false");
            if (rc == BITT_NOTFOUND)
                code = cli_absent(c, "key not found: %s", a.pos[0]);
        }
    }
    bitt_store_close(store);
    cli_bytes_free(&key);
    return cli_finish(code);
}

static int kv_incr(cli *c, int argc, char **argv)
{
    static const cli_optspec specs[] = {{"ttl", 1}};
    cli_args a;
    cli_bytes key;
    bitt_store *store = NULL;
    int64_t delta = 1, ttl = 0;
    int code = cli_parse(c, "kv incr", argc, argv, specs, 1, 1, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(incr_usage) : code;
    if ((code = parse_ttl("kv incr", a.value[0], &ttl)) != CLI_OK)
        return code;
    if (a.npos > 1 && (code = cli_parse_i64("kv incr", "DELTA", a.pos[1], &delta)) != CLI_OK)
        return code;
    if ((code = cli_bytes_arg(c, "kv incr", "KEY", a.pos[0], &key)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int64_t value = 0;
        uint64_t version = 0;
        int rc = bitt_kv_increment(store, key.ptr, key.len, delta, ttl, &value, &version);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            printf("{\"value\":%" PRId64 ",\"version\":%" PRIu64 "}\n", value, version);
        else
            printf("%" PRId64 "\n", value);
    }
    bitt_store_close(store);
    cli_bytes_free(&key);
    return cli_finish(code);
}

int cli_kv(cli *c, int argc, char **argv)
{
    static const cli_sub subs[] = {
        {"get", kv_get},       {"set", kv_set},     {"del", kv_del},   {"delete", kv_del},
        {"list", cli_kv_list}, {"ls", cli_kv_list}, {"incr", kv_incr},
    };
    return cli_group(c, "kv", kv_usage, "get, set, del, list or incr", subs,
                     sizeof(subs) / sizeof(subs[0]), argc, argv);
}
