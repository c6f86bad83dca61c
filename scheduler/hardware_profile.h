// HardwareProfile: calibrated constants of one accelerator and its
// interconnect, plus the formulas that turn FLOPs and bytes into seconds.
// Data plus formulas (NCCL tuning.cc style): time = latency + bytes / bandwidth.
//
// Every number carries its origin in `source_notes`. Profiles are shipped as
// JSON (scheduler/profiles/*.json); ParseHardwareProfileJson reads the text,
// the caller reads the file.
//
// Thread safety: a value; const methods are safe to call concurrently.
#ifndef SKRULL_SCHEDULER_HARDWARE_PROFILE_H_
#define SKRULL_SCHEDULER_HARDWARE_PROFILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace skrull::scheduler {

enum class CollectiveOp { kAllGather, kReduceScatter, kAllReduce };
const char* CollectiveOpName(CollectiveOp op);  // "all_gather", ...

struct HardwareProfile {
  // One collective's alpha-beta model. `bandwidth_bytes_per_second` is the
  // *bus* bandwidth (nccl-tests busbw): the time for `bytes` (the full
  // output of an all-gather, the full input of a reduce-scatter or
  // all-reduce) over a group of n ranks is
  //   latency_seconds + bytes * factor(n) / bandwidth_bytes_per_second
  // with factor = (n-1)/n for all-gather and reduce-scatter and 2(n-1)/n
  // for all-reduce (ring algorithms).
  struct Collective {
    double latency_seconds = 0;
    double bandwidth_bytes_per_second = 0;
  };

  std::string name;
  double peak_flops_per_second = 0;  // dense bf16 tensor-core peak
  // Fraction of peak reached by the dense layers' GEMMs as a function of the
  // tokens in the kernel (rows of the activation matrix): piecewise-linear
  // table, ascending tokens; clamped at both ends.
  std::vector<std::pair<int64_t, double>> gemm_efficiency;
  // Fraction of peak reached by causal FlashAttention as a function of the
  // query length of one sequence (or shard): same table rules.
  std::vector<std::pair<int64_t, double>> attention_efficiency;
  Collective all_gather;
  Collective reduce_scatter;
  Collective all_reduce;
  // Fixed cost of one kernel launch (CPU launch + GPU dispatch gap).
  double kernel_launch_seconds = 0;
  // Memory of one device (what NVML / cudaMemGetInfo report as total), the
  // budget BucketSize is derived from (memory_model.h). 0 = unknown; JSON
  // field "device_memory_bytes", optional.
  double device_memory_bytes = 0;
  std::string source_notes;  // where each number came from

  // Seconds for `flops` of dense GEMM work done in kernels of
  // `tokens_in_kernel` rows. 0 when flops <= 0.
  double ComputeSeconds(double flops, int64_t tokens_in_kernel) const;
  // Seconds for `flops` of causal attention over sequences (or shards) of
  // `query_tokens` queries each. 0 when flops <= 0.
  double AttentionSeconds(double flops, int64_t query_tokens) const;
  // Seconds for one collective of `bytes` over `group_size` ranks; 0 when
  // group_size <= 1 or bytes <= 0.
  double CollectiveSeconds(CollectiveOp op, double bytes, int group_size) const;

  const Collective& collective(CollectiveOp op) const;
  // Interpolates a table (see above). REQUIRES: table not empty.
  static double Interpolate(const std::vector<std::pair<int64_t, double>>& table, int64_t x);
};

// Parses a profile's JSON text (the format ToJson writes). `origin` names the
// file in errors. Reports every problem found: missing fields, non-positive
// peak or bandwidth, efficiencies outside (0, 1], unsorted tables.
StatusOr<HardwareProfile> ParseHardwareProfileJson(const std::string& text,
                                                   const std::string& origin);
// Serializes a profile; ParseHardwareProfileJson(ToJson(p)) == p.
std::string ToJson(const HardwareProfile& profile);

// NVIDIA H100 SXM 80GB, built from published figures (see source_notes).
// Also shipped as scheduler/profiles/h100.json.
HardwareProfile H100Profile();

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_HARDWARE_PROFILE_H_
