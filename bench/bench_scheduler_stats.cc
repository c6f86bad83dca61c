// bench_scheduler_stats: the policy comparison with statistics. For each of
// the paper's settings (bench/paper_settings.h) and each of --seeds seeds it
// samples a fresh dataset from the benchmark length distributions, draws
// --steps global batches and schedules, verifies (VerifyPlan; abort on a
// violation) and prices (SimulatePlan at ZeRO stage 0; deepspeed at ZeRO-2,
// PricingZeroStage) every policy on each. Per setting it prints:
//   - each policy's mean iteration time with a 95% confidence interval over
//     the seeds' means (Student t, seeds - 1 degrees of freedom);
//   - skrull against the best baseline (the fastest other policy on the
//     mean over all seeds): the ratio with its 95% interval over the seeds'
//     ratios, and the fraction of steps where skrull is not slower;
//   - skrull over the reachable bound (ReachableBoundSeconds, simulator.h)
//     with its interval, and the worst step;
//   - Schedule()'s CPU time (calling thread) per global batch, p50 and max over every
//     repetition (steps x seeds), for skrull and the best baseline.
// Times are simulated (cost model + hardware profile), not measured on GPUs.
//
//   bench_scheduler_stats [--steps N] [--seeds S] [--dataset-size N]
//                         [--only MODEL/DATASET]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "bench/paper_settings.h"
#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/model_config.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::bench {
namespace {

using scheduler::Policy;

struct Flags {
  int steps = 200;
  int seeds = 5;
  int64_t dataset_size = 100000;
  std::string only;
};

// Two-sided 95% Student t quantile for `df` degrees of freedom (df >= 1).
double T95(int df) {
  static const double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131};
  if (df <= 15) return kTable[df - 1];
  return df <= 30 ? 2.042 : 1.960;
}

struct Interval {
  double mean = 0, half = 0;  // mean +- half (95%); half 0 with one sample
};

Interval MeanInterval(const std::vector<double>& v) {
  Interval r;
  for (double x : v) r.mean += x;
  r.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  r.half = T95(static_cast<int>(v.size()) - 1) * sd / std::sqrt(static_cast<double>(v.size()));
  return r;
}

std::string Show(const Interval& i, const char* format) {
  return Fmt(format, i.mean) + " +- " + Fmt(format, i.half);
}

// "p50 / max" of `us`.
std::string P50Max(const std::vector<double>& us) {
  return Fmt("%.0f", Percentile(us, 50)) + " / " +
         Fmt("%.0f", *std::max_element(us.begin(), us.end()));
}

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), microseconds: on
// a shared machine steadier than the wall clock, which counts descheduling.
double ThreadCpuMicros() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

// skrull scheduled with ScheduleOptions::adopt_rivals = false.
constexpr const char* kSkrullOwn = "skrull (own plans only)";

// One seed's per-step record.
struct SeedRun {
  std::map<std::string, std::vector<double>> seconds;  // per policy, per step
  std::vector<double> reachable;                       // per step
};

