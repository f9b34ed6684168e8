/*
 * core/postgres/kv.c: reads (get, get-many, list) and the purge of expired
 * rows. A row is live iff expires_at IS NULL OR expires_at > now (PG_LIVE);
 * every read is one statement, so it reads one snapshot.
 */
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

static const char sql_get[] = "SELECT value, kind, version, expires_at FROM @kv "
                              "WHERE key = $1::bytea AND " PG_LIVE_2;

/* One row per found key, with its position (1-based) in the array. */
static const char sql_get_many[] =
    "SELECT u.i, k.value, k.kind, k.version, k.expires_at "
    "FROM unnest($1::bytea[]) WITH ORDINALITY AS u(key, i) JOIN @kv k ON k.key = u.key "
    "WHERE (k.expires_at IS NULL OR k.expires_at > " PG_NOW_2 ")";

#define LIST_SQL(hi, order, now, limit)                                                            \
    "SELECT key, value, kind, version, expires_at FROM @kv WHERE key >= $1::bytea" hi              \
    " AND " PG_LIVE(now) " ORDER BY key " order " LIMIT $" #limit "::int8"

static const char sql_list_asc[] = LIST_SQL("", "ASC", 2, 3);
static const char sql_list_desc[] = LIST_SQL("", "DESC", 2, 3);
static const char sql_list_asc_hi[] = LIST_SQL(" AND key < $2::bytea", "ASC", 3, 4);
static const char sql_list_desc_hi[] = LIST_SQL(" AND key < $2::bytea", "DESC", 3, 4);

/* Rows a commit holds are skipped, never waited for: a purge takes no
 * advisory lock, so waiting could deadlock with a commit. */
static const char sql_purge[] = "DELETE FROM @kv WHERE key IN (SELECT key FROM @kv "
                                "WHERE expires_at <= " PG_NOW_1 " FOR UPDATE SKIP LOCKED)";

bitt_entry *bitt__pg_row_entry(const PGresult *res, int r, int col, const uint8_t *key,
                               size_t key_len)
{
    size_t len;
    const uint8_t *value = bitt__pg_bytes(res, r, col, &len);
    return bitt__entry_new(key, key_len, value, len, (int)bitt__pg_i64(res, r, col + 1),
                           (uint64_t)bitt__pg_i64(res, r, col + 2), bitt__pg_i64(res, r, col + 3));
}

int bitt__pg_kv_get(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                    bitt_entry **out)
{
    *out = NULL;
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    bitt__pg_p_bytes(&p, key, key_len);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    status = bitt__pg_run1(be, PG_KV_GET, sql_get, &p, &res, "get");
    if (status)
        return status;
    if (PQntuples(res) > 0) {
        *out = bitt__pg_row_entry(res, 0, 0, key, key_len);
        status = *out ? BITT_OK : BITT_ENOMEM;
    } else {
        status = BITT_NOTFOUND;
    }
    PQclear(res);
    return status;
}

int bitt__pg_kv_get_many(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                         const size_t *key_lens, size_t count, bitt_entries *out)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_entry **slots = bitt__calloc(count ? count : 1, sizeof *slots);
    if (!slots)
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory for get_many");
    bitt_buf arr = BITT_BUF_INIT;
    status = bitt__pg_array_bytea(&arr, keys, key_lens, count);
    PGresult *res = NULL;
    if (!status) {
        bitt_pg_params p = {0};
        bitt__pg_p_bytes(&p, arr.ptr, arr.len);
        bitt__pg_p_now(&p, t);
        status = bitt__pg_run1(be, PG_KV_GET_MANY, sql_get_many, &p, &res, "get_many");
    }
    bitt_buf_dispose(&arr);
    for (int r = 0; !status && r < PQntuples(res); r++) {
        int64_t i = bitt__pg_i64(res, r, 0) - 1;
        if (i < 0 || (size_t)i >= count || slots[i])
            continue;
        slots[i] = bitt__pg_row_entry(res, r, 1, keys[i], key_lens[i]);
        if (!slots[i])
            status = BITT_ENOMEM;
    }
    PQclear(res);
    size_t i = 0;
    for (; !status && i < count; i++) {
        status = bitt__entries_push(out, slots[i]);
        slots[i] = NULL; /* taken, or freed by the push */
    }
    for (; i < count; i++)
        bitt_entry_free(slots[i]);
    free(slots);
    return status;
}

int bitt__pg_kv_list(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                     bitt_entries *out)
{
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_id id;
    const char *sql;
    if (range->has_hi) {
        id = range->reverse ? PG_KV_LIST_DESC_HI : PG_KV_LIST_ASC_HI;
        sql = range->reverse ? sql_list_desc_hi : sql_list_asc_hi;
    } else {
        id = range->reverse ? PG_KV_LIST_DESC : PG_KV_LIST_ASC;
        sql = range->reverse ? sql_list_desc : sql_list_asc;
    }
    bitt_pg_params p = {0};
    bitt__pg_p_bytes(&p, range->lo, range->lo_len);
    if (range->has_hi)
        bitt__pg_p_bytes(&p, range->hi, range->hi_len);
    bitt__pg_p_now(&p, t);
    bitt__pg_p_count(&p, range->limit);
    PGresult *res;
    status = bitt__pg_run1(be, id, sql, &p, &res, "list");
    if (status)
        return status;
    for (int r = 0; !status && r < PQntuples(res); r++) {
        size_t key_len;
        const uint8_t *key = bitt__pg_bytes(res, r, 0, &key_len);
        bitt_entry *e = bitt__pg_row_entry(res, r, 1, key, key_len);
        status = e ? bitt__entries_push(out, e) : BITT_ENOMEM;
    }
    PQclear(res);
    return status;
}

int bitt__pg_kv_purge(bitt_backend *be, const bitt_time *t, uint64_t *removed)
{
    *removed = 0;
    int status = bitt__pg_schema(be);
    if (status)
        return status;
    bitt_pg_params p = {0};
    bitt__pg_p_now(&p, t);
    PGresult *res;
    status = bitt__pg_run1(be, PG_KV_PURGE, sql_purge, &p, &res, "purge");
    if (status)
        return status;
    *removed = bitt__pg_changed(res);
    PQclear(res);
    return BITT_OK;
}
