#!/usr/bin/env bash
# A throw-away Apache Kafka (KRaft, no ZooKeeper) for the demo and the real-broker tests: the
# release's jars fetched with Maven (scripts/kafka/pom.xml) into a cache kept between runs.
#
#   scripts/kafka.sh start DIR [--nodes 1|3] [--version X.Y.Z] [--security none|scram|tls|scram+tls]
#                                             start, write DIR/kafka.env
#   scripts/kafka.sh stop DIR                 stop every node started in DIR, delete DIR (idempotent)
#   scripts/kafka.sh logs DIR [LINES]         print the tail of every node's log in DIR
#   scripts/kafka.sh kill-node DIR N          kill -9 node N (a crash; its data is kept)
#   scripts/kafka.sh start-node DIR N         start node N again on the SAME ports, data kept
#   scripts/kafka.sh create-topics DIR NAME:PARTITIONS...   create topics (replication: all nodes)
#   scripts/kafka.sh fetch [--version X.Y.Z]  fetch the jars only; print the directory holding them
#
# Each node is broker and controller at once, on free loopback ports. One node: replication 1.
# Three nodes: every node is a voter of the controller quorum, and topics (the internal ones
# too) have 3 replicas with min.insync.replicas 2, so one node may die without losing an
# acknowledged record. Topics are not created on first use (auto.create.topics.enable=false,
# as production clusters run): create them (create-topics) before using them. All state (data,
# logs, pid files, chosen ports) lives under DIR. After `start`, `source DIR/kafka.env` exports
# EXO_KAFKA_BOOTSTRAP (every node), EXO_KAFKA_KIND=apache, EXO_KAFKA_VERSION, EXO_KAFKA_NODES,
# EXO_KAFKA_PORT_<N> (node N's client port), EXO_KAFKA_LIBS (the jars, for Kafka's own tools
# and clients), EXO_KAFKA_DIR and EXO_KAFKA_SCRIPT (this script's absolute path).
#
# Security (--security; none by default: one PLAINTEXT listener per node, as before):
#   scram      clients authenticate with SASL/SCRAM-SHA-512 (SASL_PLAINTEXT)
#   tls        clients connect over TLS (SSL), the broker's certificate signed by a CA made here
#   scram+tls  both (SASL_SSL)
# The client listener (EXO_KAFKA_BOOTSTRAP) then speaks that protocol. The SCRAM user `exo`
# and its random password are added when the storage is formatted (kafka-storage format
# --add-scram, Kafka 3.5 and later, 4.x too). The CA and the broker's certificate (for
# 127.0.0.1 and localhost) are made with openssl in DIR/tls, valid for 30 days. The
# controller quorum and the replication between nodes stay on PLAINTEXT loopback listeners:
# the INTERNAL one (EXO_KAFKA_INTERNAL_BOOTSTRAP) accepts any client unauthenticated, for
# tests' set-up and checks, never for the client under test. kafka.env (mode 0600: it holds
# the password) then also exports EXO_KAFKA_SECURITY (the mode), EXO_KAFKA_SECURITY_PROTOCOL,
# EXO_KAFKA_SASL_MECHANISM, EXO_KAFKA_SASL_USERNAME, EXO_KAFKA_SASL_PASSWORD, EXO_KAFKA_CA (the
# CA's PEM, librdkafka's ssl.ca.location), EXO_KAFKA_CLIENT_CONFIG (the same as librdkafka
# properties: `kcat -F FILE`) and EXO_KAFKA_JAVA_CONFIG (as a Java client's properties: Kafka's
# tools' --command-config). create-topics and the start-up check go through the secured
# listener with them.
#
# Environment:
#   EXO_KAFKA_VERSION        the release when no --version is given (default below)
#   EXO_KAFKA_CACHE          where fetched releases are kept (default ~/.cache/exo)
#   EXO_KAFKA_HEAP           the JVM heap options of each node (default -Xms512m -Xmx768m)
#   EXO_KAFKA_START_TIMEOUT  seconds for every node to answer (default 120)
#   EXO_PORT_MIN/EXO_PORT_MAX  range the random ports are picked from (default 20000 to just
#                            below the kernel's ephemeral ports, 32767)
#   JAVA_HOME                the Java to run (default: `java` on PATH); Kafka 4 needs 17+
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
POM="$REPO_ROOT/scripts/kafka/pom.xml"
# The release tried first by the demo and the tests. Another is one argument away (--version);
# 3.9.1 and 4.1.1 are known to start here (docs/kafka.md).
DEFAULT_VERSION=3.9.1
VERSION="${EXO_KAFKA_VERSION:-$DEFAULT_VERSION}"
CACHE="${EXO_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exo}"
# A 2-core, 24 GiB machine runs up to three nodes beside the tests: 768 MB of heap each is
# plenty for test traffic (a node's RSS stays near 350-400 MB).
HEAP="${EXO_KAFKA_HEAP:--Xms512m -Xmx768m}"
START_TIMEOUT="${EXO_KAFKA_START_TIMEOUT:-120}"
# Below the kernel's ephemeral range (ip_local_port_range, 32768-60999 by default): a node binds
# its client port only after joining the quorum, seconds after it starts, and meanwhile the
# other nodes' outgoing connections (retried every few ms while a peer is not up) take
# ephemeral ports; one of them was our chosen port in 2 of the first 3 three-node starts here.
EPHEMERAL_LOW="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
PORT_MIN="${EXO_PORT_MIN:-20000}"
PORT_MAX="${EXO_PORT_MAX:-$((EPHEMERAL_LOW > 25000 ? EPHEMERAL_LOW - 1 : 60000))}"
PORT_ATTEMPTS=10
MARKER=".exo-kafka"

