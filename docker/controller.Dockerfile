# syntax=docker/dockerfile:1
# The controller: no libtorch, no GPU. Built on Debian 12, run on
# debian:12-slim as a non-root user (uid 65532, the chart's default).
#
#   docker build -f docker/controller.Dockerfile -t ghcr.io/skrull/controller:0.1.0 .
#
# Not built here (no Docker engine in this workplace): see docker/README.md.

ARG DEBIAN_IMAGE=debian:12

FROM ${DEBIAN_IMAGE} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libcpprest-dev libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev \
      libcli11-dev libpcre2-dev libutf8proc-dev libxxhash-dev \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSKRULL_BUILD_TRAINER=OFF -DSKRULL_BUILD_TESTS=OFF -DSKRULL_BUILD_BENCHMARKS=OFF \
 && cmake --build /build --target skrull-controller \
 && sh docker/runtime-packages.sh /build/bin/skrull-controller > /build/runtime-packages.txt

FROM ${DEBIAN_IMAGE}-slim
ENV DEBIAN_FRONTEND=noninteractive
# The runtime libraries the binary links (on bookworm: libcpprest2.10,
# libyaml-cpp0.7, libprometheus-cpp-core1.0, ...), computed from it, plus CA
# certificates for HTTPS to Prometheus.
COPY --from=build /build/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build /build/bin/skrull-controller /usr/local/bin/skrull-controller
COPY docker/check-libs.sh /usr/local/lib/skrull/check-libs.sh
RUN sh /usr/local/lib/skrull/check-libs.sh /usr/local/bin/skrull-controller
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["skrull-controller"]
CMD ["serve"]
