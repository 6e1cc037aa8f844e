#!/usr/bin/env bash
# Installs every Debian package exo needs to build, test and run its demo (Debian 12).
# This is the ONE place apt packages are named. Re-runs are fast: when everything is already
# installed (checked with dpkg-query) it neither updates nor installs anything.
#
# Installing does not leave the system's redis/postgresql services running on their default
# ports: service starts are blocked during the install (policy-rc.d), and on a systemd host the
# units this run newly installed are disabled. exo's scripts never use those services; they
# start their own on free ports (scripts/services.sh).
#
# Uses sudo when not run as root. Environment: EXO_APT_SET, a comma-separated list of sets:
#   build   what building exo and a consumer needs (the Dockerfile's build stage)
#   all     (the default) build, plus the test and demo servers and tools (scripts/test.sh),
#           Java and Maven for the real Apache Kafka (scripts/kafka.sh)
#   image   what scripts/image-test.sh needs on the host, no compiler: podman (with runc),
#           debootstrap (the base image), podman-compose, and the servers of scripts/services.sh
# e.g. EXO_APT_SET=all,image. EXO_APT_NODE=1 adds Node.js and npm (the benchmark's peer).
# EXO_APT_EXTRA="pkg ..." adds packages.
set -euo pipefail

BUILD=(
    # toolchain
    build-essential cmake ninja-build pkg-config
    # libraries
    librdkafka-dev libpqxx-dev libyaml-cpp-dev libspdlog-dev libfmt-dev doctest-dev
    libhiredis-dev nlohmann-json3-dev libssl-dev
    # the allocator every exo program links (CMakeLists.txt, EXO_JEMALLOC)
    libjemalloc-dev
    # the observability endpoint's HTTP server: it bounds connections, per-client connections,
    # request bytes and idle time itself (framework/observability/http_endpoint.cpp, kLimits)
    libmicrohttpd-dev
)
SERVERS=(
    # servers run by scripts/services.sh (redis-cli is in redis-tools; pg_isready, psql and
    # createdb in postgresql-client)
    redis-server redis-tools postgresql postgresql-client
    # used by the scripts: ss (iproute2), runuser (util-linux), shuf/timeout/mktemp
    # (coreutils), ps (procps)
    iproute2 util-linux coreutils procps
)
TEST=(
    clang-format
    # the HTTP client of the integration tests and the benchmark (not the endpoint's server)
    libcpp-httplib-dev
    # the fuzz targets (scripts/fuzz.sh): clang++ and its libFuzzer and sanitizer runtimes
    clang libclang-rt-dev
    # independent checks of exo's output: a real Prometheus (promtool, a server scraping the
    # daemon) and an independent Kafka client
    prometheus kcat
    # the checks of deploy/ and docker-compose.yml (scripts/deploy-check.sh): Debian's python3
    # and its YAML parser, curl for the daemon's endpoint
    python3 python3-yaml curl
)
KAFKA=(
    # the real Apache Kafka of scripts/kafka.sh (demo.sh --kafka apache, the test command's
    # real-broker stage): a Java runtime for the broker, Maven to fetch its release's jars
    # (kcat, which checks that every node answers, is in TEST), and javac for the real-broker
    # tests' transactional producer (Kafka's own Java client)
    openjdk-17-jre-headless maven openjdk-17-jdk-headless
)
IMAGE=(
    # builds and runs the image (crun fails on a cgroup v1/v2 hybrid host: runc works)
    podman runc
    # the base image debian:12-slim where no registry is reachable (scripts/debian-slim-image.sh)
    debootstrap
    # reads docker-compose.yml as compose does (scripts/deploy-check.sh, when installed)
    podman-compose
    # the consumer's endpoint from the host, a free port for it
    curl python3
)
PACKAGES=()
IFS=, read -r -a sets <<<"${EXO_APT_SET:-all}"
for set in "${sets[@]}"; do
    case "$set" in
        build) PACKAGES+=("${BUILD[@]}") ;;
        all) PACKAGES+=("${BUILD[@]}" "${SERVERS[@]}" "${TEST[@]}" "${KAFKA[@]}") ;;
        image) PACKAGES+=("${SERVERS[@]}" "${IMAGE[@]}") ;;
        *)
            printf '[install-deps] ERROR: EXO_APT_SET: unknown set "%s" (build, all, image)\n' "$set" >&2
            exit 2
            ;;
    esac
done
# The benchmark's inbox peer (scripts/bench.sh sets EXO_APT_NODE=1): Node.js and npm, unless a
# Node.js with npm is already installed (NodeSource's nodejs package bundles npm and conflicts
# with Debian's npm package).
if [[ "${EXO_APT_NODE:-0}" == 1 ]] && ! command -v npm >/dev/null 2>&1; then
    PACKAGES+=(nodejs npm)
fi
# shellcheck disable=SC2206  # word splitting is the point: a list of package names
PACKAGES+=(${EXO_APT_EXTRA:-})
# Each name once (the sets share the servers).
mapfile -t PACKAGES < <(printf '%s\n' "${PACKAGES[@]}" | awk '!seen[$0]++')

# The services that Debian's packages would otherwise start (or enable) on install.
SYSTEM_SERVICES=(redis-server postgresql prometheus)

log() { printf '[install-deps] %s\n' "$*" >&2; }

installed() {
    [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" == "ii"* ]]
}

missing=()
for pkg in "${PACKAGES[@]}"; do
    installed "$pkg" || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
    log "all ${#PACKAGES[@]} packages are installed"
    exit 0
fi

SUDO=()
if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || {
        log "ERROR: not root and no sudo: install as root: apt-get install ${missing[*]}"
        exit 1
    }
    SUDO=(sudo)
fi

# Which of the system services are new with this run (those we may disable afterwards).
new_services=()
for svc in "${SYSTEM_SERVICES[@]}"; do
    installed "$svc" || new_services+=("$svc")
done

# Block service starts from maintainer scripts during the install (exit 101 = "action
# forbidden", see /usr/share/doc/init-system-helpers/README.policy-rc.d). An existing
# policy-rc.d (Docker images ship one) is left alone.
POLICY=/usr/sbin/policy-rc.d
created_policy=0
cleanup() {
    if ((created_policy)); then
        "${SUDO[@]}" rm -f "$POLICY"
    fi
}
trap cleanup EXIT
if [[ ! -e "$POLICY" ]]; then
    printf '#!/bin/sh\n# temporary, from exo scripts/install-deps.sh\nexit 101\n' \
        | "${SUDO[@]}" tee "$POLICY" >/dev/null
    "${SUDO[@]}" chmod 0755 "$POLICY"
    created_policy=1
fi

export DEBIAN_FRONTEND=noninteractive
log "installing: ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y \
    --no-install-recommends "${missing[@]}"

# On a systemd host the packages enable their units: disable (and stop) the ones this run
# installed, so they do not come up at the next boot.
if ((${#new_services[@]} > 0)) && [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
    for svc in "${new_services[@]}"; do
        log "disabling the system $svc service (exo starts its own instances)"
        "${SUDO[@]}" systemctl disable --now "$svc" >/dev/null 2>&1 || true
    done
fi

still=()
for pkg in "${PACKAGES[@]}"; do
    installed "$pkg" || still+=("$pkg")
done
if ((${#still[@]} > 0)); then
    log "ERROR: still not installed: ${still[*]}"
    exit 1
fi
log "done: all ${#PACKAGES[@]} packages are installed"
