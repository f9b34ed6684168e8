/*
 * core/sqlite/pubsub.c: the publish/subscribe log.
 *
 * Every published message is a row of <p>pubsub with an AUTOINCREMENT id:
 * ids increase store-wide in commit order (writers are serialized) and are
 * never reused, so a subscription that remembers the last id it saw and
 * fetches "id > that" on its channel gets each message once, in order.
 * A message is kept while now < its publish time + retention (expires_at,
 * like a KV TTL): fetches skip the ones past it and publishing deletes
 * them in its transaction. Messages carry no kind: they read as
 * BITT_KIND_BYTES.
 */
#include "sqlite_internal.h"

#define P_PRUNE_SQL "DELETE FROM \"{p}pubsub\" WHERE expires_at <= ?1"
#define P_INSERT_SQL                                                                               \
    "INSERT INTO \"{p}pubsub\" (channel, payload, created_at, expires_at) "                        \
    "VALUES (?1, ?2, ?3, ?4)"
/* The last id handed out, even when its row is pruned already. */
#define P_HEAD_SQL                                                                                 \
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = '{p}pubsub'), 0), "         \
    "coalesce((SELECT max(id) FROM \"{p}pubsub\"), 0))"
#define P_FETCH_SQL                                                                                \
    "SELECT id, payload, created_at FROM \"{p}pubsub\" WHERE channel = ?1 AND id > ?2 "            \
    "AND expires_at > ?4 ORDER BY id LIMIT ?3"

int bitt__sq_pubsub_publish(bitt_backend *be, const bitt_time *t, const char *channel,
                            const uint8_t *data, size_t len, int64_t retention_ms)
{
    sqlite3_stmt *st;
    int status = bitt__sq_write(be, "pubsub publish (BEGIN IMMEDIATE)");
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_P_PRUNE, P_PRUNE_SQL, &st);
    if (status == BITT_OK)
        status =
            bitt__sq_run(be, st, sqlite3_bind_int64(st, 1, t->now), "pubsub publish (prune)", NULL);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_P_INSERT, P_INSERT_SQL, &st);
    if (status == BITT_OK) {
        int rc = bitt__sq_bind_str(st, 1, channel);
        if (rc == SQLITE_OK)
            rc = bitt__sq_bind_bytes(st, 2, data, len);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 3, t->now);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 4, bitt__time_add(t->now, retention_ms));
        status = bitt__sq_run(be, st, rc, "pubsub publish", NULL);
    }
    return bitt__sq_end(be, status, "pubsub publish (COMMIT)");
}

int bitt__sq_pubsub_head(bitt_backend *be, const bitt_time *t, uint64_t *last_id)
{
    (void)t;
    *last_id = 0;
    sqlite3_stmt *st;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_P_HEAD, P_HEAD_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *last_id = (uint64_t)sqlite3_column_int64(st, 0);
    else
        status = bitt__sq_fail(be, rc, "pubsub head");
    sqlite3_reset(st);
    return status;
}

int bitt__sq_pubsub_fetch(bitt_backend *be, const bitt_time *t, const char *channel,
                          uint64_t after_id, size_t limit, bitt_messages *out)
{
    size_t base = out->count;
    sqlite3_stmt *st;
    int status = bitt__sq_schema(be);
    if (status == BITT_OK)
        status = bitt__sq_stmt(be, SQ_P_FETCH, P_FETCH_SQL, &st);
    if (status != BITT_OK)
        return status;
    int rc = bitt__sq_bind_str(st, 1, channel);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, after_id > INT64_MAX ? INT64_MAX : (int64_t)after_id);
    if (rc == SQLITE_OK)
        rc = bitt__sq_bind_count(st, 3, limit);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, t->now);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        bitt_message f = {0};
        f.id = (uint64_t)sqlite3_column_int64(st, 0);
        f.topic = (char *)channel;
        f.payload = (uint8_t *)bitt__sq_column_bytes(st, 1, &f.payload_len);
        f.kind = BITT_KIND_BYTES;
        f.created_at = sqlite3_column_int64(st, 2);
        if ((status = bitt__sq_push_message(out, &f)) != BITT_OK)
            break;
        rc = SQLITE_OK;
    }
    if (status == BITT_OK && rc != SQLITE_DONE)
        status = bitt__sq_fail(be, rc, "pubsub fetch");
    sqlite3_reset(st);
    if (status != BITT_OK)
        bitt__sq_messages_truncate(out, base);
    return status;
}
