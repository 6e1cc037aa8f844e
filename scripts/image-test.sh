#!/usr/bin/env bash
# The container image's test (docs/deployment.md): builds the image of the Dockerfile with podman
# on a fresh Debian 12 machine (installing what it needs, making the debian:12-slim base where
# no registry is reachable), then runs it as a user would against throw-away Redis, PostgreSQL
# and a mock Kafka (scripts/services.sh, on loopback ports: the containers use the host's
# network): --help, check-config on a mounted config, migrate, run in the background as a
# non-root user, records fed by the image's demo-produce, exactly once proven by its
# demo-check, the image's probe answering, and a clean exit on SIGTERM (podman stop).
#
#   scripts/image-test.sh                    build, test, keep the image as exo-ledger:test
#   scripts/image-test.sh --remove-image     ... and remove it afterwards
#   scripts/image-test.sh --image NAME       test an image built already (no build)
#
# Not part of scripts/test.sh: the first build takes minutes (the report in
# docs/deployment.md says how long). Quiet when it passes: one line per check, then
# `N passed, N failed`; a failing check shows its output and the consumer's log. Containers,
# services and temporary files are removed whatever happens. Needs root (rootful podman,
# debootstrap).
#
# Environment: CONTAINERS_CONF (default: a file of this run's with runtime runc and rlimits
# podman can set without CAP_SYS_RESOURCE), EXO_IMAGE_TEST_COUNT (records fed, default 2000).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$REPO_ROOT/scripts"
IMAGE=localhost/exo-ledger:test
BUILD=1
REMOVE_IMAGE=0
COUNT="${EXO_IMAGE_TEST_COUNT:-2000}"
STOP_SECONDS=30  # podman stop's grace period: above pipeline.shutdown_timeout_ms (10 s)

while (($# > 0)); do
    case "$1" in
        --remove-image) REMOVE_IMAGE=1 ;;
        --image)
            IMAGE="${2:?--image needs a name}"
            BUILD=0
            shift
            ;;
        *)
            sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
            exit 2
            ;;
    esac
    shift
done

STARTED=$SECONDS
WORK="$(mktemp -d "${TMPDIR:-/tmp}/exo-image-test.XXXXXX")"
SVC_DIR=""
NAME="exo-image-test-$$"  # prefix of this run's containers
CONSUMER="$NAME-consumer"

CHECK_PREFIX=image-test
CHECK_WORK="$WORK"
# shellcheck source=scripts/checks.sh
source "$SCRIPTS/checks.sh"

# A failing check shows the consumer's log too, if one runs.
# shellcheck disable=SC2317  # called by check()
check_failed_hook() {
    if podman container exists "$CONSUMER" 2>/dev/null; then
        note "---- the consumer's log (last 40 lines) ----"
        podman logs --tail 40 "$CONSUMER" 2>&1 | sed 's/^/    /'
    fi
}

# shellcheck disable=SC2317  # reached through the EXIT trap
on_exit() {
    local rc=$?
    trap - EXIT INT TERM
    local c
    for c in $(podman ps -a --format '{{.Names}}' 2>/dev/null | grep "^$NAME-" || true); do
        podman rm -f -t 0 "$c" >/dev/null 2>&1 || note "WARNING: could not remove container $c"
    done
    if [[ -n "$SVC_DIR" ]]; then
        "$SCRIPTS/services.sh" stop "$SVC_DIR" >"$WORK/services-stop.log" 2>&1 \
            || { note "WARNING: stopping the services failed:"; cat "$WORK/services-stop.log"; }
    fi
    if ((REMOVE_IMAGE)) && podman image exists "$IMAGE" 2>/dev/null; then
        podman rmi -f "$IMAGE" >/dev/null 2>&1 || note "WARNING: could not remove $IMAGE"
    fi
    rm -rf -- "$WORK"
    note "took $((SECONDS - STARTED)) s"
    checks_exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fatal() {
    FAILED=$((FAILED + 1))
    note "FAIL  $*"
    exit 1
}

cd "$REPO_ROOT"

# --- the machine ----------------------------------------------------------------------------

EXO_APT_SET=image "$SCRIPTS/install-deps.sh" >"$WORK/install.log" 2>&1 || {
    cat "$WORK/install.log"
    fatal "installing podman, runc, debootstrap and the servers (EXO_APT_SET=image scripts/install-deps.sh)"
}

# Podman's defaults fail here: crun on a cgroup v1/v2 hybrid host, and rlimits above what a
# root without CAP_SYS_RESOURCE may set. This run's settings, not the system's.
if [[ -z "${CONTAINERS_CONF:-}" ]]; then
    export CONTAINERS_CONF="$WORK/containers.conf"
    cat >"$CONTAINERS_CONF" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
EOF
fi

if ((BUILD)); then
    "$SCRIPTS/debian-slim-image.sh" 2>"$WORK/base.log" || {
        cat "$WORK/base.log"
        fatal "making the base image debian:12-slim (scripts/debian-slim-image.sh)"
    }
    build_image() {
        # --format docker keeps the Dockerfile's HEALTHCHECK (OCI images have none).
        podman build --format docker --tag "$IMAGE" "$REPO_ROOT" >"$WORK/build.log" 2>&1 || {
            tail -n 60 "$WORK/build.log"
            return 1
        }
    }
    check "podman build the Dockerfile" build_image || exit 1
    note "      $IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE" \
        | awk '{ printf "%.0f MB", $1 / 1e6 }')"
