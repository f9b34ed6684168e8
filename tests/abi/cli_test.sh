#!/usr/bin/env bash
# cli_test.sh: the `bitt` command-line tool, end to end, on memory:, on a
# SQLite file and (when their test servers are set) on PostgreSQL and Redis:
# every command and its --help (which names every form of store URL), the
# output for people (a header, aligned columns, readable times), --tsv and
# --json, bytes in and out (hex, escapes, raw), exit codes (0, 1 absent with
# its reason on stderr unless --quiet, 2 error, 64 usage), BITT_STORE and
# --store.
#
#   cli_test.sh BITT_EXECUTABLE WORK_DIR VERSION
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ $# -eq 3 ] || { echo "usage: $0 BITT_EXECUTABLE WORK_DIR VERSION"; exit 2; }
bitt=$1
work=$2
version=$3
rm -rf "$work"
mkdir -p "$work" || exit 2
cd "$work" || exit 2
unset BITT_STORE
# shellcheck source=cli_lib.sh
source "$here/cli_lib.sh"

echo "== help, on every command"
for cmd in "" "kv" "kv get" "kv set" "kv del" "kv list" "kv incr" "migrate" "version" "help"; do
    # shellcheck disable=SC2086 # the command is words
    expect_help $cmd --help
    # shellcheck disable=SC2086
    expect_help $cmd -h
    # Every page names every form of store URL and $BITT_STORE.
    # shellcheck disable=SC2086
    run $cmd --help
    for form in memory: sqlite:PATH sqlite::memory: "postgres://[USER:PASS@]HOST:PORT/DB?schema=" \
        "redis://[USER:PASS@]HOST:PORT/DB?prefix=" "unix:/PATH/redis.sock?db=N" '$BITT_STORE' \
        --json --tsv --quiet; do
        checks=$((checks + 1))
        [[ "$out" == *"$form"* ]] || report "the usage does not mention $form" $cmd --help
    done
done
expect_help help kv set
expect_help kv set KEY --help
expect_help --store memory: kv get --help
run kv list --help
[[ "$out" == *'\xNN'* ]] || report "kv list --help does not explain \\xNN escapes" kv list --help

echo "== usage errors exit 64 with a hint"
expect_err 64 "bitt: missing command*Try 'bitt --help'."
expect_err 64 "bitt: unknown command 'nope'*" nope
expect_err 64 "bitt: unknown option '--nope'*" --nope version
expect_err 64 "bitt: unknown option '-x'*" -x version
expect_err 64 "bitt: missing subcommand*Try 'bitt kv --help'." kv
expect_err 64 "bitt: unknown subcommand 'fetch'*" kv fetch
expect_err 64 "bitt: missing argument*Try 'bitt kv get --help'." kv get
expect_err 64 "bitt: unexpected argument 'b'*" kv get a b
expect_err 64 "bitt: missing argument*" kv set a
expect_err 64 "bitt: unknown option '--frob'*Try 'bitt kv set --help'." kv set a b --frob
expect_err 64 "bitt: option '--ttl' needs a value*" kv set a b --ttl
expect_err 64 "bitt: --ttl must be an integer*" kv set a b --ttl soon
expect_err 64 "bitt: --ttl must not be negative*" kv set a b --ttl -5
expect_err 64 "bitt: --kind must be bytes, json or counter*" kv set a b --kind text
expect_err 64 "bitt: KEY is not hex*" --hex kv get 0g
expect_err 64 "bitt: KEY is not hex*" --hex kv get abc
expect_err 64 "bitt: DELTA must be an integer*" kv incr n 1.5
expect_err 64 "bitt: DELTA must be an integer*" kv incr n 99999999999999999999
expect_err 64 "bitt: --limit must be an integer*" kv list --limit -1
expect_err 64 "bitt: option '--reverse' takes no value*" kv list --reverse=1
expect_err 64 "bitt: option '--quiet' takes no value*" kv get a --quiet=1
expect_err 64 "bitt: --cursor does not go with --all*" kv list --cursor x --all
expect_err 64 "bitt: --raw does not go with*" kv get a --raw --hex-out
expect_err 64 "bitt: --raw does not go with*" kv get a --raw --tsv
expect_err 64 "bitt: --raw is for 'kv get' only*" --store memory: kv list --raw
expect_err 64 "bitt: --raw is for 'kv get' only*" --raw --store memory: kv del a
expect_err 64 "bitt: --json does not go with --tsv*Try 'bitt kv list --help'." kv list --json --tsv
expect_err 64 "bitt: --json does not go with --tsv*" --tsv kv --json get a
expect_err 64 "bitt: unexpected argument 'x'*" version x

