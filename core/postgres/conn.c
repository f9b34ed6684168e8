/*
 * core/postgres/conn.c: the connection: connect and reconnect, prepared
 * statements, pipelines, error mapping and transactions.
 *
 * Every call runs its statements as one libpq pipeline: prepared statements
 * this connection has not seen yet are prepared in the same pipeline, so a
 * call costs one round trip. Without an explicit BEGIN the statements of a
 * pipeline form one implicit transaction, committed at its Sync.
 *
 * Every wait for the server is bounded: the session's statement_timeout
 * ends a statement on the server (BITT_EBUSY), and the client gives up
 * statement_timeout + 5 s after the last sign of progress, dropping the
 * connection. A lost connection gives BITT_EBACKEND; the next call
 * connects again and re-prepares what it uses.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/pg_internal.h"

#define CLIENT_GRACE_MS 5000
#define MSG_MAX 400

/* ---- messages and errors --------------------------------------------------- */

/* libpq's message, redacted, then on one line and trimmed. Redaction comes
 * first: cutting or flattening the text before would hide a password (one
 * cut at the end, or one holding a newline) from it. */
static void clean_message(const bitt_backend *be, const char *in, char *out, size_t cap)
{
    if (!cap)
        return;
    bitt__pg_redact(be, in, out, cap < MSG_MAX ? cap : MSG_MAX);
    size_t j = 0;
    for (char *s = out; *s; s++, j++)
        if (*s == '\n' || *s == '\r' || *s == '\t')
            *s = ' ';
    while (j && out[j - 1] == ' ')
        j--;
    out[j] = '\0';
}

/* Whether a SQLSTATE means the session is gone or going. */
static int session_lost(const char *state)
{
    return !strncmp(state, "08", 2) || !strcmp(state, "57P01") || !strcmp(state, "57P02") ||
           !strcmp(state, "57P03");
}

static int map_sqlstate(const char *state)
{
    if (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03") ||
        !strcmp(state, "57014"))
        return BITT_EBUSY; /* serialization, deadlock, lock or statement timeout */
    if (!strcmp(state, "3F000") || !strcmp(state, "42P01"))
        return BITT_ESCHEMA; /* the schema or a table is gone */
    return BITT_EBACKEND;
}

/* Records the status and message of a failed result; *lost tells whether
 * the session is gone (the caller drops the connection). */
static int result_error(bitt_backend *be, const PGresult *res, const char *what, int *lost, int own)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!primary || !*primary)
        primary = res ? PQresultErrorMessage(res) : "";
    if ((!primary || !*primary) && own && be->conn)
        primary = PQerrorMessage(be->conn);
    if (own)
        snprintf(be->sqlstate, sizeof be->sqlstate, "%s", state ? state : "");
    char msg[MSG_MAX];
    clean_message(be, primary, msg, sizeof msg);
    int code = state ? map_sqlstate(state) : BITT_EBACKEND;
    *lost = !state || session_lost(state);
    if (code == BITT_ESCHEMA && own)
        be->schema_ok = 0;
    return bitt__fail(code, "postgres: %s failed: %s (SQLSTATE %s)", what, msg,
                      state ? state : "none");
}

/* A failure of the connection itself: the connection is dropped. */
static int fail_conn(bitt_backend *be, PGconn *conn, int own, const char *what)
{
    char msg[MSG_MAX];
    clean_message(be, conn ? PQerrorMessage(conn) : "no connection", msg, sizeof msg);
    if (own)
        bitt__pg_drop(be);
    return bitt__fail(BITT_EBACKEND, "postgres: %s failed: connection lost: %s", what, msg);
}

static int fail_timeout(bitt_backend *be, int own, const char *what)
{
    if (own)
        bitt__pg_drop(be);
    return bitt__fail(BITT_EBACKEND,
                      "postgres: %s failed: no answer from the server within %lld ms; the "
                      "connection was dropped",
                      what, (long long)(be->statement_timeout + CLIENT_GRACE_MS));
}

/* ---- waiting for the socket ------------------------------------------------- */

enum { IO_OK = 0, IO_TIMEOUT = 1, IO_ERROR = 2 };

