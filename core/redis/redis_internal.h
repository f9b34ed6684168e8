/*
 * core/redis/redis_internal.h: what the files of the Redis backend share.
 *
 *   url.c       the store URL: redis://[user:pass@]host:port/db?... and
 *               unix:/path.sock?db=N&..., and the backend's options
 *   pool.c      the connections a store holds
 *   conn.c      connecting (AUTH, SELECT), one command with a deadline,
 *               reconnecting after a failure, error messages
 *   pipe.c      calls on fibers sharing a connection (pipelining)
 *   reply.c     the bounded reply reader, argument lists, reading replies
 *   resp.c      writing a command in RESP into a buffer that is kept
 *   scripts.c   the script registry: EVALSHA, SCRIPT LOAD after NOSCRIPT
 *   lua_lib.c   the Lua every script starts with (exact int64 helpers),
 *               and a small bignum for budgets and schedules
 *   lua_queue.c the queue's Lua steps, shared by its scripts and commit
 *   backend.c   open (eviction check), close, migrate, the vtable
 *   kv.c, kv_lua.c          get, get-many, list, purge
 *   commit.c, commit_lua.c  atomic commits (every op type)
 *   queue.c, queue_lua.c    claim (over topics), ack, nack, extend, snooze,
 *                           get, stats, dead letters
 *   queue_retention.c       queue purge (retention)
 *   lease.c     leases
 *   outbox.c, outbox_lua.c  per-stream event logs
 *   pubsub.c    the publish/subscribe log
 *   wait.c      wait_remote: a SUBSCRIBE connection of its own
 *   budget.c    token buckets
 *   schedule.c  interval and cron schedules (the engine claims)
 *
 * Key layout (P = "{prefix}:", one hash tag, so every key of a store is in
 * one Redis Cluster slot and every script touches one slot):
 *   P meta            hash: schema, vs (versionstamps), qid (message ids),
 *                     pid (published ids)
 *   P k:<key>         hash: v value, t kind, s version, e expires_at (0 never)
 *   P kidx            sorted set, all scores 0: every KV key (ZRANGEBYLEX)
 *   P kexp            sorted set: KV keys with a TTL, scored by expires_at
 *   P m:<id>          hash: a queue message (y: its priority, absent for 0)
 *   P qr:<topic>      lex set of pad(due_at) pad(id): pending and processing
 *                     of priority 0 (and every message stored before
 *                     priorities); P qr<y>:<topic> those of priority y != 0,
 *                     each level listed in P qy:<topic> (score y) while it
 *                     is not empty
 *   P qp:<topic>      the processing ones; P ql:<topic>: those on their last
 *                     attempt; P qx:<topic>: dead, by pad(id)
 *   P qk:<topic>      hash: dedup key -> id of the live holder
 *   P qc:<topic>      done messages (queue_done_retention; s 'c', da
 *                     done_at, r/rk the ack's result), by pad(done_at) pad(id)
 *   P qa:<topic>      with queue_dead_retention: the dead letters by
 *                     pad(failed_at) pad(id), a subset of qx (indexed when
 *                     smaller); P qt: lex set of topics with qc or qa
 *   P l:<name>        hash: o owner, e epoch, x expires_at
 *   P os              hash: stream -> last sequence number
 *   P oe:<pad(seq)>:<stream>  hash: an outbox event
 *   P op:<stream>, P oq:<stream>  lex sets of pad(seq): pending, parked
 *   P pm:<id>         hash: a published message; P pi:<channel>: lex set of
 *                     pad(id); P pt: lex set of pad(created_at) pad(id)
 *   P b:<name>        hash: a token bucket (l level, u updated_at, p period)
 *   P s:<key>         hash: a schedule (i interval, c cron, p payload, k kind,
 *                     n next_run_at, t topic, x max_attempts, y priority; c t
 *                     x y absent: none / the default); P sk: lex set of
 *                     keys; P sd: lex set of pad(next_run_at) key
 *   channel P wake    PUBLISHed by enqueues, nacks, retries and publishes
 * pad(n) is n in decimal, zero-padded to 19 digits, so byte order is
 * numeric order. Every integer crosses Lua as a decimal string.
 */
