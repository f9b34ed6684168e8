/*
 * bitt.h: the one public header of bitt, a durable state core with one C ABI.
 *
 * Conventions (they hold for every function below):
 *
 *  - Every fallible function returns an int status: BITT_OK (0), a small
 *    positive outcome that is not an error (BITT_NOTFOUND, BITT_EXISTS), or a
 *    negative BITT_E* code. Codes are pinned and append-only.
 *  - After a negative status, bitt_error_last() gives a message for the
 *    failure on the calling thread. It never contains a password.
 *  - Inputs are (pointer, length) pairs and are only borrowed for the call.
 *    A NULL pointer with length 0 is the empty byte string.
 *  - Objects the library returns (bitt_store, bitt_entry, bitt_entries,
 *    bitt_txn, bitt_buf contents) are owned by the caller and released with
 *    the matching bitt_*_free / bitt_*_close / bitt_buf_dispose, all of which
 *    accept NULL.
 *  - Output parameters come last. An optional output may be NULL.
 *
 * Threads:
 *  - A bitt_store may be shared by any number of threads. On the memory and
 *    SQLite backends calls on one store serialize on a mutex inside the
 *    handle; open several stores on one URL for parallel work. On
 *    PostgreSQL and Redis calls from several threads run at once, each on a
 *    connection of the store's pool (URL option pool=N, default 16, opened
 *    as needed); the mutex only guards the clock. On PostgreSQL, plain
 *    bitt_kv_set calls of threads that meet commit in one transaction, each
 *    with its own versionstamp (and all fail together if it fails).
 *  - bitt_store_close() must not race another call on the same store: the
 *    caller ends every other use first.
 *  - A bitt_txn or a bitt_sub is used by one thread at a time. bitt_entry,
 *    bitt_entries, bitt_message(s), bitt_schedule and bitt_buf are plain
 *    data: read them from any thread, free them once.
 *  - Waits (bitt_queue_dequeue with wait_ms, bitt_pubsub_next) do not hold
 *    the store's mutex while they wait: other threads keep using the store.
 *  - The last-error message is per thread; read it on the thread that got the
 *    failing status, before that thread calls bitt again.
 */
#ifndef BITT_H
#define BITT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- export and version ------------------------------------------------ */

#if defined(_WIN32) && defined(BITT_BUILDING_SHARED)
#define BITT_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define BITT_API __attribute__((visibility("default")))
#else
#define BITT_API
#endif

#define BITT_VERSION_MAJOR 0
#define BITT_VERSION_MINOR 6
#define BITT_VERSION_PATCH 0
#define BITT_VERSION_STRING "0.6.0"
/* MAJOR * 1000000 + MINOR * 1000 + PATCH: compare the header you built with
 * against bitt_version_number() of the library you loaded. */
#define BITT_VERSION_NUMBER                                                                        \
    (BITT_VERSION_MAJOR * 1000000 + BITT_VERSION_MINOR * 1000 + BITT_VERSION_PATCH)

/* The loaded library's version, a static string such as "0.5.0". */
BITT_API const char *bitt_version(void);
/* The loaded library's BITT_VERSION_NUMBER. */
BITT_API int bitt_version_number(void);

/* ---- status codes ------------------------------------------------------- */

#define BITT_OK 0
#define BITT_NOTFOUND 1 /* the key (or item) is absent or expired: not an error */
#define BITT_EXISTS 2   /* add: the key is already present: not an error */
#define BITT_DENIED 3   /* a budget has too few tokens now: not an error */

#define BITT_EINVAL (-1)        /* an argument is malformed or out of range */
#define BITT_ENOMEM (-2)        /* an allocation failed */
#define BITT_ETOOLARGE (-3)     /* a key, value, batch or limit is over its bound */
#define BITT_ENOTCOUNTER (-4)   /* increment/sum on a value that is not a counter */
#define BITT_EOVERFLOW (-5)     /* a counter would leave the int64 range */
#define BITT_ECONFLICT (-6)     /* an atomic commit's check failed */
#define BITT_EBACKEND (-7)      /* the storage engine failed (I/O, SQL, protocol) */
#define BITT_EBUSY (-8)         /* the database stayed locked past the busy timeout */
#define BITT_ESCHEMA (-9)       /* schema missing, foreign or newer than this library */
#define BITT_EURL (-10)         /* the store URL or one of its options is not valid */
#define BITT_ECURSOR (-11)      /* a list cursor is malformed or from another selector */
#define BITT_EUSAGE (-12)       /* a call out of order (a txn committed twice, ...) */
#define BITT_EUNSUPPORTED (-13) /* the backend cannot do this */
#define BITT_ETOKEN (-14)       /* an ack token is stale: its lease ended or moved on */
#define BITT_ELEASELOST (-15)   /* the caller does not hold the lease (owner/epoch) */
#define BITT_ECANCELED (-16)    /* a wait was cancelled through its bitt_cancel */

/* A static, never-NULL description of a status code ("conflict", ...). */
BITT_API const char *bitt_strerror(int status);
/* The message of the last failure on this thread, or "" when there is none.
 * The string is owned by the library and valid until this thread's next
 * bitt call. */
BITT_API const char *bitt_error_last(void);
/* The status code that went with bitt_error_last(), or BITT_OK. */
BITT_API int bitt_error_last_code(void);
/* Forget this thread's last failure. */
BITT_API void bitt_error_clear(void);

/* ---- library-allocated bytes -------------------------------------------- */

/* A byte buffer the library fills and grows. Start with BITT_BUF_INIT (or
 * zeroes); release with bitt_buf_dispose(). ptr is NUL-terminated (the NUL
 * is not counted in len) whenever it is not NULL. */
typedef struct bitt_buf {
    uint8_t *ptr;
    size_t len;
    size_t cap;
} bitt_buf;

#define BITT_BUF_INIT                                                                              \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Frees buf->ptr and resets the buffer to empty. Accepts NULL. */
BITT_API void bitt_buf_dispose(bitt_buf *buf);
/* Frees memory the library returned as a bare pointer. Accepts NULL. */
BITT_API void bitt_free(void *ptr);

/* ---- tuple keys --------------------------------------------------------- */
/*
 * An order-preserving encoding of tuples, so that hierarchical keys sort the
 * same in every language: comparing two encodings with memcmp() orders them
 * as the tuples, part by part, with a shorter tuple before its extensions.
 * Between types: bytes < string < integer < float < false < true.
 * Within a type: bytes and strings bytewise, integers and floats by value
 * (-0.0 is stored as 0.0; NaN is refused). Strings must be valid UTF-8.
 *
 * Build a key by appending parts to a bitt_buf; read it back with
 * bitt_tuple_next().
 */
