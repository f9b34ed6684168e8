/*
 * core/internal.h: what the engine and the backends share. Nothing here is
 * exported: the library is built with -fvisibility=hidden and only bitt.h's
 * BITT_API functions leave it. Internal names start with bitt__.
 */
#ifndef BITT_INTERNAL_H
#define BITT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

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
    char *scheme; /* "memory", "sqlite", ... */
    char *rest;   /* everything between "scheme:" and "?", percent-decoded */
    bitt_url_param *params;
    size_t param_count;
} bitt_url;

int bitt__url_parse(const char *text, bitt_url *out);
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
} bitt_limits;

#define BITT_DEFAULT_MAX_KEY_SIZE 2048
#define BITT_DEFAULT_MAX_VALUE_SIZE 65536
#define BITT_MAX_KEY_SIZE_CAP 65536
#define BITT_MAX_VALUE_SIZE_CAP (64 * 1024 * 1024)

/* The time a backend call runs at. manual is set when a test clock is
 * installed: a backend with a clock of its own (a database server) must use
 * `now` then, and may use its own otherwise. */
typedef struct bitt_time {
    int64_t now;
    int manual;
} bitt_time;

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
    BITT_OP_SUM = 4 /* add delta to a counter; a created key gets ttl_ms */
    /* later modules append here: enqueue, outbox append, lease fence */
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
    int want_old; /* DELETE: hand back the removed entry in `old` (take) */

    /* results, set by the backend when the commit succeeds */
    int found;       /* DELETE: a live value was removed */
    bitt_entry *old; /* DELETE with want_old and found: owned by the engine */
    int64_t result;  /* SUM: the new value */
} bitt_op;

typedef struct bitt_commit {
    bitt_op *ops;
    size_t count;
    bitt_time time;
    uint64_t version; /* out: the commit's versionstamp */
    size_t failed;    /* out on BITT_ECONFLICT: index of the failed check */
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

/* ---- the backend interface ---------------------------------------------- */
/*
 * One vtable per backend, like sqlite3_vfs: `version` first, entries only
 * ever appended, a NULL entry means "not supported" (the engine answers
 * BITT_EUNSUPPORTED or falls back). The engine holds the store's mutex
 * around every call, validates every argument and applies every limit
 * before calling; a backend does storage work only. A backend reports
 * failures with bitt__fail() and must leave nothing half-written.
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
} bitt_backend_ops;

#define BITT_BACKEND_OPS_VERSION 1

extern const bitt_backend_ops bitt__memory_backend;
extern const bitt_backend_ops bitt__sqlite_backend;

/* ---- the store handle (core/store.c) ------------------------------------ */

struct bitt_store {
    const bitt_backend_ops *ops;
    bitt_backend *be;
    pthread_mutex_t lock;
    bitt_limits limits;
    int manual_clock;
    int64_t manual_now;
    int64_t next_purge; /* when a write next sweeps expired rows */
};

/* Locks the store and reads its clock. */
void bitt__store_enter(bitt_store *store, bitt_time *t);
void bitt__store_leave(bitt_store *store);

#endif /* BITT_INTERNAL_H */
