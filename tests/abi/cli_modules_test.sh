#!/usr/bin/env bash
# cli_modules_test.sh: the `bitt` command-line tool's queue, lease, outbox,
# schedule, budget and pubsub commands, end to end on SQLite files and (when
# their test servers are set) on PostgreSQL and Redis, a few on memory:
# every command and its --help, their output for people (a header, aligned
# columns, readable times and durations), --tsv and --json, exit codes (0,
# 1 absent or not granted with its reason on stderr unless --quiet, 2 error,
# 64 usage) and --hex.
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
    "queue snooze" "queue stats" "queue dead" "queue retry" "queue purge-dead" \
    "queue get" "queue cancel" "queue reschedule" "queue purge" \
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
expect_err 64 "bitt: missing argument*Try 'bitt queue snooze --help'." queue snooze t 1
expect_err 64 "bitt: unexpected argument '5'*" queue snooze t 1 tok 5
expect_err 64 "bitt: --delay must not be negative*" queue snooze t 1 tok --delay -1
expect_err 64 "bitt: unknown option '--error'*" queue snooze t 1 tok --error x
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
expect_err 2 "bitt: cron: \"often\" has 1 field, expected 5*" --store memory: schedule set k often
expect_err 2 "bitt: cron: minute field \"61\"*" --store memory: schedule set k "61 * * * *"
expect_err 64 "bitt: --max-attempts and --priority go with --topic*" schedule set k 5 --priority 1
expect_err 64 "bitt: --first-run-at does not go with*" schedule set k 5 --first-run-at 1 --first-run-in 1
expect_err 64 "bitt: missing subcommand*" schedule
expect_err 64 "bitt: --capacity is required*" budget take b --refill 1 --period 1
expect_err 64 "bitt: N must be an integer*" budget take b x --capacity 1 --refill 1 --period 1
expect_err 64 "bitt: unknown subcommand 'give'*" budget give
expect_err 64 "bitt: --count must be an integer from 1*" pubsub listen c --count 0
expect_err 64 "bitt: missing argument*" pubsub publish c
expect_err 64 "bitt: --json does not go with --tsv*" queue pop t --json --tsv
expect_err 64 "bitt: --priority must be an integer from -2147483648 to 2147483647*" \
    queue push t x --priority 2147483648
expect_err 64 "bitt: --priority must be an integer in the int64 range*" queue push t x --priority hi
expect_err 64 "bitt: ID must be an integer from 1*" queue get t 0
expect_err 64 "bitt: --kind goes with --result*" queue ack t 1 tok --kind json
expect_err 64 "bitt: unexpected argument 'b'*" queue purge a b
expect_err 64 "bitt: missing argument*Try 'bitt queue get --help'." queue get t
expect_err 64 "bitt: unknown option '--delay'*" queue cancel t 1 --delay 5
expect_err 64 "bitt: --delay must not be negative*" queue reschedule t 1 --delay -1
expect_err 2 "bitt: ?*topic*" --store memory: queue pop a b a
expect_err 64 "bitt: --raw is for 'kv get' only*" --store memory: queue stats t --raw

# queue_control BACKEND: priorities, a pop over several topics, and get,
# cancel and reschedule of a message by its id.
queue_control() {
    local qc tok
    qc=$(store "$1" queue_control)
    echo "== $1: queue control"
    expect 0 "1$nl" --store "$qc" queue push low l
    expect 0 "2$nl" --store "$qc" queue push high h --priority 5
    expect 0 "3$nl" --store "$qc" queue push low later --delay 3600000 --priority 9
    expect_like 0 "2${tab}?*${tab}1${tab}[1-9]*${tab}h${nl}1${tab}?*${tab}1${tab}[1-9]*${tab}l$nl" \
        --store "$qc" queue pop low high --limit 5 --tsv
    tok=$(field 2 1)
    expect_absent "" "bitt: no message ready on topics low, ..." --store "$qc" queue pop low high
    expect_like 0 "ID  STATE *PRIORITY  ATTEMPTS  DUE_AT *LAST_ERROR  PAYLOAD${nl}3   delayed  9 *0 *$iso  - *later$nl" \
        --store "$qc" queue get low 3
    expect_like 0 "2${tab}leased${tab}5${tab}1${tab}[1-9]*${tab}-${tab}h$nl" --store "$qc" queue get high 2 --tsv
    expect_json 0 'd["state"] == "leased" and d["priority"] == 5 and "token" not in d and d["topic"] == "high"' \
        --store "$qc" queue get high 2
    expect_absent "" "bitt: no message 2 on topic low" --store "$qc" queue get low 2
    expect_absent "" "bitt: no pending or delayed message 2 on topic high" \
        --store "$qc" queue reschedule high 2
    expect 0 '{"rescheduled":true}'"$nl" --store "$qc" queue reschedule low 3 --json
    expect_like 0 "3${tab}?*${tab}1${tab}[1-9]*${tab}later$nl" --store "$qc" queue pop low --tsv
    expect 0 "" --store "$qc" queue cancel high 2
    expect_err 2 "bitt: ?*" --store "$qc" queue ack high 2 "$tok"   # cancelled under its lease
    expect 1 '{"cancelled":false}'"$nl" --store "$qc" queue cancel high 2 --json -q
    expect_absent "" "bitt: no live message 2 on topic high" --store "$qc" queue cancel high 2
    expect 0 "0${tab}0${tab}0${tab}0${tab}0${tab}0$nl" --store "$qc" queue stats high --tsv
}

