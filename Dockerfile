# A consumer image, built the way a team builds its own consumer (README, "Your own consumer
# in 5 minutes"): exo is installed into a prefix, the consumer is built against it with
# find_package(exo), and only the binary and the shared libraries it links go into a slim,
# non-root runtime image. This file builds the example of handlers/ (its `exo` binary: exo's
# commands, the ledger handlers and the demo's demo-produce/demo-check); for your own consumer,
# point CONSUMER at your project's directory (it needs a CMakeLists.txt that does
# find_package(exo 0.2 CONFIG REQUIRED) and builds an executable named by BINARY).
#
#   docker build -t exo-ledger .
#   docker run --rm --network host -e EXO_POSTGRES_URI=... exo-ledger migrate --config /etc/exo/exo.yaml
#   docker run --rm --network host -e EXO_POSTGRES_URI=... exo-ledger   # run --config /etc/exo/exo.yaml
#
# /etc/exo/exo.yaml is config/docker.yaml: its addresses come from EXO_* environment variables
# (docs/deployment.md). scripts/image-test.sh builds this image and runs it (podman);
# docker-compose.yml runs it next to Kafka, Redis and PostgreSQL.
ARG CONSUMER=handlers
ARG BINARY=exo

FROM debian:12-slim AS build
ARG CONSUMER
ARG BINARY
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
# The one list of Debian packages, restricted to what a build needs (and ccache: a rebuild of
# the image on the same machine compiles only what changed, through the cache mount below).
RUN EXO_APT_SET=build EXO_APT_EXTRA=ccache scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
# exo's sources, then the consumer's: only what the build reads, so editing docs, tests or
# scripts does not invalidate the layers below.
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY lua/ lua/
COPY sql/ sql/
COPY config/ config/
COPY framework/ framework/
COPY handlers/ handlers/
COPY $CONSUMER/ $CONSUMER/
ENV CCACHE_DIR=/ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
RUN --mount=type=cache,target=/ccache \
    cmake -S . -B /build/exo -G Ninja -DCMAKE_BUILD_TYPE=Release -DEXO_BUILD_TESTS=OFF \
 && cmake --build /build/exo \
 && cmake --install /build/exo --prefix /opt/exo \
 && cmake -S "$CONSUMER" -B /build/consumer -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DCMAKE_PREFIX_PATH=/opt/exo \
 && cmake --build /build/consumer \
 && mkdir -p /runtime/lib \
 && cp "/build/consumer/$BINARY" /runtime/consumer \
 && ldd /runtime/consumer | awk '$3 ~ /^\// { print $3 }' \
    | grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' \
    | xargs -r cp -L -t /runtime/lib \
 && mkdir -p /runtime/app \
 && if [ -d "$CONSUMER/sql" ]; then cp -r "$CONSUMER/sql" /runtime/app/; fi

FROM debian:12-slim
# A fixed uid (10001, above the distribution's ranges) that owns nothing in the image:
# Kubernetes' runAsNonRoot can check it, and a mounted config needs only to be world-readable.
RUN useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin exo
COPY --from=build /runtime/lib/ /usr/local/lib/exo/
COPY --from=build /runtime/consumer /usr/local/bin/consumer
# A consumer that reads its migrations at run time (Application::migrations_dir("sql"))
# finds them here, the working directory.
COPY --from=build /runtime/app/ /app/
WORKDIR /app
COPY config/docker.yaml /etc/exo/exo.yaml
COPY deploy/image/exo-probe /usr/local/bin/exo-probe
ENV LD_LIBRARY_PATH=/usr/local/lib/exo
USER exo
# The observability endpoint (config/docker.yaml): /metrics, /healthz, /readyz, /status.
EXPOSE 9464
# Liveness: a process that fails /healthz is stuck and may be restarted (that loses nothing).
# Docker uses this; podman keeps it with `podman build --format docker`. Orchestrators probe
# /healthz and /readyz themselves (docker-compose.yml, docs/deployment.md).
HEALTHCHECK --interval=10s --timeout=6s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/exo-probe", "/healthz"]
# exo drains on SIGTERM (exit 0) within pipeline.shutdown_timeout_ms (10 s by default): give
# it a margin before SIGKILL (docker stop -t 30, compose stop_grace_period: 30s, Kubernetes
# terminationGracePeriodSeconds: 30).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/consumer"]
CMD ["run", "--config", "/etc/exo/exo.yaml"]
