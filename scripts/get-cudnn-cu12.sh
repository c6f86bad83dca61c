#!/usr/bin/env bash
# Prints a folder holding cuDNN 9 for CUDA 12 (libcudnn*.so.9), fetching it
# from PyPI on first use.
#
# Debian 13's libtorch-cuda-2.6 (PyTorch 2.6 for CUDA 12.4) needs
# libcudnn.so.9 built for CUDA 12. Debian ships no cuDNN: its nvidia-cudnn
# package (9.0.0.312~cuda12 in trixie) downloads it from NVIDIA in its
# post-install step, which fails where only Debian's mirror and PyPI are
# reachable. NVIDIA publishes the same build on PyPI as the wheel
# `nvidia-cudnn-cu12`; this script `pip download`s the version Debian's
# package installs, checks the wheel's SHA-256, extracts only
# nvidia/cudnn/lib/libcudnn*.so.9 and caches them. A copy taken from a CUDA 13
# toolkit is the wrong build: it needs a driver that supports CUDA 13 (580 or
# newer), where libtorch-cuda-2.6 asks for 525 or newer (libcuda1 (>= 525)).
#
#   scripts/get-cudnn-cu12.sh      # -> /var/cache/skrull/cudnn-cu12-9.0.0.312
#
# Used by scripts/check-gpu-build.sh, scripts/build-images.sh and
# docker/trainer.Dockerfile. SKRULL_CUDNN_CACHE overrides the cache folder.
# Needs python3 with pip (Debian: python3-pip) and flock. Exit status 1 with a
# message on stderr when one is missing or PyPI cannot be reached.
set -euo pipefail

readonly CUDNN_VERSION="9.0.0.312"
readonly CUDNN_WHEEL="nvidia_cudnn_cu12-${CUDNN_VERSION}-py3-none-manylinux2014_x86_64.whl"
readonly CUDNN_WHEEL_SHA256="8d440a94da2f7e729d375d5a03e0f423f2bc03a27ee87d5817c1068f69de9828"

cache="${SKRULL_CUDNN_CACHE:-/var/cache/skrull}"
dest="$cache/cudnn-cu12-$CUDNN_VERSION"

die() { printf 'get-cudnn-cu12.sh: %s\n' "$*" >&2; exit 1; }

if [ -e "$dest/libcudnn.so.9" ]; then
  echo "$dest"
  exit 0
fi
case "$(uname -m)" in
  x86_64 | amd64) ;;
  *) die "the pinned $CUDNN_WHEEL is for linux/x86_64, not $(uname -m); set SKRULL_CUDNN_DIR to a CUDA 12 cuDNN 9" ;;
esac
command -v python3 >/dev/null || die "python3 not found: install it (Debian: apt-get install python3-pip)"
python3 -m pip --version >/dev/null 2>&1 || die "pip not found: install it (Debian: apt-get install python3-pip)"
command -v flock >/dev/null || die "flock not found: install it (Debian: apt-get install util-linux)"

mkdir -p "$cache"
exec 9>"$cache/cudnn-cu12.lock"
flock 9
[ -e "$dest/libcudnn.so.9" ] && { echo "$dest"; exit 0; }

wheels="$cache/cudnn-cu12-wheel"
if [ ! -f "$wheels/$CUDNN_WHEEL" ]; then
  # --platform / --python-version: the wheel is pure binary and the same for
  # every Python; naming them lets pip fetch it on any host Python.
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux2014_x86_64 --python-version 3.11 \
    -d "$wheels" "nvidia-cudnn-cu12==$CUDNN_VERSION" >&2 ||
    die "pip download nvidia-cudnn-cu12==$CUDNN_VERSION failed (is PyPI reachable? proxy settings?)"
fi
[ -f "$wheels/$CUDNN_WHEEL" ] || die "pip saved no $CUDNN_WHEEL in $wheels"
got="$(sha256sum "$wheels/$CUDNN_WHEEL" | cut -d' ' -f1)"
[ "$got" = "$CUDNN_WHEEL_SHA256" ] ||
  die "$wheels/$CUDNN_WHEEL: SHA-256 $got, expected $CUDNN_WHEEL_SHA256; delete it and retry"

tmp="$(mktemp -d "$cache/cudnn-cu12.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
python3 - "$wheels/$CUDNN_WHEEL" "$tmp" <<'EOF'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist()
             if n.startswith("nvidia/cudnn/lib/libcudnn") and n.endswith(".so.9")]
    if not names:
        sys.exit(f"{wheel}: no nvidia/cudnn/lib/libcudnn*.so.9 inside")
    for n in names:
        with z.open(n) as src, open(os.path.join(out, os.path.basename(n)), "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
EOF
[ -e "$tmp/libcudnn.so.9" ] || die "$CUDNN_WHEEL has no libcudnn.so.9"
rm -rf "$dest"
mv "$tmp" "$dest"
chmod 755 "$dest"
trap - EXIT
echo "$dest"
