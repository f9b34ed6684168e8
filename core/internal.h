/*
 * core/internal.h: what the engine and the backends share. Nothing here is
 * exported: the library is built with -fvisibility=hidden and only bitt.h's
 * BITT_API functions leave it. Internal names start with bitt__.
 */
#ifndef BITT_INTERNAL_H
#define BITT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "alloc.h"
#include "bitt.h"

#if defined(__GNUC__)
#define BITT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define BITT_PRINTF(f, a)
#endif

/* ---- errors (core/error.c) ---------------------------------------------- */

/* Records code and a formatted message as this thread's last failure and
 * returns code, so a failing path reads `return bitt__fail(...)`. */
int bitt__fail(int code, const char *fmt, ...) BITT_PRINTF(2, 3);
/* Clears the thread's last failure; called at the start of public calls. */
void bitt__error_reset(void);
/* The calling thread's last failure, kept aside while a fiber is
 * suspended (core/io_wait.c) and put back when it resumes. */
typedef struct bitt__error_state {
    int code;
    char message[512];
} bitt__error_state;
void bitt__error_save(bitt__error_state *out);
void bitt__error_restore(const bitt__error_state *in);

/* The value of a hex digit, or -1. */
static inline int bitt__hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* ---- buffers (core/buf.c) ----------------------------------------------- */

/* Makes room for `extra` more bytes plus a NUL; BITT_ENOMEM on failure. */
int bitt__buf_reserve(bitt_buf *buf, size_t extra);
int bitt__buf_put(bitt_buf *buf, const void *data, size_t len);
int bitt__buf_putc(bitt_buf *buf, uint8_t byte);

/* ---- entries (core/entry.c) --------------------------------------------- */

struct bitt_entry {
    uint8_t *key; /* key and value live in the same allocation as the entry */
    size_t key_len;
    uint8_t *value;
    size_t value_len;
    int kind;
    uint64_t version;
    int64_t expires_at; /* 0 = never */
};

/* Copies key and value into one allocation. NULL on out of memory (the
 * thread's error is set to BITT_ENOMEM). */
bitt_entry *bitt__entry_new(const void *key, size_t key_len, const void *value, size_t value_len,
                            int kind, uint64_t version, int64_t expires_at);

struct bitt_entries {
    bitt_entry **items; /* a slot may be NULL (get-many miss) */
    size_t count;
    size_t cap;
    char *cursor; /* NULL when exhausted */
};

bitt_entries *bitt__entries_new(size_t capacity_hint);
/* Appends entry (which may be NULL), taking ownership; on failure frees it. */
int bitt__entries_push(bitt_entries *list, bitt_entry *entry);

/* ---- URLs and options (core/url.c) -------------------------------------- */

typedef struct bitt_url_param {
    char *name;
    char *value;
    int used;
} bitt_url_param;

typedef struct bitt_url {
    char *scheme;   /* "memory", "sqlite", ... */
    char *rest;     /* everything between "scheme:" and "?", percent-decoded */
    char *raw_rest; /* the same, not decoded (for backends that parse an
                     * authority themselves, such as user:password@host) */
    bitt_url_param *params;
    size_t param_count;
} bitt_url;

int bitt__url_parse(const char *text, bitt_url *out);
/* Percent-decodes [s, s + n) into a new NUL-terminated string; a %00 or a
 * bad escape is BITT_EURL naming `what`, never echoing the text (it may be a
 * password). */
int bitt__percent_decode(const char *s, size_t n, const char *what, char **out);
void bitt__url_free(bitt_url *url);
/* The value of an option, or NULL when absent; marks it as used. */
const char *bitt__url_param(bitt_url *url, const char *name);
/* An integer option in [min, max], or def when absent; BITT_EURL otherwise. */
int bitt__url_param_int(bitt_url *url, const char *name, int64_t min, int64_t max, int64_t def,
                        int64_t *out);
/* BITT_EURL naming the first option nobody asked for. */
int bitt__url_check_all_used(const bitt_url *url);

/* ---- limits and time ---------------------------------------------------- */

typedef struct bitt_limits {
    size_t max_key_size;
    size_t max_value_size;
    /* queue retention (URL queue_done_retention, queue_dead_retention):
     * > 0 keeps an acked message done this long / drops a dead letter this
     * long after it died; 0 deletes at ack / keeps dead letters */
    int64_t queue_done_retention_ms;
    int64_t queue_dead_retention_ms;
} bitt_limits;

