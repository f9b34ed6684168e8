/*
 * outbox_cmd.c: `bitt outbox append|pending|ack|fail|park|parked|retry|
 * discard|counts`: a dispatcher's view of a stream of events.
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char outbox_usage[] =
    "Usage: bitt [--store URL] outbox <subcommand> [options]\n"
    "\n"
    "Subcommands:\n"
    "  append STREAM EVENT          append an event on its own; print its seq\n"
    "  pending STREAM               pending events, a row each\n"
    "  ack STREAM SEQ...            delete delivered events; print how many\n"
    "  fail STREAM SEQ              record a failed attempt of a pending event\n"
    "  park STREAM SEQ              set a pending event aside (poison, invalid)\n"
    "  parked STREAM                parked events, a row each\n"
    "  retry STREAM [SEQ...]        parked events back to pending (all without SEQ)\n"
    "  discard STREAM [SEQ...]      delete parked events (all without SEQ)\n"
    "  counts STREAM                how many pending and parked\n"
    "\n"
    "Events are appended in the atomic commit of the state they belong to\n"
    "(bitt_txn_outbox_append); sequence numbers increase per stream in commit\n"
    "order. Pending means not yet acked: a dispatcher never skips one.\n"
    "Run 'bitt outbox <subcommand> --help' for more.\n";

static const char append_usage[] =
    "Usage: bitt outbox append STREAM EVENT [--kind bytes|json|counter] [--hex] [--json]\n"
    "\n"
    "Appends EVENT to STREAM in a commit of its own and prints its sequence\n"
    "number (--json: {\"seq\":N}).\n"
    "\n"
    "Exit status: 0 appended, 2 error, 64 usage.\n";

static const char pending_usage[] =
    "Usage: bitt outbox pending STREAM [--limit N] [--hex-out] [--json | --tsv]\n"
    "\n"
    "Prints the pending events of STREAM in sequence order, a row each:\n"
    "\n"
    "    SEQ  ATTEMPTS  DUE_AT                    LAST_ERROR  EVENT\n"
    "    41   1         2026-12-03T12:00:05.123Z  no route    {\"order\": 7}\n"
    "\n"
    "ATTEMPTS counts the failures recorded with 'outbox fail', DUE_AT is the\n"
    "next attempt they recorded (\"-\": none). The event prints as a value in\n"
    "'bitt kv list'; --hex-out prints hex.\n"
    "\n"
    "Options:\n"
    "  --limit N   at most N (default 100, at most 1000)\n"
    "  --json      print {\"events\":[{\"id\" (the seq),\"topic\",\"event\",\"kind\",\n"
    "              \"attempts\",\"last_error\",\"created_at\",\"due_at\",...}]}\n"
    "  --tsv       TAB-separated, no header, DUE_AT in ms (0: none)\n"
    "\n"
    "Exit status: 0 listed (even nothing), 2 error, 64 usage.\n";

static const char ack_usage[] =
    "Usage: bitt outbox ack STREAM SEQ... [--json]\n"
    "\n"
    "Deletes the pending events SEQ... of STREAM (they were delivered) and\n"
    "prints how many were pending (--json: {\"count\":N}).\n"
    "\n"
    "Exit status: 0 all were pending, 1 some were not (the reason on stderr\n"
    "unless --quiet), 2 error, 64 usage.\n";

static const char fail_usage[] =
    "Usage: bitt outbox fail STREAM SEQ [--error TEXT] [--next-at MS] [--json]\n"
    "\n"
    "Records a failed delivery of pending event SEQ: its attempts go up by one\n"
    "and it keeps the error and the time of the next attempt (ms since the\n"
    "Unix epoch, default 0: none), for the dispatcher to decide. --json:\n"
    "print {\"recorded\":true|false}.\n"
    "\n"
    "Exit status: 0 recorded, 1 SEQ is not pending (the reason on stderr\n"
    "unless --quiet), 2 error, 64 usage.\n";

static const char park_usage[] =
    "Usage: bitt outbox park STREAM SEQ [--reason poison|invalid] [--error TEXT]\n"
    "                        [--json]\n"
    "\n"
    "Moves pending event SEQ to the parked list, with a reason (default\n"
    "poison: the handler keeps failing on it; invalid: it can never be\n"
    "handled as it is) and an error. --json: print {\"parked\":true|false}.\n"
    "\n"
    "Exit status: 0 parked, 1 SEQ is not pending (the reason on stderr unless\n"
    "--quiet), 2 error, 64 usage.\n";

static const char parked_usage[] =
    "Usage: bitt outbox parked STREAM [--reason poison|invalid] [--limit N]\n"
    "                         [--hex-out] [--json | --tsv]\n"
    "\n"
    "Prints the parked events of STREAM in sequence order, a row each:\n"
    "\n"
    "    SEQ  REASON   FAILED_AT                 LAST_ERROR  EVENT\n"
    "    42   invalid  2026-12-03T12:00:05.123Z  bad shape   {\"order\": null}\n"
    "\n"
    "FAILED_AT is when it was parked.\n"
    "\n"
    "Options:\n"
    "  --reason R  only those parked for R\n"
    "  --limit N   at most N (default 100, at most 1000)\n"
    "  --json      print {\"events\":[...]} as 'outbox pending --json' does,\n"
    "              with \"park_reason\" and \"failed_at\" (when parked)\n"
    "  --tsv       TAB-separated, no header, FAILED_AT in ms\n"
    "\n"
    "Exit status: 0 listed (even nothing), 2 error, 64 usage.\n";

static const char retry_usage[] =
    "Usage: bitt outbox retry STREAM [SEQ...] [--json]\n"
    "\n"
    "Puts parked events SEQ... of STREAM (all of them without SEQ) back to\n"
    "pending, with their sequence numbers and zero attempts, and prints how\n"
    "many moved (--json: {\"count\":N}).\n"
    "\n"
    "Exit status: 0 done, 1 some SEQ was not parked (the reason on stderr\n"
    "unless --quiet), 2 error, 64 usage.\n";

static const char discard_usage[] =
    "Usage: bitt outbox discard STREAM [SEQ...] [--json]\n"
    "\n"
    "Deletes parked events SEQ... of STREAM (all of them without SEQ) and\n"
    "prints how many (--json: {\"count\":N}).\n"
    "\n"
    "Exit status: 0 done, 1 some SEQ was not parked (the reason on stderr\n"
    "unless --quiet), 2 error, 64 usage.\n";

static const char counts_usage[] =
    "Usage: bitt outbox counts STREAM [--json | --tsv]\n"
    "\n"
    "Prints how many events of STREAM are pending and parked, as one row\n"
    "under the header PENDING  PARKED (--json: {\"pending\",\"parked\"}).\n"
    "\n"
    "Exit status: 0 done, 2 error, 64 usage.\n";

static int parse_reason(const char *cmd, const char *s, int *reason)
{
    if (strcmp(s, "poison") == 0)
        *reason = BITT_PARK_POISON;
    else if (strcmp(s, "invalid") == 0)
        *reason = BITT_PARK_INVALID;
    else
        return cli_usage_error(cmd, "--reason must be poison or invalid: '%s'", s);
    return CLI_OK;
}

/* SEQ... from the positional arguments after STREAM. */
static int parse_seqs(const char *cmd, const cli_args *a, uint64_t *seqs, size_t *count)
{
    *count = 0;
    for (int i = 1; i < a->npos; i++) {
        int code = cli_parse_id(cmd, "SEQ", a->pos[i], &seqs[*count]);
        if (code != CLI_OK)
            return code;
        (*count)++;
    }
    return CLI_OK;
}

