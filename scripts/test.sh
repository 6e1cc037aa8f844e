#!/usr/bin/env bash
# THE test command (README, and CI through .ci/run): installs the Debian packages, builds,
# runs the unit tests and, for a bounded time, the fuzz targets (scripts/fuzz.sh), starts
# throw-away Redis/PostgreSQL/mock Kafka (scripts/services.sh) in a fresh temporary directory,
# runs the integration tests in parallel shards, each against throw-away services of its own,
# and then the cases that must run alone (scripts/integration.sh), then the cases for a real
# Apache Kafka against a one-node broker (scripts/kafka.sh: Java and Maven, the release's jars
# fetched once into ~/.cache/exo), checks deploy/ and docker-compose.yml against a daemon on
# the first services (scripts/deploy-check.sh), and stops and removes every service whatever
# happens (success, failure, Ctrl-C, SIGTERM). The container image's test is not part of it (it
# takes longer than CI's budget): scripts/image-test.sh.
#
#   scripts/test.sh [doctest options for the integration tests, e.g. --test-case='*claim*']
#
# The last line printed is always `N passed, N failed`: the doctest test-case counts of both
# suites added up (the integration tests' over all shards), plus the layer check and the fuzz
# stage as one test case each and each check of deploy-check.sh (CI reads it). A stage that
# could not run or finish (install, build, service start, a suite that crashed or timed out
# without failing a test case) counts as 1 failed.
# Exit status: 0 only if every stage ran and no test case failed.
#
# Environment: EXO_BUILD_DIR (default <repo>/build), EXO_UNIT_TIMEOUT (s, default 600),
# EXO_INTEGRATION_TIMEOUT (s, the whole integration stage, default 2700),
# EXO_REAL_KAFKA_TIMEOUT (s, the real-broker stage, default 900), scripts/kafka.sh's
# EXO_KAFKA_VERSION (the Apache Kafka release of that stage), EXO_FUZZ_SECONDS (per
# fuzz target, default 20; the fuzz build goes to EXO_FUZZ_BUILD_DIR, default
# <repo>/build-fuzz); scripts/integration.sh's EXO_SHARDS, EXO_CASE_TIMEOUT and
# EXO_SHARD_TIMEOUT.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$REPO_ROOT/scripts"
export EXO_BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
UNIT_TIMEOUT="${EXO_UNIT_TIMEOUT:-600}"
INTEGRATION_TIMEOUT="${EXO_INTEGRATION_TIMEOUT:-2700}"
REAL_KAFKA_TIMEOUT="${EXO_REAL_KAFKA_TIMEOUT:-900}"
FUZZ_SECONDS="${EXO_FUZZ_SECONDS:-20}"

PASSED=0
FAILED=0
WORK="$(mktemp -d "${TMPDIR:-/tmp}/exo-test.XXXXXX")"  # suite logs
SUITE_PIDFILE=""                                       # set while a suite runs
STAGE_START=$SECONDS

banner() {
    printf '\n==================== %s ====================\n' "$*"
    STAGE_START=$SECONDS
}
note() { printf '[test] %s\n' "$*"; }
# shellcheck source=scripts/suites.sh
source "$SCRIPTS/suites.sh"  # start_services, stop_services, doctest_counts, exit_counted