#define BITT_DEFAULT_MAX_KEY_SIZE 2048
#define BITT_DEFAULT_MAX_VALUE_SIZE 65536
#define BITT_MAX_KEY_SIZE_CAP BITT_KEY_SIZE_MAX
#define BITT_MAX_VALUE_SIZE_CAP BITT_VALUE_SIZE_MAX

/* The time a backend call runs at. manual is set when a test clock is
 * installed: a backend with a clock of its own (a database server) must use
 * `now` then, and may use its own otherwise. */
typedef struct bitt_time {
    int64_t now;
    int manual;
} bitt_time;

/* A time plus a duration (>= 0; a negative one, refused before here,
 * counts as 0), saturating at INT64_MAX. No clock reaches INT64_MAX
 * (bitt_clock_set_manual), so a saturated time never comes: a TTL, lease,
 * delay, backoff, next run or retention that long never ends. Every such
 * sum in C goes through here; PG_AFTER (core/postgres/pg_internal.h) and
 * after() (core/redis/lua_lib.c) are its twins on the servers. */
static inline int64_t bitt__time_add(int64_t t, int64_t d)
{
    if (d <= 0)
        return t;
    return t > INT64_MAX - d ? INT64_MAX : t + d;
}
/* The absolute expiry of a value written at now with ttl_ms (> 0): now +
 * ttl, saturating at INT64_MAX. BITT_TTL_NONE gives 0 (never). */
int64_t bitt__expiry(int64_t now, int64_t ttl_ms);
/* Whether a row with this expiry is live at now. */
static inline int bitt__live(int64_t expires_at, int64_t now)
{
    return expires_at == 0 || now < expires_at;
}
int64_t bitt__system_now(void);

/* ---- values (core/value.c, core/json.c) --------------------------------- */

/* Checks that bytes are a valid value of kind (JSON text, canonical
 * counter); BITT_EINVAL with a message otherwise. */
int bitt__value_check(int kind, const uint8_t *value, size_t len);
/* Strict RFC 8259 JSON text in UTF-8; 0 when valid, else the offset + 1 of
 * the first bad byte; nesting deeper than 512 is refused. */
size_t bitt__json_invalid_at(const uint8_t *text, size_t len);
/* Parses a canonical int64 decimal ("0", "-7", no '+', no leading zero). */
int bitt__counter_parse(const uint8_t *text, size_t len, int64_t *out);
/* Writes the canonical decimal of v into buf (at least 21 bytes); returns
 * its length. */
size_t bitt__counter_format(int64_t v, char *buf);
/* a + b, or BITT_EOVERFLOW. */
int bitt__counter_add(int64_t a, int64_t b, int64_t *out);
/* Shared by every backend: the value and kind a sum of delta leaves on a
 * key that holds (kind, value) or nothing (found == 0); fills text (21
 * bytes) and *result. BITT_ENOTCOUNTER / BITT_EOVERFLOW with a message. */
int bitt__sum_apply(int found, int kind, const uint8_t *value, size_t len, int64_t delta,
                    char *text, size_t *text_len, int64_t *result);

/* ---- list selectors and cursors (core/cursor.c) ------------------------- */

/* A hash that identifies a selector (prefix, start, end, direction), so a
 * cursor is only ever accepted by the selector that made it. */
uint64_t bitt__selector_hash(const bitt_list_options *opts);
/* A printable cursor that resumes after key; *out is malloc'd. */
int bitt__cursor_encode(uint64_t selector, const uint8_t *key, size_t key_len, char **out);
/* The key a cursor resumes after; BITT_ECURSOR for a cursor that is
 * malformed or belongs to another selector. key_out is reset first. */
int bitt__cursor_decode(const char *text, uint64_t selector, size_t max_key, bitt_buf *key_out);

/* ---- atomic commits: what the engine hands a backend ------------------- */