SELF="scripts/kafka.sh"
DIR=""
NODES=1
SECURITY=none
SASL_USER=exo
SASL_MECHANISM=SCRAM-SHA-512
JAVA=""
LIBS=""
START_OK=0
FORMATS=()  # pids of the storage formats under way (background JVMs, which ignore Ctrl-C)

log() { printf '[kafka] %s\n' "$*" >&2; }

die() {
    log "ERROR: $*"
    exit 1
}

usage() {
    sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# shellcheck source=scripts/process_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/process_helpers.sh"  # tail_log, alive, pid_is, ports, DIR

need_started_dir() {
    [[ -d "$DIR" && -e "$DIR/$MARKER" ]] || die "$DIR holds no Kafka: run '$SELF start $DIR' first"
    resolve_dir
    NODES="$(read_file "$DIR/nodes")" || die "$DIR/nodes is missing: '$SELF start $DIR' did not finish"
    LIBS="$(cat "$DIR/libs")"
    VERSION="$(read_file "$DIR/version")"
    SECURITY="$(read_file "$DIR/security" || echo none)"
}

node_dir() { printf '%s/node%s' "$DIR" "$1"; }
node_log() { printf '%s/node%s/kafka.log' "$DIR" "$1"; }
node_pidfile() { printf '%s/node%s/kafka.pid' "$DIR" "$1"; }
node_props() { printf '%s/node%s/server.properties' "$DIR" "$1"; }
node_port() { read_file "$DIR/node$1/port"; }
node_controller_port() { read_file "$DIR/node$1/controller.port"; }
node_internal_port() { read_file "$DIR/node$1/internal.port"; }

# --- Java and the release's jars -------------------------------------------------------------

# find_java: set JAVA, or exit naming the fix. Kafka 4 runs on Java 17 or newer, 3.x on 11+.
find_java() {
    local need=11 v major
    [[ "$VERSION" == 3.* ]] || need=17
    if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
        JAVA="$JAVA_HOME/bin/java"
    elif command -v java >/dev/null 2>&1; then
        JAVA="$(command -v java)"
    else
        die "Java is not installed: Apache Kafka $VERSION needs Java $need or newer. Run scripts/install-deps.sh (Debian package openjdk-17-jre-headless), or set JAVA_HOME."
    fi
    v="$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)"
    major="${v%%.*}"
    [[ "$major" == 1 ]] && major="$(cut -d. -f2 <<<"$v")"
    if [[ ! "$major" =~ ^[0-9]+$ ]] || ((major < need)); then
        die "$JAVA is Java '${v:-unknown}': Apache Kafka $VERSION needs Java $need or newer. Run scripts/install-deps.sh (Debian package openjdk-17-jre-headless), or set JAVA_HOME."
    fi
}

# fetch_release: set LIBS to the directory of the release's jars, fetching them with Maven the
# first time. Concurrent callers (parallel test shards) wait for one fetch under a lock.
fetch_release() {
    [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "--version '$VERSION': a Kafka release such as $DEFAULT_VERSION or 4.1.1"
    local home="$CACHE/kafka-$VERSION"
    LIBS="$home/libs"
    [[ -e "$home/.complete" ]] && return 0
    command -v mvn >/dev/null 2>&1 \
        || die "Maven is not installed; it fetches Apache Kafka $VERSION's jars (about 55 MB, once). Run scripts/install-deps.sh (Debian package maven)."
    command -v flock >/dev/null 2>&1 || die "flock is missing: run scripts/install-deps.sh (Debian package util-linux)"
    mkdir -p "$home" || die "cannot create the cache directory $home: set EXO_KAFKA_CACHE to a writable directory"
    exec 8>"$home/.lock"
    flock 8
    if [[ ! -e "$home/.complete" ]]; then
        local tmp="$home/libs.partial" out="$home/fetch.log" started=$SECONDS
        rm -rf -- "$tmp" "$LIBS"
        log "fetching Apache Kafka $VERSION's jars with Maven into $LIBS (once; about 55 MB)"
        if ! mvn -B -ntp -U -f "$POM" -Dkafka.version="$VERSION" dependency:copy-dependencies \
            -DincludeScope=runtime -DoutputDirectory="$tmp" >"$out" 2>&1; then
            fetch_failed "$out"
        fi
        # Kafka 4's POMs leave the SLF4J binding to the distribution (its libs/ has
        # log4j-slf4j-impl); without one the broker logs nothing at all. 3.x brings
        # slf4j-reload4j itself.
        if ! compgen -G "$tmp/slf4j-reload4j-*.jar" >/dev/null && ! compgen -G "$tmp/log4j-slf4j*-impl-*.jar" >/dev/null; then
            local core log4j
            core="$(compgen -G "$tmp/log4j-core-*.jar" | head -n 1 || true)"
            [[ -n "$core" ]] || die "Apache Kafka $VERSION's jars have neither reload4j nor log4j-core: unknown logging setup (see $tmp)"
            log4j="$(basename "$core" .jar)"
            log4j="${log4j#log4j-core-}"
            if ! mvn -B -ntp -f "$POM" dependency:copy \
                -Dartifact="org.apache.logging.log4j:log4j-slf4j-impl:$log4j" \
                -DoutputDirectory="$tmp" >>"$out" 2>&1; then
                fetch_failed "$out"
            fi
        fi
        mv -- "$tmp" "$LIBS"
        touch "$home/.complete"
        log "fetched $(find "$LIBS" -name '*.jar' | wc -l) jars ($(du -sh "$LIBS" | cut -f1)) in $((SECONDS - started)) s"
    fi
    flock -u 8
    exec 8>&-
}

# fetch_failed LOG: say why Maven failed, with its output, and exit.
fetch_failed() {
    local out="$1" why
    tail_log "$out" 30
    if grep -qiE 'could not find artifact|was not found in|Could not resolve dependencies.*kafka' "$out" \
        && ! grep -qiE 'transfer|unknown ?host|connect|timed out|unreachable|resolve host' "$out"; then
        why="Apache Kafka $VERSION is not on Maven Central (is the version right? see https://kafka.apache.org/downloads)."
    elif grep -qiE 'unknown ?host|connection refused|connect timed out|network is unreachable|could not transfer|resolve host|no route to host|PKIX|handshake' "$out"; then
        why="Maven could not reach its repository (Maven Central, or the mirror in ~/.m2/settings.xml). Check the network, or set a proxy or mirror in ~/.m2/settings.xml; or copy $CACHE/kafka-$VERSION from a machine that has it."
    else
        why="Maven failed (its output is above, and in $out)."
    fi
    die "could not fetch Apache Kafka $VERSION: $why"
}

# --- security (--security) -------------------------------------------------------------------

secured() { [[ "$SECURITY" != none ]]; }
uses_sasl() { [[ "$SECURITY" == scram || "$SECURITY" == scram+tls ]]; }
uses_tls() { [[ "$SECURITY" == tls || "$SECURITY" == scram+tls ]]; }

# client_protocol: Kafka's security.protocol of the client listener.
client_protocol() {
    case "$SECURITY" in
        none) echo PLAINTEXT ;;
        scram) echo SASL_PLAINTEXT ;;
        tls) echo SSL ;;
        scram+tls) echo SASL_SSL ;;
    esac
}

