/*
 * queue_dead.c: `bitt queue dead|retry|purge-dead|purge`: the dead letters
 * of a topic, listed, put back or deleted, and what outlived its retention.
 */
#include <inttypes.h>

#include "cli.h"

static const char dead_usage[] =
    "Usage: bitt queue dead TOPIC [--after ID] [--limit N] [--hex-out]\n"
    "                       [--json | --tsv]\n"
    "\n"
    "Lists the dead letters of TOPIC in id order, a row each:\n"
    "\n"
    "    ID   ATTEMPTS  FAILED_AT                 LAST_ERROR  PAYLOAD\n"
    "    200  3         2026-12-03T12:00:05.123Z  timed out   resize 9.png\n"
    "\n"
    "FAILED_AT is when it died; LAST_ERROR and PAYLOAD print as values in\n"
    "'bitt kv list'. When the page is full, the last thing printed is the\n"
    "line \"cursor: ID\" on stderr: run again with --after ID for the next page.\n"
    "\n"
    "Options:\n"
    "  --after ID   only dead letters with an id above ID\n"
    "  --limit N    at most N (default 100, at most 1000)\n"
    "  --hex-out    print the payload as hex\n"
    "  --json       print {\"messages\":[...]} as 'bitt queue pop --json' does\n"
    "  --tsv        TAB-separated, no header, FAILED_AT in ms\n"
    "\n"
    "Exit status: 0 listed (even nothing), 2 error, 64 usage.\n";

static const char retry_usage[] =
    "Usage: bitt queue retry TOPIC [ID] [--json]\n"
    "\n"
    "Puts dead letter ID of TOPIC (every dead letter of TOPIC without ID) back\n"
    "to pending with its attempts reset, and prints how many moved (--json:\n"
    "{\"count\":N}).\n"
    "\n"
    "Exit status: 0 done, 1 ID was not a dead letter of TOPIC (the reason on\n"
    "stderr unless --quiet), 2 error, 64 usage.\n";

static const char purge_usage[] =
    "Usage: bitt queue purge-dead TOPIC [ID] [--json]\n"
    "\n"
    "Deletes dead letter ID of TOPIC (every dead letter of TOPIC without ID)\n"
    "and prints how many were deleted (--json: {\"count\":N}).\n"
    "\n"
    "Exit status: 0 done, 1 ID was not a dead letter of TOPIC (the reason on\n"
    "stderr unless --quiet), 2 error, 64 usage.\n";

static const char *const dead_columns[] = {"ID", "ATTEMPTS", "FAILED_AT", "LAST_ERROR", "PAYLOAD"};

static void put_dead(cli_table *t, const bitt_message *m)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    cli_cell_u64(t, bitt_message_id(m));
    cli_cell_u64(t, bitt_message_attempts(m));
    cli_cell_time(t, bitt_message_failed_at(m), "-");
    cli_cell_text(t, bitt_message_last_error(m));
    cli_cell_bytes(t, p, n);
}

int cli_queue_dead(cli *c, int argc, char **argv)
{
    const char *cmd = "queue dead";
    static const cli_optspec specs[] = {{"after", 1}, {"limit", 1}};
    cli_args a;
    bitt_store *store = NULL;
    bitt_messages *list = NULL;
    uint64_t after = 0;
    uint32_t limit = 0;
    int code = cli_parse(c, cmd, argc, argv, specs, 2, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(dead_usage) : code;
    if ((a.value[0] && (code = cli_parse_id(cmd, "--after", a.value[0], &after)) != CLI_OK) ||
        (a.value[1] && (code = cli_parse_u32(cmd, "--limit", a.value[1], &limit)) != CLI_OK))
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = bitt_queue_dead_list(store, a.pos[0], after, limit, &list);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            static const cli_message_view view = {"messages", "payload", dead_columns, 5, put_dead};
            size_t n = bitt_messages_count(list);
            code = cli_put_messages(c, list, &view);
            if (code == CLI_OK && n > 0 && n == (limit ? limit : 100) && !c->json) {
                fflush(stdout);
                fprintf(stderr, "cursor: %" PRIu64 "\n",
                        bitt_message_id(bitt_messages_at(list, n - 1)));
            }
        }
    }
    bitt_messages_free(list);
    bitt_store_close(store);
    return cli_finish(code);
}

/* retry and purge-dead: TOPIC [ID], then the count. */
static int move(cli *c, int argc, char **argv, int purge)
{
    const char *cmd = purge ? "queue purge-dead" : "queue retry";
    cli_args a;
    bitt_store *store = NULL;
    uint64_t id = 0, count = 0;
    int code = cli_parse(c, cmd, argc, argv, NULL, 0, 1, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(purge ? purge_usage : retry_usage) : code;
    if (a.npos > 1 && (code = cli_parse_id(cmd, "ID", a.pos[1], &id)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = purge ? bitt_queue_dead_delete(store, a.pos[0], id, &count)
                       : bitt_queue_dead_retry(store, a.pos[0], id, &count);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            if (c->json)
                printf("{\"count\":%" PRIu64 "}\n", count);
            else
                printf("%" PRIu64 "\n", count);
            if (id != 0 && (rc == BITT_NOTFOUND || count == 0))
                code = cli_absent(c, "no dead letter %" PRIu64 " on topic %s", id, a.pos[0]);
        }
    }
    bitt_store_close(store);
    return cli_finish(code);
}

int cli_queue_retry(cli *c, int argc, char **argv)
{
    return move(c, argc, argv, 0);
}

int cli_queue_purge(cli *c, int argc, char **argv)
{
    return move(c, argc, argv, 1);
}

static const char purge_retained_usage[] =
    "Usage: bitt queue purge [TOPIC] [--json]\n"
    "\n"
    "Drops the done messages of TOPIC (of every topic without TOPIC) kept past\n"
    "the store's queue_done_retention, and its dead letters past\n"
    "queue_dead_retention (a store without it keeps dead letters), and prints\n"
    "how many went (--json: {\"count\":N}). The store also does this now and\n"
    "then, and every queue command does it for its topic first.\n"
    "\n"
    "Exit status: 0 done, 2 error, 64 usage.\n";

int cli_queue_purge_retained(cli *c, int argc, char **argv)
{
    const char *cmd = "queue purge";
    cli_args a;
    bitt_store *store = NULL;
    uint64_t count = 0;
    int code = cli_parse(c, cmd, argc, argv, NULL, 0, 0, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(purge_retained_usage) : code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc = bitt_queue_purge(store, a.npos ? a.pos[0] : NULL, &count);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            printf("{\"count\":%" PRIu64 "}\n", count);
        else
            printf("%" PRIu64 "\n", count);
    }
    bitt_store_close(store);
    return cli_finish(code);
}