enum bitt_op_type {
    BITT_OP_CHECK = 1, /* key must be at version (0 = absent) */
    BITT_OP_SET = 2,   /* write value/kind with ttl_ms */
    BITT_OP_DELETE = 3,
    BITT_OP_SUM = 4, /* add delta to a counter; a created key gets ttl_ms */
    /* enqueue on topic `name`: value/kind payload, delay_ms, max_attempts,
     * dedup key in aux (NULL = none); result id (and deduped = 1 with the
     * live message's id when the dedup key was taken) */
    BITT_OP_ENQUEUE = 5,
    /* lease `name` must be held by `owner` at epoch `version` and live;
     * evaluated with the checks, failing with BITT_ELEASELOST */
    BITT_OP_FENCE = 6,
    /* append value/kind to outbox stream `name`; result id = its sequence */
    BITT_OP_OUTBOX_APPEND = 7,
    /* Delivery ops on message `id` of topic `name` with token `owner`: as
     * queue_ack / queue_nack (error text in aux, NUL-terminated, NULL =
     * none; delay_ms,
     * < 0 = c->backoff) / queue_snooze (delay_ms) / queue_extend (ttl_ms =
     * the new lease), after the same sweep. Evaluated with the checks: a
     * message that is not processing with this token and a live lease
     * fails the commit with BITT_ETOKEN (c->failed = its index).
     * QUEUE_ACK (version 7): with limits->queue_done_retention_ms > 0 the
     * message is kept done (done_at = now) with the result in value /
     * value_len / kind (value NULL = none) instead of deleted. */
    BITT_OP_QUEUE_ACK = 8,
    BITT_OP_QUEUE_NACK = 9,
    BITT_OP_QUEUE_SNOOZE = 10,
    BITT_OP_QUEUE_EXTEND = 11,
    /* cancel message `id` of topic `name` when it is pending, delayed or
     * processing (deleted); reschedule it to now + delay_ms when pending
     * (a processing message whose lease ran out counts as pending) or
     * delayed. found = 1 when applied; otherwise nothing, and no failure. */
    BITT_OP_QUEUE_CANCEL = 12,
    BITT_OP_QUEUE_RESCHEDULE = 13,
    /* schedule `name` must exist with next_run_at == delta (checked with
     * the checks: BITT_ECONFLICT with c->failed otherwise); its next_run_at
     * becomes delay_ms. Backend ops version 7. */
    BITT_OP_SCHEDULE_ADVANCE = 14
};

typedef struct bitt_op {
    int type;
    const uint8_t *key;
    size_t key_len;
    const uint8_t *value;
    size_t value_len;
    int kind;
    int64_t ttl_ms;
    uint64_t version;
    int64_t delta;
    int want_old;       /* DELETE: hand back the removed entry in `old` (take) */
    const char *name;   /* ENQUEUE topic, FENCE lease, OUTBOX_APPEND stream */
    const char *owner;  /* FENCE */
    const uint8_t *aux; /* ENQUEUE: dedup key, NULL = none */
    size_t aux_len;
    int64_t delay_ms;      /* ENQUEUE, QUEUE_NACK, QUEUE_SNOOZE, QUEUE_RESCHEDULE */
    uint32_t max_attempts; /* ENQUEUE, >= 1 */
    int32_t priority;      /* ENQUEUE */

    /* results, set by the backend when the commit succeeds */
    int found;       /* DELETE: a live value was removed; QUEUE_CANCEL and
                        QUEUE_RESCHEDULE: applied */
    bitt_entry *old; /* DELETE with want_old and found: owned by the engine */
    int64_t result;  /* SUM: the new value */
    uint64_t id;     /* ENQUEUE: message id; OUTBOX_APPEND: sequence */
    int deduped;     /* ENQUEUE: the dedup key was live, nothing enqueued */
} bitt_op;

typedef struct bitt_backoff bitt_backoff; /* below, with the queue rules */

typedef struct bitt_commit {
    bitt_op *ops;
    size_t count;
    bitt_time time;
    const bitt_backoff *backoff; /* the store's, for QUEUE_NACK with delay_ms < 0 */
    uint64_t version;            /* out: the commit's versionstamp */
    size_t failed;               /* out on BITT_ECONFLICT / BITT_ELEASELOST: failed op */
} bitt_commit;

/* A list selection resolved by the engine: keys in [lo, hi), hi absent when
 * !has_hi; at most limit entries, in reverse order when reverse. */
typedef struct bitt_range {
    const uint8_t *lo;
    size_t lo_len;
    const uint8_t *hi;
    size_t hi_len;
    int has_hi;
    int reverse;
    size_t limit;
} bitt_range;

/* ---- the engine's checks, shared by kv.c and txn.c (core/kv.c) ---------- */

int bitt__check_key(const bitt_store *store, const void *key, size_t len);
int bitt__check_value(const bitt_store *store, int kind, const void *value, size_t len);
int bitt__check_ttl(int64_t ttl_ms);
/* Runs a commit on the store: locks, calls the backend, sweeps expired rows
 * now and then. */
int bitt__run_commit(bitt_store *store, bitt_op *ops, size_t count, uint64_t *version_out);

/* Whether a committed op may have made a message claimable (an enqueue
 * that was not deduplicated, a nack, a snooze, an extend to 0, a
 * reschedule that applied), so waits are woken (core/queue_ops.c). */