#define BITT_TUPLE_BYTES 1
#define BITT_TUPLE_STRING 2
#define BITT_TUPLE_INT 3
#define BITT_TUPLE_FLOAT 4
#define BITT_TUPLE_BOOL 5

BITT_API int bitt_tuple_push_bytes(bitt_buf *key, const void *data, size_t len);
BITT_API int bitt_tuple_push_string(bitt_buf *key, const char *utf8, size_t len);
BITT_API int bitt_tuple_push_int(bitt_buf *key, int64_t value);
BITT_API int bitt_tuple_push_float(bitt_buf *key, double value);
BITT_API int bitt_tuple_push_bool(bitt_buf *key, int value);

/*
 * Decodes the part of the encoded key that starts at *offset and moves
 * *offset past it. Returns BITT_OK with the part, BITT_NOTFOUND at the end of
 * the key, BITT_EINVAL when the bytes are not a tuple encoding. *type gets a
 * BITT_TUPLE_* value; bytes and strings are written (unescaped) into data,
 * which is reset first; integers and booleans into *int_value; floats into
 * *float_value. data, int_value and float_value may be NULL when unused.
 */
BITT_API int bitt_tuple_next(const void *key, size_t key_len, size_t *offset, int *type,
                             bitt_buf *data, int64_t *int_value, double *float_value);

/* ---- the store ---------------------------------------------------------- */

typedef struct bitt_store bitt_store;

/*
 * Opens a store from a URL:
 *   memory:                 a private in-process store
 *   sqlite:PATH             a SQLite file (created when missing)
 *   sqlite::memory:         a private in-memory SQLite database
 *   postgres://USER:PASSWORD@HOST:PORT/DB   (or postgresql://) PostgreSQL 13+;
 *                           options schema=, table_prefix=, statement_timeout=MS,
 *                           pool=N, spin_us=US and libpq's own (sslmode=,
 *                           connect_timeout=, ...)
 *   redis://[USER:PASSWORD@]HOST:PORT/DB and unix:/PATH/redis.sock?db=N
 *                           Redis with maxmemory-policy noeviction; options
 *                           prefix=, timeout=MS, allow_eviction=1, pool=N, spin_us=US
 *   spin_us=US (PostgreSQL, Redis): how long, at most, a wait for a reply spins
 *                           before the thread sleeps (default 200, 0 never)
 * Options follow as a query string: sqlite:app.db?busy_timeout=2000&table_prefix=app_
 *   max_key_size=N      longest key in bytes (default 2048, at most
 *                       BITT_KEY_SIZE_MAX = 2400 on every backend)
 *   max_value_size=N    largest value in bytes (default 65536, at most
 *                       BITT_VALUE_SIZE_MAX = 67108864)
 *   auto_migrate=1|0    create or upgrade the schema on open (default 1)
 *   SQLite only: busy_timeout=MS (5000), table_prefix=[A-Za-z0-9_]{0,32} (""),
 *   synchronous=off|normal|full (normal), cache_size=KIB (65536)
 * An unknown option, or one that does not belong to the scheme, is refused
 * with BITT_EURL. On success *out is a new store to close with
 * bitt_store_close(); on failure *out is NULL.
 */
BITT_API int bitt_store_open(const char *url, bitt_store **out);
/* Closes the store and frees it. Accepts NULL. */
BITT_API void bitt_store_close(bitt_store *store);
/* Creates or upgrades the schema. Idempotent, and safe from several
 * processes at once. A database of a newer schema is refused (BITT_ESCHEMA). */
BITT_API int bitt_store_migrate(bitt_store *store);
/* The backend's name: "memory", "sqlite", "postgres" or "redis". Static. */
BITT_API const char *bitt_store_backend(const bitt_store *store);

/* ---- the clock ---------------------------------------------------------- */
/*
 * Every TTL is decided by the store's clock, in milliseconds since the Unix
 * epoch: the system clock unless a test installs a manual one on the handle.
 * The manual clock only moves when told, so TTL cases run without sleeping.
 *
 * The end of time: a time plus a duration (an expiry, the end of a lease or
 * a delivery, a due time, a next run, a retention) saturates at INT64_MAX,
 * and no clock reaches INT64_MAX, so a saturated time never comes: a key
 * with TTL INT64_MAX reports expires_at INT64_MAX and never expires; a
 * message or schedule due at INT64_MAX is never due.
 */
/* Installs a manual clock at now_ms, in 0 .. INT64_MAX - 1 (INT64_MAX, the
 * end of time, is BITT_EINVAL). */
BITT_API int bitt_clock_set_manual(bitt_store *store, int64_t now_ms);
/* Moves the manual clock forward by ms (>= 0); BITT_EINVAL when it would
 * reach INT64_MAX, BITT_EUSAGE without a manual clock. */
BITT_API int bitt_clock_advance(bitt_store *store, int64_t ms);
/* Goes back to the system clock. */
BITT_API int bitt_clock_use_system(bitt_store *store);
/* The store's current time in ms. */
BITT_API int bitt_clock_now(bitt_store *store, int64_t *out);

/* ---- KV values and entries ---------------------------------------------- */

/* The kind tag every value carries and every backend round-trips. */
#define BITT_KIND_BYTES 0   /* opaque bytes */
#define BITT_KIND_JSON 1    /* one UTF-8 JSON text (RFC 8259), checked on write */
#define BITT_KIND_COUNTER 2 /* an int64 as canonical decimal ASCII ("-42") */

/* A TTL of 0 ms means "no expiry". A TTL is a count of ms from the store's
 * clock: the key is live while now < set time + ttl, a sum that saturates
 * at INT64_MAX, which no clock reaches (see the clock): a TTL that large
 * never expires. Negative is refused. */
#define BITT_TTL_NONE 0

typedef struct bitt_entry bitt_entry;

BITT_API const uint8_t *bitt_entry_key(const bitt_entry *entry, size_t *len);
/* The value bytes (NUL-terminated for convenience, the NUL not counted). */
BITT_API const uint8_t *bitt_entry_value(const bitt_entry *entry, size_t *len);
BITT_API int bitt_entry_kind(const bitt_entry *entry);
/* The versionstamp of the write that made this value (>= 1). */
BITT_API uint64_t bitt_entry_version(const bitt_entry *entry);
/* When the entry expires (ms on the store's clock), or 0 for never
 * (INT64_MAX, a saturated expiry, never comes either). */
BITT_API int64_t bitt_entry_expires_at(const bitt_entry *entry);
/* The value of a counter entry; BITT_ENOTCOUNTER for any other kind. */
BITT_API int bitt_entry_counter(const bitt_entry *entry, int64_t *out);
BITT_API void bitt_entry_free(bitt_entry *entry);

/* An ordered list of entries (from get-many or list). */
typedef struct bitt_entries bitt_entries;

