#!/usr/bin/env bash
# Prints the path of a Python virtual environment holding TensorBoard, making
# it on first use.
#
# The trainer writes TensorBoard event files itself (C++,
# trainer/metrics/tensorboard_events.h); tests/trainer/read_tensorboard.py
# reads them back with TensorBoard's own reader
# (tensorboard.backend.event_processing), run from this environment by the
# CTest metrics_tensorboard_test (which skips, saying why, when the
# environment is absent). TensorBoard is pinned; pip resolves its
# dependencies from PyPI. The environment lives under
# ${SKRULL_CACHE:-/var/cache/skrull}/tensorboard-<version>, never in the tree.
# Needs: python3 with venv (Debian: python3-venv), network access to PyPI the
# first time. Safe to run concurrently (flock).
set -euo pipefail

readonly VERSION="2.21.0"
cache="${SKRULL_CACHE:-/var/cache/skrull}"
venv="$cache/tensorboard-$VERSION"
die() { printf 'get-tensorboard.sh: %s\n' "$*" >&2; exit 1; }

if [ -f "$venv/.complete" ]; then
  echo "$venv"
  exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.tensorboard.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  nice -n 10 "$venv/bin/pip" install --quiet --disable-pip-version-check "tensorboard==$VERSION" >&2 ||
    die "pip install tensorboard==$VERSION failed"
  "$venv/bin/python" -c "import tensorboard.backend.event_processing.event_accumulator" ||
    die "tensorboard $VERSION installed but its event reader does not import"
  touch "$venv/.complete"
fi
echo "$venv"
