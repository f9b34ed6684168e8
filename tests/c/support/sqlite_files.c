/* Helpers shared by the SQLite backend's test programs (sqlite_files.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "sqlite_files.h"

char ts_dir[1024];

const char *ts_fresh_path(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", ts_dir, name);
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char side[1200];
        if ((size_t)snprintf(side, sizeof side, "%s%s", buf, suffixes[i]) < sizeof side)
            unlink(side);
    }
    return buf;
}

int ts_open_url(bitt_store **s, const char *fmt, ...)
{
    char url[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(url, sizeof url, fmt, ap);
    va_end(ap);
    return bitt_store_open(url, s);
}

void ts_raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
    sqlite3_close(db);
}

long long ts_raw_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

void ts_expect_message(const char *needle)
{
    const char *msg = bitt_error_last();
    if (!strstr(msg, needle))
        fail_msg("message \"%s\" does not contain \"%s\"", msg, needle);
}

void ts_processes_enqueue(const char *path, int procs)
{
    pid_t pids[16];
    assert_true(procs > 0 && procs <= 16);
    for (int i = 0; i < procs; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            bitt_store *c;
            bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
            o.priority = i;
            int rc = ts_open_url(&c, "sqlite:%s?busy_timeout=60000", path);
            if (rc == BITT_OK)
                rc = bitt_queue_enqueue(c, "t", "x", 1, 0, &o, NULL);
            bitt_store_close(c);
            _exit(rc == BITT_OK ? 0 : 1);
        }
    }
    for (int i = 0; i < procs; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
}