#ifndef BITT_REDIS_INTERNAL_H
#define BITT_REDIS_INTERNAL_H

#include <hiredis/hiredis.h>

#include "internal.h"
#include "io_wait.h"

#define BITT_RD_SCHEMA_VERSION 1
#define BITT_RD_PREFIX_MAX 64
#define BITT_RD_DEFAULT_PREFIX "bitt"
#define BITT_RD_DEFAULT_TIMEOUT_MS 5000
#define BITT_RD_DEFAULT_POOL 16
#define BITT_RD_POOL_MAX 256

/* Every script, by id (sources in the *_lua.c files and beside the code). */
typedef enum bitt_rd_script_id {
    RS_GET_MANY,
    RS_LIST,
    RS_PURGE,
    RS_COMMIT,
    RS_Q_CLAIM,
    RS_Q_ACK,
    RS_Q_NACK,
    RS_Q_EXTEND,
    RS_Q_STATS,
    RS_Q_DEAD_LIST,
    RS_Q_DEAD_RETRY,
    RS_Q_DEAD_DELETE,
    RS_L_ACQUIRE,
    RS_L_RENEW,
    RS_L_RELEASE,
    RS_O_PENDING,
    RS_O_ACK,
    RS_O_FAIL,
    RS_O_PARK,
    RS_O_PARKED,
    RS_O_MOVE,
    RS_O_COUNTS,
    RS_P_PUBLISH,
    RS_P_FETCH,
    RS_B_TAKE,
    RS_S_SET,
    RS_S_DUE,
    RS_S_LIST,
    RS_S_DELETE,
    RS_Q_ACK_MANY,
    RS_KV_SET,
    RS_KV_DELETE,
    RS_KV_SET_MANY,
    RS_Q_SNOOZE,
    RS_Q_GET,
    RS_COMMIT_QUEUE,
    RS_Q_PURGE,
    RS_COUNT
} bitt_rd_script_id;

/* Which Lua libraries a script needs besides the base one. */
/* RS_ALLOW_OOM: the script only frees memory (a delete), so it runs while
 * the server is over maxmemory (Redis 7+): under noeviction that is how
 * room is made again. */
enum { RS_LIB_QCORE = 1, RS_LIB_QUEUE = 2, RS_LIB_BIG = 4, RS_READONLY = 8, RS_ALLOW_OOM = 16 };

typedef struct bitt_rd_script {
    const char *name; /* for messages: "commit", "queue claim" */
    const char *body;
    int flags; /* RS_LIB_* | RS_READONLY | RS_ALLOW_OOM */
} bitt_rd_script;

/* Limits on one reply, enforced while it is read: hiredis 0.14 has no
 * maxelements, so the reader builds replies through our own functions,
 * which count. */
typedef struct bitt_rd_bound {
    size_t max_elements; /* array slots in the whole reply */
    size_t max_bytes;    /* string bytes in the whole reply, and unparsed input */
    size_t elements;
    size_t bytes;
    int exceeded;
    int out_of_memory; /* an allocation of the reader failed */
} bitt_rd_bound;

/* The SUBSCRIBE connection of wait_remote (wait.c). */
typedef struct bitt_rd_waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* generation moved, or the reader left */
    redisContext *c;     /* subscribed, or NULL */
    bitt_rd_bound bound;
    int reading;         /* a waiter is reading c */
    uint64_t generation; /* bumped for every batch of wake-ups read */
    int64_t retry_at;    /* after a failure, no new connection before this */
    int ready;           /* lock and cond initialised */
} bitt_rd_waiter;

/* A call waiting for its reply on a shared connection (pipe.c); it lives
 * on the caller's stack while it is queued. */
typedef struct bitt_rd_req {
    struct bitt_rd_req *next;
    void *fiber; /* bitt__io_self() of the caller */
    size_t items;
    uint64_t seq;
    redisReply *reply;
    int done; /* 1: reply read, -1: the connection failed */
} bitt_rd_req;

/* Commands in RESP (resp.c): len bytes at p, cap allocated. */
typedef struct bitt_rd_buf {
    char *p;
    size_t len, cap;
} bitt_rd_buf;

