/*
 * main.c: `bitt [options] <command>`: the shared options, the store URL, and
 * the commands that are not a group (migrate, version, help).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: bitt [--store URL] [options] <command> [arguments]\n"
    "\n"
    "Commands:\n"
    "  kv get KEY               print the value of KEY (exit 1 when absent)\n"
    "  kv set KEY VALUE         write VALUE under KEY [--ttl MS] [--kind K]\n"
    "  kv del KEY               delete KEY (exit 1 when absent)\n"
    "  kv list                  list entries [--prefix P] [--start S] [--end E]\n"
    "                           [--limit N] [--reverse] [--cursor C] [--all]\n"
    "  kv incr KEY [DELTA]      add to a counter and print it [--ttl MS]\n"
    "  queue push|pop|ack|nack|extend|snooze|stats|get|cancel|reschedule|dead|retry|\n"
    "        purge-dead TOPIC ...\n"
    "                           a work queue with leases and dead letters\n"
    "  lease acquire|renew|release|get NAME ...\n"
    "                           named locks with fencing epochs\n"
    "  outbox append|pending|ack|fail|park|parked|retry|discard|counts STREAM ...\n"
    "                           a dispatcher's view of an outbox stream\n"
    "  schedule set|claim|list|get|del ...\n"
    "                           interval schedules, each run claimed once\n"
    "  budget take NAME [N] --capacity C --refill R --period MS\n"
    "                           take tokens from a shared token bucket\n"
    "  pubsub publish|listen CHANNEL ...\n"
    "                           publish/subscribe\n"
    "  migrate                  create or upgrade the store's schema\n"
    "  version                  print the library and header versions\n"
    "  help [COMMAND...]        print the usage of a command\n"
    "Run 'bitt GROUP --help' (kv, queue, ...) for the subcommands of a group.\n"
    "\n"
    "Output, for people: a table has a header naming its columns, aligned\n"
    "columns, times in UTC (2026-12-03T12:00:05.123Z; \"never\" for no expiry,\n"
    "\"-\" for none) and durations such as 1m30s. Bytes that are printable UTF-8\n"
    "print as they are; other bytes as \\xNN (a backslash as \\\\), so that a\n"
    "row is one line. For scripts: --json (one JSON document), or --tsv (the\n"
    "same table TAB-separated, no header, times in ms). A command that prints\n"
    "one value (kv get, queue push, ...) prints it alone.\n"
    "\n"
    "Exit status: 0 success, 1 absent or not granted (a key absent, nothing\n"
    "to pop, a lease held, a budget denied, ...: each command's --help says;\n"
    "the reason on stderr, unless --quiet), 2 error (the message on stderr),\n"
    "64 usage error, 128 + the signal when SIGINT or SIGTERM ended a wait\n"
    "(queue pop --wait, pubsub listen: nothing is taken; a second one exits\n"
    "at once).\n";

static const char migrate_usage[] =
    "Usage: bitt [--store URL] migrate [--json]\n"
    "\n"
    "Creates or upgrades the schema of the store. It is idempotent and safe\n"
    "to run from several processes at once; a store of a newer schema than\n"
    "this library is refused. Prints nothing on success (--json:\n"
    "{\"migrated\":true}).\n"
    "\n"
    "Exit status: 0 done, 2 error, 64 usage.\n";

static const char version_usage[] =
    "Usage: bitt version [--json]\n"
    "\n"
    "Prints the version of the loaded library and of the header the tool was\n"
    "built with, one per line (\"library X.Y.Z\", \"header X.Y.Z\"), or as JSON\n"
    "(\"library\", \"library_number\", \"header\", \"header_number\").\n";

static int cmd_migrate(cli *c, int argc, char **argv)
{
    cli_args a;
    bitt_store *store = NULL;
    int code = cli_parse(c, "migrate", argc, argv, NULL, 0, 0, 0, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(migrate_usage) : code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = bitt_store_migrate(store);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            fputs("{\"migrated\":true}\n", stdout);
    }
    bitt_store_close(store);
    return cli_finish(code);
}

static int cmd_version(cli *c, int argc, char **argv)
{
    cli_args a;
    int code = cli_parse(c, "version", argc, argv, NULL, 0, 0, 0, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(version_usage) : code;
    if (c->json)
        printf("{\"library\":\"%s\",\"library_number\":%d,"
               "\"header\":\"%s\",\"header_number\":%d}\n",
               bitt_version(), bitt_version_number(), BITT_VERSION_STRING, BITT_VERSION_NUMBER);
    else
        printf("library %s\nheader %s\n", bitt_version(), BITT_VERSION_STRING);
    return cli_finish(CLI_OK);
}

static int run_command(cli *c, int argc, char **argv);

/* `bitt help kv set` is `bitt kv set --help`. */
static int cmd_help(cli *c, int argc, char **argv)
{
    static char help_word[] = "--help";
    char *words[8];
    int n = 0;
    for (int i = 0; i < argc && n < 6; i++)
        if (argv[i][0] != '-')
            words[n++] = argv[i];
    if (n == 0)
        return cli_help(usage);
    words[n++] = help_word;
    words[n] = NULL;
    return run_command(c, n, words);
}

static int run_command(cli *c, int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(cli *, int, char **);
    } commands[] = {
        {"kv", cli_kv},         {"queue", cli_queue},       {"lease", cli_lease},
        {"outbox", cli_outbox}, {"schedule", cli_schedule}, {"budget", cli_budget},
        {"pubsub", cli_pubsub}, {"migrate", cmd_migrate},   {"version", cmd_version},
        {"help", cmd_help},
    };
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[0], commands[i].name) == 0)
            return commands[i].run(c, argc - 1, argv + 1);
    return cli_usage_error("", "unknown command '%s'", argv[0]);
}

int main(int argc, char **argv)
{
    cli c;
    memset(&c, 0, sizeof(c));
    const char *env = getenv("BITT_STORE");
    c.store_url = env && env[0] ? env : CLI_DEFAULT_STORE;

    /* The shared options before the command; parse them one at a time so
     * that the first word that is not an option is the command. */
    int i = 1;
    while (i < argc && argv[i][0] == '-' && argv[i][1] != '\0') {
        const char *w = argv[i];
        if (strcmp(w, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0)
            return cli_help(usage);
        if (strcmp(w, "--version") == 0)
            return cmd_version(&c, 0, NULL);
        int take = strcmp(w, "--store") == 0 && i + 1 < argc ? 2 : 1;
        cli_args a;
        int code = cli_parse(&c, "", take, argv + i, NULL, 0, 0, 0, &a);
        if (code != CLI_OK)
            return code;
        i += take;
    }
    if (i >= argc)
        return cli_usage_error("", "missing command");
    return run_command(&c, argc - i, argv + i);
}
