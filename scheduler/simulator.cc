#include "scheduler/simulator.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "scheduler/checked_math.h"

namespace skrull::scheduler {

int PricingZeroStage(Policy policy, int requested_stage) {
  return policy == Policy::kDeepSpeed ? 2 : requested_stage;
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
  GradientSyncOptions options;
  options.zero_stage = zero_stage;
  return SimulatePlan(plan, cost, hw, options);
}

IterationTime SimulatePlan(const Plan& plan, const CostModel& cost, const HardwareProfile& hw,
                           const GradientSyncOptions& sync_options) {
  IterationTime it;
  const int zero_stage = sync_options.zero_stage;
  const GradientSync sync = MakeGradientSync(cost, hw, plan.topology.WorldSize(), sync_options);
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
  it.seconds += sync.parameter_all_gather_seconds + sync.optimizer_step_seconds;
  it.all_reduce_seconds = sync.reduce_seconds;
  it.exposed_all_reduce_seconds = it.seconds - std::max(0.0, slowest);
  it.comm_seconds = slowest_comm + it.exposed_all_reduce_seconds;
  it.compute_seconds = slowest_compute;
  return it;
}

namespace {

// One sequence's work at the profile's best efficiency for its size (the
// tight bound's per-sequence term): GEMMs at the best up to BucketSize rows,
// attention at the best up to `attention_query_cap` query tokens.
double BestCaseSeconds(int64_t length, int64_t bucket_size_tokens, int64_t attention_query_cap,
                       const CostModel& cost, const HardwareProfile& hw) {
  const double hw_factor = cost.HardwareFlopsFactor();
  const double linear_per_token = cost.LinearFlopsPerToken() * hw_factor;
  const double gemm = BestEfficiencyUpTo(hw.gemm_efficiency, bucket_size_tokens);
  const double attention = BestEfficiencyUpTo(hw.attention_efficiency, attention_query_cap);
  // Element-wise and loss bytes: every plan moves them for every token.
  const double memory_per_token = hw.MemorySeconds(cost.NonGemmBytesPerToken() * hw_factor);
  return linear_per_token * static_cast<double>(length) / (hw.peak_flops_per_second * gemm) +
         cost.AttentionFlops(length) * hw_factor / (hw.peak_flops_per_second * attention) +
         memory_per_token * static_cast<double>(length);
}

}  // namespace

double TightLowerBoundSeconds(const std::vector<int64_t>& lengths, const Topology& topology,
                              int64_t bucket_size_tokens, const CostModel& cost,
                              const HardwareProfile& hw) {
  double seconds = 0;
  for (int64_t s : lengths) seconds += BestCaseSeconds(s, bucket_size_tokens, s, cost, hw);
  // The optimizer step follows every iteration (pricing.h, GradientSync).
  return seconds / static_cast<double>(topology.WorldSize()) +
         hw.MemorySeconds(cost.OptimizerStepBytes());
}

double ReachableBoundSeconds(const std::vector<int64_t>& lengths, const Topology& topology,
                             int64_t bucket_size_tokens, const CostModel& cost,
                             const HardwareProfile& hw, int zero_stage) {
  GradientSyncOptions options;
  options.zero_stage = zero_stage;
  return ReachableBoundSeconds(lengths, topology, bucket_size_tokens, cost, hw, options);
}

double ReachableBoundSeconds(const std::vector<int64_t>& lengths, const Topology& topology,
                             int64_t bucket_size_tokens, const CostModel& cost,
                             const HardwareProfile& hw, const GradientSyncOptions& sync_options) {
  // Work: no rank holds more than BucketSize queries, whole or as a shard.
  int64_t longest = 0;
  double work = 0, tokens = 0;
  for (int64_t s : lengths) {
    longest = std::max(longest, s);
    work += BestCaseSeconds(s, bucket_size_tokens, std::min(s, bucket_size_tokens), cost, hw);
    tokens += static_cast<double>(s);
  }
  // Launches: every non-empty micro-batch pays them on its ranks, and the
  // DP ranks hold at least min(dp, sequences) and ceil(tokens / (cp x C))
  // micro-batches in all; the slowest rank pays at least their mean, in
  // series with its work or as the eager CPU floor of each micro-batch.
  const MicroBatchLaunchCost launch = LaunchCostPerMicroBatch(cost, hw);
  const double capacity =
      static_cast<double>(topology.cp) * static_cast<double>(bucket_size_tokens);
  const double micro_batches =
      std::max(std::min<double>(topology.dp, static_cast<double>(lengths.size())),
               std::ceil(tokens / capacity));
  const double per_rank = micro_batches / topology.dp;
  double compute = std::max(work / topology.WorldSize() + launch.serial_seconds * per_rank,
                            launch.cpu_floor_seconds * per_rank);
  if (longest > 0) {
    const double path = BestCaseSeconds(longest, bucket_size_tokens,
                                        std::min(longest, bucket_size_tokens), cost, hw) /
                        topology.cp;
    compute = std::max(compute, std::max(path + launch.serial_seconds, launch.cpu_floor_seconds));
  }
  const GradientSync sync = MakeGradientSync(cost, hw, topology.WorldSize(), sync_options);
  return std::max(compute + sync.last_bucket_seconds,
                  (1 - sync.backward_fraction) * compute + sync.reduce_seconds) +
         sync.parameter_all_gather_seconds + sync.optimizer_step_seconds;
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
    GradientSyncOptions bound_sync;
    bound_sync.zero_stage = options.zero_stage;
    bound_sync.dtype = options.grad_reduce_dtype;
    report.reachable_bound_seconds += ReachableBoundSeconds(
        lengths, options.topology, options.bucket_size_tokens, cost, hw, bound_sync);
    for (size_t p = 0; p < policies.size(); ++p) {
      auto plan = Schedule(policies[p], batch, schedule_options, cost);
      if (!plan.ok()) {
        return plan.status().WithContext(std::string("policy ") + PolicyName(policies[p]) +
                                         ", step " + std::to_string(step));
      }
      GradientSyncOptions sync;
      sync.zero_stage = PricingZeroStage(policies[p], options.zero_stage);
      sync.dtype = options.grad_reduce_dtype;
      const IterationTime time = SimulatePlan(*plan, cost, hw, sync);
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
  report.reachable_bound_seconds /= options.steps;
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
