#!/usr/bin/env bash
# Builds every Debian-based image of docker/ with buildah, smoke-tests each
# one inside the image, prints its size and build time, and writes an OCI
# archive per image that `docker load` and `podman load` accept.
#
#   sudo scripts/build-images.sh [controller] [trainer-cpu] [trainer]
#
# No registry is needed: the Debian 12 and 13 base images the Dockerfiles'
# FROM lines name (debian:12, debian:12-slim, debian:13, debian:13-slim) are
# made locally with debootstrap --variant=minbase and tagged with those names,
# so the Dockerfiles stay the ones `docker build` uses. Debian's mirror must be
# reachable (apt-get runs inside the builds). Needs root.
#
# Environment (all optional):
#   SKRULL_IMAGE_CACHE   roots, apt caches, logs, summary.txt (/var/cache/skrull/images)
#   SKRULL_IMAGE_OUT     OCI archives                 ($SKRULL_IMAGE_CACHE/oci)
#   SKRULL_DEBIAN_MIRROR Debian mirror                (http://deb.debian.org/debian)
#   SKRULL_DEBIAN_UPDATES yes: the base images' apt sources include SUITE-updates
#                        and SUITE-security, as Debian's images do; no: the point
#                        release only, the packages of a root made by
#                        scripts/check-gpu-build.sh, so a build reuses its .debs
#                        and its ccache (development only)
#   SKRULL_CCACHE_DIR    a ccache directory the builds use instead of their own
#                        cache mount (e.g. the one a developer's build fills)
#   SKRULL_TRIXIE_DEBS   a folder of Debian 13 .debs (the CUDA packages) offered to
#                        the CUDA build as its apt cache, so a rebuild does not
#                        download 2.8 GB again
#                        (/var/cache/skrull/trixie-cuda/var/cache/apt/archives if there)
#   SKRULL_CUDNN_DIR     libcudnn*.so.9 for the CUDA image when NVIDIA's download
#                        site is unreachable (docker/README.md, "cuDNN")
# Not in .ci/run: the first run downloads gigabytes (docker/README.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SKRULL_ROOT"

cache="${SKRULL_IMAGE_CACHE:-/var/cache/skrull/images}"
out="${SKRULL_IMAGE_OUT:-$cache/oci}"
mirror="${SKRULL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
updates="${SKRULL_DEBIAN_UPDATES:-yes}"
[ "$(id -u)" -eq 0 ] || { log "build-images.sh needs root (debootstrap, buildah)"; exit 2; }

bh() { buildah --storage-driver vfs "$@"; }

ensure_tools() {
  local missing=()
  command -v buildah >/dev/null || missing+=(buildah)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
}

# The FROM names of docker/*.Dockerfile, per Debian release.
declare -A SUITE=([12]=bookworm [13]=trixie)