tls_dir() { printf '%s/tls' "$DIR"; }
sasl_password() { read_file "$DIR/sasl.password"; }
client_config() { printf '%s/client.conf' "$DIR"; }
java_config() { printf '%s/client.properties' "$DIR"; }

# random_secret: 24 letters and digits (nothing that needs quoting in a properties file, a
# JAAS line or StorageTool's [name=...,password=...]).
random_secret() {
    local out=""
    while ((${#out} < 24)); do out+="$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"; done
    printf '%s\n' "${out:0:24}"
}

# make_tls: a CA and the brokers' certificate (every node has the same one: all listen on
# 127.0.0.1) signed by it, in DIR/tls: ca.pem for clients (librdkafka's ssl.ca.location, a
# Java client's PEM truststore), broker.p12 (its password in keystore.password) for the
# brokers. librdkafka 2.x and Kafka's own clients check the host name by default
# (ssl.endpoint.identification.algorithm=https), hence the subjectAltName.
make_tls() {
    local tls out
    tls="$(tls_dir)"
    out="$tls/openssl.log"
    command -v openssl >/dev/null 2>&1 || die "openssl is missing (it makes the TLS certificates): run scripts/install-deps.sh (Debian package openssl)"
    mkdir -p "$tls"
    (umask 077 && random_secret >"$tls/keystore.password")
    printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'basicConstraints=CA:FALSE' \
        'keyUsage=digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth,clientAuth' >"$tls/broker.ext"
    if ! (
        umask 077
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=exo test CA" \
            -keyout "$tls/ca.key" -out "$tls/ca.pem" \
            && openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
                -keyout "$tls/broker.key" -out "$tls/broker.csr" \
            && openssl x509 -req -in "$tls/broker.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" \
                -CAcreateserial -days 30 -sha256 -extfile "$tls/broker.ext" -out "$tls/broker.pem" \
            && openssl pkcs12 -export -in "$tls/broker.pem" -inkey "$tls/broker.key" \
                -name broker -out "$tls/broker.p12" -passout "file:$tls/keystore.password"
    ) >"$out" 2>&1; then
        tail_log "$out" 20
        die "openssl could not make the TLS certificates (above)"
    fi
    chmod 0644 "$tls/ca.pem" "$tls/broker.pem"  # public; the keys stay 0600
}

# write_client_configs: what a client needs to reach the client listener, as librdkafka
# properties (client.conf) and as a Java client's (client.properties); both 0600.
write_client_configs() {
    local conf java password=""
    conf="$(client_config)"
    java="$(java_config)"
    if uses_sasl; then password="$(sasl_password)"; fi
    (
        umask 077
        {
            printf '# Written by %s start: a librdkafka client of this cluster (kcat -F %s).\n' "$SELF" "$conf"
            printf 'security.protocol=%s\n' "$(client_protocol)"
            if uses_sasl; then
                printf 'sasl.mechanisms=%s\nsasl.username=%s\nsasl.password=%s\n' \
                    "$SASL_MECHANISM" "$SASL_USER" "$password"
            fi
            if uses_tls; then printf 'ssl.ca.location=%s/ca.pem\n' "$(tls_dir)"; fi
        } >"$conf"
        {
            printf '# Written by %s start: a Java client of this cluster (--command-config).\n' "$SELF"
            printf 'security.protocol=%s\n' "$(client_protocol)"
            if uses_sasl; then
                printf 'sasl.mechanism=%s\n' "$SASL_MECHANISM"
                printf 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";\n' \
                    "$SASL_USER" "$password"
            fi
            if uses_tls; then printf 'ssl.truststore.type=PEM\nssl.truststore.location=%s/ca.pem\n' "$(tls_dir)"; fi
        } >"$java"
    )
}

# security_props: a node's settings for a secured client listener (after its server.properties).
security_props() {
    local listener password
    listener="$(client_protocol | tr '[:upper:]' '[:lower:]')"
    printf '# The client listener: %s (--security %s).\n' "$(client_protocol)" "$SECURITY"
    if uses_sasl; then
        printf 'sasl.enabled.mechanisms=%s\n' "$SASL_MECHANISM"
        # The server side of SCRAM wants a login module, without credentials: those are in
        # the cluster metadata (--add-scram at format time).
        printf 'listener.name.%s.%s.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n' \
            "$listener" "$(tr '[:upper:]' '[:lower:]' <<<"$SASL_MECHANISM")"
    fi
    if uses_tls; then
        password="$(read_file "$(tls_dir)/keystore.password")"
        printf 'ssl.keystore.type=PKCS12\nssl.keystore.location=%s/broker.p12\n' "$(tls_dir)"
        printf 'ssl.keystore.password=%s\nssl.key.password=%s\n' "$password" "$password"
        printf 'ssl.client.auth=none\n'
    fi
}

# --- one node --------------------------------------------------------------------------------

# cluster_id: a Kafka cluster id (a random UUID, base64url without padding), as
# `kafka.tools.StorageTool random-uuid` prints it, without starting a JVM for it. Like Kafka's
# Uuid.randomUuid(), never one that starts with '-' (it would read as a command-line option).
cluster_id() {
    local id
    while :; do
        id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
        [[ "$id" != -* ]] && break
    done
    printf '%s\n' "$id"
}

# write_props N: node N's server.properties from the ports recorded in DIR.
write_props() {
    local n="$1" k voters="" replicas min_isr listeners map inter=PLAINTEXT proto
    for ((k = 1; k <= NODES; k++)); do
        voters+="${voters:+,}$k@127.0.0.1:$(node_controller_port "$k")"
    done
    replicas="$NODES"
    min_isr=$((NODES > 1 ? 2 : 1))
    listeners="PLAINTEXT://127.0.0.1:$(node_port "$n")"
    map="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    if secured; then
        # The client listener is named for its protocol; the nodes replicate over INTERNAL.
        proto="$(client_protocol)"
        listeners="$proto://127.0.0.1:$(node_port "$n"),INTERNAL://127.0.0.1:$(node_internal_port "$n")"
        map="$proto:$proto,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
        inter=INTERNAL
    fi
    cat >"$(node_props "$n")" <<EOF
# Written by $SELF: node $n of $NODES, broker and controller (KRaft), a throw-away test cluster.
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=$listeners,CONTROLLER://127.0.0.1:$(node_controller_port "$n")
advertised.listeners=$listeners
listener.security.protocol.map=$map
controller.listener.names=CONTROLLER
inter.broker.listener.name=$inter
log.dirs=$(node_dir "$n")/data
# Production-like: a topic exists only when created, and is replicated on every node.
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=$replicas
min.insync.replicas=$min_isr
offsets.topic.replication.factor=$replicas
transaction.state.log.replication.factor=$replicas
transaction.state.log.min.isr=$min_isr
# A group forms as soon as its first member joins (the 3 s default waits for more members:
# every test group would pay it).
group.initial.rebalance.delay.ms=0
# A test broker needs few threads and little disk: the 2-core machine runs the tests beside it.
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.segment.bytes=67108864
log.retention.check.interval.ms=300000
EOF
    if secured; then security_props >>"$(node_props "$n")"; fi
}

# write_logging: the brokers log to standard output (each node's kafka.log): log4j 1
# (reload4j, Kafka 3.x) and log4j 2 (Kafka 4.x) read their own file, each ignores the other's.
write_logging() {
    cat >"$DIR/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.request.logger=WARN
EOF
    cat >"$DIR/log4j2.properties" <<'EOF'
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
}

# java_for_kafka ARGS...: the JVM with the release's jars and our logging configuration
# (JAVA_ARGS; ARGS are more JVM options, then the main class and its arguments).
java_args() {
    # shellcheck disable=SC2206  # HEAP is a list of options
    JAVA_ARGS=("$JAVA" $HEAP -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
        -Dlog4j.configuration="file:$DIR/log4j.properties"
        -Dlog4j2.configurationFile="$DIR/log4j2.properties"
        -cp "$LIBS/*")
}
java_for_kafka() {
    java_args
    "${JAVA_ARGS[@]}" "$@"
}

# format_node N ID: start formatting node N's storage for cluster ID in the background (once per
# node: a restart keeps it), the JVM's pid in FORMATS; its output in the node's format.log.
format_node() {
    local n="$1" id="$2" HEAP="-Xmx256m" scram=()
    java_args
    # The SCRAM user is a record of the cluster metadata written at format time (KIP-900):
    # every broker knows it before it accepts a client.
    if uses_sasl; then scram=(--add-scram "$SASL_MECHANISM=[name=$SASL_USER,password=$(sasl_password)]"); fi
    (exec "${JAVA_ARGS[@]}" kafka.tools.StorageTool format -t "$id" -c "$(node_props "$n")" \
        "${scram[@]}" >"$(node_dir "$n")/format.log" 2>&1 </dev/null) &
    FORMATS+=("$!")
}

# launch_node N: start node N's JVM in the background (SIGHUP ignored, as nohup would) and
# record its pid.
launch_node() {
    local n="$1" pid
    java_args
    (
        trap '' HUP
        exec "${JAVA_ARGS[@]}" -Dkafka.logs.dir="$(node_dir "$n")/logs" kafka.Kafka \
            "$(node_props "$n")" >>"$(node_log "$n")" 2>&1 </dev/null
    ) &
    pid=$!
    # Not a job of this shell: bash would report its death (a kill-node) on our output.
    disown "$pid"
    printf '%s\n' "$pid" >"$(node_pidfile "$n")"
}

# node_running N: true if node N's JVM (the one whose command line names its properties) runs.
node_running() {
    local pid
    pid="$(read_file "$(node_pidfile "$1")" || true)"
    [[ -n "$pid" ]] && pid_is "$(node_props "$1")" "$pid"
}

# brokers_seen PORT: how many brokers the node on PORT lists in its metadata (0 if none answers).
# Secured: as the client of client.conf, which proves the credentials and the CA too.
brokers_seen() {
    local config=()
    if secured; then config=(-F "$(client_config)"); fi
    kcat "${config[@]}" -L -b "127.0.0.1:$1" -m 5 -t __exo_none 2>/dev/null | grep -cE '^ +broker [0-9]+ at ' || true
}

# wait_nodes N...: wait until each node runs and lists all NODES brokers. Returns 0 when they
# do, 2 if a node could not bind its ports (the caller picks new ones), 1 otherwise.
declare -A LOG_FROM=()
wait_nodes() {
    local deadline=$((SECONDS + START_TIMEOUT)) n pending seen
    while :; do
        pending=()
        for n in "$@"; do
            # alive, not node_running: right after the fork the child is still the subshell
            # that is about to exec the JVM, whose command line does not name the node yet.
            if ! alive "$(read_file "$(node_pidfile "$n")" || echo none)"; then
                if since_line "$(node_log "$n")" "${LOG_FROM[$n]:-0}" | grep -qiE 'address already in use|BindException'; then
                    log "node $n: a port was taken meanwhile"
                    return 2
                fi
                log "ERROR: node $n exited during start-up"
                tail_log "$(node_log "$n")" 40
                return 1
            fi
            seen="$(brokers_seen "$(node_port "$n")")"
            ((${seen:-0} >= NODES)) || pending+=("$n")
        done
        ((${#pending[@]} == 0)) && return 0
        if ((SECONDS >= deadline)); then
            log "ERROR: node(s) ${pending[*]} did not list all $NODES broker(s) within ${START_TIMEOUT}s (EXO_KAFKA_START_TIMEOUT)"
            for n in "${pending[@]}"; do tail_log "$(node_log "$n")" 40; done
            return 1
        fi
        sleep 0.5
    done
}

# stop_node N SIGNAL: stop node N's JVM (TERM: a controlled shutdown, then KILL after 10 s).
stop_node() {
    local n="$1" sig="$2" pid
    pid="$(read_file "$(node_pidfile "$n")" || true)"
    if [[ -n "$pid" ]] && pid_is "$(node_props "$n")" "$pid"; then
        kill "-$sig" "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" 10; then
            log "node $n (pid $pid) did not stop in 10 s after SIG$sig: killing it"
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 5 || log "WARNING: node $n (pid $pid) survived SIGKILL"
        fi
    fi
    rm -f "$(node_pidfile "$n")"
}

# --- commands -------------------------------------------------------------------------------

# export_line NAME VALUE: a single-quoted `export` line that sh and bash both read back.
export_line() {
    local q="'\\''"
    printf "export %s='%s'\n" "$1" "${2//\'/$q}"
}

# bootstrap [internal]: every node's client listener (or INTERNAL listener).
bootstrap() {
    local n out="" port
    for ((n = 1; n <= NODES; n++)); do
        if [[ "${1:-}" == internal ]]; then port="$(node_internal_port "$n")"; else port="$(node_port "$n")"; fi
        out+="${out:+,}127.0.0.1:$port"
    done
    printf '%s\n' "$out"
}

write_env() {
    local env="$DIR/kafka.env" tmp n
    tmp="$(mktemp "$DIR/.kafka.env.XXXXXX")"
    {
        printf '# Written by %s start: source this file.\n' "$SELF"
        export_line EXO_KAFKA_BOOTSTRAP "$(bootstrap)"
        export_line EXO_KAFKA_KIND apache
        export_line EXO_KAFKA_VERSION "$VERSION"
        export_line EXO_KAFKA_NODES "$NODES"
        for ((n = 1; n <= NODES; n++)); do export_line "EXO_KAFKA_PORT_$n" "$(node_port "$n")"; done
        export_line EXO_KAFKA_LIBS "$LIBS"
        export_line EXO_KAFKA_DIR "$DIR"
        export_line EXO_KAFKA_SCRIPT "$REPO_ROOT/scripts/kafka.sh"
        export_line EXO_KAFKA_SECURITY "$SECURITY"
        if secured; then
            export_line EXO_KAFKA_SECURITY_PROTOCOL "$(client_protocol)"
            export_line EXO_KAFKA_INTERNAL_BOOTSTRAP "$(bootstrap internal)"
            export_line EXO_KAFKA_CLIENT_CONFIG "$(client_config)"
            export_line EXO_KAFKA_JAVA_CONFIG "$(java_config)"
        fi
        if uses_sasl; then
            export_line EXO_KAFKA_SASL_MECHANISM "$SASL_MECHANISM"
            export_line EXO_KAFKA_SASL_USERNAME "$SASL_USER"
            export_line EXO_KAFKA_SASL_PASSWORD "$(sasl_password)"
        fi
        if uses_tls; then export_line EXO_KAFKA_CA "$(tls_dir)/ca.pem"; fi
    } >"$tmp"
    # With SASL it holds the password.
    if uses_sasl; then chmod 0600 "$tmp"; else chmod 0644 "$tmp"; fi
    mv -f "$tmp" "$env"
    bootstrap >"$DIR/kafka.bootstrap"  # for `exo demo-produce --bootstrap-file`
}

# shellcheck disable=SC2317  # reached through the EXIT trap
on_start_exit() {
    local rc=$? n why="start failed"
    ((START_OK == 0)) || return 0
    ((rc == 130 || rc == 143)) && why="start interrupted"
    # A format still running would write into DIR after a `stop` removed it.
    for n in "${FORMATS[@]}"; do kill -KILL "$n" 2>/dev/null || true; done
    for n in "${FORMATS[@]}"; do wait "$n" 2>/dev/null || true; done
    for ((n = 1; n <= NODES; n++)); do stop_node "$n" KILL; done
    log "$why: the nodes are stopped; logs are kept in $DIR (remove it with: $SELF stop $DIR)"
}

cmd_start() {
    local arg
    while (($# > 0)); do
        arg="$1"
        case "$arg" in
            --nodes) NODES="${2:-}"; shift 2 || usage ;;
            --nodes=*) NODES="${arg#*=}"; shift ;;
            --version) VERSION="${2:-}"; shift 2 || usage ;;
            --version=*) VERSION="${arg#*=}"; shift ;;
            --security) SECURITY="${2:-}"; shift 2 || usage ;;
            --security=*) SECURITY="${arg#*=}"; shift ;;
            *) usage ;;
        esac
    done
    [[ "$NODES" == 1 || "$NODES" == 3 ]] || die "--nodes $NODES: 1 or 3"
    case "$SECURITY" in
        none | scram | tls | scram+tls) ;;
        *) die "--security $SECURITY: none, scram, tls or scram+tls" ;;
    esac
    # Kafka 4.1.1 formats the user (its controller replays the credential record) but its
    # broker then refuses the password as invalid: seen here, not yet understood.
    if uses_sasl && [[ "$VERSION" != 3.* ]]; then
        die "--security $SECURITY with Kafka $VERSION: SCRAM users added at format time are refused by 4.x brokers in this set-up (seen with 4.1.1); use a 3.x release (3.9.1 is the default) or --security tls"
    fi
    mkdir -p "$DIR"
    resolve_dir
    [[ ! -e "$DIR/kafka.env" ]] || die "$DIR already has a running Kafka (kafka.env exists): run '$SELF stop $DIR' first, or use a new DIR"
    touch "$DIR/$MARKER"  # from here on, `stop DIR` removes DIR, even after a failed start
    command -v kcat >/dev/null 2>&1 || die "kcat is missing (it checks that every node answers): run scripts/install-deps.sh (Debian package kcat)"
    find_java
    fetch_release
    printf '%s\n' "$NODES" >"$DIR/nodes"
    printf '%s\n' "$VERSION" >"$DIR/version"
    printf '%s\n' "$LIBS" >"$DIR/libs"
    printf '%s\n' "$SECURITY" >"$DIR/security"
    trap on_start_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    local started=$SECONDS id n attempt rc
    write_logging
    id="$(cluster_id)"
    if uses_sasl; then (umask 077 && random_secret >"$DIR/sasl.password"); fi
    if uses_tls; then make_tls; fi
    if secured; then write_client_configs; fi
    for ((attempt = 1; attempt <= PORT_ATTEMPTS; attempt++)); do
        for ((n = 1; n <= NODES; n++)); do
            mkdir -p "$(node_dir "$n")"
            pick_port >"$(node_dir "$n")/port"
            pick_port >"$(node_dir "$n")/controller.port"
            if secured; then pick_port >"$(node_dir "$n")/internal.port"; fi
        done
        for ((n = 1; n <= NODES; n++)); do write_props "$n"; done
        if ((attempt == 1)); then
            # The storage records the cluster id and node id, not the ports: formatted once.
            for ((n = 1; n <= NODES; n++)); do format_node "$n" "$id"; done
            for n in "${!FORMATS[@]}"; do
                if ! wait "${FORMATS[$n]}"; then
                    tail_log "$(node_dir "$((n + 1))")/format.log" 30
                    die "formatting node $((n + 1))'s storage failed (above)"
                fi
            done
            FORMATS=()
        fi
        for ((n = 1; n <= NODES; n++)); do
            LOG_FROM[$n]="$(log_lines "$(node_log "$n")")"
            launch_node "$n"
        done
        rc=0
        wait_nodes $(seq 1 "$NODES") || rc=$?
        ((rc == 0)) && break
        for ((n = 1; n <= NODES; n++)); do stop_node "$n" KILL; done
        ((rc == 2)) || die "Apache Kafka $VERSION did not start (logs above, all in $DIR/node*/kafka.log)"
        log "trying new ports (attempt $((attempt + 1))/$PORT_ATTEMPTS)"
    done
    ((rc == 0)) || die "no free ports after $PORT_ATTEMPTS attempts; is something grabbing ports in $PORT_MIN-$PORT_MAX?"
    write_env
    START_OK=1
    log "Apache Kafka $VERSION up: $NODES node(s) at $(bootstrap) ($(client_protocol)) in $((SECONDS - started)) s; environment in $DIR/kafka.env"
}

