/*
 * core/postgres/commit.c: atomic commits on PostgreSQL.
 *
 * Locking. A commit first takes pg_advisory_xact_lock on a key per KV key
 * it checks or writes, per (topic, dedup key) it enqueues and per outbox
 * stream it appends to, all in one statement and in ascending key order
 * (so two commits never deadlock). Every writer of those takes them, so a
 * check on an absent key serializes too; rows read by checks are locked
 * FOR UPDATE, leases read by fences FOR SHARE. A queue op (ack ...
 * reschedule of a message by id) locks a key per message and then, after
 * its topic's sweep, the message's row FOR UPDATE (queue_txn.c); a
 * schedule advance locks a key per schedule, then its row FOR UPDATE
 * (schedule.c). Only
 * then is the versionstamp taken (nextval once per commit), so a key's versions
 * increase in commit order. Two commits against one version cannot both
 * succeed: the second waits for the first's locks and then reads its row.
 *
 * Stamp order. A versionstamp is a sequence value taken inside the
 * transaction, and PostgreSQL makes transactions visible as they finish,
 * not in the order they took their stamps: a big commit that took V could
 * become visible after a set of another key took V+1 and was acknowledged,
 * and a reader that had seen V+1 would then find a new commit below it.
 * The rule (docs/semantics.md): once a commit with stamp V is visible, no
 * commit with a lower stamp becomes visible later. So every commit that
 * takes a stamp (enqueues and appends too: the stamp is handed back) first
 * takes the store's stamp order lock, pg_advisory_xact_lock on a key of
 * the store's schema and prefix, right before nextval, and holds it until
 * COMMIT has made it visible (transaction locks are released after that):
 * stamps are handed out in the order commits become visible. The lock
 * comes after the key locks and the reads, so those and their waits stay
 * parallel; only the tail is serialized: stamp, mutations, the commit's WAL
 * flush. The tail never waits for a lock that a waiter for the stamp order
 * lock may hold: it writes only rows under the key locks it holds (the
 * queue sweeps, which may wait for a row, run before the lock). The lone
 * sets that set_group.c groups share one tail.
 *
 * Why no design that keeps concurrent WAL flushes (group commit): a
 * transaction becomes visible after its commit record is flushed, and
 * nothing it runs comes after that flush, so two stamped commits flushing
 * at once may become visible in either order. Ordering them otherwise takes
 * visibility before durability (synchronous_commit=off: a crash can undo
 * what a reader saw), or readers hiding committed rows above an in-flight
 * stamp (a get after one's own set would miss it, and the row's earlier
 * value is gone). Neither keeps bitt's guarantees; the serialized tail
 * does, at one commit flush at a time per store (sets grouped in one
 * transaction share it). Other stores, in other schemas or prefixes, keep
 * flushing together.
 *
 * Round trips. A commit without checks or fences is one pipeline in one
 * implicit transaction: key locks, queue sweeps, the stamp order lock,
 * versionstamp, every mutation in op order
 * (each sees the ones before it), NOTIFY when it enqueues. With checks,
 * fences, queue ops or schedule advances it is two: BEGIN, locks and the
 * reads; then, once every check passed (a queue op's delivery is a check,
 * and so is a schedule advance's occurrence), the same
 * mutations and COMMIT. A sum refuses a non-counter or an
 * int64 overflow with an error of its statement, which rolls everything
 * back.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

static const char sql_check[] =
    "SELECT version FROM @kv WHERE key = $1::bytea AND " PG_LIVE_2 " FOR UPDATE";
static const char sql_fence[] =
    "SELECT 1 FROM @lease WHERE name = $1::text AND owner = $2::text AND epoch = $3::int8 "
    "AND expires_at > " PG_NOW_4 " FOR SHARE";
static const char sql_order[] = "SELECT pg_advisory_xact_lock($1::int8)";
static const char sql_stamp[] = "SELECT nextval('@versionstamp')";
#define SET_SQL(version, returning)                                                                \
    "INSERT INTO @kv AS t (key, value, kind, version, expires_at) VALUES ($1::bytea, $2::bytea, "  \
    "$3::int4, " version ", CASE WHEN $4::int8 = 0 THEN NULL ELSE " PG_NOW_5_PLUS_4 " END) "       \
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value, kind = excluded.kind, "               \
    "version = excluded.version, expires_at = excluded.expires_at" returning
/* A set of a commit, at the commit's stamp. */
static const char sql_set[] = SET_SQL("currval('@versionstamp')", "");
/* A lone set of a group, taking its own stamp: one statement, not two, in
 * the serialized tail (the VALUES row, and so nextval, is made once). */