# write_sources ROOT SUITE: the deb822 sources file Debian's own images carry
# (main only; a Dockerfile adds contrib / non-free itself where it needs them).
# SKRULL_DEBIAN_UPDATES=no leaves out SUITE-updates and SUITE-security.
write_sources() {
  rm -f "$1/etc/apt/sources.list"
  mkdir -p "$1/etc/apt/sources.list.d"
  local suites="$2 $2-updates"
  [ "$updates" = yes ] || suites="$2"
  cat >"$1/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $suites
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  [ "$updates" = yes ] || return 0
  cat >>"$1/etc/apt/sources.list.d/debian.sources" <<SOURCES

Types: deb
URIs: ${SKRULL_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
Suites: $2-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
}

# make_slim ROOT: what debian:N-slim drops (docs, man pages, locales), and the
# dpkg excludes that keep packages installed later from bringing them back.
make_slim() {
  cat >"$1/etc/dpkg/dpkg.cfg.d/docker-slim" <<'SLIM'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
SLIM
  find "$1/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$1"/usr/share/{groff,info,linda,lintian/overrides,locale,man}/*
}

# commit_root ROOT NAME: a root directory -> local image NAME (no registry).
commit_root() {
  local ctr tarball
  tarball="$cache/$(basename "$1").tar"
  tar --numeric-owner -C "$1" -cf "$tarball" .
  ctr="$(bh from scratch)"
  bh add "$ctr" "$tarball" / >/dev/null
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd bash --label "skrull.debian-updates=$updates" "$ctr"
  bh commit --rm -q "$ctr" "$2" >/dev/null
  rm -f "$tarball"
}

# make_base VERSION: debian:VERSION and debian:VERSION-slim in local storage,
# from a minbase root cached in $cache (made once, reused until deleted);
# remade when SKRULL_DEBIAN_UPDATES changed since.
make_base() {
  local v="$1" suite="${SUITE[$1]}" root="$cache/root-${SUITE[$1]}" made
  made="$(bh inspect --type image --format '{{index .OCIv1.Config.Labels "skrull.debian-updates"}}' \
    "docker.io/library/debian:$v-slim" 2>/dev/null || true)"
  [ "$made" = "$updates" ] && return 0
  mkdir -p "$cache"
  if [ ! -f "$root/.skrull-ready" ]; then
    log "debootstrap --variant=minbase $suite (Debian $v)"
    rm -rf --one-file-system "$root.tmp"
    debootstrap --variant=minbase "$suite" "$root.tmp" "$mirror" >"$cache/debootstrap-$suite.log" 2>&1 ||
      { log "debootstrap failed; see $cache/debootstrap-$suite.log"; exit 2; }
    rm -rf "$root.tmp"/var/cache/apt/archives/*.deb "$root.tmp"/var/lib/apt/lists/*
    rm -rf --one-file-system "$root" && mv "$root.tmp" "$root" && touch "$root/.skrull-ready"
  fi
  log "base images debian:$v and debian:$v-slim (-updates and -security: $updates)"
  write_sources "$root" "$suite"
  commit_root "$root" "docker.io/library/debian:$v"
  rm -rf --one-file-system "$root.slim" && cp -a "$root" "$root.slim"
  make_slim "$root.slim"
  commit_root "$root.slim" "docker.io/library/debian:$v-slim"
  rm -rf --one-file-system "$root.slim"
}

# The version every image is tagged and labelled with: CMake's project
# version, which must equal the chart's appVersion (its default image tag).
project_version() {
  local cmake chart
  cmake="$(sed -nE 's/^project\(skrull VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)"
  chart="$(sed -nE 's/^appVersion: "?([^"]+)"?$/\1/p' charts/skrull/Chart.yaml)"
  [ "$cmake" = "$chart" ] ||
    { log "CMakeLists.txt says version $cmake, charts/skrull/Chart.yaml appVersion $chart: make them equal"; exit 2; }
  echo "$cmake"
}
version="$(project_version)"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD -- 2>/dev/null || revision="$revision-dirty"

declare -A IMAGE=(
  [controller]="ghcr.io/skrull/controller:$version"
  [trainer-cpu]="ghcr.io/skrull/trainer:$version-cpu"
  [trainer]="ghcr.io/skrull/trainer:$version"
)
declare -A DEBIAN=([controller]=12 [trainer-cpu]=12 [trainer]=13)
declare -A SECONDS_TAKEN=()

# build_image NAME [buildah bud args...]: docker/NAME.Dockerfile -> ${IMAGE[NAME]};
# the log goes to $cache/logs/NAME.log.
build_image() {
  local name="$1" start
  shift
  local args=(--isolation chroot --pull=never --layers=false -f "docker/$name.Dockerfile"
    -t "${IMAGE[$name]}" --build-arg "VERSION=$version" --build-arg "REVISION=$revision")
  # Debian's packages, downloaded once per image (apt locks its cache: two
  # builds at once cannot share one) and kept outside the tree.
  local debs="$cache/apt/$name"
  if [ "$name" = trainer ] && [ -d "${SKRULL_TRIXIE_DEBS:-}" ]; then debs="$SKRULL_TRIXIE_DEBS"; fi
  mkdir -p "$debs" "$cache/logs"
  args+=(--volume "$debs:/var/cache/apt/archives")
  if [ -n "${SKRULL_CCACHE_DIR:-}" ]; then
    args+=(--volume "$SKRULL_CCACHE_DIR:/host-ccache" --build-arg CCACHE_DIR=/host-ccache)
  fi
  log "building ${IMAGE[$name]} from docker/$name.Dockerfile (log: $cache/logs/$name.log)"
  start="$(date +%s)"
  if ! bh bud "${args[@]}" "$@" . >"$cache/logs/$name.log" 2>&1; then
    tail -n 30 "$cache/logs/$name.log" >&2
    log "building $name failed; see $cache/logs/$name.log"
    return 1
  fi
  SECONDS_TAKEN[$name]=$(($(date +%s) - start))
}

# cudnn_image: an image holding SKRULL_CUDNN_DIR's libcudnn*.so.9 (default:
# PyPI's CUDA 12 build, scripts/get-cudnn-cu12.sh) under /cudnn, for
# docker/trainer.Dockerfile's CUDNN_IMAGE; prints its name, or nothing when
# there is no cuDNN to give (the Dockerfile then fetches it from PyPI itself).
cudnn_image() {
  local dir="${SKRULL_CUDNN_DIR:-}" name=localhost/skrull-cudnn:9 ctr
  if [ -z "$dir" ]; then
    dir="$("$SKRULL_ROOT/scripts/get-cudnn-cu12.sh")" || dir=""
  fi
  [ -n "$dir" ] && compgen -G "$dir/libcudnn*.so.9" >/dev/null || return 0
  if ! bh inspect --type image "$name" >/dev/null 2>&1; then
    ctr="$(bh from scratch)"
    bh copy "$ctr" "$dir"/libcudnn*.so.9 /cudnn/ >/dev/null
    bh commit --rm -q "$ctr" "$name" >/dev/null
  fi
  echo "$name"
}

# run_in IMAGE [buildah run options...] -- COMMAND...: COMMAND in a fresh
# container of IMAGE, as the image's user, in its working directory.
run_in() {
  local image="$1" ctr rc=0 opts=()
  shift
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  ctr="$(bh from --pull=never -q "$image")"
  bh run --isolation chroot "${opts[@]}" "$ctr" "$@" || rc=$?
  bh rm "$ctr" >/dev/null
  return "$rc"
}

# check_hygiene NAME: runs as a non-root user, carries the OCI labels, has no
# compiler and no leftover .debs or apt lists.
check_hygiene() {
  local image="${IMAGE[$1]}" user label
  user="$(bh inspect --type image --format '{{.OCIv1.Config.User}}' "$image")"
  case "$user" in "" | 0 | 0:* | root | root:*)
    log "$1: runs as root ('$user'): set USER"; return 1 ;; esac
  for label in source version revision; do
    [ -n "$(bh inspect --type image --format "{{index .OCIv1.Config.Labels \"org.opencontainers.image.$label\"}}" "$image")" ] ||
      { log "$1: no org.opencontainers.image.$label label"; return 1; }
  done
  # shellcheck disable=SC2016  # expanded inside the image
  run_in "$image" --user 0:0 -- sh -c '
    for c in cc gcc g++ c++ clang clang++ nvcc; do
      command -v "$c" >/dev/null && { echo "a compiler in the runtime image: $(command -v "$c")"; exit 1; }
    done
    ls /var/cache/apt/archives/*.deb >/dev/null 2>&1 && { echo "leftover .deb files"; exit 1; }
    [ -z "$(ls /var/lib/apt/lists 2>/dev/null | grep -v -e ^lock$ -e ^partial$)" ] || { echo "leftover apt lists"; exit 1; }
    ls /var/cache/apt/*.bin >/dev/null 2>&1 && { echo "leftover apt caches /var/cache/apt/*.bin"; exit 1; }
    exit 0' || { log "$1: hygiene check failed"; return 1; }
}

# smoke_controller: the repository's own end-to-end test of `skrull-controller
# serve` (tests/controller/operator/serve_e2e_test.cc: the fake API server,
# a kubeconfig, a SkrullJob taken to Succeeded, SIGTERM) run on this machine
# with the binary of the image, through a wrapper that runs it in a container.
smoke_controller() {
  local test_bin="$SKRULL_BUILD/bin/controller_serve_e2e_test" wrap ctr rc=0
  if [ ! -x "$test_bin" ]; then
    log "building the smoke test controller_serve_e2e_test in $SKRULL_BUILD"
    skrull_install_deps >/dev/null
    skrull_build controller_serve_e2e_test >/dev/null
  fi
  wrap="$(mktemp -d /tmp/skrull-image-smoke.XXXXXX)"
  ctr="$(bh from --pull=never -q "${IMAGE[controller]}")"
  # buildah run answers SIGTERM by killing its command, so the wrapper hands
  # the test's SIGTERM to skrull-controller itself (a process of this machine:
  # chroot isolation has no PID namespace) and exits with its exit status.
  cat >"$wrap/skrull-controller" <<WRAP
#!/bin/bash
buildah --storage-driver vfs run --isolation chroot --volume /tmp:/tmp \
  --env POD_NAMESPACE="\$POD_NAMESPACE" --env POD_NAME="\$POD_NAME" $ctr skrull-controller "\$@" &
run=\$!
descendants() { local c; for c in \$(ps -o pid= --ppid "\$1"); do echo "\$c"; descendants "\$c"; done; }
forward() {
  local p argv0
  for p in \$(descendants "\$run"); do
    argv0="\$(tr '\\0' '\\n' </proc/\$p/cmdline 2>/dev/null | head -n 1)"
    [ "\${argv0##*/}" = skrull-controller ] && kill -TERM "\$p"
  done
}
trap forward TERM INT
while :; do wait "\$run"; rc=\$?; kill -0 "\$run" 2>/dev/null || break; done
exit "\$rc"
WRAP
  chmod +x "$wrap/skrull-controller"
  SKRULL_BIN_DIR="$wrap" "$test_bin" \
    --gtest_filter=ServeEndToEnd.TheControllerBinaryRunsAJobThroughTheApiServer || rc=$?
  bh rm "$ctr" >/dev/null
  rm -rf "$wrap"
  return "$rc"
}

