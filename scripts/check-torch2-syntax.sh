#!/usr/bin/env bash
# Syntax-checks the trainer against libtorch 2.x without a CUDA machine:
# every translation unit of trainer/ and tests/trainer/ that includes libtorch
# is compiled with -fsyntax-only against the libtorch-dev headers Debian
# ships in trixie (2.6) and sid (the newest 2.x; C++20 from 2.14), fetched
# with `apt-get download` into .cache/torch2/ (not installed). Debian 12's own
# libtorch is 1.13, what scripts/test.sh builds against; this catches the API
# changes between them (see trainer/model/torch_compat.cc). CPU headers only:
# the SKRULL_WITH_CUDA branches are scripts/check-cuda-syntax.sh's job.
#   scripts/check-torch2-syntax.sh [BUILD_DIR]   (default build/, after scripts/test.sh)
# Needs python3 and network access to deb.debian.org (first run only).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SKRULL_ROOT"
build="${1:-$SKRULL_BUILD}"
cache="$SKRULL_ROOT/.cache/torch2"
[ -f "$build/compile_commands.json" ] || { log "$build/compile_commands.json missing: run scripts/test.sh first"; exit 2; }

fetch() {  # fetch SUITE: unpack that suite's libtorch-dev and libgloo-dev into $cache/SUITE/root
  local suite="$1" d="$cache/$1"
  [ -d "$d/root/usr/include/torch" ] && return 0
  log "fetching libtorch-dev and libgloo-dev from Debian $suite into $d"
  rm -rf "$d" && mkdir -p "$d/apt/lists/partial" "$d/apt/cache/archives/partial" "$d/root"
  echo "deb http://deb.debian.org/debian $suite main" >"$d/apt/sources.list"
  : >"$d/apt/status"
  local opts=(-o "Dir::Etc::SourceList=$d/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$d/apt/lists" -o "Dir::State::Status=$d/apt/status"
    -o "Dir::Cache=$d/apt/cache" -o "Acquire::Languages=none" -o "APT::Get::List-Cleanup=0")
  apt-get "${opts[@]}" -q update >"$d/apt-update.log" 2>&1 ||
    { log "apt-get update for $suite failed (network?); see $d/apt-update.log"; exit 2; }
  (cd "$d" && apt-get "${opts[@]}" -q download libtorch-dev libgloo-dev >"$d/apt-download.log" 2>&1) ||
    { log "apt-get download from $suite failed; see $d/apt-download.log"; exit 2; }
  for deb in "$d"/*.deb; do dpkg-deb -x "$deb" "$d/root"; done
}

status=0
for suite in trixie sid; do
  fetch "$suite"
  inc="$cache/$suite/root/usr/include"
  version="$(echo '#include <torch/version.h>' | g++ -std=c++20 -E -dM -isystem "$inc" \
    -isystem "$inc/torch/csrc/api/include" -x c++ - |
    awk '/define TORCH_VERSION_(MAJOR|MINOR) /{v = v (v ? "." : "") $3} END {print v}')"
  log "libtorch $version headers (Debian $suite)"
  python3 - "$build/compile_commands.json" "$inc" "$SKRULL_ROOT" "$version" <<'PY' || status=1
import json, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
db, inc, root = sys.argv[1], sys.argv[2], sys.argv[3]
major, minor = (int(x) for x in sys.argv[4].split("."))
std = "-std=c++20" if (major, minor) >= (2, 14) else "-std=c++17"  # 2.14 requires C++20
jobs = []
for e in json.load(open(db)):
    rel = os.path.relpath(os.path.realpath(e["file"]), root)
    if not (rel.startswith("trainer/") or rel.startswith("tests/trainer/")): continue
    if "torch/csrc/api/include" not in e["command"]: continue  # torch-free target
    args, out, skip = shlex.split(e["command"]), [], False
    for a in args:
        if skip: skip = False; continue
        if a == "-o": skip = True; continue
        if a in ("-c", e["file"]): continue
        if a.startswith("-std="): a = std
        out.append(a.replace("/usr/include/torch", inc + "/torch"))
    cmd = out[:1] + ["-isystem", inc, "-isystem", inc + "/torch/csrc/api/include"] + out[1:] + ["-fsyntax-only", e["file"]]
    jobs.append((rel, cmd, e["directory"]))
def run(job):
    rel, cmd, cwd = job
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return rel, r.returncode, r.stderr
failed = 0
with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
    for rel, rc, err in pool.map(run, sorted(jobs)):
        if rc != 0:
            failed += 1
            print(f"{rel}: FAILED\n{err[:4000]}")
print(f"{len(jobs) - failed} of {len(jobs)} files ok")
sys.exit(1 if failed else 0)
PY
done
exit $status
