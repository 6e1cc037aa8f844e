#!/usr/bin/env bash
# exo's unit and integration suites under ThreadSanitizer (GCC's -fsanitize=thread): the poll
# thread, batch runners, lease keepers, outbox relay, retention pruner and HTTP endpoint run at once,
# and TSan reports every data race, lock-order inversion and misuse of a mutex it sees them make.
#
#   scripts/tsan.sh [doctest options for the integration tests, e.g. --test-case='*outbox*']
#
# Builds into build-tsan/ (-DEXO_SANITIZE=thread, through scripts/build.sh), starts throw-away
# Redis/PostgreSQL/mock Kafka (scripts/services.sh) and runs exo_unit_tests, then
# exo_integration_tests. Their child-process tests run the TSan-built `exo` (EXO_BINARY), so the
# daemon itself is checked, and so does the mock Kafka broker. Every process writes its reports to
# a file of its own, <log dir>/<suite>.<pid> (TSAN_OPTIONS log_path); scripts/tsan.supp, when it
# exists, holds the suppressions, each with the reason it is not exo's bug.
#
# Quiet when clean: one line per stage. Otherwise it prints the failed test cases and the reports
# grouped by where they happened (the first exo frame of each stack), with the files to read.
# The last line is always `N passed, N failed`: the doctest test cases of the suites that ran,
# plus one per suite for "TSan reported nothing in its processes". A stage that could not run
# or finish counts as 1 failed. Exit status: 0 only if everything passed.
#
# Environment: EXO_TSAN_BUILD_DIR (default <repo>/build-tsan), EXO_TSAN_SUITES (default
# "unit integration"; "unit" alone needs no services and builds less), EXO_TSAN_UNIT_TIMEOUT
# (s, default 1800), EXO_TSAN_INTEGRATION_TIMEOUT (s, default 5400), EXO_TSAN_LOG_DIR (default
# <build dir>/tsan-logs, emptied at start and kept after), EXO_TSAN_OPTIONS (added to
# TSAN_OPTIONS), EXO_BUILD_JOBS (compile jobs, default 2).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$REPO_ROOT/scripts"
BUILD_DIR="${EXO_TSAN_BUILD_DIR:-$REPO_ROOT/build-tsan}"
SUITES="${EXO_TSAN_SUITES:-unit integration}"
UNIT_TIMEOUT="${EXO_TSAN_UNIT_TIMEOUT:-1800}"
INTEGRATION_TIMEOUT="${EXO_TSAN_INTEGRATION_TIMEOUT:-5400}"
LOG_DIR="${EXO_TSAN_LOG_DIR:-$BUILD_DIR/tsan-logs}"
SUPPRESSIONS="$REPO_ROOT/scripts/tsan.supp"
SERVICES_LOG="$LOG_DIR/services.log"  # scripts/suites.sh: services.sh's output

PASSED=0
FAILED=0
SUITE_PID=""     # the timeout(1) running a suite, while one runs
SUMMARY_DONE=0   # the report summary was printed

note() { printf '[tsan] %s\n' "$*"; }
# shellcheck source=scripts/suites.sh
source "$SCRIPTS/suites.sh"  # start_services, stop_services, doctest_counts

for suite in $SUITES; do
    [[ "$suite" == unit || "$suite" == integration ]] || {
        note "ERROR: EXO_TSAN_SUITES names '$suite': the suites are unit and integration"
        exit 2
    }
done
wants() { [[ " $SUITES " == *" $1 "* ]]; }

# TSAN_OPTIONS for processes whose report files start with <log dir>/$1.
tsan_options() {
    # history_size=4: 512K accesses per thread (default 128K), so the earlier access of a race
    # in a long test still has its stack.
    local opts="halt_on_error=0 second_deadlock_stack=1 exitcode=66 history_size=4"
    opts+=" log_path=$LOG_DIR/$1"
    [[ -f "$SUPPRESSIONS" ]] && opts+=" suppressions=$SUPPRESSIONS"
    printf '%s %s' "$opts" "${EXO_TSAN_OPTIONS:-}"
}

# shellcheck disable=SC2317  # reached through the EXIT trap
on_exit() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n "$SUITE_PID" ]]; then
        note "interrupted: stopping the running test suite (pid $SUITE_PID)"
        kill -TERM "$SUITE_PID" 2>/dev/null || true  # timeout(1) passes it on to the suite
        wait "$SUITE_PID" 2>/dev/null || true
    fi
    stop_services
    ((SUMMARY_DONE)) || summarize_reports || true
    if ((rc != 0 && FAILED == 0)); then FAILED=1; fi
    if ((FAILED > 0 && rc == 0)); then rc=1; fi
    printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# reports PREFIX: the report files of the processes that wrote under <log dir>/PREFIX.