BITT_API size_t bitt_entries_count(const bitt_entries *entries);
/* The i-th entry, borrowed: valid until bitt_entries_free(). NULL for a key
 * of get-many that was absent, or for i out of range. */
BITT_API const bitt_entry *bitt_entries_at(const bitt_entries *entries, size_t i);
/* The cursor that continues a list after this page, as a NUL-terminated
 * printable string (borrowed), or NULL when the selection is exhausted. */
BITT_API const char *bitt_entries_cursor(const bitt_entries *entries);
BITT_API void bitt_entries_free(bitt_entries *entries);

/* ---- KV operations ------------------------------------------------------ */

/* The largest max_key_size and max_value_size a store URL may ask for, the
 * same on every backend (a PostgreSQL btree index entry holds at most 2704
 * bytes; the key cap leaves room for the queue's (topic, dedup key) index). */
#define BITT_KEY_SIZE_MAX 2400
#define BITT_VALUE_SIZE_MAX (64 * 1024 * 1024)
/* JSON values (BITT_KIND_JSON) nested deeper than this (arrays and objects)
 * are refused with BITT_EINVAL, so no reader needs unbounded recursion. */
#define BITT_JSON_DEPTH_MAX 512

#define BITT_GET_MANY_MAX 1000
#define BITT_LIST_LIMIT_MAX 1000
#define BITT_LIST_LIMIT_DEFAULT 100
#define BITT_TXN_OPS_MAX 1000

/* Reads a key. BITT_OK with *out (free with bitt_entry_free) or
 * BITT_NOTFOUND with *out = NULL. */
BITT_API int bitt_kv_get(bitt_store *store, const void *key, size_t key_len, bitt_entry **out);

/* Reads up to BITT_GET_MANY_MAX keys from one snapshot. *out has one slot
 * per key, in order; an absent key's slot is NULL. */
BITT_API int bitt_kv_get_many(bitt_store *store, const void *const *keys, const size_t *key_lens,
                              size_t count, bitt_entries **out);

/* Writes a value of the given kind; ttl_ms as described at BITT_TTL_NONE.
 * *version_out (optional) gets the new versionstamp. */
BITT_API int bitt_kv_set(bitt_store *store, const void *key, size_t key_len, const void *value,
                         size_t value_len, int kind, int64_t ttl_ms, uint64_t *version_out);

/* Deletes a key: BITT_OK when it was there, BITT_NOTFOUND when not. */
BITT_API int bitt_kv_delete(bitt_store *store, const void *key, size_t key_len);

/* Sets the key only if it is absent (or expired): BITT_OK when written,
 * BITT_EXISTS when a live value was there (nothing changes). */
BITT_API int bitt_kv_add(bitt_store *store, const void *key, size_t key_len, const void *value,
                         size_t value_len, int kind, int64_t ttl_ms, uint64_t *version_out);

/* Reads and deletes a key in one step: BITT_OK with *out, or BITT_NOTFOUND. */
BITT_API int bitt_kv_take(bitt_store *store, const void *key, size_t key_len, bitt_entry **out);

/*
 * Adds delta to a counter. A missing or expired key becomes delta, with
 * ttl_ms (BITT_TTL_NONE for none); a live key keeps its TTL. A value of
 * another kind gives BITT_ENOTCOUNTER and a result outside int64 gives
 * BITT_EOVERFLOW; in both cases nothing changes. *value_out gets the new
 * value, *version_out the new versionstamp (both optional).
 */
BITT_API int bitt_kv_increment(bitt_store *store, const void *key, size_t key_len, int64_t delta,
                               int64_t ttl_ms, int64_t *value_out, uint64_t *version_out);

/*
 * Which keys a list reads. A NULL pointer means "not given"; a non-NULL
 * pointer with length 0 is the empty key. With a prefix, the selection is
 * every key that starts with those bytes (a byte range, never a pattern),
 * the prefix itself included; start and end, when given with a prefix, must
 * lie inside it and narrow it. start is inclusive, end exclusive.
 * limit 0 means BITT_LIST_LIMIT_DEFAULT; more than BITT_LIST_LIMIT_MAX is
 * refused. cursor continues a previous page of the same selector (same
 * prefix, start, end and direction); any other cursor is BITT_ECURSOR.
 */
typedef struct bitt_list_options {
    unsigned int version; /* BITT_LIST_OPTIONS_VERSION */
    const void *prefix;
    size_t prefix_len;
    const void *start;
    size_t start_len;
    const void *end;
    size_t end_len;
    uint32_t limit;
    int reverse;
    const char *cursor; /* NUL-terminated, or NULL */
} bitt_list_options;

#define BITT_LIST_OPTIONS_VERSION 1
#define BITT_LIST_OPTIONS_INIT                                                                     \
    {                                                                                              \
        BITT_LIST_OPTIONS_VERSION, NULL, 0, NULL, 0, NULL, 0, 0, 0, NULL                           \
    }
BITT_API int bitt_list_options_init(bitt_list_options *opts, unsigned int version);

/* Lists live entries in key order (or reverse), one snapshot per page. */
BITT_API int bitt_kv_list(bitt_store *store, const bitt_list_options *opts, bitt_entries **out);

/* Deletes expired entries now (they are also dropped lazily). *removed_out
 * (optional) gets how many. */
BITT_API int bitt_kv_purge_expired(bitt_store *store, uint64_t *removed_out);

/* ---- atomic commits ----------------------------------------------------- */
/*
 * A txn gathers checks and mutations and commits them all or none, under one
 * new versionstamp. Checks are evaluated first, against the committed state;
 * mutations then apply in the order given, each seeing the ones before it.
 * A txn commits once; it is freed with bitt_txn_free() in any case.
 *
 * A refused op (a bad argument, a limit, out of memory) fails the whole txn:
 * every later op call returns that same status, and bitt_txn_commit returns
 * it with its message and writes nothing. So code that ignores an op's
 * status can never commit the other ops without it (a set without the check
 * that guarded it).
 */
typedef struct bitt_txn bitt_txn;

BITT_API int bitt_txn_begin(bitt_store *store, bitt_txn **out);
/* Requires the key to be at this versionstamp; version 0 means "absent". */
BITT_API int bitt_txn_check(bitt_txn *txn, const void *key, size_t key_len, uint64_t version);
BITT_API int bitt_txn_set(bitt_txn *txn, const void *key, size_t key_len, const void *value,
                          size_t value_len, int kind, int64_t ttl_ms);
BITT_API int bitt_txn_delete(bitt_txn *txn, const void *key, size_t key_len);
/* bitt_kv_increment inside the commit (a created key has no TTL). */
BITT_API int bitt_txn_sum(bitt_txn *txn, const void *key, size_t key_len, int64_t delta);
/* BITT_OK with the commit's versionstamp, BITT_ECONFLICT when a check
 * failed, the status of the first refused op, or another error; nothing is
 * written unless BITT_OK. */