/* A command connection of the pool (pool.c). A call on a thread has it to
 * itself. Calls on fibers of one thread (core/io_wait.h) share it: each
 * appends its command and waits for its reply in order (pipe.c). */
typedef struct bitt_rd_conn {
    redisContext *c; /* NULL when closed: the next command connects */
    bitt_rd_bound bound;
    /* A call on a thread: the command being sent, kept across calls and
     * reconnects. Shared by fibers: the commands appended, sent up to
     * out_sent. */
    bitt_rd_buf out;
    size_t out_sent;
    /* shared by fibers (pipe.c); all of this is touched only by the
     * fibers of `owner`, which never run at once, and by the pool under
     * its lock */
    int piped; /* held by fibers of owner */
    int extra; /* not a pool slot: freed when its last user leaves */
    pthread_t owner;
    size_t users;             /* calls holding it */
    bitt_rd_req *head, *tail; /* waiting for replies, in sending order */
    uint64_t seq, bound_seq;  /* the request the reader's bound is set for */
    int flushing;             /* a fiber is sending out */
    const char *why;          /* set when broken: every waiter fails with it */
    int broken;               /* closed when its last user leaves */
    int timed_out;            /* broken by a call's deadline: the others fail too, unsent */
    int connecting;           /* a fiber is connecting it: others joined wait (pipe.c) */
    bitt_rd_req *connect_waiters;
    struct bitt_rd_conn *next_extra; /* the pool's list of piped extra connections */
    bitt__io_spin spin;              /* before a wait for a reply blocks (io_spin.c) */
} bitt_rd_conn;

/* Calls on fibers one connection carries at once before another opens.
 * Not one connection for all: while the client reads one batch of replies
 * and sends the next, the server works on another connection's batch
 * (Node bench, 64 sets in flight vs ioredis: 0.77 with 64 per connection,
 * 1.08-1.11 with 16). */
#define BITT_RD_PIPE_DEPTH 16

typedef struct bitt_rd_pool {
    pthread_mutex_t lock; /* the free stack, and the backend's sha[] */
    pthread_cond_t cond;  /* a connection was given back */
    bitt_rd_conn *conns;  /* size slots */
    bitt_rd_conn **free;  /* a stack of the slots no call holds */
    bitt_rd_conn *extras; /* piped connections outside the slots, joinable too */
    size_t nfree, size;
    int spin_us; /* URL spin_us: each connection's spin budget */
    int ready;   /* lock and cond initialised */
} bitt_rd_pool;

struct bitt_backend {
    /* where (url.c) */
    int is_unix;
    char *host; /* TCP host, or NULL */
    int port;
    char *path; /* unix socket path, or NULL */
    int db;
    char *user;     /* NULL: none */
    char *password; /* NULL: none; never printed */
    char prefix[BITT_RD_PREFIX_MAX + 1];
    char anchor[BITT_RD_PREFIX_MAX + 3]; /* "{prefix}", KEYS[1] of every script */
    char where[160];                     /* "127.0.0.1:6379" or the socket path */
    int64_t timeout_ms;
    int allow_eviction;
    bitt_limits limits;

    /* the command connections (pool.c, conn.c). Calls run on several
     * threads at once: server_major and fn_lib are set at open and only
     * read after; sha[] is guarded by pool.lock; fn_off only goes 0 -> 1. */
    bitt_rd_pool pool;
    int server_major;       /* Redis major version, 0 = unknown */
    char sha[RS_COUNT][41]; /* loaded scripts ("" = not loaded yet) */
    char fn_lib[24];        /* the function library's name, "" = not named yet */
    _Atomic int fn_off;     /* 1: the server refuses Functions, EVALSHA only */
    /* 1: a purge of every topic found the topics with dead letters (once
     * per open, with dead retention: queue_retention.c) */
    _Atomic int dead_indexed;
    /* FCALL's function name of each script, fn_lib "_" id (made with fn_lib) */
    char fn_name[RS_COUNT][24 + 12];
    size_t fn_name_len[RS_COUNT];