static int o_append(cli *c, int argc, char **argv)
{
    const char *cmd = "outbox append";
    static const cli_optspec specs[] = {{"kind", 1}};
    cli_args a;
    cli_bytes event = {0};
    bitt_store *store = NULL;
    int kind = BITT_KIND_BYTES;
    int code = cli_parse(c, cmd, argc, argv, specs, 1, 2, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(append_usage) : code;
    if ((a.value[0] && (code = cli_parse_kind(cmd, a.value[0], &kind)) != CLI_OK) ||
        (code = cli_bytes_arg(c, cmd, "EVENT", a.pos[1], &event)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        uint64_t seq = 0;
        int rc = bitt_outbox_append(store, a.pos[0], event.ptr, event.len, kind, &seq);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            printf("{\"seq\":%" PRIu64 "}\n", seq);
        else
            printf("%" PRIu64 "\n", seq);
    }
    bitt_store_close(store);
    cli_bytes_free(&event);
    return cli_finish(code);
}

static void put_pending(cli_table *t, const bitt_message *m)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    cli_cell_u64(t, bitt_message_id(m));
    cli_cell_u64(t, bitt_message_attempts(m));
    cli_cell_time(t, bitt_message_due_at(m), "-");
    cli_cell_text(t, bitt_message_last_error(m));
    cli_cell_bytes(t, p, n);
}

static void put_parked(cli_table *t, const bitt_message *m)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    int reason = bitt_message_park_reason(m);
    cli_cell_u64(t, bitt_message_id(m));
    cli_cell_text(t, reason == BITT_PARK_POISON    ? "poison"
                     : reason == BITT_PARK_INVALID ? "invalid"
                                                   : "-");
    cli_cell_time(t, bitt_message_failed_at(m), "-");
    cli_cell_text(t, bitt_message_last_error(m));
    cli_cell_bytes(t, p, n);
}

