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
#   SKRULL_IMAGE_CACHE   roots, apt caches, logs      (/var/cache/skrull/images)
#   SKRULL_IMAGE_OUT     OCI archives and sizes.tsv   ($SKRULL_IMAGE_CACHE/oci)
#   SKRULL_DEBIAN_MIRROR Debian mirror                (http://deb.debian.org/debian)
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
write_sources() {
  rm -f "$1/etc/apt/sources.list"
  mkdir -p "$1/etc/apt/sources.list.d"
  cat >"$1/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $2 $2-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

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
  local ctr tarball="$cache/$(basename "$1").tar"
  tar --numeric-owner -C "$1" -cf "$tarball" .
  ctr="$(bh from scratch)"
  bh add "$ctr" "$tarball" / >/dev/null
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd bash "$ctr"
  bh commit --rm -q "$ctr" "$2" >/dev/null
  rm -f "$tarball"
}

# make_base VERSION: debian:VERSION and debian:VERSION-slim in local storage,
# from a minbase root cached in $cache (made once, reused until deleted).
make_base() {
  local v="$1" suite="${SUITE[$1]}" root="$cache/root-${SUITE[$1]}"
  if bh inspect --type image "docker.io/library/debian:$v-slim" >/dev/null 2>&1; then return 0; fi
  mkdir -p "$cache"
  if [ ! -f "$root/.skrull-ready" ]; then
    log "debootstrap --variant=minbase $suite (Debian $v)"
    rm -rf --one-file-system "$root.tmp"
    debootstrap --variant=minbase "$suite" "$root.tmp" "$mirror" >"$cache/debootstrap-$suite.log" 2>&1 ||
      { log "debootstrap failed; see $cache/debootstrap-$suite.log"; exit 2; }
    write_sources "$root.tmp" "$suite"
    rm -rf "$root.tmp"/var/cache/apt/archives/*.deb "$root.tmp"/var/lib/apt/lists/*
    rm -rf --one-file-system "$root" && mv "$root.tmp" "$root" && touch "$root/.skrull-ready"
  fi
  log "base images debian:$v and debian:$v-slim"
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

# cudnn_image: an image holding SKRULL_CUDNN_DIR's libcudnn*.so.9 under /cudnn,
# for docker/trainer.Dockerfile's CUDNN_IMAGE when NVIDIA's download site is
# unreachable; prints its name, or nothing when there is no cuDNN to give.
cudnn_image() {
  local dir="${SKRULL_CUDNN_DIR:-}" name=localhost/skrull-cudnn:9 ctr
  if [ -z "$dir" ]; then
    for dir in /var/cache/skrull/trixie-cuda/usr/local/lib/skrull-cudnn /usr/local/cuda/lib64 ""; do
      compgen -G "$dir/libcudnn*.so.9" >/dev/null && break
    done
  fi
  [ -n "$dir" ] && compgen -G "$dir/libcudnn*.so.9" >/dev/null || return 0
  if ! bh inspect --type image "$name" >/dev/null 2>&1; then
    ctr="$(bh from scratch)"
    bh copy "$ctr" "$dir"/libcudnn*.so.9 /cudnn/ >/dev/null
    bh commit --rm -q "$ctr" "$name" >/dev/null
  fi
  echo "$name"
}