int bitt__op_makes_claimable(const bitt_op *op);

/* Checks the arguments of a by-id queue op (BITT_OP_QUEUE_*) and fills op
 * (pointing at topic, token and the error text). A nack's error text that
 * needed cleaning is in *clean (the caller frees it after the op is copied
 * or run); *clean is NULL otherwise. */
int bitt__queue_op(const bitt_store *store, int type, const char *topic, uint64_t id,
                   const char *token, const char *error, int64_t ms, bitt_op *op, char **clean);
/* A BITT_OP_QUEUE_* op, which a txn allows once per message id. */
int bitt__op_is_queue_by_id(const bitt_op *op);

/* The result an ack keeps with a done message (bitt_queue_ack_result). */
typedef struct bitt_ack_result {
    const void *value; /* NULL with len 0: none */
    size_t len;
    int kind;
} bitt_ack_result;
/* Checks r as a value of the store and puts it in the ack op (value,
 * value_len, kind; value NULL for none). */
int bitt__ack_result_op(const bitt_store *store, const bitt_ack_result *r, bitt_op *op);

/* ---- messages (core/message.c) ----------------------------------------- */

struct bitt_message {
    uint64_t id;
    char *topic;
    uint8_t *payload;
    size_t payload_len;
    int kind;
    char *token; /* NULL when none */
    uint32_t attempts;
    uint32_t max_attempts;
    char *last_error; /* NULL when none */
    int64_t created_at;
    int64_t due_at;
    int64_t failed_at;
    int park_reason;
    int state;        /* queue: BITT_MSG_*; 0 elsewhere */
    int32_t priority; /* queue */
    int64_t done_at;  /* queue, BITT_MSG_DONE: when acked */
    uint8_t *result;  /* queue, BITT_MSG_DONE: the ack's result, NULL = none */
    size_t result_len;
    int result_kind;
};

/* Copies every string and the payload of *fields into one allocation (the
 * pointers of fields are only read). NULL on out of memory. */
bitt_message *bitt__message_new(const bitt_message *fields);

struct bitt_messages {
    bitt_message **items;
    size_t count;
    size_t cap;
};

bitt_messages *bitt__messages_new(size_t capacity_hint);
/* Appends msg, taking ownership; on failure frees it. */
int bitt__messages_push(bitt_messages *list, bitt_message *msg);

/* ---- queue rules shared by every backend (core/queue_rules.c) ---------- */

#define BITT_TOKEN_LEN 32 /* hex characters of an ack token */
/* A fresh random ack token: BITT_TOKEN_LEN hex characters and a NUL. */
void bitt__token_new(char *out);

typedef struct bitt_backoff {
    int exponential; /* 1: base * 2^(attempt-1) capped at cap; 0: delays[] */
    int64_t base;
    int64_t cap;
    int64_t delays[32]; /* by attempt, the last one repeats */
    size_t delay_count;
} bitt_backoff;

/* The delay before retrying a message that has had `attempts` deliveries. */
int64_t bitt__backoff_delay(const bitt_backoff *b, uint32_t attempts);
/* Parses "D1,D2,..." or "exp:BASE:CAP"; BITT_EURL naming the option. */
int bitt__backoff_parse(const char *text, bitt_backoff *out);

/* The error a message dead-lettered by an expired last lease records. */
#define BITT_LEASE_EXPIRED_ERROR "lease expired on the last attempt"

/* ---- budgets and schedules: one arithmetic (core/budget.c, schedule.c) -- */

typedef struct bitt_budget_params {
    int64_t capacity; /* tokens, 1..2^31-1 */
    int64_t refill;   /* tokens gained every period_ms, 1..2^31-1 */
    int64_t period_ms;
} bitt_budget_params;

/* A bucket's stored state: level in units of 1/period_ms token. A bucket
 * with exists == 0 starts full. */
typedef struct bitt_budget_state {
    int exists;
    int64_t level;
    int64_t updated_at;
    int64_t period_ms; /* the period level is expressed in */
} bitt_budget_state;

/* Refills *state to now and takes n tokens: BITT_OK (state updated, to be
 * stored) or BITT_DENIED with *wait_ms (state refilled but nothing taken;
 * storing it is optional). */
int bitt__budget_apply(bitt_budget_state *state, const bitt_budget_params *p, int64_t now,
                       int64_t n, int64_t *wait_ms);

/* The first next_run_at + k * interval (k >= 1) that is > now. */
int64_t bitt__schedule_advance(int64_t next_run_at, int64_t interval_ms, int64_t now);

