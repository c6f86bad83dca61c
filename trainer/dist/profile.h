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
//     CP group (the world when CP = 1) and all-reduce on the world, on the
//     backend and device training uses (NCCL and GPU tensors on CUDA, Gloo
//     and host tensors on CPU), fitted as latency + bytes x factor(n) / bus
//     bandwidth.
// The device is the one training would use (ChooseRankDevice, rank_device.h).
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
#include "scheduler/model_config.h"
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

// latency + bus bandwidth from (bytes, seconds) samples of `op` over n ranks
// (hardware_profile.h's formula, fitted with scheduler::FitLine); latency >=
// 0, bandwidth > 0.
scheduler::HardwareProfile::Collective FitCollective(
    scheduler::CollectiveOp op, int group_size,
    const std::vector<std::pair<int64_t, double>>& samples);

// What one rank measured (MeasureProfile). Samples are (x, y) pairs.
struct ProfileMeasurements {
  scheduler::ModelConfig config;  // the job's model
  std::string config_path;        // spec.model.config
  bool cuda = false;              // measured on a GPU (else the CPU)
  // Memory: activation bytes above static vs tokens, after a warm-up step.
  std::vector<std::pair<int64_t, double>> memory_samples;
  uint64_t static_bytes = 0;     // weights, gradients, AdamW state, runtime
  uint64_t model_bytes = 0;      // the part the model and optimizer added
  uint64_t capacity_bytes = 0;   // the rank's share of device (or host) memory
  int procs_sharing_memory = 1;  // host memory is shared by the node's ranks
  // Compute: step seconds vs packed tokens and vs one sequence's length; the
  // 1024^3 matmul and kernel launch latency.
  std::vector<std::pair<int64_t, double>> token_seconds, seqlen_seconds;
  double matmul_seconds = 0, peak_flops = 0, launch_seconds = 0;
  // Collectives (world > 1): seconds vs bytes on the CP group (the world when
  // CP = 1) and the world. One process: a memory copy's seconds instead.
  bool collectives_measured = false;
  int kv_group_size = 0, world_group_size = 0;
  std::string backend;
  std::vector<std::pair<int64_t, double>> all_gather, reduce_scatter, all_reduce;
  double copy_seconds = 0;
};

// The hardware profile and BucketSize fitted to the measurements (FitProfile).
struct FittedProfile {
  scheduler::HardwareProfile hardware;
  double alpha_bytes_per_token = 0;  // Mem_act slope (at least 1)
  double beta_bytes = 0;             // Mem_act intercept (at least 0)
  int64_t unclamped_bucket_size_tokens = 0;
  int64_t bucket_size_tokens = 0;  // clamped to spec.tuning's [min, max]
};

// Measures as rank env.layout.rank() of the job (world 1: no process groups;
// world > 1: rendezvous as for training, the launcher having started every
// rank). libtorch errors come back as Internal.
StatusOr<ProfileMeasurements> MeasureProfile(const api::JobSpec& job, const RankEnv& env,
                                             const ProfileOptions& options);

// Pure: efficiency tables against the measured peak, collectives, the memory
// line (scheduler::FitLine) and BucketSize = scheduler::BucketSizeTokens of
// that line at (1 - safety_margin) of capacity, clamped to [min, max].
FittedProfile FitProfile(const ProfileMeasurements& measured, const ProfileOptions& options,
                         int64_t min_bucket_size_tokens, int64_t max_bucket_size_tokens);

// The profile file's text (the schema at the top of this header).
std::string ProfileJson(const ProfileMeasurements& measured, const FittedProfile& fitted,
                        const ProfileOptions& options, const std::string& job_name, int world_size);

// Measure, fit, and (rank 0) write the profile after checking the scheduler
// reads it back. Prints a one-line summary to stderr.
Status RunProfileRank(const api::JobSpec& job, const RankEnv& env, const ProfileOptions& options);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_PROFILE_H_
