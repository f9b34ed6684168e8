/*
 * core/postgres/outbox.c: per-stream event logs. Appends happen in commits
 * (commit.c): the stream's row in outbox_seq is bumped under the commit's
 * lock on the stream, so sequence numbers increase in commit order and a
 * dispatcher reading "pending in seq order" never skips one. An event is
 * pending (state 0) or parked (state 1), keeping its number either way.
 */
#include <stdlib.h>

#include "postgres/pg_internal.h"

#define EVENT_COLUMNS                                                                              \
    "seq, payload, kind, attempts, next_attempt_at, last_error, created_at, "                      \
    "parked_at, reason"
static const char sql_pending[] = "SELECT " EVENT_COLUMNS " FROM @outbox WHERE stream = $1::text "
                                  "AND state = 0 ORDER BY seq LIMIT $2::int8";
static const char sql_parked_any[] = "SELECT " EVENT_COLUMNS " FROM @outbox "
                                     "WHERE stream = $1::text AND state = 1 ORDER BY seq "
                                     "LIMIT $2::int8";
static const char sql_parked_reason[] =
    "SELECT " EVENT_COLUMNS " FROM @outbox WHERE stream = $1::text AND state = 1 "
    "AND reason = $3::int4 ORDER BY seq LIMIT $2::int8";
static const char sql_ack[] =
    "DELETE FROM @outbox WHERE stream = $1::text AND state = 0 AND seq = ANY($2::int8[])";
static const char sql_fail[] =
    "UPDATE @outbox SET attempts = LEAST(attempts + 1, 4294967295), last_error = $3::text, "
    "next_attempt_at = $4::int8 WHERE stream = $1::text AND seq = $2::int8 AND state = 0";
static const char sql_park[] = "UPDATE @outbox SET state = 1, reason = $3::int4, "
                               "last_error = $4::text, parked_at = " PG_NOW_5 " "
                               "WHERE stream = $1::text AND seq = $2::int8 AND state = 0";
#define UNPARK                                                                                     \
    "UPDATE @outbox SET state = 0, attempts = 0, next_attempt_at = 0, "                            \
    "last_error = NULL, parked_at = 0, reason = 0 WHERE stream = $1::text AND state = 1"
static const char sql_retry_some[] = UNPARK " AND seq = ANY($2::int8[])";
static const char sql_retry_all[] = UNPARK;
static const char sql_discard_some[] =
    "DELETE FROM @outbox WHERE stream = $1::text AND state = 1 AND seq = ANY($2::int8[])";
static const char sql_discard_all[] = "DELETE FROM @outbox WHERE stream = $1::text AND state = 1";
static const char sql_counts[] = "SELECT count(*) FILTER (WHERE state = 0), "
                                 "count(*) FILTER (WHERE state = 1) FROM @outbox "
                                 "WHERE stream = $1::text";

static int push_events(const PGresult *res, const char *stream, bitt_messages *out)
{
    size_t base = out->count;
    int status = BITT_OK;
    for (int r = 0; !status && r < PQntuples(res); r++) {
        size_t len;
        const uint8_t *payload = bitt__pg_bytes(res, r, 1, &len);
        bitt_message f = {
            .id = (uint64_t)bitt__pg_i64(res, r, 0),
            .topic = (char *)stream,
            .payload = (uint8_t *)payload,
            .payload_len = len,
            .kind = (int)bitt__pg_i64(res, r, 2),
            .attempts = (uint32_t)bitt__pg_i64(res, r, 3),
            .due_at = bitt__pg_i64(res, r, 4),
            .last_error = (char *)bitt__pg_text(res, r, 5),
            .created_at = bitt__pg_i64(res, r, 6),
            .failed_at = bitt__pg_i64(res, r, 7),
            .park_reason = (int)bitt__pg_i64(res, r, 8),
        };
        status = bitt__pg_push_message(out, &f);
    }
    if (status)
        bitt__pg_messages_truncate(out, base);
    return status;
}

/* Runs one statement after the schema check; *res when wanted. */
static int run(bitt_backend *be, bitt_pg_id id, const char *sql, bitt_pg_params *p, PGresult **res,
               const char *what)
{
    int status = bitt__pg_schema(be);
    return status ? status : bitt__pg_run1(be, id, sql, p, res, what);
}

int bitt__pg_outbox_pending(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                            bitt_messages *out)
{
    (void)t; /* every pending event, whatever its next attempt time */
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, stream);
    bitt__pg_p_count(&p, limit);
    PGresult *res;
    int status = run(be, PG_O_PENDING, sql_pending, &p, &res, "outbox pending");
    if (status)
        return status;
    status = push_events(res, stream, out);
    PQclear(res);
    return status;
}

