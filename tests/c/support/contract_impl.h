/*
 * tests/c/support/contract_impl.h: what the parts of the contract runner
 * share. contract.c loads suites and runs cases and steps (and parallel
 * steps); contract_prep.c turns a step's JSON into a prepared ct_op;
 * contract_exec.c executes a ct_op on a store (thread-safe, no JSON, no
 * failure reporting: only a ct_result); contract_check.c compares a
 * ct_result with the step's "expect".
 */
#ifndef BITT_TEST_CONTRACT_IMPL_H
#define BITT_TEST_CONTRACT_IMPL_H

#include <stdint.h>

#include "bitt.h"
#include "contract.h"

#define CT_START_CLOCK INT64_C(1000000)
#define CT_MAX_PAGES 100000
#define CT_MAX_THREADS 256

/* ---- bytes ---------------------------------------------------------------- */

typedef struct ct_bytes {
    uint8_t *p; /* NULL while empty */
    size_t n, cap;
} ct_bytes;

int ct_bytes_put(ct_bytes *b, const void *data, size_t n);
void ct_bytes_free(ct_bytes *b);
/* A printable rendering ("a\x00b", or hex beyond 64 bytes), malloc'd. */
char *ct_show(const uint8_t *p, size_t n);

/* ---- prepared operations --------------------------------------------------- */

enum ct_opcode {
    OP_GET = 1,
    OP_TAKE,
    OP_GET_MANY,
    OP_SET,
    OP_ADD,
    OP_DELETE,
    OP_INCREMENT,
    OP_LIST,
    OP_PURGE,
    OP_FILL,
    OP_TXN,
    OP_CLOCK_SET,
    OP_CLOCK_ADVANCE,
    OP_CLOCK_NOW,
    OP_TUPLE_ENCODE,
    OP_TUPLE_DECODE,
    OP_TUPLE_ORDER,
    OP_PARALLEL,
    OP_STORE_OPEN,
    OP_ROUNDTRIP,
    /* the 0.2 modules (contract_modules_*.c) */
    OP_Q_ENQUEUE,
    OP_Q_DEQUEUE,
    OP_Q_ACK,
    OP_Q_ACK_MANY,
    OP_Q_NACK,
    OP_Q_EXTEND,
    OP_Q_SNOOZE,
    OP_Q_DEAD_LIST,
    OP_Q_DEAD_RETRY,
    OP_Q_DEAD_DELETE,
    OP_Q_STATS,
    OP_Q_GET,
    OP_Q_CANCEL,
    OP_Q_RESCHEDULE,
    OP_Q_PURGE,
    OP_L_ACQUIRE,
    OP_L_RENEW,
    OP_L_RELEASE,
    OP_L_GET,
    OP_O_APPEND,
    OP_O_PENDING,
    OP_O_ACK,
    OP_O_FAIL,
    OP_O_PARK,
    OP_O_PARKED,
    OP_O_RETRY,
    OP_O_DISCARD,
    OP_O_COUNTS,
    OP_P_SUBSCRIBE,
    OP_P_PUBLISH,
    OP_P_NEXT,
    OP_P_CLOSE,
    OP_B_TAKE,
    OP_S_UPSERT,
    OP_S_CLAIM,
    OP_S_GET,
    OP_S_LIST,
    OP_S_DELETE
};

/* Whether an op belongs to the 0.2 modules. */
#define CT_IS_MODULE_OP(code) ((code) >= OP_Q_ENQUEUE && (code) <= OP_S_DELETE)

typedef struct ct_part {
    int type; /* BITT_TUPLE_* */
    ct_bytes data;
    int64_t i; /* INT, BOOL */
    double f;
} ct_part;

typedef struct ct_tuple {
    ct_part *parts;
    size_t n;
} ct_tuple;

enum {
    ACT_CHECK = 1,
    ACT_SET,
    ACT_DELETE,
    ACT_SUM,
    ACT_ENQUEUE,
    ACT_FENCE,
    ACT_OUTBOX,
    /* queue ops by id (queue_ack ... queue_reschedule) */
    ACT_Q_ACK,
    ACT_Q_NACK,
    ACT_Q_SNOOZE,
    ACT_Q_EXTEND,
    ACT_Q_CANCEL,
    ACT_Q_RESCHEDULE
};

typedef struct ct_action {
    int type;
    ct_bytes key, value; /* value: also the payload of enqueue and outbox_append */
    int kind;
    int64_t ttl, delta;
    uint64_t version; /* check: the version; fence: the epoch */
    ct_bytes name;    /* enqueue topic, fence lease name, outbox_append stream */
    ct_bytes owner;   /* fence */
    ct_bytes dedup;   /* enqueue */
    int has_dedup;
    int64_t delay; /* enqueue; queue_nack, queue_snooze, queue_reschedule; queue_extend: lease */
    uint32_t max_attempts;
    int32_t priority; /* enqueue */
    uint64_t id;      /* the queue ops by id: the message id (topic in name) */
    char *token;      /* queue delivery ops */
    char *error;      /* queue_nack: NULL = none */
    int refused;      /* the status its add must give (`refused`), 0 = ok */
    int has_result;   /* queue_ack with a result (value, kind) */
} ct_action;