static const char *const pending_columns[] = {"SEQ", "ATTEMPTS", "DUE_AT", "LAST_ERROR", "EVENT"};
static const char *const parked_columns[] = {"SEQ", "REASON", "FAILED_AT", "LAST_ERROR", "EVENT"};
static const cli_message_view pending_view = {"events", "event", pending_columns, 5, put_pending};
static const cli_message_view parked_view = {"events", "event", parked_columns, 5, put_parked};

/* pending and parked: STREAM, --limit, and (parked) --reason. */
static int list(cli *c, int argc, char **argv, int parked)
{
    const char *cmd = parked ? "outbox parked" : "outbox pending";
    static const cli_optspec specs[] = {{"limit", 1}, {"reason", 1}};
    cli_args a;
    bitt_store *store = NULL;
    bitt_messages *events = NULL;
    uint32_t limit = 0;
    int reason = 0;
    int code = cli_parse(c, cmd, argc, argv, specs, parked ? 2 : 1, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(parked ? parked_usage : pending_usage) : code;
    if ((a.value[0] && (code = cli_parse_u32(cmd, "--limit", a.value[0], &limit)) != CLI_OK) ||
        (a.value[1] && (code = parse_reason(cmd, a.value[1], &reason)) != CLI_OK))
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = parked ? bitt_outbox_parked(store, a.pos[0], reason, limit, &events)
                        : bitt_outbox_pending(store, a.pos[0], limit, &events);
        if (rc < 0)
            code = cli_fail(rc);
        else
            code = cli_put_messages(c, events, parked ? &parked_view : &pending_view);
    }
    bitt_messages_free(events);
    bitt_store_close(store);
    return cli_finish(code);
}

static int o_pending(cli *c, int argc, char **argv)
{
    return list(c, argc, argv, 0);
}

static int o_parked(cli *c, int argc, char **argv)
{
    return list(c, argc, argv, 1);
}

/* ack, retry and discard: STREAM SEQ..., then a count. */
enum { MANY_ACK, MANY_RETRY, MANY_DISCARD };