    bitt_rd_waiter waiter;
};

/* ---- url.c ------------------------------------------------------------------ */

/* Fills be's location and options from url. */
int bitt__rd_parse_url(bitt_url *url, bitt_backend *be);
void bitt__rd_free_location(bitt_backend *be);

/* ---- reply.c ---------------------------------------------------------------- */

/* The reader functions that enforce a bound (privdata = the bitt_rd_bound). */
void bitt__rd_reader_setup(redisContext *c, bitt_rd_bound *bound);
/* Resets bound for a reply of up to `items` records (entries, messages). */
void bitt__rd_bound_reset(const bitt_backend *be, bitt_rd_bound *bound, size_t items);

/* An argument list. Adding never fails: an allocation failure is remembered
 * and reported when the list is sent. The first BITT_RD_ARGS_INLINE
 * arguments and numbers live in the list itself, so most commands allocate
 * nothing for it (a list is a local: it must not be copied or moved). */
#define BITT_RD_ARGS_INLINE 16
typedef struct bitt_rd_args {
    const char **v;
    size_t *len;
    size_t *num; /* per argument: offset in nums + 1, or 0 */
    size_t count, cap;
    char *nums; /* decimal numbers, resolved into v when sent */
    size_t nums_len, nums_cap;
    int oom;
    int retry; /* the command only reads: sent again once after a lost connection */
    int lost;  /* set by bitt__rd_call: it failed on the connection, not by a reply */
    /* the inline storage (last: init clears only what is above) */
    const char *v_in[BITT_RD_ARGS_INLINE];
    size_t len_in[BITT_RD_ARGS_INLINE];
    size_t num_in[BITT_RD_ARGS_INLINE];
    char nums_in[BITT_RD_ARGS_INLINE * 16];
} bitt_rd_args;

void bitt__rd_args_init(bitt_rd_args *a);
void bitt__rd_args_free(bitt_rd_args *a);
void bitt__rd_arg(bitt_rd_args *a, const void *p, size_t n);
void bitt__rd_arg_str(bitt_rd_args *a, const char *s);
void bitt__rd_arg_i64(bitt_rd_args *a, int64_t v);
void bitt__rd_arg_u64(bitt_rd_args *a, uint64_t v);
/* n bytes at p, copied (the list keeps them, as it keeps numbers) */
void bitt__rd_arg_copy(bitt_rd_args *a, const void *p, size_t n);
/* Points v at the numbers; BITT_ENOMEM when an addition failed. */
int bitt__rd_args_finish(bitt_rd_args *a);

/* Records an error reply of the server (n bytes at str) as the failure of
 * `what`, with a hint for OOM and WRONGTYPE: BITT_EBACKEND. */
int bitt__rd_server_error(bitt_backend *be, const char *what, const char *str, size_t n);

/* ---- set_group.c: lone sets on fibers of one thread in one script -------------- */

/* bitt__rd_set_grouped's answer when the set should run on its own. */
#define BITT_RD_UNGROUPED 1000
/* Sets one script call carries at most. */
#define BITT_RD_SET_GROUP_MAX 64
/* A commit of one SET on a fiber: joins the thread's open group for this
 * store, or opens one when other fibers are about to run; the status of
 * this set (c->version set), or BITT_RD_UNGROUPED. */
int bitt__rd_set_grouped(bitt_backend *be, bitt_commit *c);

/* Reading replies. Each returns BITT_OK or BITT_EBACKEND naming `what`. */
int bitt__rd_elem_count(const redisReply *r, size_t at, size_t n, const char *what);
/* Element i as bytes (NULL, 0 for nil). */
const char *bitt__rd_str(const redisReply *r, size_t i, size_t *len);
int bitt__rd_i64(const redisReply *r, size_t i, int64_t *out, const char *what);
int bitt__rd_u64(const redisReply *r, size_t i, uint64_t *out, const char *what);
/* Parses a canonical int64 decimal of n bytes; BITT_EBACKEND otherwise. */
int bitt__rd_parse_i64(const char *s, size_t n, int64_t *out, const char *what);

