/* bitt_buf: growable byte buffers, always NUL-terminated when allocated. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void bitt_buf_dispose(bitt_buf *buf)
{
    if (!buf)
        return;
    free(buf->ptr);
    buf->ptr = NULL;
    buf->len = 0;
    buf->cap = 0;
}

void bitt_free(void *ptr)
{
    free(ptr);
}

int bitt__buf_reserve(bitt_buf *buf, size_t extra)
{
    if (extra > SIZE_MAX - buf->len - 1)
        return bitt__fail(BITT_ENOMEM, "buffer size overflow");
    size_t need = buf->len + extra + 1;
    if (need <= buf->cap)
        return BITT_OK;
    size_t cap = buf->cap ? buf->cap : 32;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = bitt__realloc(buf->ptr, cap);
    if (!p)
        return bitt__fail(BITT_ENOMEM, "out of memory growing a buffer to %zu bytes", cap);
    buf->ptr = p;
    buf->cap = cap;
    return BITT_OK;
}

int bitt__buf_put(bitt_buf *buf, const void *data, size_t len)
{
    int rc = bitt__buf_reserve(buf, len);
    if (rc)
        return rc;
    if (len)
        memcpy(buf->ptr + buf->len, data, len);
    buf->len += len;
    buf->ptr[buf->len] = '\0';
    return BITT_OK;
}

int bitt__buf_putc(bitt_buf *buf, uint8_t byte)
{
    return bitt__buf_put(buf, &byte, 1);
}
