/*
 * bitt.i: the one SWIG interface of bitt. Python, Node and Go bindings are
 * all generated from this file; each language has its own block below.
 *
 * Rules every block keeps (no semantics live in a binding):
 *  - a negative status becomes the language's error, carrying the status
 *    code and bitt_error_last(), both read inside the same wrapper call (the
 *    last-error message is per thread);
 *  - BITT_OK / BITT_NOTFOUND / BITT_EXISTS / BITT_DENIED are returned as
 *    plain statuses, with the out-parameters after them;
 *  - byte buffers in: any byte buffer; bytes out: copied; NULL out: none.
 *  - the store handle sits in a box (bittw_store) so that close() clears it
 *    and later calls fail with "closed" instead of crashing; calls hold the
 *    box's read lock, close takes the write lock. Transactions and
 *    subscriptions sit in handles (bittw_txn, bittw_sub) that point at the
 *    box and hold a reference on it: their calls take the same read lock,
 *    so close() waits for them and later calls fail with "closed" too.
 */
%module(package="bitt", threads="1") raw

%include <stdint.i>

%{
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "bitt.h"

/* The box around a store handle. */
typedef struct bittw_store {
    pthread_rwlock_t lock;
    bitt_store *store;
    int closing; /* set (atomically) before close takes the write lock */
    int refs;    /* the owner (until bittw_free) + one per txn/sub handle */
    int release; /* Python: release the GIL around calls (not "memory") */
} bittw_store;

/* A txn or a subscription and the box of the store it works on. */
typedef struct bittw_txn {
    bittw_store *box;
    bitt_txn *txn;
} bittw_txn;
typedef struct bittw_sub {
    bittw_store *box;
    bitt_sub *sub;
} bittw_sub;

/* Takes the box's read lock for one call: 0, or -1 when the store is closed
 * or closing (the lock is then not held). Never blocks. */
static int bittw_enter(bittw_store *box)
{
    if (__atomic_load_n(&box->closing, __ATOMIC_ACQUIRE) || pthread_rwlock_tryrdlock(&box->lock) != 0)
        return -1;
    if (!box->store) {
        pthread_rwlock_unlock(&box->lock);
        return -1;
    }
    return 0;
}

/* Accessors (a typemap renames its local "box" everywhere in its code). */
static bitt_store *bittw_store_of(bittw_store *b) { return b->store; }
static bittw_store *bittw_box_of_txn(bittw_txn *h) { return h->box; }
static bittw_store *bittw_box_of_sub(bittw_sub *h) { return h->box; }

static void bittw_leave(bittw_store *box)
{
    pthread_rwlock_unlock(&box->lock);
}

static void bittw_ref(bittw_store *box)
{
    __atomic_add_fetch(&box->refs, 1, __ATOMIC_RELAXED);
}

static void bittw_unref(bittw_store *box)
{
    if (box && __atomic_sub_fetch(&box->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        pthread_rwlock_destroy(&box->lock);
        free(box);
    }
}
%}

/* ======================================================================= */
#ifdef SWIGPYTHON
/* ======================================================================= */
%feature("compactdefaultargs");
/* Default: keep the GIL (microsecond calls). Blocking calls get %thread
 * below. */
%nothread;

%{
static PyObject *bittw_error_class = NULL; /* set by the Python layer */

/* Raises bitt.Error(code, message) (or its subclass chosen in Python). */
static void bittw_raise(int code, const char *msg)
{
    if (!msg || !*msg)
        msg = bitt_strerror(code);
    if (bittw_error_class) {
        PyObject *exc = PyObject_CallFunction(bittw_error_class, "is", code, msg);
        if (exc) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        return;
    }
    PyErr_Format(PyExc_RuntimeError, "bitt error %d: %s", code, msg);
}

static void bittw_raise_last(int code)
{
    const char *msg = bitt_error_last();
    bittw_raise(code, msg);
}

/* bindings/ERRORS.md: "{what}: integer {n} is outside the {range} range", an
 * InvalidArgument (-1). Replaces the OverflowError the conversion set. */
static void bittw_raise_range(PyObject *n, const char *what, const char *range)
{
    PyErr_Clear();
    PyObject *m = PyUnicode_FromFormat("%s: integer %S is outside the %s range", what, n, range);
    const char *u = m ? PyUnicode_AsUTF8(m) : NULL;
    if (u)
        bittw_raise(BITT_EINVAL, u);
    Py_XDECREF(m);
}

/* Borrow a byte buffer (any buffer object; None when allow_none gives NULL). */
static int bittw_get_buffer(PyObject *o, Py_buffer *view, int allow_none, const char *what)
{
    view->obj = NULL;
    view->buf = NULL;
    view->len = 0;
    if (o == Py_None && allow_none)
        return 0;
    if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: %.100s is not a bytes-like object", what,
                     Py_TYPE(o)->tp_name);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

/* A name or text argument: str (UTF-8) or bytes; None gives NULL when
 * allowed. *keep holds the bytes object to release afterwards. */
static int bittw_get_cstr(PyObject *o, const char **out, PyObject **keep, int allow_none,
                          const char *what)
{
    *keep = NULL;
    *out = NULL;
    if (o == Py_None && allow_none)
        return 0;
    if (PyUnicode_Check(o)) {
        *keep = PyUnicode_AsEncodedString(o, "utf-8", "surrogateescape");
        if (!*keep)
            return -1;
    } else if (PyBytes_Check(o)) {
        Py_INCREF(o);
        *keep = o;
    } else if (PyByteArray_Check(o) || PyMemoryView_Check(o)) {
        *keep = PyBytes_FromObject(o);
        if (!*keep)
            return -1;
    } else {
        PyErr_Format(PyExc_TypeError, "%s: %.100s is not str or bytes", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if ((size_t)PyBytes_GET_SIZE(*keep) != strlen(PyBytes_AS_STRING(*keep))) {
        Py_CLEAR(*keep);
        /* A C string cannot carry it to the core, which would refuse it. */
        char m_[160];
        snprintf(m_, sizeof m_, "%s: a name or text must not contain a NUL byte", what);
        bittw_raise(BITT_EINVAL, m_);
        return -1;
    }
    *out = PyBytes_AS_STRING(*keep);
    return 0;
}

static PyObject *bittw_bytes(const uint8_t *p, size_t n)
{
    return PyBytes_FromStringAndSize((const char *)(p ? p : (const uint8_t *)""), (Py_ssize_t)n);
}

static PyObject *bittw_str_or_none(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

/* (key, value, kind, version, expires_at) */
static PyObject *bittw_entry_tuple(const bitt_entry *e)
{
    size_t kl = 0, vl = 0;
    const uint8_t *k = bitt_entry_key(e, &kl);
    const uint8_t *v = bitt_entry_value(e, &vl);
    return Py_BuildValue("(NNiKL)", bittw_bytes(k, kl), bittw_bytes(v, vl), bitt_entry_kind(e),
                         (unsigned long long)bitt_entry_version(e),
                         (long long)bitt_entry_expires_at(e));
}

/* (id, topic, payload, kind, token, attempts, max_attempts, last_error,
 *  created_at, due_at, failed_at, park_reason, state, priority, done_at,
 *  result (None: none), result_kind (-1: none)) */
static PyObject *bittw_message_tuple(const bitt_message *m)
{
    size_t pl = 0, rl = 0;
    const uint8_t *p = bitt_message_payload(m, &pl);
    const uint8_t *r = bitt_message_result(m, &rl);
    PyObject *res = r ? bittw_bytes(r, rl) : (Py_INCREF(Py_None), Py_None);
    return Py_BuildValue("(KNNiNIINLLLiiiLNi)", (unsigned long long)bitt_message_id(m),
                         bittw_str_or_none(bitt_message_topic(m)), bittw_bytes(p, pl),
                         bitt_message_kind(m), bittw_str_or_none(bitt_message_token(m)),
                         (unsigned int)bitt_message_attempts(m),
                         (unsigned int)bitt_message_max_attempts(m),
                         bittw_str_or_none(bitt_message_last_error(m)),
                         (long long)bitt_message_created_at(m), (long long)bitt_message_due_at(m),
                         (long long)bitt_message_failed_at(m), bitt_message_park_reason(m),
                         bitt_message_state(m), (int)bitt_message_priority(m),
                         (long long)bitt_message_done_at(m), res, bitt_message_result_kind(m));
}

static PyObject *bittw_messages_list(const bitt_messages *ms)
{
    size_t n = bitt_messages_count(ms);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const bitt_message *m = bitt_messages_at(ms, i);
        PyObject *t;
        if (m) {
            t = bittw_message_tuple(m);
        } else {
            Py_INCREF(Py_None);
            t = Py_None;
        }
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

/* (key, interval, payload, kind, next_run_at, occurrence, cron, topic,
 *  message_id): cron and topic None when none */
static PyObject *bittw_schedule_tuple(const bitt_schedule *s)
{
    size_t pl = 0;
    const uint8_t *p = bitt_schedule_payload(s, &pl);
    return Py_BuildValue("(NLNiLLNNK)", bittw_str_or_none(bitt_schedule_key(s)),
                         (long long)bitt_schedule_interval(s), bittw_bytes(p, pl),
                         bitt_schedule_kind(s), (long long)bitt_schedule_next_run_at(s),
                         (long long)bitt_schedule_occurrence(s),
                         bittw_str_or_none(bitt_schedule_cron(s)),
                         bittw_str_or_none(bitt_schedule_topic(s)),
                         (unsigned long long)bitt_schedule_message_id(s));
}

/* A sequence of uint64 (None gives NULL with count 0). */
static int bittw_u64_array(PyObject *o, uint64_t **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (o == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(o, "seqs must be a sequence of integers or None");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    /* Never NULL, even for an empty list: "no list" and "[]" differ. */
    *out = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    if (!*out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyLong_Check(it)) {
            PyErr_SetString(PyExc_TypeError, "seqs must hold integers");
            goto fail;
        }
        unsigned long long v = PyLong_AsUnsignedLongLong(it);
        if (PyErr_Occurred())
            goto fail;
        (*out)[i] = v;
    }
    *count = (size_t)n;
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    free(*out);
    *out = NULL;
    return -1;
}
%}

/* ---- the store box ----------------------------------------------------- */
/* A bitt_store * argument is a Store box: the read lock is held for the
 * call (close takes the write lock), and a closed box raises. */
%typemap(in, noblock=1) bitt_store *store (bittw_store *box = NULL, int res = 0) {
  res = SWIG_ConvertPtr($input, (void **)&box, $descriptor(bittw_store *), 0);
  if (!SWIG_IsOK(res) || !box) {
    PyErr_Format(PyExc_TypeError, "expected a bitt store handle, not %.100s", Py_TYPE($input)->tp_name);
    SWIG_fail;
  }
  if (bittw_enter(box) != 0) {
    /* close() holds or waits for the write lock, or is done. */
    box = NULL;
    bittw_raise(BITT_EUSAGE, "the store is closed");
    SWIG_fail;
  }
  $1 = bittw_store_of(box);
}
%typemap(freearg, noblock=1) bitt_store *store {
  if (box$argnum) pthread_rwlock_unlock(&box$argnum->lock);
}
%typemap(in) const bitt_store *store = bitt_store *store;
%typemap(freearg) const bitt_store *store = bitt_store *store;

/* The same, for helpers that need the box itself (txn begin, subscribe). */
%typemap(in, noblock=1) bittw_store *lbox (bittw_store *box = NULL, int res = 0) {
  res = SWIG_ConvertPtr($input, (void **)&box, $descriptor(bittw_store *), 0);
  if (!SWIG_IsOK(res) || !box) {
    PyErr_Format(PyExc_TypeError, "expected a bitt store handle, not %.100s", Py_TYPE($input)->tp_name);
    SWIG_fail;
  }
  if (bittw_enter(box) != 0) {
    box = NULL;
    bittw_raise(BITT_EUSAGE, "the store is closed");
    SWIG_fail;
  }
  $1 = box;
}
%typemap(freearg, noblock=1) bittw_store *lbox {
  if (box$argnum) pthread_rwlock_unlock(&box$argnum->lock);
}

/* A txn or subscription argument is its handle: the store box's read lock
 * is held for the call; a closed store or handle raises UsageError. */
%define BITTW_HANDLE_IN(CTYPE, HTYPE, FIELD, WHAT)
%typemap(in, noblock=1) CTYPE *FIELD (HTYPE *h = NULL, bittw_store *box = NULL, int res = 0) {
  if ($input == Py_None) {
    bittw_raise(BITT_EUSAGE, "the " WHAT " is closed");
    SWIG_fail;
  }
  res = SWIG_ConvertPtr($input, (void **)&h, $descriptor(HTYPE *), 0);
  if (!SWIG_IsOK(res) || !h) {
    PyErr_Format(PyExc_TypeError, "expected a bitt " WHAT ", not %.100s", Py_TYPE($input)->tp_name);
    SWIG_fail;
  }
  if (!h->FIELD) {
    bittw_raise(BITT_EUSAGE, "the " WHAT " is closed");
    SWIG_fail;
  }
  if (bittw_enter(bittw_box_of_##FIELD(h)) != 0) {
    bittw_raise(BITT_EUSAGE, "the store is closed");
    SWIG_fail;
  }
  box = bittw_box_of_##FIELD(h);
  $1 = h->FIELD;
}
%typemap(freearg, noblock=1) CTYPE *FIELD {
  if (box$argnum) bittw_leave(box$argnum);
}
%enddef
BITTW_HANDLE_IN(bitt_txn, bittw_txn, txn, "transaction")
BITTW_HANDLE_IN(bitt_sub, bittw_sub, sub, "subscription")

/* ---- status -> exception ----------------------------------------------- */
%typemap(out, noblock=1) int {
  if ($1 < 0) {
    bittw_raise_last($1);
    SWIG_fail;
  }
  $result = PyLong_FromLong($1);
}
%typemap(out) int bitt_version_number "$result = PyLong_FromLong($1);";
%typemap(out) int bitt_error_last_code "$result = PyLong_FromLong($1);";

/* ---- bytes in ---------------------------------------------------------- */
%typemap(in) (const void *key, size_t key_len) (Py_buffer view = {0}) {
  if (bittw_get_buffer($input, &view, 0, "key") != 0) SWIG_fail;
  $1 = view.buf;
  $2 = (size_t)view.len;
}
%typemap(freearg) (const void *key, size_t key_len) {
  if (view$argnum.obj) PyBuffer_Release(&view$argnum);
}
%typemap(in) (const void *value, size_t value_len) = (const void *key, size_t key_len);
%typemap(freearg) (const void *value, size_t value_len) = (const void *key, size_t key_len);
%typemap(in) (const void *payload, size_t payload_len) = (const void *key, size_t key_len);
%typemap(freearg) (const void *payload, size_t payload_len) = (const void *key, size_t key_len);
%typemap(in) (const void *event, size_t event_len) = (const void *key, size_t key_len);
%typemap(freearg) (const void *event, size_t event_len) = (const void *key, size_t key_len);
%typemap(in) (const void *data, size_t len) = (const void *key, size_t key_len);
%typemap(freearg) (const void *data, size_t len) = (const void *key, size_t key_len);
%typemap(in) (const char *utf8, size_t len) = (const void *key, size_t key_len);
%typemap(freearg) (const char *utf8, size_t len) = (const void *key, size_t key_len);

/* ---- names and texts in: str or bytes; None is NULL -------------------- */
%typemap(in) const char * (PyObject *keep = NULL) {
  if (bittw_get_cstr($input, (const char **)&$1, &keep, 1, "$1_name") != 0) SWIG_fail;
}
%typemap(freearg) const char * {
  Py_XDECREF(keep$argnum);
}
%typemap(typecheck) const char * = char *;

/* ---- outputs ----------------------------------------------------------- */
%typemap(in, numinputs=0) uint64_t *OUTPUT_U64 (uint64_t tmp = 0) "$1 = &tmp;";
%typemap(argout) uint64_t *OUTPUT_U64 {
  %append_output(PyLong_FromUnsignedLongLong(*$1));
}
%typemap(in, numinputs=0) int64_t *OUTPUT_I64 (int64_t tmp = 0) "$1 = &tmp;";
%typemap(argout) int64_t *OUTPUT_I64 {
  %append_output(PyLong_FromLongLong(*$1));
}
%apply uint64_t *OUTPUT_U64 { uint64_t *version_out, uint64_t *id_out, uint64_t *count_out,
                              uint64_t *epoch_out, uint64_t *seq_out, uint64_t *acked_out,
                              uint64_t *moved_out, uint64_t *deleted_out, uint64_t *pending_out,
                              uint64_t *parked_out, uint64_t *removed_out };
%apply int64_t *OUTPUT_I64 { int64_t *out, int64_t *value_out, int64_t *expires_at_out,
                             int64_t *wait_ms_out };

/* bitt_buf outputs as bytes (owner of a lease, a tuple key). */
%typemap(in, numinputs=0) bitt_buf *owner_out (bitt_buf tmp = {NULL, 0, 0}) "$1 = &tmp;";
%typemap(argout) bitt_buf *owner_out {
  %append_output($1->ptr ? bittw_bytes($1->ptr, $1->len) : (Py_INCREF(Py_None), Py_None));
}
%typemap(freearg) bitt_buf *owner_out "bitt_buf_dispose($1);";

/* An entry out: a (key, value, kind, version, expires_at) tuple or None. */
%typemap(in, numinputs=0) bitt_entry **out (bitt_entry *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bitt_entry **out {
  if (*$1) {
    %append_output(bittw_entry_tuple(*$1));
  } else {
    Py_INCREF(Py_None);
    %append_output(Py_None);
  }
}
%typemap(freearg) bitt_entry **out "bitt_entry_free(*$1);";

/* A schedule out: a tuple or None. */
%typemap(in, numinputs=0) bitt_schedule **out (bitt_schedule *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bitt_schedule **out {
  if (*$1) {
    %append_output(bittw_schedule_tuple(*$1));
  } else {
    Py_INCREF(Py_None);
    %append_output(Py_None);
  }
}
%typemap(freearg) bitt_schedule **out "bitt_schedule_free(*$1);";

/* A message out (pubsub next, queue get): a tuple or None. */
%typemap(in, numinputs=0) bitt_message **out (bitt_message *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bitt_message **out {
  if (*$1) {
    %append_output(bittw_message_tuple(*$1));
  } else {
    Py_INCREF(Py_None);
    %append_output(Py_None);
  }
}
%typemap(freearg) bitt_message **out "bitt_message_free(*$1);";

/* A message list out: a list of tuples (empty when none came back). */
%typemap(in, numinputs=0) bitt_messages **out (bitt_messages *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bitt_messages **out {
  %append_output(*$1 ? bittw_messages_list(*$1) : PyList_New(0));
}
%typemap(freearg) bitt_messages **out "bitt_messages_free(*$1);";

/* Transactions and subscriptions: opaque handles, freed by the Python layer. */
%typemap(in, numinputs=0) bittw_txn **out (bittw_txn *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bittw_txn **out {
  %append_output(SWIG_NewPointerObj(*$1, $descriptor(bittw_txn *), 0));
}
%typemap(in, numinputs=0) bittw_sub **out (bittw_sub *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bittw_sub **out {
  %append_output(SWIG_NewPointerObj(*$1, $descriptor(bittw_sub *), 0));
}

%typemap(in, numinputs=0) bittw_store **box_out (bittw_store *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bittw_store **box_out {
  %append_output(SWIG_NewPointerObj(*$1, $descriptor(bittw_store *), 0));
}

/* uint64 arrays (outbox ack/retry/discard): a sequence or None. */
%typemap(in) (const uint64_t *seqs, size_t count) (uint64_t *arr = NULL) {
  if (bittw_u64_array($input, &arr, &$2) != 0) SWIG_fail;
  $1 = arr;
}
%typemap(freearg) (const uint64_t *seqs, size_t count) "free(arr$argnum);";

/* queue ack_many: a sequence of (id, token) pairs in; the list of per-item
 * statuses out (the acked count is how many are 0). A token of None passes
 * NULL, which the call refuses. */
%typemap(in) (const uint64_t *ids, const char *const *tokens, size_t count, int *statuses,
              size_t *acked_out)
    (uint64_t *ids_ = NULL, const char **toks_ = NULL, PyObject **keeps_ = NULL,
     int *sts_ = NULL, Py_ssize_t n_ = 0, size_t acked_ = 0) {
  PyObject *seq_ = PySequence_Fast($input, "deliveries must be a sequence of (id, token) pairs");
  if (!seq_) SWIG_fail;
  Py_ssize_t len_ = PySequence_Fast_GET_SIZE(seq_);
  ids_ = calloc((size_t)len_ + 1, sizeof *ids_);
  toks_ = calloc((size_t)len_ + 1, sizeof *toks_);
  keeps_ = calloc((size_t)len_ + 1, sizeof *keeps_);
  sts_ = calloc((size_t)len_ + 1, sizeof *sts_);
  if (!ids_ || !toks_ || !keeps_ || !sts_) { Py_DECREF(seq_); PyErr_NoMemory(); SWIG_fail; }
  for (Py_ssize_t i_ = 0; i_ < len_; i_++) {
    PyObject *it_ = PySequence_Fast_GET_ITEM(seq_, i_);
    if (!PyTuple_Check(it_) || PyTuple_GET_SIZE(it_) != 2 || !PyLong_Check(PyTuple_GET_ITEM(it_, 0))) {
      Py_DECREF(seq_);
      PyErr_SetString(PyExc_TypeError, "each delivery must be an (id: int, token) pair");
      SWIG_fail;
    }
    ids_[i_] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(it_, 0));
    if (PyErr_Occurred() ||
        bittw_get_cstr(PyTuple_GET_ITEM(it_, 1), &toks_[i_], &keeps_[i_], 1, "token") != 0) {
      Py_DECREF(seq_);
      SWIG_fail;
    }
    n_ = i_ + 1;
  }
  Py_DECREF(seq_);
  $1 = ids_; $2 = ($2_ltype)toks_; $3 = (size_t)len_; $4 = sts_; $5 = &acked_;
}
%typemap(argout) (const uint64_t *ids, const char *const *tokens, size_t count, int *statuses,
                  size_t *acked_out) {
  PyObject *l_ = PyList_New((Py_ssize_t)$3);
  if (!l_) SWIG_fail;
  for (size_t i_ = 0; i_ < $3; i_++)
    PyList_SET_ITEM(l_, (Py_ssize_t)i_, PyLong_FromLong($4[i_]));
  %append_output(l_);
}
%typemap(freearg) (const uint64_t *ids, const char *const *tokens, size_t count, int *statuses,
                   size_t *acked_out) {
  for (Py_ssize_t i_ = 0; keeps_$argnum && i_ < n_$argnum; i_++) Py_XDECREF(keeps_$argnum[i_]);
  free(ids_$argnum); free(toks_$argnum); free(keeps_$argnum); free(sts_$argnum);
}

/* Integer arguments: a clear TypeError for anything but an int, and
 * bindings/ERRORS.md's InvalidArgument for one the C type cannot hold. */
%typemap(in) int64_t {
  if (!PyLong_Check($input)) {
    PyErr_Format(PyExc_TypeError, "$1_name: %.100s is not an int", Py_TYPE($input)->tp_name);
    SWIG_fail;
  }
  $1 = (int64_t)PyLong_AsLongLong($input);
  if (PyErr_Occurred()) { bittw_raise_range($input, "$1_name", "int64"); SWIG_fail; }
}
%typemap(in) uint64_t {
  if (!PyLong_Check($input)) {
    PyErr_Format(PyExc_TypeError, "$1_name: %.100s is not an int", Py_TYPE($input)->tp_name);
    SWIG_fail;
  }
  $1 = (uint64_t)PyLong_AsUnsignedLongLong($input);
  if (PyErr_Occurred()) { bittw_raise_range($input, "$1_name", "uint64"); SWIG_fail; }
}
%typemap(in) uint32_t {
  if (!PyLong_Check($input)) {
    PyErr_Format(PyExc_TypeError, "$1_name: %.100s is not an int", Py_TYPE($input)->tp_name);
    SWIG_fail;
  }
  unsigned long long v_ = PyLong_AsUnsignedLongLong($input);
  if (PyErr_Occurred() || v_ > 0xffffffffULL) { bittw_raise_range($input, "$1_name", "uint32"); SWIG_fail; }
  $1 = (uint32_t)v_;
}

/* int32 (a priority): the same, with the int32 range. */
%typemap(in) int32_t {
  if (!PyLong_Check($input)) {
    PyErr_Format(PyExc_TypeError, "$1_name: %.100s is not an int", Py_TYPE($input)->tp_name);
    SWIG_fail;
  }
  long long v_ = PyLong_AsLongLong($input);
  if (PyErr_Occurred() || v_ < INT32_MIN || v_ > INT32_MAX) { bittw_raise_range($input, "$1_name", "int32"); SWIG_fail; }
  $1 = (int32_t)v_;
}

/* The topics of a dequeue over several: a sequence of names (str or bytes),
 * passed as given (the core refuses an empty, repeating or bad list). */
%typemap(in) (const char *const *topics, size_t topic_count)
    (const char **names_ = NULL, PyObject **keeps_ = NULL, Py_ssize_t n_ = 0) {
  PyObject *seq_ = PySequence_Fast($input, "topics must be a sequence of names");
  if (!seq_) SWIG_fail;
  Py_ssize_t len_ = PySequence_Fast_GET_SIZE(seq_);
  names_ = calloc((size_t)len_ + 1, sizeof *names_);
  keeps_ = calloc((size_t)len_ + 1, sizeof *keeps_);
  if (!names_ || !keeps_) { Py_DECREF(seq_); PyErr_NoMemory(); SWIG_fail; }
  for (Py_ssize_t i_ = 0; i_ < len_; i_++) {
    n_ = i_ + 1;
    if (bittw_get_cstr(PySequence_Fast_GET_ITEM(seq_, i_), &names_[i_], &keeps_[i_], 0, "topics") != 0) {
      Py_DECREF(seq_);
      SWIG_fail;
    }
  }
  Py_DECREF(seq_);
  $1 = ($1_ltype)names_; $2 = (size_t)len_;
}
%typemap(freearg) (const char *const *topics, size_t topic_count) {
  for (Py_ssize_t i_ = 0; keeps_$argnum && i_ < n_$argnum; i_++) Py_XDECREF(keeps_$argnum[i_]);
  free(names_$argnum); free(keeps_$argnum);
}

/* Cancel tokens: opaque pointers, owned by bitt.CancelToken. */
%typemap(in, numinputs=0) bitt_cancel **out (bitt_cancel *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bitt_cancel **out {
  %append_output(SWIG_NewPointerObj(*$1, $descriptor(bitt_cancel *), 0));
}

/* The GIL. Memory calls take about a microsecond: they keep it (releasing
 * and taking it back costs more than the call). Calls that can wait release
 * it: every call on a network backend (postgres, redis), every call on
 * SQLite (a write fsyncs, and any call can wait up to busy_timeout, 5 s by
 * default, on another process's lock: keeping the GIL would stop every
 * Python thread for that long), and the waits on any backend
 * (dequeue with wait > 0, pubsub next with timeout > 0). box->release is set
 * at open from the backend; box1 is the store box (or the txn/sub handle's
 * box) the first argument's typemap locked. Pure accessors and the tuple
 * codec keep the GIL. */
%define BITTW_RELEASE_IF(NAME, COND)
%exception NAME {
  if (COND) {
    PyThreadState *bittw_ts_ = PyEval_SaveThread();
    $action
    PyEval_RestoreThread(bittw_ts_);
  } else {
    $action
  }
}
%enddef
%define BITTW_STORE_CALL(NAME) BITTW_RELEASE_IF(NAME, box1->release) %enddef
BITTW_STORE_CALL(bitt_store_migrate)
BITTW_STORE_CALL(bitt_clock_set_manual) BITTW_STORE_CALL(bitt_clock_advance)
BITTW_STORE_CALL(bitt_clock_use_system) BITTW_STORE_CALL(bitt_clock_now)
BITTW_STORE_CALL(bitt_kv_get) BITTW_STORE_CALL(bitt_kv_set) BITTW_STORE_CALL(bitt_kv_delete)
BITTW_STORE_CALL(bitt_kv_add) BITTW_STORE_CALL(bitt_kv_take) BITTW_STORE_CALL(bitt_kv_increment)
BITTW_STORE_CALL(bitt_kv_purge_expired)
BITTW_STORE_CALL(bittw_txn_begin) BITTW_STORE_CALL(bitt_txn_commit)
BITTW_STORE_CALL(bitt_queue_ack) BITTW_STORE_CALL(bitt_queue_ack_many)
BITTW_STORE_CALL(bitt_queue_nack)
BITTW_STORE_CALL(bitt_queue_extend) BITTW_STORE_CALL(bitt_queue_dead_list)
BITTW_STORE_CALL(bitt_queue_dead_retry) BITTW_STORE_CALL(bitt_queue_dead_delete)
BITTW_STORE_CALL(bitt_lease_acquire) BITTW_STORE_CALL(bitt_lease_renew)
BITTW_STORE_CALL(bitt_lease_release) BITTW_STORE_CALL(bitt_lease_get)
BITTW_STORE_CALL(bitt_outbox_append) BITTW_STORE_CALL(bitt_outbox_pending)
BITTW_STORE_CALL(bitt_outbox_ack) BITTW_STORE_CALL(bitt_outbox_fail)
BITTW_STORE_CALL(bitt_outbox_park) BITTW_STORE_CALL(bitt_outbox_parked)
BITTW_STORE_CALL(bitt_outbox_retry) BITTW_STORE_CALL(bitt_outbox_discard)
BITTW_STORE_CALL(bitt_outbox_counts)
BITTW_STORE_CALL(bitt_pubsub_publish) BITTW_STORE_CALL(bittw_pubsub_subscribe)
BITTW_STORE_CALL(bitt_budget_take)
BITTW_STORE_CALL(bitt_schedule_upsert) BITTW_STORE_CALL(bitt_schedule_claim)
BITTW_STORE_CALL(bitt_schedule_get) BITTW_STORE_CALL(bitt_schedule_delete)
BITTW_STORE_CALL(bittw_kv_get_many) BITTW_STORE_CALL(bittw_kv_list)
BITTW_STORE_CALL(bittw_queue_enqueue) BITTW_STORE_CALL(bittw_queue_stats)
BITTW_STORE_CALL(bittw_schedule_list)
BITTW_STORE_CALL(bitt_queue_snooze)
BITTW_STORE_CALL(bittw_queue_enqueue2) BITTW_STORE_CALL(bitt_queue_get)
BITTW_STORE_CALL(bitt_queue_cancel) BITTW_STORE_CALL(bitt_queue_reschedule)
BITTW_STORE_CALL(bitt_queue_ack_result) BITTW_STORE_CALL(bitt_queue_purge)
BITTW_STORE_CALL(bittw_schedule_set)
/* The waits: always released when they may wait. */
BITTW_RELEASE_IF(bittw_queue_dequeue, arg5 > 0 || box1->release)
BITTW_RELEASE_IF(bittw_queue_dequeue_cancel, arg5 > 0 || box1->release)
BITTW_RELEASE_IF(bittw_queue_dequeue_topics, arg6 > 0 || box1->release)
BITTW_RELEASE_IF(bitt_pubsub_next, arg2 > 0 || box1->release)
BITTW_RELEASE_IF(bitt_pubsub_next_cancel, arg2 > 0 || box1->release)
/* Opening (connects, migrates) and closing (waits for calls in flight,
 * which may need the GIL to finish) always release it. */
%thread bittw_open;
%thread bittw_close;
%thread bittw_free;

%typemap(in, numinputs=0) PyObject **OUT (PyObject *tmp = NULL) "$1 = &tmp;";
%typemap(argout) PyObject **OUT {
  %append_output(*$1 ? *$1 : (Py_INCREF(Py_None), Py_None));
}
/* Helpers fill raw results (no Python objects while the GIL is released). */
%typemap(in) (const void *dedup, size_t dedup_len) (Py_buffer view = {0}) {
  if (bittw_get_buffer($input, &view, 1, "dedup") != 0) SWIG_fail;
  $1 = view.buf;
  $2 = view.obj ? (size_t)view.len : 0;
  if (!view.obj) $1 = NULL;
}
%typemap(freearg) (const void *dedup, size_t dedup_len) {
  if (view$argnum.obj) PyBuffer_Release(&view$argnum);
}
%typemap(in) (const void *prefix, size_t prefix_len) = (const void *dedup, size_t dedup_len);
%typemap(freearg) (const void *prefix, size_t prefix_len) = (const void *dedup, size_t dedup_len);
/* An ack's result: a byte buffer, or None for none (NULL, 0). */
%typemap(in) (const void *result, size_t result_len) = (const void *dedup, size_t dedup_len);
%typemap(freearg) (const void *result, size_t result_len) = (const void *dedup, size_t dedup_len);
%typemap(in) (const void *start, size_t start_len) = (const void *dedup, size_t dedup_len);
%typemap(freearg) (const void *start, size_t start_len) = (const void *dedup, size_t dedup_len);
%typemap(in) (const void *end, size_t end_len) = (const void *dedup, size_t dedup_len);
%typemap(freearg) (const void *end, size_t end_len) = (const void *dedup, size_t dedup_len);

/* bitt_entries out: ([entry tuple or None, ...], cursor or None). */
%typemap(in, numinputs=0) bitt_entries **out (bitt_entries *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bitt_entries **out {
  if (*$1) {
    size_t n_ = bitt_entries_count(*$1);
    PyObject *list_ = PyList_New((Py_ssize_t)n_);
    if (!list_) SWIG_fail;
    for (size_t i_ = 0; i_ < n_; i_++) {
      const bitt_entry *e_ = bitt_entries_at(*$1, i_);
      PyObject *t_;
      if (e_) t_ = bittw_entry_tuple(e_); else { Py_INCREF(Py_None); t_ = Py_None; }
      if (!t_) { Py_DECREF(list_); SWIG_fail; }
      PyList_SET_ITEM(list_, (Py_ssize_t)i_, t_);
    }
    const char *c_ = bitt_entries_cursor(*$1);
    %append_output(list_);
    %append_output(c_ ? PyUnicode_FromString(c_) : (Py_INCREF(Py_None), Py_None));
  } else {
    %append_output(PyList_New(0));
    Py_INCREF(Py_None);
    %append_output(Py_None);
  }
}
%typemap(freearg) bitt_entries **out "bitt_entries_free(*$1);";

/* get-many keys: a sequence of buffers, gathered with the GIL held. */
%typemap(in) (const void *const *keys, const size_t *key_lens, size_t count)
    (Py_buffer *views = NULL, Py_ssize_t nviews = 0, const void **ptrs = NULL, size_t *lens = NULL) {
  PyObject *seq_ = PySequence_Fast($input, "keys must be a sequence of bytes-like objects");
  if (!seq_) SWIG_fail;
  Py_ssize_t n_ = PySequence_Fast_GET_SIZE(seq_);
  views = calloc((size_t)(n_ ? n_ : 1), sizeof(Py_buffer));
  ptrs = calloc((size_t)(n_ ? n_ : 1), sizeof(void *));
  lens = calloc((size_t)(n_ ? n_ : 1), sizeof(size_t));
  if (!views || !ptrs || !lens) { Py_DECREF(seq_); PyErr_NoMemory(); SWIG_fail; }
  for (Py_ssize_t i_ = 0; i_ < n_; i_++) {
    if (bittw_get_buffer(PySequence_Fast_GET_ITEM(seq_, i_), &views[i_], 0, "key") != 0) {
      Py_DECREF(seq_); SWIG_fail;
    }
    nviews = i_ + 1;
    ptrs[i_] = views[i_].buf;
    lens[i_] = (size_t)views[i_].len;
  }
  Py_DECREF(seq_);
  $1 = ($1_ltype)ptrs; $2 = lens; $3 = (size_t)n_;
}
%typemap(freearg) (const void *const *keys, const size_t *key_lens, size_t count) {
  for (Py_ssize_t i_ = 0; i_ < nviews$argnum; i_++) PyBuffer_Release(&views$argnum[i_]);
  free(views$argnum); free(ptrs$argnum); free(lens$argnum);
}

/* Stats out: (pending, delayed, processing, dead, oldest_pending_at, done). */
%typemap(in, numinputs=0) bitt_queue_stats *stats_out (bitt_queue_stats tmp) {
  memset(&tmp, 0, sizeof tmp);
  tmp.version = BITT_QUEUE_STATS_VERSION;
  $1 = &tmp;
}
%typemap(argout) bitt_queue_stats *stats_out {
  PyObject *st_ = Py_BuildValue("(KKKKLK)",
      (unsigned long long)$1->pending, (unsigned long long)$1->delayed,
      (unsigned long long)$1->processing, (unsigned long long)$1->dead,
      (long long)$1->oldest_pending_at, (unsigned long long)$1->done);
  %append_output(st_);
}

/* Schedule list out. */
%typemap(in, numinputs=0) (bitt_schedule ***list_out, size_t *count_out)
    (bitt_schedule **tmp = NULL, size_t n = 0) "$1 = &tmp; $2 = &n;";
%typemap(argout) (bitt_schedule ***list_out, size_t *count_out) {
  PyObject *l_ = PyList_New((Py_ssize_t)*$2);
  if (!l_) SWIG_fail;
  for (size_t i_ = 0; i_ < *$2; i_++) {
    PyObject *t_ = bittw_schedule_tuple((*$1)[i_]);
    if (!t_) { Py_DECREF(l_); SWIG_fail; }
    PyList_SET_ITEM(l_, (Py_ssize_t)i_, t_);
  }
  %append_output(l_);
}
%typemap(freearg) (bitt_schedule ***list_out, size_t *count_out) "bitt_schedule_list_free(*$1, *$2);";

/* The tuple codec: build from a Python sequence of parts at once. */
%typemap(in, numinputs=0) bitt_buf *key_out (bitt_buf tmp = {NULL, 0, 0}) "$1 = &tmp;";
%typemap(argout) bitt_buf *key_out {
  %append_output(bittw_bytes($1->ptr, $1->len));
}
%typemap(freearg) bitt_buf *key_out "bitt_buf_dispose($1);";

%inline %{
/* Called once by the Python layer: the class to raise (bitt.Error's factory). */
void bittw_set_error_class(PyObject *cls)
{
    Py_XINCREF(cls);
    Py_XSETREF(bittw_error_class, cls);
}
%}

%inline %{
/* Encodes a tuple key: bytes-like -> bytes part, bool -> bool, int -> int,
 * float -> float, str -> string (UTF-8; lone surrogates from
 * surrogateescape give the raw bytes back, to test refusals). */
PyObject *bittw_tuple_encode(PyObject *parts)
{
    PyObject *seq = PySequence_Fast(parts, "a tuple key must be a tuple or list");
    if (!seq)
        return NULL;
    bitt_buf key = {NULL, 0, 0};
    PyObject *res = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(seq, i);
        int rc;
        if (PyBool_Check(p)) {
            rc = bitt_tuple_push_bool(&key, p == Py_True);
        } else if (PyLong_Check(p)) {
            long long v = PyLong_AsLongLong(p);
            if (v == -1 && PyErr_Occurred()) {
                char what[40];
                snprintf(what, sizeof what, "tuple part %zd", i);
                bittw_raise_range(p, what, "int64");
                goto done;
            }
            rc = bitt_tuple_push_int(&key, (int64_t)v);
        } else if (PyFloat_Check(p)) {
            rc = bitt_tuple_push_float(&key, PyFloat_AS_DOUBLE(p));
        } else if (PyUnicode_Check(p)) {
            PyObject *b = PyUnicode_AsEncodedString(p, "utf-8", "surrogateescape");
            if (!b)
                goto done;
            rc = bitt_tuple_push_string(&key, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
            Py_DECREF(b);
        } else {
            Py_buffer view;
            if (bittw_get_buffer(p, &view, 0, "a tuple part") != 0) {
                PyErr_Format(PyExc_TypeError,
                             "tuple part %zd: %.100s is not bytes, str, int, float or bool", i,
                             Py_TYPE(p)->tp_name);
                goto done;
            }
            rc = bitt_tuple_push_bytes(&key, view.buf, (size_t)view.len);
            PyBuffer_Release(&view);
        }
        if (rc < 0) {
            bittw_raise_last(rc);
            goto done;
        }
    }
    res = bittw_bytes(key.ptr, key.len);
done:
    bitt_buf_dispose(&key);
    Py_DECREF(seq);
    return res;
}

/* Decodes a tuple key into a tuple of parts (the inverse of encode). */
PyObject *bittw_tuple_decode(PyObject *keyobj)
{
    Py_buffer view;
    if (bittw_get_buffer(keyobj, &view, 0, "key") != 0)
        return NULL;
    PyObject *list = PyList_New(0);
    bitt_buf data = {NULL, 0, 0};
    size_t off = 0;
    for (; list;) {
        int type = 0;
        int64_t iv = 0;
        double fv = 0;
        int rc = bitt_tuple_next(view.buf, (size_t)view.len, &off, &type, &data, &iv, &fv);
        if (rc == BITT_NOTFOUND)
            break;
        PyObject *part = NULL;
        if (rc < 0) {
            bittw_raise_last(rc);
        } else if (type == BITT_TUPLE_BYTES) {
            part = bittw_bytes(data.ptr, data.len);
        } else if (type == BITT_TUPLE_STRING) {
            part = PyUnicode_DecodeUTF8((const char *)(data.ptr ? data.ptr : (uint8_t *)""),
                                        (Py_ssize_t)data.len, "surrogateescape");
        } else if (type == BITT_TUPLE_INT) {
            part = PyLong_FromLongLong(iv);
        } else if (type == BITT_TUPLE_FLOAT) {
            part = PyFloat_FromDouble(fv);
        } else if (type == BITT_TUPLE_BOOL) {
            part = PyBool_FromLong((long)iv);
        } else {
            PyErr_SetString(PyExc_RuntimeError, "unknown tuple part type");
        }
        if (!part || PyList_Append(list, part) != 0) {
            Py_XDECREF(part);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(part);
    }
    bitt_buf_dispose(&data);
    PyBuffer_Release(&view);
    if (!list)
        return NULL;
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    return t;
}
%}
#endif /* SWIGPYTHON */

/* ======================================================================= */
#ifdef SWIGJAVASCRIPT
/* Node (swig -javascript -napi -c++, built with NAPI_CPP_EXCEPTIONS). Byte buffers in:
 * Buffer/Uint8Array (borrowed for the call); bytes out: copied Buffers;
 * 64-bit numbers out: BigInt; errors: the JS layer's BittError (code +
 * message read in the failing call). The conversions live in
 * node/src/js_values.hpp, shared with the Promise API (node/src/async.hpp),
 * so both give the JS layer the same shapes. SWIG's napi "fail:" skips
 * freearg: every typemap cleans up with RAII locals (bittw_hold, strings,
 * vectors, bittw_owned). */
%feature("compactdefaultargs");

%{
#include "js_values.hpp"

/* Holds a box's read lock for one call; leaves on every path. */
struct bittw_hold {
    bittw_store *box = nullptr;
    ~bittw_hold()
    {
        if (box)
            bittw_leave(box);
    }
};

/* Frees a C result on every path (fail: included). */
template <typename T, void (*Free)(T *)> struct bittw_owned {
    T *p = nullptr;
    ~bittw_owned() { Free(p); }
};
struct bittw_buf_out {
    bitt_buf b = {NULL, 0, 0};
    ~bittw_buf_out() { bitt_buf_dispose(&b); }
};

/* Store handles carry a type tag, set where they are made, so that every
 * call checks its handle with napi_check_object_type_tag instead of SWIG's
 * napi_instanceof (a tenth of a synchronous get on memory); anything
 * untagged still goes through SWIG's check. */
static const napi_type_tag bittw_store_tag = {0x6269747473746f72ULL, 0x6520686164646c65ULL};

static Napi::Value bittw_js_new_store(Napi::Env env, bittw_store *box)
{
    Napi::Value v = SWIG_NewPointerObj(box, SWIGTYPE_p_bittw_store, 0);
    if (v.IsObject())
        napi_type_tag_object(env, v, &bittw_store_tag);
    return v;
}

/* The box of a store handle, or NULL when v is not one. */
static bittw_store *bittw_js_store(Napi::Env env, Napi::Value v)
{
    bool tagged = false;
    if (napi_check_object_type_tag(env, v, &bittw_store_tag, &tagged) == napi_ok && tagged)
        return (bittw_store *)Napi::ObjectWrap<SWIG_NAPI_ObjectWrap_inst>::Unwrap(v.As<Napi::Object>())->self;
    void *p = NULL;
    if (!SWIG_IsOK(SWIG_ConvertPtr(v, &p, SWIGTYPE_p_bittw_store, 0)))
        return NULL;
    return (bittw_store *)p;
}

static bool bittw_js_enter(Napi::Env env, bittw_store *box, bittw_hold *h)
{
    if (bittw_enter(box) != 0) {
        bittw_js_throw(env, BITT_EUSAGE, "the store is closed");
        return false;
    }
    h->box = box;
    return true;
}
%}

%typemap(in, noblock=1) bitt_store *store (bittw_hold hold, bittw_store *box = NULL) {
  box = bittw_js_store(env, $input);
  if (!box) {
    Napi::TypeError::New(env, "expected a bitt store handle").ThrowAsJavaScriptException();
    SWIG_fail;
  }
  if (!bittw_js_enter(env, box, &hold)) SWIG_fail;
  $1 = bittw_store_of(box);
}
%typemap(in) const bitt_store *store = bitt_store *store;
%typemap(in, noblock=1) bittw_store *lbox (bittw_hold hold, bittw_store *box = NULL) {
  box = bittw_js_store(env, $input);
  if (!box) {
    Napi::TypeError::New(env, "expected a bitt store handle").ThrowAsJavaScriptException();
    SWIG_fail;
  }
  if (!bittw_js_enter(env, box, &hold)) SWIG_fail;
  $1 = box;
}
%define BITTW_JS_HANDLE_IN(CTYPE, HTYPE, FIELD, WHAT)
%typemap(in, noblock=1) CTYPE *FIELD (bittw_hold hold, HTYPE *h = NULL, int res = 0) {
  if ($input.IsNull() || $input.IsUndefined()) {
    bittw_js_throw(env, BITT_EUSAGE, "the " WHAT " is closed");
    SWIG_fail;
  }
  res = SWIG_ConvertPtr($input, (void **)&h, $descriptor(HTYPE *), 0);
  if (!SWIG_IsOK(res) || !h) {
    Napi::TypeError::New(env, "expected a bitt " WHAT).ThrowAsJavaScriptException();
    SWIG_fail;
  }
  if (!h->FIELD) {
    bittw_js_throw(env, BITT_EUSAGE, "the " WHAT " is closed");
    SWIG_fail;
  }
  if (!bittw_js_enter(env, bittw_box_of_##FIELD(h), &hold)) SWIG_fail;
  $1 = h->FIELD;
}
%enddef
BITTW_JS_HANDLE_IN(bitt_txn, bittw_txn, txn, "transaction")
BITTW_JS_HANDLE_IN(bitt_sub, bittw_sub, sub, "subscription")

/* cancel tokens: the addon's own (js_values.hpp: bittw_cancel_new/fire/fired,
 * a shared reference each call holds), null for none */
%ignore bitt_cancel_new;
%ignore bitt_cancel_fire;
%ignore bitt_cancel_fired;
%ignore bitt_cancel_reset;
%ignore bitt_cancel_free;
%typemap(in, noblock=1) bitt_cancel *cancel (bittw_cancel_ptr tok) {
  if (!bittw_js_get_cancel(env, $input, &tok)) SWIG_fail;
  $1 = tok.get();
}

/* status -> BittError */
%typemap(out, noblock=1) int {
  if ($1 < 0) {
    bittw_js_throw_last(env, $1);
    SWIG_fail;
  }
  $result = Napi::Number::New(env, $1);
}
%typemap(out) int bitt_version_number "$result = Napi::Number::New(env, $1);";
%typemap(out) int bitt_error_last_code "$result = Napi::Number::New(env, $1);";

/* bytes in (borrowed for the call) */
%typemap(in, noblock=1) (const void *key, size_t key_len) (const uint8_t *p = NULL) {
  if (!bittw_js_get_bytes(env, $input, false, "$1_name", &p, &$2)) SWIG_fail;
  $1 = ($1_ltype)p;
}
%typemap(in) (const void *value, size_t value_len) = (const void *key, size_t key_len);
%typemap(in) (const void *payload, size_t payload_len) = (const void *key, size_t key_len);
%typemap(in) (const void *event, size_t event_len) = (const void *key, size_t key_len);
%typemap(in) (const void *data, size_t len) = (const void *key, size_t key_len);
%typemap(in, noblock=1) (const void *dedup, size_t dedup_len) (const uint8_t *p = NULL) {
  if (!bittw_js_get_bytes(env, $input, true, "$1_name", &p, &$2)) SWIG_fail;
  $1 = ($1_ltype)p;
}
%typemap(in) (const void *prefix, size_t prefix_len) = (const void *dedup, size_t dedup_len);
/* an ack's result: a Buffer, or null for none (NULL, 0) */
%typemap(in) (const void *result, size_t result_len) = (const void *dedup, size_t dedup_len);
%typemap(in) (const void *start, size_t start_len) = (const void *dedup, size_t dedup_len);
%typemap(in) (const void *end, size_t end_len) = (const void *dedup, size_t dedup_len);

/* names and texts in: string (UTF-8) or Buffer; null is NULL */
%typemap(in, noblock=1) const char * (std::string text, bool null_ = false) {
  if (!bittw_js_get_text(env, $input, true, "$1_name", &text, &null_)) SWIG_fail;
  $1 = null_ ? NULL : (char *)text.c_str();
}
%typemap(freearg) const char * "";
%typemap(out) const char * "$result = bittw_js_str(env, $1);";

/* integers in: number or bigint, range-checked */
%typemap(in) int64_t { if (!bittw_js_get_i64(env, $input, "$1_name", &$1)) SWIG_fail; }
%typemap(in) uint64_t { if (!bittw_js_get_u64(env, $input, "$1_name", &$1)) SWIG_fail; }
%typemap(in) uint32_t { if (!bittw_js_get_u32(env, $input, "$1_name", &$1)) SWIG_fail; }
%typemap(in) int { if (!bittw_js_get_int(env, $input, "$1_name", &$1)) SWIG_fail; }
%typemap(in) int32_t { if (!bittw_js_get_i32(env, $input, "$1_name", &$1)) SWIG_fail; }

/* the topics of a dequeue over several: an array of names, copied; passed
 * as given (the core refuses an empty, repeating or bad list) */
%typemap(in, noblock=1) (const char *const *topics, size_t topic_count)
    (std::vector<std::string> texts, std::vector<const char *> ptrs) {
  if (!bittw_js_get_texts(env, $input, "topics", &texts)) SWIG_fail;
  ptrs.resize(texts.size() + 1);
  for (size_t i_ = 0; i_ < texts.size(); i_++) ptrs[i_] = texts[i_].c_str();
  $1 = ($1_ltype)ptrs.data(); $2 = texts.size();
}

/* outputs: appended after the status ([status, out...]) */
%typemap(in, numinputs=0) uint64_t *OUTPUT_U64 (uint64_t tmp = 0) "$1 = &tmp;";
%typemap(argout) uint64_t *OUTPUT_U64 "$result = SWIG_NAPI_AppendOutput(env, $result, bittw_js_u64(env, *$1));";
%typemap(in, numinputs=0) int64_t *OUTPUT_I64 (int64_t tmp = 0) "$1 = &tmp;";
%typemap(argout) int64_t *OUTPUT_I64 "$result = SWIG_NAPI_AppendOutput(env, $result, bittw_js_i64(env, *$1));";
%apply uint64_t *OUTPUT_U64 { uint64_t *version_out, uint64_t *id_out, uint64_t *count_out,
                              uint64_t *epoch_out, uint64_t *seq_out, uint64_t *acked_out,
                              uint64_t *moved_out, uint64_t *deleted_out, uint64_t *pending_out,
                              uint64_t *parked_out, uint64_t *removed_out };
%apply int64_t *OUTPUT_I64 { int64_t *out, int64_t *value_out, int64_t *expires_at_out,
                             int64_t *wait_ms_out };

%typemap(in, numinputs=0) bitt_buf *owner_out (bittw_buf_out own) "$1 = &own.b;";
%typemap(argout) bitt_buf *owner_out "$result = SWIG_NAPI_AppendOutput(env, $result, $1->ptr ? bittw_js_bytes(env, $1->ptr, $1->len) : env.Null());";
%define BITTW_JS_OUT(CTYPE, FREE, CONV)
%typemap(in, numinputs=0) CTYPE **out (bittw_owned<CTYPE, FREE> own) "$1 = &own.p;";
%typemap(argout) CTYPE **out "$result = SWIG_NAPI_AppendOutput(env, $result, CONV(env, *$1));";
%enddef
/* entry (get and take only): its key is the key given (info[1]), not a copy */
%typemap(in, numinputs=0) bitt_entry **out (bittw_owned<bitt_entry, bitt_entry_free> own) "$1 = &own.p;";
%typemap(argout) bitt_entry **out "$result = SWIG_NAPI_AppendOutput(env, $result, bittw_js_entry(env, *$1, info[1]));";
BITTW_JS_OUT(bitt_schedule, bitt_schedule_free, bittw_js_schedule)
BITTW_JS_OUT(bitt_message, bitt_message_free, bittw_js_message)
BITTW_JS_OUT(bitt_messages, bitt_messages_free, bittw_js_messages)
/* entries: [[entry...], cursor] (two outputs, as in Python) */
%typemap(in, numinputs=0) bitt_entries **out (bittw_owned<bitt_entries, bitt_entries_free> own) "$1 = &own.p;";
%typemap(argout) bitt_entries **out {
  Napi::Array pair_ = bittw_js_entries(env, *$1).As<Napi::Array>();
  $result = SWIG_NAPI_AppendOutput(env, $result, pair_.Get(0u));
  $result = SWIG_NAPI_AppendOutput(env, $result, pair_.Get(1u));
}
%typemap(in, numinputs=0) bittw_txn **out (bittw_txn *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bittw_txn **out "$result = SWIG_NAPI_AppendOutput(env, $result, SWIG_NewPointerObj(*$1, $descriptor(bittw_txn *), 0));";
%typemap(in, numinputs=0) bittw_sub **out (bittw_sub *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bittw_sub **out "$result = SWIG_NAPI_AppendOutput(env, $result, SWIG_NewPointerObj(*$1, $descriptor(bittw_sub *), 0));";
%typemap(in, numinputs=0) bittw_store **box_out (bittw_store *tmp = NULL) "$1 = &tmp;";
%typemap(argout) bittw_store **box_out "$result = SWIG_NAPI_AppendOutput(env, $result, bittw_js_new_store(env, *$1));";

%typemap(in, noblock=1) (const void *const *keys, const size_t *key_lens, size_t count)
    (std::vector<const void *> ptrs, std::vector<size_t> lens) {
  if (!bittw_js_get_keys(env, $input, &ptrs, &lens)) SWIG_fail;
  $1 = ($1_ltype)ptrs.data(); $2 = lens.data(); $3 = ptrs.size();
}
%typemap(in, noblock=1) (const uint64_t *seqs, size_t count) (std::vector<uint64_t> v, bool null_ = false) {
  if (!bittw_js_get_u64s(env, $input, true, "seqs", &v, &null_)) SWIG_fail;
  if (v.empty()) v.reserve(1); /* never NULL for a given list */
  $1 = null_ ? NULL : v.data(); $2 = v.size();
}
%typemap(in, numinputs=0) bitt_queue_stats *stats_out (bitt_queue_stats tmp) {
  memset(&tmp, 0, sizeof tmp);
  tmp.version = BITT_QUEUE_STATS_VERSION;
  $1 = &tmp;
}
%typemap(argout) bitt_queue_stats *stats_out "$result = SWIG_NAPI_AppendOutput(env, $result, bittw_js_stats(env, $1));";
/* queue ack_many: [[id, token], ...] in; the per-item statuses out. */
%typemap(in, noblock=1) (const uint64_t *ids, const char *const *tokens, size_t count, int *statuses,
                         size_t *acked_out) (bittw_deliveries d, std::vector<int> st) {
  if (!bittw_js_get_deliveries(env, $input, &d)) SWIG_fail;
  st.resize(d.ids.size() + 1);
  $1 = d.ids.data(); $2 = ($2_ltype)d.tokens.data(); $3 = d.ids.size(); $4 = st.data(); $5 = NULL;
}
%typemap(argout) (const uint64_t *ids, const char *const *tokens, size_t count, int *statuses,
                  size_t *acked_out) "$result = SWIG_NAPI_AppendOutput(env, $result, bittw_js_ints(env, $4, $3));";
%typemap(in, numinputs=0) (bitt_schedule ***list_out, size_t *count_out)
    (bitt_schedule **tmp = NULL, size_t n = 0) "$1 = &tmp; $2 = &n;";
%typemap(argout) (bitt_schedule ***list_out, size_t *count_out) {
  $result = SWIG_NAPI_AppendOutput(env, $result, bittw_js_schedules(env, *$1, *$2));
  bitt_schedule_list_free(*$1, *$2);
  *$1 = NULL;
}

/* The Promise API, tuple codec and error factory: hand-written Node-API
 * functions registered next to SWIG's (node/src/async.hpp); the synchronous
 * KV get/set of one key without SWIG's per-call costs (node/src/fast.hpp). */
%wrapper %{
#include "async.hpp"
#include "fast.hpp"
%}
%init %{
  bittw_js_register(env, exports);
  bittw_fast_register(env, exports);
%}
#endif

/* ======================================================================= */
#ifdef SWIGGO
/* Go (swig -go -cgo -intgosize 64): the typemaps and helpers are in
 * bindings/go/bitt_go.i (generate with -Ibindings). The package is
 * internal; package bitt (bindings/go) wraps it. */
%include "go/bitt_go.i"
#endif

/* ---- the box and helpers shared by every language ---------------------- */
%nodefaultctor bittw_store;
%nodefaultdtor bittw_store;
typedef struct bittw_store {} bittw_store;
%nodefaultctor bittw_txn;
%nodefaultdtor bittw_txn;
typedef struct bittw_txn {} bittw_txn;
%nodefaultctor bittw_sub;
%nodefaultdtor bittw_sub;
typedef struct bittw_sub {} bittw_sub;

/* Txn begin/free and subscribe/close work on handles (keeping the raw
 * names): a handle holds a reference on the box. */
%rename(bitt_txn_begin) bittw_txn_begin;
%rename(bitt_txn_free) bittw_txn_free;
%rename(bitt_pubsub_subscribe) bittw_pubsub_subscribe;
%rename(bitt_pubsub_close) bittw_pubsub_close;

%inline %{
/* Opens a store into a new box. */
int bittw_open(const char *url, bittw_store **box_out)
{
    *box_out = NULL;
    bitt_store *s = NULL;
    int rc = bitt_store_open(url, &s);
    if (rc != BITT_OK)
        return rc;
    bittw_store *b = (bittw_store *)calloc(1, sizeof *b);
    if (!b) {
        bitt_store_close(s);
        return BITT_ENOMEM;
    }
    pthread_rwlock_init(&b->lock, NULL);
    b->store = s;
    b->refs = 1;
    b->release = strcmp(bitt_store_backend(s), "memory") != 0;
    *box_out = b;
    return BITT_OK;
}

/* Closes the store in the box; waits for calls in flight. Idempotent. */
void bittw_close(bittw_store *box)
{
    if (!box)
        return;
    __atomic_store_n(&box->closing, 1, __ATOMIC_RELEASE);
    pthread_rwlock_wrlock(&box->lock);
    bitt_store *s = box->store;
    box->store = NULL;
    pthread_rwlock_unlock(&box->lock);
    bitt_store_close(s);
}

/* Frees the box (closing it first); the memory goes with the last txn or
 * subscription handle that still points at it. */
void bittw_free(bittw_store *box)
{
    if (!box)
        return;
    bittw_close(box);
    bittw_unref(box);
}

int bittw_txn_begin(bittw_store *lbox, bittw_txn **out)
{
    *out = NULL;
    bittw_txn *h = (bittw_txn *)calloc(1, sizeof *h);
    if (!h)
        return BITT_ENOMEM;
    int rc = bitt_txn_begin(lbox->store, &h->txn);
    if (rc != BITT_OK) {
        free(h);
        return rc;
    }
    bittw_ref(lbox);
    h->box = lbox;
    *out = h;
    return BITT_OK;
}

/* Frees the txn (it does not touch the store, open or closed). */
void bittw_txn_free(bittw_txn *h)
{
    if (!h)
        return;
    bitt_txn_free(h->txn);
    bittw_unref(h->box);
    free(h);
}

int bittw_pubsub_subscribe(bittw_store *lbox, const char *channel, bittw_sub **out)
{
    *out = NULL;
    bittw_sub *h = (bittw_sub *)calloc(1, sizeof *h);
    if (!h)
        return BITT_ENOMEM;
    int rc = bitt_pubsub_subscribe(lbox->store, channel, &h->sub);
    if (rc != BITT_OK) {
        free(h);
        return rc;
    }
    bittw_ref(lbox);
    h->box = lbox;
    *out = h;
    return BITT_OK;
}

/* Closes the subscription (it does not touch the store, open or closed). */
void bittw_pubsub_close(bittw_sub *h)
{
    if (!h)
        return;
    bitt_pubsub_close(h->sub);
    bittw_unref(h->box);
    free(h);
}

int bittw_kv_get_many(bitt_store *store, const void *const *keys, const size_t *key_lens,
                      size_t count, bitt_entries **out)
{
    return bitt_kv_get_many(store, keys, key_lens, count, out);
}

int bittw_kv_list(bitt_store *store, const void *prefix, size_t prefix_len, const void *start,
                  size_t start_len, const void *end, size_t end_len, uint32_t limit, int reverse,
                  const char *cursor, bitt_entries **out)
{
    bitt_list_options o = BITT_LIST_OPTIONS_INIT;
    o.prefix = prefix;
    o.prefix_len = prefix_len;
    o.start = start;
    o.start_len = start_len;
    o.end = end;
    o.end_len = end_len;
    o.limit = limit;
    o.reverse = reverse;
    o.cursor = cursor;
    return bitt_kv_list(store, &o, out);
}

int bittw_queue_enqueue(bitt_store *store, const char *topic, const void *payload,
                        size_t payload_len, int kind, int64_t delay_ms, uint32_t max_attempts,
                        const void *dedup, size_t dedup_len, uint64_t *id_out)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.delay_ms = delay_ms;
    o.max_attempts = max_attempts;
    o.dedup_key = dedup;
    o.dedup_key_len = dedup_len;
    return bitt_queue_enqueue(store, topic, payload, payload_len, kind, &o, id_out);
}

int bittw_txn_enqueue(bitt_txn *txn, const char *topic, const void *payload, size_t payload_len,
                      int kind, int64_t delay_ms, uint32_t max_attempts, const void *dedup,
                      size_t dedup_len)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.delay_ms = delay_ms;
    o.max_attempts = max_attempts;
    o.dedup_key = dedup;
    o.dedup_key_len = dedup_len;
    return bitt_txn_enqueue(txn, topic, payload, payload_len, kind, &o);
}

/* bitt_enqueue_options version 2: the enqueues above with a priority (those
 * keep their signatures for the layers that call them). */
int bittw_queue_enqueue2(bitt_store *store, const char *topic, const void *payload,
                         size_t payload_len, int kind, int64_t delay_ms, uint32_t max_attempts,
                         const void *dedup, size_t dedup_len, int32_t priority, uint64_t *id_out)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.delay_ms = delay_ms;
    o.max_attempts = max_attempts;
    o.dedup_key = dedup;
    o.dedup_key_len = dedup_len;
    o.priority = priority;
    return bitt_queue_enqueue(store, topic, payload, payload_len, kind, &o, id_out);
}

int bittw_txn_enqueue2(bitt_txn *txn, const char *topic, const void *payload, size_t payload_len,
                       int kind, int64_t delay_ms, uint32_t max_attempts, const void *dedup,
                       size_t dedup_len, int32_t priority)
{
    bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
    o.delay_ms = delay_ms;
    o.max_attempts = max_attempts;
    o.dedup_key = dedup;
    o.dedup_key_len = dedup_len;
    o.priority = priority;
    return bitt_txn_enqueue(txn, topic, payload, payload_len, kind, &o);
}

/* One dequeue over several topics (bitt_queue_dequeue_topics); cancel may
 * be NULL. The list goes to the core as given: it refuses an empty,
 * repeating or too long one. */
int bittw_queue_dequeue_topics(bitt_store *store, const char *const *topics, size_t topic_count,
                               uint32_t limit, int64_t lease_ms, int64_t wait_ms,
                               bitt_cancel *cancel, bitt_messages **out)
{
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = limit;
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    return bitt_queue_dequeue_topics(store, topics, topic_count, &o, cancel, out);
}

int bittw_queue_dequeue(bitt_store *store, const char *topic, uint32_t limit, int64_t lease_ms,
                        int64_t wait_ms, bitt_messages **out)
{
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = limit;
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    return bitt_queue_dequeue(store, topic, &o, out);
}

/* The same, ended early by cancel (may be NULL; see bitt_cancel in bitt.h). */
int bittw_queue_dequeue_cancel(bitt_store *store, const char *topic, uint32_t limit,
                               int64_t lease_ms, int64_t wait_ms, bitt_cancel *cancel,
                               bitt_messages **out)
{
    bitt_dequeue_options o = BITT_DEQUEUE_OPTIONS_INIT;
    o.limit = limit;
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    return bitt_queue_dequeue_cancel(store, topic, &o, cancel, out);
}

int bittw_queue_stats(bitt_store *store, const char *topic, bitt_queue_stats *stats_out)
{
    return bitt_queue_stats_get(store, topic, stats_out);
}

int bittw_schedule_list(bitt_store *store, bitt_schedule ***list_out, size_t *count_out)
{
    return bitt_schedule_list(store, list_out, count_out);
}
%}

#if defined(SWIGPYTHON) || defined(SWIGJAVASCRIPT)
%inline %{
/* bitt_schedule_set with its options as arguments (cron, topic: NULL for
 * none), so that no options struct crosses into the language. */
int bittw_schedule_set(bitt_store *store, const char *key, int64_t interval_ms,
                       const void *payload, size_t payload_len, int kind, const char *cron,
                       int64_t first_run_at, const char *topic, uint32_t max_attempts,
                       int32_t priority)
{
    bitt_schedule_options o = BITT_SCHEDULE_OPTIONS_INIT;
    o.cron = cron;
    o.first_run_at = first_run_at;
    o.topic = topic;
    o.max_attempts = max_attempts;
    o.priority = priority;
    return bitt_schedule_set(store, key, interval_ms, payload, payload_len, kind, &o);
}
%}
/* Replaced by bittw_schedule_set, and read into the schedule's tuple/object. */
%ignore bitt_schedule_set;
%ignore bitt_schedule_options;
%ignore bitt_schedule_options_init;
%rename("$ignore", regextarget=1) "^bitt_schedule_(cron|topic|message_id)$";
#endif

/* ---- bitt.h itself ------------------------------------------------------ */
/* Replaced by the box and the helpers above, or plain data accessors the
 * typemaps already turn into tuples. */
%ignore bitt_store_open;
%ignore bitt_store_close;
%ignore bitt_txn_begin;
%ignore bitt_txn_free;
%ignore bitt_pubsub_subscribe;
%ignore bitt_pubsub_close;
%ignore bitt_buf_dispose;
%ignore bitt_free;
%ignore bitt_tuple_next;
%ignore bitt_buf;
%ignore bitt_kv_get_many;
%ignore bitt_kv_list;
%ignore bitt_list_options;
%ignore bitt_list_options_init;
%ignore bitt_enqueue_options;
%ignore bitt_enqueue_options_init;
%ignore bitt_dequeue_options;
%ignore bitt_dequeue_options_init;
%ignore bitt_queue_enqueue;
%ignore bitt_txn_enqueue;
%ignore bitt_queue_dequeue;
%ignore bitt_queue_dequeue_cancel;
%ignore bitt_queue_dequeue_topics;
%ignore bitt_queue_stats;
%ignore bitt_queue_stats_get;
%ignore bitt_schedule_list;
%ignore bitt_schedule_list_free;
%rename("$ignore", regextarget=1) "^bitt_entry_";
%rename("$ignore", regextarget=1) "^bitt_entries_";
%rename("$ignore", regextarget=1) "^bitt_messages?_";
%rename("$ignore", regextarget=1) "^bitt_schedule_(key|interval|payload|kind|next_run_at|occurrence|free)$";
%ignore bitt_tuple_push_bytes;
%ignore bitt_tuple_push_string;
%ignore bitt_tuple_push_int;
%ignore bitt_tuple_push_float;
%ignore bitt_tuple_push_bool;
/* A C callback per task: for C callers (the Go layer batches through its
 * own helper, bindings/go/bitt_go.i). */
%ignore bitt_batch_run;
%define BITT_API %enddef
%include "bitt.h"