BITT_API int bitt_txn_commit(bitt_txn *txn, uint64_t *version_out);
BITT_API void bitt_txn_free(bitt_txn *txn);

/* ---- names ---------------------------------------------------------------- */
/*
 * Topics, lease names, owners, outbox streams, channels, budgets and
 * schedule keys are names: NUL-terminated UTF-8, 1 to 255 bytes. Anything
 * else is refused with BITT_EINVAL.
 */
#define BITT_NAME_MAX 255

/* The longest delay, lease, TTL of a lease or schedule interval accepted, in
 * ms (about 35 years). now + duration saturates at INT64_MAX, the end of
 * time (see the clock). */
#define BITT_DURATION_MAX_MS ((int64_t)1 << 40)

/* ---- messages: queue messages, outbox events, published messages --------- */
/*
 * One read-only record type serves the queue, the outbox and
 * publish/subscribe; a field a module does not use reads as 0 or NULL.
 */
typedef struct bitt_message bitt_message;

/* Queue: the message id. Outbox: the event's sequence number in its stream.
 * Publish/subscribe: the message's position in the store's log. */
BITT_API uint64_t bitt_message_id(const bitt_message *msg);
/* The topic, stream or channel (borrowed, NUL-terminated). */
BITT_API const char *bitt_message_topic(const bitt_message *msg);
BITT_API const uint8_t *bitt_message_payload(const bitt_message *msg, size_t *len);
BITT_API int bitt_message_kind(const bitt_message *msg);
/* Queue: the ack token of this delivery (borrowed), NULL elsewhere. */
BITT_API const char *bitt_message_token(const bitt_message *msg);
/* Deliveries so far (queue) or failed attempts recorded (outbox). */
BITT_API uint32_t bitt_message_attempts(const bitt_message *msg);
BITT_API uint32_t bitt_message_max_attempts(const bitt_message *msg);
/* The error of the previous attempt (borrowed), or NULL. */
BITT_API const char *bitt_message_last_error(const bitt_message *msg);
/* When it was enqueued, appended or published (ms, store clock). */
BITT_API int64_t bitt_message_created_at(const bitt_message *msg);
/* Queue: when this delivery's lease ends. Outbox: the next attempt time
 * recorded by bitt_outbox_fail (0 = none). */
BITT_API int64_t bitt_message_due_at(const bitt_message *msg);
/* Dead letters: when the message died. Parked events: when parked. */
BITT_API int64_t bitt_message_failed_at(const bitt_message *msg);
/* Parked events: BITT_PARK_POISON or BITT_PARK_INVALID; 0 elsewhere. */
BITT_API int bitt_message_park_reason(const bitt_message *msg);
/* Queue: the message's BITT_MSG_* state (dequeue: LEASED; dead list:
 * DEAD; bitt_queue_get: as it is); 0 elsewhere. */
BITT_API int bitt_message_state(const bitt_message *msg);
/* Queue: the message's priority (bitt_enqueue_options); 0 elsewhere. */
BITT_API int32_t bitt_message_priority(const bitt_message *msg);
/* Queue, a done message (kept by queue_done_retention): when it was acked;
 * 0 elsewhere. */
BITT_API int64_t bitt_message_done_at(const bitt_message *msg);
/* Queue, a done message: the result it was acked with (borrowed; NULL and
 * *len 0 when none) and that value's kind (-1 when none). */
BITT_API const uint8_t *bitt_message_result(const bitt_message *msg, size_t *len);
BITT_API int bitt_message_result_kind(const bitt_message *msg);
BITT_API void bitt_message_free(bitt_message *msg);

typedef struct bitt_messages bitt_messages;

BITT_API size_t bitt_messages_count(const bitt_messages *list);
/* The i-th message, borrowed until bitt_messages_free(); NULL out of range. */
BITT_API const bitt_message *bitt_messages_at(const bitt_messages *list, size_t i);
BITT_API void bitt_messages_free(bitt_messages *list);

/* ---- cancellation --------------------------------------------------------- */
/*
 * A cancel token ends waits from another thread, in the spirit of
 * sqlite3_interrupt but for one wait rather than a whole connection: a
 * binding makes one per cancellable call (an asyncio task, an AbortSignal,
 * a Go context), passes it to the *_cancel form of a waiting call, and fires
 * it when the caller gives up. A wait whose token is fired before or while
 * it runs returns BITT_ECANCELED within one wait slice (waits look at their
 * store at least every 50 ms; a wait in this process's memory or SQLite
 * store wakes at once), and has taken nothing: a dequeue that claimed
 * messages as the token fired hands them back unseen (bitt_queue_snooze with
 * no delay: no attempt used). A token stays fired until reset, so one token
 * can end several calls. bitt_cancel_fire is safe from any thread at any
 * time, also while a call uses the token; free it only when no call does.
 */
typedef struct bitt_cancel bitt_cancel;

BITT_API int bitt_cancel_new(bitt_cancel **out);
BITT_API void bitt_cancel_fire(bitt_cancel *cancel);
/* 1 once fired (until reset), else 0; 0 for NULL. */
BITT_API int bitt_cancel_fired(const bitt_cancel *cancel);
BITT_API void bitt_cancel_reset(bitt_cancel *cancel);
BITT_API void bitt_cancel_free(bitt_cancel *cancel);

/* ---- queue ---------------------------------------------------------------- */
/*
 * A message is pending (claimable), delayed (claimable from a later time),
 * processing (leased to one consumer, with an ack token), or dead. dequeue
 * hands out the messages that have been claimable longest: pending since
 * enqueue, delayed since their time came, expired leases since they expired,
 * so new work cannot starve retries. Each delivery counts as an attempt and
 * carries a fresh token; ack, nack and extend need the current token of a
 * live lease (BITT_ETOKEN otherwise, and nothing changes). A nack retries
 * after the backoff; a lease that runs out makes the message claimable at
 * once (it waited out its lease). Once max_attempts deliveries are used up,
 * either one dead-letters the message instead.
 *
 * Store URL options: queue_lease=MS (default lease, 30000),
 * queue_backoff=D1,D2,...  (delays in ms by attempt, the last one repeats)
 * or queue_backoff=exp:BASE:CAP (BASE * 2^(attempt-1), at most CAP;
 * default exp:1000:300000).
 */
#define BITT_DEQUEUE_MAX 1000
#define BITT_MAX_ATTEMPTS_DEFAULT 3