reports() { compgen -G "$LOG_DIR/$1.[0-9]*" || true; }

# run_suite NAME TIMEOUT BINARY [ARGS...]: run a doctest binary under TSan, its output into
# <log dir>/NAME.log; add its test cases, and one for its processes' TSan reports, to
# PASSED/FAILED. Prints its failed test cases.
run_suite() {
    local name="$1" limit="$2" bin="$3"
    shift 3
    local log="$LOG_DIR/$name.log" rc=0 counts="" p=0 f=0 started=$SECONDS
    if [[ ! -x "$bin" ]]; then
        note "ERROR: $bin was not built"
        FAILED=$((FAILED + 1))
        return 1
    fi
    # In the background and `wait`, so Ctrl-C/SIGTERM reach the trap at once; timeout(1) gives
    # the suite its own process group (its `exo` children included) and kills all of it.
    TSAN_OPTIONS="$(tsan_options "$name")" timeout -k 30 "$limit" "$bin" "$@" >"$log" 2>&1 &
    SUITE_PID=$!
    wait "$SUITE_PID" || rc=$?
    SUITE_PID=""

    counts="$(doctest_counts "$log")" && read -r p f <<<"$counts"
    if ((rc == 124 || rc == 137)); then
        note "ERROR: $name tests timed out after ${limit}s (raise EXO_TSAN_${name^^}_TIMEOUT if that is expected)"
        ((f == 0)) && f=1
    elif [[ -z "$counts" ]]; then
        note "ERROR: $name tests exited with status $rc without a doctest summary (crashed?): $log"
        tail -n 40 "$log"
        f=1
    elif ((p + f == 0)); then
        note "ERROR: no $name test case ran (a filter that matches nothing? doctest splits on ',')"
        f=1
    fi
    # Test cases that failed, with what they printed (the quiet reporter's block).
    if ((f > 0)); then
        sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '
            /^\[FAIL\] / { printing = 1; shown++ }
            printing && shown <= 10 { print }
            /^---- end of / { printing = 0 }
            END { if (shown > 10) printf "... and %d more failed test cases: see the log\n", shown - 10 }'
    fi
    local files count=0 processes=0
    files="$(reports "$name")"
    if [[ -n "$files" ]]; then
        processes="$(wc -l <<<"$files")"
        # shellcheck disable=SC2086  # one file name a line, none with spaces
        count="$(cat $files | grep -c '^WARNING: ThreadSanitizer:' || true)"
    fi
    if ((count == 0)); then PASSED=$((PASSED + 1)); else f=$((f + 1)); fi
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    note "$name tests: $p passed, $f failed, exit status $rc, $((SECONDS - started)) s;" \
        "TSan: $count report(s) from $processes process(es)"
    return 0
}