static int many(cli *c, int argc, char **argv, int which)
{
    static const char *const cmds[] = {"outbox ack", "outbox retry", "outbox discard"};
    static const char *const usages[] = {ack_usage, retry_usage, discard_usage};
    const char *cmd = cmds[which];
    cli_args a;
    bitt_store *store = NULL;
    uint64_t seqs[CLI_MAX_POS];
    size_t count = 0;
    int code = cli_parse(c, cmd, argc, argv, NULL, 0, which == MANY_ACK ? 2 : 1, CLI_MAX_POS, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(usages[which]) : code;
    if ((code = parse_seqs(cmd, &a, seqs, &count)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        uint64_t done = 0;
        const uint64_t *p = count ? seqs : NULL;
        int rc = which == MANY_ACK     ? bitt_outbox_ack(store, a.pos[0], p, count, &done)
                 : which == MANY_RETRY ? bitt_outbox_retry(store, a.pos[0], p, count, &done)
                                       : bitt_outbox_discard(store, a.pos[0], p, count, &done);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            if (c->json)
                printf("{\"count\":%" PRIu64 "}\n", done);
            else
                printf("%" PRIu64 "\n", done);
            if (count > 0 && done < count)
                code = cli_absent(c, "%" PRIu64 " of %zu events were not %s on stream %s",
                                  (uint64_t)count - done, count,
                                  which == MANY_ACK ? "pending" : "parked", a.pos[0]);
        }
    }
    bitt_store_close(store);
    return cli_finish(code);
}

static int o_ack(cli *c, int argc, char **argv)
{
    return many(c, argc, argv, MANY_ACK);
}

static int o_retry(cli *c, int argc, char **argv)
{
    return many(c, argc, argv, MANY_RETRY);
}

static int o_discard(cli *c, int argc, char **argv)
{
    return many(c, argc, argv, MANY_DISCARD);
}

/* fail and park: STREAM SEQ with --error, and --next-at or --reason. */
static int set_aside(cli *c, int argc, char **argv, int park)
{
    const char *cmd = park ? "outbox park" : "outbox fail";
    static const cli_optspec fail_specs[] = {{"error", 1}, {"next-at", 1}};
    static const cli_optspec park_specs[] = {{"error", 1}, {"reason", 1}};
    cli_args a;
    bitt_store *store = NULL;
    uint64_t seq = 0;
    int64_t next_at = 0;
    int reason = BITT_PARK_POISON;
    int code = cli_parse(c, cmd, argc, argv, park ? park_specs : fail_specs, 2, 2, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(park ? park_usage : fail_usage) : code;
    if ((code = cli_parse_id(cmd, "SEQ", a.pos[1], &seq)) != CLI_OK)
        return code;
    if (a.value[1] &&
        (code = park ? parse_reason(cmd, a.value[1], &reason)
                     : cli_parse_ms(cmd, "--next-at", a.value[1], &next_at)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = park ? bitt_outbox_park(store, a.pos[0], seq, reason, a.value[0])
                      : bitt_outbox_fail(store, a.pos[0], seq, a.value[0], next_at);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            if (c->json)
                printf("{\"%s\":%s}\n", park ? "parked" : "recorded",
                       rc == BITT_OK ? "true" : "false");
            if (rc == BITT_NOTFOUND)
                code =
                    cli_absent(c, "event %" PRIu64 " is not pending on stream %s", seq, a.pos[0]);
        }
    }
    bitt_store_close(store);
    return cli_finish(code);
}

static int o_fail(cli *c, int argc, char **argv)
{
    return set_aside(c, argc, argv, 0);
}

static int o_park(cli *c, int argc, char **argv)
{
    return set_aside(c, argc, argv, 1);
}

static int put_counts(const cli *c, uint64_t pending, uint64_t parked)
{
    static const char *const columns[] = {"PENDING", "PARKED"};
    cli_table t;
    cli_table_init(&t, c, columns, 2, 0);
    cli_cell_u64(&t, pending);
    cli_cell_u64(&t, parked);
    return cli_table_done(&t);
}

static int o_counts(cli *c, int argc, char **argv)
{
    cli_args a;
    bitt_store *store = NULL;
    int code = cli_parse(c, "outbox counts", argc, argv, NULL, 0, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(counts_usage) : code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        uint64_t pending = 0, parked = 0;
        int rc = bitt_outbox_counts(store, a.pos[0], &pending, &parked);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            printf("{\"pending\":%" PRIu64 ",\"parked\":%" PRIu64 "}\n", pending, parked);
        else
            code = put_counts(c, pending, parked);
    }
    bitt_store_close(store);
    return cli_finish(code);
}

int cli_outbox(cli *c, int argc, char **argv)
{
    static const cli_sub subs[] = {
        {"append", o_append}, {"pending", o_pending}, {"ack", o_ack},
        {"fail", o_fail},     {"park", o_park},       {"parked", o_parked},
        {"retry", o_retry},   {"discard", o_discard}, {"counts", o_counts},
    };
    return cli_group(c, "outbox", outbox_usage,
                     "append, pending, ack, fail, park, parked, retry, discard or counts", subs,
                     sizeof(subs) / sizeof(subs[0]), argc, argv);
}
