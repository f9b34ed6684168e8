/* The PostgreSQL URL parser and password redaction, without a connection. */
#include "url_backends.h"

#ifdef BITT_HAVE_POSTGRES
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

/* Redacts "<pad>secret<tail>" with the secret placed around the edges of
 * the redaction's 1024-byte work buffer and of small output buffers. */
static void probe(const bitt_backend *be, const char *secret, fz_text_check check, void *ctx)
{
    static const size_t pads[] = {0, 7, 200, 1000, 1010, 1020, 1022, 1023};
    static const size_t caps[] = {16, 64, 256, 2048};
    size_t n = strlen(secret);
    char *msg = malloc(1030 + n + 32);
    char *out = malloc(2048);
    if (!msg || !out)
        abort();
    for (size_t p = 0; p < sizeof pads / sizeof *pads; p++) {
        memset(msg, 'x', pads[p]);
        memcpy(msg + pads[p], secret, n);
        strcpy(msg + pads[p] + n, "\" failed");
        for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
            bitt__pg_redact(be, msg, out, caps[c]);
            check(out, ctx);
        }
    }
    free(msg);
    free(out);
}

int fz_pg_url(bitt_url *url, fz_text_check check, void *ctx)
{
    bitt_backend *be = calloc(1, sizeof *be);
    if (!be)
        abort();
    int rc = bitt__pg_read_url(url, be);
    if (rc)
        check(bitt_error_last(), ctx);
    else {
        if (be->password)
            probe(be, be->password, check, ctx);
        if (be->password_raw)
            probe(be, be->password_raw, check, ctx);
        for (size_t i = 0; i < be->nparams; i++)
            if (!strcmp(be->keywords[i], "password"))
                probe(be, be->values[i], check, ctx);
    }
    bitt__pg_free_params(be);
    free(be);
    return rc;
}
#else
int fz_pg_url(bitt_url *url, fz_text_check check, void *ctx)
{
    (void)url, (void)check, (void)ctx;
    return -1000;
}
#endif
