/*
 * budget_cmd.c: `bitt budget take`: a token bucket shared by every process
 * of the store.
 */
#include <inttypes.h>

#include "cli.h"

static const char budget_usage[] =
    "Usage: bitt [--store URL] budget take NAME [N] --capacity C --refill R\n"
    "                                  --period MS [--json]\n"
    "\n"
    "Subcommands:\n"
    "  take NAME [N]   take N tokens (default 1) from budget NAME\n"
    "\n"
    "A budget is a token bucket: it holds up to C tokens, gains R tokens every\n"
    "MS milliseconds (continuously, in integer arithmetic, the same on every\n"
    "backend), and starts full. Every caller of NAME must pass the same C, R\n"
    "and MS. Run 'bitt budget take --help' for more.\n";

static const char take_usage[] =
    "Usage: bitt budget take NAME [N] --capacity C --refill R --period MS\n"
    "                        [--json | --tsv]\n"
    "\n"
    "Takes N tokens (default 1, at most C) from budget NAME and prints\n"
    "\n"
    "    RESULT  WAIT\n"
    "    taken   -\n"
    "\n"
    "or, when fewer than N tokens are there now (nothing is taken), RESULT\n"
    "denied and WAIT how long until N tokens will be there (such as 1.5s).\n"
    "\n"
    "Options:\n"
    "  --capacity C   the most tokens the bucket holds (1 to 2^31-1)\n"
    "  --refill R     tokens gained every period (1 to 2^31-1)\n"
    "  --period MS    the period, ms (1 to 2^31-1)\n"
    "  --json         print {\"taken\":true|false,\"wait_ms\":WAIT}\n"
    "  --tsv          the row TAB-separated, no header, WAIT in ms (0: none)\n"
    "\n"
    "Exit status: 0 taken, 1 denied (the reason on stderr unless --quiet),\n"
    "2 error, 64 usage.\n";

static int put_result(const cli *c, int taken, int64_t wait)
{
    static const char *const columns[] = {"RESULT", "WAIT"};
    cli_table t;
    cli_table_init(&t, c, columns, 2, 0);
    cli_cell_text(&t, taken ? "taken" : "denied");
    cli_cell_duration(&t, wait, "-");
    return cli_table_done(&t);
}

static int b_take(cli *c, int argc, char **argv)
{
    const char *cmd = "budget take";
    static const cli_optspec specs[] = {{"capacity", 1}, {"refill", 1}, {"period", 1}};
    static const char *const names[] = {"--capacity", "--refill", "--period"};
    cli_args a;
    bitt_store *store = NULL;
    int64_t v[3], n = 1;
    int code = cli_parse(c, cmd, argc, argv, specs, 3, 1, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(take_usage) : code;
    for (int i = 0; i < 3; i++) {
        if (a.value[i] == NULL)
            return cli_usage_error(cmd, "%s is required", names[i]);
        if ((code = cli_parse_i64(cmd, names[i], a.value[i], &v[i])) != CLI_OK)
            return code;
    }
    if (a.npos > 1 && (code = cli_parse_i64(cmd, "N", a.pos[1], &n)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int64_t wait = 0;
        int rc = bitt_budget_take(store, a.pos[0], v[0], v[1], v[2], n, &wait);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            if (rc != BITT_DENIED)
                wait = 0;
            if (c->json)
                printf("{\"taken\":%s,\"wait_ms\":%" PRId64 "}\n", rc == BITT_OK ? "true" : "false",
                       wait);
            else
                code = put_result(c, rc == BITT_OK, wait);
            if (rc == BITT_DENIED && code == CLI_OK) {
                char in[CLI_TIME_LEN];
                cli_format_duration(wait, in);
                code = cli_absent(c, "budget %s denied %" PRId64 " token(s): enough in %s",
                                  a.pos[0], n, in);
            }
        }
    }
    bitt_store_close(store);
    return cli_finish(code);
}

int cli_budget(cli *c, int argc, char **argv)
{
    static const cli_sub subs[] = {{"take", b_take}};
    return cli_group(c, "budget", budget_usage, "take", subs, 1, argc, argv);
}