# smoke_trainer NAME: a 2-rank job (dataParallel 1 x contextParallel 2, the
# tiny example model, 3 steps, on the CPU) trains in the image and writes
# summary.json.
smoke_trainer() {
  local dir rc=0
  dir="$(mktemp -d /tmp/skrull-image-smoke.XXXXXX)"
  cp examples/models/tiny/config.json "$dir/config.json"
  awk 'BEGIN { srand(7); for (i = 0; i < 64; i++) { n = 16 + int(rand() * 600); s = "";
         for (j = 0; j < n; j++) s = s (j ? "," : "") (3 + int(rand() * 250));
         print "{\"input_ids\": [" s "]}" } }' >"$dir/data.jsonl"
  cat >"$dir/job.yaml" <<JOB
apiVersion: skrull.io/v1alpha1
kind: SkrullJob
metadata:
  name: image-smoke
spec:
  model: {config: config.json}
  data: {path: data.jsonl, format: tokenized-jsonl}
  parallelism: {nodes: 1, procsPerNode: 2, dataParallel: 1, contextParallel: 2}
  resources: {gpusPerProc: 0}
  scheduler: {policy: skrull, bucketSize: 512, batchSize: 8, seed: 1}
  training: {steps: 3, learningRate: 1e-3, precision: fp32, outputDir: out}
  metrics: {port: 0}
