/* Status strings and the per-thread last failure. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local int last_code;
static _Thread_local char last_message[sizeof((bitt__error_state *)0)->message];

const char *bitt_strerror(int status)
{
    switch (status) {
    case BITT_OK: return "ok";
    case BITT_NOTFOUND: return "not found";
    case BITT_EXISTS: return "already exists";
    case BITT_DENIED: return "denied: not enough budget";
    case BITT_EINVAL: return "invalid argument";
    case BITT_ENOMEM: return "out of memory";
    case BITT_ETOOLARGE: return "too large";
    case BITT_ENOTCOUNTER: return "not a counter";
    case BITT_EOVERFLOW: return "counter overflow";
    case BITT_ECONFLICT: return "check failed (conflict)";
    case BITT_EBACKEND: return "backend failure";
    case BITT_EBUSY: return "database busy";
    case BITT_ESCHEMA: return "schema mismatch";
    case BITT_EURL: return "invalid store URL";
    case BITT_ECURSOR: return "invalid cursor";
    case BITT_EUSAGE: return "call out of order";
    case BITT_EUNSUPPORTED: return "not supported by this backend";
    case BITT_ETOKEN: return "stale ack token";
    case BITT_ELEASELOST: return "lease lost";
    case BITT_ECANCELED: return "cancelled";
    default: return "unknown status";
    }
}

const char *bitt_error_last(void)
{
    return last_message;
}

int bitt_error_last_code(void)
{
    return last_code;
}

void bitt_error_clear(void)
{
    bitt__error_reset();
}

void bitt__error_reset(void)
{
    last_code = BITT_OK;
    last_message[0] = '\0';
}

int bitt__fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
}

void bitt__error_save(bitt__error_state *out)
{
    out->code = last_code;
    memcpy(out->message, last_message, sizeof last_message);
}

void bitt__error_restore(const bitt__error_state *in)
{
    last_code = in->code;
    memcpy(last_message, in->message, sizeof last_message);
}
