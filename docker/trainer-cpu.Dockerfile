# syntax=docker/dockerfile:1
# The CPU trainer: Debian 12's libtorch 1.13 (CPU-only, Gloo), the build this
# repository tests (scripts/test.sh). For CPU jobs (spec.resources.gpusPerProc: 0),
# CI and trying Skrull on a cluster without GPUs.
#
#   docker build -f docker/trainer-cpu.Dockerfile -t ghcr.io/skrull/trainer:0.1.0-cpu .
#
# Built and smoke-tested by scripts/build-images.sh (docker/README.md).

ARG DEBIAN_IMAGE=debian:12

FROM ${DEBIAN_IMAGE} AS build
# The build packages scripts/quickstart.sh and scripts/test.sh install, from the
# same list (scripts/lib.sh), plus ccache.
COPY scripts/lib.sh /src/scripts/lib.sh
RUN bash -c 'source /src/scripts/lib.sh && skrull_install_deps' \
 && apt-get install -y --no-install-recommends ccache \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
# CI's flags (scripts/test.sh: RelWithDebInfo, -Werror) in CI's layout (build/
# in the source tree), so a ccache a developer's build filled hits; the binary
# is stripped of its debug information below. CCACHE_DIR: a cache mount here
# (BuildKit, buildah); scripts/build-images.sh can point it at another cache.
ARG CCACHE_DIR=/ccache
RUN --mount=type=cache,target=/ccache \
    CCACHE_DIR="${CCACHE_DIR}" CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1 \
    CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKRULL_WERROR=ON \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DSKRULL_BUILD_TRAINER=ON -DSKRULL_BUILD_TESTS=OFF -DSKRULL_BUILD_BENCHMARKS=OFF \
 && CCACHE_DIR="${CCACHE_DIR}" CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1 \
    CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime \
    cmake --build build --target skrull-trainer \
 && mkdir -p /out \
 && objcopy --strip-debug build/bin/skrull-trainer /out/skrull-trainer \
 && sh docker/runtime-packages.sh /out/skrull-trainer > /out/runtime-packages.txt \
 && rm -rf build

FROM ${DEBIAN_IMAGE}-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/skrull/skrull
LABEL org.opencontainers.image.title="skrull-trainer (CPU)" \
      org.opencontainers.image.description="Skrull trainer: Debian 12 libtorch 1.13, CPU, Gloo" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /tmp/runtime-packages.txt
COPY --from=build /out/skrull-trainer /usr/local/bin/skrull-trainer
COPY docker/check-libs.sh /usr/local/lib/skrull/check-libs.sh
RUN sh /usr/local/lib/skrull/check-libs.sh /usr/local/bin/skrull-trainer \
 && groupadd --gid 65532 skrull \
 && useradd --uid 65532 --gid 65532 --create-home --shell /usr/sbin/nologin skrull
# OpenBLAS and OpenMP: one thread per rank unless the pod says otherwise; the
# controller runs procsPerNode ranks per pod.
ENV OMP_NUM_THREADS=1
USER 65532:65532
WORKDIR /home/skrull
ENTRYPOINT ["skrull-trainer"]
