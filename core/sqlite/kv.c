/*
 * core/sqlite/kv.c: SQLite reads (get, get-many, list) and the purge of
 * expired rows. A row is live iff expires_at IS NULL OR expires_at > now,
 * with now the engine's clock, bound as a parameter.
 */
#include "sqlite_internal.h"

bitt_entry *bitt__sq_row_entry(sqlite3_stmt *st, int col, const uint8_t *key, size_t key_len)
{
    const void *value = sqlite3_column_blob(st, col);
    size_t value_len = (size_t)sqlite3_column_bytes(st, col);
    return bitt__entry_new(
        key, key_len, value ? value : (const void *)"", value_len, sqlite3_column_int(st, col + 1),
        (uint64_t)sqlite3_column_int64(st, col + 2), sqlite3_column_int64(st, col + 3));
}

/* One lookup with SQ_GET; *out is NULL when absent. */
static int sq_get_one(bitt_backend *be, int64_t now, const uint8_t *key, size_t key_len,
                      bitt_entry **out)
{
    sqlite3_stmt *st = be->stmts[SQ_GET];
    *out = NULL;
    int rc = bitt__sq_bind_bytes(st, 1, key, key_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int status = BITT_OK;
    if (rc == SQLITE_ROW) {
        *out = bitt__sq_row_entry(st, 0, key, key_len);
        if (!*out)
            status = BITT_ENOMEM;
    } else if (rc != SQLITE_DONE) {
        status = bitt__sq_fail(be, rc, "get");
    }
    sqlite3_reset(st);
    return status;
}

int bitt__sq_kv_get(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                    bitt_entry **out)
{
    *out = NULL;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = sq_get_one(be, t->now, key, key_len, out);
    if (status == BITT_OK && !*out)
        status = BITT_NOTFOUND;
    return status;
}

int bitt__sq_kv_get_many(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                         const size_t *key_lens, size_t count, bitt_entries *out)
{
    int status = bitt__sq_schema(be);
    if (status != BITT_OK)
        return status;
    /* One read transaction: every key comes from the same snapshot. */
    if (count > 1 && (status = bitt__sq_begin_read(be, "get_many (BEGIN)")) != BITT_OK)
        return status;
    for (size_t i = 0; i < count && status == BITT_OK; i++) {
        bitt_entry *e;
        status = sq_get_one(be, t->now, keys[i], key_lens[i], &e);
        if (status == BITT_OK)
            status = bitt__entries_push(out, e);
    }
    if (count > 1) {
        if (status == BITT_OK)
            status = bitt__sq_commit(be, "get_many (COMMIT)");
        else
            bitt__sq_rollback(be);
    }
    return status;
}

int bitt__sq_kv_list(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                     bitt_entries *out)
{
    int status = bitt__sq_schema(be);
    if (status != BITT_OK)
        return status;
    bitt_sq_id id = range->has_hi ? (range->reverse ? SQ_LIST_DESC_HI : SQ_LIST_ASC_HI)
                                  : (range->reverse ? SQ_LIST_DESC : SQ_LIST_ASC);
    sqlite3_stmt *st = be->stmts[id];
    int rc = bitt__sq_bind_bytes(st, 1, range->lo, range->lo_len);
    if (rc == SQLITE_OK && range->has_hi)
        rc = bitt__sq_bind_bytes(st, 2, range->hi, range->hi_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, t->now);
    if (rc == SQLITE_OK)
        rc =
            sqlite3_bind_int64(st, 4, range->limit > INT64_MAX ? INT64_MAX : (int64_t)range->limit);
    /* A single statement reads one snapshot. */
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *key = sqlite3_column_blob(st, 0);
        size_t key_len = (size_t)sqlite3_column_bytes(st, 0);
        bitt_entry *e = bitt__sq_row_entry(st, 1, key ? key : (const void *)"", key_len);
        if (!e) {
            status = BITT_ENOMEM;
            break;
        }
        if ((status = bitt__entries_push(out, e)) != BITT_OK)
            break;
        rc = SQLITE_OK;
    }
    if (status == BITT_OK && rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "list");
    sqlite3_reset(st);
    return status;
}

int bitt__sq_kv_purge(bitt_backend *be, const bitt_time *t, uint64_t *removed)
{
    *removed = 0;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = bitt__sq_begin_write(be, "purge (BEGIN IMMEDIATE)");
    if (status != BITT_OK)
        return status;
    sqlite3_stmt *st = be->stmts[SQ_PURGE];
    int rc = sqlite3_bind_int64(st, 1, t->now);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "purge");
    sqlite3_reset(st);
    uint64_t n = (uint64_t)sqlite3_changes(be->db);
    if (status == BITT_OK)
        status = bitt__sq_commit(be, "purge (COMMIT)");
    else
        bitt__sq_rollback(be);
    if (status == BITT_OK)
        *removed = n;
    return status;
}
