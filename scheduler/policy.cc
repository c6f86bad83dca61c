#include "scheduler/policy.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "scheduler/checked_math.h"
#include "scheduler/deepspeed.h"
#include "scheduler/dynamic_cp.h"
#include "scheduler/gds.h"
#include "scheduler/layout.h"
#include "scheduler/local_if_fits.h"
#include "scheduler/packing.h"
#include "scheduler/pricing.h"
#include "scheduler/simulator.h"

namespace skrull::scheduler {
namespace {

constexpr Policy kAll[] = {Policy::kSkrull,     Policy::kCpAll,      Policy::kSorted,
                           Policy::kBalancedCp, Policy::kRoundRobin, Policy::kSkrullPaper,
                           Policy::kDeepSpeed,  Policy::kDynamicCp,  Policy::kLocalIfFits};

std::string ValidNames() {
  std::string names;
  for (Policy p : kAll) names += std::string(names.empty() ? "" : ", ") + PolicyName(p);
  return names;
}

Status Validate(Policy policy, const std::vector<Sequence>& batch, const ScheduleOptions& options) {
  std::vector<std::string> problems;
  problems = LayoutProblems(options.topology, options.bucket_size_tokens);
  if (policy == Policy::kDeepSpeed && options.micro_batch_size < 1) {
    problems.push_back("micro_batch_size: must be >= 1 for the deepspeed policy (got " +
                       std::to_string(options.micro_batch_size) + ")");
  }
  int64_t total_tokens = 0;
  bool total_ok = true;
  std::unordered_map<int64_t, size_t> first_index;
  first_index.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    // Built only for a problem: 65,536 strings cost milliseconds (docs/scheduler.md).
    const auto where = [&] {
      return "global_batch[" + std::to_string(i) + "] (id " + std::to_string(batch[i].id) + ")";
    };
    if (batch[i].length <= 0) {
      problems.push_back(where() + ": length must be > 0 (got " + std::to_string(batch[i].length) +
                         ")");
    } else if (batch[i].length > kMaxSequenceTokens) {
      problems.push_back(where() + ": length must be <= " + std::to_string(kMaxSequenceTokens) +
                         " (got " + std::to_string(batch[i].length) + ")");
    } else {
      total_ok = total_ok && CheckedAdd(total_tokens, batch[i].length, &total_tokens);
    }
    auto [it, inserted] = first_index.emplace(batch[i].id, i);
    if (!inserted) {
      problems.push_back(where() + ": duplicate id, also at global_batch[" +
                         std::to_string(it->second) + "]");
    }
  }
  if (!total_ok) problems.push_back("global_batch: its total token count overflows int64");
  if (!problems.empty()) {
    std::string message = "invalid schedule input: ";
    for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    return InvalidArgumentError(message);
  }
  // Every sequence must fit the CP group as a distributed sequence.
  const int64_t bucket = options.bucket_size_tokens;
  const int cp = options.topology.cp;
  std::string too_long;
  for (const Sequence& s : batch) {
    if (FitsCpGroup(s.length, cp, bucket)) continue;
    too_long += std::string(too_long.empty() ? "" : "; ") + "sequence id " + std::to_string(s.id) +
                " has " + FitProblem(s.length, cp, bucket);
  }
  if (!too_long.empty()) return FailedPreconditionError(too_long);
  return OkStatus();
}

// Pads every DP rank to the same micro-batch count and fills derived fields.
void Finish(Plan& plan, const CostModel& cost) {
  size_t most = 0;
  for (const DpRankPlan& r : plan.ranks) most = std::max(most, r.micro_batches.size());
  for (size_t d = 0; d < plan.ranks.size(); ++d) {
    auto& mbs = plan.ranks[d].micro_batches;
    while (mbs.size() < most) {
      MicroBatch mb;
      mb.dp_rank = static_cast<int>(d);
      mb.index = static_cast<int>(mbs.size());
      mbs.push_back(std::move(mb));
    }
  }
  FillDerived(plan, cost);
}

std::vector<Sequence> SortedByLength(std::vector<Sequence> batch) {
  std::stable_sort(batch.begin(), batch.end(), [](const Sequence& a, const Sequence& b) {
    return a.length != b.length ? a.length < b.length : a.id < b.id;
  });
  return batch;
}

// cp-all and sorted: contiguous DP split of `ordered`, packed in order.
void ContiguousPacked(const std::vector<Sequence>& ordered, Plan& plan) {
  const SequenceGroups parts = ContiguousSplit(ordered, plan.topology.dp);
  for (int d = 0; d < plan.topology.dp; ++d) {
    plan.ranks[d].micro_batches =
        AllDistributed(PackInOrder(parts[d], plan.topology.cp, plan.bucket_size_tokens), d);
  }
}

void BalancedCp(const std::vector<Sequence>& batch, const CostModel& cost, Plan& plan) {
  std::vector<double> weights;
  for (const Sequence& s : batch) weights.push_back(cost.FlopsPerSequence(s.length));
  const auto bins = LptBinPack(weights, plan.topology.dp);
  for (int d = 0; d < plan.topology.dp; ++d) {
    std::vector<Sequence> sub;
    for (int k : bins[d]) sub.push_back(batch[k]);
    plan.ranks[d].micro_batches =
        AllDistributed(PackFirstFitDecreasing(sub, plan.topology.cp, plan.bucket_size_tokens), d);
  }
}

// Runs each DP rank's costliest micro-batch last (its backward hides the
// most of the gradient all-reduce, pricing.h), the rest in order.
void CostliestLast(Plan& plan, const CostModel& cost, const HardwareProfile& hw) {
  for (DpRankPlan& rank : plan.ranks) {
    auto& mbs = rank.micro_batches;
    if (mbs.empty()) continue;
    size_t costliest = 0;
    double most = -1;
    for (size_t i = 0; i < mbs.size(); ++i) {
      const double t =
          mbs[i].empty() ? 0 : SimulateMicroBatch(mbs[i], plan.topology.cp, cost, hw).seconds;
      if (t > most) most = t, costliest = i;
    }
    std::rotate(mbs.begin() + static_cast<std::ptrdiff_t>(costliest),
                mbs.begin() + static_cast<std::ptrdiff_t>(costliest) + 1, mbs.end());
    for (size_t i = 0; i < mbs.size(); ++i) mbs[i].index = static_cast<int>(i);
  }
}

// skrull keeps a rival's whole plan (local-if-fits, dynamic-cp) when it is
// priced faster at ZeRO stage 0, so it is never estimated slower than
// either (docs/performance.md, "The 2026 competitors").
void AdoptFasterRival(const std::vector<Sequence>& batch, const CostModel& cost,
                      const HardwareProfile& hw, Plan& plan) {
  double best = SimulatePlan(plan, cost, hw).seconds;
  for (Policy rival : {Policy::kLocalIfFits, Policy::kDynamicCp}) {
    Plan other;
    other.topology = plan.topology;
    other.bucket_size_tokens = plan.bucket_size_tokens;
    other.ranks.resize(plan.ranks.size());
    if (rival == Policy::kLocalIfFits) {
      ScheduleLocalIfFits(batch, cost, other);
    } else {
      ScheduleDynamicCp(batch, cost, other);
    }
    Finish(other, cost);
    CostliestLast(other, cost, hw);
    const double seconds = SimulatePlan(other, cost, hw).seconds;
    if (seconds < best) {
      best = seconds;
      plan.ranks = std::move(other.ranks);
      plan.rollbacks = RollbackCounts{};
    }
  }
}

}  // namespace

