#!/usr/bin/env bash
# THE benchmark command (docs/performance.md): installs the Debian packages (and Node.js for the
# inbox peer), builds exo_bench, installs the peer's npm packages (bench/inbox_peer), starts
# throw-away Redis and PostgreSQL (scripts/services.sh) in a temporary directory, makes that
# PostgreSQL durable as users run it (fsync, full_page_writes on) and turns on
# track_commit_timestamp (the latency run reads commit times from it), runs build/exo_bench with
# the arguments given, and stops and removes the services whatever happens. exo_bench starts its
# own in-process mock Kafka cluster (reachable over TCP, so the Node peer uses it too), unless
# --kafka apache: then scripts/kafka.sh starts a throw-away one-node Apache Kafka (KRaft, on
# loopback, topics not created on use) that every scenario runs against instead, exo_bench
# creating each run's topics (unique names) and deleting them after it; the broker is stopped
# and its directory removed on exit.
#
#   scripts/bench.sh                        the standard workload: 200000 records, 3 runs
#   scripts/bench.sh --records 20000 --runs 1 --only inbox-peer,exo-default
#   scripts/bench.sh --kafka apache [--kafka-version 4.1.1] --only inbox-peer,exo-default
#                                           the same on a real broker (default: kafka.sh's 3.9.1)
#   scripts/bench.sh --only steady          latency at a steady 5,000 and 20,000 records/s:
#                                           exo beside a plain librdkafka consumer, one stream
#   scripts/bench.sh --only keyed           the per-key concurrency scenarios (keyed-{client,server}-
#                                           {partition-c1,partition,key}; 10000 records, 1000 keys)
#   scripts/bench.sh --postgres-fsync off   PostgreSQL without fsync (an option, never the headline)
#   scripts/bench.sh --pg-costs --only inbox-peer,exo-default
#                                           what each scenario costs PostgreSQL per record (WAL,
#                                           rows and index entries per table, pg_stat_statements,
#                                           CPU): PostgreSQL preloads pg_stat_statements and
#                                           times WAL I/O (track_wal_io_timing) for this run only
#   scripts/bench.sh --help                 exo_bench's options
#
# Exit status: exo_bench's (0: every scenario completed and passed its exactly-once check, with
# the targets printed as PASS/FAIL lines; 1: a scenario failed or a check did not pass; 2: bad
# usage or setup). The output is also kept in $EXO_BUILD_DIR/bench-last.txt.
#
# Environment: EXO_BUILD_DIR (default <repo>/build), EXO_BUILD_TYPE (default RelWithDebInfo,
# see scripts/build.sh), MALLOC_ARENA_MAX (default 2 for exo_bench, see below; no effect with
# jemalloc).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$REPO_ROOT/scripts"
export EXO_BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
BENCH="$EXO_BUILD_DIR/exo_bench"
KEPT_OUTPUT="$EXO_BUILD_DIR/bench-last.txt"

SVC_DIR=""
KAFKA_DIR=""

banner() { printf '\n==================== %s ====================\n' "$*" >&2; }
note() { printf '[bench] %s\n' "$*" >&2; }

# --help needs no services: answer it before installing or starting anything.
for arg in "$@"; do
    if [[ "$arg" == --help || "$arg" == -h ]]; then
        if [[ ! -x "$BENCH" ]]; then
            EXO_BUILD_BENCH=ON "$SCRIPTS/build.sh" --target exo_bench >&2
        fi
        exec "$BENCH" --help
    fi
done

# shellcheck disable=SC2317  # reached through the EXIT trap
on_exit() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n "$KAFKA_DIR" ]]; then
        "$SCRIPTS/kafka.sh" stop "$KAFKA_DIR" || note "WARNING: stopping Apache Kafka in $KAFKA_DIR failed"
    fi
    if [[ -n "$SVC_DIR" ]]; then
        "$SCRIPTS/services.sh" stop "$SVC_DIR" || note "WARNING: stopping the services in $SVC_DIR failed"
    fi
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
    note "ERROR: $*"
    exit 2
}

cd "$REPO_ROOT"

# --postgres-fsync on|off, --kafka mock|apache and --kafka-version X are this script's;
# everything else goes to exo_bench.
FSYNC=on
PG_COSTS=0
KAFKA=mock
KAFKA_VERSION=""
BENCH_ARGS=()
while (($#)); do
    case "$1" in
    --postgres-fsync)
        [[ "${2:-}" == on || "${2:-}" == off ]] || fail "--postgres-fsync wants on or off"
        FSYNC="$2"
        shift 2
        ;;
    --kafka)
        [[ "${2:-}" == mock || "${2:-}" == apache ]] ||
            fail "--kafka wants mock (exo_bench's in-process mock cluster, the default) or apache (a real broker, scripts/kafka.sh)"
        KAFKA="$2"
        shift 2
        ;;
    --pg-costs)
        # exo_bench's flag too; here it also changes PostgreSQL's settings (below).
        PG_COSTS=1
        BENCH_ARGS+=("$1")
        shift
        ;;
    --kafka-version)
        [[ -n "${2:-}" ]] || fail "--kafka-version wants a release, e.g. 4.1.1"
        KAFKA_VERSION="$2"
        shift 2
        ;;
    *)
        BENCH_ARGS+=("$1")
        shift
        ;;
    esac
