/*
 * bitt_go.i: the Go block of bindings/bitt.i (swig -go -cgo -intgosize 64),
 * included from its #ifdef SWIGGO place. The generated package
 * (bindings/go/internal/raw) is internal; package bitt wraps it.
 *
 * How results cross cgo (every rule here follows the cgo pointer rules: Go
 * passes C only memory that holds no Go pointers, and C keeps no Go pointer
 * after the call):
 *  - handles (store box, txn, subscription) are uintptr values;
 *  - bytes in are []byte, borrowed for the call (a nil slice is NULL where
 *    the argument is optional, "" elsewhere);
 *  - a status < 0 comes back as an error record: the message is read with
 *    bitt_error_last() inside the very call that failed (a goroutine may run
 *    on another OS thread for its next call), copied into malloc'd memory,
 *    and the call returns minus its address (<= -4096; real statuses are
 *    small). Go reads and frees it with bittw_go_error_take;
 *  - structured results (entries, messages, schedules, owners, tuples) are
 *    packed into a []byte scratch buffer Go passes in; when they do not fit,
 *    into malloc'd memory that Go copies and frees with bittw_go_rec_take.
 *    The scratch buffer starts with a 16-byte header: the body length and
 *    the address of the malloc'd body (0: the body follows the header).
 */

/* The C library comes from pkg-config (after `cmake --install`). */
%insert(cgo_comment_typedefs) %{
#cgo pkg-config: bitt
%}

