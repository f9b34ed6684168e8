/*
 * queue_by_id.c: `bitt queue get|cancel|reschedule TOPIC ID`: one message
 * addressed by its id, for an operator who knows which job is stuck.
 */
#include <inttypes.h>

#include "cli.h"

static const char get_usage[] =
    "Usage: bitt queue get TOPIC ID [--hex-out] [--json | --tsv]\n"
    "\n"
    "Prints message ID of TOPIC as one row:\n"
    "\n"
    "    ID  STATE    PRIORITY  ATTEMPTS  DUE_AT                    LAST_ERROR  PAYLOAD\n"
    "    7   delayed  0         1         2026-12-03T12:00:35.123Z  timeout     resize 42.png\n"
    "\n"
    "STATE is pending (claimable now), delayed (claimable from DUE_AT), leased\n"
    "(under a lease until DUE_AT), dead, or done (acked, and kept because the\n"
    "store has queue_done_retention; --json shows its done_at and result). The\n"
    "token of a lease is never shown: only its consumer finishes a delivery.\n"
    "\n"
    "  --json   print {\"id\",\"topic\",\"payload\",\"kind\",\"state\",\"priority\",\n"
    "           \"attempts\",\"max_attempts\",\"last_error\",\"created_at\",\"due_at\",\n"
    "           \"failed_at\"}, and for a done message \"done_at\", \"result\" and\n"
    "           \"result_kind\" (null for none)\n"
    "  --tsv    the row TAB-separated, no header, DUE_AT in ms\n"
    "\n"
    "Exit status: 0 found, 1 no such message on TOPIC (acked, cancelled or never\n"
    "there), 2 error, 64 usage.\n";

static const char cancel_usage[] =
    "Usage: bitt queue cancel TOPIC ID [--json]\n"
    "\n"
    "Cancels message ID of TOPIC if it is pending, delayed or leased: it is\n"
    "deleted, its dedup key is free, and a consumer that holds it is refused\n"
    "at its next ack, nack, extend or snooze. Dead letters: 'queue purge-dead'.\n"
    "--json: print {\"cancelled\":true|false}.\n"
    "\n"
    "Exit status: 0 cancelled, 1 no such live message, 2 error, 64 usage.\n";

static const char reschedule_usage[] =
    "Usage: bitt queue reschedule TOPIC ID [--delay MS] [--json]\n"
    "\n"
    "Message ID of TOPIC, pending or delayed, becomes claimable MS milliseconds\n"
    "from now (default 0: at once, waking a waiting pop). Its attempts and last\n"
    "error stay. A leased message is its consumer's and is left alone.\n"
    "--json: print {\"rescheduled\":true|false}.\n"
    "\n"
    "Exit status: 0 rescheduled, 1 no pending or delayed message ID, 2 error,\n"
    "64 usage.\n";

const char *cli_message_state_name(int state)
{
    switch (state) {
    case BITT_MSG_PENDING: return "pending";
    case BITT_MSG_DELAYED: return "delayed";
    case BITT_MSG_LEASED: return "leased";
    case BITT_MSG_DEAD: return "dead";
    case BITT_MSG_DONE: return "done";
    default: return "-";
    }
}

static const char *const get_columns[] = {"ID",     "STATE",      "PRIORITY", "ATTEMPTS",
                                          "DUE_AT", "LAST_ERROR", "PAYLOAD"};

static void put_row(cli_table *t, const bitt_message *m)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    cli_cell_u64(t, bitt_message_id(m));
    cli_cell_text(t, cli_message_state_name(bitt_message_state(m)));
    cli_cell_i64(t, bitt_message_priority(m));
    cli_cell_u64(t, bitt_message_attempts(m));
    cli_cell_time(t, bitt_message_due_at(m), "-");
    cli_cell_text(t, bitt_message_last_error(m) ? bitt_message_last_error(m) : "-");
    cli_cell_bytes(t, p, n);
}

static int q_get(cli *c, int argc, char **argv)
{
    const char *cmd = "queue get";
    cli_args a;
    bitt_store *store = NULL;
    uint64_t id = 0;
    int code = cli_parse(c, cmd, argc, argv, NULL, 0, 2, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(get_usage) : code;
    if ((code = cli_parse_id(cmd, "ID", a.pos[1], &id)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        bitt_message *m = NULL;
        int rc = bitt_queue_get(store, a.pos[0], id, &m);
        if (rc < 0) {
            code = cli_fail(rc);
        } else if (rc == BITT_NOTFOUND) {
            code = cli_absent(c, "no message %" PRIu64 " on topic %s", id, a.pos[0]);
        } else if (c->json) {
            cli_put_json_message(c, m, "payload");
            putchar('\n');
        } else {
            cli_table t;
            cli_table_init(&t, c, get_columns, 7, 0);
            put_row(&t, m);
            code = cli_table_done(&t);
        }
        bitt_message_free(m);
    }
    bitt_store_close(store);
    return cli_finish(code);
}

/* cancel and reschedule: TOPIC ID, a write that finds the message or not. */
static int by_id_write(cli *c, int argc, char **argv, int reschedule)
{
    const char *cmd = reschedule ? "queue reschedule" : "queue cancel";
    static const cli_optspec specs[] = {{"delay", 1}};
    cli_args a;
    bitt_store *store = NULL;
    uint64_t id = 0;
    int64_t delay = 0;
    int code = cli_parse(c, cmd, argc, argv, specs, reschedule ? 1 : 0, 2, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(reschedule ? reschedule_usage : cancel_usage) : code;
    if ((code = cli_parse_id(cmd, "ID", a.pos[1], &id)) != CLI_OK)
        return code;
    if (reschedule && a.value[0] &&
        (code = cli_parse_ms(cmd, "--delay", a.value[0], &delay)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = reschedule ? bitt_queue_reschedule(store, a.pos[0], id, delay)
                            : bitt_queue_cancel(store, a.pos[0], id);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            if (c->json)
                printf("{\"%s\":%s}\n", reschedule ? "rescheduled" : "cancelled",
                       rc == BITT_OK ? "true" : "false");
            if (rc == BITT_NOTFOUND)
                code = cli_absent(c, "no %s message %" PRIu64 " on topic %s",
                                  reschedule ? "pending or delayed" : "live", id, a.pos[0]);
        }
    }
    bitt_store_close(store);
    return cli_finish(code);
}

int cli_queue_get(cli *c, int argc, char **argv)
{
    return q_get(c, argc, argv);
}

int cli_queue_cancel(cli *c, int argc, char **argv)
{
    return by_id_write(c, argc, argv, 0);
}

int cli_queue_reschedule(cli *c, int argc, char **argv)
{
    return by_id_write(c, argc, argv, 1);
}
