/*
 * tests/fuzz/support/url_backends.h: the network backends' URL parsers,
 * run without connecting. Each backend defines its own struct bitt_backend,
 * so each lives in a file of its own.
 */
#ifndef BITT_FUZZ_URL_BACKENDS_H
#define BITT_FUZZ_URL_BACKENDS_H

#include "internal.h"

/* Called with every text a parser produced that could reach a user: error
 * messages, where-strings, redacted messages. */
typedef void (*fz_text_check)(const char *text, void *ctx);

/* Parses url as the PostgreSQL backend does; on success redacts messages
 * that quote each password the connection would use (decoded, as written,
 * at the edges of the redaction buffers) and checks each result. Returns
 * the parse status; -1000 when the backend is not built. */
int fz_pg_url(bitt_url *url, fz_text_check check, void *ctx);
/* Parses url as the Redis backend does and checks its where-string. */
int fz_rd_url(bitt_url *url, fz_text_check check, void *ctx);

#endif /* BITT_FUZZ_URL_BACKENDS_H */
