#!/usr/bin/env bash
# abidiff_check.sh: a built libbitt.so keeps the ABI of the committed baseline.
#
#   abidiff_check.sh BASELINE_ABI LIBBITT_SO HEADERS_DIR [ABIDIFF] [NM]
#
# The rule (also in scripts/abi-baseline and docs/reliability.md, "ABI stability"):
#   - a removed or re-versioned exported function fails (abidiff sets bit 8,
#     ABIDIFF_ABI_INCOMPATIBLE_CHANGE);
#   - any change to an existing function or to a type reachable from one
#     (a parameter, a return type, a struct member's offset, size or type, an
#     enumerator's value) fails: abidiff sets bit 4 (ABIDIFF_ABI_CHANGE) and
#     leaves the verdict to a human, and for bitt the human answer is "a new
#     baseline, on purpose, with scripts/abi-baseline", never silently;
#   - an added function passes only in a version node the baseline does not
#     have (BITT_0.3 after BITT_0.2): a released node never changes.
#   - a versioned option struct may grow at its end, with its version bumped
#     (the library reads a caller's struct only up to that caller's version):
#     abidiff still reports it, so such a release refreshes the baseline on
#     purpose (scripts/abi-baseline) and is checked against that from then on.
# The library must carry DWARF (the build adds -g); without it abidiff could
# only compare symbol names, so that is a failure too.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 BASELINE_ABI LIBBITT_SO HEADERS_DIR [ABIDIFF] [NM]"; exit 64; }
baseline=$1 lib=$2 headers=$3 abidiff=${4:-abidiff} nm=${5:-nm}
export LC_ALL=C
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run_abidiff() { # extra options...; sets $status, report in $tmp/report
    "$abidiff" --fail-no-debug-info --headers-dir2 "$headers" --drop-private-types \
        --no-show-locs "$@" "$baseline" "$lib" > "$tmp/report" 2>&1
    status=$?
}

run_abidiff
if (( status & 1 )); then
    echo "FAIL: abidiff could not compare (status $status):"
    cat "$tmp/report"
    exit 1
fi
if (( status & 8 )); then
    echo "FAIL: incompatible ABI change (a function of the baseline is gone):"
    cat "$tmp/report"
    exit 1
fi
if (( status & 4 )); then
    # Additions alone set bit 4 too; look again without them.
    run_abidiff --no-added-syms
    if (( status & 4 )); then
        echo "FAIL: an existing function or a type it reaches changed:"
        cat "$tmp/report"
        exit 1
    fi
fi

# Added functions: each in a version node the baseline does not have.
sed -n "s/.*<elf-symbol name='\([^']*\)' version='\([^']*\)'.*/\1 \2/p" "$baseline" |
    sort > "$tmp/old"
cut -d' ' -f2 "$tmp/old" | sort -u > "$tmp/old_nodes"
"$nm" -D --defined-only "$lib" | awk '$2 != "A" && $NF ~ /@/ { print $NF }' |
    sed 's/@@*/ /' | sort > "$tmp/new"
failed=0
added=0
while read -r name node; do
    if grep -qx "$name $node" "$tmp/old"; then
        continue
    fi
    if grep -q "^$name " "$tmp/old"; then
        echo "FAIL: $name moved from $(grep "^$name " "$tmp/old" | cut -d' ' -f2) to $node"
        failed=1
        continue
    fi
    added=$((added + 1))
    if grep -qx "$node" "$tmp/old_nodes"; then
        echo "FAIL: $name was added to $node, a node of the baseline (released nodes never change)"
        failed=1
    fi
done < "$tmp/new"
[ $failed = 0 ] || exit 1
echo "ok: ABI of $(basename "$lib") is compatible with $(basename "$baseline")" \
    "($(wc -l < "$tmp/old") functions kept, $added added in new nodes)"
