#!/usr/bin/env bash
# cli_modules_test.sh: the `bitt` command-line tool's queue, lease, outbox,
# schedule, budget and pubsub commands, end to end on SQLite files (and a
# few on memory:): every command and its --help, their output, exit codes
# (0, 1 absent or not granted, 2 error, 64 usage), --json and --hex.
#
#   cli_modules_test.sh BITT_EXECUTABLE WORK_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ $# -eq 2 ] || { echo "usage: $0 BITT_EXECUTABLE WORK_DIR"; exit 2; }
bitt=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 2
cd "$work" || exit 2
unset BITT_STORE
# shellcheck source=cli_lib.sh
source "$here/cli_lib.sh"

# field N: the Nth TAB-separated field of line LINE (default 1) of $out.
field() {
    sed -n "${2:-1}p" <<< "$out" | cut -f"$1"
}

# check WHAT CONDITION...: one more check, reported when CONDITION fails.
check() {
    local what=$1
    shift
    checks=$((checks + 1))
    "$@" || report "$what" "(check)"
}

echo "== help, on every command"
for cmd in queue "queue push" "queue pop" "queue ack" "queue nack" "queue extend" \
    "queue stats" "queue dead" "queue retry" "queue purge-dead" \
    lease "lease acquire" "lease renew" "lease release" "lease get" \
    outbox "outbox append" "outbox pending" "outbox ack" "outbox fail" "outbox park" \
    "outbox parked" "outbox retry" "outbox discard" "outbox counts" \
    schedule "schedule set" "schedule claim" "schedule list" "schedule get" "schedule del" \
    budget "budget take" pubsub "pubsub publish" "pubsub listen"; do
    # shellcheck disable=SC2086 # the command is words
    expect_help $cmd --help
    # shellcheck disable=SC2086
    expect_help $cmd -h
done
expect_help help queue push
expect_help queue push TOPIC PAYLOAD --help
expect_help --store memory: lease --help
run --help
[[ "$out" == *"queue push"*"lease acquire"*"outbox"*"schedule"*"budget take"*"pubsub"* ]] ||
    report "bitt --help lists the module commands" --help

echo "== usage errors exit 64 with a hint"
expect_err 64 "bitt: missing subcommand*Try 'bitt queue --help'." queue
expect_err 64 "bitt: unknown subcommand 'shove'*" queue shove
expect_err 64 "bitt: missing argument*Try 'bitt queue push --help'." queue push t
expect_err 64 "bitt: --delay must not be negative*" queue push t x --delay -1
expect_err 64 "bitt: --delay must be an integer*" queue push t x --delay soon
expect_err 64 "bitt: --max-attempts must be an integer*" queue push t x --max-attempts -2
expect_err 64 "bitt: --kind must be bytes, json or counter*" queue push t x --kind text
expect_err 64 "bitt: PAYLOAD is not hex*" --hex queue push t xyz
expect_err 64 "bitt: --limit must be at least 1*" queue pop t --limit 0
expect_err 64 "bitt: unknown option '--ttl'*" queue pop t --ttl 5
expect_err 64 "bitt: ID must be an integer from 1*" queue ack t 0 tok
expect_err 64 "bitt: ID must be an integer from 1*" queue ack t abc tok
expect_err 64 "bitt: missing argument*" queue ack t 1
expect_err 64 "bitt: missing argument*" queue extend t 1 tok
expect_err 64 "bitt: --after must be an integer*" queue dead t --after x
expect_err 64 "bitt: unexpected argument '2'*" queue retry t 1 2
expect_err 64 "bitt: missing subcommand*Try 'bitt lease --help'." lease
expect_err 64 "bitt: missing argument*" lease acquire name
expect_err 64 "bitt: EPOCH must be an integer*" lease renew name owner 0
expect_err 64 "bitt: --ttl must not be negative*" lease acquire name owner --ttl -1
expect_err 64 "bitt: unknown option '--ttl'*" lease release name owner 1 --ttl 5
expect_err 64 "bitt: missing argument*" outbox ack s
expect_err 64 "bitt: SEQ must be an integer*" outbox ack s x
expect_err 64 "bitt: --reason must be poison or invalid*" outbox park s 1 --reason bad
expect_err 64 "bitt: unknown option '--reason'*" outbox pending s --reason poison
expect_err 64 "bitt: INTERVAL_MS must be an integer*" schedule set k often
expect_err 64 "bitt: --first-run-at does not go with*" schedule set k 5 --first-run-at 1 --first-run-in 1
expect_err 64 "bitt: missing subcommand*" schedule
expect_err 64 "bitt: --capacity is required*" budget take b --refill 1 --period 1
expect_err 64 "bitt: N must be an integer*" budget take b x --capacity 1 --refill 1 --period 1
expect_err 64 "bitt: unknown subcommand 'give'*" budget give
expect_err 64 "bitt: --count must be an integer from 1*" pubsub listen c --count 0
expect_err 64 "bitt: missing argument*" pubsub publish c

