/*
 * messages.c: how queue messages, outbox events and published messages
 * print: a table of the columns a command chooses, or JSON objects (--json)
 * with every field the message has.
 */
#include <inttypes.h>

#include "cli.h"

void cli_put_json_message(const cli *c, const bitt_message *m, const char *field)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    int kind = bitt_message_kind(m);
    printf("{\"id\":%" PRIu64 ",", bitt_message_id(m));
    cli_put_json_text("topic", bitt_message_topic(m));
    putchar(',');
    cli_put_json_value(c, field, p, n, kind);
    cli_put_json_kind(kind);
    if (bitt_message_token(m)) {
        putchar(',');
        cli_put_json_text("token", bitt_message_token(m));
    }
    printf(",\"attempts\":%" PRIu32, bitt_message_attempts(m));
    if (bitt_message_max_attempts(m) > 0)
        printf(",\"max_attempts\":%" PRIu32, bitt_message_max_attempts(m));
    putchar(',');
    cli_put_json_text("last_error", bitt_message_last_error(m));
    cli_put_json_time("created_at", bitt_message_created_at(m));
    cli_put_json_time("due_at", bitt_message_due_at(m));
    cli_put_json_time("failed_at", bitt_message_failed_at(m));
    /* a queue message (an outbox event has no state) */
    if (bitt_message_state(m)) {
        printf(",\"state\":\"%s\"", cli_message_state_name(bitt_message_state(m)));
        printf(",\"priority\":%" PRId32, bitt_message_priority(m));
    }
    if (bitt_message_state(m) == BITT_MSG_DONE) {
        size_t rn = 0;
        const uint8_t *r = bitt_message_result(m, &rn);
        cli_put_json_time("done_at", bitt_message_done_at(m));
        putchar(',');
        if (r) {
            cli_put_json_value(c, "result", r, rn, bitt_message_result_kind(m));
            printf(",\"result_kind\":\"%s\"", cli_kind_name(bitt_message_result_kind(m)));
        } else {
            fputs("\"result\":null,\"result_kind\":null", stdout);
        }
    }
    if (bitt_message_park_reason(m) == BITT_PARK_POISON)
        fputs(",\"park_reason\":\"poison\"", stdout);
    else if (bitt_message_park_reason(m) == BITT_PARK_INVALID)
        fputs(",\"park_reason\":\"invalid\"", stdout);
    putchar('}');
}

int cli_put_messages(const cli *c, const bitt_messages *list, const cli_message_view *view)
{
    size_t count = bitt_messages_count(list);
    if (c->json) {
        printf("{\"%s\":[", view->key);
        for (size_t i = 0; i < count; i++) {
            if (i > 0)
                putchar(',');
            cli_put_json_message(c, bitt_messages_at(list, i), view->field);
        }
        fputs("]}\n", stdout);
        return CLI_OK;
    }
    cli_table t;
    cli_table_init(&t, c, view->columns, view->ncols, 0);
    for (size_t i = 0; i < count; i++)
        view->put_row(&t, bitt_messages_at(list, i));
    return cli_table_done(&t);
}
