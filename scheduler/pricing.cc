#include "scheduler/pricing.h"

#include <algorithm>

#include "scheduler/layout.h"

namespace skrull::scheduler {

namespace {

// Kernels one decoder layer launches per micro-batch, forward + backward
// (norms, projections, RoPE, attention, residual adds, SwiGLU; backward
// about twice the forward's ~13), and the extra forward when recomputing.
constexpr double kKernelsPerLayerTraining = 40;
constexpr double kKernelsPerLayerRecompute = 13;

}  // namespace

MicroBatchLaunchCost LaunchCostPerMicroBatch(const CostModel& cost, const HardwareProfile& hw) {
  const double kernels =
      static_cast<double>(cost.model().num_hidden_layers) *
      (kKernelsPerLayerTraining + (cost.options().recompute ? kKernelsPerLayerRecompute : 0));
  return {kernels * hw.kernel_launch_seconds, kernels * hw.cpu_seconds_per_kernel};
}

MicroBatchPricer::MicroBatchPricer(std::vector<int64_t> lengths, int cp, const CostModel& cost,
                                   const HardwareProfile& hw)
    : lengths_(std::move(lengths)), cp_(cp), hw_(hw), cost_(cost) {
  SKRULL_CHECK(cp >= 1) << "cp=" << cp;
  const double hw_factor = cost.HardwareFlopsFactor();
  layers_ = static_cast<double>(cost.model().num_hidden_layers);
  for (int64_t s : lengths_) {
    attention_flops_.push_back(cost.AttentionFlops(s) * hw_factor);
    local_attention_seconds_.push_back(hw.AttentionSeconds(attention_flops_.back(), s));
    all_shard_attention_seconds_.push_back(
        hw.AttentionSeconds(attention_flops_.back() / cp, ShardTokens(s, cp)));
  }
  for (int size = 2; size < cp; size *= 2) size_levels_.push_back(size);
  size_levels_.push_back(cp);
  size_t slots = 0;
  for (int size : size_levels_) {
    slot_offset_.push_back(slots);
    slots += static_cast<size_t>(cp / size);
  }
  group_tokens_.assign(slots, 0);
  slot_seconds_.assign(slots, 0.0);
  shard_attention_seconds_.assign(lengths_.size() * size_levels_.size(), -1.0);
  kv_bytes_per_token_ = cost.KvBytesPerLayer(1);
  gathers_ = cost.options().recompute ? 2.0 : 1.0;
  linear_flops_per_token_ = cost.LinearFlopsPerToken() * hw_factor;
  const MicroBatchLaunchCost launch = LaunchCostPerMicroBatch(cost, hw);
  launch_seconds_ = launch.serial_seconds;
  cpu_floor_seconds_ = launch.cpu_floor_seconds;
  gemm_passes_ = 3.0 * hw_factor;  // forward, input gradient, weight gradient
  non_gemm_bytes_per_token_ = cost.NonGemmBytesPerToken() * hw_factor;
  dense_cache_tokens_.fill(-1);
}

double MicroBatchPricer::DenseSeconds(int64_t tokens) const {
  const size_t slot = static_cast<size_t>(tokens) % kDenseCacheSlots;
  if (dense_cache_tokens_[slot] != tokens) {
    dense_cache_tokens_[slot] = tokens;
    dense_cache_seconds_[slot] = ComputeDenseSeconds(tokens);
  }
  return dense_cache_seconds_[slot];
}

double MicroBatchPricer::ComputeDenseSeconds(int64_t tokens) const {
  double seconds = hw_.MemorySeconds(non_gemm_bytes_per_token_ * static_cast<double>(tokens));
  for (const CostModel::GemmShape& g : cost_.GemmShapes()) {
    seconds += gemm_passes_ * g.count * hw_.GemmSeconds(tokens, g.k, g.n);
  }
  return seconds;
}

MicroBatchTime MicroBatchPricer::Price(const std::vector<int>& placement) const {
  MicroBatchTime t;
  t.cp_rank_seconds.assign(static_cast<size_t>(cp_), 0.0);
  Evaluate(placement, &t);
  return t;
}

double MicroBatchPricer::Seconds(const std::vector<int>& placement) const {
  MicroBatchTime t;
  Evaluate(placement, &t);
  return t.seconds;
}

size_t MicroBatchPricer::Level(int size) const {
  size_t level = 0;
  while (size_levels_[level] != size) ++level;
  return level;
}

double MicroBatchPricer::ShardAttentionSeconds(size_t k, size_t level) const {
  if (level + 1 == size_levels_.size()) return all_shard_attention_seconds_[k];
  double& cached = shard_attention_seconds_[k * size_levels_.size() + level];
  if (cached < 0) {
    const int size = size_levels_[level];
    cached = hw_.AttentionSeconds(attention_flops_[k] / size, ShardTokens(lengths_[k], size));
  }
  return cached;
}

double MicroBatchPricer::GroupCommSeconds(int64_t tokens, int size) const {
  if (tokens == 0 || size <= 1) return 0;
  const double bytes = kv_bytes_per_token_ * static_cast<double>(tokens);
  return layers_ * (gathers_ * hw_.CollectiveSeconds(CollectiveOp::kAllGather, bytes, size) +
                    hw_.CollectiveSeconds(CollectiveOp::kReduceScatter, bytes, size));
}

void MicroBatchPricer::Evaluate(const std::vector<int>& placement, MicroBatchTime* out) const {
  SKRULL_CHECK(placement.size() == lengths_.size());
  local_tokens_.assign(static_cast<size_t>(cp_), 0);
  shard_tokens_.assign(static_cast<size_t>(cp_), 0);
  local_attention_.assign(static_cast<size_t>(cp_), 0.0);
  shard_attention_.assign(static_cast<size_t>(cp_), 0.0);
  std::fill(group_tokens_.begin(), group_tokens_.end(), 0);
  const size_t all_level = size_levels_.size() - 1;
  bool sub_groups = false;
  for (size_t k = 0; k < lengths_.size(); ++k) {
    const int code = placement[k];
    if (code >= 0 || cp_ == 1) {
      const int r = code >= 0 ? code : 0;
      SKRULL_CHECK(r < cp_) << "placement " << r << " cp " << cp_;
      local_tokens_[r] += lengths_[k];
      local_attention_[r] += local_attention_seconds_[k];
      continue;
    }
    const ShardGroup g = code == kDistributed ? ShardGroup{0, cp_} : GroupOfCode(code, cp_);
    const size_t level = g.size == cp_ ? all_level : Level(g.size);
    sub_groups = sub_groups || level != all_level;
    const int64_t shard = ShardTokens(lengths_[k], g.size);
    const double attention = ShardAttentionSeconds(k, level);
    for (int r = g.first; r < g.first + g.size; ++r) {
      shard_tokens_[r] += shard;
      shard_attention_[r] += attention;
    }
    group_tokens_[slot_offset_[level] + static_cast<size_t>(g.first / g.size)] += lengths_[k];
  }
  // Each group's exchange once; a rank pays the groups holding it.
  const size_t first_level = sub_groups ? 0 : all_level;
  for (size_t slot = slot_offset_[first_level]; slot < group_tokens_.size(); ++slot) {
    size_t level = first_level;
    while (level + 1 < size_levels_.size() && slot >= slot_offset_[level + 1]) ++level;
    slot_seconds_[slot] = GroupCommSeconds(group_tokens_[slot], size_levels_[level]);
  }

  MicroBatchTime& t = *out;
  for (int r = 0; r < cp_; ++r) {
    const int64_t tokens = local_tokens_[r] + shard_tokens_[r];
    if (tokens == 0) continue;
    double comm = 0;
    for (size_t level = first_level; level < size_levels_.size(); ++level) {
      const int size = size_levels_[level];
      if (r / size * size + size > cp_) continue;  // past the last aligned group
      comm += slot_seconds_[slot_offset_[level] + static_cast<size_t>(r / size)];
    }
    const double local_share = static_cast<double>(local_tokens_[r]);
    const double shard_share = static_cast<double>(shard_tokens_[r]);
    double local_dense = 0, shard_dense = 0;
    if (hw_.PricesGemmShapes()) {
      const double dense = DenseSeconds(tokens) / static_cast<double>(tokens);
      local_dense = dense * local_share;
      shard_dense = dense * shard_share;
    } else {
      local_dense = hw_.ComputeSeconds(linear_flops_per_token_ * local_share, tokens) +
                    hw_.MemorySeconds(non_gemm_bytes_per_token_ * local_share);
      shard_dense = hw_.ComputeSeconds(linear_flops_per_token_ * shard_share, tokens) +
                    hw_.MemorySeconds(non_gemm_bytes_per_token_ * shard_share);
    }
    const double local = local_dense + local_attention_[r] + launch_seconds_;
    const double distributed = shard_dense + shard_attention_[r];
    const double seconds = std::max(std::max(comm, local) + distributed, cpu_floor_seconds_);
    if (!t.cp_rank_seconds.empty()) t.cp_rank_seconds[r] = seconds;
    if (seconds > t.seconds) {
      t.seconds = seconds;
      t.compute_seconds = local + distributed;
      t.comm_seconds = comm;
    }
  }
}

MicroBatchTime SimulatePlacement(const std::vector<int64_t>& lengths,
                                 const std::vector<int>& placement, int cp, const CostModel& cost,
                                 const HardwareProfile& hw) {
  return MicroBatchPricer(lengths, cp, cost, hw).Price(placement);
}

MicroBatchTime SimulateMicroBatch(const MicroBatch& mb, int cp, const CostModel& cost,
                                  const HardwareProfile& hw) {
  std::vector<int64_t> lengths;
  std::vector<int> placement;
  lengths.reserve(mb.sequences.size());
  placement.reserve(mb.sequences.size());
  for (const PlacedSequence& s : mb.sequences) {
    lengths.push_back(s.length);
    placement.push_back(s.Code(cp));
  }
  return SimulatePlacement(lengths, placement, cp, cost, hw);
}

double GradientSync::RankSeconds(double rank_seconds, double last_micro_batch_seconds) const {
  return std::max(rank_seconds + last_bucket_seconds,
                  rank_seconds - backward_fraction * last_micro_batch_seconds + reduce_seconds);
}

double GradientSync::MicroBatchSeconds(double micro_batch_seconds) const {
  return RankSeconds(micro_batch_seconds, micro_batch_seconds);
}

GradientSync MakeGradientSync(const CostModel& cost, const HardwareProfile& hw, int world_size,
                              const GradientSyncOptions& options) {
  const int zero_stage = options.zero_stage;
  SKRULL_CHECK(zero_stage >= 0 && zero_stage <= kMaxPricedZeroStage) << "zero_stage=" << zero_stage;
  GradientSync sync;
  sync.zero_stage = zero_stage;
  const bool all_reduce = zero_stage == 0 || (zero_stage == 2 && options.stage2_all_reduce);
  const CollectiveOp reduce = all_reduce ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter;
  const double bytes = cost.GradientBytes(options.dtype);
  sync.reduce_seconds = hw.CollectiveSeconds(reduce, bytes, world_size);
  if (options.overlap_with_backward) {
    sync.last_bucket_seconds =
        hw.CollectiveSeconds(reduce, std::min(bytes, kGradientBucketBytes), world_size);
    // Backward costs about twice the forward; recomputation adds a forward.
    sync.backward_fraction = cost.options().recompute ? 3.0 / 4.0 : 2.0 / 3.0;
  }
  sync.optimizer_step_seconds = hw.MemorySeconds(cost.OptimizerStepBytes());
  if (zero_stage > 0) {
    const double parameter_bytes = static_cast<double>(cost.model().NumParameters()) *
                                   BytesPerParameter(cost.options().precision).weights;
    sync.parameter_all_gather_seconds =
        hw.CollectiveSeconds(CollectiveOp::kAllGather, parameter_bytes, world_size);
  }
  return sync;
}

GradientSync MakeGradientSync(const CostModel& cost, const HardwareProfile& hw, int world_size,
                              int zero_stage) {
  GradientSyncOptions options;
  options.zero_stage = zero_stage;
  return MakeGradientSync(cost, hw, world_size, options);
}

}  // namespace skrull::scheduler