# queue_retention BACKEND: done messages kept with their result, stats of
# done, and purge, on a store that keeps them an hour.
queue_retention() {
    local qr
    qr=$(store "$1" retention "queue_done_retention=3600000&queue_dead_retention=3600000")
    echo "== $1: queue retention"
    expect 0 "1$nl" --store "$qr" queue push t a
    expect_like 0 "1${tab}?*${tab}1${tab}[1-9]*${tab}a$nl" --store "$qr" queue pop t --tsv
    expect 0 '{"acked":true}'"$nl" --store "$qr" queue ack t 1 "$(field 2)" --result '{"n": 1}' \
        --kind json --json
    expect_json 0 'd["state"] == "done" and d["result"] == {"n": 1} and d["result_kind"] == "json" and d["done_at"] > 0 and "token" not in d' \
        --store "$qr" queue get t 1
    expect_like 0 "1${tab}done${tab}0${tab}1${tab}*${tab}a$nl" --store "$qr" queue get t 1 --tsv
    expect 0 "0${tab}0${tab}0${tab}0${tab}0${tab}1$nl" --store "$qr" queue stats t --tsv
    expect_json 0 'd["done"] == 1 and d["pending"] == 0' --store "$qr" queue stats t
    expect 0 "0$nl" --store "$qr" queue purge t
    expect 0 '{"count":0}'"$nl" --store "$qr" queue purge --json
    expect 0 "2$nl" --store "$qr" queue push t b
    expect_like 0 "2${tab}?*${tab}1${tab}[1-9]*${tab}b$nl" --store "$qr" queue pop t --tsv
    expect 0 "" --store "$qr" queue ack t 2 "$(field 2)"
    expect_json 0 'd["state"] == "done" and d["result"] is None and d["result_kind"] is None' \
        --store "$qr" queue get t 2
}

