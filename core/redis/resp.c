/*
 * core/redis/resp.c: writing a command in RESP, into a buffer that is kept.
 *
 * Why not hiredis' redisFormatCommandArgv: it measures with a loop of
 * divisions per argument, writes with sprintf, and mallocs a new buffer for
 * every command, which the caller frees after sending. Every backend call
 * formats one command, so that cost is paid per call. Here the size is
 * computed first (one pass), the buffer is grown only when a command is
 * larger than any before it, and the bytes are written with memcpy and a
 * digit loop: in the steady state a command costs no allocation at all.
 *
 * A buffer that grew for a rare large command (FUNCTION LOAD of the whole
 * library, a large value) is given back once a small command follows, so
 * an idle connection does not hold megabytes.
 */
#include <stdint.h>
#include <string.h>

#include "redis_internal.h"

/* Above this, a buffer is shrunk when the next command is small. */
#define RESP_KEEP_MAX ((size_t)64 * 1024)
#define RESP_MIN_CAP ((size_t)512)

/* Most lengths have one or two digits: a loop that stops early. */
static size_t digits(size_t n)
{
    size_t d = 1;
    for (; n >= 10; n /= 10)
        d++;
    return d;
}

/* Writes prefix, n in decimal (d digits) and "\r\n" at p; returns the end. */
static char *put_header(char *p, char prefix, size_t n, size_t d)
{
    *p++ = prefix;
    char *end = p + d;
    for (char *q = end; q > p; n /= 10)
        *--q = (char)('0' + n % 10);
    end[0] = '\r';
    end[1] = '\n';
    return end + 2;
}

/* Makes room for need bytes, keeping a large buffer only while needed. */
static int reserve(bitt_rd_buf *buf, size_t need)
{
    if (need <= buf->cap && !(buf->cap > RESP_KEEP_MAX && need <= RESP_KEEP_MAX))
        return 0;
    size_t cap = need < RESP_MIN_CAP ? RESP_MIN_CAP : need;
    if (cap <= RESP_KEEP_MAX) {
        /* Room to grow a little without a realloc per new size. */
        size_t pow = RESP_MIN_CAP;
        while (pow < cap)
            pow *= 2;
        cap = pow;
    }
    char *p = bitt__realloc(buf->p, cap);
    if (!p)
        return need <= buf->cap ? 0 : -1; /* a shrink that failed keeps the larger one */
    buf->p = p;
    buf->cap = cap;
    return 0;
}

/* Writes the command at buf->p + start; on failure buf->len is start. */
static int write_at(bitt_rd_buf *buf, size_t start, const char *what, size_t argc,
                    const char *const *argv, const size_t *lens)
{
    buf->len = start;
    /* The size first: "*argc\r\n", then "$len\r\n" arg "\r\n" each. */
    size_t need = 1 + digits(argc) + 2;
    for (size_t i = 0; i < argc; i++) {
        size_t n = lens ? lens[i] : strlen(argv[i]);
        size_t one = 1 + digits(n) + 2 + 2;
        if (n > SIZE_MAX - one || need > SIZE_MAX - one - n)
            return bitt__fail(BITT_ETOOLARGE, "redis: %s: the command is too large", what);
        need += one + n;
    }
    if (need > SIZE_MAX - start)
        return bitt__fail(BITT_ETOOLARGE, "redis: %s: the command is too large", what);
    if (reserve(buf, start + need))
        return bitt__fail(BITT_ENOMEM, "redis: out of memory formatting %s (%zu bytes)", what,
                          need);
    char *p = put_header(buf->p + start, '*', argc, digits(argc));
    for (size_t i = 0; i < argc; i++) {
        size_t n = lens ? lens[i] : strlen(argv[i]);
        p = put_header(p, '$', n, digits(n));
        if (n)
            memcpy(p, argv[i], n);
        p += n;
        *p++ = '\r';
        *p++ = '\n';
    }
    buf->len = (size_t)(p - buf->p);
    return BITT_OK;
}

int bitt__rd_resp_format(bitt_rd_buf *buf, const char *what, size_t argc, const char *const *argv,
                         const size_t *lens)
{
    return write_at(buf, 0, what, argc, argv, lens);
}

int bitt__rd_resp_append(bitt_rd_buf *buf, const char *what, size_t argc, const char *const *argv,
                         const size_t *lens)
{
    return write_at(buf, buf->len, what, argc, argv, lens);
}

void bitt__rd_buf_free(bitt_rd_buf *buf)
{
    free(buf->p);
    buf->p = NULL;
    buf->len = buf->cap = 0;
}
