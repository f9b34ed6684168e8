/*
 * core/redis/pool.c: the command connections of a store.
 *
 * The backend is `concurrent` (the engine calls it without the store's
 * mutex), so calls from several threads are in flight at once, each on a
 * connection of its own: one Redis connection answers in order, one
 * command at a time, and sharing one would serialize the callers again.
 * Every command takes a connection from the pool and gives it back; a
 * broken one is closed by conn.c (c = NULL) and its slot connects again
 * when next taken. Connections open lazily, so a store used by one thread
 * keeps one; there are at most `pool` (URL option, default
 * BITT_RD_DEFAULT_POOL) and a caller finding none free waits for one
 * (each command ends within the store's timeout, so the wait is bounded
 * too). Free slots are a stack: the connection used last, already open,
 * is taken first.
 *
 * A caller on a fiber (core/io_wait.h) must never wait for a slot: the
 * calls that would free one may be fibers of its own thread. It shares a
 * connection with the other fibers of its thread instead (pipe.c): one
 * they already share with room left, else a free slot, else an extra
 * connection outside the pool (the binding bounds how many such calls run
 * at once: bitt__rd_io_slots).
 *
 * The same mutex guards the script SHAs (scripts.c), which the server
 * shares across connections.
 */
#include <stdlib.h>
#include <string.h>

#include "redis_internal.h"

int bitt__rd_pool_init(bitt_backend *be)
{
    bitt_rd_pool *p = &be->pool;
    if (pthread_mutex_init(&p->lock, NULL))
        return bitt__fail(BITT_ENOMEM, "redis: cannot create the pool mutex");
    if (pthread_cond_init(&p->cond, NULL)) {
        pthread_mutex_destroy(&p->lock);
        return bitt__fail(BITT_ENOMEM, "redis: cannot create the pool condition");
    }
    p->ready = 1;
    p->conns = bitt__calloc(p->size, sizeof *p->conns);
    p->free = bitt__calloc(p->size, sizeof *p->free);
    if (!p->conns || !p->free)
        return bitt__fail(BITT_ENOMEM, "redis: out of memory for %zu connections", p->size);
    for (size_t i = 0; i < p->size; i++) {
        p->free[i] = &p->conns[p->size - 1 - i]; /* conns[0] on top */
        p->conns[i].spin.budget_us = p->spin_us;
    }
    p->nfree = p->size;
    return BITT_OK;
}

void bitt__rd_pool_free(bitt_backend *be)
{
    bitt_rd_pool *p = &be->pool;
    if (p->conns)
        for (size_t i = 0; i < p->size; i++) {
            if (p->conns[i].c)
                redisFree(p->conns[i].c);
            bitt__rd_pipe_reset(&p->conns[i]);
            bitt__rd_buf_free(&p->conns[i].out);
        }
    free(p->conns);
    free(p->free);
    p->conns = NULL;
    p->free = NULL;
    if (p->ready) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        p->ready = 0;
    }
}

/* A connection outside the pool, freed when given back; a piped one is
 * listed (under the lock) so that other fibers of its thread join it. */
static bitt_rd_conn *extra_conn(bitt_rd_pool *p, int piped)
{
    bitt_rd_conn *conn = bitt__calloc(1, sizeof *conn);
    if (!conn) {
        bitt__fail(BITT_ENOMEM, "redis: out of memory for a connection");
        return NULL;
    }
    conn->extra = 1;
    conn->piped = piped;
    conn->spin.budget_us = p->spin_us;
    conn->owner = pthread_self();
    conn->users = 1;
    if (piped) {
        pthread_mutex_lock(&p->lock);
        conn->next_extra = p->extras;
        p->extras = conn;
        pthread_mutex_unlock(&p->lock);
    }
    return conn;
}

static void free_extra(bitt_rd_conn *conn)
{
    if (conn->c)
        redisFree(conn->c);
    bitt__rd_pipe_reset(conn);
    bitt__rd_buf_free(&conn->out);
    free(conn);
}

