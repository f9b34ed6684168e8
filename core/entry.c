/* Entries and entry lists: plain data the caller owns. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

bitt_entry *bitt__entry_new(const void *key, size_t key_len, const void *value, size_t value_len,
                            int kind, uint64_t version, int64_t expires_at)
{
    /* One allocation: the struct, the key + NUL, the value + NUL. */
    if (key_len > SIZE_MAX / 2 || value_len > SIZE_MAX / 2) {
        bitt__fail(BITT_ENOMEM, "entry too large");
        return NULL;
    }
    bitt_entry *e = bitt__malloc(sizeof *e + key_len + value_len + 2);
    if (!e) {
        bitt__fail(BITT_ENOMEM, "out of memory for an entry of %zu bytes", key_len + value_len);
        return NULL;
    }
    e->key = (uint8_t *)(e + 1);
    e->value = e->key + key_len + 1;
    if (key_len)
        memcpy(e->key, key, key_len);
    e->key[key_len] = '\0';
    if (value_len)
        memcpy(e->value, value, value_len);
    e->value[value_len] = '\0';
    e->key_len = key_len;
    e->value_len = value_len;
    e->kind = kind;
    e->version = version;
    e->expires_at = expires_at;
    return e;
}

const uint8_t *bitt_entry_key(const bitt_entry *entry, size_t *len)
{
    if (len)
        *len = entry ? entry->key_len : 0;
    return entry ? entry->key : NULL;
}

const uint8_t *bitt_entry_value(const bitt_entry *entry, size_t *len)
{
    if (len)
        *len = entry ? entry->value_len : 0;
    return entry ? entry->value : NULL;
}

int bitt_entry_kind(const bitt_entry *entry)
{
    return entry ? entry->kind : -1;
}

uint64_t bitt_entry_version(const bitt_entry *entry)
{
    return entry ? entry->version : 0;
}

int64_t bitt_entry_expires_at(const bitt_entry *entry)
{
    return entry ? entry->expires_at : 0;
}

int bitt_entry_counter(const bitt_entry *entry, int64_t *out)
{
    bitt__error_reset();
    if (!entry || !out)
        return bitt__fail(BITT_EINVAL, "entry and out must not be NULL");
    if (entry->kind != BITT_KIND_COUNTER)
        return bitt__fail(BITT_ENOTCOUNTER, "entry of kind %d is not a counter", entry->kind);
    return bitt__counter_parse(entry->value, entry->value_len, out);
}

void bitt_entry_free(bitt_entry *entry)
{
    free(entry);
}

bitt_entries *bitt__entries_new(size_t capacity_hint)
{
    bitt_entries *list = bitt__calloc(1, sizeof *list);
    if (!list) {
        bitt__fail(BITT_ENOMEM, "out of memory for an entry list");
        return NULL;
    }
    if (capacity_hint) {
        list->items = bitt__malloc(capacity_hint * sizeof *list->items);
        if (!list->items) {
            free(list);
            bitt__fail(BITT_ENOMEM, "out of memory for %zu entries", capacity_hint);
            return NULL;
        }
        list->cap = capacity_hint;
    }
    return list;
}

int bitt__entries_push(bitt_entries *list, bitt_entry *entry)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 8;
        bitt_entry **items = bitt__realloc(list->items, cap * sizeof *items);
        if (!items) {
            free(entry);
            return bitt__fail(BITT_ENOMEM, "out of memory growing an entry list");
        }
        list->items = items;
        list->cap = cap;
    }
    list->items[list->count++] = entry;
    return BITT_OK;
}

size_t bitt_entries_count(const bitt_entries *entries)
{
    return entries ? entries->count : 0;
}

const bitt_entry *bitt_entries_at(const bitt_entries *entries, size_t i)
{
    if (!entries || i >= entries->count)
        return NULL;
    return entries->items[i];
}

const char *bitt_entries_cursor(const bitt_entries *entries)
{
    return entries ? entries->cursor : NULL;
}

void bitt_entries_free(bitt_entries *entries)
{
    if (!entries)
        return;
    for (size_t i = 0; i < entries->count; i++)
        free(entries->items[i]);
    free(entries->items);
    free(entries->cursor);
    free(entries);
}
