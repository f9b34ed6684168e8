/*
 * tests/c/support/contract_modules_check.c: compares the result of a step
 * of the 0.2 modules with its "expect" and stores what it saves (README.md,
 * "Result fields of the modules" and "Variables").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract_impl.h"

#define MSG_LIST "messages", "ids", "payloads", "count"
#define SCHED_FIELDS                                                                               \
    "key", "interval", "payload", "kind", "next_run_at", "occurrence", "cron", "topic", "message_id"

static const char *const E_STATUS[] = {"status", NULL};
static const char *const E_ENQUEUE[] = {"status", "id", "id_ne", NULL};
static const char *const E_LIST[] = {"status", MSG_LIST, NULL};
static const char *const E_COUNT[] = {"status", "count", NULL};
static const char *const E_ACK_MANY[] = {"status", "statuses", "count", NULL};
static const char *const E_STATS[] = {"status", "pending",           "delayed", "processing",
                                      "dead",   "oldest_pending_at", "done",    NULL};
static const char *const E_PURGE[] = {"status", "removed", NULL};
static const char *const E_ACQUIRE[] = {"status", "epoch", "expires_at", NULL};
static const char *const E_RENEW[] = {"status", "expires_at", NULL};
static const char *const E_LGET[] = {"status", "owner", "epoch", "expires_at", NULL};
static const char *const E_APPEND[] = {"status", "seq", "seq_gt", NULL};
static const char *const E_COUNTS[] = {"status", "pending", "parked", NULL};
static const char *const E_NEXT[] = {"status", "payload", "channel", "created_at", NULL};
static const char *const E_TAKE[] = {"status", "wait", NULL};
static const char *const E_SCHED[] = {"status", SCHED_FIELDS, NULL};
static const char *const E_SLIST[] = {"status", "schedules", "keys", "count", NULL};
static const char *const E_QGET[] = {"status", "message", NULL};

const char *const *ct_module_expect(int code)
{
    switch (code) {
    case OP_Q_ENQUEUE: return E_ENQUEUE;
    case OP_Q_DEQUEUE:
    case OP_Q_DEAD_LIST:
    case OP_O_PENDING:
    case OP_O_PARKED: return E_LIST;
    case OP_Q_DEAD_RETRY:
    case OP_Q_DEAD_DELETE:
    case OP_O_ACK:
    case OP_O_RETRY:
    case OP_O_DISCARD: return E_COUNT;
    case OP_Q_STATS: return E_STATS;
    case OP_Q_PURGE: return E_PURGE;
    case OP_Q_GET: return E_QGET;
    case OP_Q_ACK_MANY: return E_ACK_MANY;
    case OP_L_ACQUIRE: return E_ACQUIRE;
    case OP_L_RENEW: return E_RENEW;
    case OP_L_GET: return E_LGET;
    case OP_O_APPEND: return E_APPEND;
    case OP_O_COUNTS: return E_COUNTS;
    case OP_P_NEXT: return E_NEXT;
    case OP_B_TAKE: return E_TAKE;
    case OP_S_CLAIM:
    case OP_S_GET: return E_SCHED;
    case OP_S_LIST: return E_SLIST;
    default: return E_STATUS;
    }
}

const char *const *ct_module_save(int code)
{
    static const char *const S_ID[] = {"id", NULL};
    static const char *const S_DEQ[] = {"ids", "tokens", NULL};
    static const char *const S_IDS[] = {"ids", NULL};
    static const char *const S_SEQ[] = {"seq", NULL};
    static const char *const S_EPOCH[] = {"epoch", NULL};
    static const char *const S_SUB[] = {"sub", NULL};
    static const char *const S_NONE[] = {NULL};
    switch (code) {
    case OP_Q_ENQUEUE: return S_ID;
    case OP_Q_DEQUEUE: return S_DEQ;
    case OP_Q_DEAD_LIST:
    case OP_O_PENDING:
    case OP_O_PARKED: return S_IDS;
    case OP_O_APPEND: return S_SEQ;
    case OP_L_ACQUIRE: return S_EPOCH;
    case OP_P_SUBSCRIBE: return S_SUB;
    default: return S_NONE;
    }
}

/* ---- comparisons ------------------------------------------------------------------------- */

static int check_i64(ct_run *run, const char *where, const char *field, int64_t got,
                     const js_value *exp)
{
    int64_t want;
    if (ct_int64_of(run, exp, field, &want))
        return -1;
    if (want != got)
        return ct_fail(run, "%s%s: expected %" PRId64 ", got %" PRId64, where, field, want, got);
    return 0;
}

