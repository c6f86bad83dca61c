#!/usr/bin/env bash
# Offline test of the Helm chart charts/skrull (CTest: charts_helm_test).
#
# With a real helm 3.17 (scripts/get-helm.sh): helm lint --strict and helm
# template of the chart in several configurations, values.schema.json
# rejecting bad values, checks of the rendered objects, NOTES.txt and the
# packaged chart; then the SkrullJob CRD: structural, in step with api/ and
# docs/job-spec.md, and example jobs validated against its schema, including
# its CEL rules (evaluated with the npm package @marcbachmann/cel-js) and jobs
# that must be rejected. See tests/charts/check_chart.py.
#
# Needs network access to the npm registry the first time only (helm and
# cel-js are cached under third_party/npm/). Needs npm + node, python3 with
# PyYAML (Debian: python3-yaml). No cluster, no Docker.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SKRULL_NPM_CACHE:-$root/third_party/npm}"
die() { printf 'check-chart.sh: %s\n' "$*" >&2; exit 1; }

# The CEL evaluator: a pinned, dependency-free npm package, fetched once.
readonly CEL_PACKAGE="@marcbachmann/cel-js@8.0.0"
readonly CEL_SHA256="906a27e01afbdc175a95197d45ebc0ab00f733517ffd5b934e3f066230cc6d5f"
fetch_cel_js() {
  local dest="$cache/cel-js-8.0.0"
  if [ -f "$dest/lib/index.js" ]; then echo "$dest"; return 0; fi
  command -v npm >/dev/null || die "npm not found: install it (Debian: apt-get install npm)"
  mkdir -p "$cache"
  local work
  work="$(mktemp -d "$cache/.cel-js.XXXXXX")"
  (cd "$work" && npm pack "$CEL_PACKAGE" --loglevel=error --fetch-retries=1 \
    --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 >/dev/null) ||
    { rm -rf "$work"; die "npm pack $CEL_PACKAGE failed: is the npm registry reachable?"; }
  local tgz
  tgz="$(find "$work" -maxdepth 1 -name '*.tgz' | head -n 1)"
  [ "$(sha256sum "$tgz" | cut -d' ' -f1)" = "$CEL_SHA256" ] ||
    { rm -rf "$work"; die "$CEL_PACKAGE: unexpected SHA-256 of $tgz"; }
  tar -xzf "$tgz" -C "$work"
  rm -rf "$dest"
  mv "$work/package" "$dest"
  rm -rf "$work"
  echo "$dest"
}

# A python3 that has PyYAML: the one on PATH, else Debian's.
python=""
for candidate in "${SKRULL_PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$candidate" ] || continue
  if "$candidate" -c 'import yaml' 2>/dev/null; then python="$candidate"; break; fi
done
[ -n "$python" ] || die "no python3 with PyYAML: install it (Debian: apt-get install python3-yaml)"
command -v node >/dev/null || die "node not found: install it (Debian: apt-get install nodejs npm)"

helm="$("$root/scripts/get-helm.sh")"
cel_js="$(fetch_cel_js)"
exec "$python" -B "$root/tests/charts/check_chart.py" --helm "$helm" --cel-js "$cel_js"