struct bitt_schedule {
    char *key;
    int64_t interval_ms; /* 0 for a cron schedule */
    uint8_t *payload;
    size_t payload_len;
    int kind;
    int64_t next_run_at;
    int64_t occurrence;
    char *cron;  /* NULL: an interval schedule */
    char *topic; /* NULL: none */
    uint32_t max_attempts;
    int32_t priority;
    uint64_t message_id; /* after a claim with a topic */
};

/* What a schedule is, as bitt_schedule_set gives it to a backend (every
 * field checked and resolved: max_attempts >= 1, exactly one of
 * interval_ms > 0 and cron). */
typedef struct bitt_schedule_def {
    const char *key;
    int64_t interval_ms;
    const char *cron;
    const uint8_t *payload;
    size_t payload_len;
    int kind;
    const char *topic;
    uint32_t max_attempts;
    int32_t priority;
} bitt_schedule_def;

/* One allocation holding key and payload copies; NULL on out of memory. */
bitt_schedule *bitt__schedule_new(const char *key, int64_t interval_ms, const void *payload,
                                  size_t payload_len, int kind, int64_t next_run_at,
                                  int64_t occurrence);
/* The same for every field of def (cron and topic copied too). */
bitt_schedule *bitt__schedule_from_def(const bitt_schedule_def *def, int64_t next_run_at,
                                       int64_t occurrence);

/* A growable array of schedules, as bitt_schedule_list returns it. */
typedef struct bitt_schedule_array {
    bitt_schedule **items;
    size_t count;
    size_t cap;
} bitt_schedule_array;

int bitt__schedule_array_push(bitt_schedule_array *a, bitt_schedule *s);
/* The store's backend has schedules (BITT_EINVAL for a NULL store). */
int bitt__check_schedules(const bitt_store *store);

/* ---- process-wide wake-ups for waits (core/notify.c) ------------------- */

/* A counter bumped by every enqueue, nack, retry and publish in this
 * process, so waits wake at once instead of at their next poll. */
uint64_t bitt__notify_generation(void);
void bitt__notify_all(void);
/* Waits until the generation differs from seen, or max_ms passed. */
void bitt__notify_wait(uint64_t seen, int64_t max_ms);
/* The wait slices of a cancellable wait (core/cancel.c): 1 when cancel
 * (may be NULL) has fired, with BITT_ECANCELED set as the last error. */
int bitt__cancelled(const bitt_cancel *cancel, const char *what);
/* How a wait loop sleeps between two looks at the store: the backend's
 * wait_remote when it has one, else bitt__notify_wait up to 50 ms. */
void bitt__store_wait(bitt_store *store, uint64_t seen, int64_t left_ms);

/* ---- the backend interface ---------------------------------------------- */
/*
 * One vtable per backend, like sqlite3_vfs: `version` first, entries only
 * ever appended, a NULL entry means "not supported" (the engine answers
 * BITT_EUNSUPPORTED or falls back). The engine holds the store's mutex
 * around every call (unless the backend says it is `concurrent`), validates every argument and
 * applies every limit before calling; a backend does storage work only. A backend reports failures
 * with bitt__fail() and must leave nothing half-written.
 */
typedef struct bitt_backend bitt_backend; /* each backend defines its own */