JOB
  chown -R 65532:65532 "$dir"
  run_in "${IMAGE[$1]}" --volume "$dir:$dir" -- skrull-trainer --job "$dir/job.yaml" \
    >"$cache/logs/$1-smoke.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] || [ ! -s "$dir/out/summary.json" ]; then
    tail -n 20 "$cache/logs/$1-smoke.log" >&2
    log "$1: the 2-rank job did not write summary.json (exit $rc); see $cache/logs/$1-smoke.log"
    rc=1
  fi
  rm -rf "$dir"
  return "$rc"
}

# smoke_trainer_cuda: the CPU smoke test, and ldd of skrull-trainer clean apart
# from the driver's libraries (the NVIDIA container runtime brings those).
smoke_trainer_cuda() {
  # shellcheck disable=SC2016  # expanded inside the image
  run_in "${IMAGE[trainer]}" -- sh -c '
    ldd /usr/local/bin/skrull-trainer | grep -E "libtorch_cuda|libnccl|libcudart|libcudnn"
    missing="$(ldd /usr/local/bin/skrull-trainer | awk "/not found/ { print \$1 }" |
      grep -Ev "^lib(cuda|nvidia-ml)\.so" || true)"
    [ -z "$missing" ] || { echo "not found: $missing"; exit 1; }
    ldd /usr/local/bin/skrull-trainer | grep -q libtorch_cuda || { echo "no libtorch_cuda"; exit 1; }
    ldd /usr/local/bin/skrull-trainer | grep -q libnccl || { echo "no NCCL"; exit 1; }' ||
    { log "trainer: ldd check failed"; return 1; }
  smoke_trainer trainer
}

