#!/usr/bin/env bash
# A throw-away Redis Cluster on loopback for the cluster integration tests: 3 masters and
# 3 replicas (Debian's redis-server with --cluster-enabled yes, joined by
# `redis-cli --cluster create --cluster-replicas 1`).
#
#   scripts/redis-cluster.sh start DIR            start the six nodes on free ports, write DIR/cluster.env
#   scripts/redis-cluster.sh stop DIR             stop every node started in DIR, then delete DIR (idempotent)
#   scripts/redis-cluster.sh kill-node DIR PORT   SIGKILL the node on PORT (a crashed master: its replica takes over)
#   scripts/redis-cluster.sh wait-ok DIR          wait until every live node says cluster_state:ok and agrees on the masters
#
# After `start`, `source DIR/cluster.env` exports EXO_REDIS_CLUSTER_NODES (host:port,...: the
# startup nodes, masters first) and EXO_REDIS_CLUSTER_DIR. cluster-node-timeout is 2000 ms and
# every replica may be promoted however long its link was down (cluster-replica-validity-factor 0),
# so a killed master's replica takes over within a few seconds. Nodes keep no data on disk.
#
# Environment: EXO_PORT_MIN/EXO_PORT_MAX  range the ports are picked from (default 20000-50000;
# each node also uses its port + 10000 for the cluster bus).
set -euo pipefail

PORT_MIN="${EXO_PORT_MIN:-20000}"
PORT_MAX="${EXO_PORT_MAX:-50000}"
NODES=6
NODE_TIMEOUT_MS=2000
MARKER=".exo-redis-cluster"
SELF="scripts/redis-cluster.sh"
DIR=""
PICKED=" "

