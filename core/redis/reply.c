/*
 * core/redis/reply.c: the bounded reply reader, argument lists, and
 * reading the replies of scripts.
 *
 * hiredis 0.14 trusts the lengths a server sends: "*4294967295\r\n" asks it
 * for a 34 GB array (hiredis #1357), and it has no maxelements. The reader
 * here builds the same redisReply objects (freed by freeReplyObject)
 * through functions that count the array slots and string bytes of the
 * whole reply against a bound set before each command, and refuse (the
 * reader then fails with "out of memory", which conn.c reports as a reply
 * over its bound). conn.c also stops reading when the unparsed input passes
 * the byte bound, so one huge bulk string cannot grow the buffer either.
 * The bounds follow what the call can legitimately get: 16 slots per
 * record asked for, and the store's key and value limits per record (but
 * never less than one value of the library's largest allowed size).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_internal.h"

/* ---- the bounded reader ------------------------------------------------------ */

/* Notes that the reader failed for want of memory, not a bad reply. */
static void *no_memory(const redisReadTask *task)
{
    bitt_rd_bound *b = task->privdata;
    b->out_of_memory = 1;
    return NULL;
}

static redisReply *new_reply(const redisReadTask *task, int type)
{
    redisReply *r = bitt__calloc(1, sizeof *r);
    if (!r)
        return no_memory(task);
    r->type = type;
    if (task->parent) {
        redisReply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
    bitt_rd_bound *b = task->privdata;
    if (len > b->max_bytes - b->bytes) {
        b->exceeded = 1;
        return NULL;
    }
    char *copy = bitt__malloc(len + 1);
    if (!copy)
        return no_memory(task);
    redisReply *r = new_reply(task, task->type);
    if (!r) {
        free(copy);
        return NULL;
    }
    b->bytes += len;
    memcpy(copy, str, len);
    copy[len] = '\0';
    r->str = copy;
    r->len = len;
    return r;
}

static void *create_array(const redisReadTask *task, int elements)
{
    bitt_rd_bound *b = task->privdata;
    size_t n = elements > 0 ? (size_t)elements : 0;
    if (n > b->max_elements - b->elements) {
        b->exceeded = 1;
        return NULL;
    }
    redisReply **slots = NULL;
    if (n && !(slots = bitt__calloc(n, sizeof *slots)))
        return no_memory(task);
    redisReply *r = new_reply(task, REDIS_REPLY_ARRAY);
    if (!r) {
        free(slots);
        return NULL;
    }
    b->elements += n;
    r->element = slots;
    r->elements = n;
    return r;
}

static void *create_integer(const redisReadTask *task, long long value)
{
    redisReply *r = new_reply(task, REDIS_REPLY_INTEGER);
    if (r)
        r->integer = value;
    return r;
}

static void *create_nil(const redisReadTask *task)
{
    return new_reply(task, REDIS_REPLY_NIL);
}

static redisReplyObjectFunctions bounded_functions = {
    create_string, create_array, create_integer, create_nil, freeReplyObject,
};

#define READER_MAX_IDLE_BUF 8192 /* a large reply's buffer is given back after it */

void bitt__rd_reader_setup(redisContext *c, bitt_rd_bound *bound)
{
    c->reader->fn = &bounded_functions;
    c->reader->privdata = bound;
    c->reader->maxbuf = READER_MAX_IDLE_BUF;
}

/* Any one value any bitt store can write (another process may run with
 * larger limits than this one) is readable: the byte bound never goes
 * below the largest key and value the library allows. */
#define BYTES_FLOOR ((size_t)BITT_MAX_VALUE_SIZE_CAP + BITT_MAX_KEY_SIZE_CAP + 65536)

void bitt__rd_bound_reset(const bitt_backend *be, bitt_rd_bound *b, size_t items)
{
    /* A record (an entry, a message, a schedule) has at most 16 fields and
     * holds at most a key, a value and an error text of the store's limits. */
    size_t per_item = be->limits.max_key_size + 2 * be->limits.max_value_size + 2048;
    if (items < 1)
        items = 1;
    b->max_elements = items * 16 + 64;
    b->max_bytes = items * per_item + 65536;
    if (b->max_bytes < BYTES_FLOOR)
        b->max_bytes = BYTES_FLOOR;
    b->elements = b->bytes = 0;
    b->exceeded = 0;
    b->out_of_memory = 0;
}

/* ---- argument lists ------------------------------------------------------------ */

void bitt__rd_args_init(bitt_rd_args *a)
{
    memset(a, 0, offsetof(bitt_rd_args, v_in));
    a->v = a->v_in;
    a->len = a->len_in;
    a->num = a->num_in;
    a->cap = BITT_RD_ARGS_INLINE;
    a->nums = a->nums_in;
    a->nums_cap = sizeof a->nums_in;
}

void bitt__rd_args_free(bitt_rd_args *a)
{
    if (a->v != a->v_in)
        free(a->v);
    if (a->len != a->len_in)
        free(a->len);
    if (a->num != a->num_in)
        free(a->num);
    if (a->nums != a->nums_in)
        free(a->nums);
    memset(a, 0, offsetof(bitt_rd_args, v_in));
}

/* An array of the list with room for cap items of size bytes: realloc'd,
 * or moved from the inline storage to the heap; NULL on out of memory (cur
 * is then untouched). */
static void *grow_array(void *cur, const void *in, size_t used, size_t cap, size_t size)
{
    if (cur != in)
        return bitt__realloc(cur, cap * size);
    void *p = bitt__malloc(cap * size);
    if (p && used)
        memcpy(p, cur, used * size);
    return p;
}

static int grow(bitt_rd_args *a)
{
    if (a->count < a->cap)
        return 0;
    size_t cap = a->cap ? a->cap * 2 : 16;
    const char **v = grow_array(a->v, a->v_in, a->count, cap, sizeof *v);
    if (v)
        a->v = v;
    size_t *len = grow_array(a->len, a->len_in, a->count, cap, sizeof *len);
    if (len)
        a->len = len;
    size_t *num = grow_array(a->num, a->num_in, a->count, cap, sizeof *num);
    if (num)
        a->num = num;
    if (!v || !len || !num)
        return -1;
    a->cap = cap;
    return 0;
}

void bitt__rd_arg(bitt_rd_args *a, const void *p, size_t n)
{
    if (a->oom || grow(a)) {
        a->oom = 1;
        return;
    }
    a->v[a->count] = n ? p : "";
    a->len[a->count] = n;
    a->num[a->count] = 0;
    a->count++;
}

void bitt__rd_arg_str(bitt_rd_args *a, const char *s)
{
    bitt__rd_arg(a, s, s ? strlen(s) : 0);
}

static void arg_number(bitt_rd_args *a, const char *text, size_t n)
{
    if (a->oom)
        return;
    if (a->nums_len + n > a->nums_cap) {
        size_t cap = a->nums_cap ? a->nums_cap * 2 : 256;
        while (cap < a->nums_len + n)
            cap *= 2;
        char *nums = grow_array(a->nums, a->nums_in, a->nums_len, cap, 1);
        if (!nums) {
            a->oom = 1;
            return;
        }
        a->nums = nums;
        a->nums_cap = cap;
    }
    size_t at = a->nums_len;
    memcpy(a->nums + at, text, n);
    a->nums_len += n;
    bitt__rd_arg(a, "", n); /* v is set by bitt__rd_args_finish */
    if (!a->oom)
        a->num[a->count - 1] = at + 1;
}

void bitt__rd_arg_i64(bitt_rd_args *a, int64_t v)
{
    char text[24];
    arg_number(a, text, bitt__counter_format(v, text));
}

void bitt__rd_arg_copy(bitt_rd_args *a, const void *p, size_t n)
{
    arg_number(a, p, n);
}

void bitt__rd_arg_u64(bitt_rd_args *a, uint64_t v)
{
    char text[24];
    arg_number(a, text, (size_t)snprintf(text, sizeof text, "%llu", (unsigned long long)v));
}

int bitt__rd_args_finish(bitt_rd_args *a)
{
    if (a->oom)
        return bitt__fail(BITT_ENOMEM, "redis: out of memory building a command");
    for (size_t i = 0; i < a->count; i++)
        if (a->num[i])
            a->v[i] = a->nums + a->num[i] - 1;
    return BITT_OK;
}

/* ---- reading replies ------------------------------------------------------------ */

static int malformed(const char *what)
{
    return bitt__fail(BITT_EBACKEND, "redis: %s: the reply has an unexpected shape", what);
}

int bitt__rd_elem_count(const redisReply *r, size_t at, size_t n, const char *what)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < at || r->elements - at < n)
        return malformed(what);
    return BITT_OK;
}

