#!/usr/bin/env bash
# Configures and builds exo with CMake + Ninja (Release) into build/ as exo's developers and CI
# do: warnings are errors (EXO_WERROR) and the tests are built (EXO_BUILD_TESTS): the library,
# the `exo` binary, exo_unit_tests and exo_integration_tests (and exo_bench with
# EXO_BUILD_BENCH=ON). Run scripts/install-deps.sh first on a new machine.
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

log "configuring $BUILD_DIR ($BUILD_TYPE)"
"${configure[@]}"
log "building with $JOBS jobs"
cmake --build "$BUILD_DIR" -j "$JOBS" "$@"
log "done: $BUILD_DIR/exo, $BUILD_DIR/exo_unit_tests, $BUILD_DIR/exo_integration_tests"