echo "== queue"
# A short backoff, so that a lease that runs out is retried at once.
q="sqlite:$work/queue.db?queue_backoff=10"
expect 0 "1$nl" --store "$q" queue push t a
expect 0 "2$nl" --store "$q" queue push t b --delay 3600000
expect 0 "3$nl" --store "$q" queue push t c --dedup d1
expect 1 "3$nl" --store "$q" queue push t c2 --dedup d1
expect 1 '{"id":3,"created":false}'"$nl" --store "$q" queue push t c3 --dedup d1 --json
expect_like 0 "pending 2${nl}delayed 1${nl}processing 0${nl}dead 0${nl}oldest_pending_at "[1-9]*"$nl" \
    --store "$q" queue stats t
expect 0 "pending 0${nl}delayed 0${nl}processing 0${nl}dead 0${nl}oldest_pending_at 0$nl" \
    --store "$q" queue stats other
expect_like 0 "1${tab}?*${tab}1${tab}a${nl}3${tab}?*${tab}1${tab}c$nl" --store "$q" queue pop t --limit 10
tok1=$(field 2 1)
tok3=$(field 2 2)
check "tokens differ" [ -n "$tok1" ] && [ "$tok1" != "$tok3" ]
expect 1 "" --store "$q" queue pop t
expect 1 '{"messages":[]}'"$nl" --store "$q" queue pop t --json
expect_like 0 "pending 0${nl}delayed 1${nl}processing 2$nl"* --store "$q" queue stats t
expect 0 "" --store "$q" queue ack t 1 "$tok1"
expect_err 2 "bitt: ?*" --store "$q" queue ack t 1 "$tok1"       # acked already
expect_err 2 "bitt: ?*" --store "$q" queue ack t 3 not-the-token
expect 0 "" --store "$q" queue extend t 3 "$tok3" 60000
expect 0 "" --store "$q" queue nack t 3 "$tok3" --error "it broke" --delay 0
expect_err 2 "bitt: ?*" --store "$q" queue nack t 3 "$tok3"          # a stale token
expect_like 0 "3${tab}?*${tab}2${tab}c$nl" --store "$q" queue pop t --lease 1
expect_like 0 '{"messages":\[{"id":3,"topic":"t","payload":"c","kind":"bytes","token":"'?*'","attempts":3,"max_attempts":3,"last_error":"'?*'"'*'}]}'"$nl" \
    --store "$q" queue pop t --wait 2000 --json  # its lease ran out: attempt 3