const char *bitt__rd_str(const redisReply *r, size_t i, size_t *len)
{
    const redisReply *e = r->element[i];
    if (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS) {
        *len = e->len;
        return e->str;
    }
    *len = 0;
    return NULL;
}

int bitt__rd_parse_i64(const char *s, size_t n, int64_t *out, const char *what)
{
    if (!s || bitt__counter_parse((const uint8_t *)s, n, out) != BITT_OK) {
        bitt__error_reset();
        return bitt__fail(BITT_EBACKEND, "redis: %s: a stored number is not a canonical int64",
                          what);
    }
    return BITT_OK;
}

int bitt__rd_i64(const redisReply *r, size_t i, int64_t *out, const char *what)
{
    const redisReply *e = r->element[i];
    if (e->type == REDIS_REPLY_INTEGER) {
        *out = e->integer;
        return BITT_OK;
    }
    if (e->type == REDIS_REPLY_NIL) {
        *out = 0;
        return BITT_OK;
    }
    if (e->type != REDIS_REPLY_STRING)
        return malformed(what);
    return bitt__rd_parse_i64(e->str, e->len, out, what);
}

int bitt__rd_u64(const redisReply *r, size_t i, uint64_t *out, const char *what)
{
    int64_t v;
    int rc = bitt__rd_i64(r, i, &v, what);
    if (!rc && v < 0)
        rc = bitt__fail(BITT_EBACKEND, "redis: %s: a stored id is negative", what);
    if (!rc)
        *out = (uint64_t)v;
    return rc;
}