bitt_rd_conn *bitt__rd_pool_take(bitt_backend *be)
{
    bitt_rd_pool *p = &be->pool;
    pthread_mutex_lock(&p->lock);
    /* A thread with fibers must not wait: they may hold every slot. */
    if (!p->nfree && bitt__io_hooked()) {
        pthread_mutex_unlock(&p->lock);
        return extra_conn(p, 0);
    }
    while (!p->nfree)
        pthread_cond_wait(&p->cond, &p->lock);
    bitt_rd_conn *conn = p->free[--p->nfree];
    pthread_mutex_unlock(&p->lock);
    return conn;
}

void bitt__rd_pool_give(bitt_backend *be, bitt_rd_conn *conn)
{
    bitt_rd_pool *p = &be->pool;
    if (conn->extra) {
        free_extra(conn);
        return;
    }
    pthread_mutex_lock(&p->lock);
    if (conn->c || !p->nfree) {
        p->free[p->nfree++] = conn;
    } else {
        /* A closed slot goes under the open ones: they are taken first. */
        memmove(p->free + 1, p->free, p->nfree * sizeof *p->free);
        p->free[0] = conn;
        p->nfree++;
    }
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* piped, owner and users change under the lock only; c, connecting and
 * broken only on the owner's thread, so they are read after it is ours. A
 * connection still connecting is joined too (its joiners wait for it:
 * pipe.c), or a burst of fibers on a fresh store would each open one. */
static int can_join(const bitt_rd_conn *conn, pthread_t self)
{
    return conn->piped && pthread_equal(conn->owner, self) && conn->users < BITT_RD_PIPE_DEPTH &&
           (conn->c || conn->connecting) && !conn->broken;
}

/* Under the lock: a connection this thread's fibers share with room left. */
static bitt_rd_conn *joinable(bitt_rd_pool *p, pthread_t self)
{
    for (size_t i = 0; i < p->size; i++)
        if (can_join(&p->conns[i], self))
            return &p->conns[i];
    for (bitt_rd_conn *conn = p->extras; conn; conn = conn->next_extra)
        if (can_join(conn, self))
            return conn;
    return NULL;
}

bitt_rd_conn *bitt__rd_pool_take_piped(bitt_backend *be)
{
    bitt_rd_pool *p = &be->pool;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&p->lock);
    bitt_rd_conn *conn = joinable(p, self);
    if (!conn && p->nfree) {
        conn = p->free[--p->nfree];
        conn->piped = 1;
        conn->owner = self;
        conn->out.len = conn->out_sent = 0; /* a thread's last command, sent */
    }
    if (conn)
        conn->users++;
    pthread_mutex_unlock(&p->lock);
    if (conn)
        return conn;
    return extra_conn(p, 1);
}

void bitt__rd_pool_give_piped(bitt_backend *be, bitt_rd_conn *conn)
{
    bitt_rd_pool *p = &be->pool;
    pthread_mutex_lock(&p->lock);
    int last = --conn->users == 0;
    if (last && conn->extra) {
        bitt_rd_conn **q = &p->extras;
        while (*q && *q != conn)
            q = &(*q)->next_extra;
        if (*q)
            *q = conn->next_extra;
    }
    if (last) {
        conn->piped = 0;
        if (conn->broken && conn->c) {
            redisFree(conn->c);
            conn->c = NULL;
        }
        if (conn->broken)
            bitt__rd_pipe_reset(conn);
    }
    pthread_mutex_unlock(&p->lock);
    if (last)
        bitt__rd_pool_give(be, conn); /* an extra one is freed there */
}

size_t bitt__rd_io_slots(bitt_backend *be)
{
    size_t n = be->pool.size * BITT_RD_PIPE_DEPTH;
    return n > 128 ? 128 : n;
}

void bitt__rd_sha_get(bitt_backend *be, bitt_rd_script_id id, char out[41])
{
    pthread_mutex_lock(&be->pool.lock);
    memcpy(out, be->sha[id], 41);
    pthread_mutex_unlock(&be->pool.lock);
}

void bitt__rd_sha_set(bitt_backend *be, bitt_rd_script_id id, const char *sha)
{
    pthread_mutex_lock(&be->pool.lock);
    if (sha)
        memcpy(be->sha[id], sha, 40);
    be->sha[id][sha ? 40 : 0] = '\0';
    pthread_mutex_unlock(&be->pool.lock);
}
