#!/usr/bin/env bash
# Builds gpu-bundle/: what one short run on a lent GPU machine needs, built
# here, without a GPU, against the torch those machines have.
#
#   scripts/gpu-bundle.sh        # -> gpu-bundle/ (ignored by git), its size printed
#   gpu-bundle/run.sh            # on the GPU machine; here: only its CPU parts
#
# The GPU machines have one H100 / H200 and PyTorch 2.11 for CUDA 13 from PyPI
# in a Python environment, and reach nothing. So this script:
#   1. makes a venv (SKRULL_GPU_BUNDLE_VENV, default
#      /var/cache/skrull/gpu-bundle-venv) with the same torch from PyPI and
#      NVIDIA's CUDA 13 compiler wheels (torch's CMake files enable the CUDA
#      language, so they need nvcc and the toolkit's headers);
#   2. configures this checkout with SKRULL_WITH_CUDA=ON against that torch
#      into build-gpu-bundle/ (Release, no RPATH) and builds skrull-trainer,
#      skrull-make-data and every `gpu`-labelled test (`ctest -L gpu -N`);
#   3. copies them, stripped, into gpu-bundle/bin with every shared library
#      they need that is neither torch's, CUDA's (from the machine's torch
#      install) nor glibc's into gpu-bundle/lib, plus run.sh
#      (scripts/gpu-bundle-run.sh) and its job files; fails above 60 MiB.
#
# Needs: Debian 12's build packages (scripts/lib.sh installs them), python3
# with venv, PyPI. The first run downloads about 4 GB of wheels and compiles
# the trainer (an hour on 2 cores; ccache makes later runs minutes).
# docs/gpu-build.md, "The GPU bundle".
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly TORCH_VERSION="2.11.0"        # the GPU machines' torch (CUDA 13.0 build on PyPI)
readonly CUDA_WHEELS_VERSION="13.0.2"  # torch 2.11.0's cuda-toolkit pin
readonly MAX_BUNDLE_MIB=60

venv="${SKRULL_GPU_BUNDLE_VENV:-/var/cache/skrull/gpu-bundle-venv}"
build="$SKRULL_ROOT/build-gpu-bundle"
out="$SKRULL_ROOT/gpu-bundle"

