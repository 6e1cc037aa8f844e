#!/usr/bin/env bash
# THE run command (README): installs the Debian packages, builds, starts throw-away Redis and
# PostgreSQL (scripts/services.sh) in a temporary directory, applies the migrations, runs the
# `exo` daemon with config/exo.yaml (its Kafka is an embedded mock cluster), produces
# ${DEMO_COUNT:-2000} payment events with duplicates, lets `exo demo-check` compare the ledger
# balances with what was expected, stops the daemon with SIGTERM and cleans everything up.
# With `--kafka apache` the same demo runs against a real one-node Apache Kafka started by
# scripts/kafka.sh (Java and Maven; its jars are fetched once) with config/apache-kafka.yaml;
# the topics are created first, as on a production cluster.
#
#   scripts/demo.sh            DEMO_COUNT=20000 scripts/demo.sh
#   scripts/demo.sh --kafka apache        EXO_KAFKA_VERSION=4.1.1 scripts/demo.sh --kafka apache
#
# Exit status: demo-check's (non-zero if a balance is wrong); 1 if the check passed but the
# daemon did not exit 0 on SIGTERM. The daemon's log is kept in build/demo-daemon.log.
#
# Environment: DEMO_COUNT (events, default 2000), EXO_BUILD_DIR (default <repo>/build),
# EXO_DEMO_CONFIG (default <repo>/config/exo.yaml, or config/apache-kafka.yaml with --kafka
# apache), EXO_KAFKA_VERSION (the Apache Kafka release, default scripts/kafka.sh's).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$REPO_ROOT/scripts"
export EXO_BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
EXO="$EXO_BUILD_DIR/exo"
KAFKA=mock
while (($# > 0)); do
    case "$1" in
        --kafka) KAFKA="${2:-}"; shift 2 || true ;;
        --kafka=*) KAFKA="${1#*=}"; shift ;;
        *)
            printf '[demo] ERROR: unknown argument %s (usage: scripts/demo.sh [--kafka mock|apache])\n' "$1" >&2
            exit 2
            ;;
    esac
done
case "$KAFKA" in
    mock) DEFAULT_CONFIG="$REPO_ROOT/config/exo.yaml" ;;
    apache) DEFAULT_CONFIG="$REPO_ROOT/config/apache-kafka.yaml" ;;
    *)
        printf '[demo] ERROR: --kafka %s: mock (the embedded mock cluster, the default) or apache (a real broker, scripts/kafka.sh)\n' "$KAFKA" >&2
        exit 2
        ;;
esac
CONFIG="${EXO_DEMO_CONFIG:-$DEFAULT_CONFIG}"
COUNT="${DEMO_COUNT:-2000}"
DAEMON_LOG_KEPT="$EXO_BUILD_DIR/demo-daemon.log"
BOOTSTRAP_TIMEOUT=60  # s for the daemon to start its embedded Kafka
STOP_TIMEOUT=60       # s for the daemon to drain and exit after SIGTERM

DAEMON_PID=""
DAEMON_LOG=""

banner() { printf '\n==================== %s ====================\n' "$*"; }
note() { printf '[demo] %s\n' "$*"; }
# shellcheck source=scripts/suites.sh
source "$SCRIPTS/suites.sh"  # start_services, stop_services

# alive PID: running and not a zombie
alive() {
    local stat
    kill -0 "$1" 2>/dev/null || return 1
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
    stat="${stat##*) }"
    [[ "${stat:0:1}" != Z ]]
}

# stop_daemon: SIGTERM the daemon, wait (bounded) and set DAEMON_RC to its exit status.
DAEMON_RC=""
stop_daemon() {
    [[ -n "$DAEMON_PID" ]] || return 0
    local pid="$DAEMON_PID" deadline=$((SECONDS + STOP_TIMEOUT))
    DAEMON_PID=""
    kill -TERM "$pid" 2>/dev/null || true
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
    if alive "$pid"; then
        note "ERROR: the daemon did not exit ${STOP_TIMEOUT}s after SIGTERM: killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    DAEMON_RC=0
    wait "$pid" || DAEMON_RC=$?
}

keep_daemon_log() {
    if [[ -n "$DAEMON_LOG" && -f "$DAEMON_LOG" ]]; then
        cp -f "$DAEMON_LOG" "$DAEMON_LOG_KEPT" 2>/dev/null && note "daemon log: $DAEMON_LOG_KEPT"
        DAEMON_LOG=""
    fi
}

daemon_log_tail() {
    if [[ -n "$DAEMON_LOG" && -s "$DAEMON_LOG" ]]; then
        note "---- last 30 lines of the daemon log ----"
        tail -n 30 "$DAEMON_LOG" | sed 's/^/    /'
        note "---- end of the daemon log ----"
    fi
}

