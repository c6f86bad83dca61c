#!/usr/bin/env bash
# gpu-bundle/run.sh (copied there by scripts/gpu-bundle.sh): the GPU check of
# one short run on a machine with one H100 / H200 and PyTorch 2.11 for CUDA 13
# in its python3. Runs the bundle's binaries against that torch and writes one
# JSON report, gpu-bundle-report.json, into $OUT when set, else beside itself.
#
#   gpu-bundle/run.sh          # GPU parts when torch sees a CUDA device
#   gpu-bundle/run.sh --cpu    # only the CPU parts (GPU parts marked skipped)
#
# Steps, in order, each bounded by `timeout` and all by one budget
# (SKRULL_BUNDLE_BUDGET_SECONDS, default 450, so the run ends within 8
# minutes; a step the budget cannot fit is marked skipped):
#   1. the `gpu`-labelled tests (flash vs the chunked reference in bf16 and
#      fp16, forward and backward, varlen and context-parallel spans; a bf16
#      model against float32; the trainer's tokens/s report);
#   2. tokens/s, MFU and peak memory of one forward + backward of a
#      Qwen2.5-0.5B-shaped random model at 4K, 16K and 64K tokens, flash path
#      and chunked reference, with the attention kernel actually chosen;
#   3. skrull-trainer: a bf16 job (its summary.json: device, peak and capacity
#      memory) and a job whose micro-batch cannot fit (exit 3 and oom.json).
# With --cpu (or no CUDA device) the tests run and skip, the bench runs its
# CPU smoke case and the trainer a tiny float32 job on the CPU; the OOM step
# is skipped (an OOM on the host would take the machine's memory).
# docs/gpu-build.md, "The GPU bundle".
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
report_dir="${OUT:-$here}"
budget="${SKRULL_BUNDLE_BUDGET_SECONDS:-450}"
python="${SKRULL_PYTHON:-python3}"
mode=auto
case "${1:-}" in
  --cpu) mode=cpu ;;
  "") ;;
  *) echo "usage: run.sh [--cpu]" >&2; exit 2 ;;
esac

log() { printf '[gpu-bundle %4ds] %s\n' "$SECONDS" "$*" >&2; }

# The machine's own torch, CUDA, NCCL and cuDNN libraries (the wheels' lib
# folders), then the bundle's own.
torch_dir="$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)" ||
  { echo "run.sh: $python cannot import torch; set SKRULL_PYTHON to the python with PyTorch $(cat "$here/TORCH_VERSION")" >&2; exit 2; }
site="$(dirname "$torch_dir")"
libpath="$here/lib:$torch_dir/lib"
[ -d "$site/nvidia" ] && libpath="$libpath:$(find "$site/nvidia" -maxdepth 3 -type d -name lib | sort | paste -sd:)"
export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cores="$(nproc 2>/dev/null || echo 8)"
export SKRULL_BIN_DIR="$here/bin" OMP_NUM_THREADS="${OMP_NUM_THREADS:-$((cores < 8 ? cores : 8))}"

if [ "$mode" = auto ]; then
  if "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    mode=gpu
  else
    mode=cpu
  fi
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")"
case "$here$work" in  # the steps' argv are built as words
  *[[:space:]]*) echo "run.sh: $here or $work holds a space: move the bundle or set TMPDIR" >&2; exit 2 ;;
esac
steps="$work/steps.tsv"
: >"$steps"
log "mode $mode, torch at $torch_dir, work in $work, budget ${budget}s"

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND with its output in
# $work/NAME.log, bounded by LIMIT and by what is left of the budget.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$((budget - SECONDS))
  if [ "$left" -lt 20 ]; then
    printf '%s\tskipped\t-\t0\tthe %ss budget is spent\n' "$name" "$budget" >>"$steps"
    log "$name: skipped (budget spent)"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit="$left"
  local start=$SECONDS rc=0
  timeout --kill-after=10 "$limit" "$@" >"$work/$name.log" 2>&1 || rc=$?
  local status=passed
  [ "$rc" -ne 0 ] && status=failed
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && status=timeout
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$rc" "$((SECONDS - start))" "limit ${limit}s" >>"$steps"
  log "$name: $status (rc $rc, $((SECONDS - start))s)"
}
skip() { printf '%s\tskipped\t-\t0\t%s\n' "$1" "$2" >>"$steps"; log "$1: skipped ($2)"; }