# modules BACKEND: every module's commands on fresh stores of BACKEND.
modules() {
    local b=$1 q l o s bu ps
    # A short backoff, so that a lease that runs out is retried at once.
    q=$(store "$b" queue "queue_backoff=10")
    l=$(store "$b" lease)
    o=$(store "$b" outbox)
    s=$(store "$b" schedule)
    bu=$(store "$b" budget)
    ps=$(store "$b" pubsub)

    echo "== $b: queue"
    expect 0 "1$nl" --store "$q" queue push t a
    expect 0 "2$nl" --store "$q" queue push t b --delay 3600000
    expect 0 "3$nl" --store "$q" queue push t c --dedup d1
    expect_absent "3$nl" "bitt: not enqueued: message 3 on topic t holds dedup key d1" \
        --store "$q" queue push t c2 --dedup d1
    expect 1 '{"id":3,"created":false}'"$nl" --store "$q" queue push t c3 --dedup d1 --json -q
    expect_like 0 "PENDING  DELAYED  PROCESSING  DEAD  OLDEST_PENDING_AT         DONE${nl}2        1        0           0     $iso  0$nl" \
        --store "$q" queue stats t
    expect_like 0 "2${tab}1${tab}0${tab}0${tab}[1-9]*${tab}0$nl" --store "$q" queue stats t --tsv
    expect_json 0 'd["pending"] == 2 and d["delayed"] == 1 and d["oldest_pending_at"] > 0' \
        --store "$q" queue stats t
    expect 0 "PENDING  DELAYED  PROCESSING  DEAD  OLDEST_PENDING_AT  DONE${nl}0        0        0           0     -                  0$nl" \
        --store "$q" queue stats other
    expect 0 "0${tab}0${tab}0${tab}0${tab}0${tab}0$nl" --store "$q" queue stats other --tsv
    expect_json 0 'd == {"pending": 0, "delayed": 0, "processing": 0, "dead": 0, "oldest_pending_at": None, "done": 0}' \
        --store "$q" queue stats other
    expect_like 0 "1${tab}?*${tab}1${tab}[1-9]*${tab}a${nl}3${tab}?*${tab}1${tab}[1-9]*${tab}c$nl" \
        --store "$q" queue pop t --limit 10 --tsv
    tok1=$(field 2 1)
    tok3=$(field 2 2)
    check "tokens differ" [ -n "$tok1" ] && [ "$tok1" != "$tok3" ]
    expect_absent "" "bitt: no message ready on topic t" --store "$q" queue pop t
    expect_absent '{"messages":[]}'"$nl" "bitt: no message ready on topic t" --store "$q" queue pop t --json
    expect 0 "PENDING  DELAYED  PROCESSING  DEAD  OLDEST_PENDING_AT  DONE${nl}0        1        2           0     -                  0$nl" \
        --store "$q" queue stats t
    expect 0 "" --store "$q" queue ack t 1 "$tok1"
    expect_err 2 "bitt: ?*" --store "$q" queue ack t 1 "$tok1"       # acked already
    expect_err 2 "bitt: ?*" --store "$q" queue ack t 3 not-the-token --json
    expect 0 '{"extended":true}'"$nl" --store "$q" queue extend t 3 "$tok3" 60000 --json
    expect 0 '{"nacked":true}'"$nl" --store "$q" queue nack t 3 "$tok3" --error "it broke" --delay 0 --json
    expect_err 2 "bitt: ?*" --store "$q" queue nack t 3 "$tok3"          # a stale token
    expect_like 0 "ID  TOKEN *ATTEMPTS  DUE_AT *PAYLOAD${nl}3   ?*  2         $iso  c$nl" \
        --store "$q" queue pop t --lease 1
    expect_like 0 '{"messages":\[{"id":3,"topic":"t","payload":"c","kind":"bytes","token":"'?*'","attempts":3,"max_attempts":3,"last_error":"'?*'"'*'}]}'"$nl" \
        --store "$q" queue pop t --wait 2000 --json  # its lease ran out: attempt 3
    tok3=${out#*\"token\":\"}
    tok3=${tok3%%\"*}
    expect 0 "" --store "$q" queue nack t 3 "$tok3" --error "last straw"
    expect_like 0 "ID  ATTEMPTS  FAILED_AT                 LAST_ERROR  PAYLOAD${nl}3   3         $iso  last straw  c$nl" \
        --store "$q" queue dead t
    expect_like 0 "3${tab}3${tab}[1-9]*${tab}last straw${tab}c$nl" --store "$q" queue dead t --tsv
    expect_like 0 '{"messages":\[{"id":3,"topic":"t","payload":"c",'*'"last_error":"last straw",'*'"failed_at":'[1-9]*'}]}'"$nl" \
        --store "$q" queue dead t --json
    expect_json 0 'd["messages"][0]["failed_at"] >= d["messages"][0]["created_at"] > 0' \
        --store "$q" queue dead t
    expect 0 "" --store "$q" queue dead t --after 3
    expect 0 "0${tab}1${tab}0${tab}1${tab}0${tab}0$nl" --store "$q" queue stats t --tsv
    expect 0 "1$nl" --store "$q" queue retry t 3
    expect_absent "0$nl" "bitt: no dead letter 3 on topic t" --store "$q" queue retry t 3
    expect_like 0 "3${tab}?*${tab}1${tab}[1-9]*${tab}c$nl" --store "$q" queue pop t --tsv  # attempts start again
    expect 0 '{"acked":true}'"$nl" --store "$q" queue ack t 3 "$(field 2)" --json
    expect_like 0 [1-9]*"$nl" --store "$q" queue push t c --dedup d1    # the dedup key is free again
    # snooze: given back unseen, so a max-attempts 1 message keeps its attempt
    expect_like 0 [1-9]*"$nl" --store "$q" queue push sz s --max-attempts 1
    for _ in 1 2; do
        expect_like 0 [1-9]*"${tab}"?*"${tab}1${tab}"[1-9]*"${tab}s$nl" --store "$q" queue pop sz --tsv
        sid=$(field 1)
        stok=$(field 2)
        expect 0 '{"snoozed":true}'"$nl" --store "$q" queue snooze sz "$sid" "$stok" --json
    done
    expect_err 2 "bitt: ?*" --store "$q" queue snooze sz "$sid" "$stok"   # given back already
    expect_like 0 "1${tab}0${tab}0${tab}0${tab}[1-9]*${tab}0$nl" --store "$q" queue stats sz --tsv
    expect_like 0 [1-9]*"${tab}"?*"${tab}1${tab}"[1-9]*"${tab}s$nl" --store "$q" queue pop sz --tsv
    expect 0 "" --store "$q" queue snooze sz "$(field 1)" "$(field 2)" --delay 3600000
    expect 0 "0${tab}1${tab}0${tab}0${tab}0${tab}0$nl" --store "$q" queue stats sz --tsv
    expect_absent "" "bitt: no message ready on topic sz" --store "$q" queue pop sz
    queue_control "$b"
    queue_retention "$b"
    for p in x y z; do
        expect_like 0 [0-9]*"$nl" --store "$q" queue push dl "$p" --max-attempts 1
        expect_like 0 [0-9]*"${tab}"?*"${tab}1${tab}"[1-9]*"${tab}$p$nl" --store "$q" queue pop dl --tsv
        expect 0 "" --store "$q" queue nack dl "$(field 1)" "$(field 2)" --error "no $p"
    done
    expect_like 0 [0-9]*"${tab}1${tab}"[1-9]*"${tab}no x${tab}x${nl}"[0-9]*"${tab}1${tab}"*"${tab}no y${tab}y$nl" \
        --store "$q" queue dead dl --limit 2 --tsv
    after=${err#cursor: }
    checks=$((checks + 1))
    [[ "$err" == "cursor: "[0-9]* ]] || report "a full page of dead letters prints its cursor" queue dead dl --limit 2
    expect_like 0 [0-9]*"${tab}1${tab}"[1-9]*"${tab}no z${tab}z$nl" --store "$q" queue dead dl --after "$after" --tsv
    expect_absent "0$nl" "bitt: no dead letter 1 on topic dl" --store "$q" queue purge-dead dl 1
    expect 0 "3$nl" --store "$q" queue purge-dead dl
    expect 0 '{"count":0}'"$nl" --store "$q" queue purge-dead dl --json
    expect 0 "" --store "$q" queue dead dl
    # Bytes and kinds: hex in, hex out, escapes, JSON.
    expect_like 0 [1-9]*"$nl" --store "$q" --hex queue push h 00ff0a5c
    id=${out%$nl}
    expect_like 0 "$id${tab}?*${tab}1${tab}[1-9]*${tab}"'\\x00\\xff\\x0a\\\\'"$nl" --store "$q" queue pop h --lease 1 --tsv
    expect_like 0 "$id${tab}?*${tab}2${tab}[1-9]*${tab}00ff0a5c$nl" --store "$q" queue pop h --hex-out --wait 2000 --tsv
    expect_like 0 [1-9]*"$nl" --store "$q" queue push j '{"n": [1, 2]}' --kind json
    expect_like 0 '{"messages":\[{"id":'"${out%$nl}"',"topic":"j","payload":{"n": \[1, 2]},"kind":"json",'* \
        --store "$q" queue pop j --json
    expect_like 0 [1-9]*"$nl" --store "$q" queue push k 42 --kind counter
    expect_json 0 'd["messages"][0]["payload"] == 42 and d["messages"][0]["kind"] == "counter"' \
        --store "$q" queue pop k
    expect_err 2 "bitt: ?*" --store "$q" queue push j '{"n":' --kind json
    expect_err 2 "bitt: ?*" --store "$q" queue push "" x       # a name is 1 to 255 bytes
    expect_like 0 [1-9]*"$nl" --store "$q" queue push dash -- -x
    expect_like 0 "${out%$nl}${tab}?*${tab}1${tab}[1-9]*${tab}-x$nl" --store "$q" queue pop dash --tsv
    # --wait: nothing comes, the pop gives up.
    expect_absent "" "bitt: no message ready on topic empty" --store "$q" queue pop empty --wait 100

    echo "== $b: lease"
    expect_like 0 "NAME  OWNER  EPOCH  EXPIRES_AT${nl}job   alice  1      $iso$nl" \
        --store "$l" lease acquire job alice --ttl 60000
    expect_absent "" "bitt: lease job is held by alice (epoch 1) until $iso" --store "$l" lease acquire job bob
    expect_absent "" "bitt: lease job is held by alice (epoch 1) until $iso" \
        --store "$l" lease acquire job alice   # also the same owner
    expect_json 1 'd["name"] == "job" and d["acquired"] is False and d["owner"] == "alice" and d["epoch"] == 1 and d["expires_at"] > 0' \
        --store "$l" lease acquire job bob -q
    expect_like 0 "job${tab}alice${tab}1${tab}[1-9]*$nl" --store "$l" lease get job --tsv
    expect_like 0 '{"name":"job","owner":"alice","epoch":1,"expires_at":'[1-9]*'}'"$nl" --store "$l" lease get job --json
    expect_like 0 "NAME  OWNER  EPOCH  EXPIRES_AT${nl}job   alice  1      $iso$nl" \
        --store "$l" lease renew job alice 1 --ttl 60000
    expect_json 0 'sorted(d) == ["epoch", "expires_at", "name", "owner"] and d["epoch"] == 1' \
        --store "$l" lease renew job alice 1
    expect_err 2 "bitt: ?*" --store "$l" lease renew job alice 2
    expect_err 2 "bitt: ?*" --store "$l" lease renew job bob 1
    expect_err 2 "bitt: ?*" --store "$l" lease release job bob 1
    expect 0 '{"released":true}'"$nl" --store "$l" lease release job alice 1 --json
    expect_absent "" "bitt: lease job is free (no live holder)" --store "$l" lease get job
    expect_absent "null$nl" "bitt: lease job is free*" --store "$l" lease get job --json
    expect_err 2 "bitt: ?*" --store "$l" lease release job alice 1
    expect_json 0 'd["acquired"] is True and d["owner"] == "bob" and d["epoch"] == 2' \
        --store "$l" lease acquire job bob --ttl 50
    sleep 0.2
    expect_absent "" "bitt: lease job is free*" --store "$l" lease get job   # expired
    expect_err 2 "bitt: ?*" --store "$l" lease renew job bob 2
    expect_like 0 "job${tab}alice${tab}3${tab}[1-9]*$nl" --store "$l" lease acquire job alice --tsv
    expect_absent "" "bitt: lease other is free*" --store "$l" lease get other
    expect_err 2 "bitt: ?*" --store "$l" lease acquire job ""

    echo "== $b: outbox"
    expect 0 "1$nl" --store "$o" outbox append s e1
    expect 0 '{"seq":2}'"$nl" --store "$o" outbox append s '{"x": 1}' --kind json --json
    expect 0 "3$nl" --store "$o" outbox append s "e 3"
    expect 0 "1$nl" --store "$o" outbox append other o1
    expect 0 "SEQ  ATTEMPTS  DUE_AT  LAST_ERROR  EVENT${nl}1    0         -       -           e1${nl}2    0         -       -           {\"x\": 1}${nl}3    0         -       -           e 3$nl" \
        --store "$o" outbox pending s
    expect 0 "1${tab}0${tab}0${tab}${tab}e1$nl" --store "$o" outbox pending s --limit 1 --tsv
    expect 0 "" --store "$o" outbox fail s 1 --error "no route" --next-at 5
    expect_absent "" "bitt: event 99 is not pending on stream s" --store "$o" outbox fail s 99
    expect_absent '{"recorded":false}'"$nl" "bitt: event 99 is not pending on stream s" \
        --store "$o" outbox fail s 99 --json
    expect 0 "SEQ  ATTEMPTS  DUE_AT                    LAST_ERROR  EVENT${nl}1    1         1970-01-01T00:00:00.005Z  no route    e1$nl" \
        --store "$o" outbox pending s --limit 1
    expect_like 0 '{"events":\[{"id":1,"topic":"s","event":"e1","kind":"bytes","attempts":1,"last_error":"no route",'*'"due_at":5,'*'},{"id":2,"topic":"s","event":{"x": 1},"kind":"json",'*'}]}'"$nl" \
        --store "$o" outbox pending s --limit 2 --json
    expect 0 '{"parked":true}'"$nl" --store "$o" outbox park s 2 --reason invalid --error "bad shape" --json
    expect 0 "" --store "$o" outbox park s 3
    expect_absent "" "bitt: event 2 is not pending on stream s" --store "$o" outbox park s 2
    expect_like 0 "SEQ  REASON   FAILED_AT                 LAST_ERROR  EVENT${nl}2    invalid  $iso  bad shape   {\"x\": 1}${nl}3    poison   $iso  -           e 3$nl" \
        --store "$o" outbox parked s
    expect_like 0 "2${tab}invalid${tab}[1-9]*${tab}bad shape${tab}{\"x\": 1}${nl}3${tab}poison${tab}[1-9]*${tab}${tab}e 3$nl" \
        --store "$o" outbox parked s --tsv
    expect_like 0 "3${tab}poison${tab}[1-9]*${tab}${tab}e 3$nl" --store "$o" outbox parked s --reason poison --tsv
    expect_like 0 '{"events":\[{"id":2,'*'"park_reason":"invalid"}]}'"$nl" --store "$o" outbox parked s --reason invalid --json
    expect 0 "PENDING  PARKED${nl}1        2$nl" --store "$o" outbox counts s
    expect 0 "1${tab}2$nl" --store "$o" outbox counts s --tsv
    expect 0 '{"pending":1,"parked":2}'"$nl" --store "$o" outbox counts s --json
    expect 0 "1$nl" --store "$o" outbox retry s 2
    expect_absent "0$nl" "bitt: 1 of 1 events were not parked on stream s" --store "$o" outbox retry s 2
    expect 0 "1${tab}1${tab}5${tab}no route${tab}e1${nl}2${tab}0${tab}0${tab}${tab}{\"x\": 1}$nl" \
        --store "$o" outbox pending s --tsv  # in order
    expect 0 "1$nl" --store "$o" outbox discard s 3
    expect_absent "0$nl" "bitt: 1 of 1 events were not parked on stream s" --store "$o" outbox discard s 3
    expect 0 "2$nl" --store "$o" outbox ack s 1 2
    expect_absent "0$nl" "bitt: 1 of 1 events were not pending on stream s" --store "$o" outbox ack s 1
    expect 1 "1$nl" --store "$o" outbox ack other 1 9 -q
    expect_absent '{"count":0}'"$nl" "bitt: 2 of 2 events were not pending on stream other" \
        --store "$o" outbox ack other 1 9 --json
    expect 0 "PENDING  PARKED${nl}0        0$nl" --store "$o" outbox counts s
    expect_like 0 [1-9]*"$nl" --store "$o" outbox append s e4       # sequence numbers keep rising
    seq=${out%$nl}
    check "the sequence number rises past 3" [ "$seq" -gt 3 ]
    expect 0 "" --store "$o" outbox park s "$seq"
    expect 0 "1$nl" --store "$o" outbox retry s
    expect 0 "" --store "$o" outbox park s "$seq"
    expect 0 "1$nl" --store "$o" outbox discard s
    expect 0 "" --store "$o" outbox pending other
    expect 0 "" --store "$o" outbox pending none
    expect 0 '{"events":[]}'"$nl" --store "$o" outbox parked none --json
    expect_err 2 "bitt: ?*" --store "$o" outbox append s '{' --kind json
    # Times at the edges, for people: a leap day, the last year of four
    # digits and the first of five, the last time before the end of time,
    # and the end of time itself (never); for scripts the exact integers.
    local times=(951782400000 253402300799999 253402300800000 9223372036854775806
        9223372036854775807) i
    for i in 1 2 3 4 5; do
        expect 0 "$i$nl" --store "$o" outbox append edges x
        expect 0 "" --store "$o" outbox fail edges "$i" --next-at "${times[i - 1]}"
    done
    expect 0 "SEQ  ATTEMPTS  DUE_AT                          LAST_ERROR  EVENT
1    1         2000-02-29T00:00:00.000Z        -           x
2    1         9999-12-31T23:59:59.999Z        -           x
3    1         +10000-01-01T00:00:00.000Z      -           x
4    1         +292278994-08-17T07:12:55.806Z  -           x
5    1         never                           -           x$nl" --store "$o" outbox pending edges
    expect_json 0 '[e["due_at"] for e in d["events"]] == [951782400000, 253402300799999, 253402300800000, 9223372036854775806, 9223372036854775807]' \
        --store "$o" outbox pending edges

    echo "== $b: schedule"
    expect 0 "" --store "$s" schedule set report/daily 60000 hello --first-run-in 0
    expect 0 "" --store "$s" schedule set report/weekly 3600000 --first-run-in 3600000
    expect 0 "" --store "$s" schedule set zz 5400500 '{"a": 1}' --kind json
    expect_like 0 "KEY            EVERY      TOPIC  NEXT_RUN_AT               PAYLOAD${nl}report/daily   1m         -      $iso  hello${nl}report/weekly  1h         -      $iso  ${nl}zz             1h30m0.5s  -      $iso  {\"a\": 1}$nl" \
        --store "$s" schedule list
    expect_like 0 "report/daily${tab}60000${tab}-${tab}[1-9]*${tab}hello${nl}report/weekly${tab}3600000${tab}-${tab}[1-9]*${tab}${nl}zz${tab}5400500${tab}-${tab}[1-9]*${tab}{\"a\": 1}$nl" \
        --store "$s" schedule list --tsv
    expect_like 0 "KEY           OCCURRENCE                TOPIC  NEXT_RUN_AT               PAYLOAD${nl}report/daily  $iso  -      $iso  hello$nl" \
        --store "$s" schedule claim
    expect_absent "" "bitt: no schedule under prefix report/ is due" --store "$s" schedule claim --prefix report/
    expect_like 0 "report/daily${tab}60000${tab}-${tab}[1-9]*${tab}hello$nl" --store "$s" schedule get report/daily --tsv
    expect_absent "" "bitt: schedule not found: nope" --store "$s" schedule get nope
    expect_absent "null$nl" "bitt: schedule not found: nope" --store "$s" schedule get nope --json
    expect_like 0 '{"schedules":\[{"key":"report/daily","interval":60000,"cron":null,"topic":null,"next_run_at":'[1-9]*',"payload":"hello","kind":"bytes"},'*'{"key":"zz",'*'"payload":{"a": 1},"kind":"json"}]}'"$nl" \
        --store "$s" schedule list --json
    expect 0 '{"key":"due","interval":3600000,"cron":null,"topic":null,"next_run_at":1,"payload":"x","kind":"bytes"}'"$nl" \
        --store "$s" schedule set due 3600000 x --first-run-at 1 --json
    expect_json 0 'd["key"] == "due" and d["occurrence"] == 1 and d["next_run_at"] > 1 and d["payload"] == "x" and d["message_id"] == 0' \
        --store "$s" schedule claim
    expect 0 "" --store "$s" schedule set due2 3600000 y --first-run-at 1000
    expect_like 0 "due2${tab}1000${tab}-${tab}[1-9]*${tab}y$nl" --store "$s" schedule claim --prefix due2 --tsv
    occurrence=$(field 2)
    next=$(field 4)
    check "a claim moves the next run past the occurrence" [ "$next" -gt "$occurrence" ]
    expect_absent "" "bitt: no schedule is due" --store "$s" schedule claim
    expect_absent "null$nl" "bitt: no schedule is due" --store "$s" schedule claim --json
    expect 0 "" --store "$s" schedule del due
    expect_absent "" "bitt: schedule not found: due" --store "$s" schedule del due
    expect_absent '{"deleted":false}'"$nl" "bitt: schedule not found: due" --store "$s" schedule del due --json
    expect 0 '{"deleted":true}'"$nl" --store "$s" schedule del due2 --json
    expect_err 2 "bitt: ?*" --store "$s" schedule set bad 0
    # The longest interval, 2^40 ms, for people and for scripts.
    expect 0 "" --store "$s" schedule set long 1099511627776 --first-run-at 1
    expect 0 "KEY   EVERY                TOPIC  NEXT_RUN_AT               PAYLOAD${nl}long  12725d19h53m47.776s  -      1970-01-01T00:00:00.001Z  $nl" \
        --store "$s" schedule get long
    expect 0 "long${tab}1099511627776${tab}-${tab}1${tab}$nl" --store "$s" schedule get long --tsv
    # Cron, and a topic: each claim enqueues its occurrence's message.
    expect 0 "" --store "$s" schedule set nightly "0 3 * * *" job --topic jobs --priority 2 \
        --max-attempts 5 --first-run-at 1
    expect_like 0 "nightly${tab}0 3 \* \* \*${tab}jobs${tab}1${tab}job$nl" --store "$s" schedule get nightly --tsv
    expect_json 0 'd["cron"] == "0 3 * * *" and d["interval"] == 0 and d["topic"] == "jobs" and d["next_run_at"] == 1' \
        --store "$s" schedule set nightly "0 3 * * *" job --topic jobs --priority 2 --max-attempts 5
    expect 0 "" --store "$s" schedule set nightly "0 3 * * *" job --topic jobs --first-run-at 1
    expect_json 0 'd["key"] == "nightly" and d["occurrence"] == 1 and d["message_id"] >= 1 and d["next_run_at"] % 86400000 == 10800000' \
        --store "$s" schedule claim --prefix nightly
    mid=${out#*\"message_id\":}
    mid=${mid%%,*}
    expect_json 0 'd["payload"] == "job" and d["state"] == "pending" and d["max_attempts"] == 3 and d["priority"] == 0' \
        --store "$s" queue get jobs "$mid"

    echo "== $b: budget"
    local budget=(--capacity 2 --refill 1 --period 60000)
    expect 0 "RESULT  WAIT${nl}taken   -$nl" --store "$bu" budget take api "${budget[@]}"
    expect 0 '{"taken":true,"wait_ms":0}'"$nl" --store "$bu" budget take api "${budget[@]}" --json
    expect_like 1 "RESULT  WAIT${nl}denied  [1-9]*s$nl" --store "$bu" budget take api "${budget[@]}"
    checks=$((checks + 1))
    [[ "$err" == "bitt: budget api denied 1 token(s): enough in "[1-9]*s ]] ||
        report "the reason of a denial on stderr" budget take api
    expect_like 1 "denied${tab}[1-9]*$nl" --store "$bu" budget take api "${budget[@]}" --tsv --quiet
    check "--quiet says nothing" [ -z "$err" ]
    check "the wait is at most one period" [ "$(field 2)" -le 60000 ]
    expect_json 1 'd["taken"] is False and 0 < d["wait_ms"] <= 60000' --store "$bu" budget take api "${budget[@]}"
    expect 0 "taken${tab}0$nl" --store "$bu" budget take other 2 "${budget[@]}" --tsv
    expect_err 2 "bitt: ?*" --store "$bu" budget take big 3 "${budget[@]}"     # more than capacity
    expect_err 2 "bitt: ?*" --store "$bu" budget take zero --capacity 0 --refill 1 --period 1

    echo "== $b: pubsub"
    expect 0 "" --store "$ps" pubsub publish news "nobody listens"
    expect 0 '{"published":true}'"$nl" --store "$ps" pubsub publish news "nobody listens" --json
    expect_absent "" "bitt: 0 of 1 messages came on channel news in 100ms" \
        --store "$ps" pubsub listen news --count 1 --timeout 100
    expect 0 "" --store "$ps" pubsub listen news --timeout 100
    # A listener in another process: publish "ping" until it hears one, then
    # two more; it must print them in order, each once, after the pings,
    # under one header.
    "$bitt" --store "$ps" pubsub listen news --timeout 20000 > "$scratch/listen.out" 2> "$scratch/listen.err" &
    local listener=$!
    for _ in $(seq 100); do
        "$bitt" --store "$ps" pubsub publish news ping
        sleep 0.05
        [ -s "$scratch/listen.out" ] && break
    done
    "$bitt" --store "$ps" pubsub publish news "one"
    "$bitt" --store "$ps" --hex pubsub publish news 74776f0a   # "two\n"
    for _ in $(seq 100); do
        grep -q 'two' "$scratch/listen.out" && break
        sleep 0.05
    done
    kill "$listener" 2> /dev/null
    wait "$listener" 2> /dev/null
    checks=$((checks + 1))
    local heard t='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
    heard=$(cat "$scratch/listen.out")
    if ! [[ "$heard" =~ ^CREATED_AT\ {16}DATA$nl($t\ \ ping$nl)+$t\ \ one$nl$t\ \ two\\x0a$ ]] ||
        [ -s "$scratch/listen.err" ]; then
        status=- out=$heard err=$(cat "$scratch/listen.err")
        report "the listener heard pings, then one and two, under a header" pubsub listen news
    fi
    # --json and --count in another process: JSON Lines.
    "$bitt" --store "$ps" pubsub listen news --json --count 2 --timeout 20000 > "$scratch/listen.out" 2>&1 &
    listener=$!
    for _ in $(seq 100); do
        "$bitt" --store "$ps" pubsub publish news ping
        sleep 0.05
        [ -s "$scratch/listen.out" ] && break
    done
    "$bitt" --store "$ps" pubsub publish news last
    wait "$listener"
    local st=$?
    checks=$((checks + 1))
    heard=$(cat "$scratch/listen.out")
    if [ $st != 0 ] || ! python3 -c '
import json, sys
lines = sys.stdin.read().split("\n")
ms = [json.loads(x) for x in lines[:-1]]
assert lines[-1] == "" and len(ms) == 2, lines
assert ms[0]["topic"] == "news" and ms[0]["data"] == "ping" and ms[0]["kind"] == "bytes"
assert all(m["id"] > 0 and m["created_at"] > 0 for m in ms)
' < "$scratch/listen.out"; then
        status=$st out=$heard err=""
        report "listen --json --count 2" pubsub listen news --json --count 2
    fi
}

on_backends modules

echo "== SIGINT and SIGTERM end a wait"
# interrupted SIGNAL ARGS...: runs bitt ARGS in the background, sends SIGNAL once
# the tool has blocked it (its thread takes the signals from then on: no sleep
# decides when), and leaves the exit status, stdout and stderr in status, out, err.
interrupted() {
    local sig=$1 pid mask
    shift
    "$bitt" "$@" > "$work/int.out" 2> "$work/int.err" &
    pid=$!
    for _ in $(seq 2000); do
        mask=$(awk '/^SigBlk/{print $2}' "/proc/$pid/status" 2> /dev/null)
        [ -n "$mask" ] && [ $((0x$mask & 2)) -ne 0 ] && break
        sleep 0.01
    done
    kill -s "$sig" "$pid"
    wait "$pid"
    status=$?
    out=$(cat "$work/int.out")
    err=$(cat "$work/int.err")
}
is=sqlite:$work/interrupt.db
checks=$((checks + 1))
interrupted INT --store "$is" queue pop jobs --wait 3600000
[ "$status" = 130 ] && [ -z "$out" ] && [ "$err" = "bitt: interrupted; no message was taken from topic jobs" ] ||
    report "Ctrl-C during queue pop --wait: exit 130, nothing taken, said so" queue pop jobs --wait 3600000
checks=$((checks + 1))
interrupted TERM --store "$is" -q queue pop jobs --wait 3600000
[ "$status" = 143 ] && [ -z "$err" ] || report "SIGTERM with --quiet: exit 143, silent" queue pop jobs -q
checks=$((checks + 1))
interrupted TERM --store "$is" pubsub listen news
[ "$status" = 143 ] && [ -z "$err" ] || report "SIGTERM stops a listener quietly: exit 143" pubsub listen news
expect 0 "1$nl" --store "$is" queue push jobs a
expect_json 0 'len(d["messages"]) == 1 and d["messages"][0]["attempts"] == 1' \
    --store "$is" queue pop jobs --json

echo "== memory:"
expect 0 "1$nl" --store memory: queue push t a
expect_absent "" "bitt: no message ready on topic t" --store memory: queue pop t
expect 0 "" --store memory: schedule list
expect 0 "" --store memory: pubsub publish news x
expect_absent "" "bitt: 0 of 1 messages came on channel news in 50ms" \
    --store memory: pubsub listen news --count 1 --timeout 50

echo "$checks checks, $failures failed"
[ $failures = 0 ] && rm -rf "$work"
[ $failures = 0 ]
