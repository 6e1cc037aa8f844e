#!/usr/bin/env bash
# The integration tests (exo_integration_tests) in parallel shards, each shard against its own
# throw-away Redis, PostgreSQL and mock Kafka (scripts/services.sh), the cases that cannot
# share the machine alone, after them, and last the cases for a real Apache Kafka, alone against
# a one-node broker started by scripts/kafka.sh. scripts/test.sh runs the first two parts as its
# integration stage and the last as its real-broker stage.
#
#   scripts/integration.sh [doctest options, e.g. --test-case='*claim*']
#
# Why shards: the suite is idle-bound (consumer-group joins on the mock cluster, waits for
# daemons), some 35 s of CPU in 15 minutes, so shards side by side take a fraction of the time.
# Each test case runs in a process of its own (doctest's --order-by=name --first=I --last=I);
# the EXO_SHARDS shards take the next case from one queue as they finish the last, so they end
# together however long the cases are. The cases tagged `* doctest::test_suite("serial")`
# (services stopped or flushed, server-wide statistics, big volumes, timing: see
# docs/development.md) run next, one at a time, with no shard running. The cases tagged
# `* doctest::test_suite("real-kafka")` (what the mock cluster cannot show: a real group
# coordinator, rebalance protocol, transactions) run last, one at a time, against the first
# shard's Redis and PostgreSQL and an Apache Kafka node (scripts/kafka.sh, Java and Maven):
# their EXO_KAFKA_BOOTSTRAP is the real broker's. The long chaos case (test suite chaos-long,
# minutes of faults: scripts/chaos.sh runs it by hand) is never run here: it is tagged
# doctest::skip(), which doctest neither lists nor runs without --no-skip, so it is in no part
# and the check that the parts cover the cases selected leaves it out too.
#
# Quiet when passing: one line per test case as it ends (`[ok]   <name> (1.2 s)`), one line per
# part. A failed case's whole output (doctest's report, the captured logs, its child processes'
# logs) and the tail of its shard's service logs follow. It checks that the cases run are exactly
# the cases the options select (`--list-test-cases`), each once. The last line is always
# `N passed, N failed` (test cases; a case that crashed, timed out or never ran counts as failed,
# a stage that could not run as 1 failed). Exit status 0 only if all passed. The services of
# every shard are stopped whatever happens (success, failure, Ctrl-C, SIGTERM).
#
# Options that choose the suite or the order (-ts, -tse, --first, --last, --order-by, -r and
# their long forms) do not combine with the split: the suite then runs as one process against
# one set of services, doctest's way, without the real-kafka cases (an -tse of the options
# replaces that exclusion).
#
# Environment: EXO_BUILD_DIR (default <repo>/build), EXO_SHARDS (parallel shards, default 4),
# EXO_INTEGRATION_PARTS (default "parallel serial real-kafka"; any of them, e.g. "real-kafka"),
# EXO_CASE_TIMEOUT (s per test case, default 600), EXO_SHARD_TIMEOUT (s per shard and for the
# serial part: no case starts after it, default 1200: two parts stay inside test.sh's EXO_INTEGRATION_TIMEOUT). EXO_BINARY reaches the tests.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$REPO_ROOT/scripts"
export EXO_BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
BIN="$EXO_BUILD_DIR/exo_integration_tests"
SHARDS="${EXO_SHARDS:-4}"
PARTS="${EXO_INTEGRATION_PARTS:-parallel serial real-kafka}"
CASE_TIMEOUT="${EXO_CASE_TIMEOUT:-600}"
SHARD_TIMEOUT="${EXO_SHARD_TIMEOUT:-1200}"
ARGS=("$@")

PASSED=0
FAILED=0
WORK="$(mktemp -d "${TMPDIR:-/tmp}/exo-integration.XXXXXX")"  # queues, case logs
SERVICES_LOG="$WORK/services.log"                              # scripts/suites.sh
WORKERS=()                                                      # pids of running shards
REAL_KAFKA_DIR=""                                               # the real-kafka part's broker

