/*
 * schedule_cmd.c: `bitt schedule set|claim|list|get|del`: interval
 * schedules whose occurrences are claimed once across every process.
 */
#include <inttypes.h>

#include "cli.h"

static const char schedule_usage[] =
    "Usage: bitt [--store URL] schedule <subcommand> [options]\n"
    "\n"
    "Subcommands:\n"
    "  set KEY INTERVAL_MS [PAYLOAD]  create or update a schedule\n"
    "  claim [--prefix P]             claim the earliest due occurrence; print\n"
    "                                 key<TAB>occurrence<TAB>payload\n"
    "  list                           key<TAB>interval<TAB>next_run_at<TAB>payload\n"
    "  get KEY                        the same line for one schedule\n"
    "  del KEY                        delete a schedule\n"
    "\n"
    "Each occurrence is claimed by exactly one caller, in any process; a\n"
    "claim moves the schedule's next run past now. Times are ms since the\n"
    "Unix epoch on the store's clock. Run 'bitt schedule <subcommand> --help'.\n";

static const char set_usage[] =
    "Usage: bitt schedule set KEY INTERVAL_MS [PAYLOAD] [--kind bytes|json|counter]\n"
    "                         [--first-run-at MS | --first-run-in MS] [--hex]\n"
    "\n"
    "Creates or updates schedule KEY, due every INTERVAL_MS (>= 1) with\n"
    "PAYLOAD (default empty). A new schedule, or one whose interval changes,\n"
    "next runs at --first-run-at (default: one interval from now); an\n"
    "unchanged interval keeps the next run time, so a redeploy keeps the cadence.\n"
    "\n"
    "Options:\n"
    "  --first-run-at MS   the first run, ms since the Unix epoch\n"
    "  --first-run-in MS   the first run, MS from now (0: due at once)\n"
    "  --kind KIND         the payload's kind: bytes (default), json or counter\n"
    "  --hex               PAYLOAD is hex\n"
    "\n"
    "Exit status: 0 done, 2 error, 64 usage.\n";

static const char claim_usage[] =
    "Usage: bitt schedule claim [--prefix P] [--hex-out | --json]\n"
    "\n"
    "Claims the due schedule (next run <= now) whose next run is earliest,\n"
    "among the keys that start with P (default: all), moves its next run past\n"
    "now, and prints\n"
    "\n"
    "    key<TAB>occurrence<TAB>payload\n"
    "\n"
    "occurrence is the run time this claim is for.\n"
    "  --json   print {\"key\",\"interval\",\"next_run_at\",\"occurrence\",\"payload\",\"kind\"}\n"
    "\n"
    "Exit status: 0 claimed, 1 none due, 2 error, 64 usage.\n";

static const char list_usage[] =
    "Usage: bitt schedule list [--hex-out | --json]\n"
    "\n"
    "Prints every schedule in key order, one line each:\n"
    "\n"
    "    key<TAB>interval<TAB>next_run_at<TAB>payload\n"
    "\n"
    "  --json   print "
    "{\"schedules\":[{\"key\",\"interval\",\"next_run_at\",\"payload\",\"kind\"}]}\n"
    "\n"
    "Exit status: 0 listed (even nothing), 2 error, 64 usage.\n";

static const char get_usage[] = "Usage: bitt schedule get KEY [--hex-out | --json]\n"
                                "\n"
                                "Prints schedule KEY as 'schedule list' does.\n"
                                "\n"
                                "Exit status: 0 found, 1 absent, 2 error, 64 usage.\n";

static const char del_usage[] = "Usage: bitt schedule del KEY\n"
                                "\n"
                                "Deletes schedule KEY.\n"
                                "\n"
                                "Exit status: 0 deleted, 1 it was absent, 2 error, 64 usage.\n";

static void put_schedule(const cli *c, const bitt_schedule *s, int claimed)
{
    size_t n = 0;
    const uint8_t *p = bitt_schedule_payload(s, &n);
    if (c->json) {
        putchar('{');
        cli_put_json_text("key", bitt_schedule_key(s));
        printf(",\"interval\":%" PRId64 ",\"next_run_at\":%" PRId64, bitt_schedule_interval(s),
               bitt_schedule_next_run_at(s));
        if (claimed)
            printf(",\"occurrence\":%" PRId64, bitt_schedule_occurrence(s));
        putchar(',');
        cli_put_json_value(c, "payload", p, n, bitt_schedule_kind(s));
        const char *kind = cli_kind_name(bitt_schedule_kind(s));
        if (kind)
            printf(",\"kind\":\"%s\"}", kind);
        else
            printf(",\"kind\":%d}", bitt_schedule_kind(s));
        return;
    }
    cli_put_text(bitt_schedule_key(s));
    if (claimed)
        printf("\t%" PRId64 "\t", bitt_schedule_occurrence(s));
    else
        printf("\t%" PRId64 "\t%" PRId64 "\t", bitt_schedule_interval(s),
               bitt_schedule_next_run_at(s));
    cli_put_field(c, p, n);
    putchar('\n');
}

