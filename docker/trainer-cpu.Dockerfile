# syntax=docker/dockerfile:1
# The CPU trainer: Debian 12's libtorch 1.13 (CPU-only, Gloo), the build this
# repository tests (scripts/test.sh). For CPU jobs (spec.resources.gpusPerProc: 0),
# CI and trying Skrull on a cluster without GPUs.
#
#   docker build -f docker/trainer-cpu.Dockerfile -t ghcr.io/skrull/trainer:0.1.0-cpu .
#
# Not built here (no Docker engine in this workplace): see docker/README.md.

ARG DEBIAN_IMAGE=debian:12

FROM ${DEBIAN_IMAGE} AS build
# The same packages scripts/test.sh installs, from the same list (scripts/lib.sh).
COPY scripts/lib.sh /src/scripts/lib.sh
RUN bash -c 'source /src/scripts/lib.sh && skrull_install_deps' && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSKRULL_BUILD_TRAINER=ON -DSKRULL_BUILD_TESTS=OFF -DSKRULL_BUILD_BENCHMARKS=OFF \
 && cmake --build /build --target skrull-trainer \
 && sh docker/runtime-packages.sh /build/bin/skrull-trainer > /build/runtime-packages.txt

FROM ${DEBIAN_IMAGE}-slim
COPY --from=build /build/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build /build/bin/skrull-trainer /usr/local/bin/skrull-trainer
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
