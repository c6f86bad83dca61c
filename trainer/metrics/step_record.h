// StepRecord: what one rank did in one training step, as plain numbers. The
// trainer fills one per step and hands it to TrainerMetrics::RecordStep, which
// turns it into Prometheus series and one line of metrics.jsonl.
//
// FLOPs conventions (docs/metrics.md has the formulas): `model_flops` counts
// the model's forward + backward work with causal attention counted as half
// of the dense s^2 term (6*L*d_attn*s^2 per sequence, not 12*...) and no
// recompute; `hardware_flops` adds the recomputed forward work. MFU uses the
// first, HFU the second.
//
// Thread safety: values.
#ifndef SKRULL_TRAINER_METRICS_STEP_RECORD_H_
#define SKRULL_TRAINER_METRICS_STEP_RECORD_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace skrull::metrics {

// Where the step's wall time went on this rank. Ideally the four add up to
// StepRecord::step_seconds (idle = step - compute - waits).
struct PhaseSeconds {
  double compute = 0;       // kernels on the critical path (fwd, bwd, optimizer)
  double cp_comm_wait = 0;  // blocked on context-parallel KV exchange
  double dp_comm_wait = 0;  // blocked on the data-parallel gradient all-reduce
  double idle = 0;          // everything else: data loading, host work, stragglers
};

// Roll-backs by the level that took them (skrull_scheduler_rollbacks_total).
struct RollbackCounts {
  uint64_t dacp = 0;  // DACP turned a local placement into a distributed one to fit
  uint64_t gds = 0;   // GDS dropped a batching plan and re-batched with one more micro-batch
  // No plan is re-split at run time: the scheduler charges the exact CP layout
  // (scheduler/layout.h). Lines written before may hold "rollbacks_runtime"
  // (always 0); the parser ignores it.
};

struct StepRecord {
  int64_t step = 0;  // global optimizer step this record describes
  // Training loss of the step as the trainer reports it (may be NaN).
  double loss = std::numeric_limits<double>::quiet_NaN();
  uint64_t tokens = 0;           // real tokens this rank processed this step, no padding
  uint64_t padding_tokens = 0;   // padding tokens this rank processed this step
  double model_flops = 0;        // causal-aware model FLOPs executed by this rank, no recompute
  double hardware_flops = 0;     // model_flops + recomputed FLOPs (>= model_flops)
  double step_seconds = 0;       // wall time of the step on this rank
  double scheduler_seconds = 0;  // time spent planning this step (scheduler::Plan)
  PhaseSeconds phase_seconds;
  uint64_t rank_tokens_peak = 0;    // most tokens this rank held in one micro-batch this step
  uint64_t bucket_size_tokens = 0;  // the BucketSize bound in force
  // The step's memory peak. CUDA: the caching allocator's reserved bytes
  // (what an out-of-memory error runs into) and the bytes held by tensors;
  // CPU: the process's peak RSS for both.
  uint64_t memory_peak_bytes = 0;
  uint64_t memory_peak_allocated_bytes = 0;
  uint64_t memory_capacity_bytes = 0;  // device (or host) memory capacity
  // Parameters, gradients and optimizer state held between steps (by
  // spec.training.zeroStage: ZeroOptimizer::StaticMemoryBytes).
  uint64_t memory_static_bytes = 0;
  RollbackCounts rollbacks;            // roll-backs taken while planning / running this step
  uint64_t local_sequences = 0;        // sequences this rank ran whole (not CP-sharded)
  uint64_t distributed_sequences = 0;  // sequences this rank ran as a CP shard
  uint64_t micro_batches = 0;          // micro-batches this rank ran this step
  // Jobs with spec.data.sources: samples and tokens the step's global batch
  // drew from each source (index = source); empty otherwise.
  std::vector<uint64_t> source_samples;
  std::vector<uint64_t> source_tokens;
  // The step's learning rate and gradient norm before clipping; NaN = not
  // reported (written to metrics.jsonl only when finite).
  double learning_rate = std::numeric_limits<double>::quiet_NaN();
  double grad_norm = std::numeric_limits<double>::quiet_NaN();
  // Validation loss measured after this step (spec.data.eval); NaN = none.
  double eval_loss = std::numeric_limits<double>::quiet_NaN();
  double peak_flops_per_second =
      0;  // the hardware profile's dense peak (e.g. 989e12 for H100 BF16)
};

// Returns "" if `r` is well-formed, otherwise what is wrong with it: every
// seconds and FLOPs field finite and >= 0, hardware_flops >= model_flops,
// step >= 0. (Loss may be anything, NaN included.)
std::string StepRecordProblem(const StepRecord& r);

// Per-step rates derived from one StepRecord. Zero when step_seconds or
// peak_flops_per_second is zero.
struct StepRates {
  double tokens_per_second = 0;  // tokens / step_seconds
  double mfu = 0;                // model_flops / step_seconds / peak_flops_per_second
  double hfu = 0;                // hardware_flops / step_seconds / peak_flops_per_second
};
StepRates ComputeStepRates(const StepRecord& r);

// One line of metrics.jsonl: who, when, the record and its derived rates.
struct StepLine {
  std::string job;
  int rank = 0;
  int dp_rank = 0;
  int cp_rank = 0;
  std::string node;
  double time_unix_seconds = 0;  // wall clock when the step was recorded
  StepRecord record;
  StepRates rates;
};

// Current schema of a metrics.jsonl line (field "schema").
inline constexpr int kStepLineSchema = 1;

// One JSON object on one line, ending in '\n'. Field names are the struct
// field names, flattened (phase seconds become "compute_seconds", ...,
// roll-backs "rollbacks_dacp", ...; rates "tokens_per_second", "mfu", "hfu").
// Non-finite numbers (a NaN loss) are written as null.
std::string FormatStepLine(const StepLine& line);

// Parses one line written by FormatStepLine (trailing '\n' optional). Errors
// name the field: "metrics.jsonl: field \"tokens\": expected an unsigned
// integer". null reads back as NaN for floating-point fields.
StatusOr<StepLine> ParseStepLine(std::string_view text);

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_STEP_RECORD_H_