echo "== version"
expect 0 "library $version${nl}header $version$nl" version
expect 0 "library $version${nl}header $version$nl" --version
IFS=. read -r major minor patch <<< "$version"
number=$((major * 1000000 + minor * 1000 + patch))
expect 0 "{\"library\":\"$version\",\"library_number\":$number,\"header\":\"$version\",\"header_number\":$number}$nl" \
    version --json

echo "== memory:"
expect_absent "" "bitt: key not found: a" --store memory: kv get a
expect 0 "" --store memory: kv set a 1
expect 0 "5$nl" --store memory: kv incr a 5
expect 0 "" --store memory: kv list
expect_absent "" "bitt: key not found: a" --store memory: kv del a
expect 0 "" --store memory: migrate
expect 0 '{"migrated":true}'"$nl" --store memory: migrate --json
expect 0 "" --store=memory: kv set a 1 --ttl 1000 --kind counter
expect_absent "" "bitt: key not found: a" kv get a --store memory:
run -q kv get a --store memory:                  # -q is --quiet
checks=$((checks + 1))
[ "$status" = 1 ] && [ -z "$out$err" ] || report "expected status 1 and nothing printed" -q kv get a
expect_absent "" 'bitt: key not found: a\\x0ab' --store memory: kv get "a${nl}b"  # one line

