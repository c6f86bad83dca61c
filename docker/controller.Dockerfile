# syntax=docker/dockerfile:1
# The controller: no libtorch, no GPU. Built on Debian 12, run on
# debian:12-slim as a non-root user (uid 65532, the chart's default).
#
#   docker build -f docker/controller.Dockerfile -t ghcr.io/skrull/controller:0.1.0 .
#
# Built and smoke-tested by scripts/build-images.sh (docker/README.md).

ARG DEBIAN_IMAGE=debian:12

FROM ${DEBIAN_IMAGE} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates ccache \
      libcpprest-dev libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev \
      libcli11-dev libpcre2-dev libutf8proc-dev libxxhash-dev \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
# CI's flags (scripts/test.sh: RelWithDebInfo, -Werror) in CI's layout (build/
# in the source tree), so a ccache a developer's build filled hits; the binary
# is stripped below. CCACHE_DIR: a cache mount here (BuildKit, buildah);
# scripts/build-images.sh can point it at another cache.
ARG CCACHE_DIR=/ccache
RUN --mount=type=cache,target=/ccache \
    export CCACHE_DIR="${CCACHE_DIR}" CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1 \
      CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime \
 && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKRULL_WERROR=ON \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DSKRULL_BUILD_TRAINER=OFF -DSKRULL_BUILD_TESTS=OFF -DSKRULL_BUILD_BENCHMARKS=OFF \
 && cmake --build build --target skrull-controller \
 && mkdir -p /out \
 && strip -o /out/skrull-controller build/bin/skrull-controller \
 && sh docker/runtime-packages.sh /out/skrull-controller > /out/runtime-packages.txt \
 && rm -rf build

FROM ${DEBIAN_IMAGE}-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/skrull/skrull
LABEL org.opencontainers.image.title="skrull-controller" \
      org.opencontainers.image.description="Skrull's Kubernetes controller (SkrullJob)" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
ENV DEBIAN_FRONTEND=noninteractive
# The runtime libraries the binary links (on bookworm: libcpprest2.10,
# libyaml-cpp0.7, libprometheus-cpp-core1.0, ...), computed from it, plus CA
# certificates for HTTPS to Prometheus.
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /tmp/runtime-packages.txt
COPY --from=build /out/skrull-controller /usr/local/bin/skrull-controller
COPY docker/check-libs.sh /usr/local/lib/skrull/check-libs.sh
RUN sh /usr/local/lib/skrull/check-libs.sh /usr/local/bin/skrull-controller
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["skrull-controller"]
CMD ["serve"]