# 1. The gpu tests, most telling first.
gtest() { echo "$here/bin/$1" --gtest_color=no "--gtest_output=json:$work/$1.json"; }  # argv of a gtest run
for t in trainer_model_gpu_attention_test trainer_model_gpu_test train_gpu_throughput_test \
  dist_gpu_nccl_equivalence_test; do
  [ -x "$here/bin/$t" ] && step "$t" 150 $(gtest "$t")
done

# 2. The kernel bench, one case per process.
bench() {  # argv of one bench case: bench KERNEL:TOKENS CPU_SMOKE(0|1)
  echo env "SKRULL_GPU_BENCH_CASE=$1" "SKRULL_GPU_BENCH_CPU=$2" $(gtest trainer_model_gpu_kernel_bench_test)
}
for kernel in flash chunked; do
  for tokens in 4096 16384 65536; do
    name="bench_${kernel}_$tokens"
    if [ "$mode" = gpu ]; then
      step "$name" $((tokens > 16384 ? 120 : 60)) $(bench "$kernel:$tokens" 0)
    elif [ "$tokens" -eq 4096 ]; then
      step "$name" 60 $(bench "$kernel:$tokens" 1)  # the CPU smoke case (tiny model, 256 tokens)
    else
      skip "$name" "no CUDA device"
    fi
  done
done

# 3. skrull-trainer jobs (the files are written here; data from skrull-make-data).
write_job() {  # write_job DIR CONFIG_JSON PRECISION BUCKET BATCH STEPS
  mkdir -p "$1"
  printf '%s\n' "$2" >"$1/config.json"
  cat >"$1/job.yaml" <<EOF
apiVersion: skrull.io/v1alpha1
kind: SkrullJob
metadata: {name: gpu-bundle}
spec:
  model: {config: config.json}
  data: {path: data.jsonl, format: tokenized-jsonl, onOverLength: skip}
  parallelism: {nodes: 1, procsPerNode: 1, dataParallel: 1, contextParallel: 1}
  scheduler: {policy: skrull, bucketSize: $4, batchSize: $5, seed: 1}
  training: {steps: $6, learningRate: 1e-4, warmupSteps: 1, precision: $3, outputDir: out}
  metrics: {port: 0}
EOF
}
# Qwen2.5-0.5B's published config.json shape (Qwen/Qwen2.5-0.5B; the same
# numbers as scheduler/model_config.cc's "qwen2.5-0.5b" preset).
qwen='{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
 "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
 "num_key_value_heads": 2, "vocab_size": 151936, "max_position_embeddings": 32768,
 "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": true, "torch_dtype": "bfloat16"}'
tiny='{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
 "intermediate_size": 176, "num_hidden_layers": 2, "num_attention_heads": 4,
 "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 4096,
 "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": true, "torch_dtype": "float32"}'
make_data() {  # make_data DIR N LENGTH
  "$here/bin/skrull-make-data" --out "$1/data.jsonl" --n "$2" --seed 1 --long-fraction 1 \
    --long-min "$3" --long-max "$3" --short-min 64 --short-max 64 >>"$work/make-data.log" 2>&1
}
train() { echo "$here/bin/skrull-trainer" --job "$1/job.yaml" --device "$2" --no-metrics-server; }
if [ "$mode" = gpu ]; then
  write_job "$work/train" "$qwen" bf16 16384 8 4 && make_data "$work/train" 64 2048
  step train_bf16 120 $(train "$work/train" cuda:0)
  # 32 sequences of 32K tokens in one 1M-token micro-batch: the activations
  # alone need several hundred GB, so the first forward runs out of memory.
  write_job "$work/oom" "$qwen" bf16 1048576 32 1 && make_data "$work/oom" 32 32768
  step train_oom 120 $(train "$work/oom" cuda:0)
else
  write_job "$work/train" "$tiny" fp32 2048 4 2 && make_data "$work/train" 16 256
  step train_cpu 120 $(train "$work/train" cpu)
  skip train_oom "no CUDA device (a host OOM would take the machine's memory)"
fi

mkdir -p "$report_dir"
"$python" "$here/report.py" --bundle "$here" --work "$work" --mode "$mode" \
  --out "$report_dir/gpu-bundle-report.json" || { log "report.py failed"; exit 1; }
log "report: $report_dir/gpu-bundle-report.json (logs in $work)"
