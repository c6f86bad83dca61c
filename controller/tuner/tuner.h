// The BucketSize tuner: from what one run measured to the BucketSize of the
// next run. Pure logic; the inputs come from a finished run's directory
// (run_dir.h) or from Prometheus (prometheus_source.h).
//
// Model (memory_model.h): per rank, memory = static + bytes_per_token x
// tokens, fitted over the upper envelope of the rank's (tokens held, memory
// peak) steps. The budget of a rank is
//
//   budget = spec.tuning.targetMemoryFraction x capacity
//
// where capacity is the memory the rank may use (device memory, or its share
// of host memory on CPU). Each rank's answer is the tokens that fit its
// budget: (budget - static) / bytes_per_token, or, with one usable token
// count, the headroom ratio peak_tokens x budget / peak_bytes. BucketSize
// bounds every rank, so the smallest answer (the *binding* rank) wins.
//
// Rules applied to that answer, in order:
//   1. The run died of memory (out-of-memory kill or allocation failure): step
//      DOWN to min(answer, oom_step_down x current) and never up. This happens
//      even with no measurement at all (the run died before its first step).
//   2. The answer is below the current BucketSize (memory at the bound would
//      exceed the target): step down to it, whatever the size of the change.
//   3. Otherwise raise, to at most max_growth_factor x current (the line is
//      extrapolated beyond what the run measured), and only when the raise is
//      at least min_relative_change of the current value (hysteresis: no
//      churn on noise).
// Every recommendation is rounded down to a multiple of granularity_tokens
// and lies in [minBucketSizeTokens, maxBucketSizeTokens]; a current value
// outside those bounds is moved inside them. After an out-of-memory death at
// or below the minimum, the tuner keeps the value and says why (a step up
// after an OOM is never right).
//
// Thread safety: pure functions on values.
#ifndef SKRULL_CONTROLLER_TUNER_TUNER_H_
#define SKRULL_CONTROLLER_TUNER_TUNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/status.h"
#include "controller/tuner/memory_model.h"

namespace skrull::tuner {

// What one rank of a run measured.
struct RankObservation {
  int rank = 0;
  // Per step, in step order: (rank_tokens_peak, memory_peak_bytes).
  std::vector<MemoryPoint> steps;
  // Memory this rank may use, in bytes: the device's, or on CPU its share of
  // the host's (the trainer reports host MemTotal / cgroup memory.max, which
  // every rank on the node shares). 0 = unknown: the rank is not used.
  uint64_t capacity_bytes = 0;
  // How capacity_bytes was obtained, for the reason text ("host memory
  // 62.7 GiB shared by 2 ranks"); "" when it is the device's as reported.
  std::string capacity_note;
};

struct TuningInput {
  std::string source;              // where the observations came from, for messages
  int64_t bucket_size_tokens = 0;  // the BucketSize the run used (required, > 0)
  std::vector<RankObservation> ranks;
  bool died_of_memory = false;  // the run ended in an out-of-memory failure
  std::string failure;          // how it died, e.g. "rank 1: signal 9 (Killed)"; "" if it did not
};

struct TunerOptions {
  int64_t granularity_tokens = 256;   // recommendations are multiples of this (rounded down)
  double min_relative_change = 0.05;  // a raise smaller than this fraction of current is not made
  double max_growth_factor = 2.0;     // a raise is at most this x current per run
  double oom_step_down = 0.8;         // after an OOM: at most this x current
  double min_token_spread = 0.1;      // see FitMemoryModel
};

struct TuningDecision {
  int64_t current_bucket_size_tokens = 0;
  // What the next run should use; equals current when !change.
  int64_t recommended_bucket_size_tokens = 0;
  bool change = false;
  // The binding rank's fit (FitMethod::kNone when no rank had a measurement,
  // e.g. an OOM before the first step).
  FitMethod method = FitMethod::kNone;
  double bytes_per_token = 0;
  double static_bytes = 0;
  int points = 0;                  // envelope points in that fit
  int binding_rank = -1;           // rank whose budget allows the fewest tokens; -1 if none
  int64_t peak_tokens = 0;         // binding rank: most tokens held
  uint64_t peak_memory_bytes = 0;  // binding rank: highest memory
  uint64_t capacity_bytes = 0;     // binding rank: capacity used
  double model_tokens = 0;         // the model's answer before rules, rounding and bounds
  // One line for status conditions and events; every figure in it comes from
  // the measurements, e.g. "rank 3: peak 61.2 GiB of 80.0 GiB at 26624
  // tokens; fitted 1.9 MiB/token + 11.3 GiB over 5 points; target 90%
  // (72.0 GiB) -> 34930 tokens; raising bucketSize 26624 -> 34816 (+30.8%)".
  std::string reason;
};

// Decides the next BucketSize. Errors (all name input.source and the fix):
// InvalidArgument when input.bucket_size_tokens <= 0; FailedPrecondition
// when the run did not die of memory and no rank has both a step with tokens
// and memory and a known capacity (which is missing is said).
StatusOr<TuningDecision> Tune(const TuningInput& input, const api::TuningSpec& spec,
                              const TunerOptions& options = {});

// The decision as a JSON object (the fields above; "method" by FitMethodName),
// for the tuning history and controller status.
nlohmann::json TuningDecisionToJson(const TuningDecision& decision);

}  // namespace skrull::tuner

#endif  // SKRULL_CONTROLLER_TUNER_TUNER_H_