static const char sql_set_stamped[] = SET_SQL("nextval('@versionstamp')", " RETURNING version");
static const char sql_delete[] = "DELETE FROM @kv WHERE key = $1::bytea RETURNING " PG_LIVE_2;
static const char sql_delete_old[] = "DELETE FROM @kv WHERE key = $1::bytea "
                                     "RETURNING value, kind, version, expires_at, " PG_LIVE_2;
/* A live counter gains delta (keeping its expiry); an absent or expired
 * key becomes delta with the op's ttl; a live value of another kind fails
 * the cast with "bitt: not a counter: KIND" (22P02), an overflow with
 * 22003. */
#define SUM_EXPIRED "(t.expires_at IS NOT NULL AND t.expires_at <= " PG_NOW_4 ")"
static const char sql_sum[] =
    "INSERT INTO @kv AS t (key, value, kind, version, expires_at) VALUES ($1::bytea, "
    "convert_to($2::int8::text, 'UTF8'), 2, currval('@versionstamp'), "
    "CASE WHEN $3::int8 = 0 THEN NULL ELSE " PG_NOW_4_PLUS_3 " END) "
    "ON CONFLICT (key) DO UPDATE SET "
    "value = CASE WHEN " SUM_EXPIRED " THEN excluded.value "
    "ELSE convert_to(((CASE WHEN t.kind = 2 THEN convert_from(t.value, 'UTF8') "
    "ELSE 'bitt: not a counter: ' || t.kind END)::int8 + $2::int8)::text, 'UTF8') END, "
    "kind = 2, version = excluded.version, "
    "expires_at = CASE WHEN " SUM_EXPIRED " THEN excluded.expires_at ELSE t.expires_at END "
    "RETURNING value";
/* The new message's id, or the id of the live message holding the dedup
 * key (deduped = true). The topic was swept first, and the dedup key is
 * locked, so `h` is exact. */
static const char sql_enqueue[] =
    "WITH h AS (SELECT id FROM @queue WHERE $6::bytea IS NOT NULL AND topic = $1::text "
    "AND dedup_key = $6::bytea "
    "AND NOT (state = 1 AND attempts >= max_attempts AND due_at <= " PG_NOW_7 ")), "
    "ins AS (INSERT INTO @queue (topic, state, due_at, attempts, max_attempts, token, "
    "last_error, payload, kind, created_at, failed_at, dedup_key, priority) "
    "SELECT $1::text, 0, " PG_NOW_7_PLUS_4
    ", 0, $5::int8, NULL, NULL, $2::bytea, $3::int4, " PG_NOW_7
    ", 0, $6::bytea, $8::int4 WHERE NOT EXISTS (SELECT 1 FROM h) RETURNING id) "
    "SELECT id, false FROM ins UNION ALL SELECT id, true FROM h";
static const char sql_outbox[] =
    "WITH s AS (INSERT INTO @outbox_seq AS q (stream, last) VALUES ($1::text, 1) "
    "ON CONFLICT (stream) DO UPDATE SET last = q.last + 1 RETURNING last) "
    "INSERT INTO @outbox (stream, seq, state, payload, kind, attempts, next_attempt_at, "
    "last_error, created_at, parked_at, reason) SELECT $1::text, s.last, 0, $2::bytea, "
    "$3::int4, 0, 0, NULL, " PG_NOW_4 ", 0, 0 FROM s RETURNING seq";

/* What a commit builds: its steps, their parameters, and where each op's
 * statement sits. */