%{

/* Set by a handle typemap when its store, txn or subscription is closed;
 * read and cleared by the status typemap of the same C call, so the
 * thread-local is never seen by another call. */
static _Thread_local const char *bittw_go_refused;

static void bittw_go_refuse(const char *msg)
{
    if (!bittw_go_refused)
        bittw_go_refused = msg;
}

/* An error record: the code, then the NUL-terminated message. */
static intgo bittw_go_error(int code, const char *msg)
{
    if (!msg || !*msg)
        msg = bitt_strerror(code);
    size_t n = strlen(msg);
    char *rec = malloc(sizeof(int) + n + 1);
    if (!rec)
        return code;
    memcpy(rec, &code, sizeof code);
    memcpy(rec + sizeof(int), msg, n + 1);
    return -(intgo)(uintptr_t)rec;
}

static intgo bittw_go_status(int rc)
{
    const char *refused = bittw_go_refused;
    if (refused) {
        bittw_go_refused = NULL;
        return bittw_go_error(BITT_EUSAGE, refused);
    }
    if (rc >= 0)
        return rc;
    return bittw_go_error(rc, bitt_error_last());
}

/* ---- the record writer -------------------------------------------------- */
typedef struct bittw_rec {
    uint8_t *head; /* Go's scratch buffer */
    uint8_t *buf;  /* head + 16, or malloc'd once the body outgrew it */
    size_t len, cap;
    int heap, failed;
} bittw_rec;

static void bittw_rec_init(bittw_rec *r, _goslice_ s)
{
    memset(r, 0, sizeof *r);
    r->head = s.array;
    if (!r->head || s.len < 16) {
        r->head = NULL;
        r->failed = 1;
        return;
    }
    r->buf = r->head + 16;
    r->cap = (size_t)s.len - 16;
}

static void bittw_rec_put(bittw_rec *r, const void *p, size_t n)
{
    if (r->failed)
        return;
    if (n > r->cap - r->len) {
        size_t cap = r->cap * 2;
        if (cap < r->len + n)
            cap = r->len + n;
        if (cap < 256)
            cap = 256;
        uint8_t *nb = malloc(cap);
        if (!nb) {
            r->failed = 1;
            return;
        }
        memcpy(nb, r->buf, r->len);
        if (r->heap)
            free(r->buf);
        r->buf = nb;
        r->cap = cap;
        r->heap = 1;
    }
    if (n)
        memcpy(r->buf + r->len, p, n);
    r->len += n;
}

static void bittw_rec_u64(bittw_rec *r, uint64_t v)
{
    bittw_rec_put(r, &v, sizeof v);
}

/* Bytes: their length, then the bytes; NULL is the length UINT64_MAX. */
static void bittw_rec_bytes(bittw_rec *r, const void *p, size_t n)
{
    if (!p) {
        bittw_rec_u64(r, UINT64_MAX);
        return;
    }
    bittw_rec_u64(r, n);
    bittw_rec_put(r, p, n);
}

static void bittw_rec_str(bittw_rec *r, const char *s)
{
    bittw_rec_bytes(r, s, s ? strlen(s) : 0);
}

/* Writes the header; a failed record (no memory) has length UINT64_MAX. */
static void bittw_rec_end(bittw_rec *r)
{
    if (!r->head)
        return;
    uint64_t len = r->failed ? UINT64_MAX : r->len;
    uint64_t at = (r->heap && !r->failed) ? (uint64_t)(uintptr_t)r->buf : 0;
    if (r->failed && r->heap)
        free(r->buf);
    memcpy(r->head, &len, 8);
    memcpy(r->head + 8, &at, 8);
}

static void bittw_rec_entry(bittw_rec *r, const bitt_entry *e)
{
    bittw_rec_u64(r, e != NULL);
    if (!e)
        return;
    size_t kl = 0, vl = 0;
    const uint8_t *k = bitt_entry_key(e, &kl);
    const uint8_t *v = bitt_entry_value(e, &vl);
    bittw_rec_bytes(r, k ? k : (const uint8_t *)"", kl);
    bittw_rec_bytes(r, v ? v : (const uint8_t *)"", vl);
    bittw_rec_u64(r, (uint64_t)bitt_entry_kind(e));
    bittw_rec_u64(r, bitt_entry_version(e));
    bittw_rec_u64(r, (uint64_t)bitt_entry_expires_at(e));
}

static void bittw_rec_entries(bittw_rec *r, const bitt_entries *es)
{
    size_t n = es ? bitt_entries_count(es) : 0;
    bittw_rec_u64(r, n);
    for (size_t i = 0; i < n; i++)
        bittw_rec_entry(r, bitt_entries_at(es, i));
    bittw_rec_str(r, es ? bitt_entries_cursor(es) : NULL);
}

static void bittw_rec_message(bittw_rec *r, const bitt_message *m)
{
    bittw_rec_u64(r, m != NULL);
    if (!m)
        return;
    size_t pl = 0;
    const uint8_t *p = bitt_message_payload(m, &pl);
    bittw_rec_u64(r, bitt_message_id(m));
    bittw_rec_str(r, bitt_message_topic(m));
    bittw_rec_bytes(r, p ? p : (const uint8_t *)"", pl);
    bittw_rec_u64(r, (uint64_t)bitt_message_kind(m));
    bittw_rec_str(r, bitt_message_token(m));
    bittw_rec_u64(r, bitt_message_attempts(m));
    bittw_rec_u64(r, bitt_message_max_attempts(m));
    bittw_rec_str(r, bitt_message_last_error(m));
    bittw_rec_u64(r, (uint64_t)bitt_message_created_at(m));
    bittw_rec_u64(r, (uint64_t)bitt_message_due_at(m));
    bittw_rec_u64(r, (uint64_t)bitt_message_failed_at(m));
    bittw_rec_u64(r, (uint64_t)bitt_message_park_reason(m));
    bittw_rec_u64(r, (uint64_t)bitt_message_state(m));
    bittw_rec_u64(r, (uint64_t)(int64_t)bitt_message_priority(m));
    /* bitt.h 0.6 (retention): a done message's time and result */
    size_t rl = 0;
    const uint8_t *res = bitt_message_result(m, &rl);
    bittw_rec_u64(r, (uint64_t)bitt_message_done_at(m));
    bittw_rec_bytes(r, res, rl);
    bittw_rec_u64(r, (uint64_t)(int64_t)bitt_message_result_kind(m));
}

static void bittw_rec_messages(bittw_rec *r, const bitt_messages *ms)
{
    size_t n = ms ? bitt_messages_count(ms) : 0;
    bittw_rec_u64(r, n);
    for (size_t i = 0; i < n; i++)
        bittw_rec_message(r, bitt_messages_at(ms, i));
}

static void bittw_rec_schedule(bittw_rec *r, const bitt_schedule *s)
{
    bittw_rec_u64(r, s != NULL);
    if (!s)
        return;
    size_t pl = 0;
    const uint8_t *p = bitt_schedule_payload(s, &pl);
    bittw_rec_str(r, bitt_schedule_key(s));
    bittw_rec_u64(r, (uint64_t)bitt_schedule_interval(s));
    bittw_rec_bytes(r, p ? p : (const uint8_t *)"", pl);
    bittw_rec_u64(r, (uint64_t)bitt_schedule_kind(s));
    bittw_rec_u64(r, (uint64_t)bitt_schedule_next_run_at(s));
    bittw_rec_u64(r, (uint64_t)bitt_schedule_occurrence(s));
    bittw_rec_str(r, bitt_schedule_cron(s));
    bittw_rec_str(r, bitt_schedule_topic(s));
    bittw_rec_u64(r, bitt_schedule_message_id(s));
}

/* ---- KV calls of many goroutines in one cgo call (kv_batch) ------------- */
typedef struct bittw_go_kvop {
    int set, kind;
    int64_t ttl;
    const void *key, *value;
    size_t key_len, value_len;
    int ran, rc;
    uint64_t version;
    bitt_entry *entry;
    char *message; /* a failure's, malloc'd (NULL: the code's own text) */
} bittw_go_kvop;

typedef struct bittw_go_kvbatch {
    bitt_store *store;
    bittw_go_kvop *ops;
} bittw_go_kvbatch;

static int bittw_go_kv_task(void *arg, size_t i)
{
    bittw_go_kvbatch *b = arg;
    bittw_go_kvop *op = &b->ops[i];
    op->ran = 1;
    op->rc = op->set ? bitt_kv_set(b->store, op->key, op->key_len, op->value, op->value_len,
                                   op->kind, op->ttl, &op->version)
                     : bitt_kv_get(b->store, op->key, op->key_len, &op->entry);
    if (op->rc < 0)
        op->message = strdup(bitt_error_last());
    return op->rc;
}

/* Parses Go's packed requests: per op five uint64 (set, kind, ttl, key
 * length, value length), then the key and the value. The count, or -1 when
 * the buffer is malformed. */
static long bittw_go_kv_parse(const uint8_t *p, size_t len, bittw_go_kvop *ops)
{
    const uint8_t *end = p + len;
    long n = 0;
    while (p < end) {
        uint64_t f[5];
        if ((size_t)(end - p) < sizeof f)
            return -1;
        memcpy(f, p, sizeof f);
        p += sizeof f;
        if (f[3] > (uint64_t)(end - p) || f[4] > (uint64_t)(end - p) - f[3])
            return -1;
        if (ops) {
            bittw_go_kvop *op = &ops[n];
            op->set = f[0] != 0;
            op->kind = (int)f[1];
            op->ttl = (int64_t)f[2];
            op->key = p;
            op->key_len = (size_t)f[3];
            op->value = p + f[3];
            op->value_len = (size_t)f[4];
        }
        p += f[3] + f[4];
        n++;
    }
    return n;
}

/* A name that may be absent: a nil slice is NULL, else a NUL-terminated
 * copy (freed by the caller). */
static char *bittw_go_opt_cstr(_goslice_ s)
{
    if (!s.array)
        return NULL;
    char *c = malloc((size_t)s.len + 1);
    if (!c) {
        bittw_go_refuse("out of memory");
        return NULL;
    }
    memcpy(c, s.array, (size_t)s.len);
    c[s.len] = '\0';
    return c;
}
%}

