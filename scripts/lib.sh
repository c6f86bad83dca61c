# Shared by scripts/quickstart.sh and scripts/test.sh. Source, do not run.
# Installs what is missing (idempotent: a no-op when everything is there) and
# builds into build/ (binaries in build/bin/).

SKRULL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SKRULL_BUILD="${SKRULL_BUILD:-$SKRULL_ROOT/build}"

# Debian 12 packages the build and the main job need (scripts/quickstart.sh).
# googletest is here too: both commands configure build/ alike, tests included.
SKRULL_APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  libtorch-dev libgloo-dev libopenblas0-openmp
  libcpprest-dev libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev
  libcli11-dev libpcre2-dev libutf8proc-dev libxxhash-dev zlib1g-dev
  googletest libgtest-dev libgmock-dev
  python3 python3-yaml python3-jinja2 python3-venv
)
# What only the checks of scripts/test.sh use: the formatter, Prometheus's
# promtool, and Node.js (below) for the chart and tokenizer tests. These four
# bring 499 of the 1,086 packages a fresh Debian 12 root installs
# (apt-get install -s), so the quickstart leaves them out.
SKRULL_APT_TEST_PACKAGES=(clang-format prometheus)

log() { printf '\033[1m[skrull]\033[0m %s\n' "$*" >&2; }

# skrull_install_deps [--tests]: the build's packages, and with --tests those
# of the test suite too.
skrull_install_deps() {
  local missing=() wanted=("${SKRULL_APT_PACKAGES[@]}")
  [ "${1:-}" = "--tests" ] && wanted+=("${SKRULL_APT_TEST_PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # The chart and tokenizer tests fetch pinned npm packages and run them with
  # node; a Node.js from elsewhere (with its own npm) is fine too.
  if [ "${1:-}" = "--tests" ]; then
    command -v npm >/dev/null && command -v node >/dev/null || missing+=(nodejs npm)
  fi
  if [ ${#missing[@]} -eq 0 ]; then
    log "dependencies: all ${#wanted[@]} packages present"
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

# The one build configuration of build/, shared by every script: the same
# options give the same compile lines, so scripts/quickstart.sh and
# scripts/test.sh reuse each other's objects in either order (-Werror, tests
# or benchmarks toggled would recompile every object).
SKRULL_CMAKE_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DSKRULL_WERROR=ON -DSKRULL_BUILD_TESTS=ON -DSKRULL_BUILD_BENCHMARKS=ON)

# The binaries the quickstart jobs run (scripts/quickstart.sh): about a third
# of the objects of the whole build.
SKRULL_QUICKSTART_TARGETS=(skrull-trainer skrull-make-data skrull-job)

skrull_configure() {
  log "configuring $SKRULL_BUILD"
  cmake -S "$SKRULL_ROOT" -B "$SKRULL_BUILD" "${SKRULL_CMAKE_ARGS[@]}" >/dev/null
}

# skrull_build [target...]: configure, then build the targets named (all when
# none is).
skrull_build() {
  local jobs targets=()
  jobs="$(nproc 2>/dev/null || echo 2)"
  skrull_configure
  [ $# -gt 0 ] && targets=(--target "$@")
  log "building ${*:-everything} with $jobs jobs (progress below)"
  cmake --build "$SKRULL_BUILD" -j "$jobs" "${targets[@]}"
}

# The data of examples/quickstart-sft.yaml in folder $1 (made once): chat
# records, the same kind of records as Alpaca ones (instruction = the user
# turn, response = the assistant turn), and a held-out chat set.
make_sft_data() {
  local dir="$1"
  mkdir -p "$dir"
  local gen=(--format text-jsonl --short-min 48 --short-max 160 --long-min 300 --long-max 600)
  [ -s "$dir/sft-chat.jsonl" ] || "$SKRULL_BUILD/bin/skrull-make-data" --out "$dir/sft-chat.jsonl" --n 300 --seed 1 "${gen[@]}"
  [ -s "$dir/sft-eval.jsonl" ] || "$SKRULL_BUILD/bin/skrull-make-data" --out "$dir/sft-eval.jsonl" --n 64 --seed 2 "${gen[@]}"
  if [ ! -s "$dir/sft-alpaca.jsonl" ]; then
    "$SKRULL_BUILD/bin/skrull-make-data" --out "$dir/sft-alpaca.chat.jsonl" --n 200 --seed 3 "${gen[@]}"
    python3 -c '
import json, sys
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as out:
    for line in src:
        turns = {m["role"]: m["content"] for m in json.loads(line)["messages"]}
        out.write(json.dumps({"instruction": turns["user"], "input": "", "response": turns["assistant"]}) + "\n")
' "$dir/sft-alpaca.chat.jsonl" "$dir/sft-alpaca.jsonl"
    rm -f "$dir/sft-alpaca.chat.jsonl"
  fi
}