/* Script replies are arrays {status, ...}: BITT_OK, a positive status, or
 * the failure {negative code, message...} recorded with bitt__fail. */
int bitt__rd_status(const redisReply *r, const char *what);

/* A message made of the `width` fields at r->element[at...] (id, topic,
 * payload, kind, token, attempts, max_attempts, error, created_at, due_at,
 * failed_at, park_reason; a queue message's 14 add state and priority,
 * queue get's 17 done_at, result and result_kind),
 * pushed to out. */
#define BITT_RD_MSG_FIELDS 12
#define BITT_RD_QMSG_FIELDS 14
/* queue get's: the 14 and done_at, result (nil: none), result_kind */
#define BITT_RD_QGET_FIELDS 17
int bitt__rd_push_message(const redisReply *r, size_t at, size_t width, bitt_messages *out,
                          const char *what);
/* Pushes every message of r from element `at` on, `width` fields each; on
 * failure out is as it was. */
int bitt__rd_push_messages(const redisReply *r, size_t at, size_t width, bitt_messages *out,
                           const char *what);

/* ---- resp.c ----------------------------------------------------------------- */

/* Writes the command of argc arguments (argv[i] of lens[i] bytes; lens NULL:
 * C strings) into buf, replacing what it held; buf grows as needed and is
 * kept for the next command. BITT_OK, or BITT_ENOMEM / BITT_ETOOLARGE
 * recorded with bitt__fail naming `what` (buf then holds no command). */
int bitt__rd_resp_format(bitt_rd_buf *buf, const char *what, size_t argc, const char *const *argv,
                         const size_t *lens);
/* The same, after what buf holds (on failure buf keeps just that). */
int bitt__rd_resp_append(bitt_rd_buf *buf, const char *what, size_t argc, const char *const *argv,
                         const size_t *lens);
void bitt__rd_buf_free(bitt_rd_buf *buf);

/* ---- pool.c ----------------------------------------------------------------- */

/* Sets up be->pool of be->pool.size slots (none connected). */
int bitt__rd_pool_init(bitt_backend *be);
/* Closes every connection; the pool must be idle. */
void bitt__rd_pool_free(bitt_backend *be);
/* A slot no other call holds (waits for one when all are taken, except on
 * a thread with fibers: an extra connection then); NULL when out of memory. */
bitt_rd_conn *bitt__rd_pool_take(bitt_backend *be);
void bitt__rd_pool_give(bitt_backend *be, bitt_rd_conn *conn);
/* For a caller on a fiber (which must never block its thread): a
 * connection this thread's fibers already share, with room, else a free
 * slot, else an extra connection; NULL when out of memory (reported). */
bitt_rd_conn *bitt__rd_pool_take_piped(bitt_backend *be);
/* Leaves it: the last user closes it when broken, frees it when extra. */
void bitt__rd_pool_give_piped(bitt_backend *be, bitt_rd_conn *conn);
/* The backend's io_slots (bitt_backend_ops). */
size_t bitt__rd_io_slots(bitt_backend *be);

/* ---- pipe.c ----------------------------------------------------------------- */

/* Appends a's command to a shared connection, sends it and waits for its
 * reply (the fiber suspends meanwhile): 0 with *out, -2 timeout, -1 other
 * failure (*why set), or BITT_RD_PIPE_UNSENT. Any failure breaks the connection for every call on
 * it: each fails, and its last user closes it. */
int bitt__rd_pipe_roundtrip(bitt_backend *be, bitt_rd_conn *conn, void *fiber, const char *what,
                            const bitt_rd_args *a, size_t items, int64_t deadline, redisReply **out,
                            const char **why);
/* bitt__rd_pipe_roundtrip's status when the command could not be written
 * (out of memory, too large): nothing was sent, the failure is recorded. */
#define BITT_RD_PIPE_UNSENT (-3)
/* Fails every call waiting on conn with why. */
void bitt__rd_pipe_break(bitt_rd_conn *conn, const char *why);
/* A fiber that joined a connection another fiber is connecting waits for
 * that to end: 0 when it ended (conn->c says how), -2 past the deadline,
 * -1 when its wait was cancelled. */
