#!/usr/bin/env bash
# cli_test.sh: the `bitt` command-line tool, end to end, on memory: and on a
# SQLite file: every command and its --help, bytes in and out (hex, escapes,
# raw), exit codes (0, 1 absent, 2 error, 64 usage), BITT_STORE and --store.
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
db="sqlite:$work/test.db"
# shellcheck source=cli_lib.sh
source "$here/cli_lib.sh"

echo "== help, on every command"
for cmd in "" "kv" "kv get" "kv set" "kv del" "kv list" "kv incr" "migrate" "version" "help"; do
    # shellcheck disable=SC2086 # the command is words
    expect_help $cmd --help
    # shellcheck disable=SC2086
    expect_help $cmd -h
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
expect_err 64 "bitt: --cursor does not go with --all*" kv list --cursor x --all
expect_err 64 "bitt: --raw does not go with*" kv get a --raw --hex-out
expect_err 64 "bitt: unexpected argument 'x'*" version x

echo "== version"
expect 0 "library $version${nl}header $version$nl" version
expect 0 "library $version${nl}header $version$nl" --version
IFS=. read -r major minor patch <<< "$version"
number=$((major * 1000000 + minor * 1000 + patch))
expect 0 "{\"library\":\"$version\",\"library_number\":$number,\"header\":\"$version\",\"header_number\":$number}$nl" \
    version --json

echo "== memory:"
expect 1 "" --store memory: kv get a
expect 0 "" --store memory: kv set a 1
expect 0 "5$nl" --store memory: kv incr a 5
expect 0 "" --store memory: kv list
expect 1 "" --store memory: kv del a
expect 0 "" --store memory: migrate
expect 0 "" --store=memory: kv set a 1 --ttl 1000 --kind counter
expect 1 "" kv get a --store memory:

echo "== sqlite file: set, get, del, exit codes"
expect 0 "" --store "$db" migrate
[ -f "$work/test.db" ] || report "migrate did not create the database file" migrate
expect 0 "" --store "$db" migrate
expect 0 "" --store "$db" kv set a 1
expect 0 "1$nl" --store "$db" kv get a
expect 1 "" --store "$db" kv get missing
expect 0 "" --store "$db" kv set a 2
expect 0 "2$nl" --store "$db" kv get a
expect 0 "" --store "$db" kv set b "two words"
expect 0 "two words$nl" --store "$db" kv get b
expect 0 "" --store "$db" kv del b
expect 1 "" --store "$db" kv del b
expect 1 "" --store "$db" kv get b
expect 0 "" --store "$db" kv set dash -- -ERR
expect 0 "-ERR$nl" --store "$db" kv get dash
expect 0 "" --store "$db" kv set empty ""
expect 0 "$nl" --store "$db" kv get empty
expect 0 "" --store "$db" kv set utf8 "héllo wörld ✓"
expect 0 "héllo wörld ✓$nl" --store "$db" kv get utf8
expect 0 "" --store "$db" kv set multi "line 1${nl}line${tab}2"
expect 0 "line 1${nl}line${tab}2$nl" --store "$db" kv get multi
expect 0 "" --store "$db" kv set bs 'a\b'
expect 0 'a\b'"$nl" --store "$db" kv get bs
expect_like 0 '{"version":'[1-9]*'}'"$nl" --store "$db" kv set v x --json

echo "== bytes: hex in, hex out, escapes, raw"
expect 0 "" --store "$db" --hex kv set 00ff ff00
expect 0 "ff00$nl" --store "$db" --hex --hex-out kv get 00ff
expect 0 'ff00'"$nl" --store "$db" kv get 00ff --hex --hex-out
expect 0 '\xff\x00'"$nl" --store "$db" --hex kv get 00FF
checks=$((checks + 1))
printf '\377\000' > "$work/raw.want"
if run --store "$db" --hex kv get 00ff --raw && ! cmp -s "$work/out" "$work/raw.want"; then
    report "expected the bytes ff 00 exactly" --hex kv get 00ff --raw
fi
expect 1 "" --store "$db" kv get 00ff   # the text "00ff" is another key
expect 0 "" --store "$db" --hex kv set "" 00     # the empty key
expect 0 '\x00'"$nl" --store "$db" --hex kv get ""
expect 0 "00$nl" --store "$db" --hex --hex-out kv get ""

echo "== incr"
expect 0 "1$nl" --store "$db" kv incr n
expect 0 "6$nl" --store "$db" kv incr n 5
expect 0 "-4$nl" --store "$db" kv incr n -10
expect 0 "-4$nl" --store "$db" kv get n
expect_like 0 '{"value":-3,"version":'[1-9]*'}'"$nl" --store "$db" kv incr n --json
expect 0 "" --store "$db" kv set c 41 --kind counter
expect 0 "42$nl" --store "$db" kv incr c
expect_err 2 "bitt: ?*" --store "$db" kv incr a   # "a" holds bytes
expect 0 "9223372036854775807$nl" --store "$db" kv incr big 9223372036854775807
expect_err 2 "bitt: ?*" --store "$db" kv incr big
expect 0 "9223372036854775807$nl" --store "$db" kv get big
expect 0 "-3$nl" --store "$db" kv get n
expect_err 2 "bitt: ?*" --store "$db" kv set c2 abc --kind counter
expect 1 "" --store "$db" kv get c2