# Runs on every exit: stop a running suite and the services, remove temporaries, print the
# summary line last.
# shellcheck disable=SC2317  # reached through the EXIT trap
on_exit() {
    local rc=$?
    # Cleaning up is not interrupted: a second Ctrl-C or SIGTERM would leave services running,
    # and neither is it by a reader of our output gone (the tee of a signalled process group):
    # SIGPIPE or a failed write under `set -e` would end it before the services are stopped.
    set +e
    trap - EXIT
    trap '' INT TERM PIPE
    if [[ -n "$SUITE_PIDFILE" && -s "$SUITE_PIDFILE" ]]; then
        local pid
        pid="$(cat "$SUITE_PIDFILE")"
        note "interrupted: stopping the running test suite (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true  # timeout(1) passes it on to the suite's process group
        # Until it has stopped (integration.sh stops its shards' services), so that its output
        # comes before the summary line.
        local waited
        for ((waited = 0; waited < 600; waited++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        sleep 0.2
    fi
    stop_services
    rm -rf -- "$WORK"
    exit_counted "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run_logged NAME TIMEOUT COMMAND...: run COMMAND with its output shown and logged to
# $WORK/NAME.log; set RUN_RC to its exit status (1 if it never reported one). In the background
# and `wait`ed for, so Ctrl-C/SIGTERM reach our trap at once (on_exit stops it through
# SUITE_PIDFILE); timeout(1) gives it its own process group and kills all of it at the limit.
run_logged() {
    local name="$1" limit="$2"
    shift 2
    local rcfile="$WORK/$name.rc"
    SUITE_PIDFILE="$WORK/$name.pid"
    {
        timeout -k 30 "$limit" "$@" 2>&1 &
        echo "$!" >"$SUITE_PIDFILE"
        command_rc=0
        wait "$!" || command_rc=$?
        echo "$command_rc" >"$rcfile"
    } | {
        # The tee outlives a signal to our process group, so on_exit can still print.
        trap '' INT TERM
        exec tee "$WORK/$name.log"
    } &
    wait "$!" || true
    SUITE_PIDFILE=""
    RUN_RC=1
    [[ -s "$rcfile" ]] && RUN_RC="$(cat "$rcfile")"
    return 0
}

# run_suite NAME TIMEOUT BINARY [ARGS...]: run a doctest binary with its output shown and
# logged, add its test-case counts to PASSED/FAILED. Returns the suite's exit status.
run_suite() {
    local name="$1" limit="$2" bin="$3"
    shift 3
    local rc counts="" p=0 f=0
    if [[ ! -x "$bin" ]]; then
        note "ERROR: $bin was not built"
        FAILED=$((FAILED + 1))
        return 1
    fi
    run_logged "$name" "$limit" "$bin" "$@"
    rc="$RUN_RC"
    counts="$(doctest_counts "$WORK/$name.log")" && read -r p f <<<"$counts"
    if ((rc == 124 || rc == 137)); then
        note "ERROR: $name tests timed out after ${limit}s (raise EXO_${name^^}_TIMEOUT if that is expected)"
    elif ((rc != 0)) && [[ -z "$counts" ]]; then
        note "ERROR: $name tests exited with status $rc without a doctest summary (crashed?)"
    fi
    if ((rc != 0 && f == 0)); then f=1; fi
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    note "$name tests: $p passed, $f failed, exit status $rc ($((SECONDS - STAGE_START)) s)"
    return "$rc"
}

# run_fuzz: build and run the fuzz targets for FUZZ_SECONDS each (scripts/fuzz.sh), with its
# output shown; counts as 1 passed test case if no target found anything, else 1 failed.
run_fuzz() {
    local rc
    # The limit is generous (the build plus every target one after the other); fuzz.sh stops
    # its fuzzers on SIGTERM.
    run_logged fuzz "$((600 + 4 * FUZZ_SECONDS))" "$SCRIPTS/fuzz.sh" "$FUZZ_SECONDS"
    rc="$RUN_RC"
    local outcome="nothing found"
    if ((rc == 0)); then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        outcome="FAILED (see above)"
        ((rc == 124 || rc == 137)) && outcome="FAILED: timed out"
    fi
    note "fuzz targets: $outcome, exit status $rc ($((SECONDS - STAGE_START)) s)"
    return "$rc"
}

# run_counted NAME TIMEOUT SCRIPT [ARGS...]: a script whose last line is its own `N passed,
# N failed` (scripts/integration.sh, scripts/deploy-check.sh), with its output shown; those
# counts are added to PASSED/FAILED (1 failed if it printed none). Returns its exit status.
run_counted() {
    local name="$1" limit="$2"
    shift 2
    local rc p=0 f=1 line
    run_logged "$name" "$limit" "$@"
    rc="$RUN_RC"
    line="$(tail -n 1 "$WORK/$name.log")"
    if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p="${BASH_REMATCH[1]}"
        f="${BASH_REMATCH[2]}"
        if ((rc != 0 && f == 0)); then f=1; fi
    fi
    if ((rc == 124 || rc == 137)); then
        note "ERROR: the $name timed out after ${limit}s (raise its limit if that is expected)"
    fi
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    note "$name: $p passed, $f failed, exit status $rc ($((SECONDS - STAGE_START)) s)"
    return "$rc"
}

cd "$REPO_ROOT"

banner "1/9 install dependencies (scripts/install-deps.sh)"
"$SCRIPTS/install-deps.sh"

banner "2/9 build (scripts/build.sh, exo_bench included), handlers/ against the installed exo (scripts/build-example.sh), the layer check"
# exo_bench is built (not run: its figures belong to scripts/bench.sh on a quiet machine) so
# a change to the library's API cannot leave the benchmark unbuildable unnoticed.
EXO_BUILD_BENCH=ON "$SCRIPTS/build.sh"
# The integration tests' child processes and the example's own tests use the binary built
# out of tree, exactly as a team builds its consumer: that is what proves the package works.
EXAMPLE_BUILD_DIR="$EXO_BUILD_DIR/example"
export EXO_BINARY
EXO_BINARY="$(EXO_EXAMPLE_TESTS=ON EXO_EXAMPLE_BUILD_DIR="$EXAMPLE_BUILD_DIR" "$SCRIPTS/build-example.sh")"
note "build took $((SECONDS - STAGE_START)) s; exo for child processes: $EXO_BINARY"

overall=0
# The layers (docs/design.md#code-layers): each layer's sources see exactly the layers it uses,
# so a wrong include does not compile. One test case.
if cmake -DEXO_BUILD_DIR="$EXO_BUILD_DIR" -P "$REPO_ROOT/cmake/CheckLayers.cmake"; then
    PASSED=$((PASSED + 1))
else
    FAILED=$((FAILED + 1))
    overall=1
    note "ERROR: a layer sees more or less than it uses (above); see cmake/Layers.cmake"
fi

banner "3/9 unit tests ($EXO_BUILD_DIR/exo_unit_tests)"
run_suite unit "$UNIT_TIMEOUT" "$EXO_BUILD_DIR/exo_unit_tests" || overall=1

banner "4/9 fuzz targets, ${FUZZ_SECONDS} s each (scripts/fuzz.sh)"
run_fuzz || overall=1

banner "5/9 start Redis, PostgreSQL, mock Kafka (scripts/services.sh)"
if ! start_services exo-services; then
    note "ERROR: the services did not start (see above); the integration tests cannot run"
    exit 1
fi
note "Redis 127.0.0.1:$EXO_REDIS_PORT, PostgreSQL $EXO_POSTGRES_URI, Kafka ${EXO_KAFKA_BOOTSTRAP:-?}"

banner "6/9 integration tests in parallel shards, then the serial ones (scripts/integration.sh${*:+ $*})"
run_counted "integration tests" "$INTEGRATION_TIMEOUT" \
    env EXO_INTEGRATION_PARTS="parallel serial" "$SCRIPTS/integration.sh" "$@" || overall=1

# What the mock cluster cannot show (a real group coordinator and rebalance protocol, real
# topics), one case at a time against a one-node Apache Kafka: the cases tagged real-kafka.
banner "7/9 real-broker tests: Apache Kafka (scripts/kafka.sh), the real-kafka cases (scripts/integration.sh${*:+ $*})"
run_counted "real-broker tests" "$REAL_KAFKA_TIMEOUT" \
    env EXO_INTEGRATION_PARTS=real-kafka "$SCRIPTS/integration.sh" "$@" || overall=1

banner "8/9 the example's own handler tests ($EXAMPLE_BUILD_DIR/ledger_tests, exo/testing.hpp)"
run_suite example 600 "$EXAMPLE_BUILD_DIR/ledger_tests" || overall=1

banner "9/9 deploy/: alert rules, dashboard, compose, against a daemon (scripts/deploy-check.sh)"
run_counted "deploy checks" 600 "$SCRIPTS/deploy-check.sh" || overall=1

banner "done"
stop_services
exit "$overall"