cmd_stop() {
    local n pids=()
    if [[ ! -d "$DIR" ]]; then
        log "$DIR does not exist: nothing to stop"
        return 0
    fi
    resolve_dir
    if [[ -e "$DIR/$MARKER" ]]; then
        NODES="$(read_file "$DIR/nodes" || echo 3)"
        # All at once: the data goes with DIR, so no node needs the others' controlled shutdown.
        for ((n = 1; n <= NODES; n++)); do
            stop_node "$n" KILL &
            pids+=("$!")
        done
        for n in "${!pids[@]}"; do wait "${pids[$n]}" || true; done
        rm -rf -- "$DIR"
        log "Apache Kafka stopped; removed $DIR"
    else
        log "WARNING: $DIR was not created by '$SELF start' (no $MARKER file): not touching it"
    fi
}

cmd_logs() {
    local n lines="${1:-30}"
    [[ -d "$DIR" ]] || die "$DIR does not exist"
    NODES="$(read_file "$DIR/nodes" || echo 3)"
    for ((n = 1; n <= NODES; n++)); do tail_log "$(node_log "$n")" "$lines"; done
}

node_number() {
    [[ "${1:-}" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= NODES)) || die "node '${1:-}': a number from 1 to $NODES"
}

cmd_kill_node() {
    node_number "$1"
    node_running "$1" || die "node $1 is not running"
    stop_node "$1" KILL
    log "node $1 killed (SIGKILL); its data is kept: '$SELF start-node $DIR $1' starts it again"
}

