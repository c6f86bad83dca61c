#include "scheduler/simulator.h"

#include <algorithm>
#include <random>

#include "scheduler/checked_math.h"
#include "scheduler/layout.h"

namespace skrull::scheduler {
namespace {

// Kernels one decoder layer launches per micro-batch, forward + backward
// (norms, projections, RoPE, attention, residual adds, SwiGLU; backward
// about twice the forward's ~13), and the extra forward when recomputing.
constexpr double kKernelsPerLayerTraining = 40;
constexpr double kKernelsPerLayerRecompute = 13;

}  // namespace

MicroBatchPricer::MicroBatchPricer(std::vector<int64_t> lengths, int cp, const CostModel& cost,
                                   const HardwareProfile& hw)
    : lengths_(std::move(lengths)), cp_(cp), hw_(hw) {
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
  launch_seconds_ =
      layers_ *
      (kKernelsPerLayerTraining + (cost.options().recompute ? kKernelsPerLayerRecompute : 0)) *
      hw.kernel_launch_seconds;
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
    const double local =
        hw_.ComputeSeconds(linear_flops_per_token_ * static_cast<double>(local_tokens_[r]),
                           tokens) +
        local_attention_[r] + launch_seconds_;
    const double distributed =
        hw_.ComputeSeconds(linear_flops_per_token_ * static_cast<double>(shard_tokens_[r]),
                           tokens) +
        shard_attention_[r];
    const double seconds = std::max(comm, local) + distributed;
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

int PricingZeroStage(Policy policy, int requested_stage) {
  return policy == Policy::kDeepSpeed ? 2 : requested_stage;
}

double GradientSync::RankSeconds(double rank_seconds, double last_micro_batch_seconds) const {
  return std::max(rank_seconds + last_bucket_seconds,
                  rank_seconds - backward_fraction * last_micro_batch_seconds + reduce_seconds);
}

double GradientSync::MicroBatchSeconds(double micro_batch_seconds) const {
  return RankSeconds(micro_batch_seconds, micro_batch_seconds);
}

GradientSync MakeGradientSync(const CostModel& cost, const HardwareProfile& hw, int world_size,
                              int zero_stage) {
  SKRULL_CHECK(zero_stage >= 0 && zero_stage <= kMaxPricedZeroStage) << "zero_stage=" << zero_stage;
  GradientSync sync;
  sync.zero_stage = zero_stage;
  const CollectiveOp reduce =
      zero_stage == 0 ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter;
  const double bytes = cost.GradientBytes();
  sync.reduce_seconds = hw.CollectiveSeconds(reduce, bytes, world_size);
  sync.last_bucket_seconds =
      hw.CollectiveSeconds(reduce, std::min(bytes, kGradientBucketBytes), world_size);
  // Backward costs about twice the forward; recomputation adds a forward.
  sync.backward_fraction = cost.options().recompute ? 3.0 / 4.0 : 2.0 / 3.0;
  if (zero_stage > 0) {
    const double parameter_bytes = static_cast<double>(cost.model().NumParameters()) *
                                   BytesPerParameter(cost.options().precision).weights;
    sync.parameter_all_gather_seconds =
        hw.CollectiveSeconds(CollectiveOp::kAllGather, parameter_bytes, world_size);
  }
  return sync;
}

namespace {

// Stage 2: the DP ranks meet at every micro-batch index (header comment).
double PerMicroBatchSyncSeconds(const std::vector<std::vector<double>>& micro_batch_seconds,
                                const GradientSync& sync) {
  size_t most = 0;
  for (const auto& rank : micro_batch_seconds) most = std::max(most, rank.size());
  double seconds = 0;
  for (size_t i = 0; i < most; ++i) {
    double slowest = 0;
    for (const auto& rank : micro_batch_seconds) {
      const double t = i < rank.size() ? rank[i] : 0.0;
      slowest = std::max(slowest, sync.MicroBatchSeconds(t));
    }
    seconds += slowest;
  }
  return seconds;
}

// Best fraction of peak the table reaches for any x <= x_max (the table is
// piecewise linear, so at a breakpoint or at x_max).
double BestEfficiencyUpTo(const std::vector<std::pair<int64_t, double>>& table, int64_t x_max) {
  double best = HardwareProfile::Interpolate(table, x_max);
  for (const auto& [x, y] : table) {
    if (x <= x_max) best = std::max(best, y);
  }
  return best;
}

}  // namespace

IterationTime SimulatePlan(const Plan& plan, const CostModel& cost, const HardwareProfile& hw,
                           int zero_stage) {
  IterationTime it;
  const GradientSync sync = MakeGradientSync(cost, hw, plan.topology.WorldSize(), zero_stage);
  double slowest = -1, slowest_comm = 0, slowest_compute = 0;
  std::vector<std::vector<double>> micro_batch_seconds;
  for (const DpRankPlan& rank : plan.ranks) {
    double seconds = 0, comm = 0, compute = 0, last = 0;
    micro_batch_seconds.emplace_back();
    for (const MicroBatch& mb : rank.micro_batches) {
      // Padding: the trainer skips it (at stage 2 it still joins the
      // micro-batch's reduce-scatter, priced by PerMicroBatchSyncSeconds).
      if (mb.sequences.empty()) {
        micro_batch_seconds.back().push_back(0.0);
        continue;
      }
      const MicroBatchTime t = SimulateMicroBatch(mb, plan.topology.cp, cost, hw);
      seconds += t.seconds;
      comm += t.comm_seconds;
      compute += t.compute_seconds;
      last = t.seconds;
      micro_batch_seconds.back().push_back(t.seconds);
    }
    if (seconds > slowest) {
      slowest = seconds;
      slowest_comm = comm;
      slowest_compute = compute;
    }
    if (zero_stage < 2) it.seconds = std::max(it.seconds, sync.RankSeconds(seconds, last));
    it.dp_rank_seconds.push_back(seconds);
  }
  if (zero_stage == 2) it.seconds = PerMicroBatchSyncSeconds(micro_batch_seconds, sync);
  it.seconds += sync.parameter_all_gather_seconds;
  it.all_reduce_seconds = sync.reduce_seconds;
  it.exposed_all_reduce_seconds = it.seconds - std::max(0.0, slowest);
  it.comm_seconds = slowest_comm + it.exposed_all_reduce_seconds;
  it.compute_seconds = slowest_compute;
  return it;
}

double TightLowerBoundSeconds(const std::vector<int64_t>& lengths, const Topology& topology,
                              int64_t bucket_size_tokens, const CostModel& cost,
                              const HardwareProfile& hw) {
  const double hw_factor = cost.HardwareFlopsFactor();
  const double linear_per_token = cost.LinearFlopsPerToken() * hw_factor;
  double seconds = 0;
  for (int64_t s : lengths) {
    const double gemm = BestEfficiencyUpTo(hw.gemm_efficiency, bucket_size_tokens);
    const double attention = BestEfficiencyUpTo(hw.attention_efficiency, s);
    seconds += linear_per_token * static_cast<double>(s) / (hw.peak_flops_per_second * gemm) +
               cost.AttentionFlops(s) * hw_factor / (hw.peak_flops_per_second * attention);
  }
  return seconds / static_cast<double>(topology.WorldSize());
}

StatusOr<SimulationReport> Simulate(const std::vector<int64_t>& dataset_lengths,
                                    const SimulationOptions& options, const CostModel& cost,
                                    const HardwareProfile& hw) {
  std::vector<std::string> problems = LayoutProblems(options.topology, options.bucket_size_tokens);
  if (dataset_lengths.empty()) problems.push_back("dataset: no sequence lengths");
  for (size_t i = 0; i < dataset_lengths.size(); ++i) {
    const int64_t length = dataset_lengths[i];
    if (length <= 0 || length > kMaxSequenceTokens) {
      problems.push_back("dataset[" + std::to_string(i) + "]: length must be " +
                         (length <= 0 ? "> 0" : "<= " + std::to_string(kMaxSequenceTokens)) +
                         " (got " + std::to_string(length) + ")");
      break;
    }
  }
  int64_t batch_sequences = 0;
  if (options.batch_size < 1) {
    problems.push_back("batch_size: must be >= 1");
  } else if (options.topology.dp >= 1 && !MulAtMost(options.topology.dp, options.batch_size,
                                                    kMaxGlobalBatchSequences, &batch_sequences)) {
    problems.push_back(
        "dp x batch_size = " + std::to_string(int64_t{options.topology.dp} * options.batch_size) +
        " sequences per step exceeds the maximum " + std::to_string(kMaxGlobalBatchSequences));
  }
  if (options.steps < 1) problems.push_back("steps: must be >= 1");
  if (options.zero_stage < 0 || options.zero_stage > kMaxPricedZeroStage) {
    problems.push_back("zero_stage: must be 0, 1 or 2 (got " + std::to_string(options.zero_stage) +
                       ")");
  }
  if (!problems.empty()) {
    std::string message = "simulation options:";
    for (const auto& p : problems) message += " " + p + ";";
    return InvalidArgumentError(message);
  }
  const std::vector<Policy> policies = options.policies.empty() ? AllPolicies() : options.policies;
  const int cp = options.topology.cp;
  const double world = options.topology.WorldSize();
  ScheduleOptions schedule_options;
  schedule_options.topology = options.topology;
  schedule_options.bucket_size_tokens = options.bucket_size_tokens;
  schedule_options.hardware = &hw;
  schedule_options.micro_batch_size = options.micro_batch_size;

  struct Totals {
    double seconds = 0, tokens = 0, imbalance = 0, schedule_seconds = 0;
    PolicyStats stats;
  };
  std::vector<Totals> totals(policies.size());
  SimulationReport report;
  report.steps = options.steps;
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<size_t> pick(0, dataset_lengths.size() - 1);
  for (int step = 0; step < options.steps; ++step) {
    std::vector<Sequence> batch(static_cast<size_t>(batch_sequences));
    std::vector<int64_t> lengths(batch.size());
    double batch_tokens = 0, batch_flops = 0, longest_flops = 0;
    for (size_t k = 0; k < batch.size(); ++k) {
      lengths[k] = dataset_lengths[pick(rng)];
      batch[k] = {static_cast<int64_t>(k), lengths[k]};
      batch_tokens += static_cast<double>(batch[k].length);
      const double f = cost.HardwareFlopsPerSequence(batch[k].length);
      batch_flops += f;
      longest_flops = std::max(longest_flops, f);
    }
    report.lower_bound_seconds +=
        std::max(batch_flops / world, longest_flops / cp) / hw.peak_flops_per_second;
    report.tight_bound_seconds +=
        TightLowerBoundSeconds(lengths, options.topology, options.bucket_size_tokens, cost, hw);
    for (size_t p = 0; p < policies.size(); ++p) {
      auto plan = Schedule(policies[p], batch, schedule_options, cost);
      if (!plan.ok()) {
        return plan.status().WithContext(std::string("policy ") + PolicyName(policies[p]) +
                                         ", step " + std::to_string(step));
      }
      const IterationTime time =
          SimulatePlan(*plan, cost, hw, PricingZeroStage(policies[p], options.zero_stage));
      Totals& t = totals[p];
      t.seconds += time.seconds;
      t.tokens += batch_tokens;
      t.schedule_seconds += plan->schedule_seconds;
      t.stats.rollbacks_dacp += plan->rollbacks.dacp;
      t.stats.rollbacks_gds += plan->rollbacks.gds;
      double critical_flops = 0, all_flops = 0;
      int64_t peak_tokens = 0;
      for (const DpRankPlan& rank : plan->ranks) {
        double rank_critical = 0;
        for (const MicroBatch& mb : rank.micro_batches) {
          if (mb.empty()) continue;
          rank_critical += *std::max_element(mb.cp_rank_flops.begin(), mb.cp_rank_flops.end());
          for (double f : mb.cp_rank_flops) all_flops += f;
          peak_tokens = std::max(
              peak_tokens, *std::max_element(mb.cp_rank_tokens.begin(), mb.cp_rank_tokens.end()));
        }
        critical_flops = std::max(critical_flops, rank_critical);
      }
      t.imbalance += all_flops > 0 ? critical_flops / (all_flops / world) : 1.0;
      t.stats.peak_tokens_fraction = std::max(
          t.stats.peak_tokens_fraction,
          static_cast<double>(peak_tokens) / static_cast<double>(options.bucket_size_tokens));
    }
  }
  report.lower_bound_seconds /= options.steps;
  report.tight_bound_seconds /= options.steps;
  for (size_t p = 0; p < policies.size(); ++p) {
    Totals& t = totals[p];
    t.stats.mean_iteration_seconds = t.seconds / options.steps;
    t.stats.tokens_per_second = t.seconds > 0 ? t.tokens / t.seconds : 0;
    t.stats.flops_imbalance = t.imbalance / options.steps;
    t.stats.mean_schedule_seconds = t.schedule_seconds / options.steps;
    report.policies[PolicyName(policies[p])] = t.stats;
  }
  return report;
}

}  // namespace skrull::scheduler