typedef struct plan {
    bitt_pg_step *steps;
    bitt_pg_params *params;
    int *op_step;      /* by op: its mutation's step, or -1 */
    int *read_step;    /* by op: its check, fence or message read (batch 1), or -1 */
    bitt_pg_qop *qops; /* by op: a queue op's verdict */
    int64_t *keys;
    size_t nkeys;
    bitt_buf lock_buf;
    int n;
} plan;

static bitt_pg_params *add(plan *pl, bitt_pg_id id, const char *sql)
{
    bitt_pg_params *p = &pl->params[pl->n];
    memset(p, 0, sizeof *p);
    pl->steps[pl->n] = (bitt_pg_step){id, sql, p, NULL};
    pl->n++;
    return p;
}

static void free_plan(plan *pl)
{
    free(pl->steps);
    free(pl->params);
    free(pl->op_step);
    free(pl->read_step);
    free(pl->qops);
    free(pl->keys);
    bitt_buf_dispose(&pl->lock_buf);
}

/* The lock keys of every op; returns how many ops want a read first. */
static size_t gather_keys(const bitt_backend *be, const bitt_commit *c, plan *pl)
{
    size_t reads = 0;
    for (size_t i = 0; i < c->count; i++) {
        const bitt_op *op = &c->ops[i];
        switch (op->type) {
        case BITT_OP_CHECK:
        case BITT_OP_SET:
        case BITT_OP_DELETE:
        case BITT_OP_SUM:
            pl->keys[pl->nkeys++] = bitt__pg_lock_key(be, 'k', op->key, op->key_len, NULL, 0);
            break;
        case BITT_OP_ENQUEUE:
            if (op->aux)
                pl->keys[pl->nkeys++] =
                    bitt__pg_lock_key(be, 'd', op->name, strlen(op->name), op->aux, op->aux_len);
            break;
        case BITT_OP_OUTBOX_APPEND:
            pl->keys[pl->nkeys++] = bitt__pg_lock_key(be, 'o', op->name, strlen(op->name), NULL, 0);
            break;
        case BITT_OP_SCHEDULE_ADVANCE:
            pl->keys[pl->nkeys++] = bitt__pg_schedule_lock_key(be, op);
            break;
        default:
            if (bitt__op_is_queue_by_id(op))
                pl->keys[pl->nkeys++] = bitt__pg_qop_lock_key(be, op);
            break;
        }
        reads += op->type == BITT_OP_CHECK || op->type == BITT_OP_FENCE ||
                 op->type == BITT_OP_SCHEDULE_ADVANCE || bitt__op_is_queue_by_id(op);
    }
    return reads;
}

/* Whether op is the first queue op of a commit on its topic. */
static int first_on_topic(const bitt_commit *c, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (bitt__op_is_queue_by_id(&c->ops[j]) && !strcmp(c->ops[j].name, c->ops[i].name))
            return 0;
    return 1;
}

/* The whole sweep of topic (bitt__pg_sweep_steps) as steps of pl. */
static void add_sweep(const bitt_backend *be, plan *pl, const char *topic, const bitt_time *t)
{
    pl->n += bitt__pg_sweep_steps(be, topic, NULL, t, &pl->steps[pl->n], &pl->params[pl->n]);
}

/* The reads of batch 1: the sweep of each queue op's topic, then every
 * check, fence, queue op's message and schedule advance's schedule, in op
 * order. */
