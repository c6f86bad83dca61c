// Offline profiling: `skrull-trainer --profile --job FILE [--out profile.json]`.
//
// Measures, on the job's device with the job's model:
//   * memory: peak activation bytes of forward + backward at several token
//     counts (CPU: peak RSS with the peak reset between runs; CUDA builds:
//     the caching allocator's peak), fitted as Mem_act(S) = alpha * S + beta;
//     static bytes (weights, gradients, AdamW state, runtime) after a warm-up
//     step; BucketSize = floor((capacity x (1 - margin) - static - beta) / alpha),
//     clamped to spec.tuning's [min, max] bucket size;
//   * compute: step time of packed short sequences vs tokens (the dense
//     layers' efficiency) and of one sequence vs its length (attention's);
//   * collectives: latency vs bytes of all-gather and reduce-scatter on the
//     CP group (the world when CP = 1) and all-reduce on the world, fitted as
//     latency + bytes x factor(n) / bus bandwidth.
// With more than one process the profile runs on every rank of the job at
// once (the launcher starts them, like training), so compute is measured
// under the same contention as training; rank 0 writes the file.
//
// Output: a hardware-profile JSON in scheduler/hardware_profile.h's schema
// (ParseHardwareProfileJson reads it) with extra top-level members:
//   "bucket_size_tokens": N,          what `bucketSize: auto` uses when the
//                                     job sets spec.scheduler.hardwareProfile
//                                     to this file (train::LoadHardwareProfileFile)
//   "memory": {"alpha_bytes_per_token", "beta_bytes", "static_bytes",
//              "capacity_bytes", "safety_margin", "samples": [[tokens, bytes]...]},
//   "measurements": {"tokens_seconds": [[tokens, s]...],
//                    "seqlen_seconds": [[length, s]...],
//                    "collectives": {"all_gather": [[bytes, s]...], ...}}
#ifndef SKRULL_TRAINER_DIST_PROFILE_H_
#define SKRULL_TRAINER_DIST_PROFILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "scheduler/hardware_profile.h"
#include "trainer/dist/launcher.h"

namespace skrull::dist {

struct ProfileOptions {
  std::string out_path;  // "" = <outputDir>/profile.json
  std::string device = "auto";
  // Token counts for the memory fit and the dense-layer timing (packed
  // sequences of short_sequence_tokens each).
  std::vector<int64_t> token_counts = {256, 512, 1024, 2048, 4096};
  int64_t short_sequence_tokens = 128;
  // Single-sequence lengths for the attention timing.
  std::vector<int64_t> sequence_lengths = {256, 512, 1024, 2048, 4096};
  // Collective payloads (bytes of the full output / input).
  std::vector<int64_t> collective_bytes = {4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20};
  int repeats = 3;             // timed repetitions (median) after one warm-up
  double safety_margin = 0.1;  // BucketSize keeps this fraction of capacity free
};

struct LinearFit {
  double slope = 0;
  double intercept = 0;
};
// Least squares y = slope * x + intercept. REQUIRES: xs.size() == ys.size() >= 1.
LinearFit FitLine(const std::vector<double>& xs, const std::vector<double>& ys);

// latency + bus bandwidth from (bytes, seconds) samples of `op` over n ranks
// (hardware_profile.h's formula); latency >= 0, bandwidth > 0.
scheduler::HardwareProfile::Collective FitCollective(
    scheduler::CollectiveOp op, int group_size,
    const std::vector<std::pair<int64_t, double>>& samples);

// Profiles as rank env.layout.rank() of the job (world 1: no process groups; world > 1:
// rendezvous as for training, the launcher having started every rank).
// Rank 0 writes the profile. Prints a one-line summary to stderr.
Status RunProfileRank(const api::JobSpec& job, const RankEnv& env, const ProfileOptions& options);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_PROFILE_H_
