# A consumer image, built the way a team builds its own consumer (README, "Your own consumer
# in 5 minutes"): exo is installed into a prefix, the consumer is built against it with
# find_package(exo), and only the binary and the shared libraries it links go into a slim,
# non-root runtime image. This file builds the example of handlers/; for your own consumer,
# point CONSUMER at your project's directory (it needs a CMakeLists.txt that does
# find_package(exo 0.2 CONFIG REQUIRED) and builds an executable named by BINARY).
#
#   docker build -t exo-ledger .
#   docker run --rm --network host exo-ledger migrate --config /etc/exo/exo.yaml
#   docker run --rm --network host exo-ledger              # run --config /etc/exo/exo.yaml
#
# docker-compose.yml runs Kafka, Redis and PostgreSQL for it (config/docker.yaml).
ARG CONSUMER=handlers
ARG BINARY=exo

FROM debian:12-slim AS build
ARG CONSUMER
ARG BINARY
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
# The one list of Debian packages, restricted to what a build needs.
RUN EXO_APT_SET=build scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B /build/exo -G Ninja -DCMAKE_BUILD_TYPE=Release \
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
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin exo
COPY --from=build /runtime/lib/ /usr/local/lib/exo/
COPY --from=build /runtime/consumer /usr/local/bin/consumer
# A consumer that reads its migrations at run time (Application::migrations_dir("sql"))
# finds them here, the working directory.
COPY --from=build /runtime/app/ /app/
WORKDIR /app
COPY config/docker.yaml /etc/exo/exo.yaml
ENV LD_LIBRARY_PATH=/usr/local/lib/exo
USER exo
ENTRYPOINT ["/usr/local/bin/consumer"]
CMD ["run", "--config", "/etc/exo/exo.yaml"]
