/*
 * core/sqlite/rows.c: messages (queue messages, outbox events, published
 * messages) made from rows, and undoing a failed call's partial results.
 */
#include "sqlite_internal.h"

int bitt__sq_push_message(bitt_messages *out, const bitt_message *fields)
{
    bitt_message *msg = bitt__message_new(fields);
    if (!msg)
        return bitt__fail(BITT_ENOMEM, "sqlite: out of memory for a message");
    int status = bitt__messages_push(out, msg); /* frees msg on failure */
    if (status != BITT_OK)
        return bitt__fail(status, "sqlite: out of memory for a message list");
    return BITT_OK;
}

void bitt__sq_messages_truncate(bitt_messages *out, size_t base)
{
    while (out->count > base)
        bitt_message_free(out->items[--out->count]);
}
