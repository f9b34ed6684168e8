/*
 * Error texts a caller records on a nacked message or a failed or parked
 * event. They come from exceptions and strerror() in any encoding, while
 * PostgreSQL's text columns take UTF-8 only: one rule in the core keeps
 * every backend storing the same text, and a nack is never refused for the
 * bytes of its diagnostic (the message would stay leased). Each invalid
 * sequence (its maximal subpart, as Unicode recommends and Python's
 * errors="replace" does) becomes U+FFFD.
 */
#include <string.h>

#include "internal.h"
#include "utf8.h"

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* The length of the invalid subpart at p (n >= 1 bytes left), or 0 when a
 * valid sequence starts there (*len: its length). */
static size_t invalid_run(const uint8_t *p, size_t n, size_t *len)
{
    size_t bad = 0;
    *len = bitt__utf8_seq(p, n, &bad);
    if (*len)
        return 0;
    return bad ? bad : 1;
}

int bitt__error_text(const bitt_store *store, const char *error, const char *what, char **copy)
{
    *copy = NULL;
    if (!error)
        return BITT_OK;
    size_t n = strlen(error);
    if (n > store->limits.max_value_size)
        return bitt__fail(BITT_ETOOLARGE, "%s of %zu bytes is over the value limit", what, n);
    const uint8_t *p = (const uint8_t *)error;
    if (!bitt__utf8_invalid_at(p, n))
        return BITT_OK;
    /* At most one replacement (3 bytes) per input byte. */
    char *out = bitt__malloc(3 * n + 1);
    if (!out)
        return bitt__fail(BITT_ENOMEM, "out of memory for a %s of %zu bytes", what, n);
    size_t j = 0;
    for (size_t i = 0, len; i < n;) {
        size_t run = invalid_run(p + i, n - i, &len);
        if (run) {
            memcpy(out + j, replacement, 3);
            j += 3;
            i += run;
        } else {
            memcpy(out + j, p + i, len);
            j += len;
            i += len;
        }
    }
    out[j] = '\0';
    *copy = out;
    return BITT_OK;
}