typedef struct ct_op {
    int code;
    const char *name;
    ct_bytes key, value;
    int kind;
    int64_t ttl, delta;
    ct_bytes *keys; /* get_many */
    size_t nkeys;
    int has_prefix, has_start, has_end;
    ct_bytes prefix, start, end;
    uint32_t limit;
    int reverse, follow;
    char *cursor; /* NULL: none */
    char *url;    /* store.open: the case's URL with the step's options */
    ct_action *actions;
    size_t nactions;
    int commit_anyway; /* an action has `refused`: add them all, then commit */
    const js_value *recommit;
    int64_t num;         /* clock.set now, clock.advance ms */
    size_t count, width; /* fill */
    ct_tuple *tuples;    /* tuple.encode (1), tuple.order (n) */
    size_t ntuples;
    long threads, repeat; /* parallel */
    struct ct_op *inner;

    /* the 0.2 modules */
    ct_bytes mname; /* topic, lease name, stream, channel, budget, schedule key, prefix */
    int has_mname;  /* 0: pass NULL (schedule.claim without a prefix) */
    ct_bytes owner; /* lease owner */
    ct_bytes dedup; /* enqueue */
    int has_dedup;
    char *token;   /* ack, nack, extend, snooze */
    char *error;   /* nack, outbox fail and park; NULL: pass NULL */
    uint64_t id;   /* message id, seq, epoch, after_id */
    uint64_t *ids; /* outbox ack, retry, discard; queue ack_many */
    char **tokens; /* queue ack_many: one per id */
    size_t nids;
    int has_ids; /* 0: pass NULL, 0 (retry and discard: all) */
    int64_t delay, lease_ms, wait_ms, timeout, interval, first_run_at, next_at;
    int64_t capacity, refill, period, n;
    uint32_t max_attempts;
    int32_t priority; /* queue.enqueue, schedule.upsert */
    int has_result;   /* queue.ack with a result (value, kind) */
    char *cron;       /* schedule.upsert: NULL = none */
    char *stopic;     /* schedule.upsert: NULL = none */
    int sched_opts;   /* schedule.upsert names cron, topic, max_attempts or priority */
    int has_topics;   /* queue.dequeue with "topics": the topics are keys[0..nkeys) */
    int reason;
    bitt_sub *sub; /* pubsub.next, pubsub.close */
    int cancel;    /* queue.dequeue, pubsub.next: 1 = call with a fired bitt_cancel */
} ct_op;

void ct_op_free(ct_op *op);
void ct_tuple_free(ct_tuple *t);

/* ---- results --------------------------------------------------------------- */

typedef struct ct_result {
    int status;
    int last_code;     /* bitt_error_last_code() right after a negative status */
    char message[256]; /* bitt_error_last() then */
    bitt_entry *entry; /* get, take */
    bitt_entries **pages;
    size_t npages;
    const bitt_entry **items; /* get_many, list: every slot, pages joined */
    size_t nitems;
    int has_cursor;
    char *cursor; /* copy of the last page's cursor */
    uint64_t version;
    int64_t counter;  /* increment's value_out */
    uint64_t removed; /* purge */
    int64_t now;      /* clock.now */
    ct_bytes encoded; /* tuple.encode */
    ct_tuple decoded; /* tuple.decode */
    int recommit_status, recommit_last_code;
    char recommit_message[256];
    uint64_t recommit_version;
    char problem[512]; /* a broken promise the status cannot show */

    /* the 0.2 modules */
    bitt_messages *msgs;      /* dequeue, dead_list, outbox pending and parked */
    bitt_message *msg;        /* pubsub.next, queue.get */
    uint64_t id;              /* enqueue: the id; outbox.append: the seq */
    uint64_t epoch;           /* lease acquire, get */
    int64_t expires_at;       /* lease acquire, renew, get */
    bitt_buf owner;           /* lease get */
    int64_t wait;             /* budget take */
    uint64_t count;           /* dead_retry, dead_delete, outbox ack, retry, discard, ack_many */
    int *statuses;            /* ack_many: one per item */
    uint64_t pending, parked; /* outbox counts */
    bitt_queue_stats stats;
    bitt_schedule *sched;   /* claim, get */
    bitt_schedule **scheds; /* list */
    size_t nscheds;
    bitt_sub *sub; /* subscribe: owned by the result until saved */
} ct_result;

/* Encodes a tuple with bitt_tuple_push_*, appending to out; a bitt status. */
int ct_tuple_encode(const ct_tuple *t, ct_bytes *out);
/* Appends the i-th key of kv.fill: prefix + i in decimal, zero-padded to
 * width digits. */
int ct_fill_key(const ct_bytes *prefix, size_t width, size_t i, ct_bytes *out);
/* Runs op on store and fills res (zeroed first). Thread-safe. */
void ct_exec(bitt_store *store, const ct_op *op, ct_result *res);
void ct_result_free(ct_result *res);

