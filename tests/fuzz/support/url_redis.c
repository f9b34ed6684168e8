/* The Redis URL parser, without a connection. */
#include "url_backends.h"

#ifdef BITT_HAVE_REDIS
#include <stdlib.h>

#include "redis/redis_internal.h"

int fz_rd_url(bitt_url *url, fz_text_check check, void *ctx)
{
    bitt_backend *be = calloc(1, sizeof *be);
    if (!be)
        abort();
    int rc = bitt__rd_parse_url(url, be);
    if (rc)
        check(bitt_error_last(), ctx);
    check(be->where, ctx);
    bitt__rd_free_location(be);
    free(be);
    return rc;
}
#else
int fz_rd_url(bitt_url *url, fz_text_check check, void *ctx)
{
    (void)url, (void)check, (void)ctx;
    return -1000;
}
#endif
