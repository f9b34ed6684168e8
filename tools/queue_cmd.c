/*
 * queue_cmd.c: `bitt queue push|pop|ack|nack|extend|snooze|stats` and the dispatch
 * of `bitt queue` (the dead letters live in queue_dead.c).
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char queue_usage[] =
    "Usage: bitt [--store URL] queue <subcommand> [options]\n"
    "\n"
    "Subcommands:\n"
    "  push TOPIC PAYLOAD         enqueue a message and print its id\n"
    "  pop TOPIC                  lease messages and print a row each\n"
    "  ack TOPIC ID TOKEN         finish a delivery: the message is deleted\n"
    "  nack TOPIC ID TOKEN        give a delivery back after a failure (retried\n"
    "                             after the backoff, or dead-lettered)\n"
    "  extend TOPIC ID TOKEN MS   the delivery's lease now ends MS from now\n"
    "  snooze TOPIC ID TOKEN      give a delivery back unseen (no attempt used)\n"
    "  stats TOPIC                pending, delayed, processing and dead counts\n"
    "  get TOPIC ID               one message: state, attempts, due time, error\n"
    "  cancel TOPIC ID            delete a pending, delayed or leased message\n"
    "  reschedule TOPIC ID        make a pending or delayed message due later (or now)\n"
    "  dead TOPIC                 list the dead letters\n"
    "  retry TOPIC [ID]           put dead letters back (all of TOPIC without ID)\n"
    "  purge-dead TOPIC [ID]      delete dead letters (all of TOPIC without ID)\n"
    "  purge [TOPIC]              drop done messages and dead letters past the\n"
    "                             store's retention (every topic without TOPIC)\n"
    "\n"
    "Each pop is a delivery: one attempt, under a lease, with a fresh TOKEN that\n"
    "ack, nack, extend and snooze need. A delivery that is not acked before its lease\n"
    "ends is retried; after max attempts the message is dead-lettered.\n"
    "Run 'bitt queue <subcommand> --help' for the options of each.\n";

static const char push_usage[] =
    "Usage: bitt queue push TOPIC PAYLOAD [--delay MS] [--max-attempts N]\n"
    "                       [--priority P] [--dedup KEY] [--kind bytes|json|counter]\n"
    "                       [--hex] [--json]\n"
    "\n"
    "Enqueues PAYLOAD on TOPIC and prints the new message's id. Put -- before\n"
    "a PAYLOAD that starts with '-'.\n"
    "\n"
    "Options:\n"
    "  --delay MS          claimable only MS milliseconds from now (default 0)\n"
    "  --max-attempts N    deliveries before it is dead-lettered (default 3)\n"
    "  --priority P        an int32, higher first (default 0): a pop takes the\n"
    "                      highest priority that has a claimable message\n"
    "  --dedup KEY         at most one live (pending, delayed or processing)\n"
    "                      message per KEY on TOPIC: while there is one, nothing\n"
    "                      is enqueued and its id is printed (exit 1, and\n"
    "                      the reason on stderr unless --quiet)\n"
    "  --kind KIND         bytes (default), json (one valid JSON text) or counter\n"
    "  --hex               PAYLOAD and KEY are hex (\"00ff\")\n"
    "  --json              print {\"id\":N,\"created\":true|false}\n"
    "\n"
    "Exit status: 0 enqueued, 1 deduplicated, 2 error, 64 usage.\n";

static const char pop_usage[] =
    "Usage: bitt queue pop TOPIC [TOPIC...] [--limit N] [--lease MS] [--wait MS]\n"
    "                      [--hex-out] [--json | --tsv]\n"
    "\n"
    "Leases up to N messages of TOPIC (or of up to 64 distinct TOPICs at once),\n"
    "the highest priority first, then those claimable longest, and prints a\n"
    "row each:\n"
    "\n"
    "    ID  TOKEN     ATTEMPTS  DUE_AT                    PAYLOAD\n"
    "    7   3f9c...   1         2026-12-03T12:00:35.123Z  resize 42.png\n"
    "\n"
    "ATTEMPTS counts this delivery; DUE_AT is when its lease ends. The\n"
    "payload prints as in 'bitt kv list' (other bytes as \\xNN, a backslash\n"
    "as \\\\); --hex-out prints it as hex.\n"
    "\n"
    "Options:\n"
    "  --limit N    at most N messages (default 1, at most 1000)\n"
    "  --lease MS   each delivery's lease (default: the store's queue_lease,\n"
    "               30000); ack it before then or it is delivered again\n"
    "  --wait MS    wait up to MS for a first message when none is claimable;\n"
    "               Ctrl-C or SIGTERM ends the wait with nothing taken (exit\n"
    "               130 or 143)\n"
    "  --json       print {\"messages\":[{\"id\",\"topic\",\"payload\",\"kind\",\n"
    "               \"token\",\"attempts\",\"max_attempts\",\"last_error\",\n"
    "               \"created_at\",\"due_at\" (the lease's end),\"state\":\"leased\",\n"
    "               \"priority\",...}]}\n"
    "  --tsv        TAB-separated, no header, DUE_AT in ms\n"
    "\n"
    "Exit status: 0 leased some, 1 none was claimable (\"bitt: no message\n"
    "ready on topic TOPIC\" on stderr unless --quiet), 2 error, 64 usage.\n";

static const char ack_usage[] =
    "Usage: bitt queue ack TOPIC ID TOKEN [--result VALUE [--kind K]] [--hex] [--json]\n"
    "\n"
    "Finishes the delivery of message ID with its TOKEN (from pop): the\n"
    "message is deleted, or kept done with VALUE as its result when the store\n"
    "keeps done messages (queue_done_retention=MS; see 'queue get'). A token\n"
    "whose lease ended, or that a later delivery replaced, is refused and\n"
    "nothing changes. --kind: the result's kind (bytes, json or counter);\n"
    "--hex: VALUE is hex. --json: print {\"acked\":true}.\n"
    "\n"
    "Exit status: 0 acked, 2 error (a stale token too), 64 usage.\n";

static const char nack_usage[] =
    "Usage: bitt queue nack TOPIC ID TOKEN [--error TEXT] [--delay MS] [--json]\n"
    "\n"
    "Gives the delivery of message ID back after a failure. It is retried\n"
    "after the store's backoff (queue_backoff), or after --delay MS; on its\n"
    "last attempt it is dead-lettered instead.\n"
    "\n"
    "Options:\n"
    "  --error TEXT   the failure, kept with the message (see 'queue dead')\n"
    "  --delay MS     retry MS milliseconds from now instead of the backoff\n"
    "  --json         print {\"nacked\":true}\n"
    "\n"
    "Exit status: 0 done, 2 error (a stale token too), 64 usage.\n";

static const char extend_usage[] =
    "Usage: bitt queue extend TOPIC ID TOKEN MS [--json]\n"
    "\n"
    "The lease of the delivery of message ID now ends MS milliseconds from\n"
    "now; 0 hands the message back at once (the next delivery is another\n"
    "attempt). --json: print {\"extended\":true}.\n"
    "\n"
    "Exit status: 0 done, 2 error (a stale token too), 64 usage.\n";

static const char snooze_usage[] =
    "Usage: bitt queue snooze TOPIC ID TOKEN [--delay MS] [--json]\n"
    "\n"
    "Gives the delivery of message ID back unseen, as if it never happened:\n"
    "the message is pending again, claimable MS milliseconds from now (at once\n"
    "by default), and this delivery does not count as an attempt, so a snooze\n"
    "never dead-letters and records no error (the last one is kept). Unlike\n"
    "'nack' (a failure: one attempt used, the backoff) and 'extend 0' (the\n"
    "attempt stays used), it is for work that was not tried: a worker that\n"
    "stops, a job that must wait. A token whose lease ended, or that a later\n"
    "delivery replaced, is refused and nothing changes.\n"
    "\n"
    "Options:\n"
    "  --delay MS   claimable MS milliseconds from now (default 0)\n"
    "  --json       print {\"snoozed\":true}\n"
    "\n"
    "Exit status: 0 done, 2 error (a stale token too), 64 usage.\n";

static const char stats_usage[] =
    "Usage: bitt queue stats TOPIC [--json | --tsv]\n"
    "\n"
    "Prints how many messages of TOPIC are in each state, as one row:\n"
    "\n"
    "    PENDING  DELAYED  PROCESSING  DEAD  OLDEST_PENDING_AT         DONE\n"
    "    2        1        0           0     2026-12-03T12:00:05.123Z  0\n"
    "\n"
    "PENDING: claimable now (expired leases included); DELAYED: claimable\n"
    "later; PROCESSING: under a live lease; OLDEST_PENDING_AT: since when the\n"
    "oldest claimable message waits (\"-\" for none); DONE: acked and kept by\n"
    "the store's queue_done_retention.\n"
    "\n"
    "  --json   print {\"pending\",\"delayed\",\"processing\",\"dead\",\n"
    "           \"oldest_pending_at\" (null for none),\"done\"}\n"
    "  --tsv    the row TAB-separated, no header, OLDEST_PENDING_AT in ms (0)\n"
    "\n"
    "Exit status: 0 done, 2 error, 64 usage.\n";

static int q_push(cli *c, int argc, char **argv)
{
    const char *cmd = "queue push";
    enum { O_DELAY, O_MAX, O_DEDUP, O_KIND, O_PRIO, O_N };
    static const cli_optspec specs[O_N] = {
        {"delay", 1}, {"max-attempts", 1}, {"dedup", 1}, {"kind", 1}, {"priority", 1}};
    cli_args a;
    cli_bytes payload = {0}, dedup = {0};
    bitt_store *store = NULL;
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    int kind = BITT_KIND_BYTES;
    int code = cli_parse(c, cmd, argc, argv, specs, O_N, 2, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(push_usage) : code;
    if ((a.value[O_DELAY] &&
         (code = cli_parse_ms(cmd, "--delay", a.value[O_DELAY], &o.delay_ms)) != CLI_OK) ||
        (a.value[O_MAX] && (code = cli_parse_u32(cmd, "--max-attempts", a.value[O_MAX],
                                                 &o.max_attempts)) != CLI_OK) ||
        (a.value[O_KIND] && (code = cli_parse_kind(cmd, a.value[O_KIND], &kind)) != CLI_OK) ||
        (a.value[O_PRIO] &&
         (code = cli_parse_i32(cmd, "--priority", a.value[O_PRIO], &o.priority)) != CLI_OK) ||
        (code = cli_bytes_arg(c, cmd, "PAYLOAD", a.pos[1], &payload)) != CLI_OK ||
        (a.value[O_DEDUP] &&
         (code = cli_bytes_arg(c, cmd, "--dedup", a.value[O_DEDUP], &dedup)) != CLI_OK))
        goto done;
    if (a.value[O_DEDUP]) {
        o.dedup_key = dedup.ptr;
        o.dedup_key_len = dedup.len;
    }
    if ((code = cli_open(c, &store)) == CLI_OK) {
        uint64_t id = 0;
        int rc = bitt_queue_enqueue(store, a.pos[0], payload.ptr, payload.len, kind, &o, &id);
        if (rc < 0) {
            code = cli_fail(rc);
        } else {
            if (c->json)
                printf("{\"id\":%" PRIu64 ",\"created\":%s}\n", id,
                       rc == BITT_OK ? "true" : "false");
            else
                printf("%" PRIu64 "\n", id);
            if (rc == BITT_EXISTS)
                code = cli_absent(
                    c, "not enqueued: message %" PRIu64 " on topic %s holds dedup key %s", id,
                    a.pos[0], a.value[O_DEDUP]);
        }
    }
done:
    bitt_store_close(store);
    cli_bytes_free(&payload);
    cli_bytes_free(&dedup);
    return cli_finish(code);
}

static const char *const delivery_columns[] = {"ID", "TOKEN", "ATTEMPTS", "DUE_AT", "PAYLOAD"};

static void put_delivery(cli_table *t, const bitt_message *m)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    cli_cell_u64(t, bitt_message_id(m));
    cli_cell_text(t, bitt_message_token(m));
    cli_cell_u64(t, bitt_message_attempts(m));
    cli_cell_time(t, bitt_message_due_at(m), "-");
    cli_cell_bytes(t, p, n);
}

static int q_pop(cli *c, int argc, char **argv)
{
    const char *cmd = "queue pop";
    enum { O_LIMIT, O_LEASE, O_WAIT, O_N };
    static const cli_optspec specs[O_N] = {{"limit", 1}, {"lease", 1}, {"wait", 1}};
    cli_args a;
    bitt_store *store = NULL;
    bitt_messages *list = NULL;
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    int code = cli_parse(c, cmd, argc, argv, specs, O_N, 1, CLI_MAX_POS, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(pop_usage) : code;
    if ((a.value[O_LIMIT] &&
         (code = cli_parse_u32(cmd, "--limit", a.value[O_LIMIT], &o.limit)) != CLI_OK) ||
        (a.value[O_LEASE] &&
         (code = cli_parse_ms(cmd, "--lease", a.value[O_LEASE], &o.lease_ms)) != CLI_OK) ||
        (a.value[O_WAIT] &&
         (code = cli_parse_ms(cmd, "--wait", a.value[O_WAIT], &o.wait_ms)) != CLI_OK))
        return code;
    if (a.value[O_LIMIT] && o.limit == 0)
        return cli_usage_error(cmd, "--limit must be at least 1");
    if ((code = cli_open(c, &store)) == CLI_OK) {
        bitt_cancel *stop = o.wait_ms > 0 ? cli_interrupt_token() : NULL;
        const char *const *topics = (const char *const *)a.pos;
        int rc = bitt_queue_dequeue_topics(store, topics, a.npos, &o, stop, &list);
        const char *what = a.npos > 1 ? "topics" : "topic";
        if (rc == BITT_ECANCELED) {
            if (!c->quiet)
                fprintf(stderr, "bitt: interrupted; no message was taken from %s %s\n", what,
                        a.pos[0]);
            code = cli_interrupted();
        } else if (rc < 0) {
            code = cli_fail(rc);
        } else {
            static const cli_message_view view = {"messages", "payload", delivery_columns, 5,
                                                  put_delivery};
            code = cli_put_messages(c, list, &view);
            if (code == CLI_OK && bitt_messages_count(list) == 0)
                code = cli_absent(c, "no message ready on %s %s%s", what, a.pos[0],
                                  a.npos > 1 ? ", ..." : "");
        }
    }
    bitt_messages_free(list);
    bitt_store_close(store);
    return cli_finish(code);
}

/* ack, nack, extend and snooze: TOPIC ID TOKEN, then the call. */
enum { FINISH_ACK, FINISH_NACK, FINISH_EXTEND, FINISH_SNOOZE };