/* The dequeue over several topics: Go passes the names packed in one
 * []byte, each ended by a NUL (no Go pointer inside Go memory), so there
 * are as many names as NUL bytes; the helper below takes them apart. */
%ignore bitt_queue_dequeue_topics;
/* The shared helper takes a char ** of names, which a Go caller could
 * only fill with Go pointers: Go calls bittw_go_queue_dequeue_topics. */
%ignore bittw_queue_dequeue_topics;
/* bitt.h 0.6: schedule options hold names (a Go caller could only point
 * them at Go memory) and purge's topic may be NULL: Go calls its own
 * helpers below, bittw_go_schedule_set and bittw_go_queue_purge. The
 * schedule accessors are read into the packed schedule record. */
%ignore bitt_schedule_options;
%ignore bitt_schedule_options_init;
%ignore bitt_schedule_set;
%ignore bitt_queue_purge;
%ignore bitt_schedule_cron;
%ignore bitt_schedule_topic;
%ignore bitt_schedule_message_id;

/* ---- status -> error record ------------------------------------------- */
%typemap(out) int "$result = bittw_go_status($1);"
%typemap(out) int bitt_version_number "$result = $1;"
%typemap(out) int bitt_error_last_code "$result = $1;"
%typemap(out) const char *bitt_store_backend {
  bittw_go_refused = NULL;
  $result = Swig_AllocateString((char *)$1, $1 ? strlen((char *)$1) : 0);
}

