#!/usr/bin/env bash
# check_symbols.sh: the exported surface of libbitt matches the committed list.
#
#   check_symbols.sh exports LIBBITT_SO SYMBOLS_TXT MAJOR [NM] [READELF]
#     The dynamic symbols libbitt.so defines are exactly abi/symbols.txt,
#     each under a BITT_* version node, and the SONAME is libbitt.so.MAJOR.
#   check_symbols.sh declared SYMBOLS_TXT BITT_MAP BITT_H
#     abi/symbols.txt, the names in abi/bitt.map and the BITT_API functions
#     of bitt.h are the same set, and bitt.map has one version node per
#     minor release up to bitt.h's version.
#
# A failure prints what differs ("-" in the list only, "+" elsewhere only).
set -euo pipefail

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
failed=0

fail() {
    echo "FAIL: $*"
    failed=1
}

# read_list LIST OUT: the list without blank lines or comments, sorted, into
# OUT; a name listed twice fails.
read_list() {
    grep -v -e '^[[:space:]]*$' -e '^[[:space:]]*#' "$1" | sed 's/[[:space:]]*$//' | sort > "$tmp/list.all"
    if [ -n "$(uniq -d "$tmp/list.all")" ]; then
        fail "$1 names a symbol twice: $(uniq -d "$tmp/list.all" | tr '\n' ' ')"
    fi
    uniq "$tmp/list.all" > "$2"
}

# compare NAME_OF_A FILE_A NAME_OF_B FILE_B
compare() {
    if ! diff -u --label "$1" --label "$3" "$2" "$4" > "$tmp/diff"; then
        fail "$1 and $3 differ:"
        sed -n '3,$p' "$tmp/diff" | grep '^[-+]'
    fi
}

# check_nodes BITT_MAP BITT_H: one version node per minor release, in order,
# up to the version of bitt.h: BITT_<major>.<first> ... BITT_<major>.<minor>
# (major 0 starts at 0.1, any other major at .0), each node after the first
# inheriting from the one before it ("} BITT_0.1;").
check_nodes() {
    local map=$1 header=$2 major minor first m expected_parent line node parent
    major=$(sed -n 's/^#define BITT_VERSION_MAJOR \([0-9]*\)$/\1/p' "$header")
    minor=$(sed -n 's/^#define BITT_VERSION_MINOR \([0-9]*\)$/\1/p' "$header")
    if [ -z "$major" ] || [ -z "$minor" ]; then
        fail "no BITT_VERSION_MAJOR/MINOR in $header"
        return
    fi
    first=$([ "$major" = 0 ] && echo 1 || echo 0)
    # "BITT_0.2 {" opens a node; "} BITT_0.1;" or "};" closes it.
    grep -o -e '^[[:space:]]*BITT_[0-9.]*[[:space:]]*{' -e '}[[:space:]]*[A-Z0-9_.]*[[:space:]]*;' "$map" |
        sed -e 's/[[:space:]{;]//g' > "$tmp/nodes"
    m=$first
    expected_parent="}"
    while read -r line; do
        case "$line" in
        BITT_*)
            node=$line
            if [ "$node" != "BITT_$major.$m" ]; then
                fail "$map: node $node where BITT_$major.$m was expected (one node per minor, in order)"
                return
            fi
            ;;
        \}*)
            parent=$line
            if [ "$parent" != "$expected_parent" ]; then
                fail "$map: node $node closes with '$(sed 's/}/} /' <<< "$parent");'," \
                    "expected '$(sed 's/}/} /' <<< "$expected_parent");'"
            fi
            expected_parent="}$node"
            m=$((m + 1))
            ;;
        esac
    done < "$tmp/nodes"
    if [ "$m" != $((minor + 1)) ]; then
        fail "$map: the last node is BITT_$major.$((m - 1)), bitt.h says $major.$minor"
    fi
}

case "${1:-}" in
exports)
    [ $# -ge 4 ] || { echo "usage: $0 exports LIB SYMBOLS MAJOR [NM] [READELF]"; exit 64; }
    lib=$2 list=$3 major=$4 nm=${5:-nm} readelf=${6:-readelf}
    read_list "$list" "$tmp/expected"
    # "0000000000012340 T bitt_kv_get@@BITT_0.1"; the version nodes
    # themselves are absolute ("A") symbols.
    "$nm" -D --defined-only "$lib" | awk '$2 != "A" { print $NF }' > "$tmp/nm"
    sed 's/@.*//' "$tmp/nm" | sort -u > "$tmp/actual"
    compare "$list" "$tmp/expected" "exported by $(basename "$lib")" "$tmp/actual"
    if grep -q '@' "$tmp/nm"; then   # binutils that print symbol versions
        if grep -v '@@\{0,1\}BITT_[0-9]' "$tmp/nm" > "$tmp/unversioned"; then
            fail "exported without a BITT_* version node: $(tr '\n' ' ' < "$tmp/unversioned")"
        fi
    fi
    soname=$("$readelf" -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    if [ "$soname" != "libbitt.so.$major" ]; then
        fail "SONAME is '$soname', expected 'libbitt.so.$major'"
    fi
    [ $failed = 0 ] && echo "ok: $(wc -l < "$tmp/actual") symbols exported as listed, SONAME $soname"
    ;;
declared)
    [ $# -eq 4 ] || { echo "usage: $0 declared SYMBOLS BITT_MAP BITT_H"; exit 64; }
    list=$2 map=$3 header=$4
    read_list "$list" "$tmp/expected"
    sed -n 's/^[[:space:]]*\(bitt_[A-Za-z0-9_]*\)[[:space:]]*;.*/\1/p' "$map" | sort > "$tmp/map.all"
    if [ -n "$(uniq -d "$tmp/map.all")" ]; then
        fail "$map names a symbol twice: $(uniq -d "$tmp/map.all" | tr '\n' ' ')"
    fi
    uniq "$tmp/map.all" > "$tmp/map"
    # "BITT_API const uint8_t *bitt_entry_key(..." -> bitt_entry_key
    grep '^[[:space:]]*BITT_API[[:space:]]' "$header" |
        sed -n 's/^[^(]*[^A-Za-z0-9_(]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*(.*/\1/p' |
        sort -u > "$tmp/header"
    if [ "$(grep -c '^[[:space:]]*BITT_API[[:space:]]' "$header")" != "$(wc -l < "$tmp/header")" ]; then
        fail "could not read the name of every BITT_API declaration in $header"
    fi
    compare "$list" "$tmp/expected" "$map" "$tmp/map"
    compare "$list" "$tmp/expected" "BITT_API in $header" "$tmp/header"
    check_nodes "$map" "$header"
    if grep -v '^bitt_' "$tmp/expected" > "$tmp/badnames"; then
        fail "symbols without the bitt_ prefix: $(tr '\n' ' ' < "$tmp/badnames")"
    fi
    [ $failed = 0 ] && echo "ok: $(wc -l < "$tmp/expected") symbols listed, in the map and declared;" \
        "nodes $(grep -c '^BITT' "$tmp/nodes" | tr -d ' ') up to bitt.h's version"
    ;;
*)
    echo "usage: $0 exports|declared ..."
    exit 64
    ;;
esac
exit $failed