static void add_reads(const bitt_backend *be, plan *pl, const bitt_commit *c)
{
    for (size_t i = 0; i < c->count; i++)
        if (bitt__op_is_queue_by_id(&c->ops[i]) && first_on_topic(c, i))
            add_sweep(be, pl, c->ops[i].name, &c->time);
    for (size_t i = 0; i < c->count; i++) {
        const bitt_op *op = &c->ops[i];
        bitt_pg_params *p;
        if (bitt__op_is_queue_by_id(op)) {
            pl->read_step[i] = pl->n;
            bitt__pg_qop_read(op, &c->time, &pl->steps[pl->n], &pl->params[pl->n]);
            pl->n++;
        } else if (op->type == BITT_OP_SCHEDULE_ADVANCE) {
            pl->read_step[i] = pl->n;
            bitt__pg_schedule_read(op, &pl->steps[pl->n], &pl->params[pl->n]);
            pl->n++;
        } else if (op->type == BITT_OP_CHECK) {
            pl->read_step[i] = pl->n;
            p = add(pl, PG_C_CHECK, sql_check);
            bitt__pg_p_bytes(p, op->key, op->key_len);
            bitt__pg_p_now(p, &c->time);
        } else if (op->type == BITT_OP_FENCE) {
            pl->read_step[i] = pl->n;
            p = add(pl, PG_C_FENCE, sql_fence);
            bitt__pg_p_text(p, op->name);
            bitt__pg_p_text(p, op->owner);
            bitt__pg_p_i64(p, (int64_t)op->version);
            bitt__pg_p_now(p, &c->time);
        }
    }
}

static bitt_pg_params *add_set(plan *pl, bitt_pg_id id, const bitt_op *op, const bitt_time *t)
{
    bitt_pg_params *p = add(pl, id, id == PG_C_SET ? sql_set : sql_set_stamped);
    bitt__pg_p_bytes(p, op->key, op->key_len);
    bitt__pg_p_bytes(p, op->value, op->value_len);
    bitt__pg_p_i32(p, op->kind);
    bitt__pg_p_i64(p, op->ttl_ms);
    bitt__pg_p_now(p, t);
    return p;
}

/* The stamp order lock, then the versionstamp: see the top of this file.
 * The lock's key is the store's (schema and prefix), so stores that share
 * a database do not wait for each other. */
static void add_order(const bitt_backend *be, plan *pl)
{
    int64_t key = bitt__pg_lock_key(be, 's', "versionstamp", 12, NULL, 0);
    bitt__pg_p_i64(add(pl, PG_C_ORDER, sql_order), key);
}

static int add_stamp(const bitt_backend *be, plan *pl)
{
    add_order(be, pl);
    int at = pl->n;
    add(pl, PG_C_STAMP, sql_stamp);
    return at;
}

/* The sweeps of the topics that enqueue with a dedup key, the stamp, then
 * every mutation in op order, and a NOTIFY when it enqueues or a queue op
 * may have made a message claimable (bitt__op_makes_claimable). The sweeps
 * come before the stamp order lock: they may wait for a queue row another
 * commit holds, and that commit may be waiting for the stamp order lock. */