/* ---- one case's run -------------------------------------------------------- */

typedef struct ct_var {
    char *name;
    char *text; /* NULL: "no cursor" */
} ct_var;

/* A subscription a case opened; name NULL when the step saved none. */
typedef struct ct_subvar {
    char *name;
    bitt_sub *sub;
} ct_subvar;

typedef struct ct_run {
    const ct_case *c;
    ct_backend backend;
    char *url;
    int file_backed;
    bitt_store *store;
    ct_var *vars;
    size_t nvars;
    size_t step;
    int step_line; /* where the step starts in its file */
    const char *opname;
    char *fail;      /* the first failure, malloc'd */
    ct_subvar *subs; /* open subscriptions, closed before the store */
    size_t nsubs;
    char **tokens; /* every ack token handed out in the case */
    size_t ntokens;
} ct_run;

/* Records a failure of the current step (the first one wins); returns -1. */
int ct_fail(ct_run *run, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The same for a case that is malformed: "broken case: ...". */
int ct_broken(ct_run *run, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const ct_var *ct_var_find(const ct_run *run, const char *name);
int ct_var_set(ct_run *run, const char *name, const char *text);

/* ---- JSON helpers (contract_args.c) ----------------------------------------- */

/* Fails (broken case) when obj has a member outside names (NULL-ended);
 * "note" is always allowed. */
int ct_members(ct_run *run, const js_value *obj, const char *what, const char *const *names);
int ct_bytes_of(ct_run *run, const js_value *spec, ct_bytes *out);
int ct_int64_of(ct_run *run, const js_value *v, const char *what, int64_t *out);
int ct_uint64_of(ct_run *run, const js_value *v, const char *what, uint64_t *out);
int ct_kind_of(ct_run *run, const js_value *v, int *out);
int ct_tuple_of(ct_run *run, const js_value *parts, ct_tuple *out);
/* An integer in 0..max as a size. */
int ct_size_of(ct_run *run, const js_value *v, const char *what, size_t max, size_t *out);
/* The value of a single-member object (its name in *name), or NULL. */
const js_value *ct_only_member(const js_value *v, const char **name);
/* A status name to its code; -100 for an unknown name. */
int ct_status_code(const char *name);
/* A status code to its name ("ok", ...), or "?". */
const char *ct_status_name(int code);
const char *ct_kind_name(int kind);

/* ---- steps (contract_prep.c, contract_check.c) ------------------------------ */

/* A list of keys with {"copies": N, "of": k} and {"fill": {...}} elements
 * expanded; null elements (allow_null) are flagged in *nulls. */
int ct_key_list(ct_run *run, const js_value *arr, int allow_null, ct_bytes **keys,
                unsigned char **nulls, size_t *n);
void ct_key_list_free(ct_bytes *keys, unsigned char *nulls, size_t n);

/* Prepares a step (not parallel's outer step: see contract.c). */
int ct_prepare(ct_run *run, const js_value *step, ct_op *op, int inner);
/* Validates expect and save against the op; 0 when fine. */
int ct_validate_expect(ct_run *run, const ct_op *op, const js_value *step);

/* ---- the 0.2 modules (contract_modules_*.c) ---------------------------------- */

/* The argument names of a module op (NULL-ended), or NULL for another op;
 * *parallel_ok says whether it may be a parallel step's inner step. */
const char *const *ct_module_args(int code, int *parallel_ok);
/* Prepares a module op's arguments (after ct_prepare matched the op). */
int ct_prepare_module(ct_run *run, const js_value *step, ct_op *op);
/* Prepares a txn action of a module (enqueue, fence, outbox_append); 1 when
 * the op is not one of them. */
int ct_prepare_module_action(ct_run *run, const js_value *a, const char *op, ct_action *out);
/* Adds a module action to t; a bitt status. */
int ct_exec_module_action(bitt_txn *t, const ct_action *a);
/* Executes a module op. */
void ct_exec_module(bitt_store *s, const ct_op *op, ct_result *res);
/* The expect and save members a module op allows (NULL-ended). */
const char *const *ct_module_expect(int code);
const char *const *ct_module_save(int code);
int ct_check_module(ct_run *run, const ct_op *op, const js_value *expect, const ct_result *res);
int ct_save_module(ct_run *run, const ct_op *op, const js_value *save, ct_result *res);
/* An unsigned integer argument: a number, a string of digits, or
 * {"var": name} naming a saved number. */
int ct_u64_arg(ct_run *run, const js_value *v, const char *what, uint64_t *out);
/* A text argument: a string, or {"var": name} naming saved text. malloc'd. */
int ct_text_arg(ct_run *run, const js_value *v, const char *what, char **out);
/* Closes every subscription of the run. */
void ct_close_subs(ct_run *run);

/* ---- checks (contract_check.c) --------------------------------------------- */

int ct_check(ct_run *run, const ct_op *op, const js_value *expect, const ct_result *res);
int ct_save(ct_run *run, const ct_op *op, const js_value *save, ct_result *res);

#endif /* BITT_TEST_CONTRACT_IMPL_H */