note() { printf '[integration] %s\n' "$*"; }
# shellcheck source=scripts/suites.sh
source "$SCRIPTS/suites.sh"  # start_services_sets, stop_services, doctest_counts, exit_counted

# shellcheck disable=SC2317  # reached through the EXIT trap
on_exit() {
    local rc=$? pid
    # Cleaning up is not interrupted: a second Ctrl-C or SIGTERM would leave services running,
    # and neither is it by a reader of our output gone (the tee of a signalled process group):
    # SIGPIPE or a failed write under `set -e` would end it before the services are stopped.
    set +e
    trap - EXIT
    trap '' INT TERM PIPE
    if ((${#WORKERS[@]} > 0)); then
        note "interrupted: stopping the running shards"
        for pid in "${WORKERS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
        for pid in "${WORKERS[@]}"; do wait "$pid" 2>/dev/null || true; done
    fi
    stop_services
    rm -rf -- "$WORK"
    exit_counted "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The doctest options that choose the suite or the order, or replace the reporter: with one of
# them the split cannot select its cases.
splittable() {
    local arg
    for arg in "${ARGS[@]}"; do
        [[ "$arg" =~ ^--?(dt-)?(ts|test-suite|tse|test-suite-exclude|f|first|l|last|ob|order-by|r|reporters|o|out)= ]] &&
            return 1
    done
    return 0
}

# list_cases FILE DOCTEST-OPTIONS...: the names of the test cases the options select, in name
# order, one a line, into FILE.
list_cases() {
    local file="$1"
    shift
    "$BIN" --list-test-cases --order-by=name "$@" "${ARGS[@]}" |
        awk 'listing && /^=+$/ { exit } listing { print } /^=+$/ { listing = 1 }' >"$file"
}

# case_line LOG: the `[ok]`/`[FAIL]` line of a case's log, and whether there is exactly one.
case_line() {
    local lines
    lines="$(grep -aE '^\[(ok|FAIL)\] ' "$1" || true)"
    [[ -n "$lines" && "$lines" != *$'\n'* ]] || return 1
    printf '%s\n' "$lines"
}

# shard PART K DIR SELECT...: one shard's worker, run in the background. Against the services in
# DIR, it takes the next unclaimed case of PART's queue (mkdir is the atomic claim), runs it
# alone (doctest's I-th case in name order of those SELECT picks), prints its line and writes
# its exit status to PART.I.rc. Stops taking cases after SHARD_TIMEOUT.
shard() {
    local part="$1" k="$2" dir="$3"
    shift 3
    local deadline=$((SECONDS + SHARD_TIMEOUT)) i rc limit line why
    pid=""  # the running case's timeout(1); global to this background subshell, for its trap
    # on_exit's SIGTERM: stop the running case (timeout(1) passes it on) before leaving
    # shellcheck disable=SC2016  # expanded when the trap runs
    trap '[[ -z "$pid" ]] || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; exit 143' TERM
    # shellcheck source=/dev/null
    source "$dir/services.env"
    # The real broker's EXO_KAFKA_BOOTSTRAP (and the rest of kafka.env) over the mock's.
    # shellcheck source=/dev/null
    [[ "$part" != real-kafka ]] || source "$REAL_KAFKA_DIR/kafka.env"
    while read -r i; do
        ((SECONDS < deadline)) || break
        mkdir "$WORK/$part.claim.$i" 2>/dev/null || continue
        limit=$((deadline - SECONDS))
        ((limit < CASE_TIMEOUT)) || limit="$CASE_TIMEOUT"
        # timeout(1) gives the case its own process group and kills all of it at the limit.
        timeout -k 10 "$limit" "$BIN" --order-by=name --first="$i" --last="$i" "$@" "${ARGS[@]}" \
            >"$WORK/$part.$i.log" 2>&1 &
        pid="$!"
        rc=0
        wait "$pid" || rc=$?
        pid=""
        echo "$rc $k" >"$WORK/$part.$i.rc"
        why=""
        ((rc == 124 || rc == 137)) && why=" - timed out after $limit s (EXO_CASE_TIMEOUT)"
        if line="$(case_line "$WORK/$part.$i.log")"; then
            printf '%s%s\n' "$line" "$why"
        else
            printf '[FAIL] %s (no result: exit status %s)%s\n' \
                "$(sed -n "${i}p" "$WORK/$part.cases")" "$rc" "$why"
        fi
    done <"$WORK/$part.queue"
    if ((SECONDS >= deadline)); then
        note "ERROR: $part shard $k stopped taking cases after EXO_SHARD_TIMEOUT=${SHARD_TIMEOUT}s"
    fi
}

# run_part PART SHARDS SELECT...: run the cases SELECT picks (PART.cases) on SHARDS shards, each
# against its own set of services (SHARD_SVC_DIRS), then count them: a case passed if its
# process exited 0 with one `[ok]` line naming it.
run_part() {
    local part="$1" n="$2"
    shift 2
    local start=$SECONDS count k i rc shard line want p=0 f=0
    count="$(wc -l <"$WORK/$part.cases")"
    ((count > 0)) || return 0
    seq 1 "$count" >"$WORK/$part.queue"
    ((n <= count)) || n="$count"
    for ((k = 1; k <= n; k++)); do
        shard "$part" "$k" "${SHARD_SVC_DIRS[$((k - 1))]}" "$@" &
        WORKERS+=("$!")
    done
    for k in "${!WORKERS[@]}"; do wait "${WORKERS[$k]}" || true; done
    WORKERS=()

    for ((i = 1; i <= count; i++)); do
        want="$(sed -n "${i}p" "$WORK/$part.cases")"
        if [[ ! -s "$WORK/$part.$i.rc" ]]; then
            note "ERROR: '$want' never ran (the shards' time ran out)"
            f=$((f + 1))
            continue
        fi
        read -r rc shard <"$WORK/$part.$i.rc"
        line="$(case_line "$WORK/$part.$i.log" || true)"
        line="${line#\[*\] }"
        line="${line#"${line%%[! ]*}"}"
        if ((rc == 0)) && [[ "$line" == "$want ("*" s)" ]]; then
            p=$((p + 1))
            continue
        fi
        f=$((f + 1))
        if ((rc == 0)); then
            note "ERROR: case $i of the $part part should be '$want'; its log has '$line'"
        fi
        printf '\n---- %s part, shard %s: the output of %s ----\n' "$part" "$shard" "$want"
        cat "$WORK/$part.$i.log"
        note "the services of shard $shard, for the failure above:"
        "$SCRIPTS/services.sh" logs "${SHARD_SVC_DIRS[$((shard - 1))]}" 30 || true
        if [[ "$part" == real-kafka ]]; then
            note "the Apache Kafka broker, for the failure above:"
            "$SCRIPTS/kafka.sh" logs "$REAL_KAFKA_DIR" 30 || true
        fi
    done
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    note "$part part: $p passed, $f failed, $count cases on $n shard(s) ($((SECONDS - start)) s)"
}

# run_whole: the suite as one process against one set of services, output shown (the options
# do not combine with the split).
run_whole() {
    local log="$WORK/whole.log" rc=0 counts p=0 f=0
    # shellcheck source=/dev/null
    source "${SHARD_SVC_DIRS[0]}/services.env"
    # In the background and `wait`ed for, so Ctrl-C/SIGTERM reach on_exit at once (it stops
    # WORKERS); the output is shown when it ends. The real-kafka cases need a broker of their
    # own: left out (before ARGS, so that an -tse of the options replaces it).
    timeout -k 10 "$SHARD_TIMEOUT" "$BIN" --test-suite-exclude=real-kafka "${ARGS[@]}" >"$log" 2>&1 &
    WORKERS=("$!")
    wait "$!" || rc=$?
    WORKERS=()
    cat "$log"
    if counts="$(doctest_counts "$log")"; then read -r p f <<<"$counts"; fi
    if ((rc != 0 && f == 0)); then f=1; fi
    if ((rc != 0)); then "$SCRIPTS/services.sh" logs "${SHARD_SVC_DIRS[0]}" 30 || true; fi
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
}

[[ -x "$BIN" ]] || {
    note "ERROR: $BIN was not built (scripts/build.sh)"
    exit 1
}
[[ "$SHARDS" =~ ^[1-9][0-9]*$ ]] || {
    note "ERROR: EXO_SHARDS=$SHARDS: a number of shards, 1 or more"
    exit 2
}

if ! splittable; then
    if [[ " $PARTS " != *" parallel "* && " $PARTS " != *" serial "* ]]; then
        note "the options choose the suite or the order: the real-kafka part runs only split; nothing to run"
        exit 0
    fi
    note "the options choose the suite or the order: one process, no split, no real-kafka cases"
    start_services_sets exo-integration 1 || {
        cat "$SERVICES_LOG"
        exit 1
    }
    run_whole
    exit 0
fi

# The cases of each part, and the check that the parts together are exactly the cases the
# options select: none run twice, none left out.
list_cases "$WORK/all.cases"
list_cases "$WORK/parallel.cases" --test-suite-exclude=serial,real-kafka
list_cases "$WORK/serial.cases" --test-suite=serial
list_cases "$WORK/real-kafka.cases" --test-suite=real-kafka
if ! sort "$WORK/parallel.cases" "$WORK/serial.cases" "$WORK/real-kafka.cases" | cmp -s - <(sort "$WORK/all.cases"); then
    note "ERROR: the parallel, serial and real-kafka parts are not the $(wc -l <"$WORK/all.cases") cases selected"
    exit 1
fi
for part in parallel serial real-kafka; do
    [[ " $PARTS " == *" $part "* ]] || : >"$WORK/$part.cases"
done
count_of() { wc -l <"$WORK/$1.cases"; }
total=$(($(count_of parallel) + $(count_of serial) + $(count_of real-kafka)))
note "$total test cases: $(count_of parallel) on $SHARDS shards side by side, then $(count_of serial) serial, then $(count_of real-kafka) against Apache Kafka"
((total > 0)) || exit 0

sets="$SHARDS"
[[ -s "$WORK/parallel.cases" ]] || sets=1
# Only real-kafka cases: the mock broker of the services would go unused.
mock=1
[[ -s "$WORK/parallel.cases" || -s "$WORK/serial.cases" ]] || mock=0
if ! EXO_SERVICES_KAFKA="$mock" start_services_sets exo-integration "$sets"; then
    cat "$SERVICES_LOG"
    exit 1
fi
run_part parallel "$SHARDS" --test-suite-exclude=serial,real-kafka
run_part serial 1 --test-suite=serial
if [[ -s "$WORK/real-kafka.cases" ]]; then
    started=$SECONDS
    if start_apache_kafka exo-integration-kafka; then
        REAL_KAFKA_DIR="$EXO_KAFKA_DIR"
        note "Apache Kafka $EXO_KAFKA_VERSION up at $EXO_KAFKA_BOOTSTRAP ($((SECONDS - started)) s)"
        run_part real-kafka 1 --test-suite=real-kafka
    else
        cat "$SERVICES_LOG"
        note "ERROR: Apache Kafka did not start (above): the $(count_of real-kafka) real-kafka cases did not run"
        FAILED=$((FAILED + $(count_of real-kafka)))
    fi
fi
if ((PASSED + FAILED != total)); then
    note "ERROR: $((PASSED + FAILED)) test cases counted, $total selected"
    FAILED=$((FAILED + 1))
fi
exit 0