/* queue.ack_many: "statuses" (a status name per item) and "count". */
static int check_statuses(ct_run *run, const ct_op *op, const js_value *expect, const ct_result *r)
{
    const js_value *v = js_get(expect, "count");
    if (v && check_i64(run, "", "count", (int64_t)r->count, v))
        return -1;
    if (!(v = js_get(expect, "statuses")))
        return 0;
    if (v->type != JS_ARRAY)
        return ct_broken(run, "statuses is an array of status names");
    if (v->count != op->nids)
        return ct_fail(run, "statuses: expected %zu, there are %zu items", v->count, op->nids);
    for (size_t i = 0; i < v->count; i++) {
        const js_value *e = v->items[i];
        int want = e->type == JS_STRING ? ct_status_code(e->str) : -100;
        if (want == -100)
            return ct_broken(run, "statuses[%zu] is not a status name", i);
        if (r->statuses[i] != want)
            return ct_fail(run, "statuses[%zu]: expected %s, got %s (%d)", i, e->str,
                           ct_status_name(r->statuses[i]), r->statuses[i]);
    }
    return 0;
}

/* got == the number or variable exp (op 0), != (op 1), > (op 2). */
static int check_u64(ct_run *run, const char *where, const char *field, uint64_t got,
                     const js_value *exp, int op)
{
    static const char *const sym[] = {"", "!= ", "> "};
    uint64_t want;
    if (ct_u64_arg(run, exp, field, &want))
        return -1;
    int ok = op == 0 ? got == want : op == 1 ? got != want : got > want;
    if (!ok) {
        const js_value *name = js_get(exp, "var");
        return ct_fail(run, "%s%s: expected %s%" PRIu64 "%s%s%s, got %" PRIu64, where, field,
                       sym[op], want, name ? " (" : "", name ? name->str : "", name ? ")" : "",
                       got);
    }
    return 0;
}

static int check_bytes(ct_run *run, const char *where, const char *field, const uint8_t *got,
                       size_t n, const js_value *spec)
{
    ct_bytes want = {0};
    if (ct_bytes_of(run, spec, &want))
        return -1;
    int same = want.n == n && (n == 0 || memcmp(want.p, got, n) == 0);
    if (!same) {
        char *a = ct_show(want.p, want.n), *b = ct_show(got ? got : (const uint8_t *)"", n);
        ct_fail(run, "%s%s: expected %s, got %s", where, field, a, b);
        free(a);
        free(b);
    }
    ct_bytes_free(&want);
    return same ? 0 : -1;
}

/* A string that may be NULL: exp is a string or null. */
static int check_text(ct_run *run, const char *where, const char *field, const char *got,
                      const js_value *exp)
{
    if (exp->type == JS_NULL) {
        if (got)
            return ct_fail(run, "%s%s: expected NULL, got \"%s\"", where, field, got);
        return 0;
    }
    if (!got)
        return ct_fail(run, "%s%s: expected a string, got NULL", where, field);
    return check_bytes(run, where, field, (const uint8_t *)got, strlen(got), exp);
}

static int check_kind(ct_run *run, const char *where, int got, const js_value *exp)
{
    int want;
    if (ct_kind_of(run, exp, &want))
        return -1;
    if (got != want)
        return ct_fail(run, "%skind: expected %s (%d), got %s (%d)", where, ct_kind_name(want),
                       want, ct_kind_name(got), got);
    return 0;
}

/* A done message's fields: done_at, result and result_kind (null: none). */
static int check_done(ct_run *run, const char *where, const bitt_message *m, const js_value *exp)
{
    const js_value *v;
    size_t n;
    const uint8_t *result = bitt_message_result(m, &n);
    if ((v = js_get(exp, "done_at")) &&
        check_i64(run, where, "done_at", bitt_message_done_at(m), v))
        return -1;
    if ((v = js_get(exp, "result")) && v->type == JS_NULL && result)
        return ct_fail(run, "%sresult: expected none, got %zu bytes", where, n);
    if (v && v->type != JS_NULL && !result)
        return ct_fail(run, "%sresult: expected one, got none", where);
    if (v && v->type != JS_NULL && check_bytes(run, where, "result", result, n, v))
        return -1;
    if ((v = js_get(exp, "result_kind")) && v->type == JS_NULL && bitt_message_result_kind(m) != -1)
        return ct_fail(run, "%sresult_kind: expected none (-1), got %d", where,
                       bitt_message_result_kind(m));
    if (v && v->type != JS_NULL && check_kind(run, where, bitt_message_result_kind(m), v))
        return -1;
    return 0;
}

