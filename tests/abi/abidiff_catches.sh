#!/usr/bin/env bash
# abidiff_catches.sh: the ABI check fails on each deliberate break and passes
# the allowed addition (the variants of tests/abi/variants.cmake).
#
#   abidiff_catches.sh CHECK_SCRIPT BASELINE_ABI ABIDIFF NM \
#       NAME LIBBITT_SO HEADERS_DIR EXPECTED ...
#
# EXPECTED is "ok" (the check must pass) or a fixed string the failing
# check's first line must contain, so a check that fails for another reason
# (abidiff missing, no DWARF) does not count as catching the break.
set -uo pipefail
[ $# -ge 8 ] && [ $(( ($# - 4) % 4 )) = 0 ] || {
    echo "usage: $0 CHECK BASELINE ABIDIFF NM {NAME LIB HEADERS EXPECTED}..."
    exit 64
}
check=$1 baseline=$2 abidiff=$3 nm=$4
shift 4
failed=0
while [ $# -gt 0 ]; do
    name=$1 lib=$2 headers=$3 expected=$4
    shift 4
    out=$(bash "$check" "$baseline" "$lib" "$headers" "$abidiff" "$nm" 2>&1)
    status=$?
    first=$(printf '%s\n' "$out" | head -n 1)
    if [ "$expected" = ok ]; then
        if [ $status = 0 ]; then
            echo "ok: $name passes: $first"
        else
            echo "FAIL: $name must pass the check, it failed:"
            printf '%s\n' "$out"
            failed=1
        fi
    elif [ $status = 0 ]; then
        echo "FAIL: $name must fail the check ($expected), it passed: $first"
        failed=1
    elif [[ "$first" != *"$expected"* ]]; then
        echo "FAIL: $name failed the check, but not with '$expected':"
        printf '%s\n' "$out"
        failed=1
    else
        echo "ok: $name is caught: $first"
    fi
done
exit $failed