/* ---- handles ------------------------------------------------------------ */
%typemap(gotype) bitt_store *store, const bitt_store *store, bittw_store *lbox, bittw_store *box,
                 bitt_txn *txn, bitt_sub *sub, bittw_txn *h, bittw_sub *h "uintptr"
%typemap(imtype) bitt_store *store, const bitt_store *store, bittw_store *lbox, bittw_store *box,
                 bitt_txn *txn, bitt_sub *sub, bittw_txn *h, bittw_sub *h "uintptr"

/* A store argument holds the box's read lock for the call; a closed box
 * passes NULL (the core refuses it) and the status says "closed". */
%typemap(in) bitt_store *store (bittw_store *box = NULL) {
  box = (bittw_store *)$input;
  if (!box || bittw_enter(box) != 0) {
    box = NULL;
    bittw_go_refuse("the store is closed");
    $1 = NULL;
  } else {
    $1 = bittw_store_of(box);
  }
}
%typemap(freearg) bitt_store *store {
  if (box$argnum) bittw_leave(box$argnum);
}
%typemap(in) const bitt_store *store = bitt_store *store;
%typemap(freearg) const bitt_store *store = bitt_store *store;

%typemap(in) bittw_store *lbox (bittw_store *box = NULL) {
  box = (bittw_store *)$input;
  if (!box || bittw_enter(box) != 0) {
    box = NULL;
    bittw_go_refuse("the store is closed");
  }
  $1 = box;
}
%typemap(freearg) bittw_store *lbox {
  if (box$argnum) bittw_leave(box$argnum);
}
/* The helpers behind these dereference the box: skip them when refused. */
%exception bittw_txn_begin {
  if (!arg1) { *arg2 = NULL; result = BITT_EUSAGE; } else { $action }
}
%exception bittw_pubsub_subscribe {
  if (!arg1) { *arg3 = NULL; result = BITT_EUSAGE; } else { $action }
}

%typemap(in) bittw_store *box, bittw_txn *h, bittw_sub *h "$1 = ($1_ltype)$input;"

