#!/usr/bin/env bash
# Throw-away Redis, PostgreSQL and mock Kafka for the integration tests and the demo.
#
#   scripts/services.sh start DIR            start all three on free loopback ports, write DIR/services.env
#   scripts/services.sh stop DIR             stop everything started in DIR, then delete DIR (idempotent)
#   scripts/services.sh redis-stop DIR       stop Redis only (outage tests)
#   scripts/services.sh redis-start DIR      start Redis again on the SAME port (empty: it saves nothing)
#   scripts/services.sh postgres-stop DIR    stop PostgreSQL only (pg_ctl stop -m immediate: a crash)
#   scripts/services.sh postgres-start DIR   start PostgreSQL again on the SAME port (data kept)
#   scripts/services.sh logs DIR             print the tail of every service log in DIR
#
# All state (data, logs, pid files, sockets, chosen ports) lives under DIR; nothing uses the
# system's redis/postgresql services or their default ports. After `start`, `source
# DIR/services.env` exports EXO_REDIS_HOST, EXO_REDIS_PORT, EXO_POSTGRES_URI, EXO_POSTGRES_PORT,
# EXO_KAFKA_BOOTSTRAP, EXO_SERVICES_DIR and EXO_SERVICES_SCRIPT (this script's absolute path).
#
# Environment:
#   EXO_BIN                  the exo binary that runs `mock-kafka` (default: $EXO_BUILD_DIR/exo)
#   EXO_BUILD_DIR            default: <repo>/build
#   EXO_SERVICES_KAFKA=0     do not start the mock Kafka cluster (EXO_KAFKA_BOOTSTRAP is then unset)
#   EXO_KAFKA_START_TIMEOUT  seconds to wait for the mock broker's bootstrap file (default 20)
#   EXO_PG_BINDIR            PostgreSQL server binaries (default: newest /usr/lib/postgresql/*/bin)
#   EXO_PORT_MIN/EXO_PORT_MAX  range the random ports are picked from (default 20000-60000)
#
# As root, PostgreSQL runs as the `postgres` OS user (initdb refuses root); otherwise as the
# current user. Role `exo` (superuser, trust auth on loopback only) owns database `exo`.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
EXO_BIN="${EXO_BIN:-$BUILD_DIR/exo}"
KAFKA_START_TIMEOUT="${EXO_KAFKA_START_TIMEOUT:-20}"
PORT_MIN="${EXO_PORT_MIN:-20000}"
PORT_MAX="${EXO_PORT_MAX:-60000}"
PORT_ATTEMPTS=10
MARKER=".exo-services"

SELF="scripts/services.sh"
DIR=""
STARTED=()  # services started by this invocation, stopped again if `start` fails

log() { printf '[services] %s\n' "$*" >&2; }

die() {
    log "ERROR: $*"
    exit 1
}

