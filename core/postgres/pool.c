/*
 * core/postgres/pool.c: the connections of a store.
 *
 * The backend is `concurrent` (the engine calls it without the store's
 * mutex): a libpq connection serves one thread at a time, and one per
 * store made every thread of a process wait for the others' round trips
 * and fsyncs. Each call takes a slot (a connection with its prepared
 * statements and its own error state) and gives it back; calls from
 * several threads run at once, and their commits meet in the server's
 * group commit. Slots are made when every one is busy, up to `pool` (URL
 * option, default BITT_PG_DEFAULT_POOL), so a store used by one thread
 * keeps one connection; past `pool` a caller waits for a slot (each call
 * ends within the statement timeout, so that wait is bounded too). Idle
 * slots are a stack: the connection used last, open, is taken first, and
 * one that lost its connection goes under the open ones.
 *
 * Waiting here is safe on a thread with fibers too (core/io_wait.h): the
 * backend's waits block the thread rather than suspend a fiber, so no
 * fiber of the waiting thread can be holding a slot.
 */
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

int bitt__pg_pool_init(bitt_backend *home)
{
    bitt_pg_pool *p = &home->pool;
    if (pthread_mutex_init(&p->lock, NULL))
        return bitt__fail(BITT_ENOMEM, "postgres: cannot create the pool mutex");
    if (pthread_cond_init(&p->cond, NULL)) {
        pthread_mutex_destroy(&p->lock);
        return bitt__fail(BITT_ENOMEM, "postgres: cannot create the pool condition");
    }
    p->ready = 1;
    p->slots = bitt__calloc(p->size, sizeof *p->slots);
    p->idle = bitt__calloc(p->size, sizeof *p->idle);
    if (!p->slots || !p->idle)
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory for %zu connections", p->size);
    return BITT_OK;
}

/* A slot sharing home's settings, not connected yet. */
static bitt_backend *slot_new(const bitt_backend *home)
{
    bitt_backend *s = bitt__calloc(1, sizeof *s);
    if (!s) {
        bitt__fail(BITT_ENOMEM, "postgres: out of memory for a connection");
        return NULL;
    }
    memcpy(s->schema, home->schema, sizeof s->schema);
    memcpy(s->prefix, home->prefix, sizeof s->prefix);
    memcpy(s->channel, home->channel, sizeof s->channel);
    s->ns_seed = home->ns_seed;
    s->statement_timeout = home->statement_timeout;
    s->done_retention_ms = home->done_retention_ms;
    s->dead_retention_ms = home->dead_retention_ms;
    s->spin.budget_us = home->spin.budget_us;
    s->keywords = home->keywords;
    s->values = home->values;
    s->nparams = home->nparams;
    s->password = home->password;
    s->password_raw = home->password_raw;
    s->failed_step = -1;
    return s;
}

static void slot_free(bitt_backend *s)
{
    bitt__pg_rollback(s);
    bitt__pg_drop(s);
    free(s);
}

void bitt__pg_pool_free(bitt_backend *home)
{
    bitt_pg_pool *p = &home->pool;
    for (size_t i = 0; i < p->made; i++)
        slot_free(p->slots[i]);
    free(p->slots);
    free(p->idle);
    p->slots = p->idle = NULL;
    p->made = p->nidle = 0;
    if (p->ready) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        p->ready = 0;
    }
}

bitt_backend *bitt__pg_pool_take(bitt_backend *home)
{
    bitt_pg_pool *p = &home->pool;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->nidle) {
            bitt_backend *s = p->idle[--p->nidle];
            pthread_mutex_unlock(&p->lock);
            return s;
        }
        if (p->made < p->size) {
            bitt_backend *s = slot_new(home);
            if (s)
                p->slots[p->made++] = s;
            pthread_mutex_unlock(&p->lock);
            return s;
        }
        pthread_cond_wait(&p->cond, &p->lock);
    }
}

void bitt__pg_pool_give(bitt_backend *home, bitt_backend *s)
{
    bitt_pg_pool *p = &home->pool;
    pthread_mutex_lock(&p->lock);
    if (s->conn || !p->nidle) {
        p->idle[p->nidle++] = s;
    } else {
        memmove(p->idle + 1, p->idle, p->nidle * sizeof *p->idle);
        p->idle[0] = s;
        p->nidle++;
    }
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}
