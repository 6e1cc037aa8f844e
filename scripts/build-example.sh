#!/usr/bin/env bash
# Builds the example consumer of handlers/ the way a team builds its own (docs/handlers.md,
# "Your own consumer in 5 minutes"): installs exo from the build dir into a prefix, then configures
# handlers/ as a separate CMake project that finds exo with find_package(exo 0.2 CONFIG) and
# builds its `exo` binary. Run scripts/build.sh first. Prints the binary's path last.
#
# Environment: EXO_BUILD_DIR (default <repo>/build), EXO_PREFIX (default <build>/prefix),
# EXO_EXAMPLE_BUILD_DIR (default <build>/example), EXO_BUILD_TYPE (default Release),
# EXO_BUILD_JOBS (default 2), EXO_EXAMPLE_TESTS (ON/OFF, default OFF: also build ledger_tests).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
PREFIX="${EXO_PREFIX:-$BUILD_DIR/prefix}"
EXAMPLE_DIR="${EXO_EXAMPLE_BUILD_DIR:-$BUILD_DIR/example}"
BUILD_TYPE="${EXO_BUILD_TYPE:-Release}"
JOBS="${EXO_BUILD_JOBS:-2}"

log() { printf '[example] %s\n' "$*" >&2; }

log "installing exo into $PREFIX"
rm -rf "$PREFIX"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" >/dev/null
configure=(cmake -S "$REPO_ROOT/handlers" -B "$EXAMPLE_DIR" "-DCMAKE_BUILD_TYPE=$BUILD_TYPE"
    "-DCMAKE_PREFIX_PATH=$PREFIX" "-DEXO_EXAMPLE_TESTS=${EXO_EXAMPLE_TESTS:-OFF}")
[[ -f "$EXAMPLE_DIR/CMakeCache.txt" ]] || configure+=(-G Ninja)
log "building handlers/ against it in $EXAMPLE_DIR"
"${configure[@]}" >/dev/null
cmake --build "$EXAMPLE_DIR" -j "$JOBS" >/dev/null
echo "$EXAMPLE_DIR/exo"
