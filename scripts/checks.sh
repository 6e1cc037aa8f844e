# shellcheck shell=bash
# Sourced by scripts/deploy-check.sh and scripts/image-test.sh: checks that print one line
# each when they pass and their output when they fail, counted in PASSED and FAILED.
# The caller sets CHECK_PREFIX (the tag of its lines) and CHECK_WORK (a directory for output),
# and may define check_failed_hook (run after a failure's output, e.g. to show a log).

PASSED=0
FAILED=0

note() { printf '[%s] %s\n' "$CHECK_PREFIX" "$*"; }

# check NAME CMD...: run CMD (a function may set globals) with its output kept.
check() {
    local name="$1" started=$SECONDS
    shift
    if "$@" >"$CHECK_WORK/check.out" 2>&1; then
        PASSED=$((PASSED + 1))
        note "ok    $name ($((SECONDS - started)) s)"
        return 0
    fi
    FAILED=$((FAILED + 1))
    note "FAIL  $name"
    sed 's/^/    /' "$CHECK_WORK/check.out"
    if declare -F check_failed_hook >/dev/null; then check_failed_hook; fi
    return 1
}

# poll SECONDS PID LOG OUT CMD...: run CMD (its output to OUT) every second until it succeeds.
# Fails, printing OUT and the end of LOG (the log of process PID), once SECONDS have passed or
# PID has exited.
poll() {
    local limit="$1" pid="$2" log="$3" out="$4"
    shift 4
    local deadline=$((SECONDS + limit))
    until "$@" >"$out" 2>&1; do
        if ((SECONDS >= deadline)) || ! kill -0 "$pid" 2>/dev/null; then
            cat "$out"
            kill -0 "$pid" 2>/dev/null || echo "(process $pid has exited)"
            echo "---- the last lines of $log ----"
            tail -n 30 "$log"
            return 1
        fi
        sleep 1
    done
}

# free_port: a TCP port of 127.0.0.1 nothing listens on now.
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# checks_exit RC: print the last line, `N passed, N failed`, and exit with RC, or 1 if a check
# failed (a run that stopped early, RC not 0, counts as one failed check if none did).
checks_exit() {
    local rc="$1"
    if ((rc != 0 && FAILED == 0)); then FAILED=1; fi
    printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
    ((FAILED == 0)) || rc=1
    exit "$rc"
}