typedef struct bitt_enqueue_options {
    unsigned int version;  /* BITT_ENQUEUE_OPTIONS_VERSION */
    int64_t delay_ms;      /* claimable from now + delay_ms (>= 0) */
    uint32_t max_attempts; /* deliveries before dead-lettering; 0 = default 3 */
    /* At most one live (pending, delayed or processing) message per
     * deduplication key and topic; NULL = none. */
    const void *dedup_key;
    size_t dedup_key_len;
    /* Version 2. Claimed before every message of a lower priority (see
     * dequeue); any int32, default 0. A version-1 caller's struct ends
     * before this field and is read as priority 0. */
    int32_t priority;
} bitt_enqueue_options;

#define BITT_ENQUEUE_OPTIONS_VERSION 2
#define BITT_ENQUEUE_OPTIONS_INIT                                                                  \
    {                                                                                              \
        BITT_ENQUEUE_OPTIONS_VERSION, 0, 0, NULL, 0, 0                                             \
    }
/* Fills opts with the defaults of `version`: BITT_ENQUEUE_OPTIONS_VERSION,
 * or 1 for a caller built against bitt.h 0.5 or older, whose shorter
 * struct is written only up to its own members. */
BITT_API int bitt_enqueue_options_init(bitt_enqueue_options *opts, unsigned int version);

/* Enqueues payload on topic; opts may be NULL. BITT_OK with the new id, or
 * BITT_EXISTS with the id of the live message holding the dedup key. Ids
 * are unique in the store and grow in enqueue order; they need not be
 * consecutive (on PostgreSQL a failed commit's enqueues skip theirs). */
BITT_API int bitt_queue_enqueue(bitt_store *store, const char *topic, const void *payload,
                                size_t payload_len, int kind, const bitt_enqueue_options *opts,
                                uint64_t *id_out);

typedef struct bitt_dequeue_options {
    unsigned int version; /* BITT_DEQUEUE_OPTIONS_VERSION */
    uint32_t limit;       /* 1..BITT_DEQUEUE_MAX; 0 = 1 */
    int64_t lease_ms;     /* lease of each message; 0 = the store's queue_lease */
    /* Wait up to this long (ms) for a first message when none is claimable;
     * an enqueue in this process wakes the wait at once, other processes'
     * work is seen within 50 ms. 0 = return at once. */
    int64_t wait_ms;
} bitt_dequeue_options;

#define BITT_DEQUEUE_OPTIONS_VERSION 1
#define BITT_DEQUEUE_OPTIONS_INIT                                                                  \
    {                                                                                              \
        BITT_DEQUEUE_OPTIONS_VERSION, 0, 0, 0                                                      \
    }
BITT_API int bitt_dequeue_options_init(bitt_dequeue_options *opts, unsigned int version);

/* Leases up to limit messages of topic; *out may hold none. The store's
 * mutex is not held while waiting. A higher priority is always claimed
 * first; within one priority, the messages claimable longest. */
BITT_API int bitt_queue_dequeue(bitt_store *store, const char *topic,
                                const bitt_dequeue_options *opts, bitt_messages **out);
/* bitt_queue_dequeue that cancel (may be NULL) can end: BITT_ECANCELED,
 * *out NULL and nothing leased when it fires before the call returns. */
BITT_API int bitt_queue_dequeue_cancel(bitt_store *store, const char *topic,
                                       const bitt_dequeue_options *opts, bitt_cancel *cancel,
                                       bitt_messages **out);
/* One dequeue over several topics (1..BITT_DEQUEUE_TOPICS_MAX distinct
 * names): whatever is claimable across them in the same order as one
 * topic's (priority, then claimable longest, then id), each message
 * carrying its topic (bitt_message_topic) for its ack. A repeated topic is
 * BITT_EINVAL. cancel may be NULL. */
#define BITT_DEQUEUE_TOPICS_MAX 64
BITT_API int bitt_queue_dequeue_topics(bitt_store *store, const char *const *topics,
                                       size_t topic_count, const bitt_dequeue_options *opts,
                                       bitt_cancel *cancel, bitt_messages **out);
/* Finishes a delivery: the message is deleted. */
BITT_API int bitt_queue_ack(bitt_store *store, const char *topic, uint64_t id, const char *token);
/* Finishes many deliveries of topic in one transaction (one round trip on
 * the servers), in order: each (ids[i], tokens[i]) is acked exactly as
 * bitt_queue_ack would when its lease is live and the token matches
 * (statuses[i] = BITT_OK); otherwise statuses[i] = BITT_ETOKEN and that
 * message is left alone (so is a second item with the same id). statuses
 * (count ints) and acked_out may be NULL. BITT_OK when the call ran, even if
 * some items were stale. A bad topic, NULL arrays with count > 0, a NULL
 * token or one longer than a token (32 bytes), or count over
 * BITT_ACK_MANY_MAX fails the whole call before anything is written. count 0
 * does nothing. */
#define BITT_ACK_MANY_MAX BITT_DEQUEUE_MAX
BITT_API int bitt_queue_ack_many(bitt_store *store, const char *topic, const uint64_t *ids,
                                 const char *const *tokens, size_t count, int *statuses,
                                 size_t *acked_out);
/* Gives a delivery back after a failure, recording error (may be NULL).
 * delay_ms < 0 uses the backoff; >= 0 retries after that many ms. On the
 * last attempt the message is dead-lettered instead.
 *
 * Error texts (here, bitt_outbox_fail, bitt_outbox_park) are recorded as
 * UTF-8 on every backend: each invalid sequence of the given bytes (its
 * maximal subpart) becomes U+FFFD, as Python's errors="replace" decodes;
 * one longer than max_value_size is BITT_ETOOLARGE. */
BITT_API int bitt_queue_nack(bitt_store *store, const char *topic, uint64_t id, const char *token,
                             const char *error, int64_t delay_ms);
/* The lease now ends lease_ms from now (0 hands the message back now). */
BITT_API int bitt_queue_extend(bitt_store *store, const char *topic, uint64_t id, const char *token,
                               int64_t lease_ms);
/* Gives a delivery back unseen, claimable again delay_ms from now (0 = at
 * once, as a wait's hand-back; River's snooze): unlike nack it uses no
 * attempt (the delivery is not counted) and records no error, so it never
 * dead-letters. Needs the current token of a live lease (BITT_ETOKEN
 * otherwise, and nothing changes). */
BITT_API int bitt_queue_snooze(bitt_store *store, const char *topic, uint64_t id, const char *token,
                               int64_t delay_ms);

/* ---- messages by id ----
 * A message of the queue can be read, cancelled and rescheduled by its id
 * (and topic, which must match). bitt_queue_get gives its state: */
