#!/usr/bin/env bash
# Runs clang-tidy (Debian's /usr/bin/clang-tidy, with the checks of the top-level .clang-tidy)
# over exo's own C++: framework/, handlers/, tests/ and integration/, through the build's
# compile_commands.json (scripts/build.sh writes it; the flags are GCC's, so clang is told to
# ignore warning options it does not know).
#
#   scripts/tidy.sh            the translation units changed against main (committed or not),
#                              and those that include a changed header directly
#   scripts/tidy.sh --all      every translation unit (slow: see below)
#   scripts/tidy.sh FILE...    these files
#
# Quiet when clean: one line `[tidy] N files clean in S s`. Otherwise it prints each finding
# once (a header's finding is reported by every file that includes it), relative to the
# repository, then `[tidy] N findings in M files`, and exits 1. Exit 2: it could not run.
#
# Why changed files by default: clang-tidy parses each file as a compiler does, and exo's files
# include librdkafka, libpqxx, spdlog and doctest; a file takes 5-25 s of CPU, so every file
# (--all) takes about 20 minutes of an idle 2-core machine, and much longer beside other work.
# --all is for a change to .clang-tidy, or a periodic sweep; it does not fit the test command.
#
# Environment: EXO_BUILD_DIR (default <repo>/build), EXO_TIDY_BASE (the ref compared against,
# default main), EXO_TIDY_JOBS (parallel clang-tidy processes, default 2).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
BASE="${EXO_TIDY_BASE:-main}"
JOBS="${EXO_TIDY_JOBS:-2}"
CLANG_TIDY=/usr/bin/clang-tidy

log() { printf '[tidy] %s\n' "$*" >&2; }

[[ -x "$CLANG_TIDY" ]] || { log "ERROR: $CLANG_TIDY not found: apt-get install clang-tidy"; exit 2; }
DB="$BUILD_DIR/compile_commands.json"
[[ -f "$DB" ]] || { log "ERROR: $DB not found: run scripts/build.sh first"; exit 2; }

mode=changed
explicit=()
for arg in "$@"; do
    case "$arg" in
        --all) mode=all ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) log "ERROR: unknown option $arg (--all, --help, or files)"; exit 2 ;;
        *) mode=files; explicit+=("$(realpath "$arg")") ;;
    esac
done

# Every translation unit of exo's own code the build knows (generated sources excluded).
own='^'"$REPO_ROOT"'/(framework|handlers|tests|integration)/'
mapfile -t units < <(sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$DB" | grep -E "$own" | sort -u)

case "$mode" in
    all) files=("${units[@]}") ;;
    files) files=("${explicit[@]}") ;;
    changed)
        git -C "$REPO_ROOT" rev-parse --verify --quiet "$BASE" >/dev/null || {
            log "ERROR: no ref '$BASE' to compare with (set EXO_TIDY_BASE, or use --all)"
            exit 2
        }
        fork="$(git -C "$REPO_ROOT" merge-base HEAD "$BASE")"
        mapfile -t changed < <({
            git -C "$REPO_ROOT" diff --name-only "$fork"
            git -C "$REPO_ROOT" ls-files --others --exclude-standard
        } | grep -E '^(framework|handlers|tests|integration)/.*\.(cpp|hpp)$' | sort -u)
        files=()
        for path in "${changed[@]}"; do
            [[ -f "$REPO_ROOT/$path" ]] || continue  # deleted
            if [[ "$path" == *.cpp ]]; then
                files+=("$REPO_ROOT/$path")
                continue
            fi
            # A header: the units that include it directly (an include path it ends with).
            for unit in "${units[@]}"; do
                while read -r inc; do
                    if [[ "/$path" == */"$inc" ]]; then
                        files+=("$unit")
                        break
                    fi
                done < <(sed -n 's/^#include [<"]\([^>"]*\)[>"].*/\1/p' "$unit")
            done
        done
        # Only units the build compiles (not handlers/tests/, a project of its own).
        mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -v '^$' | sort -u |
            grep -Fxf <(printf '%s\n' "${units[@]}") || true)
        ;;
esac

if ((${#files[@]} == 0)); then
    echo "[tidy] nothing to check: no C++ file changed against $BASE (--all checks every file)"
    exit 0
fi

started=$SECONDS
out="$(mktemp "${TMPDIR:-/tmp}/exo-tidy.XXXXXX")"
trap 'rm -f "$out"' EXIT
# Findings in exo's headers are wanted too; system and library headers are not.
status=0
printf '%s\n' "${files[@]}" |
    xargs -P "$JOBS" -n 1 "$CLANG_TIDY" -p "$BUILD_DIR" --quiet \
        --extra-arg=-Wno-unknown-warning-option --header-filter="$own" \
        >"$out" 2>/dev/null || status=$?

# One line per finding, each once, paths relative to the repository.
findings="$(grep -E '^/[^:]+:[0-9]+:[0-9]+: (warning|error): ' "$out" |
    sed "s|^$REPO_ROOT/||" | sort -u || true)"
if [[ -z "$findings" ]]; then
    if ((status != 0)); then
        log "ERROR: clang-tidy failed (exit $status) without a finding; its output:"
        cat "$out" >&2
        exit 2
    fi
    echo "[tidy] ${#files[@]} files clean in $((SECONDS - started)) s"
    exit 0
fi
echo "$findings"
count="$(wc -l <<<"$findings")"
where="$(cut -d: -f1 <<<"$findings" | sort -u | wc -l)"
echo "[tidy] $count findings in $where files (${#files[@]} checked in $((SECONDS - started)) s)"
exit 1
