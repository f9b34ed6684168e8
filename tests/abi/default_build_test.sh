#!/usr/bin/env bash
# A consumer's plain `cmake -S . -B build` (the README's install line) builds
# the library, its header and the CLI only: no tests (cmocka), no benchmarks.
# So it needs only the library's own dependencies. Usage:
#   default_build_test.sh SOURCE_DIR WORK_DIR CMAKE
set -euo pipefail
src=$1 work=$2 cmake=$3
rm -rf "$work" && mkdir -p "$work"
"$cmake" -S "$src" -B "$work" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; echo "default_build_test: configuring with no options failed" >&2; exit 1; }
cache="$work/CMakeCache.txt"
grep -q '^BUILD_TESTING:BOOL=OFF$' "$cache" || { echo "default_build_test: BUILD_TESTING is not OFF by default" >&2; exit 1; }
grep -q '^BITT_BUILD_BENCH:BOOL=OFF$' "$cache" || { echo "default_build_test: BITT_BUILD_BENCH is not OFF by default" >&2; exit 1; }
if grep -qi 'cmocka' "$cache"; then
  echo "default_build_test: a default configure looked for cmocka (a test-only dependency)" >&2; exit 1
fi
rm -rf "$work"
echo "default_build_test: a default configure builds the library only"