usage() {
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# --- small helpers --------------------------------------------------------------------------

# shellcheck source=scripts/process_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/process_helpers.sh"  # tail_log, alive, pid_is, ports, DIR

# service_failed NAME LOGFILE HINT: report a failed start and exit (the EXIT trap cleans up).
service_failed() {
    local name="$1" logfile="$2" hint="$3"
    log "ERROR: $name failed to start."
    tail_log "$logfile" 40
    log "What to do: $hint"
    log "Logs are kept in $DIR; remove everything with: $SELF stop $DIR"
    exit 1
}


# --- Redis ----------------------------------------------------------------------------------

redis_dir() { printf '%s/redis' "$DIR"; }
redis_log() { printf '%s/redis/redis.log' "$DIR"; }
redis_pidfile() { printf '%s/redis/redis.pid' "$DIR"; }

# redis_ours PORT: true if the Redis answering on PORT is the one whose --dir is ours.
redis_ours() {
    local port="$1" got
    got="$(redis-cli -h 127.0.0.1 -p "$port" --raw CONFIG GET dir 2>/dev/null | sed -n 2p)" || return 1
    [[ "$got" == "$(redis_dir)" ]]
}

# redis_launch PORT: start redis-server on PORT and wait until it answers.
# Returns 0 when up, 2 if the port was taken (caller may retry another port), 1 otherwise.
redis_launch() {
    local port="$1" logfile pidfile deadline pid
    logfile="$(redis_log)"
    pidfile="$(redis_pidfile)"
    mkdir -p "$(redis_dir)"
    local from
    from="$(log_lines "$logfile")"
    rm -f "$pidfile"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
        --dir "$(redis_dir)" --pidfile "$pidfile" --logfile "$logfile" >/dev/null 2>&1 || return 1
    deadline=$((SECONDS + 15))
    while ((SECONDS < deadline)); do
        if since_line "$logfile" "$from" | grep -iE 'address already in use|could not create server tcp listening socket' >/dev/null; then
            pid="$(read_file "$pidfile" || true)"
            [[ -n "$pid" ]] && pid_is redis-server "$pid" && kill -KILL "$pid" 2>/dev/null
            return 2
        fi
        pid="$(read_file "$pidfile" || true)"
        if [[ -n "$pid" ]] && pid_is redis-server "$pid" && redis_ours "$port" \
            && [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

redis_hint="check that redis-server (Debian package redis-server) is installed (scripts/install-deps.sh) and read the log above."

# redis_start_new: pick a free port (retrying on a race) and start Redis; record the port.
redis_start_new() {
    local attempt port rc
    command -v redis-server >/dev/null 2>&1 || service_failed Redis "$(redis_log)" "redis-server is not installed: run scripts/install-deps.sh"
    for ((attempt = 1; attempt <= PORT_ATTEMPTS; attempt++)); do
        port="$(pick_port)"
        rc=0
        redis_launch "$port" || rc=$?
        if ((rc == 0)); then
            printf '%s\n' "$port" >"$DIR/redis.port"
            log "Redis up on 127.0.0.1:$port"
            return 0
        fi
        ((rc == 2)) || service_failed Redis "$(redis_log)" "$redis_hint"
        log "Redis: port $port was taken meanwhile, trying another (attempt $attempt/$PORT_ATTEMPTS)"
    done
    service_failed Redis "$(redis_log)" "no free port after $PORT_ATTEMPTS attempts; is something grabbing ports in $PORT_MIN-$PORT_MAX?"
}

# redis_restart: start Redis again on the port recorded in DIR (used after redis-stop).
redis_restart() {
    local port rc=0 pid
    port="$(read_file "$DIR/redis.port")" || die "no Redis port recorded in $DIR: run '$SELF start $DIR' first"
    pid="$(read_file "$(redis_pidfile)" || true)"
    if [[ -n "$pid" ]] && pid_is redis-server "$pid" && redis_ours "$port"; then
        log "Redis already running on 127.0.0.1:$port"
        return 0
    fi
    redis_launch "$port" || rc=$?
    case "$rc" in
        0) log "Redis up again on 127.0.0.1:$port" ;;
        2) service_failed Redis "$(redis_log)" "port $port is now used by another process (see: ss -ltnp 'sport = :$port'); stop it, or restart all services." ;;
        *) service_failed Redis "$(redis_log)" "$redis_hint" ;;
    esac
}

redis_stop() {
    local port pid
    port="$(read_file "$DIR/redis.port" || true)"
    pid="$(read_file "$(redis_pidfile)" || true)"
    if [[ -z "$pid" ]] || ! pid_is redis-server "$pid"; then
        rm -f "$(redis_pidfile)"
        return 0
    fi
    if [[ -n "$port" ]] && redis_ours "$port"; then
        redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
    else
        kill -TERM "$pid" 2>/dev/null || true
    fi
    if ! wait_gone "$pid" 10; then
        log "Redis (pid $pid) did not stop in 10 s: killing it"
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone "$pid" 5 || log "WARNING: Redis pid $pid survived SIGKILL"
    fi
    rm -f "$(redis_pidfile)"
    log "Redis stopped${port:+ (port $port)}"
}

# --- PostgreSQL -----------------------------------------------------------------------------

pg_root() { printf '%s/pg' "$DIR"; }
pg_data() { printf '%s/pg/data' "$DIR"; }
pg_log() { printf '%s/pg/postgres.log' "$DIR"; }
pg_sock() { printf '%s/pgsock' "$DIR"; }