int bitt__rd_status(const redisReply *r, const char *what)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return malformed(what);
    long long code = r->element[0]->integer;
    if (code >= 0)
        return (int)code;
    size_t len = 0;
    const char *msg = r->elements > 1 ? bitt__rd_str(r, r->elements - 1, &len) : NULL;
    if (code < BITT_ELEASELOST)
        code = BITT_EBACKEND;
    if (!msg)
        return bitt__fail((int)code, "redis: %s failed", what);
    return bitt__fail((int)code, "%.*s", (int)(len > 400 ? 400 : len), msg);
}

/* A NUL-terminated copy of element i in buf (NULL for nil). */
static char *text_at(const redisReply *r, size_t i, char *buf, size_t size, char **heap)
{
    size_t len;
    const char *s = bitt__rd_str(r, i, &len);
    if (!s)
        return NULL;
    if (len < size) {
        memcpy(buf, s, len);
        buf[len] = '\0';
        return buf;
    }
    *heap = bitt__malloc(len + 1);
    if (!*heap)
        return NULL;
    memcpy(*heap, s, len);
    (*heap)[len] = '\0';
    return *heap;
}

int bitt__rd_push_message(const redisReply *r, size_t at, size_t width, bitt_messages *out,
                          const char *what)
{
    int rc = bitt__rd_elem_count(r, at, width, what);
    int64_t n[BITT_RD_QGET_FIELDS] = {0};
    static const size_t numeric[] = {0, 3, 5, 6, 8, 9, 10, 11, 12, 13, 14, 16};
    for (size_t k = 0; !rc && k < sizeof numeric / sizeof *numeric && numeric[k] < width; k++)
        rc = bitt__rd_i64(r, at + numeric[k], &n[numeric[k]], what);
    if (!rc && (n[13] < INT32_MIN || n[13] > INT32_MAX))
        rc = malformed(what);
    if (rc)
        return rc;
    char topic_buf[BITT_NAME_MAX + 1], token_buf[64], error_buf[256];
    char *topic_heap = NULL, *token_heap = NULL, *error_heap = NULL;
    size_t payload_len;
    const char *payload = bitt__rd_str(r, at + 2, &payload_len);
    bitt_message f = {
        .id = (uint64_t)n[0],
        .topic = text_at(r, at + 1, topic_buf, sizeof topic_buf, &topic_heap),
        .payload = (uint8_t *)(payload ? payload : ""),
        .payload_len = payload_len,
        .kind = (int)n[3],
        .token = text_at(r, at + 4, token_buf, sizeof token_buf, &token_heap),
        .attempts = (uint32_t)n[5],
        .max_attempts = (uint32_t)n[6],
        .last_error = text_at(r, at + 7, error_buf, sizeof error_buf, &error_heap),
        .created_at = n[8],
        .due_at = n[9],
        .failed_at = n[10],
        .park_reason = (int)n[11],
        .state = (int)n[12],
        .priority = (int32_t)n[13],
        .done_at = n[14],
        .result_kind = (int)n[16],
    };
    if (width > 15) /* a done message's result; nil: none */
        f.result = (uint8_t *)bitt__rd_str(r, at + 15, &f.result_len);
    bitt_message *m = bitt__message_new(&f);
    free(topic_heap);
    free(token_heap);
    free(error_heap);
    if (!m)
        return BITT_ENOMEM;
    return bitt__messages_push(out, m);
}

int bitt__rd_push_messages(const redisReply *r, size_t at, size_t width, bitt_messages *out,
                           const char *what)
{
    const size_t base = out->count;
    int rc = BITT_OK;
    if (r->elements < at || (r->elements - at) % width)
        rc = malformed(what);
    for (size_t i = at; !rc && i < r->elements; i += width)
        rc = bitt__rd_push_message(r, i, width, out, what);
    if (rc)
        while (out->count > base)
            bitt_message_free(out->items[--out->count]);
    return rc;
}
