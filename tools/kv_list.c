/*
 * kv_list.c: `bitt kv list`, one page at a time or (--all) every page.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_kv_list_usage[] =
    "Usage: bitt kv list [--prefix P] [--start S] [--end E] [--limit N]\n"
    "                    [--reverse] [--cursor C | --all] [--hex]\n"
    "                    [--hex-out] [--json | --tsv]\n"
    "\n"
    "Prints one page of live entries in key order, under a header:\n"
    "\n"
    "    KEY      KIND   EXPIRES_AT                VALUE\n"
    "    users/1  json   never                     {\"name\": \"Ada\"}\n"
    "    users/2  bytes  2026-12-03T12:00:05.123Z  Grace\n"
    "\n"
    "EXPIRES_AT is UTC (never: no TTL). Printable UTF-8 prints as it is;\n"
    "every other byte (tab, newline and other control characters, bytes that\n"
    "are not UTF-8) prints as \\xNN, and a backslash as \\\\, so that each\n"
    "entry is one line. --hex-out prints keys and values as hex instead.\n"
    "--tsv prints the same columns TAB-separated with no header, EXPIRES_AT\n"
    "in ms (0: no TTL).\n"
    "\n"
    "When more entries exist, the last thing printed is the line\n"
    "\n"
    "    cursor: C\n"
    "\n"
    "on stderr: run the same list again with --cursor C for the next page.\n"
    "\n"
    "Options:\n"
    "  --prefix P   only keys that start with the bytes P (never a pattern)\n"
    "  --start S    only keys >= S\n"
    "  --end E      only keys < E\n"
    "  --limit N    entries per page (default 100, at most 1000)\n"
    "  --reverse    from the last key down\n"
    "  --cursor C   continue after a previous page of the same selection\n"
    "  --all        print every page, not only the first\n"
    "  --hex        P, S and E are hex (\"00ff\")\n"
    "  --hex-out    print keys and values as hex\n"
    "  --json       print {\"entries\":[...],\"cursor\":C or null}; each entry\n"
    "               as in 'bitt kv get --json'\n"
    "  --tsv        TAB-separated, no header, times in ms\n"
    "\n"
    "Exit status: 0 listed (even nothing), 2 error, 64 usage.\n";

enum { OPT_PREFIX, OPT_START, OPT_END, OPT_LIMIT, OPT_REVERSE, OPT_CURSOR, OPT_ALL, OPT_COUNT };

static const cli_optspec specs[OPT_COUNT] = {
    {"prefix", 1},  {"start", 1},  {"end", 1}, {"limit", 1},
    {"reverse", 0}, {"cursor", 1}, {"all", 0},
};

static const char *const columns[] = {"KEY", "KIND", "EXPIRES_AT", "VALUE"};

static void put_row(cli_table *t, const bitt_entry *e)
{
    size_t klen = 0, vlen = 0;
    const uint8_t *k = bitt_entry_key(e, &klen);
    const uint8_t *v = bitt_entry_value(e, &vlen);
    const char *kind = cli_kind_name(bitt_entry_kind(e));
    cli_cell_bytes(t, k, klen);
    cli_cell_text(t, kind ? kind : "?");
    cli_cell_time(t, bitt_entry_expires_at(e), "never");
    cli_cell_bytes(t, v, vlen);
}

/* Prints one page; *printed counts entries so far (for JSON commas). Each
 * page is printed before the next is read, so that --all streams. */
static int put_page(const cli *c, cli_table *t, const bitt_entries *page, size_t *printed)
{
    size_t n = bitt_entries_count(page);
    for (size_t i = 0; i < n; i++) {
        const bitt_entry *e = bitt_entries_at(page, i);
        if (e == NULL)
            continue;
        if (!c->json) {
            put_row(t, e);
            continue;
        }
        if ((*printed)++ > 0)
            putchar(',');
        cli_put_json_entry(c, e);
    }
    return c->json ? CLI_OK : cli_table_flush(t);
}