PG_BIN=""
find_pg_bin() {
    if [[ -n "${EXO_PG_BINDIR:-}" ]]; then
        PG_BIN="$EXO_PG_BINDIR"
    else
        local d
        PG_BIN=""
        while IFS= read -r d; do
            [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && PG_BIN="$d"
        done < <(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V)
    fi
    [[ -n "$PG_BIN" && -x "$PG_BIN/pg_ctl" ]]
}

pg_bin_missing="PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: run scripts/install-deps.sh (or set EXO_PG_BINDIR)"

# as_pg LOG CMD...: run CMD as the postgres OS user when we are root, else as ourselves, with
# its output appended to LOG. The working directory is the pg root, which that user can enter.
# (The redirection is inside the subshell on purpose: a function call's redirection would
# still be in force if a signal trap ran right after CMD, and swallow the trap's messages.)
as_pg() {
    local out="$1"
    shift
    if ((EUID == 0)); then
        (cd "$(pg_root)" && exec runuser -u postgres -- "$@" >>"$out" 2>&1)
    else
        (cd "$(pg_root)" && exec "$@" >>"$out" 2>&1)
    fi
}

# pg_write_conf PORT: the settings of this throw-away cluster (included from postgresql.conf).
pg_write_conf() {
    local port="$1"
    cat >"$(pg_data)/exo-test.conf" <<EOF
# Written by $SELF: a throw-away test cluster. Speed over durability.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$(pg_sock)'
max_connections = 200
fsync = off
# synchronous_commit stays on: a commit must be written (to the OS at least)
# before exo moves an offset past it. With it off, a PostgreSQL crash loses
# acknowledged commits whose offsets were already committed: the outage tests
# catch exactly that. fsync=off only matters if the whole machine crashes.
synchronous_commit = on
full_page_writes = off
EOF
    if ((EUID == 0)); then chown postgres:postgres "$(pg_data)/exo-test.conf"; fi
}

pg_initdb() {
    local root sock
    root="$(pg_root)"
    sock="$(pg_sock)"
    # unix socket paths are limited to 107 bytes
    ((${#sock} + 20 < 107)) || die "DIR path too long for a PostgreSQL unix socket ($sock): use a shorter DIR, e.g. one made by mktemp -d"
    mkdir -p "$root" "$sock"
    if ((EUID == 0)); then
        id postgres >/dev/null 2>&1 \
            || service_failed PostgreSQL "$(pg_log)" "there is no 'postgres' OS user to run PostgreSQL as (initdb refuses root): run scripts/install-deps.sh"
        # initdb refuses root: the cluster belongs to the postgres user, which must be able
        # to traverse DIR (mktemp -d makes it 0700).
        chmod o+x "$DIR"
        chown postgres:postgres "$root" "$sock"
        if ! runuser -u postgres -- test -w "$root"; then
            service_failed PostgreSQL "$(pg_log)" "the postgres OS user cannot reach $root: every parent directory of $DIR must be traversable by it (use a DIR under /tmp, e.g. from mktemp -d)"
        fi
    fi
    if ! as_pg "$root/initdb.log" "$PG_BIN/initdb" -D "$(pg_data)" -U exo --auth=trust \
        --encoding=UTF8 --locale=C --no-sync; then
        service_failed PostgreSQL "$root/initdb.log" "initdb failed; read the log above."
    fi
    printf "\ninclude 'exo-test.conf'\n" >>"$(pg_data)/postgresql.conf"
}

# pg_launch: pg_ctl start and wait. Returns 0 when up, 2 if the port was taken, 1 otherwise.
pg_launch() {
    local port="$1" logfile deadline from
    logfile="$(pg_log)"
    touch "$logfile"
    if ((EUID == 0)); then chown postgres:postgres "$logfile"; fi
    from="$(log_lines "$logfile")"
    if ! as_pg "$(pg_root)/pg_ctl.log" "$PG_BIN/pg_ctl" -D "$(pg_data)" -l "$logfile" -w -t 60 start; then
        if since_line "$logfile" "$from" | grep -i 'address already in use' >/dev/null; then
            return 2
        fi
        cat "$(pg_root)/pg_ctl.log" >>"$logfile" 2>/dev/null || true
        return 1
    fi
    deadline=$((SECONDS + 30))
    until "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U exo -d postgres; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

pg_hint="read the log above; PostgreSQL needs shared memory and a writable DIR."

pg_start_new() {
    local attempt port rc
    find_pg_bin || service_failed PostgreSQL "$(pg_log)" "$pg_bin_missing"
    pg_initdb
    for ((attempt = 1; attempt <= PORT_ATTEMPTS; attempt++)); do
        port="$(pick_port)"
        pg_write_conf "$port"
        rc=0
        pg_launch "$port" || rc=$?
        if ((rc == 0)); then
            printf '%s\n' "$port" >"$DIR/postgres.port"
            break
        fi
        ((rc == 2)) || service_failed PostgreSQL "$(pg_log)" "$pg_hint"
        log "PostgreSQL: port $port was taken meanwhile, trying another (attempt $attempt/$PORT_ATTEMPTS)"
        ((attempt < PORT_ATTEMPTS)) \
            || service_failed PostgreSQL "$(pg_log)" "no free port after $PORT_ATTEMPTS attempts; is something grabbing ports in $PORT_MIN-$PORT_MAX?"
    done
    if ! "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U exo -O exo exo >"$(pg_root)/createdb.log" 2>&1; then
        cat "$(pg_root)/createdb.log" >>"$(pg_log)" 2>/dev/null || true
        service_failed PostgreSQL "$(pg_log)" "could not create database exo; read the log above."
    fi
    log "PostgreSQL up on 127.0.0.1:$port (role exo, database exo)"
}

pg_restart() {
    local port rc=0
    port="$(read_file "$DIR/postgres.port")" || die "no PostgreSQL port recorded in $DIR: run '$SELF start $DIR' first"
    find_pg_bin || service_failed PostgreSQL "$(pg_log)" "$pg_bin_missing"
    if as_pg /dev/null "$PG_BIN/pg_ctl" -D "$(pg_data)" status; then
        log "PostgreSQL already running on 127.0.0.1:$port"
        return 0
    fi
    pg_launch "$port" || rc=$?
    case "$rc" in
        0) log "PostgreSQL up again on 127.0.0.1:$port" ;;
        2) service_failed PostgreSQL "$(pg_log)" "port $port is now used by another process (see: ss -ltnp 'sport = :$port'); stop it, or restart all services." ;;
        *) service_failed PostgreSQL "$(pg_log)" "$pg_hint" ;;
    esac
}

pg_stop() {
    local pidfile pid
    pidfile="$(pg_data)/postmaster.pid"
    [[ -f "$pidfile" ]] || return 0
    pid="$(head -n 1 "$pidfile" | tr -d ' \r\n')"
    if ! pid_is postgres "$pid"; then
        return 0
    fi
    if find_pg_bin; then
        as_pg "$(pg_root)/pg_ctl.log" "$PG_BIN/pg_ctl" -D "$(pg_data)" -m immediate -w -t 30 stop || true
    else
        kill -QUIT "$pid" 2>/dev/null || true  # the postmaster's "immediate shutdown" signal
    fi
    if ! wait_gone "$pid" 10; then
        log "PostgreSQL (pid $pid) did not stop: killing it"
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone "$pid" 5 || log "WARNING: PostgreSQL pid $pid survived SIGKILL"
    fi
    log "PostgreSQL stopped"
}

# --- mock Kafka -----------------------------------------------------------------------------

kafka_start() {
    local pid deadline boot="" logfile="$DIR/kafka.log" bootfile="$DIR/kafka.bootstrap"
    if [[ ! -x "$EXO_BIN" ]]; then
        : >"$logfile"
        service_failed "mock Kafka" "$logfile" "$EXO_BIN does not exist: build it first with scripts/build.sh (or set EXO_BIN)."
    fi
    rm -f "$bootfile"
    nohup "$EXO_BIN" mock-kafka --brokers 3 --bootstrap-file "$bootfile" >"$logfile" 2>&1 </dev/null &
    pid=$!
    printf '%s\n' "$pid" >"$DIR/kafka.pid"
    STARTED+=(kafka)
    deadline=$((SECONDS + KAFKA_START_TIMEOUT))
    while ((SECONDS < deadline)); do
        if ! alive "$pid"; then
            service_failed "mock Kafka" "$logfile" "'$EXO_BIN mock-kafka' exited early; rebuild with scripts/build.sh and read the log above."
        fi
        boot="$(read_file "$bootfile" || true)"
        # Wait for a complete address list (the file may be caught mid-write).
        if [[ "$boot" =~ ^[^,:]+:[0-9]+(,[^,:]+:[0-9]+)*$ ]]; then
            log "mock Kafka up (pid $pid): $boot"
            return 0
        fi
        sleep 0.1
    done
    service_failed "mock Kafka" "$logfile" "no bootstrap address in $bootfile after ${KAFKA_START_TIMEOUT}s; raise EXO_KAFKA_START_TIMEOUT on a slow machine, or read the log above."
}

kafka_stop() {
    local pid
    pid="$(read_file "$DIR/kafka.pid" || true)"
    if [[ -n "$pid" ]] && pid_is mock-kafka "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" 10; then
            log "mock Kafka (pid $pid) did not stop in 10 s after SIGTERM: killing it"
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 5 || log "WARNING: mock Kafka pid $pid survived SIGKILL"
        fi
        log "mock Kafka stopped"
    fi
    rm -f "$DIR/kafka.pid"
}

# --- commands -------------------------------------------------------------------------------

stop_started() {
    local s
    for s in "${STARTED[@]}"; do
        case "$s" in
            kafka) kafka_stop ;;
            redis) redis_stop ;;
            postgres) pg_stop ;;
        esac
    done
}

