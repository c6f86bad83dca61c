# syntax=docker/dockerfile:1
# The GPU trainer: Debian 13's PyTorch 2.6 for CUDA 12.4 with NCCL (contrib /
# non-free: libtorch-cuda-dev, libnccl-dev, nvidia-cuda-toolkit), the build
# scripts/check-gpu-build.sh compiles and tests. Built on debian:13, run on
# debian:13-slim; the chart's default trainer image.
#
#   docker build -f docker/trainer.Dockerfile -t ghcr.io/skrull/trainer:0.1.0 .
#
# cuDNN (libtorch_cuda needs libcudnn.so.9 for CUDA 12): Debian's nvidia-cudnn
# downloads it from NVIDIA while installing; where NVIDIA's site is out of
# reach the build takes the same version from PyPI's nvidia-cudnn-cu12 wheel
# (scripts/get-cudnn-cu12.sh), or from an image holding /cudnn/libcudnn*.so.9:
# --build-arg CUDNN_IMAGE=that-image (docker/README.md).
# Built and smoke-tested by scripts/build-images.sh. The PyTorch-wheel build on
# nvidia/cuda is docker/trainer-wheel.Dockerfile.

ARG DEBIAN_IMAGE=debian:13
ARG CUDNN_IMAGE=cudnn-pypi

# No cuDNN given: the CUDA 12 build from PyPI, by name and SHA-256.
FROM ${DEBIAN_IMAGE} AS cudnn-pypi
COPY scripts/get-cudnn-cu12.sh /usr/local/bin/get-cudnn-cu12.sh
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-pip ca-certificates \
 && mkdir /cudnn \
 && cp -L "$(SKRULL_CUDNN_CACHE=/tmp/cudnn-cache get-cudnn-cu12.sh)"/libcudnn*.so.9 /cudnn/ \
 && rm -rf /tmp/cudnn-cache /var/lib/apt/lists/*
FROM ${CUDNN_IMAGE} AS cudnn

FROM ${DEBIAN_IMAGE} AS build
COPY docker/apt-install.sh /usr/local/lib/skrull/apt-install.sh
COPY --from=cudnn /cudnn /tmp/cudnn
RUN sh /usr/local/lib/skrull/apt-install.sh /tmp/cudnn \
      libtorch-cuda-dev libgloo-cuda-dev libnccl-dev nvidia-cuda-toolkit \
      build-essential cmake ninja-build pkg-config ca-certificates ccache libopenblas0-openmp \
      libcpprest-dev libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev \
      libcli11-dev libpcre2-dev libutf8proc-dev libxxhash-dev \
 && rm -rf /var/lib/apt/lists/* /tmp/cudnn
COPY . /src
WORKDIR /src
# scripts/check-gpu-build.sh's flags and layout (/src -> /build, RelWithDebInfo,
# -Werror), so the ccache its builds fill hits; the binary is stripped of its
# debug information below. CCACHE_DIR: a cache mount here (BuildKit, buildah);
# scripts/build-images.sh can point it at another cache.
ARG CCACHE_DIR=/ccache
RUN --mount=type=cache,target=/ccache \
    export CCACHE_DIR="${CCACHE_DIR}" CCACHE_BASEDIR=/ CCACHE_NOHASHDIR=1 \
      CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime \
 && cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKRULL_WERROR=ON \
      -DSKRULL_WITH_CUDA=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DSKRULL_BUILD_TESTS=OFF -DSKRULL_BUILD_BENCHMARKS=OFF \
 && cmake --build /build --target skrull-trainer \
 && mkdir -p /out/cudnn \
 && objcopy --strip-debug /build/bin/skrull-trainer /out/skrull-trainer \
 && sh docker/runtime-packages.sh /out/skrull-trainer > /out/runtime-packages.txt \
 && { cp -L /usr/local/lib/skrull-cudnn/libcudnn*.so.9 /out/cudnn/ 2>/dev/null || true; } \
 && rm -rf /build

FROM ${DEBIAN_IMAGE}-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/skrull/skrull
LABEL org.opencontainers.image.title="skrull-trainer" \
      org.opencontainers.image.description="Skrull trainer: Debian 13 PyTorch 2.6 CUDA 12.4, NCCL" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY docker/apt-install.sh /usr/local/lib/skrull/apt-install.sh
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
# libtorch-cuda-2.6 depends on nvidia-cudnn (the downloader), which depends on
# nvidia-cuda-dev: 2.5 GB of static CUDA archives and headers nothing runs.
# dpkg leaves those files out (as -slim leaves out docs); the packages stay
# installed, so apt-get in images built on this one still works.
RUN printf '%s\n' 'path-exclude /usr/lib/*.a' 'path-exclude /usr/include/*' \
      > /etc/dpkg/dpkg.cfg.d/skrull-no-build-files
COPY --from=build /out/cudnn /tmp/cudnn
# The packages owning the binary's libraries, computed from it (libtorch-cuda-2.6,
# libnccl2, the CUDA runtime libraries, ...). Their dependencies bring Debian's
# NVIDIA driver library (libcuda1); it is removed again: the NVIDIA container
# runtime injects the host driver's libcuda.so.1 and libnvidia-ml.so.1, and a
# second copy in the image could shadow it.
RUN sh /usr/local/lib/skrull/apt-install.sh /tmp/cudnn $(cat /tmp/runtime-packages.txt) \
 && if dpkg -s libcuda1 >/dev/null 2>&1; then dpkg --remove --force-depends libcuda1; fi \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /tmp/runtime-packages.txt /tmp/cudnn
COPY --from=build /out/skrull-trainer /usr/local/bin/skrull-trainer
COPY docker/check-libs.sh /usr/local/lib/skrull/check-libs.sh
RUN sh /usr/local/lib/skrull/check-libs.sh /usr/local/bin/skrull-trainer '^lib(cuda|nvidia-ml)\.so' \
 && groupadd --gid 65532 skrull \
 && useradd --uid 65532 --gid 65532 --create-home --shell /usr/sbin/nologin skrull
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    NCCL_DEBUG=WARN \
    OMP_NUM_THREADS=1
USER 65532:65532
WORKDIR /home/skrull
ENTRYPOINT ["skrull-trainer"]
