#!/usr/bin/env bash
# The GPU build, compiled, linked and tested without a GPU: builds this
# checkout against PyTorch 2.6 for CUDA 12.4 with NCCL (Debian 13 contrib /
# non-free: libtorch-cuda-dev, libgloo-cuda-dev, libnccl-dev,
# nvidia-cuda-toolkit) inside a Debian 13 root, with SKRULL_WITH_CUDA=ON and
# -Werror in two build types, RelWithDebInfo (-O2, what CI builds) and Release
# (-O3, where GCC's warnings see through more inlining), checks that both
# skrull-trainers link libtorch_cuda and NCCL, and runs the whole CTest suite
# there on the CPU with the RelWithDebInfo build. Prints "N passed, M failed".
#
#   sudo scripts/check-gpu-build.sh [ctest args...]
#
# Not part of scripts/test.sh / .ci/run: the first run downloads about 3 GB
# into the root (SKRULL_GPU_ROOT, default /var/cache/skrull/trixie-cuda,
# outside the source tree and made once) and the build takes long on 2 cores.
# Needs root (debootstrap, chroot, bind mounts) and Debian's mirror.
#
# cuDNN: libtorch_cuda.so needs libcudnn.so.9 built for CUDA 12 to link and
# load, but Debian's nvidia-cudnn only downloads it from NVIDIA in its
# post-install step, which fails offline. The script lets that step be a no-op
# and copies libcudnn*.so.9 into the root from SKRULL_CUDNN_DIR, by default
# the same cuDNN version from PyPI's nvidia-cudnn-cu12 wheel
# (scripts/get-cudnn-cu12.sh). See README.md, "Build options".
#
# SKRULL_GPU_BUILD_TYPES (default "RelWithDebInfo Release"): the build types;
# the first one runs the suite, the others are compiled and linked only.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root="${SKRULL_GPU_ROOT:-/var/cache/skrull/trixie-cuda}"
cudnn_dir="${SKRULL_CUDNN_DIR:-}"
read -r -a build_types <<<"${SKRULL_GPU_BUILD_TYPES:-RelWithDebInfo Release}"
mirror="${SKRULL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" -eq 0 ] || { log "check-gpu-build.sh needs root (debootstrap, chroot)"; exit 2; }

# Debian 13 names of what scripts/lib.sh installs on Debian 12, with the CUDA
# builds of libtorch and gloo (libtorch-cuda-dev conflicts with libgloo-dev).
GPU_PACKAGES=(
  libtorch-cuda-dev libgloo-cuda-dev libnccl-dev nvidia-cuda-toolkit
  build-essential cmake ninja-build pkg-config git ca-certificates curl clang-format ccache
  libopenblas0-openmp libcpprest-dev libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev
  libcli11-dev libpcre2-dev libutf8proc-dev libxxhash-dev googletest libgtest-dev libgmock-dev
  prometheus python3 python3-yaml python3-jinja2 nodejs npm openssl
)

# The root sees a clean environment, except the host's proxy settings (the
# suite's npm fetches of helm and the tokenizer references go through them).
proxy_env=()
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [ -n "${!v:-}" ] && proxy_env+=("$v=${!v}")
done
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "${proxy_env[@]}" \
  NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
  CCACHE_DIR=/ccache CCACHE_BASEDIR=/ CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=20G "$@"; }

mounts=()
unmount_all() {  # reverse order; never leave /dev or /proc bound into the root
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
  mounts=()
}
trap unmount_all EXIT
bind() {  # bind SRC DEST_IN_ROOT
  mkdir -p "$root$2"
  mount --bind "$1" "$root$2"
  mounts+=("$root$2")
}

make_root() {
  [ -f "$root/.skrull-ready" ] && return 0
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
  if [ ! -x "$root/usr/bin/apt-get" ]; then
    log "debootstrap Debian 13 into $root"
    rm -rf --one-file-system "$root"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase --components=main,contrib,non-free,non-free-firmware \
      trixie "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
      { log "debootstrap failed; see $root.debootstrap.log"; exit 2; }
  fi
  bind /proc /proc
  log "installing ${#GPU_PACKAGES[@]} packages in the root (about 3 GB the first time)"
  in_root apt-get update -q >"$root.apt.log" 2>&1
  if ! in_root apt-get install -y -q --no-install-recommends "${GPU_PACKAGES[@]}" >>"$root.apt.log" 2>&1; then
    # Expected offline: nvidia-cudnn's post-install download. Anything else is fatal.
    local unconfigured
    unconfigured="$(in_root dpkg --audit | awk '/^ [a-z0-9]/{print $1}' | sort -u | tr '\n' ' ')"
    grep -q "nvidia-cudnn" <<<"$unconfigured" ||
      { log "apt-get install failed in the root; see $root.apt.log"; exit 2; }
    log "nvidia-cudnn cannot download cuDNN offline: using $cudnn_dir/libcudnn*.so.9 instead"
    echo 'exit 0  # cuDNN is copied in by scripts/check-gpu-build.sh' >"$root/var/lib/dpkg/info/nvidia-cudnn.postinst"
    in_root dpkg --configure -a >>"$root.apt.log" 2>&1 ||
      { log "dpkg --configure failed in the root; see $root.apt.log"; exit 2; }
  fi
  unmount_all
  touch "$root/.skrull-ready"
}

