# The addon: SWIG's wrapper (src/gen/bitt_wrap.cxx, generated from
# bindings/bitt.i) plus the bitt core compiled in (deps/core), linked with the
# system's libsqlite3, libpq and libhiredis. `npm run stage` fills src/gen and
# deps/ from the repository; the npm tarball carries both, so a build from
# source needs no SWIG and no repository.
{
  "targets": [{
    "target_name": "bitt",
    "sources": [
      "src/gen/bitt_wrap.cxx",
      "<!@(node -p \"require('./scripts/sources.js').join(' ')\")"
    ],
    "include_dirs": [
      "src",
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
    "libraries": ["-lsqlite3", "-lpq", "-lhiredis", "-lpthread"]
  }]
}
