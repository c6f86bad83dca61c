#!/bin/sh
# Prints, one per line, the Debian/Ubuntu packages that own the shared
# libraries the given binaries load (ldd), for a runtime image stage to
# apt-get install: the list is exact for what was built, so nothing is
# missed or installed for nothing. Libraries no package owns (a libtorch
# unpacked from a wheel, say) are listed on stderr and skipped: copy those.
#
#   docker/runtime-packages.sh build/bin/skrull-trainer > runtime-packages.txt
set -eu
[ "$#" -ge 1 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
for binary in "$@"; do
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  # dpkg knows a file under the path its package shipped it at: the resolved
  # path (an alternatives link such as libblas.so.3 -> openblas), the path
  # ldd printed, or that path without /usr (merged-/usr systems).
  owner=""
  for path in "$(realpath "$lib")" "$lib" "${lib#/usr}"; do
    owner="$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1)" && [ -n "$owner" ] && break
  done
  if [ -n "$owner" ]; then echo "$owner"; else echo "runtime-packages.sh: no package owns $lib" >&2; fi
done | sort -u
