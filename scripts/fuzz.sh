#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang++ and runs each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 300; scripts/test.sh runs it with 20)
#
# Each target starts from its seed corpus fuzz/corpus/<target>/, copied to a temporary
# directory: inputs found on the way are thrown away, the repository's corpus is never
# written. Targets run side by side, EXO_FUZZ_JOBS at a time (default: the CPU count), each
# with -max_total_time=SECONDS and -rss_limit_mb=2048.
#
# Prints one line per target: its name, the inputs it ran, and ok or what it found. For a
# finding it also prints the saved input (under $EXO_FUZZ_BUILD_DIR/findings/, kept) and
# the tail of the fuzzer's output. Exit status: 0 if every target ran clean, 1 if any
# found a crash, leak, timeout or out-of-memory input, 2 if the build failed.
#
# To reproduce a finding: <build dir>/<target> <saved input>; to fuzz one target by hand:
#   <build dir>/fuzz_config -dict=fuzz/dict/fuzz_config.dict /tmp/corpus fuzz/corpus/fuzz_config
#
# Environment: EXO_FUZZ_BUILD_DIR (default <repo>/build-fuzz), EXO_FUZZ_JOBS (default nproc),
# EXO_BUILD_JOBS (compile jobs, default 2), CXX (default clang++).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SECONDS_PER_TARGET="${1:-300}"
BUILD_DIR="${EXO_FUZZ_BUILD_DIR:-$REPO_ROOT/build-fuzz}"
JOBS="${EXO_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"
BUILD_JOBS="${EXO_BUILD_JOBS:-2}"
CLANGXX="${CXX:-clang++}"
TARGETS=(fuzz_key_derivation fuzz_payload fuzz_config fuzz_claim_reply)

log() { printf '[fuzz] %s\n' "$*" >&2; }

if [[ ! "$SECONDS_PER_TARGET" =~ ^[1-9][0-9]*$ ]]; then
    log "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]  (a whole number of seconds, got '$SECONDS_PER_TARGET')"
    exit 2
fi
if [[ ! "$JOBS" =~ ^[1-9][0-9]*$ ]]; then
    log "ERROR: EXO_FUZZ_JOBS must be a whole number of at least 1, got '$JOBS'"
    exit 2
fi
for tool in cmake ninja "$CLANGXX"; do
    command -v "$tool" >/dev/null 2>&1 || {
        log "ERROR: $tool not found: run scripts/install-deps.sh"
        exit 2
    }
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/exo-fuzz.XXXXXX")"
RUNNING=()  # pids of the fuzzers running now

# shellcheck disable=SC2317  # reached through the traps
cleanup() {
    local pid
    for pid in "${RUNNING[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${RUNNING[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------------------- build
configure=(cmake -S "$REPO_ROOT/fuzz" -B "$BUILD_DIR" "-DCMAKE_CXX_COMPILER=$CLANGXX")
# A build dir configured before keeps its generator (CMake refuses to switch); a new one uses Ninja.
[[ -f "$BUILD_DIR/CMakeCache.txt" ]] || configure+=(-G Ninja)
if ! { "${configure[@]}" && cmake --build "$BUILD_DIR" -j "$BUILD_JOBS"; } >"$WORK/build.log" 2>&1; then
    log "ERROR: building the fuzz targets in $BUILD_DIR failed:"
    tail -n 40 "$WORK/build.log" >&2
    exit 2
fi

# --------------------------------------------------------------------------------- run
declare -A TARGET_OF  # pid of a running fuzzer -> its target

# start_target NAME: start fuzzing NAME in the background from a copy of its corpus; its
# output goes to $WORK/NAME.log.
start_target() {
    local name="$1" corpus="$WORK/$1.corpus" artifacts="$WORK/$1.artifacts"
    mkdir -p "$corpus" "$artifacts"
    if [[ -d "$REPO_ROOT/fuzz/corpus/$name" ]]; then
        cp -R "$REPO_ROOT/fuzz/corpus/$name/." "$corpus/"
    fi
    local args=(-max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=25
        -print_final_stats=1 -artifact_prefix="$artifacts/")
    if [[ -f "$REPO_ROOT/fuzz/dict/$name.dict" ]]; then
        args+=(-dict="$REPO_ROOT/fuzz/dict/$name.dict")
    fi
    # Undefined behaviour stops the run with a stack, like the address sanitizer's errors.
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_stack_use_after_return=1}" \
        UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
        "$BUILD_DIR/$name" "${args[@]}" "$corpus" >"$WORK/$name.log" 2>&1 &
    RUNNING+=("$!")
    TARGET_OF[$!]="$name"
}

pending=("${TARGETS[@]}")
while ((${#pending[@]} > 0 || ${#RUNNING[@]} > 0)); do
    while ((${#pending[@]} > 0 && ${#RUNNING[@]} < JOBS)); do
        start_target "${pending[0]}"
        pending=("${pending[@]:1}")
    done
    finished=""
    rc=0
    wait -n -p finished "${RUNNING[@]}" || rc=$?
    [[ -n "$finished" ]] || continue
    echo "$rc" >"$WORK/${TARGET_OF[$finished]}.rc"
    still=()
    for pid in "${RUNNING[@]}"; do
        [[ "$pid" == "$finished" ]] || still+=("$pid")
    done
    RUNNING=("${still[@]+"${still[@]}"}")
done

# ------------------------------------------------------------------------------ report
found=0
for name in "${TARGETS[@]}"; do
    log_file="$WORK/$name.log"
    rc="$(cat "$WORK/$name.rc" 2>/dev/null || echo '?')"
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log_file" | tail -n 1)"
    [[ -n "$runs" ]] || runs="$(grep -aoE '^#[0-9]+' "$log_file" | tail -n 1 | tr -d '#' || true)"
    if [[ "$rc" == 0 ]]; then
        printf '%-22s %10s runs  ok\n' "$name" "${runs:-?}"
        continue
    fi
    found=1
    # libFuzzer names the saved input for what it found: crash-, leak-, timeout-, oom-...
    artifact="$(find "$WORK/$name.artifacts" -type f 2>/dev/null | head -n 1)"
    kind="exit status $rc"
    saved=""
    if [[ -n "$artifact" ]]; then
        kind="$(basename "$artifact")"
        kind="${kind%%-*}"
        mkdir -p "$BUILD_DIR/findings/$name"
        saved="$BUILD_DIR/findings/$name/$(basename "$artifact")"
        cp "$artifact" "$saved"
    fi
    printf '%-22s %10s runs  FOUND %s\n' "$name" "${runs:-?}" "$kind"
    if [[ -n "$saved" ]]; then
        printf '  input: %s (%s bytes)\n  reproduce: %s %s\n' "$saved" "$(wc -c <"$saved")" \
            "$BUILD_DIR/$name" "$saved"
    fi
    printf '  fuzzer output (last 40 lines, progress lines left out):\n'
    grep -avE '^#[0-9]|^[[:space:]]*NEW_FUNC|^INFO:' "$log_file" | tail -n 40 | sed 's/^/    /'
done
exit "$found"
