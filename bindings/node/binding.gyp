# The addon: SWIG's wrapper (src/gen/bitt_wrap.cxx, generated from
# bindings/bitt.i) plus the bitt core compiled in (deps/core), linked with the
# system's libpq and libhiredis, and SQLite built in (deps/sqlite: the
# amalgamation, options and renames libbitt's -DBITT_SQLITE_AMALGAMATION
# build uses, docs/sqlite.md). `npm run stage` fills src/gen and deps/ from
# the repository; the npm tarball carries both, so a build from source needs
# no SWIG, no repository and no network.
{
  "targets": [{
    # SQLite alone: its options and silenced warnings stay off bitt's sources.
    "target_name": "bitt_sqlite3",
    "type": "static_library",
    "sources": ["src/sqlite3_built_in.c"],
    "include_dirs": ["deps/sqlite"],
    "defines": ["<!@(node -p \"require('./scripts/sqlite-defines.js').join(' ')\")"],
    "cflags": ["-fvisibility=hidden", "-fPIC", "-O2", "-w"],
    "cflags!": ["-Wall", "-Wextra"]
  }, {
    "target_name": "bitt",
    "dependencies": ["bitt_sqlite3"],
    "sources": [
      "src/gen/bitt_wrap.cxx",
      "<!@(node -p \"require('./scripts/sources.js').join(' ')\")"
    ],
    "include_dirs": [
      "src",
      "deps/sqlite/include",
      "deps/include",
      "deps/core",
      "<!(node -p \"require('node-addon-api').include_dir\")",
      "/usr/include/postgresql"
    ],
    "defines": [
      "NAPI_VERSION=8",
      "NAPI_CPP_EXCEPTIONS",
      "BITT_HAVE_POSTGRES=1",
      "BITT_HAVE_REDIS=1",
      "_POSIX_C_SOURCE=200809L"
    ],
    "cflags": ["-fvisibility=hidden", "-O2"],
    "cflags_c": ["-std=c11"],
    "cflags_cc": ["-std=c++17", "-fexceptions", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
    "cflags!": ["-fno-exceptions"],
    "cflags_cc!": ["-fno-exceptions"],
    "libraries": ["-lpq", "-lhiredis", "-lpthread", "-lm"]
  }]
}