# summarize_reports: every report of this run, grouped by kind and where it happened (the
# first frame in exo's own sources of each of its first two stacks, else the library).
summarize_reports() {
    SUMMARY_DONE=1
    local files
    files="$(reports '*')"
    [[ -n "$files" ]] || return 0
    # shellcheck disable=SC2086
    awk -v root="$REPO_ROOT/" '
        function where(line,    m) {
            # "#3 exo::BatchRunners::run(...) ../framework/runtime/worker.cpp:85 (exo+0x1234)"
            if (match(line, /(framework|integration|tests|handlers|bench)\/[^ :]+:[0-9]+/))
                return substr(line, RSTART, RLENGTH)
            return ""
        }
        # The module of a frame outside the repository; "" for the TSan runtime (its free and
        # memcpy interceptors), so that the library which called them is named instead.
        function library(line,    lib) {
            if (match(line, /\([^ ()]+\+0x[0-9a-f]+\)$/)) {
                lib = substr(line, RSTART + 1, RLENGTH - 2); sub(/\+0x.*/, "", lib)
                return lib ~ /^libtsan/ ? "" : lib
            }
            return ""
        }
        function finish() {
            if (kind == "") return
            for (i = 1; i <= nstacks && i <= 2; i++) {
                if (top[i] == "" && lib_of[i] == "lost") top[i] = "(stack not kept)"
                else if (top[i] == "") top[i] = "(in " (lib_of[i] == "" ? "?" : lib_of[i]) ")"
            }
            # A report of one stack and no header (a signal-unsafe call): its first exo frame.
            if (nstacks == 0) top[1] = (first_any == "" ? "(no exo frame)" : first_any)
            key = kind ": " top[1] (nstacks > 1 ? "  vs  " top[2] : "")
            count[key]++
            if (!(key in example)) example[key] = FILENAME
            kind = ""
        }
        FNR == 1 { finish() }
        /^WARNING: ThreadSanitizer: / {
            finish()
            kind = $0; sub(/^WARNING: ThreadSanitizer: /, "", kind); sub(/ \(pid=.*$/, "", kind)
            nstacks = 0; stack_open = 0; first_any = ""; delete top; delete lib_of
            next
        }
        kind == "" { next }
        /^SUMMARY: ThreadSanitizer/ { finish(); next }
        # A stack header: "  Write of size 8 at ... by thread T3:", "  Mutex M1 acquired here
        # while holding mutex M0 in thread T1:"; not the allocation, mutex and thread origins.
        /^  [A-Z].*:$/ {
            stack_open = 0
            if ($0 ~ /Location is|created at:|created by|Mutex M[0-9]+ \(.*\) created/) next
            nstacks++; stack_open = 1; top[nstacks] = ""; lib_of[nstacks] = ""
            next
        }
        first_any == "" && /^ +#[0-9]+ / { first_any = where($0) }
        stack_open && /failed to restore the stack/ { lib_of[nstacks] = "lost"; next }
        stack_open && /^ +#[0-9]+ / {
            if (top[nstacks] == "") {
                w = where($0)
                if (w != "") top[nstacks] = w
                else if (lib_of[nstacks] == "") lib_of[nstacks] = library($0)
            }
            next
        }
        END {
            finish()
            for (k in count) printf "%d\t%s\t%s\n", count[k], k, example[k]
        }' $files | sort -t$'\t' -k1,1nr |
        awk -F'\t' '{ printf "%5d x %s\n        e.g. %s\n", $1, $2, $3 }' >"$LOG_DIR/summary.txt"
    local total distinct
    # shellcheck disable=SC2086
    total="$(cat $files | grep -c '^WARNING: ThreadSanitizer:' || true)"
    distinct="$(grep -c ' x ' "$LOG_DIR/summary.txt" || true)"
    note "ThreadSanitizer: $total report(s), $distinct distinct, by kind and first exo frame" \
        "(the reports: $LOG_DIR/<suite>.<pid>; this list: $LOG_DIR/summary.txt):"
    cat "$LOG_DIR/summary.txt"
}

cd "$REPO_ROOT"
mkdir -p "$BUILD_DIR" "$LOG_DIR"
rm -f -- "$LOG_DIR"/*

# Build: configure once with the sanitizer (the cache keeps it; scripts/build.sh's own configure
# adds its usual options), then scripts/build.sh builds only what the chosen suites need.
targets=(--target exo_unit_tests)
wants integration && targets+=(exo exo_integration_tests)
configure=(cmake -S "$REPO_ROOT" -B "$BUILD_DIR" -DEXO_SANITIZE=thread)
[[ -f "$BUILD_DIR/CMakeCache.txt" ]] || configure+=(-G Ninja)  # a configured dir keeps its own
started=$SECONDS
if ! "${configure[@]}" >"$LOG_DIR/configure.log" 2>&1; then
    note "ERROR: configuring $BUILD_DIR failed:"
    tail -n 40 "$LOG_DIR/configure.log"
    exit 1
fi
EXO_BUILD_DIR="$BUILD_DIR" "$SCRIPTS/build.sh" "${targets[@]}"
note "TSan build: $((SECONDS - started)) s"

if wants unit; then
    run_suite unit "$UNIT_TIMEOUT" "$BUILD_DIR/exo_unit_tests"
fi

if wants integration; then
    # The mock Kafka broker is this build's `exo mock-kafka`: its reports go to services.<pid>.
    if ! TSAN_OPTIONS="$(tsan_options services)" EXO_BUILD_DIR="$BUILD_DIR" \
        start_services exo-tsan-services; then
        cat "$LOG_DIR/services.log"
        note "ERROR: the services did not start (see above); the integration tests cannot run"
        exit 1
    fi
    export EXO_BINARY="$BUILD_DIR/exo"
    run_suite integration "$INTEGRATION_TIMEOUT" "$BUILD_DIR/exo_integration_tests" "$@"
    stop_services
fi

summarize_reports
exit 0