on_exit() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n "$DAEMON_PID" ]]; then
        note "stopping the daemon (pid $DAEMON_PID)"
        stop_daemon
    fi
    keep_daemon_log
    stop_services
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
    note "ERROR: $*"
    daemon_log_tail
    exit 1
}

cd "$REPO_ROOT"

banner "1/7 install dependencies"
"$SCRIPTS/install-deps.sh"

banner "2/7 build (exo, then handlers/ against the installed exo, as a team builds its consumer)"
"$SCRIPTS/build.sh"
EXO="$("$SCRIPTS/build-example.sh")"
[[ -x "$EXO" ]] || fail "$EXO was not built"
[[ -f "$CONFIG" ]] || fail "config $CONFIG not found"

if [[ "$KAFKA" == mock ]]; then
    banner "3/7 start Redis and PostgreSQL"
    # The daemon runs its own embedded mock Kafka (config/exo.yaml): no standalone one needed.
    EXO_SERVICES_KAFKA=0 start_services exo-demo || fail "the services did not start (see above)"
    BOOTSTRAP_FILE="$EXO_SERVICES_DIR/demo-kafka.bootstrap"
else
    banner "3/7 start Redis, PostgreSQL and Apache Kafka (scripts/kafka.sh), create the topics"
    EXO_SERVICES_KAFKA=0 start_services exo-demo || fail "the services did not start (see above)"
    start_apache_kafka exo-demo-kafka || fail "Apache Kafka did not start (see above)"
    # The broker creates no topic on use (as production clusters run): the input, its
    # dead-letter topic and the topic the ledger emits to.
    "$SCRIPTS/kafka.sh" create-topics "$EXO_KAFKA_DIR" payments:4 payments.dlq:1 ledger.applied:4 \
        || fail "could not create the topics (see above)"
    BOOTSTRAP_FILE="$EXO_KAFKA_DIR/kafka.bootstrap"
fi
EXPECTED_FILE="$EXO_SERVICES_DIR/expected.json"
DAEMON_LOG="$EXO_SERVICES_DIR/daemon.log"

banner "4/7 migrate (exo migrate --config ${CONFIG#"$REPO_ROOT"/})"
"$EXO" migrate --config "$CONFIG" || fail "exo migrate failed"

banner "5/7 start the daemon (exo run --config ${CONFIG#"$REPO_ROOT"/})"
"$EXO" run --config "$CONFIG" >"$DAEMON_LOG" 2>&1 </dev/null &
DAEMON_PID=$!
note "daemon pid $DAEMON_PID, log $DAEMON_LOG"
if [[ "$KAFKA" == mock ]]; then
    deadline=$((SECONDS + BOOTSTRAP_TIMEOUT))
    until [[ -s "$BOOTSTRAP_FILE" ]]; do
        alive "$DAEMON_PID" || fail "the daemon exited before its embedded Kafka came up"
        ((SECONDS < deadline)) || fail "no $BOOTSTRAP_FILE after ${BOOTSTRAP_TIMEOUT}s"
        sleep 0.2
    done
    sleep 0.2  # the file may have been caught mid-write
    note "embedded Kafka: $(cat "$BOOTSTRAP_FILE")"
else
    note "Apache Kafka $EXO_KAFKA_VERSION: $EXO_KAFKA_BOOTSTRAP"
fi

banner "6/7 produce $COUNT payment events (10% duplicates)"
"$EXO" demo-produce --bootstrap-file "$BOOTSTRAP_FILE" --topic payments --count "$COUNT" \
    --accounts 20 --duplicate-ratio 0.1 --expected-file "$EXPECTED_FILE" \
    || fail "exo demo-produce failed"

banner "7/7 check the balances (exo demo-check)"
check_rc=0
"$EXO" demo-check --config "$CONFIG" --bootstrap-file "$BOOTSTRAP_FILE" \
    --expected-file "$EXPECTED_FILE" --timeout 120 || check_rc=$?
alive "$DAEMON_PID" || note "WARNING: the daemon had already exited before SIGTERM"

note "stopping the daemon with SIGTERM"
stop_daemon
note "daemon exit status: $DAEMON_RC"

banner "result"
if ((check_rc != 0)); then
    note "FAILED: demo-check exited $check_rc (daemon exited $DAEMON_RC)"
    daemon_log_tail
    exit "$check_rc"
fi
if ((DAEMON_RC != 0)); then
    note "FAILED: the balances matched, but the daemon exited $DAEMON_RC on SIGTERM (expected 0)"
    daemon_log_tail
    exit 1
fi
note "PASSED: every balance matches and the daemon shut down cleanly (exit 0)"