static int check_message(ct_run *run, const char *where, const bitt_message *m, const js_value *exp)
{
    static const char *const names[] = {
        "id",         "topic",      "payload", "kind",      "attempts",    "max_attempts",
        "last_error", "created_at", "due_at",  "failed_at", "park_reason", "token",
        "state",      "priority",   "done_at", "result",    "result_kind", NULL};
    if (ct_members(run, exp, "an expected message", names))
        return -1;
    const js_value *v;
    size_t n;
    if ((v = js_get(exp, "id")) && check_u64(run, where, "id", bitt_message_id(m), v, 0))
        return -1;
    if ((v = js_get(exp, "topic")) && check_text(run, where, "topic", bitt_message_topic(m), v))
        return -1;
    if ((v = js_get(exp, "payload"))) {
        const uint8_t *p = bitt_message_payload(m, &n);
        if (check_bytes(run, where, "payload", p, n, v))
            return -1;
    }
    if ((v = js_get(exp, "kind")) && check_kind(run, where, bitt_message_kind(m), v))
        return -1;
    if ((v = js_get(exp, "attempts")) &&
        check_i64(run, where, "attempts", bitt_message_attempts(m), v))
        return -1;
    if ((v = js_get(exp, "max_attempts")) &&
        check_i64(run, where, "max_attempts", bitt_message_max_attempts(m), v))
        return -1;
    if ((v = js_get(exp, "last_error")) &&
        check_text(run, where, "last_error", bitt_message_last_error(m), v))
        return -1;
    if ((v = js_get(exp, "created_at")) &&
        check_i64(run, where, "created_at", bitt_message_created_at(m), v))
        return -1;
    if ((v = js_get(exp, "due_at")) && check_i64(run, where, "due_at", bitt_message_due_at(m), v))
        return -1;
    if ((v = js_get(exp, "failed_at")) &&
        check_i64(run, where, "failed_at", bitt_message_failed_at(m), v))
        return -1;
    if ((v = js_get(exp, "park_reason"))) {
        int want = 0;
        if (v->type == JS_STRING)
            want = !strcmp(v->str, "poison")    ? BITT_PARK_POISON
                   : !strcmp(v->str, "invalid") ? BITT_PARK_INVALID
                                                : -1;
        else if (ct_int64_of(run, v, "park_reason", &(int64_t){0}) == 0)
            want = atoi(v->str);
        else
            return -1;
        if (want < 0)
            return ct_broken(run, "park_reason is poison, invalid or 0");
        if (bitt_message_park_reason(m) != want)
            return ct_fail(run, "%spark_reason: expected %d, got %d", where, want,
                           bitt_message_park_reason(m));
    }
    if ((v = js_get(exp, "priority")) &&
        check_i64(run, where, "priority", bitt_message_priority(m), v))
        return -1;
    if ((v = js_get(exp, "state"))) {
        static const char *const states[] = {"", "pending", "delayed", "leased", "dead", "done"};
        int want = -1;
        for (int i = 1; i < 6; i++)
            if (v->type == JS_STRING && !strcmp(v->str, states[i]))
                want = i;
        if (want < 0)
            return ct_broken(run, "state is pending, delayed, leased, dead or done");
        int got = bitt_message_state(m);
        if (got != want)
            return ct_fail(run, "%sstate: expected %s, got %s (%d)", where, states[want],
                           got >= 1 && got <= 5 ? states[got] : "?", got);
    }
    if (check_done(run, where, m, exp))
        return -1;
    if ((v = js_get(exp, "token"))) {
        if (v->type == JS_NULL)
            return check_text(run, where, "token", bitt_message_token(m), v);
        char *want = NULL;
        if (ct_text_arg(run, v, "token", &want))
            return -1;
        const char *got = bitt_message_token(m);
        int same = got && !strcmp(got, want);
        if (!same)
            ct_fail(run, "%stoken: expected %s, got %s", where, want, got ? got : "NULL");
        free(want);
        if (!same)
            return -1;
    }
    return 0;
}

static int count_fail(ct_run *run, const char *what, size_t want, size_t got)
{
    return ct_fail(run, "expected %zu %s, got %zu", want, what, got);
}

