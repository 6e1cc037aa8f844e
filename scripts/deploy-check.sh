#!/usr/bin/env bash
# Checks deploy/ (alert rules, Grafana dashboard) and docker-compose.yml, the parts of a
# deployment that can be checked without Docker (docs/deployment.md). scripts/test.sh runs it
# against its services; alone it starts its own (scripts/services.sh).
#
#   scripts/deploy-check.sh            every check
#   scripts/deploy-check.sh --static   only those that need no daemon (promtool, YAML, JSON)
#
# Static: promtool check config/rules and `promtool test rules` (deploy/prometheus/*_test.yaml);
# every query of the dashboard and the rules names a metric of exo; docker-compose.yml waits
# for healthy services, probes the endpoint's real /healthz and /readyz, and sets only the
# variables config/docker.yaml reads (and, where podman-compose is installed, it reads the file
# as compose does). Live: config/docker.yaml with the compose environment passes
# `exo check-config`; a daemon run with config/docker.yaml against the services, fed records
# (demo-produce), exports every metric the dashboard and the rules name (histograms: _bucket,
# _sum and _count); a real Prometheus scraping it loads the rules without an error and has a
# result for every dashboard query; the daemon exits 0 on SIGTERM.
#
# Quiet when it passes: one line per check; a failing check prints why (and the logs). The last
# line is `N passed, N failed` (scripts/test.sh reads it). Exit status 0 only if all passed.
#
# Environment: EXO_BINARY (default $EXO_BUILD_DIR/exo), EXO_BUILD_DIR (default <repo>/build);
# EXO_POSTGRES_URI, EXO_REDIS_HOST/PORT, EXO_KAFKA_BOOTSTRAP: the services to use (from
# services.env); unset, the script starts its own and stops them at the end.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$REPO_ROOT/scripts"
export EXO_BUILD_DIR="${EXO_BUILD_DIR:-$REPO_ROOT/build}"
EXO="${EXO_BINARY:-$EXO_BUILD_DIR/exo}"
PY=/usr/bin/python3  # Debian's, with python3-yaml (a pyenv or venv python may lack it)
CHECK=("$PY" "$SCRIPTS/deploy_check.py")
DASHBOARD="$REPO_ROOT/deploy/grafana/dashboards/exo.json"
RULES="$REPO_ROOT/deploy/prometheus/exo-alerts.yml"
COMPOSE="$REPO_ROOT/docker-compose.yml"
WAIT_SECONDS=${EXO_DEPLOY_CHECK_WAIT:-90}  # for the daemon's metrics and Prometheus' results to appear

WORK="$(mktemp -d "${TMPDIR:-/tmp}/exo-deploy-check.XXXXXX")"
OWN_SERVICES=""
DAEMON_PID=""
PROM_PID=""

CHECK_PREFIX=deploy-check
CHECK_WORK="$WORK"
# shellcheck source=scripts/checks.sh
source "$SCRIPTS/checks.sh"

# stop PID: SIGTERM, then SIGKILL after 30 s; its exit status in STOP_RC.
STOP_RC=""
stop() {
    local pid="$1" i
    STOP_RC=0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || STOP_RC=$?
}

