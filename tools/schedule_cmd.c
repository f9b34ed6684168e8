/*
 * schedule_cmd.c: `bitt schedule set|claim|list|get|del`: interval and
 * cron schedules whose occurrences are claimed once across every process.
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char schedule_usage[] =
    "Usage: bitt [--store URL] schedule <subcommand> [options]\n"
    "\n"
    "Subcommands:\n"
    "  set KEY EVERY [PAYLOAD]        create or update a schedule: EVERY is an\n"
    "                                 interval in ms or a cron expression\n"
    "  claim [--prefix P]             claim the earliest due occurrence\n"
    "  list                           every schedule, a row each\n"
    "  get KEY                        the same row for one schedule\n"
    "  del KEY                        delete a schedule\n"
    "\n"
    "Each occurrence is claimed by exactly one caller, in any process; a\n"
    "claim moves the schedule's next run past now. Times are UTC on the\n"
    "store's clock (--json, --tsv: ms since the Unix epoch), intervals such\n"
    "as 1h30m (--json, --tsv: ms). Run 'bitt schedule <subcommand> --help'.\n";

static const char set_usage[] =
    "Usage: bitt schedule set KEY EVERY [PAYLOAD] [--kind bytes|json|counter]\n"
    "                         [--first-run-at MS | --first-run-in MS]\n"
    "                         [--topic TOPIC [--max-attempts N] [--priority P]]\n"
    "                         [--hex] [--json]\n"
    "\n"
    "Creates or updates schedule KEY with PAYLOAD (default empty), due every\n"
    "EVERY: an interval in ms (>= 1), or a 5-field cron expression in UTC\n"
    "(minute hour day-of-month month day-of-week, as \"0 3 * * MON-FRI\", or\n"
    "@hourly, @daily, @weekly, @monthly, @yearly; seconds, years, L, W, # and\n"
    "? are refused). A new schedule, or one whose interval or expression\n"
    "changes, next runs at --first-run-at (default: one interval from now, or\n"
    "the expression's next minute); an unchanged one keeps the next run time,\n"
    "so a redeploy keeps the cadence.\n"
    "\n"
    "Options:\n"
    "  --topic TOPIC       each claim also enqueues PAYLOAD on TOPIC, in the\n"
    "                      same commit, one message per occurrence (dedup key\n"
    "                      KEY@OCCURRENCE_MS)\n"
    "  --max-attempts N    those messages' max attempts (default 3)\n"
    "  --priority P        their priority (default 0)\n"
    "  --first-run-at MS   the first run, ms since the Unix epoch\n"
    "  --first-run-in MS   the first run, MS from now (0: due at once)\n"
    "  --kind KIND         the payload's kind: bytes (default), json or counter\n"
    "  --hex               PAYLOAD is hex\n"
    "  --json              print the schedule as it is now, as 'schedule get\n"
    "                      --json' does\n"
    "\n"
    "Exit status: 0 done, 2 error, 64 usage.\n";

static const char claim_usage[] =
    "Usage: bitt schedule claim [--prefix P] [--hex-out] [--json | --tsv]\n"
    "\n"
    "Claims the due schedule (next run <= now) whose next run is earliest,\n"
    "among the keys that start with P (default: all), moves its next run past\n"
    "now, and prints\n"
    "\n"
    "    KEY           OCCURRENCE                NEXT_RUN_AT               PAYLOAD\n"
    "    report/daily  2026-12-03T00:00:00.000Z  2026-12-04T00:00:00.000Z  hello\n"
    "\n"
    "OCCURRENCE is the run time this claim is for.\n"
    "  --json   print {\"key\",\"interval\",\"cron\",\"topic\",\"next_run_at\",\n"
    "           \"occurrence\",\"message_id\",\"payload\",\"kind\"}, or null when none\n"
    "           is due (message_id: the message enqueued on the schedule's topic)\n"
    "  --tsv    the row TAB-separated, no header, times in ms\n"
    "\n"
    "Exit status: 0 claimed, 1 none due (\"bitt: no schedule is due\" on stderr\n"
    "unless --quiet), 2 error, 64 usage.\n";

static const char list_usage[] =
    "Usage: bitt schedule list [--hex-out] [--json | --tsv]\n"
    "\n"
    "Prints every schedule in key order, a row each:\n"
    "\n"
    "    KEY           EVERY      TOPIC  NEXT_RUN_AT               PAYLOAD\n"
    "    report/daily  1d         -      2026-12-04T00:00:00.000Z  hello\n"
    "    sweep         0 3 * * *  maint  2026-12-04T03:00:00.000Z  {}\n"
    "\n"
    "  --json   print {\"schedules\":[{\"key\",\"interval\",\"cron\",\"topic\",\n"
    "           \"next_run_at\",\"payload\",\"kind\"}]} (interval in ms, 0 with a\n"
    "           cron expression; cron and topic null when none)\n"
    "  --tsv    TAB-separated, no header, INTERVAL and NEXT_RUN_AT in ms\n"
    "\n"
    "Exit status: 0 listed (even nothing), 2 error, 64 usage.\n";

static const char get_usage[] =
    "Usage: bitt schedule get KEY [--hex-out] [--json | --tsv]\n"
    "\n"
    "Prints schedule KEY as 'schedule list' does (--json: one object, or null\n"
    "when there is none).\n"
    "\n"
    "Exit status: 0 found, 1 absent (\"bitt: schedule not found: KEY\" on stderr\n"
    "unless --quiet), 2 error, 64 usage.\n";

static const char del_usage[] =
    "Usage: bitt schedule del KEY [--json]\n"
    "\n"
    "Deletes schedule KEY. --json: print {\"deleted\":true|false}.\n"
    "\n"
    "Exit status: 0 deleted, 1 it was absent (the reason on stderr unless\n"
    "--quiet), 2 error, 64 usage.\n";

static void put_json_schedule(const cli *c, const bitt_schedule *s, int claimed)
{
    size_t n = 0;
    const uint8_t *p = bitt_schedule_payload(s, &n);
    putchar('{');
    cli_put_json_text("key", bitt_schedule_key(s));
    printf(",\"interval\":%" PRId64 ",", bitt_schedule_interval(s));
    cli_put_json_text("cron", bitt_schedule_cron(s));
    putchar(',');
    cli_put_json_text("topic", bitt_schedule_topic(s));
    printf(",\"next_run_at\":%" PRId64, bitt_schedule_next_run_at(s));
    if (claimed)
        printf(",\"occurrence\":%" PRId64 ",\"message_id\":%" PRIu64, bitt_schedule_occurrence(s),
               bitt_schedule_message_id(s));
    putchar(',');
    cli_put_json_value(c, "payload", p, n, bitt_schedule_kind(s));
    cli_put_json_kind(bitt_schedule_kind(s));
    putchar('}');
}

static const char *const list_columns[] = {"KEY", "EVERY", "TOPIC", "NEXT_RUN_AT", "PAYLOAD"};
static const char *const claim_columns[] = {"KEY", "OCCURRENCE", "TOPIC", "NEXT_RUN_AT", "PAYLOAD"};

static void put_row(cli_table *t, const bitt_schedule *s, int claimed)
{
    size_t n = 0;
    const uint8_t *p = bitt_schedule_payload(s, &n);
    cli_cell_text(t, bitt_schedule_key(s));
    if (claimed)
        cli_cell_time(t, bitt_schedule_occurrence(s), "-");
    else if (bitt_schedule_cron(s))
        cli_cell_text(t, bitt_schedule_cron(s));
    else
        cli_cell_duration(t, bitt_schedule_interval(s), "-");
    cli_cell_text(t, bitt_schedule_topic(s) ? bitt_schedule_topic(s) : "-");
    cli_cell_time(t, bitt_schedule_next_run_at(s), "-");
    cli_cell_bytes(t, p, n);
}

/* One schedule: a JSON object on its line, or a row under its header. */
static int put_schedule(const cli *c, const bitt_schedule *s, int claimed)
{
    if (c->json) {
        put_json_schedule(c, s, claimed);
        putchar('\n');
        return CLI_OK;
    }
    cli_table t;
    cli_table_init(&t, c, claimed ? claim_columns : list_columns, 5, 0);
    put_row(&t, s, claimed);
    return cli_table_done(&t);
}

