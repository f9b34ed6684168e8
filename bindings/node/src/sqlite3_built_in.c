/* The built-in SQLite (deps/sqlite, staged by scripts/stage.js from the
 * amalgamation docs/sqlite.md describes), its API renamed bitt_sqlite3_*
 * and compiled with hidden visibility (binding.gyp): the addon defines no
 * sqlite3_* symbol, so another SQLite in the process (better-sqlite3's,
 * node:sqlite) keeps its own. */
#include "bitt_sqlite3_names.h"
#include "sqlite3.c"
