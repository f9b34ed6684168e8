/*
 * Cancel tokens (bitt.h, "cancellation"). A token is one flag; firing it
 * also bumps the process-wide wake-up generation, so a wait sleeping on it
 * (memory, SQLite) looks again at once instead of at its next poll. Waits
 * on the network backends sleep at most one 50 ms slice between looks.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

struct bitt_cancel {
    atomic_int fired;
};

int bitt_cancel_new(bitt_cancel **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = bitt__calloc(1, sizeof **out);
    if (!*out)
        return bitt__fail(BITT_ENOMEM, "out of memory for a cancel token");
    atomic_init(&(*out)->fired, 0);
    return BITT_OK;
}

void bitt_cancel_fire(bitt_cancel *cancel)
{
    if (!cancel)
        return;
    atomic_store(&cancel->fired, 1);
    bitt__notify_all();
}

int bitt_cancel_fired(const bitt_cancel *cancel)
{
    return cancel && atomic_load(&((bitt_cancel *)cancel)->fired);
}

void bitt_cancel_reset(bitt_cancel *cancel)
{
    if (cancel)
        atomic_store(&cancel->fired, 0);
}

void bitt_cancel_free(bitt_cancel *cancel)
{
    free(cancel);
}

int bitt__cancelled(const bitt_cancel *cancel, const char *what)
{
    if (!bitt_cancel_fired(cancel))
        return 0;
    bitt__fail(BITT_ECANCELED, "%s was cancelled", what);
    return 1;
}