# shellcheck disable=SC2317  # reached through the EXIT trap
on_exit() {
    local rc=$?
    trap - EXIT INT TERM
    [[ -n "$DAEMON_PID" ]] && stop "$DAEMON_PID"
    [[ -n "$PROM_PID" ]] && stop "$PROM_PID"
    [[ -n "$OWN_SERVICES" ]] && "$SCRIPTS/services.sh" stop "$OWN_SERVICES" >/dev/null 2>&1
    rm -rf -- "$WORK"
    checks_exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$REPO_ROOT"

# --- static ---------------------------------------------------------------------------------

check "promtool check config deploy/prometheus/prometheus.yml (and its rule file)" \
    promtool check config deploy/prometheus/prometheus.yml || true
check "promtool test rules deploy/prometheus/*_test.yaml" \
    promtool test rules deploy/prometheus/*_test.yaml || true
check "every dashboard and alert query names metrics of exo" \
    "${CHECK[@]}" names "$DASHBOARD" "$RULES" || true
check "docker-compose.yml: health checks, dependencies, environment, mounts" \
    "${CHECK[@]}" compose "$COMPOSE" "$REPO_ROOT" || true

# podman-compose reads the file as compose does; its --dry-run still creates the project's
# network and volumes, removed again here.
compose_dry_run() {
    local project="exocheck$$" out="$WORK/compose.txt" rc=0
    podman-compose -f "$COMPOSE" -p "$project" --dry-run up --no-build -d >"$out" 2>&1 || rc=$?
    podman network rm -f "${project}_default" >/dev/null 2>&1 || true
    podman volume rm -f "${project}_pgdata" >/dev/null 2>&1 || true
    ((rc == 0)) || {
        cat "$out"
        return 1
    }
    local line
    line="$(grep -E '^podman run --name='"$project"'_consumer_1 ' "$out")" || {
        echo "podman-compose would not run the consumer:"
        cat "$out"
        return 1
    }
    for want in "exo-probe" "/healthz" "/readyz" "-e EXO_POSTGRES_URI=" "exo-ledger:latest"; do
        [[ "$line" == *"$want"* ]] || {
            echo "the consumer's podman run lacks $want: $line"
            return 1
        }
    done
}
if command -v podman-compose >/dev/null 2>&1; then
    check "podman-compose reads docker-compose.yml and runs the consumer with its probes" \
        compose_dry_run || true
else
    note "skip  podman-compose is not installed (EXO_APT_SET=image scripts/install-deps.sh)"
fi

[[ "${1:-}" == --static ]] && exit 0

# --- live -----------------------------------------------------------------------------------

[[ -x "$EXO" ]] || {
    note "FAIL  $EXO was not built (scripts/build.sh): the live checks cannot run"
    FAILED=$((FAILED + 1))
    exit 1
}

# config/docker.yaml with the environment docker-compose.yml gives the consumer.
compose_config() {
    local -a env
    mapfile -t env < <("${CHECK[@]}" compose-env "$COMPOSE")
    env -i PATH="$PATH" "${env[@]}" "$EXO" check-config --print --config config/docker.yaml \
        >"$WORK/effective.yaml" || return 1
    if ! grep -q 'bootstrap_servers: "kafka:19092"' "$WORK/effective.yaml" \
        || ! grep -q 'listen: "0.0.0.0:9464"' "$WORK/effective.yaml"; then
        echo "the effective configuration does not use the compose environment:"
        cat "$WORK/effective.yaml"
        return 1
    fi
}
check "config/docker.yaml with the compose environment passes exo check-config" compose_config || true

if [[ -z "${EXO_POSTGRES_URI:-}" || -z "${EXO_KAFKA_BOOTSTRAP:-}" ]]; then
    OWN_SERVICES="$(mktemp -d "${TMPDIR:-/tmp}/exo-deploy-svc.XXXXXX")"
    EXO_BIN="$EXO" "$SCRIPTS/services.sh" start "$OWN_SERVICES" >"$WORK/services.log" 2>&1 || {
        cat "$WORK/services.log"
        note "FAIL  the services did not start"
        FAILED=$((FAILED + 1))
        exit 1
    }
    # shellcheck source=/dev/null
    source "$OWN_SERVICES/services.env"
fi

METRICS_PORT="$(free_port)"
METRICS_URL="http://127.0.0.1:$METRICS_PORT/metrics"
export EXO_OBSERVABILITY_LISTEN="127.0.0.1:$METRICS_PORT"
export EXO_KAFKA_GROUP_ID="exo-deploy-check-$$"
DAEMON_LOG="$WORK/daemon.log"

start_daemon() {
    "$EXO" migrate --config config/docker.yaml || return 1
    "$EXO" run --config config/docker.yaml >"$DAEMON_LOG" 2>&1 </dev/null &
    DAEMON_PID=$!
    "$EXO" demo-produce --bootstrap "$EXO_KAFKA_BOOTSTRAP" --topic payments --count 300 \
        --accounts 10 --duplicate-ratio 0.1 --expected-file "$WORK/expected.json"
}

# Every metric the dashboard and the rules name is in /metrics. Some appear only once the
# daemon has worked a little (the consumer lag with librdkafka's statistics, the relay's and the
# pruner's gauges after their first look): wait for them, bounded.
NAMES=()
# shellcheck disable=SC2317  # called by poll
scrape_has_names() {
    curl -fsS "$METRICS_URL" >"$WORK/metrics.txt" \
        && "${CHECK[@]}" scraped "$WORK/metrics.txt" "${NAMES[@]}"
}
metrics_complete() {
    mapfile -t NAMES < <("${CHECK[@]}" names "$DASHBOARD" "$RULES")
    poll "$WAIT_SECONDS" "$DAEMON_PID" "$DAEMON_LOG" "$WORK/missing.txt" scrape_has_names
}

PROM_PORT="$(free_port)"
PROM_URL="http://127.0.0.1:$PROM_PORT"
start_prometheus() {
    mkdir -p "$WORK/prometheus"
    cat >"$WORK/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: exo
    static_configs:
      - targets: ["127.0.0.1:$METRICS_PORT"]
EOF
    prometheus --config.file="$WORK/prometheus/prometheus.yml" \
        --storage.tsdb.path="$WORK/prometheus/data" --web.listen-address="127.0.0.1:$PROM_PORT" \
        >"$WORK/prometheus.log" 2>&1 &
    PROM_PID=$!
}

# Prometheus loaded the rules and evaluates them without an error, and every dashboard query
# has a result from the scraped daemon (rates need two scrapes in their window: wait).
# shellcheck disable=SC2317  # called by poll
prometheus_answers() {
    "${CHECK[@]}" queries "$PROM_URL" "$DASHBOARD" 30s && "${CHECK[@]}" rules "$PROM_URL"
}
prometheus_results() {
    poll "$WAIT_SECONDS" "$PROM_PID" "$WORK/prometheus.log" "$WORK/queries.txt" prometheus_answers
}

clean_exit() {
    local pid="$DAEMON_PID"
    DAEMON_PID=""
    stop "$pid"
    if [[ "$STOP_RC" != 0 ]] || ! grep -q 'stopped:' "$DAEMON_LOG"; then
        echo "the daemon exited $STOP_RC after SIGTERM (expected 0 and a 'stopped:' line):"
        tail -n 30 "$DAEMON_LOG"
        return 1
    fi
}

if check "a daemon with config/docker.yaml against the services, fed 300 records" start_daemon; then
    start_prometheus
    check "the daemon's /metrics has every metric the dashboard and the rules name" \
        metrics_complete || true
    check "Prometheus scraping it: the rules load and evaluate, every dashboard query has a result" \
        prometheus_results || true
    check "the daemon exits 0 on SIGTERM" clean_exit || true
fi
