/* Injection cases: versions and errors, tuple keys, library buffers,
 * publish/subscribe and batches. */
#include <string.h>

#include "inject.h"

static int call_info(inj_ctx *c)
{
    (void)c;
    if (!bitt_version() || bitt_version_number() != BITT_VERSION_NUMBER ||
        strcmp(bitt_strerror(BITT_ENOMEM), "out of memory"))
        return BITT_EINVAL;
    bitt_error_clear();
    if (bitt_error_last()[0] || bitt_error_last_code() != BITT_OK)
        return BITT_EINVAL;
    return BITT_OK;
}

/* Builds a key of every part type and reads it back. */
static int call_tuple(inj_ctx *c)
{
    bitt_buf *k = &c->buf;
    int rc = bitt_tuple_push_bytes(k, "\0b", 2);
    if (!rc)
        rc = bitt_tuple_push_string(k, "user", 4);
    if (!rc)
        rc = bitt_tuple_push_int(k, -42);
    if (!rc)
        rc = bitt_tuple_push_float(k, 2.5);
    if (!rc)
        rc = bitt_tuple_push_bool(k, 1);
    bitt_buf part = BITT_BUF_INIT;
    size_t offset = 0, parts = 0;
    int type;
    while (!rc &&
           (rc = bitt_tuple_next(k->ptr, k->len, &offset, &type, &part, NULL, NULL)) == BITT_OK)
        parts++;
    if (rc == BITT_NOTFOUND)
        rc = parts == 5 ? BITT_OK : BITT_EINVAL;
    bitt_buf_dispose(&part);
    /* the bytes are the library's: handing them to bitt_free is allowed */
    bitt_free(k->ptr);
    *k = (bitt_buf)BITT_BUF_INIT;
    return rc;
}

static int prepare_sub(inj_ctx *c)
{
    return bitt_pubsub_subscribe(c->store, "news", &c->sub);
}

static int call_publish(inj_ctx *c)
{
    return bitt_pubsub_publish(c->store, "news", "hello", 5);
}

static int call_subscribe(inj_ctx *c)
{
    int rc = bitt_pubsub_subscribe(c->store, "news", &c->sub);
    bitt_pubsub_close(c->sub);
    c->sub = NULL;
    return rc;
}

static int prepare_published(inj_ctx *c)
{
    int rc = prepare_sub(c);
    return rc ? rc : call_publish(c);
}

static int call_next(inj_ctx *c)
{
    int rc = bitt_pubsub_next(c->sub, 0, &c->message);
    if (rc)
        return rc;
    size_t len = 0;
    const uint8_t *p = bitt_message_payload(c->message, &len);
    rc = len == 5 && !memcmp(p, "hello", 5) ? BITT_OK : BITT_EINVAL;
    bitt_message_free(c->message);
    c->message = NULL;
    return rc;
}

/* A fired token ends the wait and leaves the message; reset, it comes. */
static int call_next_cancel(inj_ctx *c)
{
    bitt_cancel *k = NULL;
    int rc = bitt_cancel_new(&k);
    if (rc)
        return rc;
    bitt_cancel_fire(k);
    rc = bitt_pubsub_next_cancel(c->sub, 60000, k, &c->message);
    if (rc == BITT_ECANCELED && !c->message) {
        bitt_cancel_reset(k);
        rc = bitt_pubsub_next_cancel(c->sub, 0, k, &c->message);
    } else if (rc >= 0) {
        rc = BITT_EINVAL; /* a fired token must cancel */
    }
    bitt_cancel_free(k);
    if (rc)
        return rc;
    size_t len = 0;
    const uint8_t *p = bitt_message_payload(c->message, &len);
    return len == 5 && !memcmp(p, "hello", 5) ? BITT_OK : BITT_EINVAL;
}

/* A task of the batch case: reads one of three keys (one absent). */
static int batch_get(void *arg, size_t i)
{
    static const char *const keys[] = {"a", "b", "absent"};
    bitt_entry *e = NULL;
    int rc = bitt_kv_get(((inj_ctx *)arg)->store, keys[i], strlen(keys[i]), &e);
    bitt_entry_free(e);
    return rc;
}

/* Three reads as tasks of one thread: a failing one is the run's status,
 * with its message. */
static int call_batch(inj_ctx *c)
{
    return bitt_batch_run(batch_get, c, 3);
}

const inj_case inj_misc_cases[] = {
    {"batch_run", "bitt_batch_run", NULL, call_batch, 0, 0},
    {"info",
     "bitt_version bitt_version_number bitt_strerror bitt_error_clear bitt_error_last "
     "bitt_error_last_code",
     NULL, call_info, 0, 0},
    {"tuple",
     "bitt_tuple_push_bytes bitt_tuple_push_string bitt_tuple_push_int bitt_tuple_push_float "
     "bitt_tuple_push_bool bitt_tuple_next bitt_buf_dispose bitt_free",
     NULL, call_tuple, 0, 0},
    {"pubsub_publish", "bitt_pubsub_publish", prepare_sub, call_publish, 0, 0},
    {"pubsub_subscribe", "bitt_pubsub_subscribe bitt_pubsub_close", NULL, call_subscribe, 0, 0},
    {"pubsub_next", "bitt_pubsub_next bitt_message_payload bitt_message_free", prepare_published,
     call_next, 0, 0},
    {"pubsub_next_cancel", "bitt_pubsub_next_cancel", prepare_published, call_next_cancel, 0, 0},
};
const size_t inj_misc_case_count = sizeof inj_misc_cases / sizeof *inj_misc_cases;