int bitt__pg_outbox_parked(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                           size_t limit, bitt_messages *out)
{
    (void)t;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, stream);
    bitt__pg_p_count(&p, limit);
    if (reason)
        bitt__pg_p_i32(&p, reason);
    PGresult *res;
    int status = run(be, reason ? PG_O_PARKED_REASON : PG_O_PARKED_ANY,
                     reason ? sql_parked_reason : sql_parked_any, &p, &res, "outbox parked");
    if (status)
        return status;
    status = push_events(res, stream, out);
    PQclear(res);
    return status;
}

/* Runs a statement on (stream, seqs as int8[]); *changed gets the rows it
 * changed. */
static int with_seqs(bitt_backend *be, bitt_pg_id id, const char *sql, const char *stream,
                     const uint64_t *seqs, size_t count, uint64_t *changed, const char *what)
{
    bitt_buf arr = BITT_BUF_INIT;
    int status = BITT_OK;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, stream);
    if (seqs && count) {
        int64_t *v = bitt__malloc(count * sizeof *v);
        if (!v)
            return bitt__fail(BITT_ENOMEM, "postgres: out of memory");
        for (size_t i = 0; i < count; i++)
            v[i] = seqs[i] > INT64_MAX ? -1 : (int64_t)seqs[i];
        status = bitt__pg_array_int8(&arr, v, count);
        free(v);
        bitt__pg_p_bytes(&p, arr.ptr, arr.len);
    }
    PGresult *res = NULL;
    if (!status)
        status = run(be, id, sql, &p, &res, what);
    bitt_buf_dispose(&arr);
    if (!status && changed)
        *changed = bitt__pg_changed(res);
    PQclear(res);
    return status;
}

int bitt__pg_outbox_ack(bitt_backend *be, const bitt_time *t, const char *stream,
                        const uint64_t *seqs, size_t count, uint64_t *acked)
{
    (void)t;
    return with_seqs(be, PG_O_ACK, sql_ack, stream, seqs, count, acked, "outbox ack");
}

int bitt__pg_outbox_fail(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         const char *error, int64_t next_attempt_at)
{
    (void)t;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, stream);
    bitt__pg_p_i64(&p, seq > INT64_MAX ? -1 : (int64_t)seq);
    bitt__pg_p_text(&p, error);
    bitt__pg_p_i64(&p, next_attempt_at);
    PGresult *res;
    int status = run(be, PG_O_FAIL, sql_fail, &p, &res, "outbox fail");
    if (status)
        return status;
    status = bitt__pg_changed(res) ? BITT_OK : BITT_NOTFOUND;
    PQclear(res);
    return status;
}

int bitt__pg_outbox_park(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         int reason, const char *error)
{
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, stream);
    bitt__pg_p_i64(&p, seq > INT64_MAX ? -1 : (int64_t)seq);
    bitt__pg_p_i32(&p, reason);
    bitt__pg_p_text(&p, error);
    bitt__pg_p_now(&p, t);
    PGresult *res;
    int status = run(be, PG_O_PARK, sql_park, &p, &res, "outbox park");
    if (status)
        return status;
    status = bitt__pg_changed(res) ? BITT_OK : BITT_NOTFOUND;
    PQclear(res);
    return status;
}

int bitt__pg_outbox_retry(bitt_backend *be, const bitt_time *t, const char *stream,
                          const uint64_t *seqs, size_t count, uint64_t *moved)
{
    (void)t;
    int some = seqs && count;
    return with_seqs(be, some ? PG_O_RETRY_SOME : PG_O_RETRY_ALL,
                     some ? sql_retry_some : sql_retry_all, stream, seqs, count, moved,
                     "outbox retry");
}

int bitt__pg_outbox_discard(bitt_backend *be, const bitt_time *t, const char *stream,
                            const uint64_t *seqs, size_t count, uint64_t *deleted)
{
    (void)t;
    int some = seqs && count;
    return with_seqs(be, some ? PG_O_DISCARD_SOME : PG_O_DISCARD_ALL,
                     some ? sql_discard_some : sql_discard_all, stream, seqs, count, deleted,
                     "outbox discard");
}

int bitt__pg_outbox_counts(bitt_backend *be, const bitt_time *t, const char *stream,
                           uint64_t *pending, uint64_t *parked)
{
    (void)t;
    bitt_pg_params p = {0};
    bitt__pg_p_text(&p, stream);
    PGresult *res;
    int status = run(be, PG_O_COUNTS, sql_counts, &p, &res, "outbox counts");
    if (status)
        return status;
    if (pending)
        *pending = (uint64_t)bitt__pg_i64(res, 0, 0);
    if (parked)
        *parked = (uint64_t)bitt__pg_i64(res, 0, 1);
    PQclear(res);
    return BITT_OK;
}
