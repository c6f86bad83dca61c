// What a training run did, as the trainer reports it: per-step stats, the
// run summary (summary.json) and the progress line on stderr.
#ifndef SKRULL_TRAINER_TRAIN_TRAIN_SUMMARY_H_
#define SKRULL_TRAINER_TRAIN_TRAIN_SUMMARY_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "trainer/metrics/step_record.h"

namespace skrull::train {

struct StepStats {
  int64_t step = 0;      // 0-based optimizer step
  double loss = 0;       // global-batch mean CE over label tokens
  double lr = 0;         // learning rate used
  double grad_norm = 0;  // global L2 norm before clipping
  int64_t tokens = 0;    // tokens of the global batch (all ranks)
  int64_t label_tokens = 0;
  int64_t micro_batches = 0;  // per DP rank (the plan's count)
  double seconds = 0;         // wall time of the step on this rank
  // Validation loss after this step (spec.data.eval; eval_loss.h); NaN when
  // the step was not followed by an evaluation.
  double eval_loss = std::numeric_limits<double>::quiet_NaN();
};

struct RollbackTotals {
  int64_t dacp = 0;
  int64_t gds = 0;
};

// What a run did. Totals cover the whole run, including steps done before a
// resume; `history` covers this invocation.
struct TrainSummary {
  std::string job;
  int64_t steps = 0;                  // optimizer steps completed in total
  int64_t first_step = 0;             // first step of this invocation (> 0 after a resume)
  double initial_loss = 0;            // loss of step 0
  double final_loss = 0;              // loss of the last completed step
  int64_t tokens = 0;                 // tokens trained on, all ranks
  double mean_iteration_seconds = 0;  // this invocation's steps
  double tokens_per_second = 0;       // all ranks, this invocation
  std::string policy;
  // What priced the plans: the spec.scheduler.hardwareProfile path, or
  // "built-in h100-sxm-80gb" when none is set.
  std::string hardware_profile;
  int64_t bucket_size_tokens = 0;  // BucketSize the plans used (bucketSize: auto resolved)
  int dp = 1;
  int cp = 1;
  int rank = 0;
  int world_size = 1;
  std::string device;
  // This rank's memory peak over the run's steps: CUDA, the caching
  // allocator's reserved and allocated bytes; CPU, the peak RSS for both.
  uint64_t peak_memory_bytes = 0;
  uint64_t peak_memory_allocated_bytes = 0;
  int zero_stage = 0;  // spec.training.zeroStage
  // Parameters, gradients and optimizer state this rank holds between steps
  // (Optimizer / ZeroOptimizer::StaticMemoryBytes).
  uint64_t static_memory_bytes = 0;
  RollbackTotals rollbacks;
  // spec.data.eval: the last validation loss, and the lowest one with the
  // number of steps done when it was measured (over the whole run, resumes
  // included); NaN / -1 without evaluations.
  double eval_loss = std::numeric_limits<double>::quiet_NaN();
  double best_eval_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t best_eval_step = -1;
  // Where this rank's step time went, summed over this invocation's steps
  // (metrics.jsonl has each step's split; docs/metrics.md how it is measured).
  metrics::PhaseSeconds phase_seconds;
  std::string resumed_from;     // checkpoint folder, "" for a fresh run
  std::string last_checkpoint;  // folder written last, "" if none
  bool stopped_early = false;   // stop_after_steps or a stop signal
  std::vector<StepStats> history;
};

// The summary as JSON (the fields above; history as "losses" and
// "learning_rates" arrays). Non-finite numbers are written as null.
std::string SummaryToJson(const TrainSummary& summary);

// "step 12/60 loss 3.2145 lr 2.40e-03 grad_norm 1.234 tokens/s 11.5k step 0.35s eta 17s":
// `done` steps of `total`; tokens/s and eta from this invocation's
// `seconds` and `tokens` so far over `steps_run` steps.
std::string ProgressLine(const StepStats& step, int64_t total, double seconds, double tokens,
                         int64_t steps_run);

// 950 -> "950", 12345 -> "12.3k", 2.5e6 -> "2.5M".
std::string FormatCount(double v);
// 42 -> "42s", 130 -> "2m10s", 7300 -> "2h01m"; "?" when not finite or negative.
std::string FormatDuration(double seconds);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_TRAIN_SUMMARY_H_
