#!/usr/bin/env bash
# Configures and builds exo with CMake + Ninja (Release) into build/ as exo's developers and CI
# do: warnings are errors (EXO_WERROR) and the tests are built (EXO_BUILD_TESTS): the library,
# the `exo` binary, exo_unit_tests and exo_integration_tests (and exo_bench with
# EXO_BUILD_BENCH=ON). Run scripts/install-deps.sh first on a new machine.
#
# Quiet when it works: the configure and build output goes to <build dir>/build.log and one
# line says `[build] built <dir> in N s`; when it fails, the last 100 lines of that log are
# printed and the exit status is the failing step's.
#
# Environment: EXO_BUILD_DIR (default <repo>/build), EXO_BUILD_TYPE (default Release),
# EXO_BUILD_JOBS (default 2). Extra arguments are passed to `cmake --build` (e.g. --target exo).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
BUILD_TYPE="${EXO_BUILD_TYPE:-Release}"
JOBS="${EXO_BUILD_JOBS:-2}"

log() { printf '[build] %s\n' "$*" >&2; }

for tool in cmake ninja; do
    command -v "$tool" >/dev/null 2>&1 || {
        log "ERROR: $tool not found: run scripts/install-deps.sh"
        exit 1
    }
done

configure=(cmake -S "$REPO_ROOT" -B "$BUILD_DIR" "-DCMAKE_BUILD_TYPE=$BUILD_TYPE" -DEXO_WERROR=ON
    -DEXO_BUILD_TESTS=ON "-DEXO_BUILD_BENCH=${EXO_BUILD_BENCH:-OFF}")
# A build dir configured before keeps its generator (CMake refuses to switch); a new one uses Ninja.
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
    configure+=(-G Ninja)
fi

build=(cmake --build "$BUILD_DIR" -j "$JOBS" "$@")
mkdir -p "$BUILD_DIR"
BUILD_LOG="$BUILD_DIR/build.log"
started=$SECONDS
status=0
{
    printf '$ %s\n' "${configure[*]}"
    "${configure[@]}" && printf '$ %s\n' "${build[*]}" && "${build[@]}"
} >"$BUILD_LOG" 2>&1 || status=$?
if ((status != 0)); then
    log "FAILED with exit status $status; the last 100 lines of $BUILD_LOG:"
    tail -n 100 "$BUILD_LOG" >&2
    exit "$status"
fi
log "built $BUILD_DIR in $((SECONDS - started)) s"
