#!/usr/bin/env bash
# Syntax-checks the trainer's CUDA/NCCL branches (#ifdef SKRULL_WITH_CUDA)
# on a machine without a GPU or a CUDA libtorch: each translation unit that
# has such a branch is compiled with -fsyntax-only, SKRULL_WITH_CUDA=1 and
# USE_C10D_NCCL, against the installed libtorch headers (Debian's 1.13 ships
# the c10d NCCL and c10/cuda headers) and the CUDA toolkit's headers.
# Not a build: nothing is linked or run, and PyTorch 2.x's API is not what
# is checked. Catches typos and API misuse in code no CPU build compiles.
#   scripts/check-cuda-syntax.sh [BUILD_DIR]   (default build/, after scripts/test.sh)
# Needs python3 (to read compile_commands.json) and /usr/local/cuda/include.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SKRULL_ROOT"
build="${1:-$SKRULL_BUILD}"
cuda_include="${CUDA_INCLUDE:-/usr/local/cuda/include}"
[ -f "$build/compile_commands.json" ] || { log "$build/compile_commands.json missing: run scripts/test.sh first"; exit 2; }
[ -f "$cuda_include/cuda_runtime_api.h" ] || { log "$cuda_include/cuda_runtime_api.h missing: set CUDA_INCLUDE to the CUDA toolkit's include folder"; exit 2; }
command -v python3 >/dev/null || { log "python3 is needed to read compile_commands.json"; exit 2; }

# Debian's libtorch headers lack the file a CUDA build generates; a stub
# with the one macro they read is enough for a syntax check.
stub="$(mktemp -d)"
trap 'rm -rf "$stub"' EXIT
mkdir -p "$stub/c10/cuda/impl"
echo '#define C10_CUDA_BUILD_SHARED_LIBS' >"$stub/c10/cuda/impl/cuda_cmake_macros.h"

mapfile -t files < <(git grep -l 'SKRULL_WITH_CUDA' -- 'trainer/*.cc')
log "syntax-checking ${#files[@]} file(s) with SKRULL_WITH_CUDA=1: ${files[*]}"
python3 - "$build/compile_commands.json" "$stub" "$cuda_include" "${files[@]}" <<'PY'
import json, shlex, subprocess, sys, os
db, stub, cuda, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
entries = {os.path.realpath(e["file"]): e for e in json.load(open(db))}
failed = 0
for f in files:
    e = entries.get(os.path.realpath(f))
    if e is None:
        print(f"{f}: not in {db}; is the trainer built?"); failed += 1; continue
    args = shlex.split(e["command"])
    cmd, skip = [], False
    for a in args:
        if skip: skip = False; continue
        if a == "-o": skip = True; continue
        if a in ("-c", e["file"]): continue
        cmd.append(a)
    cmd += ["-fsyntax-only", "-DSKRULL_WITH_CUDA=1", "-DUSE_C10D_NCCL", "-I" + stub, "-I" + cuda, e["file"]]
    r = subprocess.run(cmd, cwd=e["directory"])
    print(f"{f}: {'ok' if r.returncode == 0 else 'FAILED'}")
    failed += r.returncode != 0
sys.exit(1 if failed else 0)
PY