# kv BACKEND: get, set, del, incr, list, bytes and TTLs on a store of BACKEND.
kv() {
    local b=$1 db l
    db=$(store "$b" kv)
    l=$(store "$b" list)
    echo "== $b: set, get, del, exit codes"
    expect 0 "" --store "$db" migrate
    expect 0 "" --store "$db" migrate
    expect 0 "" --store "$db" kv set a 1
    expect 0 "1$nl" --store "$db" kv get a
    expect_absent "" "bitt: key not found: missing" --store "$db" kv get missing
    expect 0 "" --store "$db" kv set a 2
    expect 0 "2$nl" --store "$db" kv get a
    expect 0 "" --store "$db" kv set b "two words"
    expect 0 "two words$nl" --store "$db" kv get b
    expect 0 "" --store "$db" kv del b
    expect_absent "" "bitt: key not found: b" --store "$db" kv del b
    expect_absent "" "bitt: key not found: b" --store "$db" kv get b
    expect 0 "" --store "$db" kv set dash -- -ERR
    expect 0 "-ERR$nl" --store "$db" kv get dash
    expect 0 "" --store "$db" kv set empty ""
    expect 0 "$nl" --store "$db" kv get empty
    expect 0 "" --store "$db" kv set utf8 "héllo wörld ✓"
    expect 0 "héllo wörld ✓$nl" --store "$db" kv get utf8
    expect 0 "" --store "$db" kv set multi "line 1${nl}line${tab}2"
    expect 0 "line 1${nl}line${tab}2$nl" --store "$db" kv get multi
    expect 0 'line 1\x0aline\x092'"$nl" --store "$db" kv get multi --tsv   # one line
    expect 0 "" --store "$db" kv set bs 'a\b'
    expect 0 'a\b'"$nl" --store "$db" kv get bs
    expect_json 0 'd["version"] > 0 and list(d) == ["version"]' --store "$db" kv set v x
    expect_json 0 'd == {"deleted": True}' --store "$db" kv del v
    expect_json 1 'd == {"deleted": False}' --store "$db" kv del v

    echo "== $b: bytes: hex in, hex out, escapes, raw"
    expect 0 "" --store "$db" --hex kv set 00ff ff00
    expect 0 "ff00$nl" --store "$db" --hex --hex-out kv get 00ff
    expect 0 'ff00'"$nl" --store "$db" kv get 00ff --hex --hex-out
    expect 0 '\xff\x00'"$nl" --store "$db" --hex kv get 00FF
    checks=$((checks + 1))
    printf '\377\000' > "$scratch/raw.want"
    if run --store "$db" --hex kv get 00ff --raw && ! cmp -s "$scratch/out" "$scratch/raw.want"; then
        report "expected the bytes ff 00 exactly" --hex kv get 00ff --raw
    fi
    expect_absent "" "bitt: key not found: 00ff" --store "$db" kv get 00ff   # the text is another key
    expect_absent "" "bitt: key not found: 0000" --store "$db" --hex kv get 0000  # as typed
    expect 0 "" --store "$db" --hex kv set "" 00     # the empty key
    expect 0 '\x00'"$nl" --store "$db" --hex kv get ""
    expect 0 "00$nl" --store "$db" --hex --hex-out kv get ""

    echo "== $b: incr"
    expect 0 "1$nl" --store "$db" kv incr n
    expect 0 "6$nl" --store "$db" kv incr n 5
    expect 0 "-4$nl" --store "$db" kv incr n -10
    expect 0 "-4$nl" --store "$db" kv get n
    expect_json 0 'd["value"] == -3 and d["version"] > 0' --store "$db" kv incr n
    expect 0 "" --store "$db" kv set c 41 --kind counter
    expect 0 "42$nl" --store "$db" kv incr c
    expect_err 2 "bitt: ?*" --store "$db" kv incr a   # "a" holds bytes
    expect 0 "9223372036854775807$nl" --store "$db" kv incr big 9223372036854775807
    expect_err 2 "bitt: ?*" --store "$db" kv incr big
    expect 0 "9223372036854775807$nl" --store "$db" kv get big
    expect_json 0 'd["value"] == 9223372036854775807' --store "$db" kv get big  # exact, no double
    expect 0 "-3$nl" --store "$db" kv get n
    expect_err 2 "bitt: ?*" --store "$db" kv set c2 abc --kind counter
    expect_absent "" "bitt: key not found: c2" --store "$db" kv get c2

    echo "== $b: json values and --json"
    expect 0 "" --store "$db" kv set j '{"a": [1, 2]}' --kind json
    expect 0 '{"a": [1, 2]}'"$nl" --store "$db" kv get j
    expect_err 2 "bitt: ?*" --store "$db" kv set j2 '{"a":' --kind json
    expect_like 0 '{"key":"j","value":{"a": \[1, 2]},"kind":"json","version":'[1-9]*',"expires_at":null}'"$nl" \
        --store "$db" kv get j --json
    expect_json 0 'd["key"] == "j" and d["value"] == {"a": [1, 2]} and d["expires_at"] is None' \
        --store "$db" kv get j
    expect 0 "KEY  KIND  EXPIRES_AT  VALUE${nl}j    json  never       {\"a\": [1, 2]}$nl" \
        --store "$db" kv list --prefix j
    expect_like 0 '{"key_hex":"00ff","value_hex":"ff00","kind":"bytes",'* --store "$db" --hex kv get 00ff --json
    expect_like 0 '{"key_hex":"'*'","value_hex":"'*'"'* --store "$db" kv get a --json --hex-out
    expect_like 0 '{"key":"c","value":42,"kind":"counter",'* --store "$db" kv get c --json
    expect_like 0 '{"key":"multi","value":"line 1\\nline\\t2","kind":"bytes",'* --store "$db" kv get multi --json
    expect_like 0 '{"key":"bs","value":"a\\\\b",'* --store "$db" kv get bs --json
    expect_absent "null$nl" "bitt: key not found: missing" --store "$db" kv get missing --json

    echo "== $b: TTL"
    expect 0 "" --store "$db" kv set short x --ttl 1
    sleep 0.05
    expect_absent "" "bitt: key not found: short" --store "$db" kv get short
    expect 0 "" --store "$db" kv set long x --ttl 3600000
    expect_like 0 *'"expires_at":'[1-9]*[0-9]'}'"$nl" --store "$db" kv get long --json
    expect_json 0 'd["entries"][0]["expires_at"] > 0' --store "$db" kv list --prefix long
    expect_like 0 "KEY   KIND   EXPIRES_AT                VALUE${nl}long  bytes  $iso  x$nl" \
        --store "$db" kv list --prefix long
    expect_like 0 "long${tab}bytes${tab}[1-9]*[0-9]${tab}x$nl" --store "$db" kv list --prefix long --tsv
    expect 0 "1$nl" --store "$db" kv incr tc --ttl 1
    sleep 0.05
    expect_absent "" "bitt: key not found: tc" --store "$db" kv get tc

    echo "== $b: list"
    expect 0 "" --store "$l" --hex kv set 00ff ff00
    for k in a a/1 a/2 a_ ab b; do
        expect 0 "" --store "$l" kv set "$k" "v:$k"
    done
    expect 0 "" --store "$l" kv set t "x${tab}y${nl}z\\"
    local all
    all="\\x00\\xff${tab}bytes${tab}0${tab}\\xff\\x00$nl"
    for k in a a/1 a/2 a_ ab b; do
        all+="$k${tab}bytes${tab}0${tab}v:$k$nl"
    done
    all+="t${tab}bytes${tab}0${tab}x\\x09y\\x0az\\\\$nl"
    expect 0 "$all" --store "$l" kv list --tsv
    # For people: a header, and columns as wide as their widest cell + 2.
    row() { printf '%-10s%-7s%-12s%s\n' "$@"; }
    expect 0 "$(row KEY KIND EXPIRES_AT VALUE; row '\x00\xff' bytes never '\xff\x00'; row a bytes never v:a
        row a/1 bytes never v:a/1; row a/2 bytes never v:a/2; row a_ bytes never v:a_
        row ab bytes never v:ab; row b bytes never v:b; row t bytes never 'x\x09y\x0az\\')$nl" --store "$l" kv list
    expect 0 "KEY  KIND   EXPIRES_AT  VALUE${nl}a/1  bytes  never       v:a/1${nl}a/2  bytes  never       v:a/2$nl" \
        --store "$l" kv list --prefix a/
    expect 0 "a${tab}bytes${tab}0${tab}v:a${nl}a/1${tab}bytes${tab}0${tab}v:a/1${nl}a/2${tab}bytes${tab}0${tab}v:a/2${nl}a_${tab}bytes${tab}0${tab}v:a_${nl}ab${tab}bytes${tab}0${tab}v:ab$nl" \
        --store "$l" kv list --prefix a --tsv
    expect 0 "a_${tab}bytes${tab}0${tab}v:a_$nl" --store "$l" kv list --prefix a_ --tsv
    expect 0 "a/2${tab}bytes${tab}0${tab}v:a/2${nl}a_${tab}bytes${tab}0${tab}v:a_$nl" \
        --store "$l" kv list --start a/2 --end ab --tsv
    expect 0 "ab${tab}bytes${tab}0${tab}v:ab${nl}a_${tab}bytes${tab}0${tab}v:a_$nl" \
        --store "$l" kv list --prefix a --reverse --limit 2 --tsv
    checks=$((checks + 1))
    [[ "$err" == "cursor: "?* ]] || report "a partial page prints its cursor on stderr" kv list --limit 2
    expect 0 "00ff${tab}bytes${tab}0${tab}ff00$nl" --store "$l" --hex kv list --prefix 00 --hex-out --tsv
    expect 0 "" --store "$l" --hex kv list --prefix 0001
    # Page by page with the cursor gives the whole list.
    local pages="" cursor="" n=0
    while :; do
        if [ -z "$cursor" ]; then run --store "$l" kv list --limit 3 --tsv
        else run --store "$l" kv list --limit 3 --tsv --cursor "$cursor"; fi
        [ "$status" = 0 ] || { report "paging" kv list --limit 3 --cursor "$cursor"; break; }
        pages+=$out
        cursor=${err#cursor: }
        n=$((n + 1))
        [ -n "$err" ] && [ $n -lt 10 ] || break
    done
    checks=$((checks + 1))
    [ "$pages" = "$all" ] || { status=0 out=$pages err=""; report "pages with --cursor differ from the list" kv list --limit 3; }
    [ $n = 3 ] || report "8 entries in pages of 3 should be 3 pages, not $n" kv list --limit 3
    expect 0 "$all" --store "$l" kv list --all --limit 2 --tsv
    [ -z "$err" ] || report "--all prints no cursor" kv list --all --limit 2
    run --store "$l" kv list --all --limit 2
    checks=$((checks + 1))
    [ "$(grep -c '^KEY ' <<< "$out")" = 1 ] && [ "$(printf '%s' "$out" | wc -l)" = 9 ] ||
        report "--all prints one header above every page" kv list --all --limit 2
    expect_err 2 "bitt: ?*" --store "$l" kv list --cursor bogus
    expect_like 0 '{"entries":\[{"key":"a/1","value":"v:a/1",'*'},{"key":"a/2",'*'}],"cursor":null}'"$nl" \
        --store "$l" kv list --prefix a/ --json
    expect_json 0 '[e["key"] for e in d["entries"]] == ["a/1", "a/2"] and d["cursor"] is None' \
        --store "$l" kv list --prefix a/
    expect_like 0 '{"entries":\[{"key_hex":"00ff",'*'}],"cursor":"'?*'"}'"$nl" \
        --store "$l" kv list --limit 1 --json
}