int bitt__rd_pipe_await_connect(bitt_rd_conn *conn, void *fiber, int64_t deadline);
/* The connecting fiber is done (connected or not): wakes those waiting. */
void bitt__rd_pipe_connect_done(bitt_rd_conn *conn);
/* Drops what a closed connection still held (unsent commands). */
void bitt__rd_pipe_reset(bitt_rd_conn *conn);
/* The SHA of script id ("" = not loaded), and setting it (NULL: forget). */
void bitt__rd_sha_get(bitt_backend *be, bitt_rd_script_id id, char out[41]);
void bitt__rd_sha_set(bitt_backend *be, bitt_rd_script_id id, const char *sha);

/* ---- conn.c ----------------------------------------------------------------- */

/* Opens a connection as configured (AUTH, SELECT), with the reader bounded
 * by `bound`, before deadline (bitt__monotonic_ms). */
int bitt__rd_connect(bitt_backend *be, bitt_rd_bound *bound, int64_t deadline, redisContext **out);
/* Sends a on a connection of the pool (connecting first when needed) and
 * reads one reply of up to `items` records within timeout_ms. An error
 * reply gives BITT_EBACKEND with the server's message (NOSCRIPT gives
 * BITT_RD_NOSCRIPT instead, for the script registry). A lost connection
 * or a timeout closes it and gives BITT_EBACKEND; the next call reconnects.
 * With a->retry (a read), a connection found lost is replaced once, within
 * the same timeout. */
#define BITT_RD_NOSCRIPT 100
/* FCALL: the function is not on the server (functions.c loads it). */
#define BITT_RD_NOFUNCTION 101
/* FCALL: the server refuses the command itself (scripts.c uses EVALSHA). */
#define BITT_RD_FN_REFUSED 102
int bitt__rd_call(bitt_backend *be, const char *what, bitt_rd_args *a, size_t items,
                  redisReply **out);
/* A command of string arguments (NULL-terminated), for setup calls. */
int bitt__rd_simple(bitt_backend *be, const char *what, redisReply **out, ...);
/* Sends a formatted command on c and reads one reply before deadline
 * (bitt__monotonic_ms): 0, -2 on a timeout, -1 on another failure (*why
 * gets a static description and c must be freed). spin (may be NULL): the
 * connection's spin before the wait blocks, for a reply that comes soon. */
int bitt__rd_roundtrip(redisContext *c, bitt_rd_bound *bound, const char *cmd, size_t len,
                       int64_t deadline, bitt__io_spin *spin, redisReply **out, const char **why);
/* Waits until c has a reply or deadline: 1 with *out, 0 on timeout, -1 on
 * failure (*why set). spin as for bitt__rd_roundtrip. */
int bitt__rd_read(redisContext *c, bitt_rd_bound *bound, int64_t deadline, bitt__io_spin *spin,
                  redisReply **out, const char **why);

/* ---- scripts.c -------------------------------------------------------------- */

extern const bitt_rd_script bitt__rd_scripts[RS_COUNT];
extern const char bitt__rd_lua_base[];
extern const char bitt__rd_lua_qcore[];
extern const char bitt__rd_lua_queue[];
extern const char bitt__rd_lua_big[];

/* Starts an argument list for a script: EVALSHA, sha, 1, anchor, then now
 * (ARGV[1] of every script). */
void bitt__rd_script_args(bitt_backend *be, bitt_rd_args *a, const bitt_time *t);
/* The same for a queue script: with a queue retention ARGV[1] is
 * "now/done_ms/dead_ms", which bind (lua_lib.c) splits into NOW, RD, RX;
 * without one it is now alone, as for every other script. */
void bitt__rd_queue_args(bitt_backend *be, bitt_rd_args *a, const bitt_time *t);
/* Runs a script, loading it when the server does not know it. */
int bitt__rd_eval(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a, size_t items,
                  redisReply **out);
/* Names the function library (at open, before any call). */
int bitt__rd_fn_name(bitt_backend *be);
/* Runs a script as FCALL of its function in the library (functions.c),
 * loading the library when the server lacks it; BITT_RD_FN_REFUSED when
 * the server refuses Functions (be->fn_off set, a left for EVALSHA). */