static const cli_optspec ack_specs[] = {{"result", 1}, {"kind", 1}};
static const cli_optspec nack_specs[] = {{"error", 1}, {"delay", 1}};
static const cli_optspec snooze_specs[] = {{"delay", 1}};

static const struct {
    const char *cmd, *usage, *done;
    const cli_optspec *specs;
    size_t nspecs;
    int npos;
    int delay;  /* which value is --delay, or -1 */
    int64_t ms; /* the delay or lease without one */
} finishes[] = {
    [FINISH_ACK] = {"queue ack", ack_usage, "acked", ack_specs, 2, 3, -1, 0},
    [FINISH_NACK] = {"queue nack", nack_usage, "nacked", nack_specs, 2, 3, 1, -1},
    [FINISH_EXTEND] = {"queue extend", extend_usage, "extended", NULL, 0, 4, -1, 0},
    [FINISH_SNOOZE] = {"queue snooze", snooze_usage, "snoozed", snooze_specs, 1, 3, 0, 0},
};

static int finish(cli *c, int argc, char **argv, int which)
{
    const char *cmd = finishes[which].cmd;
    int npos = finishes[which].npos;
    cli_args a;
    bitt_store *store = NULL;
    uint64_t id = 0;
    int64_t ms = finishes[which].ms;
    int code = cli_parse(c, cmd, argc, argv, finishes[which].specs, finishes[which].nspecs, npos,
                         npos, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(finishes[which].usage) : code;
    if ((code = cli_parse_id(cmd, "ID", a.pos[1], &id)) != CLI_OK)
        return code;
    if (which == FINISH_EXTEND && (code = cli_parse_ms(cmd, "MS", a.pos[3], &ms)) != CLI_OK)
        return code;
    int d = finishes[which].delay;
    if (d >= 0 && a.value[d] && (code = cli_parse_ms(cmd, "--delay", a.value[d], &ms)) != CLI_OK)
        return code;
    cli_bytes result = {0};
    int kind = BITT_KIND_BYTES;
    if (which == FINISH_ACK && a.value[1] && !a.value[0])
        return cli_usage_error(cmd, "--kind goes with --result");
    if (which == FINISH_ACK && a.value[0] &&
        ((a.value[1] && (code = cli_parse_kind(cmd, a.value[1], &kind)) != CLI_OK) ||
         (code = cli_bytes_arg(c, cmd, "--result", a.value[0], &result)) != CLI_OK))
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int rc;
        if (which == FINISH_ACK && a.value[0])
            rc = bitt_queue_ack_result(store, a.pos[0], id, a.pos[2], result.ptr, result.len, kind);
        else if (which == FINISH_ACK)
            rc = bitt_queue_ack(store, a.pos[0], id, a.pos[2]);
        else if (which == FINISH_NACK)
            rc = bitt_queue_nack(store, a.pos[0], id, a.pos[2], a.value[0], ms);
        else if (which == FINISH_EXTEND)
            rc = bitt_queue_extend(store, a.pos[0], id, a.pos[2], ms);
        else
            rc = bitt_queue_snooze(store, a.pos[0], id, a.pos[2], ms);
        if (rc < 0)
            code = cli_fail(rc);
        else if (c->json)
            printf("{\"%s\":true}\n", finishes[which].done);
    }
    bitt_store_close(store);
    cli_bytes_free(&result);
    return cli_finish(code);
}

