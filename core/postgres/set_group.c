/*
 * core/postgres/set_group.c: the lone sets of several threads in one
 * transaction.
 *
 * Threads setting keys on one store each committed a transaction of their
 * own on a connection of the pool: three statements and a commit record
 * apiece, which the server works through one by one. A lone set (a commit
 * of one SET op, as bitt_kv_set makes) that finds GROUP_LEADERS groups
 * running queues for the next one and sleeps; the thread that leads a group
 * takes every set queued meanwhile (at most GROUP_MAX) and runs them on one
 * connection as one pipeline in one implicit transaction
 * (bitt__pg_commit_sets): the locks of every key, the stamp order lock
 * (commit.c), then for each set in order its upsert, which takes its own
 * versionstamp. So each set keeps its own versionstamp, a key's versions
 * still increase in commit order, the group's stamps are in commit order
 * with every other commit's, and a reader sees all of a group or none of
 * it, which a set is allowed to: each took effect between its call and its
 * return. A failure of the group is each member's failure, with the same
 * message; nothing of it was written. A set that meets no running group
 * runs at once, alone, as before.
 *
 * When a leader is done it hands its turn to the first set queued since,
 * which leads the next group. Members wait on a condition of their own
 * under the pool's lock, like callers waiting for a slot (pool.c): safe on
 * a thread with fibers too.
 */
#include <pthread.h>

#include "postgres/pg_internal.h"

/* Groups run at once: one fills while the other is on the wire. */
#define GROUP_LEADERS 2
/* Sets in one transaction at most. */
#define GROUP_MAX 64

enum { W_QUEUED, W_DONE, W_LEAD };

struct bitt_pg_set_waiter {
    bitt_commit *c;
    pthread_cond_t cond;
    int state;
    int rc;                /* W_DONE: the group's status */
    bitt__error_state err; /* and its error */
    bitt_pg_set_waiter *next;
};

int bitt__pg_lone_set(const bitt_commit *c)
{
    return c->count == 1 && c->ops[0].type == BITT_OP_SET;
}

static bitt_pg_set_waiter *pop(bitt_pg_set_groups *g)
{
    bitt_pg_set_waiter *w = g->head;
    g->head = w->next;
    if (!g->head)
        g->tail = NULL;
    return w;
}

static int run_group(bitt_backend *home, bitt_commit **cs, size_t n)
{
    bitt_backend *s = bitt__pg_pool_take(home);
    if (!s)
        return bitt_error_last_code();
    int rc = n == 1 ? bitt__pg_commit(s, cs[0]) : bitt__pg_commit_sets(s, cs, n);
    bitt__pg_pool_give(home, s);
    return rc;
}

/* Queues self and sleeps until a leader ran it (W_DONE) or handed over
 * its turn (W_LEAD). Called and returns with the pool's lock held. */
static void wait_turn(bitt_backend *home, bitt_pg_set_waiter *self)
{
    bitt_pg_set_groups *g = &home->sets;
    self->next = NULL;
    if (g->tail)
        g->tail->next = self;
    else
        g->head = self;
    g->tail = self;
    while (self->state == W_QUEUED)
        pthread_cond_wait(&self->cond, &home->pool.lock);
}

int bitt__pg_set_grouped(bitt_backend *home, bitt_commit *c)
{
    bitt_pg_pool *p = &home->pool;
    bitt_pg_set_groups *g = &home->sets;
    bitt_pg_set_waiter self = {.c = c, .state = W_QUEUED};
    pthread_mutex_lock(&p->lock);
    if (g->leaders < GROUP_LEADERS) {
        g->leaders++;
    } else if (pthread_cond_init(&self.cond, NULL)) {
        pthread_mutex_unlock(&p->lock);
        return run_group(home, &c, 1); /* no condition to wait on: alone */
    } else {
        wait_turn(home, &self);
        pthread_cond_destroy(&self.cond); /* its signaller is done with it */
        if (self.state == W_DONE) {
            pthread_mutex_unlock(&p->lock);
            if (self.rc)
                bitt__error_restore(&self.err);
            return self.rc;
        }
        /* W_LEAD: the leader's count was handed over with the turn */
    }
    bitt_pg_set_waiter *members[GROUP_MAX];
    bitt_commit *cs[GROUP_MAX];
    size_t n = 0;
    members[n] = &self;
    cs[n++] = c;
    while (n < GROUP_MAX && g->head) {
        members[n] = pop(g);
        cs[n] = members[n]->c;
        n++;
    }
    pthread_mutex_unlock(&p->lock);

    int rc = run_group(home, cs, n);
    bitt__error_state err;
    if (rc)
        bitt__error_save(&err);

    pthread_mutex_lock(&p->lock);
    for (size_t i = 1; i < n; i++) {
        members[i]->rc = rc;
        if (rc)
            members[i]->err = err;
        members[i]->state = W_DONE;
        pthread_cond_signal(&members[i]->cond);
    }
    if (g->head) {
        bitt_pg_set_waiter *next = pop(g);
        next->state = W_LEAD;
        pthread_cond_signal(&next->cond);
    } else {
        g->leaders--;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}