int bitt__rd_fcall(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a, size_t items,
                   redisReply **out);
/* Runs a script and checks its status: BITT_OK (or a positive status)
 * with *out, else the script's failure (reply freed). */
int bitt__rd_run(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a, size_t items,
                 redisReply **out);

/* Script bodies (the *_lua.c files, and beside the code). */
extern const char bitt__rd_lua_get_many[], bitt__rd_lua_list[], bitt__rd_lua_purge[];
extern const char bitt__rd_lua_commit[], bitt__rd_lua_kv_set[], bitt__rd_lua_kv_delete[],
    bitt__rd_lua_kv_set_many[];
extern const char bitt__rd_lua_q_ack_many[], bitt__rd_lua_q_snooze[], bitt__rd_lua_q_get[],
    bitt__rd_lua_q_purge[];
extern const char bitt__rd_lua_q_claim[], bitt__rd_lua_q_ack[], bitt__rd_lua_q_nack[],
    bitt__rd_lua_q_extend[], bitt__rd_lua_q_stats[], bitt__rd_lua_q_dead_list[],
    bitt__rd_lua_q_dead_retry[], bitt__rd_lua_q_dead_delete[];
extern const char bitt__rd_lua_l_acquire[], bitt__rd_lua_l_renew[], bitt__rd_lua_l_release[];
extern const char bitt__rd_lua_o_pending[], bitt__rd_lua_o_ack[], bitt__rd_lua_o_fail[],
    bitt__rd_lua_o_park[], bitt__rd_lua_o_parked[], bitt__rd_lua_o_move[], bitt__rd_lua_o_counts[];
extern const char bitt__rd_lua_p_publish[], bitt__rd_lua_p_fetch[];
extern const char bitt__rd_lua_b_take[];
extern const char bitt__rd_lua_s_set[], bitt__rd_lua_s_due[], bitt__rd_lua_s_list[],
    bitt__rd_lua_s_delete[];

/* ---- the vtable's functions ------------------------------------------------- */

int bitt__rd_kv_get(bitt_backend *be, const bitt_time *t, const uint8_t *key, size_t key_len,
                    bitt_entry **out);
int bitt__rd_kv_get_many(bitt_backend *be, const bitt_time *t, const uint8_t *const *keys,
                         const size_t *key_lens, size_t count, bitt_entries *out);
int bitt__rd_kv_list(bitt_backend *be, const bitt_time *t, const bitt_range *range,
                     bitt_entries *out);
int bitt__rd_kv_purge(bitt_backend *be, const bitt_time *t, uint64_t *removed);
/* An entry from 4 fields (v, t, s, e) at r->element[at...]; *out NULL when
 * absent or expired at now. */
int bitt__rd_entry(const redisReply *r, size_t at, const uint8_t *key, size_t key_len, int64_t now,
                   bitt_entry **out, const char *what);
int bitt__rd_commit(bitt_backend *be, bitt_commit *c);

int bitt__rd_queue_claim(bitt_backend *be, const bitt_time *t, const char *topic, size_t limit,
                         int64_t lease_ms, bitt_messages *out);
int bitt__rd_queue_claim_topics(bitt_backend *be, const bitt_time *t, const char *const *topics,
                                size_t count, size_t limit, int64_t lease_ms, bitt_messages *out);
int bitt__rd_queue_get(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       bitt_message **out);
/* Appends a backoff as the nack script and commit read it (lua_queue.c):
 * 'e' base cap, or 'l' and the delays. */
void bitt__rd_arg_backoff(bitt_rd_args *a, const bitt_backoff *b);
int bitt__rd_queue_ack_many(bitt_backend *be, const bitt_time *t, const char *topic,
                            const uint64_t *ids, const char *const *tokens, size_t count,
                            int *statuses);
int bitt__rd_queue_ack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                       const char *token);
int bitt__rd_queue_nack(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                        const char *token, const char *error, int64_t delay_ms,
                        const bitt_backoff *backoff);
