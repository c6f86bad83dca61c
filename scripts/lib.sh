# Shared by scripts/quickstart.sh and scripts/test.sh. Source, do not run.
# Installs what is missing (idempotent: a no-op when everything is there) and
# builds into build/ (binaries in build/bin/).

SKRULL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SKRULL_BUILD="${SKRULL_BUILD:-$SKRULL_ROOT/build}"

# Debian 12 packages the build, the tests and the main job need.
SKRULL_APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  clang-format
  libtorch-dev libgloo-dev libopenblas0-openmp
  libcpprest-dev libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev
  libcli11-dev libpcre2-dev libutf8proc-dev libxxhash-dev
  googletest libgtest-dev libgmock-dev
  prometheus
  python3 python3-yaml python3-jinja2 python3-venv
)

log() { printf '\033[1m[skrull]\033[0m %s\n' "$*" >&2; }

skrull_install_deps() {
  local missing=()
  for p in "${SKRULL_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # The chart and tokenizer tests fetch pinned npm packages and run them with
  # node; a Node.js from elsewhere (with its own npm) is fine too.
  command -v npm >/dev/null && command -v node >/dev/null || missing+=(nodejs npm)
  if [ ${#missing[@]} -eq 0 ]; then
    log "dependencies: all ${#SKRULL_APT_PACKAGES[@]} packages present"
    return 0
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { log "need root (or sudo) to install: ${missing[*]}"; return 1; }
    sudo=(sudo)
  fi
  log "installing ${#missing[@]} missing packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q "${missing[@]}"
}

# skrull_build [extra cmake args...]
skrull_build() {
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  log "configuring $SKRULL_BUILD"
  cmake -S "$SKRULL_ROOT" -B "$SKRULL_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  log "building with $jobs jobs (progress below)"
  cmake --build "$SKRULL_BUILD" -j "$jobs"
}