#define BITT_MSG_PENDING 1 /* claimable now (also a lease that ran out) */
#define BITT_MSG_DELAYED 2 /* claimable from due_at */
#define BITT_MSG_LEASED 3  /* under a live lease until due_at */
#define BITT_MSG_DEAD 4    /* a dead letter since failed_at */
#define BITT_MSG_DONE 5    /* acked at done_at, kept for queue_done_retention */
/* BITT_OK with *out (free with bitt_message_free): state, priority,
 * attempts, max_attempts, last_error, created_at, due_at (claimable from,
 * or the lease's end), failed_at; never a token. BITT_NOTFOUND when topic
 * holds no message id (acked, cancelled, deleted, or never there). */
BITT_API int bitt_queue_get(bitt_store *store, const char *topic, uint64_t id, bitt_message **out);
/* Cancels a pending, delayed or leased message: it is deleted (its dedup
 * key is free again) and an ack, nack, extend or snooze of its delivery is
 * refused (BITT_ETOKEN). BITT_OK when cancelled, BITT_NOTFOUND when topic
 * holds no such live message (a dead letter: bitt_queue_dead_delete). */
BITT_API int bitt_queue_cancel(bitt_store *store, const char *topic, uint64_t id);
/* Moves a pending or delayed message's due time to delay_ms from now (0 =
 * claimable at once: a waiting dequeue wakes). Its attempts and error stay.
 * BITT_OK, or BITT_NOTFOUND when topic holds no pending or delayed message
 * id (a leased one is its consumer's: nack or snooze it). */
BITT_API int bitt_queue_reschedule(bitt_store *store, const char *topic, uint64_t id,
                                   int64_t delay_ms);

/* ---- retention ----
 * By default an acked message is deleted and a dead letter is kept until it
 * is retried or deleted. The store URL options queue_done_retention=MS
 * (keep acked messages as BITT_MSG_DONE for MS) and queue_dead_retention=MS
 * (drop dead letters MS after they died) change that, for every topic.
 * A done message holds no dedup key and is never claimed, cancelled or
 * rescheduled; bitt_queue_get reads it (done_at, result) and stats count
 * it. Every queue call on a topic first drops what outlived its retention
 * there, and the store drops it on every topic now and then. */

/* As bitt_queue_ack, and the message, kept done, carries result (a value
 * of kind; NULL with len 0 for none). Without queue_done_retention the
 * result goes with the message. */
BITT_API int bitt_queue_ack_result(bitt_store *store, const char *topic, uint64_t id,
                                   const char *token, const void *result, size_t result_len,
                                   int kind);
/* Drops the done messages and dead letters of topic (NULL: of every topic)
 * that outlived their retention; *removed_out (may be NULL) gets how many. */
BITT_API int bitt_queue_purge(bitt_store *store, const char *topic, uint64_t *removed_out);

/* Dead letters of topic in id order, after after_id, at most limit (0 =
 * 100, at most 1000). */
BITT_API int bitt_queue_dead_list(bitt_store *store, const char *topic, uint64_t after_id,
                                  uint32_t limit, bitt_messages **out);
/* Puts dead message id back (id 0: every dead message of topic) with its
 * attempts reset; *count_out gets how many. */
BITT_API int bitt_queue_dead_retry(bitt_store *store, const char *topic, uint64_t id,
                                   uint64_t *count_out);
/* Deletes dead message id (0: all of topic); *count_out gets how many. */
BITT_API int bitt_queue_dead_delete(bitt_store *store, const char *topic, uint64_t id,
                                    uint64_t *count_out);

typedef struct bitt_queue_stats {
    unsigned int version; /* set by the caller: BITT_QUEUE_STATS_VERSION */
    uint64_t pending;     /* claimable now (incl. expired leases) */
    uint64_t delayed;     /* claimable later */
    uint64_t processing;  /* under a live lease */
    uint64_t dead;
    int64_t oldest_pending_at; /* since when the oldest claimable one waits, 0 = none */
    /* Version 2. Acked and kept (queue_done_retention). A version-1
     * caller's struct ends before it and is filled up to its own end. */
    uint64_t done;
} bitt_queue_stats;

#define BITT_QUEUE_STATS_VERSION 2
BITT_API int bitt_queue_stats_get(bitt_store *store, const char *topic, bitt_queue_stats *out);

/* Enqueue inside an atomic commit (opts may be NULL). A dedup key that is
 * already live makes this enqueue a no-op; the commit still succeeds. */
BITT_API int bitt_txn_enqueue(bitt_txn *txn, const char *topic, const void *payload,
                              size_t payload_len, int kind, const bitt_enqueue_options *opts);
/* Queue ops inside an atomic commit, each as its store call would do it,
 * applied in order with the commit's other ops, so "save the step's result
 * and ack the delivery" or "record the event and wake the run" is one
 * commit. A delivery op (ack, nack, snooze, extend) needs the current token
 * of a live lease when the commit runs: otherwise the commit fails with
 * BITT_ETOKEN and writes nothing. cancel and reschedule of a message that
 * is not in a state they apply to do nothing (the commit still succeeds).
 * A txn holds at most one of these per message id (a second one is
 * BITT_EINVAL): what one does to a message is never judged against
 * another's effect on it. */
BITT_API int bitt_txn_queue_ack(bitt_txn *txn, const char *topic, uint64_t id, const char *token);
BITT_API int bitt_txn_queue_nack(bitt_txn *txn, const char *topic, uint64_t id, const char *token,
                                 const char *error, int64_t delay_ms);
BITT_API int bitt_txn_queue_snooze(bitt_txn *txn, const char *topic, uint64_t id, const char *token,
                                   int64_t delay_ms);
BITT_API int bitt_txn_queue_extend(bitt_txn *txn, const char *topic, uint64_t id, const char *token,
                                   int64_t lease_ms);
BITT_API int bitt_txn_queue_cancel(bitt_txn *txn, const char *topic, uint64_t id);
BITT_API int bitt_txn_queue_reschedule(bitt_txn *txn, const char *topic, uint64_t id,
                                       int64_t delay_ms);
/* bitt_queue_ack_result inside an atomic commit (also one op per id). */
BITT_API int bitt_txn_queue_ack_result(bitt_txn *txn, const char *topic, uint64_t id,
                                       const char *token, const void *result, size_t result_len,
                                       int kind);

/* ---- leases --------------------------------------------------------------- */
/*
 * A lease is a named lock with an owner, an expiry and an epoch. acquire
 * succeeds only when the lease is free or expired, and every acquisition
 * increments the epoch, so epochs are unique and increasing per name: a
 * fencing token. renew and release need the current owner and epoch of a
 * live lease (BITT_ELEASELOST otherwise).
 */
/* BITT_OK with the new epoch and expiry, or BITT_EXISTS while another
 * acquisition is live (also one by the same owner). */
