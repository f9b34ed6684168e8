# cli_lib.sh: the harness of the CLI tests (cli_test.sh, cli_modules_test.sh),
# sourced after they set $bitt (the executable) and $work (a scratch dir):
# run, report, and the expect_* checks, counting in $checks and $failures.
# shellcheck shell=bash
checks=0
failures=0
# In a sanitizer build, a report must not hide behind an expected status 1
# or 2: make it exit 99, and look for reports in every stderr.
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do
    export "$v=${!v:+${!v}:}exitcode=99"
done

# run ARGS...: runs bitt; sets $status, $out (stdout, exact) and $err.
# Fails (and reports) when the sanitizers reported something.
run() {
    "$bitt" "$@" > "$work/out" 2> "$work/err"
    status=$?
    out=$(tr -d '\000' < "$work/out"; echo x) # NULs cannot be in a variable
    out=${out%x}
    err=$(cat "$work/err")
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

nl=$'\n'
tab=$'\t'