done
[[ -z "$KAFKA_VERSION" || "$KAFKA" == apache ]] || fail "--kafka-version needs --kafka apache"
set -- "${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}"

banner "1/5 install dependencies"
EXO_APT_NODE=1 "$SCRIPTS/install-deps.sh"
( cd "$REPO_ROOT/bench/inbox_peer" && npm ci --no-audit --no-fund --loglevel=error >/dev/null ) \
    || fail "npm ci in bench/inbox_peer failed (the inbox peer's packages; the npm registry must be reachable)"

banner "2/5 build exo_bench"
EXO_BUILD_BENCH=ON "$SCRIPTS/build.sh" --target exo_bench
[[ -x "$BENCH" ]] || fail "$BENCH was not built"

banner "3/5 start Redis and PostgreSQL"
SVC_DIR="$(mktemp -d "${TMPDIR:-/tmp}/exo-bench.XXXXXX")"
# exo_bench runs its own in-process mock Kafka cluster; --kafka apache starts a real one below.
EXO_SERVICES_KAFKA=0 "$SCRIPTS/services.sh" start "$SVC_DIR" || fail "the services did not start (see above)"
# shellcheck source=/dev/null
source "$SVC_DIR/services.env"
# The latency run (exo-paced) measures produce -> commit with pg_xact_commit_timestamp(), which
# needs track_commit_timestamp; it only takes effect after a restart. scripts/services.sh's
# cluster is a throw-away test cluster without fsync; the benchmark measures PostgreSQL as users
# run it (ALTER SYSTEM's postgresql.auto.conf wins over the test settings).
psql "$EXO_POSTGRES_URI" -qX -c "ALTER SYSTEM SET track_commit_timestamp = on" \
    -c "ALTER SYSTEM SET fsync = $FSYNC" -c "ALTER SYSTEM SET full_page_writes = $FSYNC" \
    || fail "could not set track_commit_timestamp and fsync"
# --pg-costs: statement statistics need the library loaded at start; WAL I/O timing costs a
# clock read per WAL write and sync. Not in the other runs, whose figures are the headline.
if ((PG_COSTS)); then
    psql "$EXO_POSTGRES_URI" -qX -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" \
        -c "ALTER SYSTEM SET track_wal_io_timing = on" \
        || fail "could not preload pg_stat_statements (--pg-costs)"
fi
"$SCRIPTS/services.sh" postgres-stop "$SVC_DIR"
"$SCRIPTS/services.sh" postgres-start "$SVC_DIR" || fail "PostgreSQL did not restart (see above)"
note "Redis 127.0.0.1:$EXO_REDIS_PORT, PostgreSQL $EXO_POSTGRES_URI (fsync $FSYNC, track_commit_timestamp on$( ((PG_COSTS)) && echo ", pg_stat_statements preloaded, track_wal_io_timing on"))"

KAFKA_ARGS=()
if [[ "$KAFKA" == apache ]]; then
    banner "4/5 start Apache Kafka${KAFKA_VERSION:+ $KAFKA_VERSION} (scripts/kafka.sh, one node)"
    KAFKA_DIR="$(mktemp -d "${TMPDIR:-/tmp}/exo-bench-kafka.XXXXXX")"
    "$SCRIPTS/kafka.sh" start "$KAFKA_DIR" --nodes 1 ${KAFKA_VERSION:+--version "$KAFKA_VERSION"} ||
        fail "Apache Kafka did not start (see above)"
    # shellcheck source=/dev/null
    source "$KAFKA_DIR/kafka.env"
    KAFKA_ARGS=(--bootstrap "$EXO_KAFKA_BOOTSTRAP"
        --kafka-label "Apache Kafka $EXO_KAFKA_VERSION (one KRaft node, scripts/kafka.sh)")
    # The broker's JVM: exo_bench reports its CPU per scenario.
    if [[ -s "$KAFKA_DIR/node1/kafka.pid" ]]; then
        KAFKA_ARGS+=(--broker-pid "$(<"$KAFKA_DIR/node1/kafka.pid")")
    fi
    note "Apache Kafka $EXO_KAFKA_VERSION at $EXO_KAFKA_BOOTSTRAP"
else
    banner "4/5 Kafka: exo_bench's in-process mock cluster"
fi

banner "5/5 run $BENCH ${KAFKA_ARGS[*]+"${KAFKA_ARGS[*]} "}$*"
# exo_bench links jemalloc as every exo program does (CMakeLists.txt, EXO_JEMALLOC), and then
# this has no effect. Built with -DEXO_JEMALLOC=OFF: the benchmark starts and stops a daemon per
# scenario in one process; glibc would keep every finished daemon's per-thread malloc arenas, so
# the process's RSS would grow from scenario to scenario (the heap in use does not). Two arenas
# keep the memory figures about exo, and cost exo CPU in the arenas' locks (docs/performance.md,
# "The allocator").
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
rc=0
"$BENCH" "${KAFKA_ARGS[@]+"${KAFKA_ARGS[@]}"}" "$@" | tee "$KEPT_OUTPUT" || rc=${PIPESTATUS[0]}
note "output kept in $KEPT_OUTPUT"
exit "$rc"