std::vector<std::string> LayoutProblems(const Topology& topology, int64_t bucket_size_tokens) {
  std::vector<std::string> problems;
  const int64_t bucket = bucket_size_tokens;
  if (bucket <= 0) {
    problems.push_back("bucket_size_tokens: must be > 0 (got " + std::to_string(bucket) + ")");
  } else if (bucket > kMaxBucketSizeTokens) {
    problems.push_back("bucket_size_tokens: must be <= " + std::to_string(kMaxBucketSizeTokens) +
                       " (got " + std::to_string(bucket) + ")");
  }
  const int dp = topology.dp;
  const int cp = topology.cp;
  if (dp < 1) problems.push_back("topology.dp: must be >= 1 (got " + std::to_string(dp) + ")");
  if (cp < 1) problems.push_back("topology.cp: must be >= 1 (got " + std::to_string(cp) + ")");
  int64_t world = 0;
  if (dp >= 1 && cp >= 1 && !MulAtMost(dp, cp, kMaxWorldSize, &world)) {
    problems.push_back("topology: dp x cp = " + std::to_string(int64_t{dp} * cp) +
                       " ranks exceeds the maximum " + std::to_string(kMaxWorldSize));
  }
  return problems;
}

StatusOr<Policy> ParsePolicy(const std::string& name) {
  for (Policy p : kAll) {
    if (name == PolicyName(p)) return p;
  }
  return InvalidArgumentError("unknown policy \"" + name + "\"; valid policies: " + ValidNames());
}

