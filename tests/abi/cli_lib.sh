# cli_lib.sh: the harness of the CLI tests (cli_test.sh, cli_modules_test.sh),
# sourced after they set $bitt (the executable) and $work (a scratch dir):
# run, report, the expect_* checks, counting in $checks and $failures, and
# the stores of the backends the tests run on.
# shellcheck shell=bash
checks=0
failures=0
# In a sanitizer build, a report must not hide behind an expected status 1
# or 2: make it exit 99, and look for reports in every stderr.
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do
    export "$v=${!v:+${!v}:}exitcode=99"
done

# run ARGS...: runs bitt; sets $status, $out (stdout, exact) and $err, and
# leaves stdout in $scratch/out. Fails (and reports) when the sanitizers
# reported something.
scratch=$work
run() {
    "$bitt" "$@" > "$scratch/out" 2> "$scratch/err"
    status=$?
    out=$(tr -d '\000' < "$scratch/out"; echo x) # NULs cannot be in a variable
    out=${out%x}
    err=$(cat "$scratch/err")
    if [[ "$err" == *Sanitizer* || "$err" == *"runtime error"* ]]; then
        report "a sanitizer report" "$@"
        return 1
    fi
}

report() { # report WHAT ARGS...
    local what=$1
    shift
    failures=$((failures + 1))
    echo "FAIL: bitt $*"
    echo "    $what"
    echo "    status: $status"
    echo "    stdout: $(printf '%q' "$out")"
    echo "    stderr: $(printf '%q' "$err")"
}

# expect STATUS STDOUT ARGS...: the exact exit status and stdout.
expect() {
    local want_status=$1 want_out=$2
    shift 2
    checks=$((checks + 1))
    run "$@" || return 0
    if [ "$status" != "$want_status" ]; then
        report "expected status $want_status" "$@"
    elif [ "$out" != "$want_out" ]; then
        report "expected stdout $(printf '%q' "$want_out")" "$@"
    elif [ "$want_status" = 0 ] && [ -n "$err" ] && [[ "$err" != cursor:* ]]; then
        report "expected nothing on stderr" "$@"
    fi
}

# expect_err STATUS STDERR_PATTERN ARGS...: a failure with a message.
expect_err() {
    local want_status=$1 pattern=$2
    shift 2
    checks=$((checks + 1))
    run "$@" || return 0
    if [ "$status" != "$want_status" ]; then
        report "expected status $want_status" "$@"
    elif [[ "$err" != $pattern ]]; then
        report "expected stderr like '$pattern'" "$@"
    elif [ -n "$out" ]; then
        report "expected nothing on stdout" "$@"
    fi
}

# expect_like STATUS GLOB ARGS...: the exit status, and stdout matching a
# bash pattern: * and ? match, and a literal [ or \ is written \[ or \\.
expect_like() {
    local want_status=$1 pattern=$2
    shift 2
    checks=$((checks + 1))
    run "$@" || return 0
    if [ "$status" != "$want_status" ]; then
        report "expected status $want_status" "$@"
    elif [[ "$out" != $pattern ]]; then
        report "expected stdout like $(printf '%q' "$pattern")" "$@"
    fi
}

# expect_help ARGS...: usage on stdout, status 0, nothing on stderr.
expect_help() {
    checks=$((checks + 1))
    run "$@" || return 0
    if [ "$status" != 0 ] || [[ "$out" != Usage:* ]] || [ -n "$err" ]; then
        report "expected the usage on stdout and status 0" "$@"
    fi
}

