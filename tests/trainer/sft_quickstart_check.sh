#!/usr/bin/env bash
# CTest sft_quickstart_test: examples/quickstart-sft.yaml (two weighted
# sources, one of them Alpaca, and an eval set) trains on two processes, and
# its validation loss is in summary.json and, read by TensorBoard's own
# reader (the environment scripts/get-tensorboard.sh makes; that part is
# skipped, saying so, without it), in the event files.
# Needs SKRULL_SOURCE_DIR and SKRULL_BIN_DIR (CTest sets them).
set -euo pipefail
src="${SKRULL_SOURCE_DIR:?}"
bin="${SKRULL_BIN_DIR:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/examples/models"
cp -r "$src/examples/models/tiny" "$work/examples/models/"
cp "$src/examples/quickstart-sft.yaml" "$work/examples/"
SKRULL_BUILD="$(dirname "$bin")"
source "$src/scripts/lib.sh"
SKRULL_BUILD="$(dirname "$bin")"
make_sft_data "$work/examples/data"

"$bin/skrull-job" validate "$work/examples/quickstart-sft.yaml"
"$bin/skrull-trainer" --job "$work/examples/quickstart-sft.yaml" --output-dir "$work/run" \
  > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
grep -q "eval_loss" "$work/log" || { cat "$work/log"; echo "no eval_loss in the progress lines"; exit 1; }

python3 - "$work/run/summary.json" <<'PY'
import json, math, sys
s = json.load(open(sys.argv[1]))
evals = s["eval_losses"]
assert [e["step"] for e in evals] == [10, 20, 30], evals
assert all(math.isfinite(e["loss"]) for e in evals), evals
assert s["eval_loss"] == evals[-1]["loss"], s
assert s["best_eval_loss"] == min(e["loss"] for e in evals), s
assert evals[-1]["loss"] < evals[0]["loss"], evals
print("summary.json: eval_loss", s["eval_loss"], "best", s["best_eval_loss"], "at step", s["best_eval_step"])
PY

venv="${SKRULL_CACHE:-/var/cache/skrull}/tensorboard-2.21.0"
if [ ! -f "$venv/.complete" ]; then
  echo "SKIPPED the TensorBoard part: $venv is absent (make it with scripts/get-tensorboard.sh)"
  exit 0
fi
"$venv/bin/python" "$src/tests/trainer/read_tensorboard.py" "$work/run" > "$work/scalars"
for tag in train/loss eval/loss train/learning_rate train/grad_norm perf/tokens_per_second perf/mfu memory/peak_bytes; do
  grep -q "^$tag " "$work/scalars" || { cat "$work/scalars"; echo "TensorBoard's reader found no $tag"; exit 1; }
done
[ "$(grep -c '^train/loss ' "$work/scalars")" = 30 ] || { echo "expected 30 train/loss points"; exit 1; }
grep '^eval/loss ' "$work/scalars"
[ "$(grep -c '^eval/loss ' "$work/scalars")" = 3 ] || { echo "expected 3 eval/loss points"; exit 1; }
echo "TensorBoard's reader: every scalar found"