make_venv() {
  local have=""
  [ -x "$venv/bin/python" ] &&
    have="$("$venv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)"
  if [ "${have%%+*}" != "$TORCH_VERSION" ] || [ ! -x "$(site_packages)/nvidia/cu13/bin/nvcc" ] ||
    [ ! -e "$(site_packages)/nvidia/cu13/include/nv/target" ]; then
    log "installing torch $TORCH_VERSION and the CUDA $CUDA_WHEELS_VERSION compiler wheels into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "torch==$TORCH_VERSION" \
      "cuda-toolkit[nvcc,crt,nvvm,cccl]==$CUDA_WHEELS_VERSION" ||
      { log "pip install into $venv failed (is PyPI reachable?)"; exit 1; }
  fi
  # The wheels install the toolkit as nvidia/cu13/{bin,include,lib}; nvcc's
  # link step and CMake's FindCUDA look in lib64 and for unversioned names.
  local cuda lib name
  cuda="$(site_packages)/nvidia/cu13"
  mkdir -p "$cuda/lib64"
  for lib in "$cuda"/lib/*; do
    name="$(basename "$lib")"
    ln -sfn "../lib/$name" "$cuda/lib64/$name"
    case "$name" in *.so.*) ln -sfn "../lib/$name" "$cuda/lib64/${name%%.so.*}.so" ;; esac
  done
}

site_packages() { "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

configure_and_build() {
  local cuda prefix nccl_include
  cuda="$(site_packages)/nvidia/cu13"
  # torch's ProcessGroupNCCL.hpp includes <nccl.h>, which the NCCL wheel keeps
  # beside its library; the trainer calls no NCCL function itself.
  nccl_include="$(site_packages)/nvidia/nccl/include"
  [ -f "$nccl_include/nccl.h" ] || { log "no nccl.h in $nccl_include (torch's nvidia-nccl wheel)"; exit 1; }
  prefix="$("$venv/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"
  # ccache hits from any clone: paths relative to the checkout.
  export CCACHE_BASEDIR="$SKRULL_ROOT" CCACHE_NOHASHDIR=1
  log "configuring $build against torch $TORCH_VERSION ($prefix)"
  mkdir -p "$build"
  # 9.0: the H100 / H200 the bundle is for (TORCH_CUDA_ARCH_LIST only shapes
  # torch's own flags; the trainer has no .cu files).
  cmake -S "$SKRULL_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSKRULL_WITH_CUDA=ON -DSKRULL_BUILD_TESTS=ON -DSKRULL_BUILD_BENCHMARKS=OFF \
    -DCMAKE_SKIP_RPATH=ON -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="-isystem $nccl_include" \
    -DCUDA_TOOLKIT_ROOT_DIR="$cuda" -DCUDAToolkit_ROOT="$cuda" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 >"$build/configure.log" 2>&1 ||
    { log "configure failed; see $build/configure.log"; exit 1; }
  mapfile -t gpu_tests < <(cd "$build" && ctest -L gpu -N | sed -nE 's/^ *Test +#[0-9]+: ([A-Za-z0-9_]+)$/\1/p')
  [ ${#gpu_tests[@]} -gt 0 ] || { log "ctest -L gpu lists no tests in $build"; exit 1; }
  log "building skrull-trainer, skrull-make-data and ${#gpu_tests[@]} gpu tests: ${gpu_tests[*]}"
  nice -n 10 cmake --build "$build" -j "$(nproc)" --target skrull-trainer skrull-make-data "${gpu_tests[@]}"
}

# bundle_libs BINARY...: copies the shared libraries the binaries need that
# the GPU machine's torch install or glibc does not provide into $out/lib.
bundle_libs() {
  local torch_lib libpath
  torch_lib="$(site_packages)/torch/lib"
  libpath="$torch_lib:$(find "$(site_packages)/nvidia" -maxdepth 3 -type d -name lib | paste -sd:)"
  local lib path
  while read -r lib path; do
    case "$path" in
      "$(site_packages)"/*) continue ;;  # torch, CUDA, NCCL, cuDNN: the machine's own
    esac
    case "$lib" in  # glibc: the machine's own (its version must be >= this one's)
      libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*.so.* | \
        libresolv.so.* | libutil.so.* | linux-vdso.so.*) continue ;;
      libcuda.so.* | libnvidia-ml.so.*) continue ;;  # the driver's
    esac
    [ -f "$path" ] || { log "$lib: not found for the bundle (ldd: $path)"; exit 1; }
    cp -L "$path" "$out/lib/$lib"
  done < <(LD_LIBRARY_PATH="$libpath" ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $2 == "=>" && $3 == "not" { print $1, "not-found" }' | sort -u)
  strip --strip-unneeded "$out"/lib/*.so* 2>/dev/null || true
}

assemble() {
  rm -rf "$out"
  mkdir -p "$out/bin" "$out/lib"
  local t
  for t in skrull-trainer skrull-make-data "${gpu_tests[@]}"; do
    strip --strip-unneeded -o "$out/bin/$t" "$build/bin/$t"
  done
  bundle_libs "$out"/bin/*
  cp "$SKRULL_ROOT/scripts/gpu-bundle-run.sh" "$out/run.sh"
  cp "$SKRULL_ROOT/scripts/gpu-bundle-report.py" "$out/report.py"
  chmod +x "$out/run.sh"
  git -C "$SKRULL_ROOT" rev-parse --short HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"
  echo "$TORCH_VERSION" >"$out/TORCH_VERSION"
  local glibc
  glibc="$(objdump -T "$out"/bin/* "$out"/lib/* 2>/dev/null | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -1)"
  echo "${glibc#GLIBC_}" >"$out/GLIBC_MIN"
  local kib
  kib="$(du -sk "$out" | cut -f1)"
  log "gpu-bundle: $((kib / 1024)) MiB ($kib KiB) in $out; needs glibc >= ${glibc#GLIBC_} and torch $TORCH_VERSION on the machine"
  [ "$kib" -le $((MAX_BUNDLE_MIB * 1024)) ] || { log "the bundle is over $MAX_BUNDLE_MIB MiB"; exit 1; }
}

skrull_install_deps
make_venv
configure_and_build
assemble