/* Blocks in poll() until p is ready or the deadline (monotonic ms) passes. */
static int wait_blocking(struct pollfd *p, int64_t deadline, int *readable)
{
    for (;;) {
        int64_t left = deadline - bitt__monotonic_ms();
        if (left <= 0)
            return IO_TIMEOUT;
        int n = poll(p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return IO_ERROR;
        if (n == 0)
            continue; /* the loop checks the deadline */
        *readable = (p->revents & (POLLIN | POLLHUP | POLLERR)) != 0;
        return IO_OK;
    }
}

/* Waits until the socket is readable (and writable when want_write), or
 * the deadline (monotonic ms) passes. spin (NULL: none): results that may
 * come back soon; the thread spins before it sleeps (core/io_spin.c). */
static int wait_socket(PGconn *conn, int want_write, int64_t deadline, int *readable,
                       bitt__io_spin *spin)
{
    struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN | (want_write ? POLLOUT : 0)};
    if (pfd.fd < 0)
        return IO_ERROR;
    int64_t from;
    if (want_write)
        spin = NULL;
    if (bitt__io_spin_several(&spin, 1, &pfd, 1, &from) > 0) {
        *readable = (pfd.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
        return IO_OK;
    }
    int rc = wait_blocking(&pfd, deadline, readable);
    bitt__io_spin_missed(spin, from, rc == IO_OK);
    return rc;
}

/* Sends everything libpq has buffered, reading meanwhile so that neither
 * side can block the other. */
static int flush_all(PGconn *conn, int64_t deadline)
{
    for (;;) {
        int f = PQflush(conn);
        if (f == 0)
            return IO_OK;
        if (f < 0)
            return IO_ERROR;
        int readable = 0;
        int rc = wait_socket(conn, 1, deadline, &readable, NULL);
        if (rc != IO_OK)
            return rc;
        if (readable && !PQconsumeInput(conn))
            return IO_ERROR;
    }
}

/* The next result (NULL at the end of a command's results). */
static int next_result(PGconn *conn, int64_t *deadline, int64_t step_ms, bitt__io_spin *spin,
                       PGresult **out)
{
    *out = NULL;
    while (PQisBusy(conn)) {
        int readable = 0;
        int rc = wait_socket(conn, 0, *deadline, &readable, spin);
        if (rc != IO_OK)
            return rc;
        if (!PQconsumeInput(conn))
            return IO_ERROR;
        *deadline = bitt__monotonic_ms() + step_ms; /* progress */
    }
    *out = PQgetResult(conn);
    return IO_OK;
}

/* ---- connections ---------------------------------------------------------------- */

static void quiet_notices(void *arg, const char *message)
{
    (void)arg; /* a library prints nothing: notices are dropped */
    (void)message;
}

/* Runs one statement with text parameters on conn, to its end. */
static int exec_params(bitt_backend *be, PGconn *conn, int own, const char *sql, int n,
                       const char *const *values, const char *what)
{
    int64_t step = be->statement_timeout + CLIENT_GRACE_MS;
    int64_t deadline = bitt__monotonic_ms() + step;
    int sent = n ? PQsendQueryParams(conn, sql, n, NULL, values, NULL, NULL, 0)
                 : PQsendQuery(conn, sql); /* DDL: several statements */
    if (!sent)
        return fail_conn(be, conn, own, what);
    int rc = flush_all(conn, deadline);
    int status = BITT_OK, lost = 0;
    PGresult *res = NULL;
    while (rc == IO_OK && (rc = next_result(conn, &deadline, step, NULL, &res)) == IO_OK && res) {
        ExecStatusType st = PQresultStatus(res);
        if (status == BITT_OK && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            if (PQstatus(conn) == CONNECTION_BAD)
                rc = IO_ERROR;
            else
                status = result_error(be, res, what, &lost, own);
        }
        PQclear(res);
    }
    if (rc == IO_TIMEOUT)
        return fail_timeout(be, own, what);
    if (rc == IO_ERROR)
        return fail_conn(be, conn, own, what);
    if (lost && own)
        bitt__pg_drop(be);
    return status;
}

int bitt__pg_exec_conn(bitt_backend *be, PGconn *conn, const char *sql, const char *what)
{
    return exec_params(be, conn, 0, sql, 0, NULL, what);
}

PGconn *bitt__pg_connect(bitt_backend *be, const char *what)
{
    PGconn *conn =
        PQconnectdbParams((const char *const *)be->keywords, (const char *const *)be->values, 0);
    if (!conn) {
        bitt__fail(BITT_ENOMEM, "postgres: out of memory connecting");
        return NULL;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        char msg[MSG_MAX];
        clean_message(be, PQerrorMessage(conn), msg, sizeof msg);
        bitt__fail(BITT_EBACKEND, "postgres: %s: cannot connect: %s", what, msg);
        PQfinish(conn);
        return NULL;
    }
    if (PQserverVersion(conn) < 130000) {
        bitt__fail(BITT_EBACKEND,
                   "postgres: the server is version %d; bitt needs PostgreSQL 13 "
                   "or newer",
                   PQserverVersion(conn));
        PQfinish(conn);
        return NULL;
    }
    PQsetNoticeProcessor(conn, quiet_notices, NULL);
    /* A transaction is only ever idle between two pipelines of one call
     * (microseconds), but a stalled process should not lose its session
     * for a short statement_timeout: at least 5 s. */
    char timeout[24], idle[24];
    snprintf(timeout, sizeof timeout, "%lld", (long long)be->statement_timeout);
    snprintf(idle, sizeof idle, "%lld",
             (long long)(be->statement_timeout < 5000 ? 5000 : be->statement_timeout));
    const char *values[2] = {timeout, idle};
    if (PQsetnonblocking(conn, 1) != 0) {
        fail_conn(be, conn, 0, what);
        PQfinish(conn);
        return NULL;
    }
    /* Bounds on every statement and on a transaction left idle; READ
     * COMMITTED whatever the database's default (the locking below is
     * written for it). */
    if (exec_params(be, conn, 0,
                    "SELECT set_config('statement_timeout', $1, false), "
                    "set_config('idle_in_transaction_session_timeout', $2, false), "
                    "set_config('default_transaction_isolation', 'read committed', false)",
                    2, values, what) != BITT_OK) {
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

void bitt__pg_drop(bitt_backend *be)
{
    if (be->conn)
        PQfinish(be->conn);
    be->conn = NULL;
    memset(be->prepared, 0, sizeof be->prepared);
}

int bitt__pg_ensure(bitt_backend *be)
{
    if (be->conn && PQstatus(be->conn) != CONNECTION_OK)
        bitt__pg_drop(be);
    if (be->conn)
        return BITT_OK;
    memset(be->prepared, 0, sizeof be->prepared);
    be->conn = bitt__pg_connect(be, "connect");
    return be->conn ? BITT_OK : bitt_error_last_code();
}

char *bitt__pg_expand(const bitt_backend *be, const char *tmpl)
{
    size_t extra = strlen(be->schema) + strlen(be->prefix) + 8, n = 0;
    for (const char *s = tmpl; *s; s++)
        n += (*s == '@' || *s == '#') ? extra : 1;
    char *out = bitt__malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *s = tmpl; *s;) {
        if (*s != '@' && *s != '#') {
            *o++ = *s++;
            continue;
        }
        int qualified = *s++ == '@';
        const char *name = s;
        while ((*s >= 'a' && *s <= 'z') || *s == '_')
            s++;
        if (qualified)
            o += sprintf(o, "\"%s\".", be->schema);
        o += sprintf(o, "\"%s%.*s\"", be->prefix, (int)(s - name), name);
    }
    *o = '\0';
    return out;
}

/* ---- pipelines ---------------------------------------------------------------- */

typedef struct cmd {
    int step;    /* index into steps */
    int prepare; /* a Parse of the step's statement, not its execution */
} cmd;

void bitt__pg_clear(bitt_pg_step *steps, int n)
{
    for (int i = 0; i < n; i++) {
        PQclear(steps[i].res);
        steps[i].res = NULL;
    }
}

/* Sends ROLLBACK when a transaction was left open; drops the connection
 * when even that fails. Never touches the thread's error. */
void bitt__pg_rollback(bitt_backend *be)
{
    if (!be->conn || PQtransactionStatus(be->conn) == PQTRANS_IDLE)
        return;
    int64_t step = be->statement_timeout + CLIENT_GRACE_MS;
    int64_t deadline = bitt__monotonic_ms() + step;
    int ok = PQsendQuery(be->conn, "ROLLBACK") && flush_all(be->conn, deadline) == IO_OK;
    PGresult *res;
    while (ok && (ok = next_result(be->conn, &deadline, step, NULL, &res) == IO_OK) && res) {
        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
    }
    if (!ok || PQtransactionStatus(be->conn) != PQTRANS_IDLE)
        bitt__pg_drop(be);
}

static int send_all(bitt_backend *be, bitt_pg_step *steps, int n, cmd *cmds, int *ncmd)
{
    PGconn *c = be->conn;
    unsigned char queued[PG_COUNT] = {0};
    char name[16];
    for (int i = 0; i < n; i++) {
        bitt_pg_id id = steps[i].id;
        snprintf(name, sizeof name, "bitt%d", (int)id);
        if (!be->prepared[id] && !queued[id]) {
            char *sql = bitt__pg_expand(be, steps[i].sql);
            if (!sql)
                return bitt__fail(BITT_ENOMEM, "postgres: out of memory preparing a statement");
            int ok = PQsendPrepare(c, name, sql, 0, NULL);
            free(sql);
            if (!ok)
                return IO_ERROR;
            queued[id] = 1;
            cmds[(*ncmd)++] = (cmd){i, 1};
        }
        const bitt_pg_params *p = steps[i].params;
        if (!PQsendQueryPrepared(c, name, p ? p->n : 0, p ? p->values : NULL, p ? p->lengths : NULL,
                                 p ? p->formats : NULL, 1))
            return IO_ERROR;
        cmds[(*ncmd)++] = (cmd){i, 0};
    }
    return PQpipelineSync(c) ? BITT_OK : IO_ERROR;
}

int bitt__pg_run(bitt_backend *be, bitt_pg_step *steps, int n, const char *what)
{
    be->failed_step = -1;
    be->sqlstate[0] = '\0';
    for (int i = 0; i < n; i++)
        steps[i].res = NULL;
    int status = bitt__pg_ensure(be);
    if (status != BITT_OK)
        return status;
    cmd local[16], *cmds = n <= 8 ? local : bitt__malloc((size_t)n * 2 * sizeof *cmds);
    if (!cmds)
        return bitt__fail(BITT_ENOMEM, "postgres: out of memory for a pipeline of %d", n);
    PGconn *c = be->conn;
    int ncmd = 0, io = IO_OK, lost = 0;
    int64_t step = be->statement_timeout + CLIENT_GRACE_MS;
    int64_t deadline = bitt__monotonic_ms() + step;
    /* One statement already prepared needs no pipeline (a little less
     * work on both sides); anything else is one. */
    int plain = n == 1 && be->prepared[steps[0].id];
    if (plain) {
        char name[16];
        const bitt_pg_params *p = steps[0].params;
        snprintf(name, sizeof name, "bitt%d", (int)steps[0].id);
        if (!PQsendQueryPrepared(c, name, p ? p->n : 0, p ? p->values : NULL, p ? p->lengths : NULL,
                                 p ? p->formats : NULL, 1))
            io = IO_ERROR;
        cmds[ncmd++] = (cmd){0, 0};
    } else if (!PQenterPipelineMode(c)) {
        io = IO_ERROR;
    }
    if (io == IO_OK && !plain) {
        int rc = send_all(be, steps, n, cmds, &ncmd);
        if (rc == BITT_ENOMEM) {
            status = rc; /* the sync ends what was queued */
            if (!PQpipelineSync(c))
                io = IO_ERROR;
        } else if (rc != BITT_OK) {
            io = IO_ERROR;
        }
    }
    if (io == IO_OK)
        io = flush_all(c, deadline);

    /* Each command's result, then a NULL; then the Sync's. */
    for (int k = 0; k < ncmd && io == IO_OK; k++) {
        PGresult *res;
        if ((io = next_result(c, &deadline, step, &be->spin, &res)) != IO_OK)
            break;
        if (!res) {
            io = IO_ERROR;
            break;
        }
        ExecStatusType st = PQresultStatus(res);
        int i = cmds[k].step;
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
            if (cmds[k].prepare) {
                be->prepared[steps[i].id] = 1;
                PQclear(res);
            } else {
                steps[i].res = res;
            }
        } else if (st == PGRES_PIPELINE_ABORTED) {
            PQclear(res);
        } else {
            if (PQstatus(c) == CONNECTION_BAD)
                io = IO_ERROR;
            else if (status == BITT_OK) {
                be->failed_step = i;
                status = result_error(be, res, what, &lost, 1);
            }
            PQclear(res);
            if (io != IO_OK)
                break;
        }
        if ((io = next_result(c, &deadline, step, &be->spin, &res)) == IO_OK && res)
            PQclear(res); /* a command has one result, then NULL */
    }
    if (io == IO_OK && !plain) {
        PGresult *res;
        io = next_result(c, &deadline, step, &be->spin, &res);
        if (io == IO_OK && (!res || PQresultStatus(res) != PGRES_PIPELINE_SYNC))
            io = IO_ERROR;
        PQclear(res);
        if (io == IO_OK && !PQexitPipelineMode(c))
            io = IO_ERROR;
    }
    if (cmds != local)
        free(cmds);

    if (io == IO_TIMEOUT)
        status = fail_timeout(be, 1, what);
    else if (io == IO_ERROR)
        status = fail_conn(be, c, 1, what);
    else if (lost)
        bitt__pg_drop(be);
    if (status != BITT_OK) {
        bitt__pg_clear(steps, n);
        bitt__pg_rollback(be);
    }
    return status;
}

int bitt__pg_run1(bitt_backend *be, bitt_pg_id id, const char *sql, bitt_pg_params *p,
                  PGresult **res, const char *what)
{
    bitt_pg_step s = {id, sql, p, NULL};
    int status = bitt__pg_run(be, &s, 1, what);
    if (res)
        *res = s.res;
    else
        PQclear(s.res);
    return status;
}

int bitt__pg_simple(bitt_backend *be, const char *sql, const char *what)
{
    int status = bitt__pg_ensure(be);
    if (status != BITT_OK)
        return status;
    status = exec_params(be, be->conn, 1, sql, 0, NULL, what);
    if (status != BITT_OK)
        bitt__pg_rollback(be);
    return status;
}

uint64_t bitt__pg_changed(const PGresult *res)
{
    const char *n = PQcmdTuples((PGresult *)res);
    return n && *n ? strtoull(n, NULL, 10) : 0;
}
