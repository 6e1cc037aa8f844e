#!/usr/bin/env bash
# Shell helpers shared by scripts/services.sh and scripts/kafka.sh, which start throw-away
# servers: process checks, log tails, free ports, the state directory. Sourced, never run.
# The caller defines log, die and usage, and PORT_MIN/PORT_MAX for pick_port.

# tail_log FILE [LINES]: the last lines of a log, indented, or a note that it does not exist.
tail_log() {
    local file="$1" lines="${2:-25}"
    if [[ -s "$file" ]]; then
        log "---- last $lines lines of $file ----"
        tail -n "$lines" "$file" | sed 's/^/    /' >&2
        log "---- end of $file ----"
    else
        log "(no log at $file)"
    fi
}

# alive PID: true if PID exists and is not a zombie (daemons are reparented to PID 1, which
# in a container may reap them late).
alive() {
    local pid="$1" stat
    kill -0 "$pid" 2>/dev/null || return 1
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 0
    stat="${stat##*) }"
    [[ "${stat:0:1}" != Z ]]
}

# pid_is TEXT PID: true if PID is alive and its command line contains TEXT (a pid file whose
# process is gone and whose pid was reused is not ours).
pid_is() {
    local text="$1" pid="$2" cmdline
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    alive "$pid" || return 1
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 0
    [[ "$cmdline" == *"$text"* ]]
}

# wait_gone PID SECONDS: wait until PID has exited; false if it is still alive afterwards.
wait_gone() {
    local pid="$1" deadline=$((SECONDS + $2))
    while alive "$pid"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

# log_lines FILE: how many lines FILE has now (0 if missing); since_line FILE N: its lines after
# line N. Restarts append to the same log, so only the new lines tell about this start.
log_lines() { if [[ -f "$1" ]]; then wc -l <"$1"; else echo 0; fi; }
since_line() { tail -n "+$(($2 + 1))" "$1" 2>/dev/null || true; }
read_file() { [[ -s "$1" ]] && tr -d ' \t\r\n' <"$1"; }

# port_busy PORT: true if a socket on this host has the TCP port as its local port (listening
# or connected; TIME_WAIT does not block a listener using SO_REUSEADDR, as Redis and PostgreSQL
# do) or something accepts a connection on it.
port_busy() {
    local port="$1"
    if command -v ss >/dev/null 2>&1; then
        [[ -n "$(ss -Htan exclude time-wait "sport = :$port" 2>/dev/null)" ]] && return 0
    fi
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    return 1
}

# pick_port: a random TCP port in [PORT_MIN, PORT_MAX] that looks free now and was not picked
# already by this invocation (PICKED). Another process may still take it first: callers retry.
PICKED=" "
pick_port() {
    local port i
    for ((i = 0; i < 200; i++)); do
        port="$(shuf -i "$PORT_MIN-$PORT_MAX" -n 1)"
        [[ "$PICKED" == *" $port "* ]] && continue
        if ! port_busy "$port"; then
            PICKED+="$port "
            printf '%s\n' "$port"
            return 0
        fi
    done
    die "no free TCP port found in $PORT_MIN-$PORT_MAX after 200 tries"
}

set_dir() {
    [[ -n "${1:-}" ]] || usage
    DIR="$1"
}
# Absolute, symlink-free DIR (it must exist).
resolve_dir() { DIR="$(cd "$DIR" && pwd -P)"; }