static int q_ack(cli *c, int argc, char **argv)
{
    return finish(c, argc, argv, FINISH_ACK);
}

static int q_nack(cli *c, int argc, char **argv)
{
    return finish(c, argc, argv, FINISH_NACK);
}

static int q_extend(cli *c, int argc, char **argv)
{
    return finish(c, argc, argv, FINISH_EXTEND);
}

static int q_snooze(cli *c, int argc, char **argv)
{
    return finish(c, argc, argv, FINISH_SNOOZE);
}

static int q_stats(cli *c, int argc, char **argv)
{
    cli_args a;
    bitt_store *store = NULL;
    int code = cli_parse(c, "queue stats", argc, argv, NULL, 0, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(stats_usage) : code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        bitt_queue_stats s;
        memset(&s, 0, sizeof(s));
        s.version = BITT_QUEUE_STATS_VERSION;
        int rc = bitt_queue_stats_get(store, a.pos[0], &s);
        if (rc < 0) {
            code = cli_fail(rc);
        } else if (c->json) {
            printf("{\"pending\":%" PRIu64 ",\"delayed\":%" PRIu64 ",\"processing\":%" PRIu64
                   ",\"dead\":%" PRIu64,
                   s.pending, s.delayed, s.processing, s.dead);
            cli_put_json_time("oldest_pending_at", s.oldest_pending_at);
            printf(",\"done\":%" PRIu64 "}\n", s.done);
        } else {
            static const char *const columns[] = {"PENDING", "DELAYED",           "PROCESSING",
                                                  "DEAD",    "OLDEST_PENDING_AT", "DONE"};
            cli_table t;
            cli_table_init(&t, c, columns, 6, 0);
            cli_cell_u64(&t, s.pending);
            cli_cell_u64(&t, s.delayed);
            cli_cell_u64(&t, s.processing);
            cli_cell_u64(&t, s.dead);
            cli_cell_time(&t, s.oldest_pending_at, "-");
            cli_cell_u64(&t, s.done);
            code = cli_table_done(&t);
        }
    }
    bitt_store_close(store);
    return cli_finish(code);
}

int cli_queue(cli *c, int argc, char **argv)
{
    static const cli_sub subs[] = {
        {"push", q_push},
        {"pop", q_pop},
        {"ack", q_ack},
        {"nack", q_nack},
        {"extend", q_extend},
        {"snooze", q_snooze},
        {"stats", q_stats},
        {"get", cli_queue_get},
        {"cancel", cli_queue_cancel},
        {"reschedule", cli_queue_reschedule},
        {"dead", cli_queue_dead},
        {"retry", cli_queue_retry},
        {"purge-dead", cli_queue_purge},
        {"purge", cli_queue_purge_retained},
    };
    return cli_group(c, "queue", queue_usage,
                     "push, pop, ack, nack, extend, snooze, stats, get, cancel, reschedule, dead, "
                     "retry, purge-dead or purge",
                     subs, sizeof(subs) / sizeof(subs[0]), argc, argv);
}