BITT_API int bitt_lease_acquire(bitt_store *store, const char *name, const char *owner,
                                int64_t ttl_ms, uint64_t *epoch_out, int64_t *expires_at_out);
BITT_API int bitt_lease_renew(bitt_store *store, const char *name, const char *owner,
                              uint64_t epoch, int64_t ttl_ms, int64_t *expires_at_out);
BITT_API int bitt_lease_release(bitt_store *store, const char *name, const char *owner,
                                uint64_t epoch);
/* The live holder: BITT_OK with owner (into owner_out, reset first), epoch
 * and expiry, or BITT_NOTFOUND when free or expired. Outputs may be NULL. */
BITT_API int bitt_lease_get(bitt_store *store, const char *name, bitt_buf *owner_out,
                            uint64_t *epoch_out, int64_t *expires_at_out);
/* Fences a commit: it succeeds only if owner holds lease name at epoch and
 * the lease is live when it commits; otherwise BITT_ELEASELOST and nothing
 * is written. */
BITT_API int bitt_txn_fence(bitt_txn *txn, const char *name, const char *owner, uint64_t epoch);

/* ---- outbox --------------------------------------------------------------- */
/*
 * Per stream, an ordered log of events committed with the state they
 * belong to. Sequence numbers increase per stream in commit order. A
 * dispatcher reads pending events in sequence order (whatever their next
 * attempt time: it decides eligibility, so per-stream order holds) and acks
 * them; it never skips an event, since pending is "not yet acked", never
 * "after the last one seen".
 */
#define BITT_PARK_POISON 1  /* the handler keeps failing on it */
#define BITT_PARK_INVALID 2 /* it can never be handled as it is */

/* Appends inside an atomic commit; the sequence number is assigned when it
 * commits. */
BITT_API int bitt_txn_outbox_append(bitt_txn *txn, const char *stream, const void *event,
                                    size_t event_len, int kind);
/* Appends on its own (a commit of one append); *seq_out optional. */
BITT_API int bitt_outbox_append(bitt_store *store, const char *stream, const void *event,
                                size_t event_len, int kind, uint64_t *seq_out);
/* Pending events in sequence order, at most limit (0 = 100, max 1000). */
BITT_API int bitt_outbox_pending(bitt_store *store, const char *stream, uint32_t limit,
                                 bitt_messages **out);
/* Acks (deletes) pending events by sequence number; *acked_out counts the
 * ones that were pending. At most 1000 at once. */
BITT_API int bitt_outbox_ack(bitt_store *store, const char *stream, const uint64_t *seqs,
                             size_t count, uint64_t *acked_out);
/* Records a failed attempt of a pending event: attempts + 1, its error, and
 * the next attempt time (0 = none). BITT_NOTFOUND if not pending. */
BITT_API int bitt_outbox_fail(bitt_store *store, const char *stream, uint64_t seq,
                              const char *error, int64_t next_attempt_at);
/* Moves a pending event to the parked list with a reason and error. */
BITT_API int bitt_outbox_park(bitt_store *store, const char *stream, uint64_t seq, int reason,
                              const char *error);
/* Parked events in sequence order; reason 0 = any. */
BITT_API int bitt_outbox_parked(bitt_store *store, const char *stream, int reason, uint32_t limit,
                                bitt_messages **out);
/* Puts parked events back to pending with their sequence number and zero
 * attempts; count 0 with seqs NULL = all of the stream. */
BITT_API int bitt_outbox_retry(bitt_store *store, const char *stream, const uint64_t *seqs,
                               size_t count, uint64_t *moved_out);
/* Deletes parked events; count 0 with seqs NULL = all of the stream. */
BITT_API int bitt_outbox_discard(bitt_store *store, const char *stream, const uint64_t *seqs,
                                 size_t count, uint64_t *deleted_out);
BITT_API int bitt_outbox_counts(bitt_store *store, const char *stream, uint64_t *pending_out,
                                uint64_t *parked_out);

/* ---- publish/subscribe ---------------------------------------------------- */
/*
 * A message reaches every subscription of its channel that was open when
 * it was published, at most once, in the order one process published. A
 * message published while nobody listens is lost. memory: reaches the
 * subscriptions of the same store; sqlite: every process sharing the file,
 * within about 50 ms (subscriptions poll), and at once in the same process.
 * Messages are kept for pubsub_retention ms (URL option, default 60000) for
 * slow subscribers; one slower than that misses messages.
 */
typedef struct bitt_sub bitt_sub;

BITT_API int bitt_pubsub_publish(bitt_store *store, const char *channel, const void *data,
                                 size_t len);
/* Opens a subscription on channel; close it with bitt_pubsub_close() before
 * closing the store. */
BITT_API int bitt_pubsub_subscribe(bitt_store *store, const char *channel, bitt_sub **out);
/* The next message: BITT_OK with *out (free with bitt_message_free), or
 * BITT_NOTFOUND when none came within timeout_ms (0 = do not wait). */
BITT_API int bitt_pubsub_next(bitt_sub *sub, int64_t timeout_ms, bitt_message **out);
/* bitt_pubsub_next that cancel (may be NULL) can end: BITT_ECANCELED with
 * *out NULL when it fires first; no message is lost (a message not handed
 * out stays for the next call). */
BITT_API int bitt_pubsub_next_cancel(bitt_sub *sub, int64_t timeout_ms, bitt_cancel *cancel,
                                     bitt_message **out);
BITT_API void bitt_pubsub_close(bitt_sub *sub);

/* ---- budgets -------------------------------------------------------------- */
/*
 * A token bucket shared by every process of the store: it holds up to
 * capacity tokens and gains refill tokens every period_ms, continuously,
 * in integer arithmetic (units of 1/period_ms token), so every backend and
 * binding computes the same answer. A new bucket starts full.
 */
/* Takes n tokens: BITT_OK when taken, or BITT_DENIED with *wait_ms_out =
 * how long until n tokens will be there (nothing is taken). n > capacity
 * is BITT_EINVAL. capacity, refill, period_ms in 1..2^31-1; n in
 * 1..capacity. */
BITT_API int bitt_budget_take(bitt_store *store, const char *name, int64_t capacity, int64_t refill,
                              int64_t period_ms, int64_t n, int64_t *wait_ms_out);