static void add_writes(const bitt_backend *be, plan *pl, const bitt_commit *c, int *stamp_step)
{
    int wake = 0; /* a NOTIFY: it may have made a message claimable */
    for (size_t i = 0; i < c->count; i++) {
        const bitt_op *op = &c->ops[i];
        if (op->type != BITT_OP_ENQUEUE)
            continue;
        wake = 1;
        int seen = !op->aux;
        for (size_t j = 0; j < i && !seen; j++)
            seen = c->ops[j].type == BITT_OP_ENQUEUE && c->ops[j].aux &&
                   !strcmp(c->ops[j].name, op->name);
        if (!seen)
            add_sweep(be, pl, op->name, &c->time);
    }
    *stamp_step = add_stamp(be, pl);
    for (size_t i = 0; i < c->count; i++) {
        const bitt_op *op = &c->ops[i];
        bitt_pg_params *p = NULL;
        int at = pl->n;
        switch (op->type) {
        case BITT_OP_SET: p = add_set(pl, PG_C_SET, op, &c->time); break;
        case BITT_OP_DELETE:
            p = op->want_old ? add(pl, PG_C_DELETE_OLD, sql_delete_old)
                             : add(pl, PG_C_DELETE, sql_delete);
            bitt__pg_p_bytes(p, op->key, op->key_len);
            bitt__pg_p_now(p, &c->time);
            break;
        case BITT_OP_SUM:
            p = add(pl, PG_C_SUM, sql_sum);
            bitt__pg_p_bytes(p, op->key, op->key_len);
            bitt__pg_p_i64(p, op->delta);
            bitt__pg_p_i64(p, op->ttl_ms);
            bitt__pg_p_now(p, &c->time);
            break;
        case BITT_OP_ENQUEUE:
            p = add(pl, PG_C_ENQUEUE, sql_enqueue);
            bitt__pg_p_text(p, op->name);
            bitt__pg_p_bytes(p, op->value, op->value_len);
            bitt__pg_p_i32(p, op->kind);
            bitt__pg_p_i64(p, op->delay_ms);
            bitt__pg_p_i64(p, op->max_attempts);
            if (op->aux)
                bitt__pg_p_bytes(p, op->aux, op->aux_len);
            else
                bitt__pg_p_null(p);
            bitt__pg_p_now(p, &c->time);
            bitt__pg_p_i32(p, op->priority);
            break;
        case BITT_OP_OUTBOX_APPEND:
            p = add(pl, PG_C_OUTBOX, sql_outbox);
            bitt__pg_p_text(p, op->name);
            bitt__pg_p_bytes(p, op->value, op->value_len);
            bitt__pg_p_i32(p, op->kind);
            bitt__pg_p_now(p, &c->time);
            break;
        case BITT_OP_SCHEDULE_ADVANCE:
            p = &pl->params[pl->n];
            bitt__pg_schedule_write(op, &pl->steps[pl->n], p);
            pl->n++;
            break;
        default:
            if (!bitt__op_is_queue_by_id(op) || !pl->qops[i].write)
                break;
            p = &pl->params[pl->n];
            bitt__pg_qop_write(be, op, &pl->qops[i], c->backoff, &pl->steps[pl->n], p);
            pl->n++;
            /* Waiters in other processes hear of it as of an enqueue. */
            wake |= bitt__op_makes_claimable(op);
            break;
        }
        if (p)
            pl->op_step[i] = at;
    }
    if (wake)
        bitt__pg_notify_params(be, add(pl, PG_NOTIFY, bitt__pg_notify_sql));
}

/* Batch 1's verdict: the first failing check, fence or delivery, in op
 * order; what each queue op writes. */
static int judge_reads(plan *pl, bitt_commit *c)
{
    for (size_t i = 0; i < c->count; i++) {
        bitt_op *op = &c->ops[i];
        if (pl->read_step[i] < 0)
            continue;
        const PGresult *res = pl->steps[pl->read_step[i]].res;
        int found = PQntuples(res) > 0;
        if (bitt__op_is_queue_by_id(op)) {
            int rc = bitt__pg_qop_judge(op, res, &pl->qops[i]);
            if (rc) {
                c->failed = i;
                return rc;
            }
            continue;
        }
        if (op->type == BITT_OP_FENCE) {
            if (!found) {
                c->failed = i;
                return bitt__pg_lease_lost(op->name, op->owner, op->version);
            }
            continue;
        }
        if (op->type == BITT_OP_SCHEDULE_ADVANCE) {
            int rc = bitt__pg_schedule_judge(op, res);
            if (rc) {
                c->failed = i;
                return rc;
            }
            continue;
        }
        uint64_t current = found ? (uint64_t)bitt__pg_i64(res, 0, 0) : 0;
        if (current != op->version) {
            c->failed = i;
            if (op->version == 0)
                return bitt__fail(BITT_ECONFLICT, "atomic check %zu failed: the key must be absent",
                                  i);
            return bitt__fail(BITT_ECONFLICT,
                              "atomic check %zu failed: the key is at version %" PRIu64
                              ", expected %" PRIu64,
                              i, current, op->version);
        }
    }
    return BITT_OK;
}