static int check_messages(ct_run *run, const js_value *expect, const bitt_messages *list)
{
    char where[64];
    size_t n = bitt_messages_count(list);
    const js_value *v;
    if ((v = js_get(expect, "count")) && check_i64(run, "", "count", (int64_t)n, v))
        return -1;
    if ((v = js_get(expect, "ids"))) {
        if (v->type != JS_ARRAY)
            return ct_broken(run, "ids is an array");
        for (size_t i = 0; i < v->count && i < n; i++) {
            snprintf(where, sizeof where, "message %zu: ", i);
            if (check_u64(run, where, "id", bitt_message_id(bitt_messages_at(list, i)), v->items[i],
                          0))
                return -1;
        }
        if (v->count != n)
            return count_fail(run, "messages", v->count, n);
    }
    if ((v = js_get(expect, "payloads"))) {
        if (v->type != JS_ARRAY)
            return ct_broken(run, "payloads is an array");
        for (size_t i = 0; i < v->count && i < n; i++) {
            size_t len;
            const uint8_t *p = bitt_message_payload(bitt_messages_at(list, i), &len);
            snprintf(where, sizeof where, "message %zu: ", i);
            if (check_bytes(run, where, "payload", p, len, v->items[i]))
                return -1;
        }
        if (v->count != n)
            return count_fail(run, "messages", v->count, n);
    }
    if ((v = js_get(expect, "messages"))) {
        if (v->type != JS_ARRAY)
            return ct_broken(run, "messages is an array");
        for (size_t i = 0; i < v->count && i < n; i++) {
            snprintf(where, sizeof where, "message %zu: ", i);
            if (check_message(run, where, bitt_messages_at(list, i), v->items[i]))
                return -1;
        }
        if (v->count != n)
            return count_fail(run, "messages", v->count, n);
    }
    return 0;
}

static int check_schedule(ct_run *run, const char *where, const bitt_schedule *s,
                          const js_value *exp)
{
    static const char *const names[] = {"status", SCHED_FIELDS, NULL};
    if (ct_members(run, exp, "an expected schedule", names))
        return -1;
    const js_value *v;
    if ((v = js_get(exp, "key")) && check_text(run, where, "key", bitt_schedule_key(s), v))
        return -1;
    if ((v = js_get(exp, "interval")) &&
        check_i64(run, where, "interval", bitt_schedule_interval(s), v))
        return -1;
    if ((v = js_get(exp, "payload"))) {
        size_t n;
        const uint8_t *p = bitt_schedule_payload(s, &n);
        if (check_bytes(run, where, "payload", p, n, v))
            return -1;
    }
    if ((v = js_get(exp, "kind")) && check_kind(run, where, bitt_schedule_kind(s), v))
        return -1;
    if ((v = js_get(exp, "next_run_at")) &&
        check_i64(run, where, "next_run_at", bitt_schedule_next_run_at(s), v))
        return -1;
    if ((v = js_get(exp, "occurrence")) &&
        check_i64(run, where, "occurrence", bitt_schedule_occurrence(s), v))
        return -1;
    if ((v = js_get(exp, "cron")) && check_text(run, where, "cron", bitt_schedule_cron(s), v))
        return -1;
    if ((v = js_get(exp, "topic")) && check_text(run, where, "topic", bitt_schedule_topic(s), v))
        return -1;
    if ((v = js_get(exp, "message_id")) &&
        check_u64(run, where, "message_id", bitt_schedule_message_id(s), v, 0))
        return -1;
    return 0;
}

static int check_schedule_list(ct_run *run, const js_value *expect, const ct_result *r)
{
    char where[64];
    const js_value *v;
    if ((v = js_get(expect, "count")) && check_i64(run, "", "count", (int64_t)r->nscheds, v))
        return -1;
    if ((v = js_get(expect, "keys"))) {
        if (v->type != JS_ARRAY)
            return ct_broken(run, "keys is an array");
        for (size_t i = 0; i < v->count && i < r->nscheds; i++) {
            snprintf(where, sizeof where, "schedule %zu: ", i);
            if (check_text(run, where, "key", bitt_schedule_key(r->scheds[i]), v->items[i]))
                return -1;
        }
        if (v->count != r->nscheds)
            return count_fail(run, "schedules", v->count, r->nscheds);
    }
    if ((v = js_get(expect, "schedules"))) {
        if (v->type != JS_ARRAY)
            return ct_broken(run, "schedules is an array");
        for (size_t i = 0; i < v->count && i < r->nscheds; i++) {
            snprintf(where, sizeof where, "schedule %zu: ", i);
            if (check_schedule(run, where, r->scheds[i], v->items[i]))
                return -1;
        }
        if (v->count != r->nscheds)
            return count_fail(run, "schedules", v->count, r->nscheds);
    }
    return 0;
}

