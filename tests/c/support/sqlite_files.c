/* Helpers shared by the SQLite backend's test programs (sqlite_files.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
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