else
    podman image exists "$IMAGE" || fatal "no image $IMAGE"
fi

# --- the services ---------------------------------------------------------------------------

# services.sh runs `$EXO_BIN mock-kafka ...`: here the image's own, in a container of this run
# (as the calling user, so it may write the bootstrap file into the services' directory).
cat >"$WORK/mock-kafka" <<EOF
#!/bin/bash
# mock-kafka --brokers N --bootstrap-file FILE: the image's mock Kafka on the host's network.
args=("\$@") bootstrap=""
for ((i = 0; i < \${#args[@]}; i++)); do
    [[ "\${args[i]}" == --bootstrap-file ]] && bootstrap="\${args[i + 1]}"
done
dir="\$(dirname "\$bootstrap")"
exec podman run --rm --name "$NAME-kafka" --network host --no-healthcheck \\
    --user "\$(id -u):\$(id -g)" -v "\$dir:\$dir" "$IMAGE" "\$@"
EOF
chmod +x "$WORK/mock-kafka"
SVC_DIR="$(mktemp -d "${TMPDIR:-/tmp}/exo-image-svc.XXXXXX")"
EXO_BIN="$WORK/mock-kafka" "$SCRIPTS/services.sh" start "$SVC_DIR" >"$WORK/services.log" 2>&1 || {
    cat "$WORK/services.log"
    fatal "starting Redis, PostgreSQL and the image's mock Kafka (scripts/services.sh)"
}
# shellcheck source=/dev/null
source "$SVC_DIR/services.env"
note "services: Redis 127.0.0.1:$EXO_REDIS_PORT, PostgreSQL 127.0.0.1:$EXO_POSTGRES_PORT, Kafka $EXO_KAFKA_BOOTSTRAP"

METRICS_PORT="$(free_port)"
# The image's /etc/exo/exo.yaml (config/docker.yaml) takes every address from these.
ENV_ARGS=(
    -e "EXO_KAFKA_BOOTSTRAP=$EXO_KAFKA_BOOTSTRAP"
    -e "EXO_KAFKA_GROUP_ID=exo-image-test-$$"
    -e "EXO_REDIS_HOST=$EXO_REDIS_HOST"
    -e "EXO_REDIS_PORT=$EXO_REDIS_PORT"
    -e "EXO_POSTGRES_URI=$EXO_POSTGRES_URI"
    -e "EXO_OBSERVABILITY_LISTEN=127.0.0.1:$METRICS_PORT"
)
# once NAME ARGS...: a one-off container of the image on the host's network.
once() {
    local name="$1"
    shift
    podman run --rm --name "$NAME-$name" --network host --no-healthcheck "${ENV_ARGS[@]}" "$@"
}

# --- the checks -----------------------------------------------------------------------------

help_text() {
    once help "$IMAGE" --help >"$WORK/help.txt"
    if ! grep -q '^Usage:' "$WORK/help.txt" || ! grep -q 'demo-produce' "$WORK/help.txt" \
        || ! grep -q 'demo-check' "$WORK/help.txt"; then
        cat "$WORK/help.txt"
        echo "--help did not print the usage with the demo commands"
        return 1
    fi
}
check "--help prints the usage (exit 0)" help_text || true

# A config of the user's, mounted read-only; and one with a mistake, refused with its path.
mounted_config() {
    mkdir -p "$WORK/config"
    cat >"$WORK/config/exo.yaml" <<EOF
kafka:
  bootstrap_servers: $EXO_KAFKA_BOOTSTRAP
  group_id: mounted
redis: { host: 127.0.0.1, port: $EXO_REDIS_PORT }
postgres: { uri: "$EXO_POSTGRES_URI" }
bindings:
  - { topic: payments, handler: ledger, key: { json: /eventId } }
EOF
    sed 's/bootstrap_servers:/bootstrap_server:/' "$WORK/config/exo.yaml" >"$WORK/config/bad.yaml"
    chmod 0755 "$WORK" "$WORK/config"
    chmod 0644 "$WORK/config/"*.yaml
    local out rc=0
    out="$(once config -v "$WORK/config:/config:ro" "$IMAGE" check-config --config /config/exo.yaml)"
    [[ "$out" == "/config/exo.yaml: valid (1 binding(s))" ]] || {
        echo "check-config printed: $out"
        return 1
    }
    out="$(once config -v "$WORK/config:/config:ro" "$IMAGE" check-config --config /config/bad.yaml 2>&1)" || rc=$?
    if ((rc != 2)) || [[ "$out" != *bootstrap_server* ]]; then
        echo "a misspelled key: exit $rc (expected 2 naming it): $out"
        return 1
    fi
}
check "check-config on a mounted config: valid, and a misspelled key refused (exit 2)" mounted_config || true

migrate() {
    once migrate "$IMAGE" migrate --config /etc/exo/exo.yaml >"$WORK/migrate.log" 2>&1 || {
        cat "$WORK/migrate.log"
        return 1
    }
    grep -q 'applied migration' "$WORK/migrate.log" || {
        cat "$WORK/migrate.log"
        echo "no migration was applied to the empty database"
        return 1
    }
}
check "migrate applies the migrations" migrate || true

# The image's default command (run --config /etc/exo/exo.yaml), in the background, on a
# read-only root filesystem (exo writes nothing to disk), until it answers /readyz.
run_consumer() {
    podman run -d --name "$CONSUMER" --network host --read-only "${ENV_ARGS[@]}" "$IMAGE" >/dev/null
    local deadline=$((SECONDS + 90))
    until curl -fsS "http://127.0.0.1:$METRICS_PORT/readyz" >/dev/null 2>&1; do
        [[ "$(podman inspect --format '{{.State.Running}}' "$CONSUMER")" == true ]] || {
            echo "the consumer exited: $(podman inspect --format '{{.State.ExitCode}}' "$CONSUMER")"
            return 1
        }
        ((SECONDS < deadline)) || {
            echo "/readyz did not answer 200 within 90 s: $(curl -sS "http://127.0.0.1:$METRICS_PORT/readyz" 2>&1)"
            return 1
        }
        sleep 0.5
    done
}
check "run (the image's default command, read-only root) becomes ready" run_consumer || exit 1

non_root() {
    local user uid
    user="$(podman image inspect --format '{{.Config.User}}' "$IMAGE")"
    uid="$(podman exec "$CONSUMER" awk '/^Uid:/ { print $2 }' /proc/1/status)"
    [[ "$user" == exo && "$uid" == 10001 ]] || {
        echo "image user '$user', the consumer's uid $uid (expected exo, 10001)"
        return 1
    }
}
check "the consumer runs as uid 10001 (exo), not root" non_root || true

probe() {
    podman exec "$CONSUMER" /usr/local/bin/exo-probe /healthz /readyz || return 1
    if podman exec "$CONSUMER" env EXO_PROBE_ADDRESS=127.0.0.1:1 /usr/local/bin/exo-probe /healthz 2>/dev/null; then
        echo "exo-probe answered 0 for an address nothing listens on"
        return 1
    fi
    local hc
    hc="$(podman image inspect --format '{{.Config.Healthcheck.Test}}' "$IMAGE")"
    [[ "$hc" == *exo-probe*/healthz* ]] || {
        echo "the image's HEALTHCHECK is '$hc' (expected exo-probe /healthz)"
        return 1
    }
}
check "the image's probe: /healthz and /readyz answer 200 inside it (its HEALTHCHECK)" probe || true

produce() {
    mkdir -p "$WORK/demo"
    chmod 0777 "$WORK/demo"  # written by the image's user
    once produce -v "$WORK/demo:/demo" "$IMAGE" demo-produce --bootstrap "$EXO_KAFKA_BOOTSTRAP" \
        --topic payments --count "$COUNT" --accounts 20 --duplicate-ratio 0.1 \
        --expected-file /demo/expected.json
}
check "demo-produce feeds $COUNT payments (10% duplicates)" produce || true

exactly_once() {
    once check -v "$WORK/demo:/demo:ro" "$IMAGE" demo-check --config /etc/exo/exo.yaml \
        --bootstrap "$EXO_KAFKA_BOOTSTRAP" --expected-file /demo/expected.json --timeout 120
}
check "demo-check: every balance is exactly once" exactly_once || true

sigterm() {
    local started=$SECONDS rc
    podman stop -t "$STOP_SECONDS" "$CONSUMER" >/dev/null
    rc="$(podman inspect --format '{{.State.ExitCode}}' "$CONSUMER")"
    podman logs "$CONSUMER" >"$WORK/consumer.log" 2>&1
    if [[ "$rc" != 0 ]] || ! grep -q 'signal 15: stopping' "$WORK/consumer.log" \
        || ! grep -q 'stopped: polled=' "$WORK/consumer.log"; then
        echo "exit code $rc after $((SECONDS - started)) s (expected 0, and the log lines 'signal 15: stopping' and 'stopped: ...'):"
        tail -n 20 "$WORK/consumer.log"
        return 1
    fi
    grep 'stopped: polled=' "$WORK/consumer.log" | sed 's/^.*\] //'
}
if check "podman stop (SIGTERM): the consumer drains and exits 0" sigterm; then
    note "      $(tail -n 1 "$WORK/check.out")"
fi
