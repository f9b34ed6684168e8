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
 *  - A bitt_store may be shared by any number of threads. Calls on one store
 *    serialize on a mutex inside the handle (one backend connection each);
 *    open several stores on one URL for parallel work on SQLite files.
 *  - bitt_store_close() must not race another call on the same store: the
 *    caller ends every other use first.
 *  - A bitt_txn is used by one thread at a time. bitt_entry, bitt_entries and
 *    bitt_buf are plain data: read them from any thread, free them once.
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
#define BITT_VERSION_MINOR 1
#define BITT_VERSION_PATCH 0
#define BITT_VERSION_STRING "0.1.0"
/* MAJOR * 1000000 + MINOR * 1000 + PATCH: compare the header you built with
 * against bitt_version_number() of the library you loaded. */
#define BITT_VERSION_NUMBER \
    (BITT_VERSION_MAJOR * 1000000 + BITT_VERSION_MINOR * 1000 + BITT_VERSION_PATCH)

/* The loaded library's version, a static string such as "0.1.0". */
BITT_API const char *bitt_version(void);
/* The loaded library's BITT_VERSION_NUMBER. */
BITT_API int bitt_version_number(void);

/* ---- status codes ------------------------------------------------------- */

#define BITT_OK 0
#define BITT_NOTFOUND 1 /* the key (or item) is absent or expired: not an error */
#define BITT_EXISTS 2   /* add: the key is already present: not an error */

#define BITT_EINVAL (-1)       /* an argument is malformed or out of range */
#define BITT_ENOMEM (-2)       /* an allocation failed */
#define BITT_ETOOLARGE (-3)    /* a key, value, batch or limit is over its bound */
#define BITT_ENOTCOUNTER (-4)  /* increment/sum on a value that is not a counter */
#define BITT_EOVERFLOW (-5)    /* a counter would leave the int64 range */
#define BITT_ECONFLICT (-6)    /* an atomic commit's check failed */
#define BITT_EBACKEND (-7)     /* the storage engine failed (I/O, SQL, protocol) */
#define BITT_EBUSY (-8)        /* the database stayed locked past the busy timeout */
#define BITT_ESCHEMA (-9)      /* schema missing, foreign or newer than this library */
#define BITT_EURL (-10)        /* the store URL or one of its options is not valid */
#define BITT_ECURSOR (-11)     /* a list cursor is malformed or from another selector */
#define BITT_EUSAGE (-12)      /* a call out of order (a txn committed twice, ...) */
#define BITT_EUNSUPPORTED (-13) /* the backend cannot do this */

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

#define BITT_BUF_INIT {NULL, 0, 0}

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
 * Options follow as a query string: sqlite:app.db?busy_timeout=2000&table_prefix=app_
 *   max_key_size=N      longest key in bytes (default 2048, at most 65536)
 *   max_value_size=N    largest value in bytes (default 65536, at most 67108864)
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
/* The backend's name: "memory" or "sqlite". Static string. */
BITT_API const char *bitt_store_backend(const bitt_store *store);

/* ---- the clock ---------------------------------------------------------- */
/*
 * Every TTL is decided by the store's clock, in milliseconds since the Unix
 * epoch: the system clock unless a test installs a manual one on the handle.
 * The manual clock only moves when told, so TTL cases run without sleeping.
 */
BITT_API int bitt_clock_set_manual(bitt_store *store, int64_t now_ms);
/* Moves the manual clock forward by ms (>= 0). BITT_EUSAGE without one. */
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
 * clock: the key is live while now < set time + ttl. Negative is refused. */
#define BITT_TTL_NONE 0

typedef struct bitt_entry bitt_entry;

BITT_API const uint8_t *bitt_entry_key(const bitt_entry *entry, size_t *len);
/* The value bytes (NUL-terminated for convenience, the NUL not counted). */
BITT_API const uint8_t *bitt_entry_value(const bitt_entry *entry, size_t *len);
BITT_API int bitt_entry_kind(const bitt_entry *entry);
/* The versionstamp of the write that made this value (>= 1). */
BITT_API uint64_t bitt_entry_version(const bitt_entry *entry);
/* When the entry expires (ms on the store's clock), or 0 for never. */
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
#define BITT_LIST_OPTIONS_INIT {BITT_LIST_OPTIONS_VERSION, NULL, 0, NULL, 0, NULL, 0, 0, 0, NULL}
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
 * failed, or another error; nothing is written unless BITT_OK. */
BITT_API int bitt_txn_commit(bitt_txn *txn, uint64_t *version_out);
BITT_API void bitt_txn_free(bitt_txn *txn);

#ifdef __cplusplus
}
#endif

#endif /* BITT_H */