typedef struct bitt_backend_ops {
    unsigned int version; /* BITT_BACKEND_OPS_VERSION */
    const char *name;
    /* Reads its own options from url (bitt__url_param*) and connects. */
    int (*open)(bitt_url *url, const bitt_limits *limits, bitt_backend **out);
    void (*close)(bitt_backend *be);
    int (*migrate)(bitt_backend *be);
    /* BITT_OK with *out, or BITT_NOTFOUND; expired rows are absent. */
    int (*kv_get)(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                  bitt_entry **out);
    /* Pushes one slot per key (NULL when absent) from one snapshot. */
    int (*kv_get_many)(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                       const size_t *key_lens, size_t count, bitt_entries *out);
    /* Pushes up to range->limit live entries of the range, in order. */
    int (*kv_list)(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                   bitt_entries *out);
    /* All checks, then every op in order, under one new versionstamp; all
     * or nothing. BITT_ECONFLICT (with c->failed) when a check fails. */
    int (*commit)(bitt_backend *be, bitt_commit *c);
    /* Deletes expired rows; *removed gets how many. */
    int (*kv_purge)(bitt_backend *be, const bitt_time *t, uint64_t *removed);

    /* ---- version 2: queue, leases, outbox, pubsub, budgets, schedules --
     * Every queue call first dead-letters the topic's messages whose lease
     * expired on their last attempt (failed_at = the lease's end,
     * last_error = BITT_LEASE_EXPIRED_ERROR), in the same transaction. */

    /* Leases up to limit claimable messages (state pending or processing,
     * due_at <= now) in (due_at, id) order: attempts + 1, a new token,
     * due_at = now + lease_ms. An expired lease whose attempts are used up
     * is dead-lettered instead and not counted. */
    int (*queue_claim)(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                       int64_t lease_ms, bitt_messages *out);
    /* ack / nack / extend need a processing message of topic with this id
     * and token whose lease is live (due_at > now): BITT_ETOKEN otherwise.
     * ack deletes it. nack records error (NULL = none) and, if attempts <
     * max_attempts, makes it pending at now + delay_ms (delay_ms < 0:
     * bitt__backoff_delay(backoff, attempts)); otherwise dead (failed_at =
     * now). extend sets due_at = now + lease_ms. */
    int (*queue_ack)(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                     const char *token);
    int (*queue_nack)(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                      const char *token, const char *error, int64_t delay_ms,
                      const bitt_backoff *backoff);
    int (*queue_extend)(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, int64_t lease_ms);
    int (*queue_dead_list)(bitt_backend *be, const bitt_time *t, const char *topic,
                           uint64_t after_id, size_t limit, bitt_messages *out);
    /* id 0 = every dead message of topic. retry: pending at now, attempts
     * 0, error and failed_at cleared. */
    int (*queue_dead_retry)(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                            uint64_t *count);
    int (*queue_dead_delete)(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                             uint64_t *count);
    int (*queue_stats)(bitt_backend *be, const bitt_time *t, const char *topic,
                       bitt_queue_stats *out);

    /* Leases: live iff an owner is set and now < expires_at. acquire: OK
     * with epoch + 1 when free or expired, BITT_EXISTS otherwise. renew and
     * release: BITT_ELEASELOST unless owner and epoch match a live lease;
     * release clears the owner and keeps the epoch. get: BITT_NOTFOUND
     * unless live. */
    int (*lease_acquire)(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                         int64_t ttl_ms, uint64_t *epoch, int64_t *expires_at);
    int (*lease_renew)(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                       uint64_t epoch, int64_t ttl_ms, int64_t *expires_at);
    int (*lease_release)(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                         uint64_t epoch);
    int (*lease_get)(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                     uint64_t *epoch, int64_t *expires_at);

    /* Outbox: events are pending or parked; seqs increase per stream. */
    int (*outbox_pending)(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                          bitt_messages *out);
    int (*outbox_ack)(bitt_backend *be, const bitt_time *t, const char *stream,
                      const uint64_t *seqs, size_t count, uint64_t *acked);
    /* BITT_NOTFOUND when seq is not pending. */
    int (*outbox_fail)(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                       const char *error, int64_t next_attempt_at);
    int (*outbox_park)(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                       int reason, const char *error);
    /* reason 0 = any. */
    int (*outbox_parked)(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                         size_t limit, bitt_messages *out);
    /* count 0 = every parked event of the stream. */
    int (*outbox_retry)(bitt_backend *be, const bitt_time *t, const char *stream,
                        const uint64_t *seqs, size_t count, uint64_t *moved);
    int (*outbox_discard)(bitt_backend *be, const bitt_time *t, const char *stream,
                          const uint64_t *seqs, size_t count, uint64_t *deleted);
    int (*outbox_counts)(bitt_backend *be, const bitt_time *t, const char *stream,
                         uint64_t *pending, uint64_t *parked);

    /* Publish/subscribe over a log with store-wide increasing ids, kept
     * retention_ms (older entries are deleted by publish). */
    int (*pubsub_publish)(bitt_backend *be, const bitt_time *t, const char *channel,
                          const uint8_t *data, size_t len, int64_t retention_ms);
    /* The highest id published so far (0 when none). */
    int (*pubsub_head)(bitt_backend *be, const bitt_time *t, uint64_t *last_id);
    /* Messages of channel with id > after_id, in id order, at most limit. */
    int (*pubsub_fetch)(bitt_backend *be, const bitt_time *t, const char *channel,
                        uint64_t after_id, size_t limit, bitt_messages *out);

    /* Loads the bucket, calls bitt__budget_apply, stores the new state when
     * tokens were taken; all in one transaction. */
    int (*budget_take)(bitt_backend *be, const bitt_time *t, const char *name,
                       const bitt_budget_params *p, int64_t n, int64_t *wait_ms);

    /* Schedules. upsert: see bitt_schedule_upsert (first_run_at already
     * resolved by the engine: 0 never reaches the backend). claim: the due
     * schedule (next_run_at <= now) with the smallest (next_run_at, key)
     * among keys starting with prefix ("" = all); next_run_at becomes
     * bitt__schedule_advance(...); *out carries the occurrence claimed and
     * the new next_run_at. BITT_NOTFOUND when none is due. */
    int (*schedule_upsert)(bitt_backend *be, const bitt_time *t, const char *key,
                           int64_t interval_ms, const uint8_t *payload, size_t len, int kind,
                           int64_t first_run_at);
    int (*schedule_claim)(bitt_backend *be, const bitt_time *t, const char *prefix,
                          bitt_schedule **out);
    int (*schedule_get)(bitt_backend *be, const bitt_time *t, const char *key, bitt_schedule **out);
    int (*schedule_list)(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out);
    int (*schedule_delete)(bitt_backend *be, const bitt_time *t, const char *key);

    /* Optional: blocks up to max_ms, returning early when the backend hears
     * that another process (or this one) enqueued, retried or published
     * (LISTEN/NOTIFY, Redis pub/sub). Called WITHOUT the store's mutex, maybe
     * from several threads at once. NULL: waits poll every 50 ms and wake at
     * once on work done in this process. */
    int (*wait_remote)(bitt_backend *be, int64_t max_ms);

    /* ---- version 3 ----------------------------------------------------
     * Acks count deliveries of topic in one transaction (after the sweep,
     * like every queue call), each exactly as queue_ack would, in order: a
     * repeated id finds its message gone. statuses comes filled with
     * BITT_ETOKEN; the backend sets BITT_OK for each one it deleted. A
     * failure (BITT_EBACKEND, ...) leaves every message as it was. */
    int (*queue_ack_many)(bitt_backend *be, const bitt_time *t, const char *topic,
                          const uint64_t *ids, const char *const *tokens, size_t count,
                          int *statuses);

    /* Also version 3.
     * 1: every entry but open and close may be called from several threads
     * at once (the backend serializes what it must itself, e.g. a pool of
     * connections), so the engine calls them WITHOUT the store's mutex: it
     * takes the mutex only to read the clock and its own state. 0: the
     * engine holds the mutex around every call (one call at a time). */
    int concurrent;

    /* Version 4. How many calls may wait on the network at once on fibers
     * of one thread (core/io_wait.h) without blocking it: a backend whose
     * calls never block on another call of the same thread (no shared
     * lock held across a wait). NULL or 0: calls must run on threads. */
    size_t (*io_slots)(bitt_backend *be);

    /* ---- version 5 ----------------------------------------------------
     * As queue_extend (same token and lease checks, after the sweep), but
     * the delivery is given back unseen: processing -> pending at
     * now + delay_ms, attempts - 1, token and lease cleared, error kept
     * as it was. */
    int (*queue_snooze)(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, int64_t delay_ms);

    /* ---- version 6 ----------------------------------------------------
     * Every claim (queue_claim too) takes the highest priority first, then
     * (due_at, id). claim_topics: queue_claim over count distinct topics at
     * once (each swept first), in that order across all of them; each
     * message carries its topic. */
    int (*queue_claim_topics)(bitt_backend *be, const bitt_time *t, const char *const *topics,
                              size_t count, size_t limit, int64_t lease_ms, bitt_messages *out);
    /* Message id of topic, after the topic's sweep: BITT_OK with *out
     * (state BITT_MSG_* as of t: processing with due_at <= now is PENDING,
     * pending with due_at > now is DELAYED; token NULL), or BITT_NOTFOUND.
     * The BITT_OP_QUEUE_* commit ops are also version 6. */
    int (*queue_get)(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                     bitt_message **out);

    /* ---- version 7 ----------------------------------------------------
     * Retention (limits->queue_done_retention_ms, queue_dead_retention_ms,
     * from open). With done retention > 0, every ack (queue_ack,
     * queue_ack_many, BITT_OP_QUEUE_ACK) keeps the message as done
     * (done_at = now, the op's result) instead of deleting it. A done
     * message is never claimed, holds no dedup key, is not cancelled or
     * rescheduled (found 0), is not a dead letter; queue_get returns it
     * (state BITT_MSG_DONE, done_at, result) and queue_stats counts it in
     * done. Every queue call's sweep of its topic also deletes what
     * queue_purge would there. purge: deletes the done messages with
     * done_at <= now - done retention and, when dead retention > 0, the
     * dead letters with failed_at <= now - dead retention, of topic (NULL:
     * of every topic); *removed gets how many. */
    int (*queue_purge)(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t *removed);
    /* Schedules with cron expressions and topics. set: creates or updates
     * def's schedule storing every field of def; a new schedule, or one
     * whose interval or cron text changed, gets next_run_at = first_run_at
     * (resolved by the engine), any other keeps its next_run_at. due: the
     * due schedule (next_run_at <= now) with the smallest (next_run_at,
     * key) among keys starting with prefix ("" = all), read only: BITT_OK
     * with *out or BITT_NOTFOUND. *out's occurrence carries the now it was
     * judged due at (a server's own clock, or t->now), from which the engine
     * works out the next occurrence; it claims it with a commit of
     * BITT_OP_SCHEDULE_ADVANCE (and the topic's enqueue).
     * schedule_get, schedule_list and due return every field of the def.
     * From version 7 schedule_upsert and schedule_claim are never called
     * (their slots stay, as every slot does; every backend leaves them NULL). */
    int (*schedule_set)(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                        int64_t first_run_at);
    int (*schedule_due)(bitt_backend *be, const bitt_time *t, const char *prefix,
                        bitt_schedule **out);
} bitt_backend_ops;