/* Lists every page the options ask for; *next gets a copy of the cursor
 * of the last page printed, or NULL when the selection is exhausted. */
static int run(const cli *c, bitt_store *store, bitt_list_options *o, int all, char **next)
{
    size_t printed = 0;
    cli_table t;
    cli_table_init(&t, c, columns, 4, 0);
    for (;;) {
        bitt_entries *page = NULL;
        int rc = bitt_kv_list(store, o, &page);
        if (rc < 0) {
            cli_table_done(&t);
            return cli_fail(rc);
        }
        if (put_page(c, &t, page, &printed) != CLI_OK) {
            bitt_entries_free(page);
            cli_table_done(&t);
            return CLI_ERROR;
        }
        const char *cursor = bitt_entries_cursor(page);
        free(*next);
        *next = cursor ? strdup(cursor) : NULL;
        bitt_entries_free(page);
        if (cursor && *next == NULL) {
            fputs("bitt: out of memory\n", stderr);
            cli_table_done(&t);
            return CLI_ERROR;
        }
        if (*next == NULL || !all)
            return cli_table_done(&t);
        o->cursor = *next;
    }
}

int cli_kv_list(cli *c, int argc, char **argv)
{
    const char *cmd = "kv list";
    cli_args a;
    cli_bytes prefix = {0}, start = {0}, end = {0};
    bitt_list_options o;
    bitt_store *store = NULL;
    char *next = NULL;
    int code = cli_parse(c, cmd, argc, argv, specs, OPT_COUNT, 0, 0, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(cli_kv_list_usage) : code;
    if (bitt_list_options_init(&o, BITT_LIST_OPTIONS_VERSION) != BITT_OK)
        return cli_fail(BITT_EINVAL);
    if (a.value[OPT_LIMIT] &&
        (code = cli_parse_u32(cmd, "--limit", a.value[OPT_LIMIT], &o.limit)) != CLI_OK)
        return code;
    if (a.value[OPT_CURSOR] && a.value[OPT_ALL])
        return cli_usage_error(cmd, "--cursor does not go with --all");
    if ((a.value[OPT_PREFIX] &&
         (code = cli_bytes_arg(c, cmd, "--prefix", a.value[OPT_PREFIX], &prefix)) != CLI_OK) ||
        (a.value[OPT_START] &&
         (code = cli_bytes_arg(c, cmd, "--start", a.value[OPT_START], &start)) != CLI_OK) ||
        (a.value[OPT_END] &&
         (code = cli_bytes_arg(c, cmd, "--end", a.value[OPT_END], &end)) != CLI_OK))
        goto done;
    /* A given option has a non-NULL pointer (cli_bytes_arg never gives
     * NULL), so --prefix "" is the empty prefix, not "no prefix". */
    o.prefix = prefix.ptr;
    o.prefix_len = prefix.len;
    o.start = start.ptr;
    o.start_len = start.len;
    o.end = end.ptr;
    o.end_len = end.len;
    o.reverse = a.value[OPT_REVERSE] != NULL;
    o.cursor = a.value[OPT_CURSOR];

    if ((code = cli_open(c, &store)) != CLI_OK)
        goto done;
    if (c->json)
        fputs("{\"entries\":[", stdout);
    code = run(c, store, &o, a.value[OPT_ALL] != NULL, &next);
    if (code == CLI_OK && c->json) {
        fputs("],\"cursor\":", stdout);
        if (next)
            cli_put_json_string(stdout, (const uint8_t *)next, strlen(next));
        else
            fputs("null", stdout);
        fputs("}\n", stdout);
    } else if (code == CLI_OK && next) {
        fflush(stdout);
        fprintf(stderr, "cursor: %s\n", next);
    }
done:
    free(next);
    bitt_store_close(store);
    cli_bytes_free(&prefix);
    cli_bytes_free(&start);
    cli_bytes_free(&end);
    return cli_finish(code);
}
