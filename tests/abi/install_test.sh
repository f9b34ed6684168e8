#!/usr/bin/env bash
# install_test.sh: install the build tree into a fresh prefix, then build and
# run tests/abi/consumer against it: with CMake (find_package(bitt), the
# shared and the static target) and with pkg-config (shared and static).
#
# Settings come from the environment (tests/abi.cmake sets them):
#   BITT_BUILD_DIR    the build tree to install
#   BITT_WORK_DIR     scratch directory (emptied first)
#   BITT_SOURCE_DIR   tests/abi
#   BITT_CMAKE        cmake;  BITT_GENERATOR, BITT_MAKE_PROGRAM for the consumer
#   BITT_CC           the C compiler;  BITT_CFLAGS extra flags (sanitizers)
#   BITT_PKG_CONFIG   pkg-config
#   BITT_LIBDIR       CMAKE_INSTALL_LIBDIR;  BITT_INCLUDEDIR, BITT_BINDIR
#   BITT_VERSION      the project version;  BITT_MAJOR its major
#   BITT_READELF      readelf
#   BITT_SQLITE_BUILTIN  1 when an SQLite amalgamation is built in (no -lsqlite3)
set -euo pipefail

for v in BITT_BUILD_DIR BITT_WORK_DIR BITT_SOURCE_DIR BITT_CMAKE BITT_GENERATOR BITT_CC \
         BITT_PKG_CONFIG BITT_LIBDIR BITT_INCLUDEDIR BITT_BINDIR BITT_VERSION BITT_MAJOR \
         BITT_READELF; do
    [ -n "${!v:-}" ] || { echo "install_test.sh: $v is not set"; exit 2; }
done
cflags=${BITT_CFLAGS:-}
work=$BITT_WORK_DIR
prefix=$work/prefix
libdir=$prefix/$BITT_LIBDIR
failed=0

fail() {
    echo "FAIL: $*"
    failed=1
}
step() {
    echo "== $*"
}
# run LOG CMD...: runs CMD, its output into LOG, shown when it fails.
run() {
    local log=$1
    shift
    if ! "$@" > "$log" 2>&1; then
        echo "FAIL: $*"
        sed 's/^/    /' "$log"
        return 1
    fi
}
needed() {
    "$BITT_READELF" -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'
}

rm -rf "$work"
mkdir -p "$work"
# Installed programs find libbitt through LD_LIBRARY_PATH (and their RPATH).
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# pkg-config and find_package see only this prefix (and the system).
export PKG_CONFIG_PATH="$libdir/pkgconfig"
unset CMAKE_PREFIX_PATH bitt_DIR || true

step "cmake --install into $prefix"
run "$work/install.log" "$BITT_CMAKE" --install "$BITT_BUILD_DIR" --prefix "$prefix" || exit 1
for f in "$BITT_INCLUDEDIR/bitt.h" \
         "$BITT_LIBDIR/libbitt.so" "$BITT_LIBDIR/libbitt.so.$BITT_MAJOR" \
         "$BITT_LIBDIR/libbitt.so.$BITT_VERSION" "$BITT_LIBDIR/libbitt.a" \
         "$BITT_LIBDIR/pkgconfig/bitt.pc" "$BITT_LIBDIR/cmake/bitt/bittConfig.cmake" \
         "$BITT_LIBDIR/cmake/bitt/bittConfigVersion.cmake" \
         "$BITT_LIBDIR/cmake/bitt/bittTargets.cmake" "$BITT_BINDIR/bitt"; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
done
if cmp -s "$prefix/$BITT_INCLUDEDIR/bitt.h" "$BITT_SOURCE_DIR/../../abi/include/bitt.h"; then :; else
    fail "the installed bitt.h is not abi/include/bitt.h"
fi
# No private header and no build path leaks into the install.
if find "$prefix" -name '*.h' ! -name bitt.h | grep .; then
    fail "headers other than bitt.h were installed"
fi
if grep -rl -- "$BITT_BUILD_DIR" "$prefix/$BITT_LIBDIR/cmake" "$prefix/$BITT_LIBDIR/pkgconfig"; then
    fail "the installed package files name the build tree"
fi

step "the installed CLI"
if out=$(env -u BITT_STORE "$prefix/$BITT_BINDIR/bitt" version 2>&1); then
    [ "$out" = "$(printf 'library %s\nheader %s' "$BITT_VERSION" "$BITT_VERSION")" ] ||
        fail "bitt version printed: $out"
else
    fail "the installed bitt did not run: $out"
fi