# expect_absent STDOUT STDERR_PATTERN ARGS...: exit 1 with this stdout and
# a one-line reason like STDERR_PATTERN on stderr; then the same with
# --quiet: the same stdout, nothing on stderr.
expect_absent() {
    local want_out=$1 pattern=$2
    shift 2
    checks=$((checks + 2))
    run "$@" || return 0
    if [ "$status" != 1 ]; then
        report "expected status 1" "$@"
    elif [ "$out" != "$want_out" ]; then
        report "expected stdout $(printf '%q' "$want_out")" "$@"
    elif [[ "$err" != $pattern ]] || [[ "$err" == *"$nl"* ]]; then
        report "expected one line on stderr like '$pattern'" "$@"
    fi
    run "$@" --quiet || return 0
    if [ "$status" != 1 ] || [ "$out" != "$want_out" ] || [ -n "$err" ]; then
        report "expected status 1, the same stdout and nothing on stderr" "$@" --quiet
    fi
}

# expect_json STATUS PYTHON_EXPR ARGS...: the exit status, and stdout one
# line of JSON (parsed by Python: integers exact) for which PYTHON_EXPR, on
# the document d, is true.
expect_json() {
    local want_status=$1 expr=$2
    shift 2
    checks=$((checks + 1))
    run "$@" --json || return 0
    if [ "$status" != "$want_status" ]; then
        report "expected status $want_status" "$@" --json
        return 0
    fi
    local why
    why=$(printf '%s' "$out" | python3 -c '
import json, sys
out = sys.stdin.read()
if not out.endswith("\n") or "\n" in out[:-1]:
    sys.exit("not one line")
try:
    d = json.loads(out)
except ValueError as e:
    sys.exit("not JSON: %s" % e)
if not eval(sys.argv[1], {"d": d}):
    sys.exit("false: " + sys.argv[1])
' "$expr" 2>&1) || report "expected JSON: $why" "$@" --json
}

# Times for people: ISO 8601 UTC with milliseconds.
iso='[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9].[0-9][0-9][0-9]Z'

# url_with URL OPTION: URL with one more query option (a=1).
url_with() {
    if [[ $1 == *"?"* ]]; then printf '%s&%s' "$1" "$2"; else printf '%s?%s' "$1" "$2"; fi
}

# store BACKEND NAME [OPTIONS]: the URL of a fresh store NAME on BACKEND,
# with URL options (a=1&b=2). On a server, each run of the tests has schemas
# (prefixes) of its own, so its stores start empty.
run_id="$(date +%s)_$$"
store() {
    local url
    case $1 in
    sqlite) url="sqlite:$work/$2.db" ;;
    postgres) url=$(url_with "$BITT_TEST_POSTGRES_URL" "schema=cli_${run_id}_$2") ;;
    redis) url=$(url_with "$BITT_TEST_REDIS_URL" "prefix=cli_${run_id}_$2") ;;
    esac
    [ -z "${3:-}" ] && printf '%s' "$url" || url_with "$url" "$3"
}

# The backends to run on: sqlite always; postgres and redis when the test
# servers' URLs are set (scripts/test starts them) and this build has the
# backend.
backends=(sqlite)
for b in postgres redis; do
    v="BITT_TEST_${b^^}_URL"
    if [ -z "${!v:-}" ]; then
        echo "== $b: skipped ($v is not set)"
    elif "$bitt" --store "$(store "$b" probe)" kv get - 2>&1 | grep -q 'unknown scheme'; then
        echo "== $b: skipped (this build has no $b backend)"
    else
        backends+=("$b")
    fi
done

# on_backends FUNCTION: FUNCTION BACKEND for every backend, all at once (a
# server store is slow to open, one process after another), each in a
# subshell with a scratch dir of its own; then their reports in order, and
# their checks and failures added up.
on_backends() {
    local fn=$1 b pids=() c f
    for b in "${backends[@]}"; do
        mkdir -p "$work/$b.scratch" || exit 2
        (
            scratch="$work/$b.scratch" checks=0 failures=0
            "$fn" "$b" > "$work/$b.log" 2>&1
            echo "$checks $failures" > "$work/$b.count"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    for b in "${backends[@]}"; do
        cat "$work/$b.log"
        read -r c f < "$work/$b.count" || { c=1 f=1; echo "FAIL: the $b run did not finish"; }
        checks=$((checks + c))
        failures=$((failures + f))
    done
}

nl=$'\n'
tab=$'\t'
