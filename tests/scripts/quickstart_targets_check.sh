#!/usr/bin/env bash
# CTest quickstart_targets: scripts/quickstart.sh builds only
# SKRULL_QUICKSTART_TARGETS (scripts/lib.sh), so every binary it or its helpers
# run must be one of them (a missing one would fail only on a fresh clone,
# where scripts/test.sh has not built everything), each must be a target of
# the build, and both commands must configure build/ the same way (no -D of
# their own), so they share their compiled objects.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$root/scripts/lib.sh"

[ ${#SKRULL_QUICKSTART_TARGETS[@]} -gt 0 ] || fail "SKRULL_QUICKSTART_TARGETS is empty"
mapfile -t used < <(grep -ohE '\$SKRULL_BUILD/bin/[A-Za-z0-9_-]+' "$root/scripts/quickstart.sh" \
  "$root/scripts/lib.sh" | sed 's|.*/||' | sort -u)
[ ${#used[@]} -gt 0 ] || fail "found no \$SKRULL_BUILD/bin/ binary in scripts/quickstart.sh"
for bin in "${used[@]}"; do
  [[ " ${SKRULL_QUICKSTART_TARGETS[*]} " == *" $bin "* ]] ||
    fail "scripts/quickstart.sh runs $bin, which SKRULL_QUICKSTART_TARGETS (scripts/lib.sh) does not build"
done
for target in "${SKRULL_QUICKSTART_TARGETS[@]}"; do
  grep -rqE "skrull_binary\($target( |\$)" --include=CMakeLists.txt "$root" ||
    fail "SKRULL_QUICKSTART_TARGETS names $target, which no CMakeLists.txt defines"
done
for script in quickstart.sh test.sh; do
  if grep -E '^\s*skrull_build\b.*-D' "$root/scripts/$script"; then
    fail "scripts/$script passes its own -D options: both commands must configure build/ alike (SKRULL_CMAKE_ARGS)"
  fi
done
echo "PASS: ${#used[@]} binaries used, all among the ${#SKRULL_QUICKSTART_TARGETS[@]} quickstart targets; one configuration"
