#!/bin/sh
# Fails when a binary of the image cannot find a shared library, so a broken
# runtime stage fails `docker build` instead of the first pod.
#
#   docker/check-libs.sh BINARY [IGNORE_REGEX]
# IGNORE_REGEX names libraries that only exist at run time (the GPU driver's
# libcuda.so.1 and libnvidia-ml.so.1, injected by the NVIDIA container runtime).
set -eu
binary="$1"
ignore="${2:-^$}"
missing="$(ldd "$binary" | awk '/not found/ { print $1 }' | grep -Ev "$ignore" || true)"
if [ -n "$missing" ]; then
  echo "check-libs.sh: $binary cannot load: $missing" >&2
  exit 1
fi
echo "check-libs.sh: $binary: every shared library resolves"
