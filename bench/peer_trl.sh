#!/usr/bin/env bash
# A measured peer (docs/performance.md, "A measured peer"): skrull-trainer
# (DP=2 under --policies, default skrull and cp-all) and TRL's SFTTrainer
# (padding-free BFD packing, DDP over Gloo) on 2 CPU processes, the same random
# Qwen2-shaped model and weights, the same data, one epoch each, in one run;
# prints tokens/s with the ratio to TRL and the loss curves side by side.
#   bench/peer_trl.sh [--samples N] [--batch B] [--bucket T] [--out DIR] ...
#   bench/peer_trl.sh --dry-run ...    # check the arguments, print the plan
#   bench/peer_trl.sh --help
# Needs build/bin/skrull-trainer and skrull-make-data (cmake --build build
# --target skrull-trainer skrull-make-data). Not part of .ci/run.
# The venv (SKRULL_PEER_VENV, default /var/cache/skrull/peer-venv) is made once:
# it sees the reference venv's torch, transformers and accelerate
# (scripts/check-reference.sh --setup makes that one, pinned in
# tests/reference/requirements.txt) through a .pth file, and adds
# bench/peer/requirements.txt (TRL and datasets, pinned).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
driver="$root/bench/peer/peer_bench.py"
log() { printf '\033[1m[peer_trl]\033[0m %s\n' "$*" >&2; }

# The arguments are checked (and a dry run answered) before anything is made.
python3 -B "$driver" --dry-run "$@" >/dev/null || exit $?
for a in "$@"; do
  case "$a" in
    --dry-run | -h | --help) exec python3 -B "$driver" "$@" ;;
  esac
done

ref="${SKRULL_REF_VENV:-/var/cache/skrull/ref-venv}"
venv="${SKRULL_PEER_VENV:-/var/cache/skrull/peer-venv}"
req="$root/bench/peer/requirements.txt"
SKRULL_REF_VENV="$ref" "$root/scripts/check-reference.sh" --setup
stamp="$venv/.skrull-$(cat "$req" "$ref/freeze.txt" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  log "making the peer venv $venv (once)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  ref_site="$("$ref/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$ref_site" >"$site/skrull-ref-venv.pth"
  # What the reference venv holds satisfies those requirements; pip installs
  # the rest here and never touches the reference venv (it is outside this
  # environment).
  "$venv/bin/python" -m pip install -q -r "$req"
  # torchrun for this venv's python (the reference venv's script names its own).
  printf '#!%s\nimport sys\nfrom torch.distributed.run import main\nsys.exit(main())\n' \
    "$venv/bin/python" >"$venv/bin/torchrun"
  chmod +x "$venv/bin/torchrun"
  "$venv/bin/python" -m pip freeze >"$venv/freeze.txt"
  touch "$stamp"
  log "venv ready: $(grep -E '^(torch|transformers|trl|datasets)==' "$venv/freeze.txt" | tr '\n' ' ')"
fi
exec "$venv/bin/python" -B "$driver" --python "$venv/bin/python" "$@"