%define BITTW_GO_HANDLE_IN(CTYPE, HTYPE, FIELD, WHAT)
%typemap(in) CTYPE *FIELD (HTYPE *h = NULL, bittw_store *box = NULL) {
  h = (HTYPE *)$input;
  $1 = NULL;
  if (!h || !h->FIELD) {
    bittw_go_refuse("the " WHAT " is closed");
  } else if (bittw_enter(bittw_box_of_##FIELD(h)) != 0) {
    bittw_go_refuse("the store is closed");
  } else {
    box = bittw_box_of_##FIELD(h);
    $1 = h->FIELD;
  }
}
%typemap(freearg) CTYPE *FIELD {
  if (box$argnum) bittw_leave(box$argnum);
}
%enddef
BITTW_GO_HANDLE_IN(bitt_txn, bittw_txn, txn, "transaction")
BITTW_GO_HANDLE_IN(bitt_sub, bittw_sub, sub, "subscription")

/* Cancel tokens: plain uintptr values (0 is NULL, "no token"). Go makes one
 * per waiting call and fires it from another goroutine when the call's
 * context ends. */
%typemap(gotype) bitt_cancel *cancel, const bitt_cancel *cancel "uintptr"
%typemap(imtype) bitt_cancel *cancel, const bitt_cancel *cancel "uintptr"
%typemap(in) bitt_cancel *cancel, const bitt_cancel *cancel "$1 = ($1_ltype)$input;"

/* Handles out: written into a Go uintptr. */
%typemap(gotype) bittw_store **box_out, bittw_txn **out, bittw_sub **out, bitt_cancel **out "*uintptr"
%typemap(in) bittw_store **box_out, bittw_txn **out, bittw_sub **out, bitt_cancel **out "$1 = ($1_ltype)$input;"

/* ---- bytes in ------------------------------------------------------------ */
%typemap(gotype) (const void *key, size_t key_len), (const void *value, size_t value_len),
                 (const void *payload, size_t payload_len), (const void *event, size_t event_len),
                 (const void *data, size_t len), (void *dst, size_t dst_len) "[]byte"
%typemap(in) (const void *key, size_t key_len) {
  $1 = $input.array ? $input.array : (void *)"";
  $2 = (size_t)$input.len;
}
%typemap(in) (const void *value, size_t value_len) = (const void *key, size_t key_len);
%typemap(in) (const void *payload, size_t payload_len) = (const void *key, size_t key_len);
%typemap(in) (const void *event, size_t event_len) = (const void *key, size_t key_len);
%typemap(in) (const void *data, size_t len) = (const void *key, size_t key_len);
%typemap(in) (void *dst, size_t dst_len) = (const void *key, size_t key_len);

/* Optional bytes: a nil slice is "not given" (NULL). */
%typemap(gotype) (const void *dedup, size_t dedup_len), (const void *prefix, size_t prefix_len),
                 (const void *start, size_t start_len), (const void *end, size_t end_len) "[]byte"
%typemap(in) (const void *dedup, size_t dedup_len) {
  $1 = $input.array;
  $2 = $input.array ? (size_t)$input.len : 0;
}
%typemap(in) (const void *prefix, size_t prefix_len) = (const void *dedup, size_t dedup_len);
%typemap(in) (const void *start, size_t start_len) = (const void *dedup, size_t dedup_len);
%typemap(in) (const void *end, size_t end_len) = (const void *dedup, size_t dedup_len);
/* An ack's result (bitt.h 0.6): nil is none. */
%typemap(gotype) (const void *result, size_t result_len) "[]byte"
%typemap(in) (const void *result, size_t result_len) = (const void *dedup, size_t dedup_len);

/* Optional names and texts: a nil slice is NULL. */
%typemap(gotype) const char *error, const char *cursor, const char *prefix, const char *opt_cron,
                 const char *opt_topic "[]byte"
%typemap(in) const char *error, const char *cursor, const char *prefix, const char *opt_cron,
             const char *opt_topic "$1 = bittw_go_opt_cstr($input);"
%typemap(freearg) const char *error, const char *cursor, const char *prefix, const char *opt_cron,
                  const char *opt_topic "free($1);"

/* uint64 lists: a nil slice is "no list" (NULL), an empty one is not. */
%typemap(gotype) (const uint64_t *seqs, size_t count) "[]uint64"
%typemap(in) (const uint64_t *seqs, size_t count) {
  $1 = $input.array;
  $2 = (size_t)$input.len;
}

/* queue ack_many: one []byte of (uint64 id, NUL-terminated token) records,
 * so that no Go pointer is passed inside Go memory; the statuses come back
 * in an []int32 of one per delivery (nil for none). */
%typemap(gotype) (const uint64_t *ids, const char *const *tokens, size_t count) "[]byte"
%typemap(in) (const uint64_t *ids, const char *const *tokens, size_t count)
    (uint64_t *ids_ = NULL, const char **toks_ = NULL) {
  {
    const char *p_ = (const char *)$input.array, *end_ = p_ + $input.len;
    size_t n_ = 0;
    for (const char *q_ = p_; q_ && end_ - q_ > 8; n_++) {
      const char *z_ = memchr(q_ + 8, 0, (size_t)(end_ - q_ - 8));
      if (!z_)
        break;
      q_ = z_ + 1;
    }
    ids_ = calloc(n_ + 1, sizeof *ids_);
    toks_ = calloc(n_ + 1, sizeof *toks_);
    if (!ids_ || !toks_) {
      bittw_go_refuse("out of memory");
      n_ = 0;
    }
    for (size_t i_ = 0; i_ < n_; i_++) {
      memcpy(&ids_[i_], p_, 8);
      toks_[i_] = p_ + 8;
      p_ += 8 + strlen(p_ + 8) + 1;
    }
    $1 = ids_;
    $2 = ($2_ltype)toks_;
    $3 = n_;
  }
}
%typemap(freearg) (const uint64_t *ids, const char *const *tokens, size_t count) {
  free(ids_$argnum);
  free(toks_$argnum);
}
%typemap(gotype) (int *statuses, size_t *acked_out) "[]int32"
%typemap(in) (int *statuses, size_t *acked_out) {
  $1 = (int *)$input.array;
  $2 = NULL;
}

/* get-many keys: one []byte of (uint64 length, bytes) pairs, so that no Go
 * pointer is passed inside Go memory. */
%typemap(gotype) (const void *const *keys, const size_t *key_lens, size_t count) "[]byte"
%typemap(in) (const void *const *keys, const size_t *key_lens, size_t count)
    (const void **ptrs = NULL, size_t *lens = NULL) {
  {
    const uint8_t *p_ = $input.array, *end_ = p_ + $input.len;
    size_t n_ = 0;
    for (const uint8_t *q_ = p_; q_ && end_ - q_ >= 8; n_++) {
      uint64_t l_;
      memcpy(&l_, q_, 8);
      q_ += 8 + l_;
    }
    ptrs = calloc(n_ ? n_ : 1, sizeof *ptrs);
    lens = calloc(n_ ? n_ : 1, sizeof *lens);
    if (!ptrs || !lens) {
      bittw_go_refuse("out of memory");
      n_ = 0;
    }
    for (size_t i_ = 0; i_ < n_; i_++) {
      uint64_t l_;
      memcpy(&l_, p_, 8);
      ptrs[i_] = p_ + 8;
      lens[i_] = (size_t)l_;
      p_ += 8 + l_;
    }
    $1 = ($1_ltype)ptrs;
    $2 = lens;
    $3 = n_;
  }
}
%typemap(freearg) (const void *const *keys, const size_t *key_lens, size_t count) {
  free(ptrs$argnum);
  free(lens$argnum);
}

/* ---- records out ----------------------------------------------------- */
%define BITTW_GO_REC_OUT(DECL, TMP, PACK, FREE)
%typemap(gotype) DECL "[]byte"
%typemap(in) DECL (TMP = NULL) "$1 = &tmp;";
%typemap(argout) DECL {
  bittw_rec r_;
  bittw_rec_init(&r_, $input);
  PACK(&r_, *$1);
  bittw_rec_end(&r_);
}
%typemap(freearg) DECL "FREE(*$1);";
%enddef
BITTW_GO_REC_OUT(bitt_entry **out, bitt_entry *tmp, bittw_rec_entry, bitt_entry_free)
BITTW_GO_REC_OUT(bitt_entries **out, bitt_entries *tmp, bittw_rec_entries, bitt_entries_free)
BITTW_GO_REC_OUT(bitt_message **out, bitt_message *tmp, bittw_rec_message, bitt_message_free)
BITTW_GO_REC_OUT(bitt_messages **out, bitt_messages *tmp, bittw_rec_messages, bitt_messages_free)
BITTW_GO_REC_OUT(bitt_schedule **out, bitt_schedule *tmp, bittw_rec_schedule, bitt_schedule_free)

%typemap(gotype) (bitt_schedule ***list_out, size_t *count_out) "[]byte"
%typemap(in) (bitt_schedule ***list_out, size_t *count_out) (bitt_schedule **tmp = NULL, size_t n = 0)
  "$1 = &tmp; $2 = &n;";
%typemap(argout) (bitt_schedule ***list_out, size_t *count_out) {
  bittw_rec r_;
  bittw_rec_init(&r_, $input);
  bittw_rec_u64(&r_, *$2);
  for (size_t i_ = 0; i_ < *$2; i_++)
    bittw_rec_schedule(&r_, (*$1)[i_]);
  bittw_rec_end(&r_);
}
%typemap(freearg) (bitt_schedule ***list_out, size_t *count_out) "bitt_schedule_list_free(*$1, *$2);";

%typemap(gotype) bitt_buf *owner_out "[]byte"
%typemap(in) bitt_buf *owner_out (bitt_buf tmp = {NULL, 0, 0}) "$1 = &tmp;";
%typemap(argout) bitt_buf *owner_out {
  bittw_rec r_;
  bittw_rec_init(&r_, $input);
  bittw_rec_bytes(&r_, $1->ptr, $1->len);
  bittw_rec_end(&r_);
}
%typemap(freearg) bitt_buf *owner_out "bitt_buf_dispose($1);";

/* Queue stats: six numbers into a []uint64 of at least 6 (version 2: done). */
%typemap(gotype) bitt_queue_stats *stats_out "[]uint64"
%typemap(in) bitt_queue_stats *stats_out (bitt_queue_stats tmp) {
  memset(&tmp, 0, sizeof tmp);
  tmp.version = BITT_QUEUE_STATS_VERSION;
  $1 = &tmp;
}
%typemap(argout) bitt_queue_stats *stats_out {
  if ($input.len >= 6) {
    uint64_t *o_ = $input.array;
    o_[0] = $1->pending;
    o_[1] = $1->delayed;
    o_[2] = $1->processing;
    o_[3] = $1->dead;
    o_[4] = (uint64_t)$1->oldest_pending_at;
    o_[5] = $1->done;
  }
}

/* A record a Go-only helper fills itself. */
%typemap(gotype) bittw_rec *rec "[]byte"
%typemap(in) bittw_rec *rec (bittw_rec r) "bittw_rec_init(&r, $input); $1 = &r;";
%typemap(argout) bittw_rec *rec "bittw_rec_end($1);";

%inline %{
/* Copies a malloc'd record body (of dst_len bytes) into Go memory and
 * frees it. */
void bittw_go_rec_take(uint64_t at, void *dst, size_t dst_len)
{
    void *p = (void *)(uintptr_t)at;
    if (p && dst_len)
        memcpy(dst, p, dst_len);
    free(p);
}

/* Reads and frees an error record (a status <= -4096): returns its code
 * and copies its message, NUL-terminated and cut to fit, into dst. */
int64_t bittw_go_error_take(int64_t status, void *dst, size_t dst_len)
{
    char *rec = (char *)(uintptr_t)(-status);
    int code;
    memcpy(&code, rec, sizeof code);
    if (dst_len) {
        size_t n = strlen(rec + sizeof(int));
        if (n >= dst_len)
            n = dst_len - 1;
        memcpy(dst, rec + sizeof(int), n);
        ((char *)dst)[n] = '\0';
    }
    free(rec);
    return code;
}

/* bitt_queue_dequeue_topics over the names packed in data (each ended by
 * a NUL; see the %ignore above): every name reaches the core as given, an
 * empty or repeated one too, for the core to judge. cancel may be 0. */
int bittw_go_queue_dequeue_topics(bitt_store *store, const void *data, size_t len, uint32_t limit,
                                  int64_t lease_ms, int64_t wait_ms, bitt_cancel *cancel,
                                  bitt_messages **out)
{
    const char *p = data;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += p[i] == '\0';
    if (len && p[len - 1] != '\0') {
        bittw_go_refuse("dequeue: malformed topic list");
        return BITT_EINVAL;
    }
    const char **topics = calloc(n ? n : 1, sizeof *topics);
    if (!topics)
        return BITT_ENOMEM;
    for (size_t i = 0, at = 0; i < n; i++) {
        topics[i] = p + at;
        at += strlen(p + at) + 1;
    }
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = limit;
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    int rc = bitt_queue_dequeue_topics(store, topics, n, &o, cancel, out);
    free(topics);
    return rc;
}

/* bitt_schedule_set with its options as arguments: opt_cron and opt_topic
 * NULL (a nil slice) when not given, "" given (for the core to refuse). */
int bittw_go_schedule_set(bitt_store *store, const char *key, int64_t interval_ms,
                          const void *payload, size_t payload_len, int kind, const char *opt_cron,
                          int64_t first_run_at, const char *opt_topic, uint32_t max_attempts,
                          int32_t priority)
{
    bitt_schedule_options o = BITT_SCHEDULE_OPTIONS_INIT;
    o.cron = opt_cron;
    o.first_run_at = first_run_at;
    o.topic = opt_topic;
    o.max_attempts = max_attempts;
    o.priority = priority;
    return bitt_schedule_set(store, key, interval_ms, payload, payload_len, kind, &o);
}

/* bitt_queue_purge; opt_topic NULL (a nil slice): every topic. */
int bittw_go_queue_purge(bitt_store *store, const char *opt_topic, uint64_t *removed_out)
{
    return bitt_queue_purge(store, opt_topic, removed_out);
}

/* Independent KV gets and sets of many goroutines, run at once on this
 * thread (bitt_batch_run: on Redis their commands share connections). Each
 * op keeps its own semantics and status. The record has per op, in order,
 * its status, then: a failure's code and message; a get's entry (as a
 * record of its own); a set's version. */
int bittw_go_kv_batch(bitt_store *store, const void *data, size_t len, bittw_rec *rec)
{
    if (!store)
        return BITT_EUSAGE; /* refused by the handle typemap: "closed" */
    bitt_error_clear(); /* a failure below without a message: the code's text */
    long n = bittw_go_kv_parse(data, len, NULL);
    if (n < 0) {
        bittw_go_refuse("kv batch: malformed request buffer");
        return BITT_EINVAL;
    }
    bittw_go_kvop *ops = calloc((size_t)(n ? n : 1), sizeof *ops);
    if (!ops)
        return BITT_ENOMEM;
    bittw_go_kv_parse(data, len, ops);
    bittw_go_kvbatch b = {store, ops};
    int rc = bitt_batch_run(bittw_go_kv_task, &b, (size_t)n);
    /* an op that failed is reported as its own result below; the run
     * failed only when the ops did not run (no task stack) */
    if (n > 0 && ops[0].ran)
        rc = BITT_OK;
    for (long i = 0; i < n; i++) {
        bittw_go_kvop *op = &ops[i];
        if (rc >= 0) {
            bittw_rec_u64(rec, (uint64_t)(int64_t)op->rc);
            if (op->rc < 0)
                bittw_rec_str(rec, op->message ? op->message : bitt_strerror(op->rc));
            else if (op->set)
                bittw_rec_u64(rec, op->version);
            else
                bittw_rec_entry(rec, op->entry);
        }
        free(op->message);
        bitt_entry_free(op->entry);
    }
    free(ops);
    return rc;
}

/* Encodes a tuple key from parts Go serialised as (type, value) pairs of
 * uint64: bytes and string parts give a length and the bytes follow; int
 * and bool the value; float its IEEE-754 bits. The key is a record of one
 * bytes field. */
int bittw_go_tuple_encode(const void *data, size_t len, bittw_rec *rec)
{
    bitt_buf key = {NULL, 0, 0};
    const uint8_t *p = data, *end = p + len;
    int rc = BITT_OK;
    while (rc >= 0 && end - p >= 16) {
        uint64_t type, v;
        memcpy(&type, p, 8);
        memcpy(&v, p + 8, 8);
        p += 16;
        if (type == BITT_TUPLE_BYTES || type == BITT_TUPLE_STRING) {
            if (v > (uint64_t)(end - p)) {
                rc = BITT_EINVAL;
                break;
            }
            rc = type == BITT_TUPLE_BYTES ? bitt_tuple_push_bytes(&key, p, (size_t)v)
                                          : bitt_tuple_push_string(&key, (const char *)p, (size_t)v);
            p += v;
        } else if (type == BITT_TUPLE_INT) {
            rc = bitt_tuple_push_int(&key, (int64_t)v);
        } else if (type == BITT_TUPLE_FLOAT) {
            double d;
            memcpy(&d, &v, sizeof d);
            rc = bitt_tuple_push_float(&key, d);
        } else if (type == BITT_TUPLE_BOOL) {
            rc = bitt_tuple_push_bool(&key, v != 0);
        } else {
            rc = BITT_EINVAL;
        }
    }
    if (rc >= 0)
        bittw_rec_bytes(rec, key.ptr ? key.ptr : (const uint8_t *)"", key.len);
    bitt_buf_dispose(&key);
    return rc;
}

/* Decodes a tuple key: a record of (type, value) pairs as above, ended by
 * type 0. */
int bittw_go_tuple_decode(const void *key, size_t key_len, bittw_rec *rec)
{
    bitt_buf data = {NULL, 0, 0};
    size_t off = 0;
    int rc;
    for (;;) {
        int type = 0;
        int64_t iv = 0;
        double fv = 0;
        rc = bitt_tuple_next(key, key_len, &off, &type, &data, &iv, &fv);
        if (rc == BITT_NOTFOUND) {
            rc = BITT_OK;
            break;
        }
        if (rc < 0)
            break;
        bittw_rec_u64(rec, (uint64_t)type);
        if (type == BITT_TUPLE_BYTES || type == BITT_TUPLE_STRING) {
            bittw_rec_bytes(rec, data.ptr ? data.ptr : (const uint8_t *)"", data.len);
        } else if (type == BITT_TUPLE_FLOAT) {
            uint64_t bits;
            memcpy(&bits, &fv, sizeof bits);
            bittw_rec_u64(rec, bits);
        } else {
            bittw_rec_u64(rec, (uint64_t)iv);
        }
    }
    bittw_rec_u64(rec, 0);
    bitt_buf_dispose(&data);
    return rc;
}
%}