/* Every token a dequeue hands out is new in the case. */
static int check_fresh_tokens(ct_run *run, const bitt_messages *list)
{
    for (size_t i = 0; i < bitt_messages_count(list); i++) {
        const char *tok = bitt_message_token(bitt_messages_at(list, i));
        if (!tok)
            continue;
        for (size_t j = 0; j < run->ntokens; j++)
            if (!strcmp(run->tokens[j], tok))
                return ct_fail(run, "message %zu: the token %s was handed out before", i, tok);
        char **tokens = realloc(run->tokens, (run->ntokens + 1) * sizeof *tokens);
        if (!tokens)
            return ct_broken(run, "out of memory");
        run->tokens = tokens;
        run->tokens[run->ntokens++] = strdup(tok);
    }
    return 0;
}

int ct_check_module(ct_run *run, const ct_op *op, const js_value *expect, const ct_result *r)
{
    const js_value *v;
    if (op->code == OP_B_TAKE && js_get(expect, "wait") && r->status != BITT_DENIED)
        return ct_fail(run, "status: expected denied (wait given), got %s (%d)",
                       ct_status_name(r->status), r->status);
    if (op->code == OP_Q_DEQUEUE && r->status == BITT_OK && check_fresh_tokens(run, r->msgs))
        return -1;
    switch (op->code) {
    case OP_Q_ENQUEUE:
        if ((v = js_get(expect, "id")) && check_u64(run, "", "id", r->id, v, 0))
            return -1;
        if ((v = js_get(expect, "id_ne")) && check_u64(run, "", "id", r->id, v, 1))
            return -1;
        return 0;
    case OP_Q_DEQUEUE:
    case OP_Q_DEAD_LIST:
    case OP_O_PENDING:
    case OP_O_PARKED: return r->status == BITT_OK ? check_messages(run, expect, r->msgs) : 0;
    case OP_Q_DEAD_RETRY:
    case OP_Q_DEAD_DELETE:
    case OP_O_ACK:
    case OP_O_RETRY:
    case OP_O_DISCARD:
        return (v = js_get(expect, "count")) ? check_i64(run, "", "count", (int64_t)r->count, v)
                                             : 0;
    case OP_Q_ACK_MANY: return check_statuses(run, op, expect, r);
    case OP_Q_PURGE:
        return (v = js_get(expect, "removed"))
                   ? check_i64(run, "", "removed", (int64_t)r->removed, v)
                   : 0;
    case OP_Q_GET:
        return r->status == BITT_OK && (v = js_get(expect, "message"))
                   ? check_message(run, "message: ", r->msg, v)
                   : 0;
    case OP_Q_STATS: {
        static const char *const f[] = {"pending", "delayed", "processing", "dead", "done"};
        const uint64_t got[] = {r->stats.pending, r->stats.delayed, r->stats.processing,
                                r->stats.dead, r->stats.done};
        for (int i = 0; i < 5; i++)
            if ((v = js_get(expect, f[i])) && check_i64(run, "", f[i], (int64_t)got[i], v))
                return -1;
        if ((v = js_get(expect, "oldest_pending_at")) &&
            check_i64(run, "", "oldest_pending_at", r->stats.oldest_pending_at, v))
            return -1;
        return 0;
    }
    case OP_L_ACQUIRE:
    case OP_L_RENEW:
    case OP_L_GET:
        if (r->status != BITT_OK)
            return 0;
        if ((v = js_get(expect, "epoch")) && check_u64(run, "", "epoch", r->epoch, v, 0))
            return -1;
        if ((v = js_get(expect, "expires_at")) &&
            check_i64(run, "", "expires_at", r->expires_at, v))
            return -1;
        if ((v = js_get(expect, "owner")) &&
            check_bytes(run, "", "owner", r->owner.ptr, r->owner.len, v))
            return -1;
        return 0;
    case OP_O_APPEND:
        if ((v = js_get(expect, "seq")) && check_u64(run, "", "seq", r->id, v, 0))
            return -1;
        if ((v = js_get(expect, "seq_gt")) && check_u64(run, "", "seq", r->id, v, 2))
            return -1;
        return 0;
    case OP_O_COUNTS:
        if ((v = js_get(expect, "pending")) &&
            check_i64(run, "", "pending", (int64_t)r->pending, v))
            return -1;
        if ((v = js_get(expect, "parked")) && check_i64(run, "", "parked", (int64_t)r->parked, v))
            return -1;
        return 0;
    case OP_P_NEXT:
        if (r->status != BITT_OK)
            return 0;
        if ((v = js_get(expect, "payload"))) {
            size_t n;
            const uint8_t *p = bitt_message_payload(r->msg, &n);
            if (check_bytes(run, "", "payload", p, n, v))
                return -1;
        }
        if ((v = js_get(expect, "channel")) &&
            check_text(run, "", "channel", bitt_message_topic(r->msg), v))
            return -1;
        if ((v = js_get(expect, "created_at")) &&
            check_i64(run, "", "created_at", bitt_message_created_at(r->msg), v))
            return -1;
        return 0;
    case OP_B_TAKE:
        return (v = js_get(expect, "wait")) ? check_i64(run, "", "wait", r->wait, v) : 0;
    case OP_S_CLAIM:
    case OP_S_GET:
        return r->status == BITT_OK && expect->count ? check_schedule(run, "", r->sched, expect)
                                                     : 0;
    case OP_S_LIST: return r->status == BITT_OK ? check_schedule_list(run, expect, r) : 0;
    default: return 0;
    }
}

