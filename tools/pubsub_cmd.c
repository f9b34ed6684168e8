/*
 * pubsub_cmd.c: `bitt pubsub publish|listen`: messages to every open
 * subscription of a channel.
 */
#include <inttypes.h>

#include "cli.h"

/* How long one wait for the next message lasts when there is no deadline. */
#define LISTEN_SLICE_MS 1000

static const char pubsub_usage[] =
    "Usage: bitt [--store URL] pubsub <subcommand> [options]\n"
    "\n"
    "Subcommands:\n"
    "  publish CHANNEL DATA    send DATA to every open subscription of CHANNEL\n"
    "  listen CHANNEL          subscribe and print each message, a row each\n"
    "\n"
    "A message reaches every subscription open when it was published, at most\n"
    "once, in the order one process published; with nobody listening it is\n"
    "lost. On a SQLite file, every process sharing the file hears it within\n"
    "about 50 ms; memory: stores are private to one process.\n"
    "Run 'bitt pubsub <subcommand> --help' for more.\n";

static const char publish_usage[] =
    "Usage: bitt pubsub publish CHANNEL DATA [--hex] [--json]\n"
    "\n"
    "Publishes DATA on CHANNEL. Put -- before DATA that starts with '-'.\n"
    "  --hex    DATA is hex (\"00ff\")\n"
    "  --json   print {\"published\":true}\n"
    "\n"
    "Exit status: 0 published, 2 error, 64 usage.\n";

static const char listen_usage[] =
    "Usage: bitt pubsub listen CHANNEL [--count N] [--timeout MS] [--hex-out]\n"
    "                          [--json | --tsv]\n"
    "\n"
    "Subscribes to CHANNEL and prints each message published from then on as\n"
    "it comes, a row each, until N messages came or MS passed; without\n"
    "either, until it is stopped (Ctrl-C or SIGTERM: exit 130 or 143):\n"
    "\n"
    "    CREATED_AT                DATA\n"
    "    2026-12-03T12:00:05.123Z  deploy finished\n"
    "\n"
    "CREATED_AT is when it was published; DATA prints as a value in 'bitt kv\n"
    "list'.\n"
    "\n"
    "Options:\n"
    "  --count N      stop after N messages\n"
    "  --timeout MS   stop MS milliseconds after subscribing\n"
    "  --hex-out      print the data as hex\n"
    "  --json         one object per line: {\"id\",\"topic\" (the channel),\n"
    "                 \"data\",\"kind\",\"created_at\",...} (JSON Lines)\n"
    "  --tsv          TAB-separated, no header, CREATED_AT in ms\n"
    "\n"
    "Exit status: 0 N messages came (or, without --count, the time ran out),\n"
    "1 the time ran out before N messages (the reason on stderr unless\n"
    "--quiet), 2 error, 64 usage.\n";

static int p_publish(cli *c, int argc, char **argv)
{
    const char *cmd = "pubsub publish";
    cli_args a;
    cli_bytes data = {0};
    bitt_store *store = NULL;
    int code = cli_parse(c, cmd, argc, argv, NULL, 0, 2, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(publish_usage) : code;
    if ((code = cli_bytes_arg(c, cmd, "DATA", a.pos[1], &data)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = bitt_pubsub_publish(store, a.pos[0], data.ptr, data.len);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            fputs("{\"published\":true}\n", stdout);
    }
    bitt_store_close(store);
    cli_bytes_free(&data);
    return cli_finish(code);
}

/* A row as each message comes (the table streams), or its JSON line. */
static void put_message(const cli *c, cli_table *t, const bitt_message *m)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    if (c->json) {
        cli_put_json_message(c, m, "data");
        putchar('\n');
        return;
    }
    cli_cell_time(t, bitt_message_created_at(m), "-");
    cli_cell_bytes(t, p, n);
}

static int listen_loop(const cli *c, bitt_store *store, const char *channel, uint64_t count,
                       int64_t timeout, int has_timeout)
{
    static const char *const columns[] = {"CREATED_AT", "DATA"};
    cli_table t;
    cli_table_init(&t, c, columns, 2, 1);
    bitt_sub *sub = NULL;
    int64_t start = 0, now = 0;
    uint64_t got = 0;
    bitt_cancel *stop = cli_interrupt_token();
    int rc = bitt_pubsub_subscribe(store, channel, &sub);
    if (rc >= 0)
        rc = bitt_clock_now(store, &start);
    while (rc >= 0 && (count == 0 || got < count)) {
        int64_t wait = LISTEN_SLICE_MS;
        if (has_timeout) {
            if ((rc = bitt_clock_now(store, &now)) < 0)
                break;
            if (now - start >= timeout)
                break;
            wait = timeout - (now - start);
        }
        bitt_message *m = NULL;
        rc = bitt_pubsub_next_cancel(sub, wait, stop, &m);
        if (rc == BITT_OK) {
            put_message(c, &t, m);
            bitt_message_free(m);
            got++;
            if (fflush(stdout) != 0)
                break;
        }
    }
    /* A signal is how a listener without --count is stopped: not an
     * error, nothing to say; the exit status tells which signal. */
    int code = rc == BITT_ECANCELED ? cli_interrupted() : rc < 0 ? cli_fail(rc) : CLI_OK;
    bitt_pubsub_close(sub);
    if (cli_table_done(&t) != CLI_OK && code == CLI_OK)
        code = CLI_ERROR;
    if (code == CLI_OK && count > 0 && got < count) {
        char in[CLI_TIME_LEN];
        cli_format_duration(timeout, in);
        code = cli_absent(c, "%" PRIu64 " of %" PRIu64 " messages came on channel %s in %s", got,
                          count, channel, in);
    }
    return code;
}

static int p_listen(cli *c, int argc, char **argv)
{
    const char *cmd = "pubsub listen";
    static const cli_optspec specs[] = {{"count", 1}, {"timeout", 1}};
    cli_args a;
    bitt_store *store = NULL;
    uint64_t count = 0;
    int64_t timeout = 0;
    int code = cli_parse(c, cmd, argc, argv, specs, 2, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(listen_usage) : code;
    if ((a.value[0] && (code = cli_parse_id(cmd, "--count", a.value[0], &count)) != CLI_OK) ||
        (a.value[1] && (code = cli_parse_ms(cmd, "--timeout", a.value[1], &timeout)) != CLI_OK))
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK)
        code = listen_loop(c, store, a.pos[0], count, timeout, a.value[1] != NULL);
    bitt_store_close(store);
    return cli_finish(code);
}

int cli_pubsub(cli *c, int argc, char **argv)
{
    static const cli_sub subs[] = {{"publish", p_publish}, {"listen", p_listen}};
    return cli_group(c, "pubsub", pubsub_usage, "publish or listen", subs, 2, argc, argv);
}
