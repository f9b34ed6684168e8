/* Messages (queue, outbox, pubsub) and message lists: plain caller data. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static size_t text_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/* Copies s (if any) to *cursor and returns the copy. */
static char *place_text(char **cursor, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *copy = *cursor;
    memcpy(copy, s, n);
    *cursor += n;
    return copy;
}

bitt_message *bitt__message_new(const bitt_message *f)
{
    size_t extra = text_size(f->topic) + text_size(f->token) + text_size(f->last_error);
    size_t result_len = f->result ? f->result_len : 0;
    if (f->payload_len > SIZE_MAX / 4 || result_len > SIZE_MAX / 4 || extra > SIZE_MAX / 4) {
        bitt__fail(BITT_ENOMEM, "message too large");
        return NULL;
    }
    bitt_message *m =
        bitt__malloc(sizeof *m + f->payload_len + 1 + extra + (f->result ? result_len + 1 : 0));
    if (!m) {
        bitt__fail(BITT_ENOMEM, "out of memory for a message of %zu bytes", f->payload_len);
        return NULL;
    }
    *m = *f;
    m->payload = (uint8_t *)(m + 1);
    if (f->payload_len)
        memcpy(m->payload, f->payload, f->payload_len);
    m->payload[f->payload_len] = '\0';
    char *cursor = (char *)m->payload + f->payload_len + 1;
    m->topic = place_text(&cursor, f->topic);
    m->token = place_text(&cursor, f->token);
    m->last_error = place_text(&cursor, f->last_error);
    m->result = NULL;
    m->result_len = 0;
    if (f->result) {
        m->result = (uint8_t *)cursor;
        if (result_len)
            memcpy(m->result, f->result, result_len);
        m->result[result_len] = '\0';
        m->result_len = result_len;
    }
    return m;
}

uint64_t bitt_message_id(const bitt_message *m)
{
    return m ? m->id : 0;
}

const char *bitt_message_topic(const bitt_message *m)
{
    return m ? m->topic : NULL;
}

const uint8_t *bitt_message_payload(const bitt_message *m, size_t *len)
{
    if (len)
        *len = m ? m->payload_len : 0;
    return m ? m->payload : NULL;
}

int bitt_message_kind(const bitt_message *m)
{
    return m ? m->kind : -1;
}

const char *bitt_message_token(const bitt_message *m)
{
    return m ? m->token : NULL;
}

uint32_t bitt_message_attempts(const bitt_message *m)
{
    return m ? m->attempts : 0;
}

uint32_t bitt_message_max_attempts(const bitt_message *m)
{
    return m ? m->max_attempts : 0;
}

const char *bitt_message_last_error(const bitt_message *m)
{
    return m ? m->last_error : NULL;
}

int64_t bitt_message_created_at(const bitt_message *m)
{
    return m ? m->created_at : 0;
}

int64_t bitt_message_due_at(const bitt_message *m)
{
    return m ? m->due_at : 0;
}

int64_t bitt_message_failed_at(const bitt_message *m)
{
    return m ? m->failed_at : 0;
}

int bitt_message_park_reason(const bitt_message *m)
{
    return m ? m->park_reason : 0;
}

int bitt_message_state(const bitt_message *m)
{
    return m ? m->state : 0;
}

int32_t bitt_message_priority(const bitt_message *m)
{
    return m ? m->priority : 0;
}

int64_t bitt_message_done_at(const bitt_message *m)
{
    return m ? m->done_at : 0;
}

const uint8_t *bitt_message_result(const bitt_message *m, size_t *len)
{
    if (len)
        *len = m && m->result ? m->result_len : 0;
    return m ? m->result : NULL;
}

int bitt_message_result_kind(const bitt_message *m)
{
    return m && m->result ? m->result_kind : -1;
}

void bitt_message_free(bitt_message *m)
{
    free(m);
}

bitt_messages *bitt__messages_new(size_t capacity_hint)
{
    bitt_messages *list = bitt__calloc(1, sizeof *list);
    if (list && capacity_hint) {
        list->items = bitt__malloc(capacity_hint * sizeof *list->items);
        list->cap = list->items ? capacity_hint : 0;
    }
    if (!list)
        bitt__fail(BITT_ENOMEM, "out of memory for a message list");
    return list;
}

int bitt__messages_push(bitt_messages *list, bitt_message *msg)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 8;
        bitt_message **items = bitt__realloc(list->items, cap * sizeof *items);
        if (!items) {
            free(msg);
            return bitt__fail(BITT_ENOMEM, "out of memory growing a message list");
        }
        list->items = items;
        list->cap = cap;
    }
    list->items[list->count++] = msg;
    return BITT_OK;
}

size_t bitt_messages_count(const bitt_messages *list)
{
    return list ? list->count : 0;
}

const bitt_message *bitt_messages_at(const bitt_messages *list, size_t i)
{
    return list && i < list->count ? list->items[i] : NULL;
}

void bitt_messages_free(bitt_messages *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i]);
    free(list->items);
    free(list);
}