/* ---- variables ----------------------------------------------------------------------------- */

static int save_number(ct_run *run, const js_value *name, uint64_t value)
{
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, value);
    return ct_var_set(run, name->str, text);
}

int ct_save_module(ct_run *run, const ct_op *op, const js_value *save, ct_result *r)
{
    const js_value *v;
    if (op->code == OP_P_SUBSCRIBE && r->status == BITT_OK) {
        /* The run keeps every subscription (named or not) until the case ends. */
        ct_subvar *subs = realloc(run->subs, (run->nsubs + 1) * sizeof *subs);
        if (!subs)
            return ct_broken(run, "out of memory");
        run->subs = subs;
        v = save ? js_get(save, "sub") : NULL;
        for (size_t i = 0; v && i < run->nsubs; i++)
            if (run->subs[i].name && !strcmp(run->subs[i].name, v->str))
                return ct_broken(run, "subscription %s is still open: close it first", v->str);
        run->subs[run->nsubs].name = v ? strdup(v->str) : NULL;
        run->subs[run->nsubs++].sub = r->sub;
        r->sub = NULL;
        return 0;
    }
    if (!save)
        return 0;
    if ((v = js_get(save, "id"))) {
        if (r->status != BITT_OK && r->status != BITT_EXISTS)
            return ct_broken(run, "save id: the enqueue gave no id");
        return save_number(run, v, r->id);
    }
    if ((v = js_get(save, "seq"))) {
        if (r->status != BITT_OK)
            return ct_broken(run, "save seq: the append failed");
        return save_number(run, v, r->id);
    }
    if ((v = js_get(save, "epoch"))) {
        if (r->status != BITT_OK)
            return ct_broken(run, "save epoch: the acquisition failed");
        return save_number(run, v, r->epoch);
    }
    const js_value *ids = js_get(save, "ids"), *tokens = js_get(save, "tokens");
    if ((ids || tokens) && r->status != BITT_OK)
        return ct_broken(run, "save ids/tokens: the step failed");
    size_t n = r->msgs ? bitt_messages_count(r->msgs) : 0;
    for (size_t i = 0; ids && i < ids->count; i++) {
        if (ids->items[i]->type == JS_NULL)
            continue;
        if (i >= n)
            return ct_fail(run, "save ids: no message at index %zu (%zu came)", i, n);
        if (save_number(run, ids->items[i], bitt_message_id(bitt_messages_at(r->msgs, i))))
            return -1;
    }
    for (size_t i = 0; tokens && i < tokens->count; i++) {
        if (tokens->items[i]->type == JS_NULL)
            continue;
        if (i >= n)
            return ct_fail(run, "save tokens: no message at index %zu (%zu came)", i, n);
        const char *tok = bitt_message_token(bitt_messages_at(r->msgs, i));
        if (ct_var_set(run, tokens->items[i]->str, tok ? tok : ""))
            return -1;
    }
    return 0;
}
