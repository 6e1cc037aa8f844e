#!/usr/bin/env bash
# The long chaos run, by hand (never in CI): exo_integration_tests' chaos-long case against
# Redis and PostgreSQL of its own (scripts/services.sh) and, with --kafka apache, a three-node
# Apache Kafka of its own (scripts/kafka.sh start --nodes 3: 3 replicas, min.insync.replicas 2).
#
#   scripts/chaos.sh [--kafka mock|apache] [--minutes M] [--seed S] [--rate N]
#
# Three `exo run` daemons consume a 6-partition topic while a producer writes N payments a
# second at the most (default 30; a tenth of them duplicates; a loaded machine sends fewer) for
# M minutes (default 10; a decimal is fine); meanwhile, one at a time on a schedule seeded by S
# (default: the time), a daemon is killed -9 and restarted, a daemon restarted to die between its PostgreSQL commit and its Redis
# completion (EXO_FAILPOINTS), Redis flushed, Redis restarted empty, PostgreSQL crashed and
# restarted, and a Kafka node killed -9 and restarted (a random one, a partition's leader or the
# group's coordinator; only while every partition has its three replicas in sync). --kafka mock
# (the default) runs on librdkafka's mock cluster of three brokers instead, a broker taken down
# and up for a node's kill. The run then checks that every payment was applied exactly once,
# the group's offsets reached every partition's end and the outbox published every row.
#
# Prints the faults as they happen and, last, one line of figures: duration, records, kills of
# each kind, lost, doubled, lag, outbox. Exit status 0 only if the case passed. The run's output
# is kept in a log whose path is printed; the daemons' logs are /tmp/t_chaoslong_*-N.log.
# Everything started is stopped whatever happens (success, failure, Ctrl-C, SIGTERM).
#
# Needs build/exo and build/exo_integration_tests (scripts/build.sh), and for --kafka apache
# Java and Maven (scripts/kafka.sh). Environment: EXO_BUILD_DIR (default <repo>/build).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$REPO_ROOT/scripts"
export EXO_BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
BIN="$EXO_BUILD_DIR/exo_integration_tests"
KAFKA=mock
MINUTES=10
SEED="$(date +%s)"
RATE=30

note() { printf '[chaos] %s\n' "$*"; }
usage() {
    sed -n '6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while (($# > 0)); do
    case "$1" in
        --kafka) KAFKA="${2:-}" && shift 2 ;;
        --minutes) MINUTES="${2:-}" && shift 2 ;;
        --seed) SEED="${2:-}" && shift 2 ;;
        --rate) RATE="${2:-}" && shift 2 ;;
        -h | --help) usage ;;
        *) note "ERROR: unknown argument '$1'" && usage ;;
    esac
done
[[ "$KAFKA" == mock || "$KAFKA" == apache ]] || { note "ERROR: --kafka mock or apache" && usage; }
[[ "$MINUTES" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { note "ERROR: --minutes: a number" && usage; }
[[ "$SEED" =~ ^[0-9]+$ && "$RATE" =~ ^[1-9][0-9]*$ ]] || { note "ERROR: --seed, --rate: numbers" && usage; }
for binary in "$BIN" "$EXO_BUILD_DIR/exo"; do
    [[ -x "$binary" ]] || {
        note "ERROR: $binary was not built (scripts/build.sh)"
        exit 1
    }
done
SECONDS_WANTED="$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 }')"
((SECONDS_WANTED > 0)) || { note "ERROR: --minutes must make at least a second" && usage; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/exo-chaos.XXXXXX")"
SERVICES_LOG="$WORK/services.log"
RUN_LOG="$WORK/chaos.log"
SUMMARY="$WORK/summary"
CASE_PID=""
# shellcheck source=scripts/suites.sh
source "$SCRIPTS/suites.sh"  # start_services, start_apache_kafka, stop_services

# shellcheck disable=SC2317  # reached through the EXIT trap
on_exit() {
    local rc=$?
    # Not interrupted by a second Ctrl-C, nor by a reader of our output gone: the services
    # must be stopped.
    set +e
    trap - EXIT
    trap '' INT TERM PIPE
    if [[ -n "$CASE_PID" ]]; then
        note "interrupted: stopping the chaos case and its daemons"
        kill -TERM "$CASE_PID" 2>/dev/null
        wait "$CASE_PID" 2>/dev/null
    fi
    stop_services
    if ((rc == 0)); then
        rm -rf -- "$WORK"
    else
        note "the run's output and the services' log are kept in $WORK"
    fi
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started=$SECONDS
# The mock Kafka of services.sh goes unused: the case's harness runs its own (or the cluster).
if ! EXO_SERVICES_KAFKA=0 start_services exo-chaos-services; then
    cat "$SERVICES_LOG"
    note "ERROR: Redis and PostgreSQL did not start (above)"
    exit 1
fi
if [[ "$KAFKA" == apache ]]; then
    if ! start_apache_kafka exo-chaos-kafka --nodes 3; then
        cat "$SERVICES_LOG"
        note "ERROR: the three-node Apache Kafka did not start (above)"
        exit 1
    fi
    note "Apache Kafka $EXO_KAFKA_VERSION, three nodes, at $EXO_KAFKA_BOOTSTRAP"
else
    export EXO_KAFKA_KIND=mock
fi
note "services up ($((SECONDS - started)) s); $MINUTES min of chaos on the $KAFKA Kafka, seed $SEED, at most $RATE payments/s"

export EXO_CHAOS_SECONDS="$SECONDS_WANTED" EXO_CHAOS_SEED="$SEED" EXO_CHAOS_RATE="$RATE"
export EXO_CHAOS_SUMMARY="$SUMMARY" EXO_BINARY="${EXO_BINARY:-$EXO_BUILD_DIR/exo}"
# timeout(1) gives the case its own process group: our SIGTERM (Ctrl-C, on_exit) reaches its
# daemons too. The limit: the run, and 20 minutes to drain, check and read the outbox back.
rc=0
: >"$RUN_LOG"  # before the follower below opens it
timeout -k 10 $((SECONDS_WANTED + 1200)) "$BIN" --no-skip --test-suite=chaos-long \
    >"$RUN_LOG" 2>&1 &
CASE_PID="$!"
# The case's story as it happens (its figures' line comes last, from the summary file); `wait`
# (not a pipeline in the foreground) lets a signal reach on_exit at once.
tail -n +1 -f --pid="$CASE_PID" "$RUN_LOG" |
    awk '/^\[chaos/ && !/\] chaos figures: / { print; fflush() }' &
follower="$!"
wait "$CASE_PID" || rc=$?
CASE_PID=""
wait "$follower" || true
if ((rc != 0)); then
    cat "$RUN_LOG"
    note "the services' log (the last 30 lines):"
    tail -n 30 "$SERVICES_LOG"
fi
if [[ -s "$SUMMARY" ]]; then
    note "$(cat "$SUMMARY")"
else
    note "ERROR: the case printed no figures (it stopped early: above)"
    ((rc != 0)) || rc=1
fi
((rc == 0)) && note "passed" || note "FAILED (exit status $rc)"
exit "$rc"