# archive NAME: $out/NAME.oci.tar, which `docker load` and `podman load` read.
archive() {
  mkdir -p "$out"
  rm -f "$out/$1.oci.tar"
  bh push -q "${IMAGE[$1]}" "oci-archive:$out/$1.oci.tar:${IMAGE[$1]}" >/dev/null
}

size_mb() {  # the image's size as `buildah images` reports it, in MB (10^6 bytes)
  bh images --format '{{.Size}}' "${IMAGE[$1]}" 2>/dev/null |
    awk '$2 == "MB" { printf "%.0f", $1 } $2 == "GB" { printf "%.0f", $1 * 1000 }'
}

main() {
  local names=("$@") name failed=0 mb
  [ ${#names[@]} -gt 0 ] || names=(controller trainer-cpu trainer)
  for name in "${names[@]}"; do
    [ -n "${IMAGE[$name]:-}" ] || { log "unknown image '$name': one of ${!IMAGE[*]}"; exit 2; }
  done
  ensure_tools
  for name in "${names[@]}"; do make_base "${DEBIAN[$name]}"; done
  local cudnn=()
  [[ " ${names[*]} " == *" trainer "* ]] && cudnn=(--build-arg "CUDNN_IMAGE=$(cudnn_image)")
  [ "${cudnn[1]:-}" = CUDNN_IMAGE= ] && cudnn=()
  : "${SKRULL_TRIXIE_DEBS:=/var/cache/skrull/trixie-cuda/var/cache/apt/archives}"
  printf '%-12s %-36s %8s %8s  %s\n' IMAGE TAG SIZE_MB BUILD_S RESULT >"$cache/summary.txt"
  for name in "${names[@]}"; do
    local result=ok
    if [ "$name" = trainer ]; then build_image "$name" "${cudnn[@]}" || result="build failed"
    else build_image "$name" || result="build failed"; fi
    if [ "$result" = ok ]; then
      log "$name: hygiene and smoke test"
      check_hygiene "$name" || result="hygiene failed"
      case "$name" in
        controller) smoke_controller || result="smoke failed" ;;
        trainer-cpu) smoke_trainer trainer-cpu || result="smoke failed" ;;
        trainer) smoke_trainer_cuda || result="smoke failed" ;;
      esac
      [ "$name" != controller ] || [ "$(size_mb controller)" -lt 150 ] ||
        { log "controller: $(size_mb controller) MB, over the 150 MB budget"; result="too big"; }
      [ "$result" != ok ] || archive "$name" || result="archive failed"
    fi
    [ "$result" = ok ] || failed=1
    mb="$(size_mb "$name")"
    printf '%-12s %-36s %8s %8s  %s\n' "$name" "${IMAGE[$name]}" "${mb:--}" \
      "${SECONDS_TAKEN[$name]:--}" "$result" >>"$cache/summary.txt"
  done
  cat "$cache/summary.txt"
  log "OCI archives in $out (docker load -i FILE, podman load -i FILE)"
  return "$failed"
}

# Sourcing this file defines the functions only (to rerun one step by hand,
# e.g. smoke_trainer trainer).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