SeedRun RunSeed(const Setting& s, uint64_t seed, const Flags& flags,
                const scheduler::CostModel& cost, const scheduler::HardwareProfile& hw,
                std::map<std::string, std::vector<double>>& schedule_micros) {
  auto sampler = Dataset(s.dataset);
  if (!sampler.ok()) {
    std::cerr << sampler.status() << "\n";
    std::abort();
  }
  const int64_t bucket = s.bucket_k * kTokensPerK;
  const std::vector<int64_t> dataset =
      Truncate(sampler->SampleMany(flags.dataset_size, seed), bucket * s.topology.cp, nullptr);
  std::mt19937_64 rng(seed + 1000);
  std::uniform_int_distribution<size_t> pick(0, dataset.size() - 1);
  scheduler::ScheduleOptions so;
  so.topology = s.topology;
  so.bucket_size_tokens = bucket;
  so.hardware = &hw;
  SeedRun run;
  for (int step = 0; step < flags.steps; ++step) {
    std::vector<scheduler::Sequence> batch(static_cast<size_t>(s.topology.dp) * s.batch_size);
    std::vector<int64_t> lengths(batch.size());
    for (size_t k = 0; k < batch.size(); ++k) {
      lengths[k] = dataset[pick(rng)];
      batch[k] = {static_cast<int64_t>(k), lengths[k]};
    }
    run.reachable.push_back(
        scheduler::ReachableBoundSeconds(lengths, s.topology, bucket, cost, hw, 0));
    for (Policy p : scheduler::AllPolicies()) {
      const double cpu_start = ThreadCpuMicros();
      auto plan = scheduler::Schedule(p, batch, so, cost);
      schedule_micros[scheduler::PolicyName(p)].push_back(ThreadCpuMicros() - cpu_start);
      const scheduler::Plan verified = VerifiedOrAbort(p, std::move(plan), batch);
      run.seconds[scheduler::PolicyName(p)].push_back(
          scheduler::SimulatePlan(verified, cost, hw, scheduler::PricingZeroStage(p, 0)).seconds);
    }
    // skrull without its rivals' plans: what adopting them buys.
    scheduler::ScheduleOptions own = so;
    own.adopt_rivals = false;
    const scheduler::Plan plan = VerifiedOrAbort(
        Policy::kSkrull, scheduler::Schedule(Policy::kSkrull, batch, own, cost), batch);
    run.seconds[kSkrullOwn].push_back(scheduler::SimulatePlan(plan, cost, hw).seconds);
  }
  return run;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// One setting's summary row (and the per-policy table printed on the way).
std::vector<std::string> RunSetting(const Setting& s, const Flags& flags) {
  const scheduler::CostModel cost = SettingCostModel(s);
  const scheduler::HardwareProfile hw = scheduler::H100Profile();
  std::map<std::string, std::vector<double>> schedule_micros;
  std::vector<SeedRun> runs;
  for (int i = 0; i < flags.seeds; ++i) {
    runs.push_back(RunSeed(s, static_cast<uint64_t>(i + 1), flags, cost, hw, schedule_micros));
  }
  // Per policy: the seeds' means; the best baseline on their mean.
  std::map<std::string, std::vector<double>> seed_means;
  for (const SeedRun& r : runs) {
    for (const auto& [name, v] : r.seconds) seed_means[name].push_back(Mean(v));
  }
  std::string best;
  for (const auto& [name, means] : seed_means) {
    if (name == "skrull" || name == kSkrullOwn) continue;
    if (best.empty() || Mean(means) < Mean(seed_means[best])) best = name;
  }
  std::vector<double> ratio, over_bound;
  int64_t not_slower = 0, steps = 0;
  double worst_over_bound = 0;
  for (const SeedRun& r : runs) {
    const auto& sk = r.seconds.at("skrull");
    const auto& bb = r.seconds.at(best);
    ratio.push_back(Mean(bb) / Mean(sk));
    over_bound.push_back(Mean(sk) / Mean(r.reachable));
    for (size_t i = 0; i < sk.size(); ++i) {
      not_slower += sk[i] <= bb[i] * (1 + 1e-12);
      ++steps;
      worst_over_bound = std::max(worst_over_bound, sk[i] / r.reachable[i]);
    }
  }
  std::printf(
      "\n== %s | %s | DP=%d CP=%d | batch %d/DP rank | BucketSize %lldK | %d seeds x %d steps\n",
      s.model.c_str(), s.dataset.c_str(), s.topology.dp, s.topology.cp, s.batch_size,
      static_cast<long long>(s.bucket_k), flags.seeds, flags.steps);
  std::vector<std::vector<std::string>> rows;
  const double skrull_mean = Mean(seed_means["skrull"]);
  for (Policy p : scheduler::AllPolicies()) {
    const std::string name = scheduler::PolicyName(p);
    std::vector<double> ms = seed_means[name];
    for (double& x : ms) x *= 1e3;
    const auto& us = schedule_micros[name];
    rows.push_back({name, Show(MeanInterval(ms), "%.1f"),
                    Fmt("%.3fx", Mean(seed_means[name]) / skrull_mean), P50Max(us)});
  }
  {
    std::vector<double> ms = seed_means[kSkrullOwn];
    for (double& x : ms) x *= 1e3;
    rows.push_back({kSkrullOwn, Show(MeanInterval(ms), "%.1f"),
                    Fmt("%.3fx", Mean(seed_means[kSkrullOwn]) / skrull_mean), "-"});
  }
  std::printf("%s", FormatTable({"policy", "iter ms (95% CI over seeds)", "/ skrull",
                                 "schedule CPU us p50 / max"},
                                rows)
                        .c_str());
  const Interval r = MeanInterval(ratio);
  const Interval b = MeanInterval(over_bound);
  std::printf(
      "   best baseline %s: skrull %s faster (95%% CI over seeds), not slower on %.1f%% of %lld "
      "steps; skrull / reachable bound %s (worst step %.2fx); %lld plans verified\n",
      best.c_str(), Show(r, "%.3fx").c_str(),
      100.0 * static_cast<double>(not_slower) / static_cast<double>(steps),
      static_cast<long long>(steps), Show(b, "%.3fx").c_str(), worst_over_bound,
      static_cast<long long>(steps) * static_cast<long long>(scheduler::AllPolicies().size()));
  const auto& sk_us = schedule_micros["skrull"];
  const auto& bb_us = schedule_micros[best];
  return {s.model,
          s.dataset + (s.bimodal() ? " (bimodal)" : ""),
          best,
          Show(r, "%.3fx"),
          Fmt("%.1f%%", 100.0 * static_cast<double>(not_slower) / static_cast<double>(steps)),
          Show(b, "%.3fx"),
          Fmt("%.2fx", worst_over_bound),
          Fmt("%.3fx", Mean(seed_means[best]) / Mean(seed_means[kSkrullOwn])),
          P50Max(sk_us),
          P50Max(bb_us)};
}

}  // namespace
}  // namespace skrull::bench

