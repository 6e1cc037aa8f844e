# shellcheck shell=bash
# Sourced by scripts/test.sh, scripts/integration.sh, scripts/tsan.sh and scripts/demo.sh: the
# throw-away services of one run (scripts/services.sh in fresh temporary directories, one set or
# one per shard, and Apache Kafka from scripts/kafka.sh, all stopped once whatever happens) and
# the test-case counts of a doctest suite's log, and the summary line that ends a run.
# The caller sets SCRIPTS (the scripts/ folder), may set SERVICES_LOG (a file for services.sh's
# output; unset, it goes to the terminal) and defines note (its own tagged log line).

SVC_DIR=""   # the services directory start_services made last; "" when none run
SVC_DIRS=()  # every services directory made and not stopped yet (stop_services stops them all)
SVC_STARTING=()  # pids of `services start` (or `kafka.sh start`) still running in the background
KAFKA_DIRS=()    # every Apache Kafka directory (scripts/kafka.sh) made and not stopped yet

# services ACTION DIR: scripts/services.sh ACTION DIR, its output to SERVICES_LOG if set.
services() {
    if [[ -n "${SERVICES_LOG:-}" ]]; then
        "$SCRIPTS/services.sh" "$@" >>"$SERVICES_LOG" 2>&1
    else
        "$SCRIPTS/services.sh" "$@"
    fi
}

# apache_kafka ACTION DIR [ARGS...]: scripts/kafka.sh, its output to SERVICES_LOG if set.
# (Not `>>/dev/stderr`: when our stderr is a file opened without O_APPEND, our own later writes
# would overwrite what kafka.sh appended.)
apache_kafka() {
    if [[ -n "${SERVICES_LOG:-}" ]]; then
        "$SCRIPTS/kafka.sh" "$@" >>"$SERVICES_LOG" 2>&1
    else
        "$SCRIPTS/kafka.sh" "$@"
    fi
}

# new_services_dir NAME: make a new directory ${TMPDIR:-/tmp}/NAME.XXXXXX for services, remember
# it for stop_services and set SVC_DIR to it.
new_services_dir() {
    SVC_DIR="$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")"
    SVC_DIRS+=("$SVC_DIR")
}

# start_services NAME: start the services in a new directory (new_services_dir NAME) and
# source their environment (services.env). Variables set before the call (EXO_SERVICES_KAFKA=0,
# TSAN_OPTIONS...) reach services.sh. Returns services.sh's status.
start_services() {
    new_services_dir "$1"
    services start "$SVC_DIR" || return
    # shellcheck source=/dev/null
    source "$SVC_DIR/services.env"
}

# start_services_sets NAME COUNT: start COUNT sets of services at once, each in a new directory
# (new_services_dir NAME-<k>), without sourcing any environment: each user sources its own
# set's DIR/services.env. Sets SHARD_SVC_DIRS to the directories, in order. Returns 1 if any
# set failed to start (the others still run; stop_services stops them all).
start_services_sets() {
    local name="$1" count="$2" k rc=0
    SHARD_SVC_DIRS=()
    SVC_STARTING=()
    for ((k = 1; k <= count; k++)); do
        new_services_dir "$name-$k"
        SHARD_SVC_DIRS+=("$SVC_DIR")
        # services.sh itself in the background (not through `services`, a subshell), so that
        # stop_services' SIGTERM reaches it
        "$SCRIPTS/services.sh" start "$SVC_DIR" >>"${SERVICES_LOG:-/dev/stderr}" 2>&1 &
        SVC_STARTING+=("$!")
    done
    for k in "${!SVC_STARTING[@]}"; do
        wait "${SVC_STARTING[$k]}" || {
            rc=1
            note "ERROR: the services in ${SHARD_SVC_DIRS[$k]} did not start${SERVICES_LOG:+ (see $SERVICES_LOG)}"
        }
    done
    SVC_STARTING=()
    return "$rc"
}

# start_apache_kafka NAME [scripts/kafka.sh start options, e.g. --nodes 3]: start Apache Kafka
# in a new directory ${TMPDIR:-/tmp}/NAME.XXXXXX (stop_services stops it) and source its
# kafka.env: EXO_KAFKA_BOOTSTRAP is then the real broker's, EXO_KAFKA_DIR its directory.
# kafka.sh's output goes to SERVICES_LOG if set. Returns kafka.sh's status.
start_apache_kafka() {
    local name="$1" dir rc=0
    shift
    dir="$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")"
    KAFKA_DIRS+=("$dir")
    # In the background and waited for, so that stop_services' SIGTERM reaches it (kafka.sh
    # then stops the nodes it started): the script itself, not a subshell running it.
    if [[ -n "${SERVICES_LOG:-}" ]]; then
        "$SCRIPTS/kafka.sh" start "$dir" "$@" >>"$SERVICES_LOG" 2>&1 &
    else
        "$SCRIPTS/kafka.sh" start "$dir" "$@" &
    fi
    SVC_STARTING=("$!")
    wait "$!" || rc=$?
    SVC_STARTING=()
    ((rc == 0)) || return "$rc"
    # shellcheck source=/dev/null
    source "$dir/kafka.env"
}

# stop_services: stop every set started (and every Apache Kafka), once each (an EXIT trap may
# call it again), all at once. Always returns 0: a set that would not stop is reported.
stop_services() {
    local k
    local -a dirs=("${SVC_DIRS[@]}") kafka_dirs=("${KAFKA_DIRS[@]}") pids=()
    SVC_DIRS=()
    KAFKA_DIRS=()
    SVC_DIR=""
    # A start still under way (interrupted) is stopped first: on SIGTERM services.sh stops
    # what it started, and a stop must not race it.
    for k in "${SVC_STARTING[@]}"; do kill -TERM "$k" 2>/dev/null || true; done
    for k in "${SVC_STARTING[@]}"; do wait "$k" 2>/dev/null || true; done
    SVC_STARTING=()
    for k in "${!dirs[@]}"; do
        services stop "${dirs[$k]}" &
        pids+=("$!")
    done
    for k in "${!kafka_dirs[@]}"; do
        apache_kafka stop "${kafka_dirs[$k]}" &
        pids+=("$!")
        dirs+=("${kafka_dirs[$k]}")
    done
    for k in "${!pids[@]}"; do
        wait "${pids[$k]}" ||
            note "WARNING: stopping the services in ${dirs[$k]} failed${SERVICES_LOG:+ (see $SERVICES_LOG)}"
    done
    return 0
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

# exit_counted RC: the end of a run that counts test cases in PASSED and FAILED: a run that
# failed without a failed test case counts 1 failed, one with a failed case exits 1; prints
# the last line, `N passed, N failed`, and exits.
exit_counted() {
    local rc="$1"
    if ((rc != 0 && FAILED == 0)); then FAILED=1; fi
    if ((FAILED > 0 && rc == 0)); then rc=1; fi
    printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
    exit "$rc"
}