#define BITT_BACKEND_OPS_VERSION 7

extern const bitt_backend_ops bitt__memory_backend;
extern const bitt_backend_ops bitt__sqlite_backend;
extern const bitt_backend_ops bitt__postgres_backend; /* when BITT_HAVE_POSTGRES */
extern const bitt_backend_ops bitt__redis_backend;    /* when BITT_HAVE_REDIS */

/* ---- the store handle (core/store.c) ------------------------------------ */

struct bitt_store {
    const bitt_backend_ops *ops;
    bitt_backend *be;
    pthread_mutex_t lock;
    bitt_limits limits;
    int manual_clock;
    int64_t manual_now;
    int64_t next_purge; /* when a write next sweeps expired rows */
    int64_t queue_lease_ms;
    bitt_backoff backoff;
    int64_t pubsub_retention_ms;
};

/* Longest delay, lease, TTL or interval the modules accept (~35 years), so
 * that now + duration never overflows. */
#define BITT_MAX_DURATION_MS BITT_DURATION_MAX_MS
/* BITT_EINVAL unless min <= ms <= BITT_MAX_DURATION_MS. */
int bitt__check_duration(int64_t ms, int64_t min, const char *what);
/* URL option spin_us of the network backends (core/io_spin.c): how long
 * a wait for a reply spins before the thread sleeps. */