static int s_set(cli *c, int argc, char **argv)
{
    const char *cmd = "schedule set";
    enum { O_KIND, O_AT, O_IN, O_N };
    static const cli_optspec specs[O_N] = {{"kind", 1}, {"first-run-at", 1}, {"first-run-in", 1}};
    cli_args a;
    cli_bytes payload = {0};
    bitt_store *store = NULL;
    int kind = BITT_KIND_BYTES;
    int64_t interval = 0, first = 0, in = 0;
    int code = cli_parse(c, cmd, argc, argv, specs, O_N, 2, 3, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(set_usage) : code;
    if (a.value[O_AT] && a.value[O_IN])
        return cli_usage_error(cmd, "--first-run-at does not go with --first-run-in");
    if ((code = cli_parse_ms(cmd, "INTERVAL_MS", a.pos[1], &interval)) != CLI_OK ||
        (a.value[O_KIND] && (code = cli_parse_kind(cmd, a.value[O_KIND], &kind)) != CLI_OK) ||
        (a.value[O_AT] &&
         (code = cli_parse_ms(cmd, "--first-run-at", a.value[O_AT], &first)) != CLI_OK) ||
        (a.value[O_IN] &&
         (code = cli_parse_ms(cmd, "--first-run-in", a.value[O_IN], &in)) != CLI_OK) ||
        (a.npos > 2 && (code = cli_bytes_arg(c, cmd, "PAYLOAD", a.pos[2], &payload)) != CLI_OK))
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = BITT_OK;
        if (a.value[O_IN]) {
            rc = bitt_clock_now(store, &first);
            first += in;
        }
        if (rc >= 0)
            rc = bitt_schedule_upsert(store, a.pos[0], interval, payload.ptr, payload.len, kind,
                                      first);
        if (rc < 0)
            code = cli_fail(rc);
    }
    bitt_store_close(store);
    cli_bytes_free(&payload);
    return cli_finish(code);
}

static int s_claim(cli *c, int argc, char **argv)
{
    static const cli_optspec specs[] = {{"prefix", 1}};
    cli_args a;
    bitt_store *store = NULL;
    bitt_schedule *s = NULL;
    int code = cli_parse(c, "schedule claim", argc, argv, specs, 1, 0, 0, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(claim_usage) : code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = bitt_schedule_claim(store, a.value[0], &s);
        if (rc < 0) {
            code = cli_fail(rc);
        } else if (rc == BITT_NOTFOUND) {
            code = CLI_NOTFOUND;
        } else {
            put_schedule(c, s, 1);
            if (c->json)
                putchar('\n');
        }
    }
    bitt_schedule_free(s);
    bitt_store_close(store);
    return cli_finish(code);
}

static int s_list(cli *c, int argc, char **argv)
{
    cli_args a;
    bitt_store *store = NULL;
    bitt_schedule **list = NULL;
    size_t count = 0;
    int code = cli_parse(c, "schedule list", argc, argv, NULL, 0, 0, 0, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(list_usage) : code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = bitt_schedule_list(store, &list, &count);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            if (c->json)
                fputs("{\"schedules\":[", stdout);
            for (size_t i = 0; i < count; i++) {
                if (c->json && i > 0)
                    putchar(',');
                put_schedule(c, list[i], 0);
            }
            if (c->json)
                fputs("]}\n", stdout);
        }
    }
    bitt_schedule_list_free(list, count);
    bitt_store_close(store);
    return cli_finish(code);
}

/* get and del: KEY. */
static int one(cli *c, int argc, char **argv, int del)
{
    cli_args a;
    bitt_store *store = NULL;
    bitt_schedule *s = NULL;
    int code = cli_parse(c, del ? "schedule del" : "schedule get", argc, argv, NULL, 0, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(del ? del_usage : get_usage) : code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc =
            del ? bitt_schedule_delete(store, a.pos[0]) : bitt_schedule_get(store, a.pos[0], &s);
        if (rc < 0) {
            code = cli_fail(rc);
        } else if (rc == BITT_NOTFOUND) {
            code = CLI_NOTFOUND;
        } else if (!del) {
            put_schedule(c, s, 0);
            if (c->json)
                putchar('\n');
        }
    }
    bitt_schedule_free(s);
    bitt_store_close(store);
    return cli_finish(code);
}

static int s_get(cli *c, int argc, char **argv)
{
    return one(c, argc, argv, 0);
}

static int s_del(cli *c, int argc, char **argv)
{
    return one(c, argc, argv, 1);
}

int cli_schedule(cli *c, int argc, char **argv)
{
    static const cli_sub subs[] = {{"set", s_set}, {"claim", s_claim}, {"list", s_list},
                                   {"get", s_get}, {"del", s_del},     {"delete", s_del}};
    return cli_group(c, "schedule", schedule_usage, "set, claim, list, get or del", subs,
                     sizeof(subs) / sizeof(subs[0]), argc, argv);
}