/* The op results of batch 2. */
static int take_results(plan *pl, bitt_commit *c, int stamp_step)
{
    c->version = (uint64_t)bitt__pg_i64(pl->steps[stamp_step].res, 0, 0);
    for (size_t i = 0; i < c->count; i++) {
        bitt_op *op = &c->ops[i];
        if (pl->op_step[i] < 0)
            continue;
        const PGresult *res = pl->steps[pl->op_step[i]].res;
        int rows = PQntuples(res);
        switch (op->type) {
        case BITT_OP_DELETE: {
            int live_col = op->want_old ? 4 : 0;
            op->found = rows > 0 && bitt__pg_i64(res, 0, live_col);
            if (op->found && op->want_old) {
                op->old = bitt__pg_row_entry(res, 0, 0, op->key, op->key_len);
                if (!op->old) /* the server has committed the delete: say so */
                    return bitt__fail(BITT_ENOMEM, "postgres: commit was applied, but out of "
                                                   "memory for the value it took: that value "
                                                   "is lost");
            }
            break;
        }
        case BITT_OP_SUM: {
            size_t len = 0;
            const uint8_t *text = rows ? bitt__pg_bytes(res, 0, 0, &len) : NULL;
            if (!text || bitt__counter_parse(text, len, &op->result) != BITT_OK)
                return bitt__fail(BITT_EBACKEND,
                                  "postgres: commit: op %zu: the new counter "
                                  "value did not come back",
                                  i);
            break;
        }
        case BITT_OP_ENQUEUE:
            op->id = rows ? (uint64_t)bitt__pg_i64(res, 0, 0) : 0;
            op->deduped = rows ? (int)bitt__pg_i64(res, 0, 1) : 0;
            break;
        case BITT_OP_OUTBOX_APPEND: op->id = rows ? (uint64_t)bitt__pg_i64(res, 0, 0) : 0; break;
        default: break;
        }
    }
    return BITT_OK;
}

static const char *kind_name(long kind)
{
    switch (kind) {
    case BITT_KIND_BYTES: return "bytes";
    case BITT_KIND_JSON: return "json";
    case BITT_KIND_COUNTER: return "counter";
    default: return NULL;
    }
}

/* A failed mutation statement: a sum's refusals get the engine's codes. */
static int explain_failure(const bitt_backend *be, const plan *pl, bitt_commit *c, int status)
{
    for (size_t i = 0; i < c->count; i++) {
        if (pl->op_step[i] != be->failed_step || be->failed_step < 0)
            continue;
        c->failed = i;
        if (c->ops[i].type != BITT_OP_SUM)
            break;
        if (!strcmp(be->sqlstate, "22003"))
            return bitt__fail(BITT_EOVERFLOW,
                              "counter overflow: adding %lld leaves the int64 "
                              "range",
                              (long long)c->ops[i].delta);
        const char *at = strstr(bitt_error_last(), "not a counter: ");
        if (!strcmp(be->sqlstate, "22P02") && at) {
            long kind = strtol(at + 15, NULL, 10);
            const char *name = kind_name(kind);
            if (name)
                return bitt__fail(BITT_ENOTCOUNTER, "value of kind %s is not a counter", name);
            return bitt__fail(BITT_ENOTCOUNTER, "value of kind %ld is not a counter", kind);
        }
        break;
    }
    return status;
}

static void forget_results(bitt_commit *c)
{
    for (size_t i = 0; i < c->count; i++) {
        bitt_op *op = &c->ops[i];
        bitt_entry_free(op->old);
        op->old = NULL;
        op->found = 0;
        op->result = 0;
        op->id = 0;
        op->deduped = 0;
    }
    c->version = 0;
}

static int run_commit(bitt_backend *be, bitt_commit *c, plan *pl)
{
    size_t reads = gather_keys(be, c, pl);
    bitt_pg_params lock_params;
    int rc = BITT_OK;
    if (reads)
        add(pl, PG_BEGIN, bitt__pg_begin_sql);
    if (pl->nkeys) {
        rc =
            bitt__pg_lock_step(&pl->steps[pl->n], &lock_params, &pl->lock_buf, pl->keys, pl->nkeys);
        if (rc)
            return rc;
        pl->n++;
    }
    if (reads) {
        add_reads(be, pl, c);
        rc = bitt__pg_run(be, pl->steps, pl->n, "commit");
        if (!rc) {
            rc = judge_reads(pl, c);
            if (rc)
                bitt__pg_rollback(be);
        }
        bitt__pg_clear(pl->steps, pl->n);
        if (rc)
            return rc;
        pl->n = 0;
    }
    int stamp_step;
    add_writes(be, pl, c, &stamp_step);
    if (reads)
        add(pl, PG_COMMIT, bitt__pg_commit_sql);
    rc = bitt__pg_run(be, pl->steps, pl->n, "commit");
    if (rc)
        return explain_failure(be, pl, c, rc);
    rc = take_results(pl, c, stamp_step);
    bitt__pg_clear(pl->steps, pl->n);
    return rc;
}