#define BITT_SPIN_DEFAULT_US 200
#define BITT_SPIN_MAX_US 10000

/* A monotonic clock in ms, for how long a wait has run. */
int64_t bitt__monotonic_ms(void);
/* BITT_EUNSUPPORTED naming the backend and the call. */
int bitt__unsupported(const bitt_store *store, const char *what);
/* Resolves enqueue options (NULL = defaults) into op; BITT_EINVAL for a
 * bad version, delay or dedup key. */
int bitt__enqueue_op(const bitt_store *store, const char *topic, const void *payload,
                     size_t payload_len, int kind, const bitt_enqueue_options *opts, bitt_op *op);

/* Checks a name (topic, lease, owner, stream, channel, bucket, schedule
 * key): NUL-terminated UTF-8, 1..BITT_NAME_MAX bytes. `what` names it in
 * the message. */
int bitt__check_name(const char *name, const char *what);

/* An error text to record (a nack's, an outbox fail's or park's): NULL is
 * none; longer than max_value_size is BITT_ETOOLARGE naming `what`. Text
 * that is not UTF-8 gets a cleaned copy in *copy (every invalid sequence
 * replaced by U+FFFD; the caller frees it and passes it on instead), so
 * every backend stores the same text; *copy is NULL when error is fine as
 * it is (core/error_text.c). */
int bitt__error_text(const bitt_store *store, const char *error, const char *what, char **copy);

/* Reads the store's clock for a backend call and, unless the backend is
 * concurrent, keeps the store locked until bitt__store_leave. Engine state
 * (next_purge) read or written between the two must go through
 * bitt__store_lock_state, which locks only for a concurrent backend. */
void bitt__store_enter(bitt_store *store, bitt_time *t);
void bitt__store_leave(bitt_store *store);
void bitt__store_lock_state(bitt_store *store);
void bitt__store_unlock_state(bitt_store *store);
/* The backend's io_slots (0 when it has none): see bitt_backend_ops. */
size_t bitt__store_io_slots(bitt_store *store);

#endif /* BITT_INTERNAL_H */
