#!/usr/bin/env bash
# The reference suite: the trainer against Hugging Face transformers, peft and
# torch.optim.AdamW on tiny random models that transformers itself creates
# (tests/reference/, docs/reference.md).
#   scripts/check-reference.sh [BUILD_DIR]     # default: build/
#   scripts/check-reference.sh --setup         # only make the venv
#   scripts/check-reference.sh --fixtures      # rewrite tests/scheduler/data/hf_configs
#   scripts/check-reference.sh --tokenizers [BUILD_DIR]  # skrull-tokenize vs the Python
#                                              # tokenizers library and apply_chat_template
# Makes a venv with the pinned versions of tests/reference/requirements*.txt
# once, outside the tree (SKRULL_REF_VENV, default /var/cache/skrull/ref-venv);
# needs PyPI the first time only. Extra arguments after BUILD_DIR go to the
# suite (tests/reference/run_reference.py --help).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SKRULL_REF_VENV:-/var/cache/skrull/ref-venv}"
req="$root/tests/reference/requirements.txt"
req4="$root/tests/reference/requirements-tf4.txt"
log() { printf '\033[1m[check-reference]\033[0m %s\n' "$*" >&2; }

# Each stamp names its requirements' content: a changed pin remakes that part.
stamp="$venv/.skrull-$(sha256sum < "$req" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  log "making the reference venv $venv (once; torch is a large download)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r "$req"
  "$venv/bin/python" -m pip freeze > "$venv/freeze.txt"
  touch "$stamp"
  log "venv ready: $(grep -E '^(torch|transformers|peft)==' "$venv/freeze.txt" | tr '\n' ' ')"
fi
# transformers 4.x in its own folder (first on PYTHONPATH when used), only to
# write configs as 4.x writes them; its dependencies come with it, no torch.
stamp4="$venv/tf4/.skrull-$(sha256sum < "$req4" | cut -c1-16)"
if [ ! -f "$stamp4" ]; then
  rm -rf "$venv/tf4"
  "$venv/bin/python" -m pip install -q --target "$venv/tf4" -r "$req4"
  touch "$stamp4"
fi
[ "${1:-}" = "--setup" ] && exit 0
if [ "${1:-}" = "--fixtures" ]; then
  # Rewrites the committed config.json fixtures of both transformers versions.
  out="$root/tests/scheduler/data/hf_configs"
  "$venv/bin/python" -B "$root/tests/reference/make_config_fixtures.py" "$out"
  PYTHONPATH="$venv/tf4" "$venv/bin/python" -B "$root/tests/reference/make_config_fixtures.py" "$out"
  exit 0
fi

tokenizers=no
if [ "${1:-}" = "--tokenizers" ]; then tokenizers=yes; shift; fi
build="${1:-$root/build}"
[ $# -gt 0 ] && shift
if [ "$tokenizers" = yes ]; then
  [ -x "$build/bin/skrull-tokenize" ] || { log "no $build/bin/skrull-tokenize: build first"; exit 1; }
  refs="$("$root/scripts/get-tokenizer-refs.sh")"
  exec "$venv/bin/python" -B "$root/tests/reference/check_tokenizers.py" --bin "$build/bin" \
    --refs "$refs" "$@"
fi
[ -x "$build/bin/skrull-trainer" ] || { log "no $build/bin/skrull-trainer: build first (scripts/test.sh)"; exit 1; }
export SKRULL_REF_TF4="$venv/tf4"
exec "$venv/bin/python" -B "$root/tests/reference/run_reference.py" --bin "$build/bin" "$@"