tok3=${out#*\"token\":\"}
tok3=${tok3%%\"*}
expect 0 "" --store "$q" queue nack t 3 "$tok3" --error "last straw"
expect_like 0 "3${tab}3${tab}[1-9]*${tab}last straw${tab}c$nl" --store "$q" queue dead t
expect_like 0 '{"messages":\[{"id":3,"topic":"t","payload":"c",'*'"last_error":"last straw",'*'"failed_at":'[1-9]*'}]}'"$nl" \
    --store "$q" queue dead t --json
expect 0 "" --store "$q" queue dead t --after 3
expect_like 0 *"dead 1${nl}"* --store "$q" queue stats t
expect 0 "1$nl" --store "$q" queue retry t 3
expect 1 "0$nl" --store "$q" queue retry t 3
expect_like 0 "3${tab}?*${tab}1${tab}c$nl" --store "$q" queue pop t   # attempts start again
expect 0 "" --store "$q" queue ack t 3 "$(field 2)"
expect 0 "4$nl" --store "$q" queue push t c --dedup d1    # the dedup key is free again
for p in x y z; do
    expect_like 0 [0-9]*"$nl" --store "$q" queue push dl "$p" --max-attempts 1
    expect_like 0 [0-9]*"${tab}"?*"${tab}1${tab}$p$nl" --store "$q" queue pop dl
    expect 0 "" --store "$q" queue nack dl "$(field 1)" "$(field 2)" --error "no $p"
done
expect_like 0 [0-9]*"${tab}1${tab}"[1-9]*"${tab}no x${tab}x${nl}"[0-9]*"${tab}1${tab}"*"${tab}no y${tab}y$nl" \
    --store "$q" queue dead dl --limit 2
after=${err#cursor: }
checks=$((checks + 1))
[[ "$err" == "cursor: "[0-9]* ]] || report "a full page of dead letters prints its cursor" queue dead dl --limit 2
expect_like 0 [0-9]*"${tab}1${tab}"[1-9]*"${tab}no z${tab}z$nl" --store "$q" queue dead dl --after "$after"
expect 1 "0$nl" --store "$q" queue purge-dead dl 1
expect 0 "3$nl" --store "$q" queue purge-dead dl
expect 0 '{"count":0}'"$nl" --store "$q" queue purge-dead dl --json
expect 0 "" --store "$q" queue dead dl
# Bytes and kinds: hex in, hex out, escapes, JSON.
expect_like 0 [1-9]*"$nl" --store "$q" --hex queue push h 00ff0a5c
id=${out%$nl}
expect_like 0 "$id${tab}?*${tab}1${tab}"'\\x00\\xff\\x0a\\\\'"$nl" --store "$q" queue pop h --lease 1
expect_like 0 "$id${tab}?*${tab}2${tab}00ff0a5c$nl" --store "$q" queue pop h --hex-out --wait 2000
expect_like 0 [1-9]*"$nl" --store "$q" queue push j '{"n": [1, 2]}' --kind json
expect_like 0 '{"messages":\[{"id":'"${out%$nl}"',"topic":"j","payload":{"n": \[1, 2]},"kind":"json",'* \
    --store "$q" queue pop j --json
expect_like 0 [1-9]*"$nl" --store "$q" queue push k 42 --kind counter
expect_like 0 '{"messages":\[{"id":'"${out%$nl}"',"topic":"k","payload":42,"kind":"counter",'* \
    --store "$q" queue pop k --json
expect_err 2 "bitt: ?*" --store "$q" queue push j '{"n":' --kind json
expect_err 2 "bitt: ?*" --store "$q" queue push "" x       # a name is 1 to 255 bytes
expect_like 0 [1-9]*"$nl" --store "$q" queue push dash -- -x
expect_like 0 "${out%$nl}${tab}?*${tab}1${tab}-x$nl" --store "$q" queue pop dash
# --wait: nothing comes, the pop gives up.
expect 1 "" --store "$q" queue pop empty --wait 100
# memory: a fresh private store each time.
expect 0 "1$nl" --store memory: queue push t a
expect 1 "" --store memory: queue pop t

echo "== lease"
l="sqlite:$work/lease.db"
expect_like 0 "1${tab}"[1-9]*"$nl" --store "$l" lease acquire job alice --ttl 60000
expect 1 "" --store "$l" lease acquire job bob
expect 1 "" --store "$l" lease acquire job alice   # also the same owner
expect_like 0 "alice${tab}1${tab}"[1-9]*"$nl" --store "$l" lease get job
expect_like 0 '{"owner":"alice","epoch":1,"expires_at":'[1-9]*'}'"$nl" --store "$l" lease get job --json
expect_like 0 [1-9]*"$nl" --store "$l" lease renew job alice 1 --ttl 60000
expect_like 0 '{"expires_at":'[1-9]*'}'"$nl" --store "$l" lease renew job alice 1 --json
expect_err 2 "bitt: ?*" --store "$l" lease renew job alice 2
expect_err 2 "bitt: ?*" --store "$l" lease renew job bob 1
expect_err 2 "bitt: ?*" --store "$l" lease release job bob 1
expect 0 "" --store "$l" lease release job alice 1
expect 1 "" --store "$l" lease get job
expect_err 2 "bitt: ?*" --store "$l" lease release job alice 1
expect_like 0 '{"epoch":2,"expires_at":'[1-9]*'}'"$nl" --store "$l" lease acquire job bob --ttl 50 --json
sleep 0.2
expect 1 "" --store "$l" lease get job                # expired
expect_err 2 "bitt: ?*" --store "$l" lease renew job bob 2
expect_like 0 "3${tab}"[1-9]*"$nl" --store "$l" lease acquire job alice
expect 1 "" --store "$l" lease get other
expect_err 2 "bitt: ?*" --store "$l" lease acquire job ""

echo "== outbox"
o="sqlite:$work/outbox.db"
expect 0 "1$nl" --store "$o" outbox append s e1
expect 0 '{"seq":2}'"$nl" --store "$o" outbox append s '{"x": 1}' --kind json --json
expect 0 "3$nl" --store "$o" outbox append s "e 3"
expect 0 "1$nl" --store "$o" outbox append other o1
expect 0 "1${tab}0${tab}e1${nl}2${tab}0${tab}{\"x\": 1}${nl}3${tab}0${tab}e 3$nl" --store "$o" outbox pending s
expect 0 "1${tab}0${tab}e1$nl" --store "$o" outbox pending s --limit 1
expect 0 "" --store "$o" outbox fail s 1 --error "no route" --next-at 5
expect 1 "" --store "$o" outbox fail s 99
expect_like 0 '{"events":\[{"id":1,"topic":"s","event":"e1","kind":"bytes","attempts":1,"last_error":"no route",'*'"due_at":5,'*'},{"id":2,"topic":"s","event":{"x": 1},"kind":"json",'*'}]}'"$nl" \
    --store "$o" outbox pending s --limit 2 --json
expect 0 "" --store "$o" outbox park s 2 --reason invalid --error "bad shape"
expect 0 "" --store "$o" outbox park s 3
expect 1 "" --store "$o" outbox park s 2           # not pending any more
expect 0 "2${tab}invalid${tab}bad shape${tab}{\"x\": 1}${nl}3${tab}poison${tab}${tab}e 3$nl" \
    --store "$o" outbox parked s
expect 0 "3${tab}poison${tab}${tab}e 3$nl" --store "$o" outbox parked s --reason poison
expect_like 0 '{"events":\[{"id":2,'*'"park_reason":"invalid"}]}'"$nl" --store "$o" outbox parked s --reason invalid --json
expect 0 "pending 1${nl}parked 2$nl" --store "$o" outbox counts s
expect 0 '{"pending":1,"parked":2}'"$nl" --store "$o" outbox counts s --json
expect 0 "1$nl" --store "$o" outbox retry s 2
expect 1 "0$nl" --store "$o" outbox retry s 2
expect 0 "1${tab}1${tab}e1${nl}2${tab}0${tab}{\"x\": 1}$nl" --store "$o" outbox pending s  # in order
expect 0 "1$nl" --store "$o" outbox discard s 3
expect 1 "0$nl" --store "$o" outbox discard s 3
expect 0 "2$nl" --store "$o" outbox ack s 1 2
expect 1 "0$nl" --store "$o" outbox ack s 1
expect 0 "pending 0${nl}parked 0$nl" --store "$o" outbox counts s
expect 0 "4$nl" --store "$o" outbox append s e4       # sequence numbers keep rising
expect 0 "" --store "$o" outbox park s 4
expect 0 "1$nl" --store "$o" outbox retry s
expect 0 "" --store "$o" outbox park s 4
expect 0 "1$nl" --store "$o" outbox discard s
expect 0 "1${tab}0${tab}o1$nl" --store "$o" outbox pending other
expect 0 "" --store "$o" outbox pending none
expect 0 '{"events":[]}'"$nl" --store "$o" outbox parked none --json
expect_err 2 "bitt: ?*" --store "$o" outbox append s '{' --kind json

echo "== schedule"
s="sqlite:$work/schedule.db"
expect 0 "" --store "$s" schedule set report/daily 60000 hello --first-run-in 0
expect 0 "" --store "$s" schedule set report/weekly 3600000 --first-run-in 3600000
expect 0 "" --store "$s" schedule set zz 600000 '{"a": 1}' --kind json
expect_like 0 "report/daily${tab}60000${tab}"[1-9]*"${tab}hello${nl}report/weekly${tab}3600000${tab}"[1-9]*"${tab}${nl}zz${tab}600000${tab}"[1-9]*"${tab}{\"a\": 1}$nl" \
    --store "$s" schedule list
expect_like 0 "report/daily${tab}"[1-9]*"${tab}hello$nl" --store "$s" schedule claim
occurrence=$(field 2)
expect 1 "" --store "$s" schedule claim --prefix report/
expect_like 0 "report/daily${tab}60000${tab}"[1-9]*"${tab}hello$nl" --store "$s" schedule get report/daily
check "a claim moves the next run past the occurrence" [ "$(field 3)" -gt "$occurrence" ]
expect 1 "" --store "$s" schedule get nope
expect_like 0 '{"schedules":\[{"key":"report/daily","interval":60000,"next_run_at":'[1-9]*',"payload":"hello","kind":"bytes"},'*'{"key":"zz",'*'"payload":{"a": 1},"kind":"json"}]}'"$nl" \
    --store "$s" schedule list --json
expect 0 "" --store "$s" schedule set due 5000 x --first-run-at 1
expect_like 0 '{"key":"due","interval":5000,"next_run_at":'[1-9]*',"occurrence":1,"payload":"x","kind":"bytes"}'"$nl" \
    --store "$s" schedule claim --json
expect 0 "" --store "$s" schedule del due
expect 1 "" --store "$s" schedule del due
expect_err 2 "bitt: ?*" --store "$s" schedule set bad 0
expect 0 "" --store memory: schedule list

echo "== budget"
b="sqlite:$work/budget.db"
budget=(--capacity 2 --refill 1 --period 60000)
expect 0 "taken$nl" --store "$b" budget take api "${budget[@]}"
expect 0 '{"taken":true,"wait_ms":0}'"$nl" --store "$b" budget take api "${budget[@]}" --json
expect_like 1 "denied${tab}"[1-9]*"$nl" --store "$b" budget take api "${budget[@]}"
check "the wait is at most one period" [ "$(field 2)" -le 60000 ]
expect_like 1 '{"taken":false,"wait_ms":'[1-9]*'}'"$nl" --store "$b" budget take api "${budget[@]}" --json
expect 0 "taken$nl" --store "$b" budget take other 2 "${budget[@]}"
expect_err 2 "bitt: ?*" --store "$b" budget take big 3 "${budget[@]}"     # more than capacity
expect_err 2 "bitt: ?*" --store "$b" budget take zero --capacity 0 --refill 1 --period 1

echo "== pubsub"
ps="sqlite:$work/pubsub.db"
expect 0 "" --store "$ps" pubsub publish news "nobody listens"
expect 1 "" --store "$ps" pubsub listen news --count 1 --timeout 100
expect 0 "" --store "$ps" pubsub listen news --timeout 100
expect 0 "" --store memory: pubsub publish news x
expect 1 "" --store memory: pubsub listen news --count 1 --timeout 50
# A listener in another process: publish "ping" until it hears one, then
# two more; it must print them in order, each once, after the pings.
"$bitt" --store "$ps" pubsub listen news --timeout 20000 > "$work/listen.out" 2> "$work/listen.err" &
listener=$!
for _ in $(seq 100); do
    "$bitt" --store "$ps" pubsub publish news ping
    sleep 0.05
    [ -s "$work/listen.out" ] && break
done
"$bitt" --store "$ps" pubsub publish news "one"
"$bitt" --store "$ps" --hex pubsub publish news 74776f0a   # "two\n"
for _ in $(seq 100); do
    grep -q 'two' "$work/listen.out" && break
    sleep 0.05
done
kill "$listener" 2> /dev/null
wait "$listener" 2> /dev/null
checks=$((checks + 1))
heard=$(cat "$work/listen.out")
if ! [[ "$heard" =~ ^(ping$nl)+one${nl}two'\x0a'$ ]] || [ -s "$work/listen.err" ]; then
    status=- out=$heard err=$(cat "$work/listen.err")
    report "the listener heard pings, then one and two" pubsub listen news
fi
# --json and --count in another process.
"$bitt" --store "$ps" pubsub listen news --json --count 2 --timeout 20000 > "$work/listen.out" 2>&1 &
listener=$!
for _ in $(seq 100); do
    "$bitt" --store "$ps" pubsub publish news ping
    sleep 0.05
    [ -s "$work/listen.out" ] && break
done
"$bitt" --store "$ps" pubsub publish news last
wait "$listener"
st=$?
checks=$((checks + 1))
heard=$(cat "$work/listen.out")
if [ $st != 0 ] || ! [[ "$heard" == '{"id":'[1-9]*',"topic":"news","data":"ping","kind":"bytes",'*'}'$nl'{"id":'*'"data":"'*'"'* ]]; then
    status=$st out=$heard err=""
    report "listen --json --count 2" pubsub listen news --json --count 2
fi

echo "$checks checks, $failures failed"
[ $failures = 0 ] && rm -rf "$work"
[ $failures = 0 ]