int bitt__rd_queue_extend(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t lease_ms);
int bitt__rd_queue_snooze(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                          const char *token, int64_t delay_ms);
int bitt__rd_queue_dead_list(bitt_backend *be, const bitt_time *t, const char *topic,
                             uint64_t after_id, size_t limit, bitt_messages *out);
int bitt__rd_queue_dead_retry(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                              uint64_t *count);
int bitt__rd_queue_dead_delete(bitt_backend *be, const bitt_time *t, const char *topic, uint64_t id,
                               uint64_t *count);
int bitt__rd_queue_stats(bitt_backend *be, const bitt_time *t, const char *topic,
                         bitt_queue_stats *out);
int bitt__rd_queue_purge(bitt_backend *be, const bitt_time *t, const char *topic,
                         uint64_t *removed);

int bitt__rd_lease_acquire(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, int64_t ttl_ms, uint64_t *epoch, int64_t *expires_at);
int bitt__rd_lease_renew(bitt_backend *be, const bitt_time *t, const char *name, const char *owner,
                         uint64_t epoch, int64_t ttl_ms, int64_t *expires_at);
int bitt__rd_lease_release(bitt_backend *be, const bitt_time *t, const char *name,
                           const char *owner, uint64_t epoch);
int bitt__rd_lease_get(bitt_backend *be, const bitt_time *t, const char *name, bitt_buf *owner,
                       uint64_t *epoch, int64_t *expires_at);

int bitt__rd_outbox_pending(bitt_backend *be, const bitt_time *t, const char *stream, size_t limit,
                            bitt_messages *out);
int bitt__rd_outbox_ack(bitt_backend *be, const bitt_time *t, const char *stream,
                        const uint64_t *seqs, size_t count, uint64_t *acked);
int bitt__rd_outbox_fail(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         const char *error, int64_t next_attempt_at);
int bitt__rd_outbox_park(bitt_backend *be, const bitt_time *t, const char *stream, uint64_t seq,
                         int reason, const char *error);
int bitt__rd_outbox_parked(bitt_backend *be, const bitt_time *t, const char *stream, int reason,
                           size_t limit, bitt_messages *out);
int bitt__rd_outbox_retry(bitt_backend *be, const bitt_time *t, const char *stream,
                          const uint64_t *seqs, size_t count, uint64_t *moved);
int bitt__rd_outbox_discard(bitt_backend *be, const bitt_time *t, const char *stream,
                            const uint64_t *seqs, size_t count, uint64_t *deleted);
int bitt__rd_outbox_counts(bitt_backend *be, const bitt_time *t, const char *stream,
                           uint64_t *pending, uint64_t *parked);

int bitt__rd_pubsub_publish(bitt_backend *be, const bitt_time *t, const char *channel,
                            const uint8_t *data, size_t len, int64_t retention_ms);
int bitt__rd_pubsub_head(bitt_backend *be, const bitt_time *t, uint64_t *last_id);
int bitt__rd_pubsub_fetch(bitt_backend *be, const bitt_time *t, const char *channel,
                          uint64_t after_id, size_t limit, bitt_messages *out);

int bitt__rd_budget_take(bitt_backend *be, const bitt_time *t, const char *name,
                         const bitt_budget_params *p, int64_t n, int64_t *wait_ms);

int bitt__rd_schedule_set(bitt_backend *be, const bitt_time *t, const bitt_schedule_def *def,
                          int64_t first_run_at);
int bitt__rd_schedule_due(bitt_backend *be, const bitt_time *t, const char *prefix,
                          bitt_schedule **out);
int bitt__rd_schedule_get(bitt_backend *be, const bitt_time *t, const char *key,
                          bitt_schedule **out);
int bitt__rd_schedule_list(bitt_backend *be, const bitt_time *t, bitt_schedule_array *out);
int bitt__rd_schedule_delete(bitt_backend *be, const bitt_time *t, const char *key);

/* wait.c */
int bitt__rd_wait_remote(bitt_backend *be, int64_t max_ms);
void bitt__rd_waiter_init(bitt_rd_waiter *w);
void bitt__rd_waiter_free(bitt_rd_waiter *w);

#endif /* BITT_REDIS_INTERNAL_H */
