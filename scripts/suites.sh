# shellcheck shell=bash
# Sourced by scripts/test.sh, scripts/tsan.sh and scripts/demo.sh: the throw-away services of
# one run (scripts/services.sh in a fresh temporary directory, stopped once whatever happens)
# and the test-case counts of a doctest suite's log.
# The caller sets SCRIPTS (the scripts/ folder), may set SERVICES_LOG (a file for services.sh's
# output; unset, it goes to the terminal) and defines note (its own tagged log line).

SVC_DIR=""  # the running services' directory; "" when none run

# services ACTION DIR: scripts/services.sh ACTION DIR, its output to SERVICES_LOG if set.
services() {
    if [[ -n "${SERVICES_LOG:-}" ]]; then
        "$SCRIPTS/services.sh" "$@" >>"$SERVICES_LOG" 2>&1
    else
        "$SCRIPTS/services.sh" "$@"
    fi
}

# start_services NAME: start the services in a new directory ${TMPDIR:-/tmp}/NAME.XXXXXX and
# source their environment (services.env). Variables set before the call (EXO_SERVICES_KAFKA=0,
# TSAN_OPTIONS...) reach services.sh. Returns services.sh's status.
start_services() {
    SVC_DIR="$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")"
    services start "$SVC_DIR" || return
    # shellcheck source=/dev/null
    source "$SVC_DIR/services.env"
}

# stop_services: stop them, once (an EXIT trap may call it again).
stop_services() {
    [[ -n "$SVC_DIR" ]] || return 0
    local dir="$SVC_DIR"
    SVC_DIR=""
    services stop "$dir" ||
        note "WARNING: stopping the services in $dir failed${SERVICES_LOG:+ (see $SERVICES_LOG)}"
}

# doctest_counts LOG: "PASSED FAILED", the test cases of the last doctest summary line in LOG;
# returns 1 (printing nothing) when there is none: the suite crashed, timed out or never ran.
doctest_counts() {
    local line
    line="$(sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -a '\[doctest\] test cases:' | tail -n 1 || true)"
    [[ "$line" =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ passed\ *\|\ *([0-9]+)\ failed ]] ||
        return 1
    printf '%s %s\n' "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"
}
