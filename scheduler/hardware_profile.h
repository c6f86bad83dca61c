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
  // Fixed cost of one kernel launch (CPU launch + GPU dispatch gap), added to
  // a micro-batch's GPU time. A profile prices launches either this way or
  // with cpu_seconds_per_kernel below, not both (the reader rejects both > 0).
  double kernel_launch_seconds = 0;
  // Memory of one device (what NVML / cudaMemGetInfo report as total), the
  // budget BucketSize is derived from (memory_model.h). 0 = unknown; JSON
  // field "device_memory_bytes", optional.
  double device_memory_bytes = 0;

  // Optional terms (0 / empty = not priced, the model before them). JSON
  // fields of the same names.
  //
  // Device memory bandwidth (HBM), bytes per second: the roofline floor of a
  // GEMM (GemmSeconds), the memory-bound non-GEMM work per token and the
  // optimizer step (pricing.h).
  double memory_bytes_per_second = 0;
  // GEMM tile and wave quantization (GemmSeconds): output tiles of
  // gemm_tile_rows x gemm_tile_cols (a partial tile costs a whole one), run
  // in waves over `multiprocessors` (a partial wave costs a whole one).
  // 0: not priced.
  int multiprocessors = 0;
  int gemm_tile_rows = 0, gemm_tile_cols = 0;
  // Host seconds to dispatch one kernel in eager execution: a micro-batch
  // takes at least its kernels times this, whatever the GPU does. Includes
  // the launch itself: kernel_launch_seconds must then be 0.
  double cpu_seconds_per_kernel = 0;
  // GPUs per node. A group of at most this many ranks (groups are laid out on
  // consecutive ranks) is priced with `intra_node`; larger groups with the
  // collectives above. 0: the collectives above price every group.
  int gpus_per_node = 0;
  struct IntraNode {
    Collective all_gather, reduce_scatter, all_reduce;
  } intra_node;  // JSON "intra_node": {"all_gather": {...}, ...}
  // What `attention_efficiency` describes ("fa2", "fa3", ...), for reports.
  std::string attention_kernel;
  std::string source_notes;  // where each number came from

  // Seconds for `flops` of dense GEMM work done in kernels of
  // `tokens_in_kernel` rows. 0 when flops <= 0.
  double ComputeSeconds(double flops, int64_t tokens_in_kernel) const;
  // Seconds for `flops` of causal attention over sequences (or shards) of
  // `query_tokens` queries each. 0 when flops <= 0.
  double AttentionSeconds(double flops, int64_t query_tokens) const;
  // Seconds for one collective of `bytes` over `group_size` ranks; 0 when
  // group_size <= 1 or bytes <= 0. Intra-node fits when the group fits a
  // node (gpus_per_node).
  double CollectiveSeconds(CollectiveOp op, double bytes, int group_size) const;
  // Seconds of one bf16 GEMM [m x k] x [k x n] (2mkn FLOPs): the larger of
  // its FLOPs at gemm_efficiency(m) times the tile and wave utilisation
  // (when multiprocessors > 0) and its operands' bytes (2(mk + kn + mn)) at
  // memory_bytes_per_second (the roofline floor: at small m the weights
  // stream from HBM). 0 when any dimension is <= 0.
  double GemmSeconds(int64_t m, int64_t k, int64_t n) const;
  // Seconds to move `bytes` through device memory; 0 without
  // memory_bytes_per_second.
  double MemorySeconds(double bytes) const;
  // Whether any per-GEMM term (roofline, quantization) is priced; without
  // them a GEMM's time is its FLOPs at gemm_efficiency(m).
  bool PricesGemmShapes() const {
    return memory_bytes_per_second > 0 || (gemm_tile_rows > 0 && gemm_tile_cols > 0);
  }

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

// Attention kernels with published H100 curves (hardware_profile.cc).
enum class AttentionKernel { kFa2, kFa3 };

// NVIDIA H100 SXM 80GB in nodes of 8 (NVLink) joined by 400 Gb/s NICs, built
// from published figures (see source_notes), with `kernel`'s causal
// attention curve. Shipped as scheduler/profiles/h100.json (FlashAttention-2,
// the default) and h100-fa3.json.
HardwareProfile H100Profile(AttentionKernel kernel = AttentionKernel::kFa2);

// The fwd+bwd attention efficiency table of `kernel` on an H100 SXM
// (attention_efficiency), from its forward and backward curves (see
// hardware_profile.cc).
std::vector<std::pair<int64_t, double>> H100AttentionEfficiency(AttentionKernel kernel);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_HARDWARE_PROFILE_H_