echo "== json values and --json"
expect 0 "" --store "$db" kv set j '{"a": [1, 2]}' --kind json
expect 0 '{"a": [1, 2]}'"$nl" --store "$db" kv get j
expect_err 2 "bitt: ?*" --store "$db" kv set j2 '{"a":' --kind json
expect_like 0 '{"key":"j","value":{"a": \[1, 2]},"kind":"json","version":'[1-9]*',"expires_at":null}'"$nl" \
    --store "$db" kv get j --json
expect_like 0 '{"key_hex":"00ff","value_hex":"ff00","kind":"bytes",'* --store "$db" --hex kv get 00ff --json
expect_like 0 '{"key_hex":"'*'","value_hex":"'*'"'* --store "$db" kv get a --json --hex-out
expect_like 0 '{"key":"c","value":42,"kind":"counter",'* --store "$db" kv get c --json
expect_like 0 '{"key":"multi","value":"line 1\\nline\\t2","kind":"bytes",'* --store "$db" kv get multi --json
expect_like 0 '{"key":"bs","value":"a\\\\b",'* --store "$db" kv get bs --json
expect 1 "" --store "$db" kv get missing --json

echo "== TTL"
expect 0 "" --store "$db" kv set short x --ttl 1
sleep 0.05
expect 1 "" --store "$db" kv get short
expect 0 "" --store "$db" kv set long x --ttl 3600000
expect_like 0 *'"expires_at":'[1-9]*[0-9]'}'"$nl" --store "$db" kv get long --json
expect 0 "1$nl" --store "$db" kv incr tc --ttl 1
sleep 0.05
expect 1 "" --store "$db" kv get tc

echo "== list"
l="$work/list.db"
expect 0 "" --store "sqlite:$l" --hex kv set 00ff ff00
for k in a a/1 a/2 a_ ab b; do
    expect 0 "" --store "sqlite:$l" kv set "$k" "v:$k"
done
expect 0 "" --store "sqlite:$l" kv set t "x${tab}y${nl}z\\"
all="\\x00\\xff$tab\\xff\\x00${nl}a${tab}v:a${nl}a/1${tab}v:a/1${nl}a/2${tab}v:a/2${nl}"
all+="a_${tab}v:a_${nl}ab${tab}v:ab${nl}b${tab}v:b${nl}t${tab}x\\x09y\\x0az\\\\$nl"
expect 0 "$all" --store "sqlite:$l" kv list
expect 0 "a${tab}v:a${nl}a/1${tab}v:a/1${nl}a/2${tab}v:a/2${nl}a_${tab}v:a_${nl}ab${tab}v:ab$nl" \
    --store "sqlite:$l" kv list --prefix a
expect 0 "a_${tab}v:a_$nl" --store "sqlite:$l" kv list --prefix a_
expect 0 "a/1${tab}v:a/1${nl}a/2${tab}v:a/2$nl" --store "sqlite:$l" kv list --prefix a/
expect 0 "a/2${tab}v:a/2${nl}a_${tab}v:a_$nl" --store "sqlite:$l" kv list --start a/2 --end ab
expect 0 "ab${tab}v:ab${nl}a_${tab}v:a_$nl" --store "sqlite:$l" kv list --prefix a --reverse --limit 2
[[ "$err" == "cursor: "?* ]] || report "a partial page prints its cursor on stderr" kv list --limit 2
checks=$((checks + 1))
expect 0 "00ff${tab}ff00$nl" --store "sqlite:$l" --hex kv list --prefix 00 --hex-out
expect 0 "" --store "sqlite:$l" --hex kv list --prefix 0001
# Page by page with the cursor gives the whole list.
pages="" cursor="" n=0
while :; do
    if [ -z "$cursor" ]; then run --store "sqlite:$l" kv list --limit 3
    else run --store "sqlite:$l" kv list --limit 3 --cursor "$cursor"; fi
    [ "$status" = 0 ] || { report "paging" kv list --limit 3 --cursor "$cursor"; break; }
    pages+=$out
    cursor=${err#cursor: }
    n=$((n + 1))
    [ -n "$err" ] && [ $n -lt 10 ] || break
done
checks=$((checks + 1))
[ "$pages" = "$all" ] || { status=0 out=$pages err=""; report "pages with --cursor differ from the list" kv list --limit 3; }
[ $n = 3 ] || report "8 entries in pages of 3 should be 3 pages, not $n" kv list --limit 3
expect 0 "$all" --store "sqlite:$l" kv list --all --limit 2
[ -z "$err" ] || report "--all prints no cursor" kv list --all --limit 2
expect_err 2 "bitt: ?*" --store "sqlite:$l" kv list --cursor bogus
expect_like 0 '{"entries":\[{"key":"a/1","value":"v:a/1",'*'},{"key":"a/2",'*'}],"cursor":null}'"$nl" \
    --store "sqlite:$l" kv list --prefix a/ --json
expect_like 0 '{"entries":\[{"key_hex":"00ff",'*'}],"cursor":"'?*'"}'"$nl" \
    --store "sqlite:$l" kv list --limit 1 --json
expect 0 '{"entries":[],"cursor":null}'"$nl" --store memory: kv list --json

echo "== the store: BITT_STORE, --store, the default, bad URLs"
export BITT_STORE="sqlite:$work/env.db"
expect 0 "" kv set e 1
expect 0 "1$nl" --store "sqlite:$work/env.db" kv get e
expect 1 "" --store "$db" kv get e          # --store wins over BITT_STORE
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
