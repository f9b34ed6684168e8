/*
 * tests/c/support/sqlite_files.h: what the SQLite backend's test programs
 * share: fresh database paths, store URLs built with printf, raw SQL on a
 * file behind bitt's back, and message checks. cmocka must be included
 * before this header.
 */
#ifndef BITT_TEST_SQLITE_FILES_H
#define BITT_TEST_SQLITE_FILES_H

#include <stddef.h>

#include "bitt.h"

/* The program's scratch directory; each program sets it in main(). */
extern char ts_dir[1024];

/* A fresh path ts_dir/name, with any old database and its -wal/-shm gone. */
const char *ts_fresh_path(const char *name, char *buf, size_t size);
/* bitt_store_open on a URL made with printf. */
int ts_open_url(bitt_store **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Runs sql on the file with sqlite3 directly; fails the test on error. */
void ts_raw_exec(const char *path, const char *sql);
/* The first column of the first row of sql, read with sqlite3 directly. */
long long ts_raw_int(const char *path, const char *sql);
/* procs processes (at most 16) open the file at once (migrating it) and
 * each enqueues one message on topic "t", process i at priority i. */
void ts_processes_enqueue(const char *path, int procs);
/* Fails the test unless this thread's last bitt message contains needle. */
void ts_expect_message(const char *needle);

#endif /* BITT_TEST_SQLITE_FILES_H */
