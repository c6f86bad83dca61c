// bench_sub_group_cp: what sharding over aligned CP sub-groups buys `skrull`
// in the Skrull paper's six settings (issue 15, deliverable 4). On the same
// sampled batches it schedules `skrull` with sub-groups (the default),
// `skrull` without them (ScheduleOptions::sub_groups = false) and
// `balanced-cp`, verifies every plan (VerifyPlan) and prices it with
// SimulatePlan. Times are simulated (cost model + H100 profile).
//
//   bench_sub_group_cp [--steps N] [--seed S] [--dataset-size N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_util.h"
#include "bench/length_samplers.h"
#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/model_config.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::bench {
namespace {

struct SubGroupSetting {
  const char* model;
  const char* dataset;
  scheduler::Topology topology;
  int batch_size;    // per DP rank
  int64_t bucket_k;  // BucketSize in K tokens
};

// The paper's six settings (§5), as bench_scheduler_policies runs them.
constexpr SubGroupSetting kSixSettings[] = {
    {"qwen2.5-0.5b", "wikipedia", {4, 8}, 64, 26}, {"qwen2.5-0.5b", "lmsyschat1m", {4, 8}, 64, 26},
    {"qwen2.5-0.5b", "chatqa2", {4, 8}, 64, 26},   {"qwen2.5-7b", "wikipedia", {4, 8}, 64, 13},
    {"qwen2.5-7b", "lmsyschat1m", {4, 8}, 64, 13}, {"qwen2.5-7b", "chatqa2", {2, 16}, 40, 13},
};

struct Times {
  double with_sub_groups = 0, without = 0, balanced_cp = 0;  // mean seconds
  double sub_group_sequences = 0;  // fraction of distributed sequences on a sub-group
};

template <typename T>
T OrDie(StatusOr<T> v, const std::string& what) {
  if (!v.ok()) {
    std::cerr << what << ": " << v.status() << "\n";
    std::abort();
  }
  return std::move(*v);
}

double Price(scheduler::Policy policy, const std::vector<scheduler::Sequence>& batch,
             const scheduler::ScheduleOptions& options, const scheduler::CostModel& cost,
             int64_t* distributed, int64_t* on_sub_group) {
  const scheduler::Plan plan = OrDie(scheduler::Schedule(policy, batch, options, cost), "Schedule");
  const Status ok = scheduler::VerifyPlan(plan, batch);
  if (!ok.ok()) {
    std::cerr << "VerifyPlan: " << ok << "\n";
    std::abort();
  }
  for (const auto& rank : plan.ranks) {
    for (const auto& mb : rank.micro_batches) {
      for (const auto& s : mb.sequences) {
        *distributed += s.distributed() ? 1 : 0;
        *on_sub_group += s.on_sub_group(plan.topology.cp) ? 1 : 0;
      }
    }
  }
  return scheduler::SimulatePlan(plan, cost, *options.hardware).seconds;
}

Times Run(const SubGroupSetting& s, int steps, uint64_t seed, int64_t dataset_size) {
  scheduler::CostModelOptions cost_options;
  cost_options.dp_for_sharding = s.topology.WorldSize();
  const scheduler::CostModel cost(OrDie(scheduler::ModelPreset(s.model), s.model), cost_options);
  const scheduler::HardwareProfile hw = scheduler::H100Profile();
  const int64_t bucket = s.bucket_k * kTokensPerK;
  int64_t truncated = 0;
  const std::vector<int64_t> dataset =
      Truncate(OrDie(Dataset(s.dataset), s.dataset).SampleMany(dataset_size, seed),
               bucket * s.topology.cp, &truncated);
  std::mt19937_64 rng(seed + 1000);
  std::uniform_int_distribution<size_t> pick(0, dataset.size() - 1);
  scheduler::ScheduleOptions so;
  so.topology = s.topology;
  so.bucket_size_tokens = bucket;
  so.hardware = &hw;
  scheduler::ScheduleOptions without = so;
  without.sub_groups = false;
  Times t;
  int64_t distributed = 0, on_sub_group = 0, unused = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<scheduler::Sequence> batch(static_cast<size_t>(s.topology.dp) * s.batch_size);
    for (size_t k = 0; k < batch.size(); ++k)
      batch[k] = {static_cast<int64_t>(k), dataset[pick(rng)]};
    t.with_sub_groups +=
        Price(scheduler::Policy::kSkrull, batch, so, cost, &distributed, &on_sub_group) / steps;
    t.without += Price(scheduler::Policy::kSkrull, batch, without, cost, &unused, &unused) / steps;
    t.balanced_cp +=
        Price(scheduler::Policy::kBalancedCp, batch, so, cost, &unused, &unused) / steps;
  }
  t.sub_group_sequences =
      distributed > 0 ? static_cast<double>(on_sub_group) / static_cast<double>(distributed) : 0;
  return t;
}

}  // namespace
}  // namespace skrull::bench

int main(int argc, char** argv) {
  using namespace skrull::bench;
  int steps = 30;
  uint64_t seed = 1;
  int64_t dataset_size = 100000;
  CLI::App app{"Simulated gain of sub-group CP for skrull in the paper's six settings"};
  app.add_option("--steps", steps, "global batches per setting")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "sampling seed");
  app.add_option("--dataset-size", dataset_size, "sampled dataset size")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::vector<std::vector<std::string>> rows;
  double sum_vs_without = 0, sum_vs_balanced = 0, worst = 1e9;
  for (const SubGroupSetting& s : kSixSettings) {
    const Times t = Run(s, steps, seed, dataset_size);
    const double vs_without = t.without / t.with_sub_groups;
    const double vs_balanced = t.balanced_cp / t.with_sub_groups;
    sum_vs_without += vs_without;
    sum_vs_balanced += vs_balanced;
    worst = std::min(worst, vs_without);
    rows.push_back({std::string(s.model) + " " + s.dataset,
                    "DP" + std::to_string(s.topology.dp) + " CP" + std::to_string(s.topology.cp),
                    Fmt("%.1f", t.with_sub_groups * 1e3), Fmt("%.1f", t.without * 1e3),
                    Fmt("%.1f", t.balanced_cp * 1e3), Fmt("%.3fx", vs_without),
                    Fmt("%.3fx", vs_balanced), Fmt("%.0f%%", 100 * t.sub_group_sequences)});
  }
  std::cout << FormatTable({"setting", "layout", "skrull ms", "no sub-groups ms", "balanced-cp ms",
                            "vs no sub-groups", "vs balanced-cp", "dist. seqs on sub-groups"},
                           rows);
  const double n = static_cast<double>(std::size(kSixSettings));
  std::printf(
      "mean over the six: skrull vs skrull without sub-groups %.3fx (worst %.3fx), "
      "vs balanced-cp %.3fx; %d steps, seed %llu\n",
      sum_vs_without / n, worst, sum_vs_balanced / n, steps, static_cast<unsigned long long>(seed));
  return 0;
}