/* ---- schedules ------------------------------------------------------------ */
/*
 * Schedules, each occurrence claimed once across every process: every
 * interval_ms, or at the minutes of a 5-field cron expression (UTC). A
 * schedule may name a topic: the claim of an occurrence then enqueues the
 * schedule's payload there in the same commit (one message per occurrence,
 * however many processes claim).
 *
 * Cron syntax: minute (0-59) hour (0-23) day-of-month (1-31) month (1-12,
 * JAN-DEC) day-of-week (0-7, 0 and 7 = Sunday, SUN-SAT), separated by
 * blanks; each field a comma list of `*`, `N`, `A-B`, `*` or `A-B` or `N`
 * with `/S` (every S-th from the start; N/S = N to the end); names in any
 * case; day-of-month and day-of-week both restricted: either matches
 * (Vixie cron); @yearly @annually @monthly @weekly @daily @midnight
 * @hourly. Refused with BITT_EINVAL and a message naming the field: seconds
 * or year fields, L W # ?, @reboot, empty items, reversed ranges, a step of
 * 0 or wider than the field, an expression that never occurs ("0 0 30 2
 * *"), more than 256 bytes.
 */
typedef struct bitt_schedule bitt_schedule;

BITT_API const char *bitt_schedule_key(const bitt_schedule *s);
/* The interval, or 0 for a cron schedule. */
BITT_API int64_t bitt_schedule_interval(const bitt_schedule *s);
BITT_API const uint8_t *bitt_schedule_payload(const bitt_schedule *s, size_t *len);
BITT_API int bitt_schedule_kind(const bitt_schedule *s);
/* The next occurrence not yet claimed. */
BITT_API int64_t bitt_schedule_next_run_at(const bitt_schedule *s);
/* After bitt_schedule_claim: the occurrence this claim is for; 0 otherwise. */
BITT_API int64_t bitt_schedule_occurrence(const bitt_schedule *s);
BITT_API void bitt_schedule_free(bitt_schedule *s);

typedef struct bitt_schedule_options {
    unsigned int version; /* BITT_SCHEDULE_OPTIONS_VERSION */
    /* A cron expression (copied; syntax above) instead of an interval:
     * interval_ms must then be 0. NULL = every interval_ms. */
    const char *cron;
    /* The first occurrence of a new schedule, or of one whose interval or
     * cron changes: 0 = now + interval_ms, or the first cron minute after
     * now. */
    int64_t first_run_at;
    /* NULL = none. Else each claim enqueues the payload on topic, with the
     * dedup key "<key>@<occurrence ms>", max_attempts and priority. */
    const char *topic;
    uint32_t max_attempts; /* 0 = BITT_MAX_ATTEMPTS_DEFAULT */
    int32_t priority;
} bitt_schedule_options;

#define BITT_SCHEDULE_OPTIONS_VERSION 1
#define BITT_SCHEDULE_OPTIONS_INIT                                                                 \
    {                                                                                              \
        BITT_SCHEDULE_OPTIONS_VERSION, NULL, 0, NULL, 0, 0                                         \
    }
BITT_API int bitt_schedule_options_init(bitt_schedule_options *opts, unsigned int version);

/* Creates or updates schedule key (opts may be NULL: an interval schedule
 * first due at now + interval_ms). As bitt_schedule_upsert: a new schedule,
 * or one whose interval or cron changes, next runs at its first run; else
 * the next run time is kept, so a redeploy keeps the cadence. Payload,
 * topic, max_attempts and priority are replaced. */
BITT_API int bitt_schedule_set(bitt_store *store, const char *key, int64_t interval_ms,
                               const void *payload, size_t payload_len, int kind,
                               const bitt_schedule_options *opts);
/* The cron expression (borrowed), or NULL for an interval schedule. */
BITT_API const char *bitt_schedule_cron(const bitt_schedule *s);
/* The topic occurrences are enqueued on (borrowed), or NULL. */
BITT_API const char *bitt_schedule_topic(const bitt_schedule *s);
/* After claiming a schedule with a topic: the id of the message of this
 * occurrence (the live one holding its dedup key, if one was there); 0
 * otherwise. */
BITT_API uint64_t bitt_schedule_message_id(const bitt_schedule *s);

/* Creates or updates the schedule key with interval_ms (>= 1) and payload.
 * A new schedule, or one whose interval changes, next runs at first_run_at
 * (0 = now + interval_ms); an unchanged interval keeps the next run time,
 * so a redeploy keeps the cadence. */
BITT_API int bitt_schedule_upsert(bitt_store *store, const char *key, int64_t interval_ms,
                                  const void *payload, size_t payload_len, int kind,
                                  int64_t first_run_at);
/* Claims the due schedule (next run <= now) whose next run is earliest,
 * among keys starting with prefix (NULL or "" = all), and advances its next
 * run past now in the same transaction: BITT_OK with *out carrying the
 * occurrence, or BITT_NOTFOUND when none is due. */
BITT_API int bitt_schedule_claim(bitt_store *store, const char *prefix, bitt_schedule **out);
/* Every schedule, in key order: *out is an array of *count_out schedules
 * freed with bitt_schedule_list_free(). */
BITT_API int bitt_schedule_list(bitt_store *store, bitt_schedule ***out, size_t *count_out);
BITT_API void bitt_schedule_list_free(bitt_schedule **list, size_t count);
BITT_API int bitt_schedule_get(bitt_store *store, const char *key, bitt_schedule **out);
/* BITT_OK when deleted, BITT_NOTFOUND when there was none. */
BITT_API int bitt_schedule_delete(bitt_store *store, const char *key);

/* ---- many calls of one thread at once ----------------------------------- */

/* The i-th of the n tasks of bitt_batch_run: its status (negative: it
 * failed). */
typedef int (*bitt_batch_fn)(void *arg, size_t i);

/* Tasks of one bitt_batch_run in progress at once (the next starts when one
 * returns). */
#define BITT_BATCH_AT_ONCE 64

/* Calls fn(arg, i) for every i < n as cooperative tasks of the calling
 * thread, and returns once every task has returned. Where a task's call
 * waits for the network, the thread runs other tasks meanwhile: the Redis
 * calls of the tasks share connections, so n calls cost about one round
 * trip instead of n, and their lone sets share one script call. Calls that
 * never wait that way (memory, SQLite, PostgreSQL) run to their end, one
 * task after the other. Each call keeps its own semantics, versionstamp and
 * status; nothing is grouped into a transaction.
 *
 * A task runs on a stack of its own (256 KiB). It may call any bitt
 * function but bitt_batch_run, and nothing else that blocks on another
 * task (a lock one holds) or that needs the thread's own stack (a call
 * back into a managed runtime). bitt_error_last() inside a task is the
 * task's own. The order in which tasks finish is not i's.
 *
 * BITT_OK when every task ran and returned a status >= 0. When some
 * returned a negative one (all still ran): the status of the one with the
 * lowest i, with the message it had when it returned as bitt_error_last().
 * BITT_EINVAL for a NULL fn; BITT_EUSAGE from inside a task; BITT_ENOMEM
 * when no task stack could be made (then none ran). */
BITT_API int bitt_batch_run(bitt_batch_fn fn, void *arg, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* BITT_H */
