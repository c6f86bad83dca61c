// bench_scheduler_cost: the scheduler's own cost, wall-clock microseconds per
// global batch, for every policy. Targets: skrull < 1 ms for 256 sequences
// (DP=4, CP=8) and < 100 ms for 65,536 sequences (DP=512, CP=8). Qwen2.5-0.5B,
// BucketSize 26K = 26624 tokens. Every timed plan is checked with VerifyPlan
// (outside the timed region; abort on a violation). `skrull` schedules DP
// ranks on --threads threads for batches of >= 4096 sequences (gds.h; default
// min(hardware threads, 8)); the other policies run on one.
//
//   bench_scheduler_cost [--reps-small N] [--reps-large N] [--seed S]
//                        [--case small|large] [--dataset NAME] [--policy P]
//                        [--threads T] [--no-sub-groups]
// Reports wall-clock and process-CPU percentiles (CPU summed over every
// thread): on a shared machine the CPU time is the steadier number (wall
// includes time the threads were descheduled).
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_util.h"
#include "bench/length_samplers.h"
#include "scheduler/cost_model.h"
#include "scheduler/gds.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/model_config.h"
#include "scheduler/parallel_for.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"

namespace skrull::bench {
namespace {

using scheduler::Policy;

struct Case {
  std::string name;
  scheduler::Topology topology;
  int batch_size;  // per DP rank
  int reps;
  double target_seconds;  // skrull's p99 target
};

struct Flags {
  int reps_small = 300;
  int reps_large = 12;
  uint64_t seed = 1;
  std::string only_case;       // "small" or "large"; empty = both
  std::string only_dataset;    // empty = wikipedia and chatqa2
  std::string only_policy;     // empty = all (for profiling one policy)
  int threads = 0;             // ScheduleOptions::threads; 0 = DefaultSchedulerThreads()
  bool no_sub_groups = false;  // ScheduleOptions::sub_groups = false (their cost)
};

double CpuMicros(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

// Returns true when skrull met the target (or was not run).
bool RunCase(const Case& c, const std::string& dataset_name, const Flags& flags) {
  auto model = scheduler::ModelPreset("qwen2.5-0.5b");
  scheduler::CostModelOptions cost_options;
  cost_options.dp_for_sharding = c.topology.WorldSize();
  const scheduler::CostModel cost(*model, cost_options);
  const scheduler::HardwareProfile hw = scheduler::H100Profile();
  const int64_t bucket = 26 * kTokensPerK;
  auto sampler = Dataset(dataset_name);
  if (!sampler.ok()) std::abort();
  const size_t n = static_cast<size_t>(c.topology.dp) * c.batch_size;

  // Different batches per repetition, drawn before timing.
  std::mt19937_64 rng(flags.seed);
  std::vector<std::vector<scheduler::Sequence>> batches(static_cast<size_t>(c.reps));
  for (auto& batch : batches) {
    batch.resize(n);
    for (size_t k = 0; k < n; ++k) {
      batch[k] = {static_cast<int64_t>(k),
                  std::min<int64_t>(sampler->Sample(rng), bucket * c.topology.cp)};
    }
  }
  scheduler::ScheduleOptions so;
  so.topology = c.topology;
  so.bucket_size_tokens = bucket;
  so.hardware = &hw;
  so.threads = flags.threads;
  so.sub_groups = !flags.no_sub_groups;

  // cpu: the process's CPU over all threads; caller: the calling thread's
  // own, which (each thread with a core to itself) is the critical path.
  std::map<std::string, std::vector<double>> micros, cpu_micros, caller_micros;
  std::vector<Policy> policies = scheduler::AllPolicies();
  if (!flags.only_policy.empty()) {
    policies = {*scheduler::ParsePolicy(flags.only_policy)};
    if (policies[0] != Policy::kCpAll) policies.push_back(Policy::kCpAll);  // the baseline
  }
  // One untimed warm-up per policy (first-touch allocations, caches).
  for (Policy p : policies) (void)scheduler::Schedule(p, batches[0], so, cost);
  for (int r = 0; r < c.reps; ++r) {
    for (Policy p : policies) {
      const double cpu_start = CpuMicros(CLOCK_PROCESS_CPUTIME_ID);
      const double caller_start = CpuMicros(CLOCK_THREAD_CPUTIME_ID);
      const auto start = std::chrono::steady_clock::now();
      auto plan = scheduler::Schedule(p, batches[static_cast<size_t>(r)], so, cost);
      const auto end = std::chrono::steady_clock::now();
      caller_micros[scheduler::PolicyName(p)].push_back(CpuMicros(CLOCK_THREAD_CPUTIME_ID) -
                                                        caller_start);
      cpu_micros[scheduler::PolicyName(p)].push_back(CpuMicros(CLOCK_PROCESS_CPUTIME_ID) -
                                                     cpu_start);
      VerifiedOrAbort(p, std::move(plan), batches[static_cast<size_t>(r)]);  // outside the timing
      micros[scheduler::PolicyName(p)].push_back(
          std::chrono::duration<double, std::micro>(end - start).count());
    }
  }

  const double base_p50 = Percentile(micros["cp-all"], 50);
  std::vector<std::vector<std::string>> rows;
  for (Policy p : policies) {
    const auto& v = micros[scheduler::PolicyName(p)];
    double mean = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    const double p50 = Percentile(v, 50);
    const auto& cpu = cpu_micros[scheduler::PolicyName(p)];
    rows.push_back({scheduler::PolicyName(p), Fmt("%.1f", p50), Fmt("%.1f", Percentile(v, 99)),
                    Fmt("%.1f", mean), Fmt("%.1f", Percentile(cpu, 50)),
                    Fmt("%.1f", Percentile(cpu, 99)),
                    Fmt("%.1f", Percentile(caller_micros[scheduler::PolicyName(p)], 99)),
                    Fmt("%.2fx", p50 / base_p50), Fmt("%.3f", p50 / static_cast<double>(n))});
  }
  const bool ran_skrull = micros.count("skrull") > 0;
  const double skrull_p99 = ran_skrull ? Percentile(micros["skrull"], 99) * 1e-6 : 0;
  const double skrull_cpu_p99 = ran_skrull ? Percentile(cpu_micros["skrull"], 99) * 1e-6 : 0;
  const double skrull_caller_p99 = ran_skrull ? Percentile(caller_micros["skrull"], 99) * 1e-6 : 0;
  const bool met = skrull_p99 < c.target_seconds;
  std::printf("\n== %s | %s | DP=%d CP=%d | %zu sequences/global batch | %d reps\n", c.name.c_str(),
              dataset_name.c_str(), c.topology.dp, c.topology.cp, n, c.reps);
  std::printf(
      "%s", FormatTable({"policy", "wall p50 us", "wall p99 us", "wall mean us", "cpu p50 us",
                         "cpu p99 us", "caller cpu p99 us", "wall p50 / cp-all", "wall p50 us/seq"},
                        rows)
                .c_str());
  if (ran_skrull) {
    std::printf(
        "   skrull wall p99 %.3f ms (process cpu p99 %.3f ms, calling thread's cpu p99 %.3f ms) "
        "vs target %.0f ms: %s\n",
        skrull_p99 * 1e3, skrull_cpu_p99 * 1e3, skrull_caller_p99 * 1e3, c.target_seconds * 1e3,
        met ? "MET" : "MISSED");
  }
  std::printf("   %d x %zu plans verified (VerifyPlan)\n", c.reps, policies.size());
  return !ran_skrull || met;
}

}  // namespace
}  // namespace skrull::bench

int main(int argc, char** argv) {
  using namespace skrull::bench;
  Flags flags;
  CLI::App app{"bench_scheduler_cost: Schedule() wall-clock per global batch, every policy"};
  app.add_option("--reps-small", flags.reps_small, "repetitions of the small case")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--reps-large", flags.reps_large, "repetitions of the large case")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--seed", flags.seed, "batch sampler seed");
  app.add_option("--case", flags.only_case, "run only this case (default both)")
      ->check(CLI::IsMember({"small", "large"}));
  app.add_option("--dataset", flags.only_dataset,
                 "run only this dataset (default wikipedia and chatqa2)");
  app.add_option("--threads", flags.threads,
                 "threads skrull's GDS may use on large batches (default: hardware, at most 8)")
      ->check(CLI::Range(0, skrull::scheduler::kMaxSchedulerThreads));
  app.add_flag("--no-sub-groups", flags.no_sub_groups,
               "skrull without CP sub-groups (ScheduleOptions::sub_groups), to measure their cost");
  app.add_option("--policy", flags.only_policy, "time only this policy (and cp-all, the baseline)")
      ->check(
          [](const std::string& v) {
            return skrull::scheduler::ParsePolicy(v).ok() ? "" : "unknown policy '" + v + "'";
          },
          "a policy name");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help exits 0, bad flags 2
  }
  const int threads =
      flags.threads > 0 ? flags.threads : skrull::scheduler::DefaultSchedulerThreads();
  std::printf(
      "bench_scheduler_cost: wall-clock time of Schedule() per global batch, qwen2.5-0.5b, "
      "BucketSize 26K = 26624 tokens (K = 1024); skrull on %d thread(s) for batches of >= %zu "
      "sequences, one otherwise; cpu = process CPU over all threads\n",
      threads, skrull::scheduler::kParallelMinSequences);
  const std::vector<Case> cases = {
      {"small", {4, 8}, 64, flags.reps_small, 1e-3},
      {"large", {512, 8}, 128, flags.reps_large, 100e-3},
  };
  bool all_met = true;
  for (const Case& c : cases) {
    if (!flags.only_case.empty() && flags.only_case != c.name) continue;
    for (const char* dataset : {"wikipedia", "chatqa2"}) {
      if (!flags.only_dataset.empty() && flags.only_dataset != dataset) continue;
      all_met = RunCase(c, dataset, flags) && all_met;
    }
  }
  std::printf("\n%s\n", all_met ? "all targets met" : "some targets MISSED (see above)");
  return 0;
}