/* set --json: the schedule as the write left it (read after, so a claim in
 * between shows). */
static int put_set(const cli *c, bitt_store *store, const char *key)
{
    bitt_schedule *s = NULL;
    int rc = bitt_schedule_get(store, key, &s);
    int code = CLI_OK;
    if (rc < 0)
        code = cli_fail(rc);
    else if (rc == BITT_NOTFOUND)
        cli_put_json_null(c);
    else
        code = put_schedule(c, s, 0);
    bitt_schedule_free(s);
    return code;
}

static int s_set(cli *c, int argc, char **argv)
{
    const char *cmd = "schedule set";
    enum { O_KIND, O_AT, O_IN, O_TOPIC, O_MAX, O_PRIO, O_N };
    static const cli_optspec specs[O_N] = {{"kind", 1},  {"first-run-at", 1}, {"first-run-in", 1},
                                           {"topic", 1}, {"max-attempts", 1}, {"priority", 1}};
    cli_args a;
    cli_bytes payload = {0};
    bitt_store *store = NULL;
    bitt_schedule_options o = BITT_SCHEDULE_OPTIONS_INIT;
    int kind = BITT_KIND_BYTES;
    int64_t interval = 0, in = 0;
    int code = cli_parse(c, cmd, argc, argv, specs, O_N, 2, 3, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(set_usage) : code;
    if (a.value[O_AT] && a.value[O_IN])
        return cli_usage_error(cmd, "--first-run-at does not go with --first-run-in");
    if (!a.value[O_TOPIC] && (a.value[O_MAX] || a.value[O_PRIO]))
        return cli_usage_error(cmd, "--max-attempts and --priority go with --topic");
    /* EVERY: digits are an interval, anything else a cron expression (the
     * core says what is wrong with it) */
    int is_interval = a.pos[1][0] && strspn(a.pos[1], "0123456789") == strlen(a.pos[1]);
    o.cron = is_interval ? NULL : a.pos[1];
    o.topic = a.value[O_TOPIC];
    if ((is_interval && (code = cli_parse_ms(cmd, "EVERY", a.pos[1], &interval)) != CLI_OK) ||
        (a.value[O_MAX] && (code = cli_parse_u32(cmd, "--max-attempts", a.value[O_MAX],
                                                 &o.max_attempts)) != CLI_OK) ||
        (a.value[O_PRIO] &&
         (code = cli_parse_i32(cmd, "--priority", a.value[O_PRIO], &o.priority)) != CLI_OK) ||
        (a.value[O_KIND] && (code = cli_parse_kind(cmd, a.value[O_KIND], &kind)) != CLI_OK) ||
        (a.value[O_AT] &&
         (code = cli_parse_ms(cmd, "--first-run-at", a.value[O_AT], &o.first_run_at)) != CLI_OK) ||
        (a.value[O_IN] &&
         (code = cli_parse_ms(cmd, "--first-run-in", a.value[O_IN], &in)) != CLI_OK) ||
        (a.npos > 2 && (code = cli_bytes_arg(c, cmd, "PAYLOAD", a.pos[2], &payload)) != CLI_OK))
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = BITT_OK;
        if (a.value[O_IN]) {
            rc = bitt_clock_now(store, &o.first_run_at);
            o.first_run_at += in;
        }
        if (rc >= 0)
            rc = bitt_schedule_set(store, a.pos[0], interval, payload.ptr, payload.len, kind, &o);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            code = put_set(c, store, a.pos[0]);
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
            cli_put_json_null(c);
            code = a.value[0] && a.value[0][0]
                       ? cli_absent(c, "no schedule under prefix %s is due", a.value[0])
                       : cli_absent(c, "no schedule is due");
        } else {
            code = put_schedule(c, s, 1);
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
        } else if (c->json) {
            fputs("{\"schedules\":[", stdout);
            for (size_t i = 0; i < count; i++) {
                if (i > 0)
                    putchar(',');
                put_json_schedule(c, list[i], 0);
            }
            fputs("]}\n", stdout);
        } else {
            cli_table t;
            cli_table_init(&t, c, list_columns, 5, 0);
            for (size_t i = 0; i < count; i++)
                put_row(&t, list[i], 0);
            code = cli_table_done(&t);
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
        } else if (del) {
            if (c->json)
                printf("{\"deleted\":%s}\n", rc == BITT_OK ? "true" : "false");
            if (rc == BITT_NOTFOUND)
                code = cli_absent(c, "schedule not found: %s", a.pos[0]);
        } else if (rc == BITT_NOTFOUND) {
            cli_put_json_null(c);
            code = cli_absent(c, "schedule not found: %s", a.pos[0]);
        } else {
            code = put_schedule(c, s, 0);
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