log() { printf '[redis-cluster] %s\n' "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}
usage() {
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# shellcheck source=scripts/process_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/process_helpers.sh"

node_dir() { printf '%s/node-%s' "$DIR" "$1"; }
ports() { cat "$DIR/ports" 2>/dev/null || true; }

# free_pair: sets PORT to a port whose cluster bus port (+10000) is free too, and that is no
# other node's port or bus port. (Not in a $(...) subshell: PICKED must remember it.)
free_pair() {
    local i candidate
    for ((i = 0; i < 200; i++)); do
        candidate="$(shuf -i "$PORT_MIN-$PORT_MAX" -n 1)"
        [[ "$PICKED" == *" $candidate "* || "$PICKED" == *" $((candidate + 10000)) "* ]] && continue
        port_busy "$candidate" && continue
        port_busy $((candidate + 10000)) && continue
        PICKED+="$candidate $((candidate + 10000)) "
        PORT="$candidate"
        return 0
    done
    die "no free pair of ports (port and port+10000) found in $PORT_MIN-$PORT_MAX"
}

node_launch() {
    local port="$1" dir
    dir="$(node_dir "$port")"
    mkdir -p "$dir"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --cluster-enabled yes \
        --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout "$NODE_TIMEOUT_MS" \
        --cluster-replica-validity-factor 0 \
        --save '' --appendonly no --dir "$dir" --pidfile "$dir/redis.pid" \
        --logfile "$dir/redis.log" >/dev/null 2>&1 || return 1
    local deadline=$((SECONDS + 15))
    while ((SECONDS < deadline)); do
        # Taken by another process since port_busy looked: the caller picks another port.
        grep -q 'Address already in use' "$dir/redis.log" 2>/dev/null && return 2
        [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]] &&
            [[ "$(redis-cli -h 127.0.0.1 -p "$port" --raw config get dir 2>/dev/null | sed -n 2p)" == "$dir" ]] &&
            return 0
        sleep 0.1
    done
    return 1
}

# cluster_ok [REPLICAS]: every live node says cluster_state:ok (and, given REPLICAS, knows that
# many replicas), and all give the same CLUSTER SLOTS answer (a promotion has reached every node).
cluster_ok() {
    local port views="" view replicas="${1:-}"
    for port in $(ports); do
        pid_is redis-server "$(read_file "$(node_dir "$port")/redis.pid" || true)" || continue
        redis-cli -h 127.0.0.1 -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
        if [[ -n "$replicas" ]]; then
            [[ "$(redis-cli -h 127.0.0.1 -p "$port" cluster nodes 2>/dev/null | grep -cE ' (myself,)?slave ')" == "$replicas" ]] || return 1
            # A replica takes part in failover once it has synced with its master.
            if redis-cli -h 127.0.0.1 -p "$port" info replication 2>/dev/null | grep -q '^role:slave'; then
                redis-cli -h 127.0.0.1 -p "$port" info replication | grep -q '^master_link_status:up' || return 1
            fi
        fi
        view="$(redis-cli -h 127.0.0.1 -p "$port" cluster slots 2>/dev/null | tr '\n' ' ' | md5sum)" || return 1
        views+="$view"$'\n'
    done
    [[ "$(printf '%s' "$views" | sort -u | grep -c .)" == 1 ]]
}

wait_ok() {
    local deadline=$((SECONDS + ${1:-60}))
    until cluster_ok "${2:-}"; do
        ((SECONDS < deadline)) || die "the cluster in $DIR is not cluster_state:ok with one view of its slots after ${1:-60} s"
        sleep 0.2
    done
}

cmd_start() {
    [[ -e "$DIR" && -n "$(ls -A "$DIR" 2>/dev/null)" ]] && die "$DIR is not empty"
    command -v redis-server >/dev/null 2>&1 || die "redis-server is not installed: run scripts/install-deps.sh"
    mkdir -p "$DIR"
    touch "$DIR/$MARKER"
    trap 'log "start failed; stopping the nodes started"; cmd_stop_quiet' EXIT
    local list=() rc attempt
    for ((i = 0; i < NODES; i++)); do
        for ((attempt = 1; attempt <= 10; attempt++)); do
            free_pair
            rc=0
            node_launch "$PORT" || rc=$?
            ((rc == 2)) && { rm -rf "$(node_dir "$PORT")"; continue; }
            break
        done
        printf '%s\n' "$PORT" >>"$DIR/ports"
        ((rc == 0)) || {
            tail_log "$(node_dir "$PORT")/redis.log" 20
            die "redis-server did not start on port $PORT"
        }
        list+=("127.0.0.1:$PORT")
    done
    redis-cli --cluster create "${list[@]}" --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1 || {
        cat "$DIR/create.log" >&2
        die "redis-cli --cluster create failed"
    }
    wait_ok 60 $((NODES / 2))
    trap - EXIT
    {
        printf 'export EXO_REDIS_CLUSTER_NODES=%s\n' "$(IFS=,; echo "${list[*]}")"
        printf 'export EXO_REDIS_CLUSTER_DIR=%s\n' "$DIR"
    } >"$DIR/cluster.env"
    log "Redis Cluster up: ${list[*]} (3 masters, 3 replicas); source $DIR/cluster.env"
}

cmd_stop_quiet() {
    local port pid
    for port in $(ports); do
        pid="$(read_file "$(node_dir "$port")/redis.pid" || true)"
        [[ -n "$pid" ]] && pid_is redis-server "$pid" && kill -KILL "$pid" 2>/dev/null || true
    done
    for port in $(ports); do
        pid="$(read_file "$(node_dir "$port")/redis.pid" || true)"
        [[ -n "$pid" ]] && wait_gone "$pid" 10 || true
    done
}

cmd_stop() {
    [[ -d "$DIR" ]] || return 0
    [[ -e "$DIR/$MARKER" ]] || die "$DIR was not made by $SELF start: not deleting it"
    cmd_stop_quiet
    rm -rf "$DIR"
}

cmd_kill_node() {
    local port="$1" pid
    pid="$(read_file "$(node_dir "$port")/redis.pid" || true)"
    pid_is redis-server "$pid" || die "no node of $DIR runs on port $port"
    kill -KILL "$pid"
    wait_gone "$pid" 10 || die "node $port (pid $pid) did not die"
}

main() {
    [[ $# -ge 2 ]] || usage
    DIR="$2"
    case "$1" in
        start) cmd_start ;;
        stop) cmd_stop ;;
        kill-node) [[ $# -ge 3 ]] || usage; cmd_kill_node "$3" ;;
        wait-ok) wait_ok "${3:-60}" ;;
        *) usage ;;
    esac
}

main "$@"
