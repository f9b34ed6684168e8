/*
 * messages.c: how queue messages, outbox events and published messages
 * print: one line of TAB-separated fields each, or JSON objects (--json).
 */
#include <inttypes.h>

#include "cli.h"

void cli_put_delivery_line(const cli *c, const bitt_message *m)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    printf("%" PRIu64 "\t", bitt_message_id(m));
    cli_put_text(bitt_message_token(m));
    printf("\t%" PRIu32 "\t", bitt_message_attempts(m));
    cli_put_field(c, p, n);
    putchar('\n');
}

static void put_time(const char *name, int64_t ms)
{
    if (ms == 0)
        printf(",\"%s\":null", name);
    else
        printf(",\"%s\":%" PRId64, name, ms);
}

void cli_put_json_message(const cli *c, const bitt_message *m, const char *field)
{
    size_t n = 0;
    const uint8_t *p = bitt_message_payload(m, &n);
    int kind = bitt_message_kind(m);
    const char *kind_name = cli_kind_name(kind);
    printf("{\"id\":%" PRIu64 ",", bitt_message_id(m));
    cli_put_json_text("topic", bitt_message_topic(m));
    putchar(',');
    cli_put_json_value(c, field, p, n, kind);
    if (kind_name)
        printf(",\"kind\":\"%s\"", kind_name);
    else
        printf(",\"kind\":%d", kind);
    if (bitt_message_token(m)) {
        putchar(',');
        cli_put_json_text("token", bitt_message_token(m));
    }
    printf(",\"attempts\":%" PRIu32, bitt_message_attempts(m));
    if (bitt_message_max_attempts(m) > 0)
        printf(",\"max_attempts\":%" PRIu32, bitt_message_max_attempts(m));
    putchar(',');
    cli_put_json_text("last_error", bitt_message_last_error(m));
    put_time("created_at", bitt_message_created_at(m));
    put_time("due_at", bitt_message_due_at(m));
    put_time("failed_at", bitt_message_failed_at(m));
    if (bitt_message_park_reason(m) == BITT_PARK_POISON)
        fputs(",\"park_reason\":\"poison\"", stdout);
    else if (bitt_message_park_reason(m) == BITT_PARK_INVALID)
        fputs(",\"park_reason\":\"invalid\"", stdout);
    putchar('}');
}

void cli_put_messages(const cli *c, const bitt_messages *list, const char *key, const char *field,
                      void (*put_line)(const cli *, const bitt_message *))
{
    size_t count = bitt_messages_count(list);
    if (c->json)
        printf("{\"%s\":[", key);
    for (size_t i = 0; i < count; i++) {
        const bitt_message *m = bitt_messages_at(list, i);
        if (!c->json) {
            put_line(c, m);
            continue;
        }
        if (i > 0)
            putchar(',');
        cli_put_json_message(c, m, field);
    }
    if (c->json)
        fputs("]}\n", stdout);
}