int bitt__pg_commit(bitt_backend *be, bitt_commit *c)
{
    int rc = bitt__pg_schema(be);
    if (rc)
        return rc;
    /* At most: BEGIN, LOCK, a sweep (BITT_PG_SWEEP_MAX steps) and a read
     * per op; then a sweep per op, the stamp order lock, the stamp, a
     * mutation per op, NOTIFY, COMMIT. */
    size_t cap = (2 * BITT_PG_SWEEP_MAX + 2) * c->count + 4;
    plan pl = {0};
    pl.steps = bitt__calloc(cap, sizeof *pl.steps);
    pl.params = bitt__calloc(cap, sizeof *pl.params);
    pl.op_step = bitt__malloc((c->count + 1) * sizeof *pl.op_step);
    pl.read_step = bitt__malloc((c->count + 1) * sizeof *pl.read_step);
    pl.keys = bitt__malloc((c->count + 1) * sizeof *pl.keys);
    pl.qops = bitt__calloc(c->count + 1, sizeof *pl.qops);
    if (!pl.steps || !pl.params || !pl.op_step || !pl.read_step || !pl.keys || !pl.qops) {
        free_plan(&pl);
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory planning a commit of %zu ops",
                          c->count);
    }
    for (size_t i = 0; i < c->count; i++)
        pl.op_step[i] = pl.read_step[i] = -1;
    rc = run_commit(be, c, &pl);
    bitt__pg_clear(pl.steps, pl.n);
    free_plan(&pl);
    if (rc)
        forget_results(c);
    return rc;
}

/* Locking as for any commit: every key's lock in one statement, ascending,
 * then the stamp order lock once for the group, so every set's stamp is
 * taken in the ordered tail, each by its own upsert; one pipeline, so one
 * implicit transaction. */
int bitt__pg_commit_sets(bitt_backend *be, bitt_commit *const *cs, size_t n)
{
    int rc = bitt__pg_schema(be);
    if (rc)
        return rc;
    plan pl = {0};
    pl.steps = bitt__calloc(n + 2, sizeof *pl.steps);
    pl.params = bitt__calloc(n + 2, sizeof *pl.params);
    pl.keys = bitt__malloc(n * sizeof *pl.keys);
    if (!pl.steps || !pl.params || !pl.keys) {
        free_plan(&pl);
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory planning %zu sets", n);
    }
    for (size_t i = 0; i < n; i++)
        pl.keys[i] = bitt__pg_lock_key(be, 'k', cs[i]->ops[0].key, cs[i]->ops[0].key_len, NULL, 0);
    bitt_pg_params lock_params;
    rc = bitt__pg_lock_step(&pl.steps[0], &lock_params, &pl.lock_buf, pl.keys, n);
    if (!rc) {
        pl.n = 1;
        add_order(be, &pl);
        for (size_t i = 0; i < n; i++)
            add_set(&pl, PG_C_SET_STAMPED, &cs[i]->ops[0], &cs[i]->time);
        rc = bitt__pg_run(be, pl.steps, pl.n, "commit");
    }
    /* Step 0 locks the keys, step 1 the stamp order; then the sets. */
    for (size_t i = 0; !rc && i < n; i++)
        cs[i]->version = (uint64_t)bitt__pg_i64(pl.steps[2 + i].res, 0, 0);
    bitt__pg_clear(pl.steps, pl.n);
    free_plan(&pl);
    return rc;
}