START_OK=0
on_start_exit() {
    if ((START_OK == 0)) && ((${#STARTED[@]} > 0)); then
        log "start failed: stopping what was started (${STARTED[*]})"
        stop_started || true
    fi
}

# export_line NAME VALUE: a single-quoted `export` line that sh and bash both read back.
export_line() {
    local q="'\\''"
    printf "export %s='%s'\n" "$1" "${2//\'/$q}"
}

env_file_content() {
    local pg_port
    pg_port="$(read_file "$DIR/postgres.port")"
    printf '# Written by %s start: source this file.\n' "$SELF"
    export_line EXO_REDIS_HOST 127.0.0.1
    export_line EXO_REDIS_PORT "$(read_file "$DIR/redis.port")"
    export_line EXO_POSTGRES_URI "postgresql://exo@127.0.0.1:$pg_port/exo"
    export_line EXO_POSTGRES_PORT "$pg_port"
    if [[ -s "$DIR/kafka.bootstrap" ]]; then
        export_line EXO_KAFKA_BOOTSTRAP "$(read_file "$DIR/kafka.bootstrap")"
    fi
    export_line EXO_SERVICES_DIR "$DIR"
    # this script, for tests that stop and restart Redis or PostgreSQL (redis-stop DIR, ...)
    export_line EXO_SERVICES_SCRIPT "$REPO_ROOT/scripts/services.sh"
}

cmd_start() {
    mkdir -p "$DIR"
    resolve_dir
    if [[ -e "$DIR/services.env" ]]; then
        die "$DIR already has running services (services.env exists): run '$SELF stop $DIR' first, or use a new DIR"
    fi
    touch "$DIR/$MARKER"
    trap on_start_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    STARTED+=(redis)
    redis_start_new
    STARTED+=(postgres)
    pg_start_new
    if [[ "${EXO_SERVICES_KAFKA:-1}" != 0 ]]; then
        kafka_start
    fi

    local env="$DIR/services.env" tmp content
    content="$(env_file_content)"
    tmp="$(mktemp "$DIR/.services.env.XXXXXX")"
    cat >"$tmp" <<<"$content"
    chmod 0644 "$tmp"
    mv -f "$tmp" "$env"
    START_OK=1
    log "all services up; environment in $env"
}

cmd_stop() {
    if [[ ! -d "$DIR" ]]; then
        log "$DIR does not exist: nothing to stop"
        return 0
    fi
    resolve_dir
    kafka_stop
    redis_stop
    pg_stop
    if [[ -e "$DIR/$MARKER" ]]; then
        rm -rf -- "$DIR"
        log "removed $DIR"
    else
        log "WARNING: $DIR was not created by '$SELF start' (no $MARKER file): not removing it"
    fi
}

cmd_logs() {
    [[ -d "$DIR" ]] || die "$DIR does not exist"
    tail_log "$(redis_log)" "${1:-30}"
    tail_log "$(pg_log)" "${1:-30}"
    tail_log "$DIR/kafka.log" "${1:-30}"
}

need_started_dir() {
    [[ -d "$DIR" && -e "$DIR/$MARKER" ]] || die "$DIR holds no services: run '$SELF start $DIR' first"
    resolve_dir
}

main() {
    local cmd="${1:-}"
    [[ $# -ge 2 ]] || usage
    set_dir "$2"
    case "$cmd" in
        start) cmd_start ;;
        stop) cmd_stop ;;
        redis-stop) need_started_dir && redis_stop ;;
        redis-start) need_started_dir && redis_restart ;;
        postgres-stop) need_started_dir && pg_stop ;;
        postgres-start) need_started_dir && pg_restart ;;
        logs) cmd_logs "${3:-30}" ;;
        *) usage ;;
    esac
}

main "$@"
