/*
 * core/redis/outbox.c: the outbox calls on Redis (scripts in outbox_lua.c;
 * appends are commit ops, commit_lua.c). Sequence numbers come from P os,
 * one counter per stream kept forever, so a number is never handed out
 * twice; an event moves between pending and parked keeping its number.
 */
#include <string.h>

#include "redis_internal.h"

static void stream_args(bitt_backend *be, bitt_rd_args *a, const bitt_time *t, const char *stream)
{
    bitt__rd_script_args(be, a, t);
    bitt__rd_arg_str(a, stream);
}

/* Runs a script answering {0, n}: *n gets n. Returns its status. */
static int run_count(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a, uint64_t *n)
{
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, id, a, 1, &r);
    if (rc < 0)
        return rc;
    const char *what = bitt__rd_scripts[id].name;
    uint64_t v = 0;
    int status = rc;
    if (r->elements > 1)
        rc = bitt__rd_u64(r, 1, &v, what);
    freeReplyObject(r);
    if (rc < 0)
        return rc;
    if (n)
        *n = v;
    return status;
}

static int run_list(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a, size_t limit,
                    bitt_messages *out)
{
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, id, a, limit, &r);
    if (rc)
        return rc;
    rc = bitt__rd_push_messages(r, 1, BITT_RD_MSG_FIELDS, out, bitt__rd_scripts[id].name);
    freeReplyObject(r);
    return rc;
}

int bitt__rd_outbox_pending(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                            bitt_messages *out)
{
    bitt_rd_args a;
    stream_args(be, &a, t, stream);
    bitt__rd_arg_u64(&a, limit);
    return run_list(be, RS_O_PENDING, &a, limit, out);
}

int bitt__rd_outbox_parked(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                           size_t limit, bitt_messages *out)
{
    bitt_rd_args a;
    stream_args(be, &a, t, stream);
    bitt__rd_arg_i64(&a, reason);
    bitt__rd_arg_u64(&a, limit);
    return run_list(be, RS_O_PARKED, &a, limit, out);
}

int bitt__rd_outbox_ack(bitt_backend *be, const bitt_time *t, const char *stream,
                        const uint64_t *seqs, size_t count, uint64_t *acked)
{
    bitt_rd_args a;
    stream_args(be, &a, t, stream);
    for (size_t i = 0; i < count; i++)
        bitt__rd_arg_u64(&a, seqs[i]);
    return run_count(be, RS_O_ACK, &a, acked);
}

int bitt__rd_outbox_fail(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         const char *error, int64_t next_attempt_at)
{
    bitt_rd_args a;
    stream_args(be, &a, t, stream);
    bitt__rd_arg_u64(&a, seq);
    bitt__rd_arg_str(&a, error ? "1" : "0");
    bitt__rd_arg_str(&a, error ? error : "");
    bitt__rd_arg_i64(&a, next_attempt_at);
    return run_count(be, RS_O_FAIL, &a, NULL);
}

int bitt__rd_outbox_park(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         int reason, const char *error)
{
    bitt_rd_args a;
    stream_args(be, &a, t, stream);
    bitt__rd_arg_u64(&a, seq);
    bitt__rd_arg_i64(&a, reason);
    bitt__rd_arg_str(&a, error ? "1" : "0");
    bitt__rd_arg_str(&a, error ? error : "");
    return run_count(be, RS_O_PARK, &a, NULL);
}

static int move(bitt_backend *be, const bitt_time *t, const char *stream, const char *action,
                const uint64_t *seqs, size_t count, uint64_t *n)
{
    bitt_rd_args a;
    stream_args(be, &a, t, stream);
    bitt__rd_arg_str(&a, action);
    for (size_t i = 0; i < count; i++)
        bitt__rd_arg_u64(&a, seqs[i]);
    return run_count(be, RS_O_MOVE, &a, n);
}

int bitt__rd_outbox_retry(bitt_backend *be, const bitt_time *t, const char *stream,
                          const uint64_t *seqs, size_t count, uint64_t *moved)
{
    return move(be, t, stream, "retry", seqs, count, moved);
}

int bitt__rd_outbox_discard(bitt_backend *be, const bitt_time *t, const char *stream,
                            const uint64_t *seqs, size_t count, uint64_t *deleted)
{
    return move(be, t, stream, "discard", seqs, count, deleted);
}

int bitt__rd_outbox_counts(bitt_backend *be, const bitt_time *t, const char *stream,
                           uint64_t *pending, uint64_t *parked)
{
    bitt_rd_args a;
    stream_args(be, &a, t, stream);
    redisReply *r = NULL;
    int rc = bitt__rd_run(be, RS_O_COUNTS, &a, 1, &r);
    if (rc)
        return rc;
    uint64_t p = 0, q = 0;
    rc = bitt__rd_elem_count(r, 1, 2, "outbox counts");
    if (!rc)
        rc = bitt__rd_u64(r, 1, &p, "outbox counts");
    if (!rc)
        rc = bitt__rd_u64(r, 2, &q, "outbox counts");
    freeReplyObject(r);
    if (!rc && pending)
        *pending = p;
    if (!rc && parked)
        *parked = q;
    return rc;
}