install_cudnn() {
  local dest="$root/usr/local/lib/skrull-cudnn"
  [ -e "$dest/libcudnn.so.9" ] && return 0
  if [ -z "$cudnn_dir" ]; then
    python3 -m pip --version >/dev/null 2>&1 || apt-get install -y -q python3-pip >&2
    cudnn_dir="$("$SKRULL_ROOT/scripts/get-cudnn-cu12.sh")" ||
      { log "no cuDNN from PyPI: set SKRULL_CUDNN_DIR to a folder with CUDA 12 libcudnn*.so.9"; exit 2; }
  fi
  compgen -G "$cudnn_dir/libcudnn*.so.9" >/dev/null ||
    { log "no libcudnn*.so.9 in $cudnn_dir: set SKRULL_CUDNN_DIR (libtorch_cuda needs it)"; exit 2; }
  mkdir -p "$dest"
  cp -L "$cudnn_dir"/libcudnn*.so.9 "$dest/"
  echo /usr/local/lib/skrull-cudnn >"$root/etc/ld.so.conf.d/skrull-cudnn.conf"
  in_root ldconfig
}

# The root trusts what the host trusts: local CAs (a proxy's, a company's)
# from /usr/local/share/ca-certificates, or npm in the root fails with
# SELF_SIGNED_CERT_IN_CHAIN where the host's npm works.
trust_host_cas() {
  compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null || return 0
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  in_root update-ca-certificates >/dev/null 2>&1 ||
    { log "update-ca-certificates failed in the root"; exit 2; }
}

# build_one TYPE DIR: configures and builds the checkout with CUDA and -Werror
# into DIR (a path in the root) and checks skrull-trainer's CUDA libraries.
build_one() {
  local type="$1" dir="$2"
  # ccache (inside the root, cache in $root/ccache) makes a rebuild after a
  # small change take minutes instead of the first build's hour on 2 cores.
  local launcher=()
  [ -x "$root/usr/bin/ccache" ] && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  mkdir -p "$root$dir"
  log "building /src $type with SKRULL_WITH_CUDA=ON -Werror into $dir ($(nproc) jobs)"
  in_root cmake -S /src -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" \
    -DSKRULL_WITH_CUDA=ON -DSKRULL_WERROR=ON -DSKRULL_BUILD_TESTS=ON -DSKRULL_BUILD_BENCHMARKS=ON "${launcher[@]}" >/dev/null
  in_root cmake --build "$dir" -j "$(nproc)" || { log "the $type build failed"; exit 1; }
  log "skrull-trainer's CUDA and NCCL libraries ($type):"
  local libs
  libs="$(in_root ldd "$dir/bin/skrull-trainer")"
  grep -E 'libtorch_cuda|libnccl|libcudart|libcudnn' <<<"$libs" >&2 || true
  grep -q 'libtorch_cuda' <<<"$libs" || { log "skrull-trainer does not link libtorch_cuda"; exit 1; }
  grep -q 'libnccl' <<<"$libs" || { log "skrull-trainer does not link NCCL"; exit 1; }
  grep -q 'not found' <<<"$libs" && { log "unresolved libraries above"; exit 1; }
  return 0
}

build_and_test() {
  bind "$SKRULL_ROOT" /src
  bind /proc /proc
  bind /dev /dev
  bind /dev/pts /dev/pts
  [ ${#build_types[@]} -gt 0 ] || { log "SKRULL_GPU_BUILD_TYPES is empty: name at least one build type"; exit 2; }
  # The first type keeps /build (the layout docker/trainer.Dockerfile's ccache
  # shares); the others build beside it, e.g. /build-release.
  local type dir
  for type in "${build_types[@]}"; do
    dir=/build
    [ "$type" = "${build_types[0]}" ] || dir="/build-${type,,}"
    build_one "$type" "$dir"
  done
  log "running the whole suite on the CPU with the ${build_types[0]} CUDA build"
  local rc=0
  # The arguments quoted for the root's shell (e.g. -L 'unit|gpu').
  in_root /bin/sh -c "cd /build && ctest --output-on-failure --timeout 900 -j 2 $(printf '%q ' "$@")" |
    tee "$root/build/ctest.log" || rc=$?
  local summary
  summary="$(grep -E '^[0-9]+% tests passed' "$root/build/ctest.log" || true)"
  local failed total
  failed="$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/p' <<<"$summary")"
  total="$(sed -nE 's/.*tests failed out of ([0-9]+).*/\1/p' <<<"$summary")"
  [ -n "$total" ] || { log "ctest printed no summary"; exit 1; }
  echo "$((total - failed)) passed, $failed failed"
  return "$rc"
}

make_root
install_cudnn
trust_host_cas
build_and_test "$@"