std::vector<Policy> AllPolicies() { return std::vector<Policy>(std::begin(kAll), std::end(kAll)); }

StatusOr<Plan> Schedule(Policy policy, const std::vector<Sequence>& global_batch,
                        const ScheduleOptions& options, const CostModel& cost) {
  const auto start = std::chrono::steady_clock::now();
  SKRULL_RETURN_IF_ERROR(Validate(policy, global_batch, options));
  Plan plan;
  plan.policy = PolicyName(policy);
  plan.topology = options.topology;
  plan.bucket_size_tokens = options.bucket_size_tokens;
  plan.ranks.resize(static_cast<size_t>(options.topology.dp));

  switch (policy) {
    case Policy::kCpAll:
      ContiguousPacked(global_batch, plan);
      break;
    case Policy::kSorted:
      ContiguousPacked(SortedByLength(global_batch), plan);
      break;
    case Policy::kBalancedCp:
      BalancedCp(global_batch, cost, plan);
      break;
    case Policy::kDeepSpeed:
      ScheduleDeepSpeed(global_batch, options.micro_batch_size, plan);
      break;
    case Policy::kDynamicCp:
      ScheduleDynamicCp(global_batch, cost, plan);
      break;
    case Policy::kLocalIfFits:
      ScheduleLocalIfFits(global_batch, cost, plan);
      break;
    case Policy::kSkrull:
    case Policy::kSkrullPaper:
    case Policy::kRoundRobin: {
      static const HardwareProfile kDefaultHardware = H100Profile();
      GdsOptions gds;
      gds.topology = options.topology;
      gds.bucket_size_tokens = options.bucket_size_tokens;
      gds.rule = policy == Policy::kRoundRobin ? DacpRule::kRoundRobin : DacpRule::kComputeBalanced;
      gds.cost_aware = policy == Policy::kSkrull;
      gds.sub_groups = gds.cost_aware && options.sub_groups;
      gds.hardware = options.hardware ? options.hardware : &kDefaultHardware;
      gds.threads = options.threads;
      GdsResult result = RunGds(global_batch, gds, cost);
      plan.ranks = std::move(result.ranks);
      plan.rollbacks = result.rollbacks;
      if (policy == Policy::kSkrull && options.adopt_rivals &&
          global_batch.size() < kMaxRivalSequences) {
        Finish(plan, cost);
        AdoptFasterRival(global_batch, cost, *gds.hardware, plan);
      }
      break;
    }
  }
  Finish(plan, cost);
  plan.schedule_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace skrull::scheduler