step "CMake consumer: find_package(bitt ${BITT_VERSION%.*})"
consumer_args=(-S "$BITT_SOURCE_DIR/consumer" -G "$BITT_GENERATOR"
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$BITT_CC"
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$cflags"
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
[ -n "${BITT_MAKE_PROGRAM:-}" ] && consumer_args+=(-DCMAKE_MAKE_PROGRAM="$BITT_MAKE_PROGRAM")
if run "$work/consumer-configure.log" "$BITT_CMAKE" -B "$work/consumer" "${consumer_args[@]}" &&
   run "$work/consumer-build.log" "$BITT_CMAKE" --build "$work/consumer"; then
    found=$(sed -n 's/^bitt_DIR:[A-Z]*=//p' "$work/consumer/CMakeCache.txt")
    [ "$found" = "$libdir/cmake/bitt" ] || fail "find_package found bitt in '$found'"
    for exe in consumer_shared consumer_static; do
        if run "$work/$exe.log" "$work/consumer/$exe"; then
            sed 's/^/    /' "$work/$exe.log"
        else
            failed=1
        fi
    done
    needed "$work/consumer/consumer_shared" | grep -qx "libbitt.so.$BITT_MAJOR" ||
        fail "consumer_shared does not load libbitt.so.$BITT_MAJOR"
    if needed "$work/consumer/consumer_static" | grep -q '^libbitt'; then
        fail "consumer_static loads libbitt.so: it should have the static library"
    fi
else
    failed=1
fi

step "CMake consumer: find_package(bitt $((BITT_MAJOR + 1)).0) is refused"
if "$BITT_CMAKE" -B "$work/consumer-next" "${consumer_args[@]}" \
       -DBITT_CONSUMER_WANTS="$((BITT_MAJOR + 1)).0" > "$work/consumer-next.log" 2>&1; then
    fail "find_package(bitt $((BITT_MAJOR + 1)).0) accepted version $BITT_VERSION"
fi

step "pkg-config consumer"
pc_version=$("$BITT_PKG_CONFIG" --modversion bitt) || fail "pkg-config does not find bitt"
[ "$pc_version" = "$BITT_VERSION" ] || fail "pkg-config says version '$pc_version'"
pc_cflags=$("$BITT_PKG_CONFIG" --cflags bitt)
pc_libs=$("$BITT_PKG_CONFIG" --libs bitt)
pc_static=$("$BITT_PKG_CONFIG" --libs --static bitt)
echo "    cflags: $pc_cflags"
echo "    libs: $pc_libs"
echo "    libs --static: $pc_static"
case "${BITT_SQLITE_BUILTIN:-0}: $pc_static " in
1:*" -lsqlite3 "*) fail "pkg-config --static --libs bitt names -lsqlite3, yet SQLite is built in" ;;
1:*) ;;
*" -lsqlite3 "*) ;;
*) fail "pkg-config --static --libs bitt lacks -lsqlite3" ;;
esac
case " $pc_static " in
*" -pthread "*) ;;
*) fail "pkg-config --static --libs bitt lacks -pthread" ;;
esac
# The static build names libbitt.a where --libs says -lbitt.
pc_static=$(printf '%s\n' "$pc_static" | sed 's/\(^\| \)-lbitt\( \|$\)/\1-l:libbitt.a\2/')
# shellcheck disable=SC2086 # the flags are words
if run "$work/pc-build.log" "$BITT_CC" -std=c11 $cflags $pc_cflags \
       -o "$work/pc_shared" "$BITT_SOURCE_DIR/consumer/main.c" $pc_libs &&
   run "$work/pc-static-build.log" "$BITT_CC" -std=c11 $cflags $pc_cflags \
       -o "$work/pc_static" "$BITT_SOURCE_DIR/consumer/main.c" $pc_static; then
    for exe in pc_shared pc_static; do
        # bitt.pc's rpath finds the library: no LD_LIBRARY_PATH (cgo, the
        # Go binding's programs, has nothing but `pkg-config --libs`).
        if run "$work/$exe.log" env -u LD_LIBRARY_PATH "$work/$exe"; then
            sed 's/^/    /' "$work/$exe.log"
        else
            failed=1
        fi
    done
    if needed "$work/pc_static" | grep -q '^libbitt'; then
        fail "pc_static loads libbitt.so: it should have the static library"
    fi
else
    failed=1
fi

step "bitt.pc: an rpath for its own prefix, none for a system one"
# The same install-time step (packaging/bitt-pc.cmake) for a prefix whose
# libdir the toolchain links from by itself: there the loader looks anyway,
# and distributions refuse rpaths. The installed bitt.pc's template is kept
# in the build tree; this writes a copy, nothing under /usr.
pc_in=$BITT_BUILD_DIR/packaging/bitt.pc.in
# Each case: name, prefix, whether Libs has the rpath.
for case in "own:$prefix:yes" "system:/usr:no"; do
    IFS=: read -r name pfx want <<<"$case"
    pc_out=$work/bitt-$name.pc
    if run "$work/bitt-pc-$name.log" "$BITT_CMAKE" -DCMAKE_INSTALL_PREFIX="$pfx" \
           -DBITT_PC_TEMPLATE="$pc_in" -DBITT_PC_OUT="$pc_out" -DBITT_PC_INSTALL_LIBDIR=lib \
           -DBITT_PC_SYSTEM_LIBDIRS="/usr/lib;/lib" -P "$BITT_SOURCE_DIR/../../packaging/bitt-pc.cmake"; then
        if grep -q '^Libs: .*-Wl,-rpath,${libdir} ' "$pc_out"; then has=yes; else has=no; fi
        [ "$has" = "$want" ] || fail "bitt.pc for prefix $pfx: rpath $has, wanted $want ($(grep '^Libs:' "$pc_out"))"
    else
        failed=1
    fi
done

if [ $failed = 0 ]; then
    echo "ok: installed, and used through CMake and pkg-config"
    rm -rf "$work"
fi
exit $failed