cmd_start_node() {
    local n="$1" rc=0
    node_number "$n"
    if node_running "$n"; then
        log "node $n already running"
        return 0
    fi
    find_java
    LOG_FROM[$n]="$(log_lines "$(node_log "$n")")"
    launch_node "$n"
    wait_nodes "$n" || rc=$?
    case "$rc" in
        0) log "node $n up again on 127.0.0.1:$(node_port "$n")" ;;
        2) die "node $n's port is now used by another process (ss -ltnp 'sport = :$(node_port "$n")'); stop it, or start a new cluster" ;;
        *) die "node $n did not start again (log above)" ;;
    esac
}

# create-topics DIR NAME:PARTITIONS...: with Kafka's own TopicCommand (a JVM start each, 1-2 s).
cmd_create_topics() {
    local spec name parts out rc config=()
    (($# > 0)) || usage
    find_java
    if secured; then config=(--command-config "$(java_config)"); fi
    out="$DIR/create-topics.log"
    for spec in "$@"; do
        [[ "$spec" =~ ^([^:]+):([1-9][0-9]*)$ ]] || die "topic '$spec': write NAME:PARTITIONS"
        name="${BASH_REMATCH[1]}"
        parts="${BASH_REMATCH[2]}"
        rc=0
        HEAP="-Xmx256m" java_for_kafka org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" \
            --create --if-not-exists --topic "$name" --partitions "$parts" \
            --replication-factor "$NODES" "${config[@]}" >"$out" 2>&1 || rc=$?
        if ((rc != 0)); then
            tail_log "$out" 20
            die "could not create topic $name"
        fi
        log "topic $name: $parts partition(s), $NODES replica(s)"
    done
}

cmd_fetch() {
    while (($# > 0)); do
        case "$1" in
            --version) VERSION="${2:-}"; shift 2 || usage ;;
            --version=*) VERSION="${1#*=}"; shift ;;
            *) usage ;;
        esac
    done
    find_java
    fetch_release
    printf '%s\n' "$LIBS"
}

main() {
    local cmd="${1:-}"
    [[ $# -ge 1 ]] || usage
    shift
    if [[ "$cmd" == fetch ]]; then
        cmd_fetch "$@"
        return
    fi
    [[ $# -ge 1 ]] || usage
    set_dir "$1"
    shift
    case "$cmd" in
        start) cmd_start "$@" ;;
        stop) cmd_stop ;;
        logs) cmd_logs "${1:-30}" ;;
        kill-node) need_started_dir && cmd_kill_node "${1:-}" ;;
        start-node) need_started_dir && cmd_start_node "${1:-}" ;;
        create-topics) need_started_dir && cmd_create_topics "$@" ;;
        *) usage ;;
    esac
}

main "$@"