on_backends kv
[ -f "$work/kv.db" ] || report "migrate did not create the database file" migrate
expect 0 '{"entries":[],"cursor":null}'"$nl" --store memory: kv list --json

echo "== the store: BITT_STORE, --store, the default, bad URLs"
export BITT_STORE="sqlite:$work/env.db"
expect 0 "" kv set e 1
expect 0 "1$nl" --store "sqlite:$work/env.db" kv get e
expect_absent "" "bitt: key not found: e" --store "sqlite:$work/test.db" kv get e  # --store wins
expect 0 "1$nl" kv get e
unset BITT_STORE
[ ! -e "$work/bitt.db" ] || report "bitt.db existed too early" kv get e
expect 0 "" kv set d 1                      # the default: sqlite:bitt.db here
[ -f "$work/bitt.db" ] || report "the default store is not ./bitt.db" kv set d 1
expect 0 "1$nl" --store sqlite:bitt.db kv get d
expect_err 2 "bitt: ?*" --store bogus: kv get a
expect_err 2 "bitt: ?*" --store "sqlite:$work/x.db?no_such_option=1" kv get a
expect_err 2 "bitt: ?*" --store "memory:?busy_timeout=5" kv get a
expect_err 2 "bitt: ?*" --store "sqlite:$work/no/such/dir/x.db" kv set a 1
BITT_STORE=bogus: "$bitt" kv get a > /dev/null 2>&1
st=$?
checks=$((checks + 1))
[ $st = 2 ] || { status=$st out="" err=""; report "BITT_STORE=bogus: should fail with 2" kv get a; }

echo "== output errors"
checks=$((checks + 1))
if [ -w /dev/full ]; then
    "$bitt" version > /dev/full 2> "$work/err"
    st=$?
    [ $st = 2 ] || { status=$st out="" err=$(cat "$work/err"); report "writing to /dev/full" version; }
fi

echo "$checks checks, $failures failed"
[ $failures = 0 ] && rm -rf "$work"
[ $failures = 0 ]
