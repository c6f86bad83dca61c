# syntax=docker/dockerfile:1
# The GPU trainer, PyTorch-wheel variant: CUDA libtorch + NCCL from the PyTorch
# pip wheel, built in nvidia/cuda devel and run on nvidia/cuda base
# (docker/README.md). The chart's default trainer is docker/trainer.Dockerfile
# (Debian 13's PyTorch 2.6 CUDA), the one built and smoke-tested here.
#
#   docker build -f docker/trainer-wheel.Dockerfile -t ghcr.io/skrull/trainer:0.1.0-wheel .
#
# Why the pip wheel (not the libtorch zip, not NGC): one pinned version that
# brings matching CUDA, cuDNN and NCCL libraries (the nvidia-*-cu12 wheels),
# CMake files found through torch.utils.cmake_prefix_path, and since torch 2.7
# the C++11 ABI that Ubuntu's yaml-cpp / cpprest / prometheus-cpp use (checked
# below). NGC's nvcr.io/nvidia/pytorch works the same way if you prefer its
# tuned NCCL: set BUILD_IMAGE to it and skip the pip install.
#
# Build arguments:
#   CUDA_VERSION   CUDA of the nvidia/cuda images; the host driver must support it
#   UBUNTU         Ubuntu of the nvidia/cuda images (24.04: prometheus-cpp in apt)
#   TORCH_VERSION  torch wheel version (>= 2.7 for the C++11 ABI)
#   TORCH_INDEX    wheel index for that CUDA (cu126 = CUDA 12.6)
#   CUDA_ARCHS     GPU architectures for torch's CMake (8.0 = A100, 9.0 = H100)
#
# Not built by scripts/build-images.sh: its nvidia/cuda base cannot be pulled
# here (no registry is reachable); see docker/README.md.

ARG CUDA_VERSION=12.6.3
ARG UBUNTU=24.04

FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU} AS build
ARG TORCH_VERSION=2.7.1
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu126
ARG CUDA_ARCHS="8.0;9.0"
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config git ca-certificates python3 python3-venv \
      libyaml-cpp-dev libcpprest-dev prometheus-cpp-dev nlohmann-json3-dev \
      libcli11-dev libpcre2-dev libutf8proc-dev libxxhash-dev \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/torch \
 && /opt/torch/bin/pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}" \
 && /opt/torch/bin/python -c "import sys, torch; sys.exit(0 if torch.compiled_with_cxx11_abi() else 'torch ' + torch.__version__ + ' uses the pre-C++11 ABI: use TORCH_VERSION >= 2.7')"
COPY . /src
WORKDIR /src
RUN TORCH_CUDA_ARCH_LIST="${CUDA_ARCHS}" cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSKRULL_WITH_CUDA=ON \
      -DCMAKE_PREFIX_PATH="$(/opt/torch/bin/python -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
      -DSKRULL_BUILD_TESTS=OFF -DSKRULL_BUILD_BENCHMARKS=OFF \
 && cmake --build /build --target skrull-trainer \
 && sh docker/runtime-packages.sh /build/bin/skrull-trainer > /build/runtime-packages.txt \
 && site="$(/opt/torch/bin/python -c 'import site;print(site.getsitepackages()[0])')" \
 && mkdir -p /runtime/torch /runtime/nvidia \
 && cp -a "$site/torch/lib" /runtime/torch/ \
 && cp -a "$site/nvidia/." /runtime/nvidia/

FROM nvidia/cuda:${CUDA_VERSION}-base-ubuntu${UBUNTU}
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /build/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
# libtorch and the CUDA, cuDNN and NCCL libraries of its wheels, in the same
# layout as site-packages so their RUNPATHs ($ORIGIN/../../nvidia/...) hold;
# ld.so.conf covers the binary itself.
COPY --from=build /runtime /opt/torch
RUN { echo /opt/torch/torch/lib; ls -d /opt/torch/nvidia/*/lib; } > /etc/ld.so.conf.d/skrull-torch.conf \
 && ldconfig
COPY --from=build /build/bin/skrull-trainer /usr/local/bin/skrull-trainer
COPY docker/check-libs.sh /usr/local/lib/skrull/check-libs.sh
# libcuda / libnvidia-ml come from the host driver at run time.
RUN sh /usr/local/lib/skrull/check-libs.sh /usr/local/bin/skrull-trainer '^lib(cuda|nvidia-ml)\.so' \
 && groupadd --gid 65532 skrull \
 && useradd --uid 65532 --gid 65532 --create-home --shell /usr/sbin/nologin skrull
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    NCCL_DEBUG=WARN \
    OMP_NUM_THREADS=1
USER 65532:65532
WORKDIR /home/skrull
ENTRYPOINT ["skrull-trainer"]