int main(int argc, char** argv) {
  using namespace skrull::bench;
  Flags flags;
  CLI::App app{"bench_scheduler_stats: every policy over several seeds, with confidence intervals"};
  app.add_option("--steps", flags.steps, "global batches per seed and setting")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--seeds", flags.seeds, "datasets sampled per setting (seeds 1..S)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--dataset-size", flags.dataset_size, "lengths sampled per dataset")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 27));
  app.add_option("--only", flags.only, "run only this MODEL/DATASET setting");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help exits 0, bad flags 2
  }
  const auto start = std::chrono::steady_clock::now();
  std::printf(
      "bench_scheduler_stats: simulated (cost model + H100 profile), ZeRO stage 0 (deepspeed "
      "ZeRO-2), %d seeds x %d steps per setting, dataset size %lld; schedule times are the "
      "calling thread's CPU time\n",
      flags.seeds, flags.steps, static_cast<long long>(flags.dataset_size));
  std::vector<std::vector<std::string>> summary;
  for (const Setting& s : PaperSettings()) {
    if (!flags.only.empty() && flags.only != s.model + "/" + s.dataset) continue;
    summary.push_back(RunSetting(s, flags));
  }
  std::printf(
      "\n== summary: skrull vs the best baseline per setting, and vs the reachable bound\n");
  std::printf("%s", FormatTable({"model", "dataset", "best baseline", "skrull vs best (95% CI)",
                                 "steps not slower", "skrull / reachable (95% CI)",
                                 "worst step / reachable", "own plans only vs best",
                                 "skrull sched CPU us p50 / max", "best's sched CPU us p50 / max"},
                                summary)
                        .c_str());
  std::printf("run time %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
