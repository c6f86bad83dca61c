// bench_scheduler_policies: simulated iteration time of every scheduling
// policy in the Skrull paper's settings (§5), per dataset and model.
//
// For each setting it samples a dataset from the benchmark length
// distributions (bench/length_samplers.h), truncates it to the longest
// trainable sequence (CP x BucketSize), draws `--steps` global batches and
// runs every policy on each. Every plan is checked with VerifyPlan (abort on
// a violation) and priced with SimulatePlan; Simulate() is run on the same
// batches for the lower bounds and its means are cross-checked against ours.
// Times are simulated (cost model + hardware profile), not measured on GPUs.
//
// Policies are priced at ZeRO stage 0 (the trainer's default), `deepspeed`
// at ZeRO-2 (the paper's baseline, PricingZeroStage). The paper table at the
// end reports skrull against the best baseline of each setting and against
// each hypothesis of the paper's DeepSpeed baseline (A, A-sp, C, B:
// scheduler/deepspeed_bracket.h, each priced with its own synchronisation)
// next to the paper's per-setting bars, skrull against the tight and the
// reachable bounds (simulator.h), and what CP sub-groups buy: skrull is also
// scheduled without them (ScheduleOptions::sub_groups = false) on the same
// batches, verified and priced the same way.
//
//   bench_scheduler_policies [--steps N] [--seed S] [--dataset-size N]
//                            [--only MODEL/DATASET] [--micro-batch-size N]
#include <algorithm>
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
#include "bench/bracket_pricing.h"
#include "bench/length_samplers.h"
#include "bench/paper_settings.h"
#include "scheduler/cost_model.h"
#include "scheduler/deepspeed_bracket.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/model_config.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::bench {
namespace {

using scheduler::Policy;

struct Flags {
  int steps = 30;
  uint64_t seed = 1;
  int64_t dataset_size = 100000;
  std::string only;          // "model/dataset" filter
  int micro_batch_size = 1;  // deepspeed's sequences per micro-batch
};

struct Result {
  std::map<std::string, double> mean_seconds;  // by policy name
  // Mean seconds of the slowest DP rank's micro-batches, without the
  // exposed part of the gradient all-reduce.
  std::map<std::string, double> mean_step_seconds;
  double skrull_compute_seconds = 0;  // compute on skrull's slowest DP rank
  double lower_bound_seconds = 0;
  double tight_bound_seconds = 0;
  double reachable_bound_seconds = 0;
  BracketSeconds bracket;                   // mean seconds per hypothesis (bench/bracket_pricing.h)
  double skrull_no_sub_groups_seconds = 0;  // skrull without CP sub-groups
  double sub_group_fraction = 0;            // of skrull's distributed sequences, on a sub-group
};

// Schedules and verifies one plan (abort on a failure or a violation).
scheduler::Plan VerifiedPlan(Policy p, const std::vector<scheduler::Sequence>& batch,
                             const scheduler::ScheduleOptions& so,
                             const scheduler::CostModel& cost) {
  return VerifiedOrAbort(p, scheduler::Schedule(p, batch, so, cost), batch);
}

// Where one policy's simulated time goes, summed over steps.
struct Breakdown {
  double seconds = 0;       // iteration
  double compute = 0;       // slowest DP rank: compute (local + distributed)
  double exposed_comm = 0;  // slowest DP rank: CP communication not hidden by local compute
  double all_reduce = 0;    // gradient all-reduce not hidden by the last backward
};

// Adds a skrull plan's distributed sequences, and those on a CP sub-group.
void CountSubGroups(const scheduler::Plan& plan, int64_t* distributed, int64_t* on_sub_group) {
  for (const auto& rank : plan.ranks) {
    for (const auto& mb : rank.micro_batches) {
      for (const auto& s : mb.sequences) {
        *distributed += s.distributed() ? 1 : 0;
        *on_sub_group += s.on_sub_group(plan.topology.cp) ? 1 : 0;
      }
    }
  }
}

Result RunSetting(const Setting& s, const Flags& flags) {
  const scheduler::CostModel cost = SettingCostModel(s);
  const scheduler::HardwareProfile hw = scheduler::H100Profile();
  auto sampler = Dataset(s.dataset);
  if (!sampler.ok()) {
    std::cerr << sampler.status() << "\n";
    std::abort();
  }
  const int64_t bucket = s.bucket_k * kTokensPerK;
  const int64_t max_len = bucket * s.topology.cp;
  int64_t truncated = 0;
  const std::vector<int64_t> dataset =
      Truncate(sampler->SampleMany(flags.dataset_size, flags.seed), max_len, &truncated);

  const std::vector<Policy> policies = scheduler::AllPolicies();
  scheduler::SimulationOptions sim;
  sim.topology = s.topology;
  sim.bucket_size_tokens = bucket;
  sim.batch_size = s.batch_size;
  sim.steps = flags.steps;
  sim.seed = flags.seed + 1000;
  sim.policies = policies;
  sim.micro_batch_size = flags.micro_batch_size;
  auto report = scheduler::Simulate(dataset, sim, cost, hw);
  if (!report.ok()) {
    std::cerr << "Simulate failed: " << report.status() << "\n";
    std::abort();
  }

  // Our own pass over the same batches (Simulate's sampling: mt19937_64(seed),
  // uniform index) with VerifyPlan on every plan.
  std::mt19937_64 rng(sim.seed);
  std::uniform_int_distribution<size_t> pick(0, dataset.size() - 1);
  std::map<std::string, Breakdown> totals;
  int64_t verified = 0, distributed = 0, on_sub_group = 0;
  double batch_tokens_sum = 0, no_sub_groups_seconds = 0;
  BracketSeconds bracket;
  scheduler::ScheduleOptions so;
  so.topology = s.topology;
  so.bucket_size_tokens = bucket;
  so.hardware = &hw;
  so.micro_batch_size = flags.micro_batch_size;
  for (int step = 0; step < flags.steps; ++step) {
    std::vector<scheduler::Sequence> batch(static_cast<size_t>(s.topology.dp) * s.batch_size);
    for (size_t k = 0; k < batch.size(); ++k) {
      batch[k] = {static_cast<int64_t>(k), dataset[pick(rng)]};
      batch_tokens_sum += static_cast<double>(batch[k].length);
    }
    for (Policy p : policies) {
      const scheduler::Plan plan = VerifiedPlan(p, batch, so, cost);
      ++verified;
      if (p == Policy::kSkrull) {
        CountSubGroups(plan, &distributed, &on_sub_group);
        AddBracketSeconds(batch, so, cost, hw, plan, &bracket);
      }
      const scheduler::IterationTime it =
          scheduler::SimulatePlan(plan, cost, hw, scheduler::PricingZeroStage(p, 0));
      const double slowest = it.seconds - it.exposed_all_reduce_seconds;
      Breakdown& b = totals[scheduler::PolicyName(p)];
      b.seconds += it.seconds;
      b.compute += it.compute_seconds;
      b.exposed_comm += slowest - it.compute_seconds;
      b.all_reduce += it.exposed_all_reduce_seconds;
    }
    scheduler::ScheduleOptions without = so;
    without.sub_groups = false;
    const scheduler::Plan plan = VerifiedPlan(Policy::kSkrull, batch, without, cost);
    ++verified;
    no_sub_groups_seconds += scheduler::SimulatePlan(plan, cost, hw).seconds;
  }

  Result result;
  result.lower_bound_seconds = report->lower_bound_seconds;
  result.tight_bound_seconds = report->tight_bound_seconds;
  result.reachable_bound_seconds = report->reachable_bound_seconds;
  for (auto& [name, seconds] : bracket.baseline)
    result.bracket.baseline[name] = seconds / flags.steps;
  for (auto& [name, seconds] : bracket.skrull) result.bracket.skrull[name] = seconds / flags.steps;
  result.skrull_compute_seconds = totals["skrull"].compute / flags.steps;
  result.skrull_no_sub_groups_seconds = no_sub_groups_seconds / flags.steps;
  result.sub_group_fraction =
      distributed > 0 ? static_cast<double>(on_sub_group) / static_cast<double>(distributed) : 0;
  const double cp_all = totals["cp-all"].seconds / flags.steps;
  const double balanced = totals["balanced-cp"].seconds / flags.steps;
  std::vector<std::vector<std::string>> rows;
  for (Policy p : policies) {
    const std::string name = scheduler::PolicyName(p);
    const Breakdown& b = totals[name];
    const double mean = b.seconds / flags.steps;
    const scheduler::PolicyStats& st = report->policies.at(name);
    if (std::fabs(st.mean_iteration_seconds - mean) > 1e-9 * std::max(1.0, mean)) {
      std::cerr << "cross-check FAILED: " << name << " Simulate() mean "
                << st.mean_iteration_seconds << " s vs bench " << mean << " s\n";
      std::abort();
    }
    result.mean_seconds[name] = mean;
    result.mean_step_seconds[name] = (b.seconds - b.all_reduce) / flags.steps;
    rows.push_back({name, Fmt("%.1f", mean * 1e3), Fmt("%.1f", b.compute / flags.steps * 1e3),
                    Fmt("%.1f", b.exposed_comm / flags.steps * 1e3),
                    Fmt("%.1f", b.all_reduce / flags.steps * 1e3), Fmt("%.2fx", cp_all / mean),
                    Fmt("%.2fx", balanced / mean), Fmt("%.2fx", mean / report->lower_bound_seconds),
                    Fmt("%.3f", st.flops_imbalance),
                    std::to_string(st.rollbacks_dacp) + "/" + std::to_string(st.rollbacks_gds),
                    Fmt("%.0f%%", st.peak_tokens_fraction * 100)});
  }
  std::printf(
      "\n== %s | %s | DP=%d CP=%d | batch %d/DP rank (global %d) | BucketSize %lldK = %lld "
      "tokens | %d steps\n",
      s.model.c_str(), s.dataset.c_str(), s.topology.dp, s.topology.cp, s.batch_size,
      s.topology.dp * s.batch_size, static_cast<long long>(s.bucket_k),
      static_cast<long long>(bucket), flags.steps);
  std::printf(
      "   dataset: %lld samples, mean %.0f tokens, batches' mean %.0f tokens/seq, %lld "
      "truncated to %lld tokens (CP x BucketSize)\n",
      static_cast<long long>(dataset.size()), sampler->MeanTokens(),
      batch_tokens_sum / (flags.steps * static_cast<double>(s.topology.dp) * s.batch_size),
      static_cast<long long>(truncated), static_cast<long long>(max_len));
  std::printf("%s", FormatTable({"policy", "iter ms", "compute", "exposed comm", "exposed AR",
                                 "vs cp-all", "vs balanced-cp", "/ lower bound", "imbalance",
                                 "rollbacks dacp/gds", "peak bucket"},
                                rows)
                        .c_str());
  std::printf(
      "   compute / exposed comm: ms on the slowest DP rank; exposed AR: gradient "
      "synchronisation not hidden by backward (deepspeed: ZeRO-2's per-micro-batch "
      "reduce-scatter, its waits and the parameter all-gather); lower bound %.1f ms, tight "
      "bound %.1f ms; %lld plans verified (VerifyPlan), Simulate() cross-check ok\n",
      report->lower_bound_seconds * 1e3, report->tight_bound_seconds * 1e3,
      static_cast<long long>(verified));
  return result;
}

// One setting's row of the paper table.
struct PaperRow {
  const Setting* setting;
  Result result;
};

// The fastest policy other than skrull in one setting (ZeRO stage 0;
// deepspeed at ZeRO-2).
std::string BestBaseline(const Result& r) {
  std::string best = "cp-all";
  for (const auto& [name, seconds] : r.mean_seconds) {
    if (name != "skrull" && seconds < r.mean_seconds.at(best)) best = name;
  }
  return best;
}

// skrull vs the best baseline and vs each DeepSpeed hypothesis (the same
// synchronisation on both sides) next to the paper's bars, skrull over the
// tight and reachable bounds, and skrull with CP sub-groups vs without them.
void PrintPaperTable(const std::vector<PaperRow>& rows) {
  const std::vector<scheduler::DeepSpeedHypothesis> hypotheses = scheduler::DeepSpeedBracket();
  std::vector<std::vector<std::string>> table;
  std::map<std::string, double> vs_sum;
  double paper_sum = 0, best_sum = 0, reach_sum = 0, gain_sum = 0;
  double worst_best = 0, worst_reach = 0, worst_gain = 0;
  int n = 0;
  for (const PaperRow& row : rows) {
    const Setting& s = *row.setting;
    const Result& r = row.result;
    const double skrull = r.mean_seconds.at("skrull");
    const std::string best = BestBaseline(r);
    const double vs_best = r.mean_seconds.at(best) / skrull;
    const double over_reach = skrull / r.reachable_bound_seconds;
    const double gain = r.skrull_no_sub_groups_seconds / skrull;
    const bool paper = s.paper_vs_deepspeed > 0;
    std::vector<std::string> line = {s.model, s.dataset, best, Fmt("%.3fx", vs_best)};
    for (const auto& h : hypotheses) {
      const double vs = r.bracket.baseline.at(h.name) / r.bracket.skrull.at(h.name);
      line.push_back(Fmt("%.2fx", vs));
      if (paper) vs_sum[h.name] += vs;
    }
    line.insert(line.end(), {paper ? Fmt("%.2fx", s.paper_vs_deepspeed) : std::string("-"),
                             Fmt("%.1f", r.tight_bound_seconds * 1e3),
                             Fmt("%.1f", r.reachable_bound_seconds * 1e3), Fmt("%.3fx", over_reach),
                             Fmt("%.2fx", r.skrull_compute_seconds / r.tight_bound_seconds),
                             Fmt("%.1f", r.skrull_no_sub_groups_seconds * 1e3), Fmt("%.3fx", gain),
                             Fmt("%.0f%%", r.sub_group_fraction * 100)});
    table.push_back(line);
    if (!paper) continue;
    paper_sum += s.paper_vs_deepspeed;
    best_sum += vs_best;
    reach_sum += over_reach;
    gain_sum += gain;
    worst_best = n == 0 ? vs_best : std::min(worst_best, vs_best);
    worst_reach = std::max(worst_reach, over_reach);
    worst_gain = n == 0 ? gain : std::min(worst_gain, gain);
    ++n;
  }
  std::printf(
      "\n== paper table: skrull vs the best baseline (ZeRO stage 0) and vs each hypothesis of "
      "the paper's DeepSpeed baseline (A, A-sp, C, B; both sides priced with the "
      "hypothesis's synchronisation) next to the paper's Fig. 3 bar; bounds: tight (every "
      "sequence at its best efficiency, no communication) and reachable (plus the longest "
      "sequence's path, launches and the unhidden gradient sync); sub-groups: skrull with "
      "CP sub-groups vs without them on the same batches\n");
  std::vector<std::string> header = {"model", "dataset", "best baseline", "skrull vs best"};
  for (const auto& h : hypotheses) header.push_back("vs " + h.name);
  header.insert(header.end(), {"paper", "tight bound ms", "reachable bound ms",
                               "skrull / reachable", "skrull compute / tight", "no sub-groups ms",
                               "sub-groups gain", "dist. seqs on sub-groups"});
  std::printf("%s", FormatTable(header, table).c_str());
  if (n == 0) return;
  std::printf("over the %d paper settings: skrull vs best baseline mean %.3fx (worst %.3fx); ", n,
              best_sum / n, worst_best);
  for (const auto& h : hypotheses) std::printf("vs %s %.2fx, ", h.name.c_str(), vs_sum[h.name] / n);
  std::printf(
      "paper's bars %.2fx; skrull / reachable bound mean %.3fx (worst %.3fx); sub-groups gain "
      "mean %.3fx (worst %.3fx)\n",
      paper_sum / n, reach_sum / n, worst_reach, gain_sum / n, worst_gain);
}

}  // namespace
}  // namespace skrull::bench

int main(int argc, char** argv) {
  using namespace skrull::bench;
  Flags flags;
  CLI::App app{
      "bench_scheduler_policies: simulated iteration time of every policy, paper settings"};
  app.add_option("--steps", flags.steps, "global batches per setting")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--seed", flags.seed, "sampler seed");
  app.add_option("--dataset-size", flags.dataset_size, "lengths sampled per dataset")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 27));
  app.add_option("--only", flags.only, "run only this MODEL/DATASET setting");
  app.add_option("--micro-batch-size", flags.micro_batch_size,
                 "deepspeed's sequences per micro-batch (train_micro_batch_size_per_gpu)")
      ->check(CLI::Range(1, 1 << 20));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help exits 0, bad flags 2
  }
  std::printf(
      "bench_scheduler_policies: simulated (cost model + H100 profile from published "
      "figures), K = 1024 tokens, steps %d, seed %llu, dataset size %lld, deepspeed "
      "micro-batch size %d\n",
      flags.steps, static_cast<unsigned long long>(flags.seed),
      static_cast<long long>(flags.dataset_size), flags.micro_batch_size);
  std::vector<std::vector<std::string>> summary;
  std::vector<PaperRow> paper_rows;
  double log_sum = 0, sum = 0, peak = 0, step_sum = 0, step_peak = 0;
  int n = 0;
  const std::vector<Setting> settings = PaperSettings();
  for (const Setting& s : settings) {
    if (!flags.only.empty() && flags.only != s.model + "/" + s.dataset) continue;
    Result r = RunSetting(s, flags);
    paper_rows.push_back({&s, r});
    const double skrull = r.mean_seconds["skrull"];
    const double vs_cp_all = r.mean_seconds["cp-all"] / skrull;
    const std::string best = BestBaseline(r);
    summary.push_back({s.model, s.dataset, best + " " + Fmt("%.3fx", r.mean_seconds[best] / skrull),
                       Fmt("%.2fx", vs_cp_all),
                       Fmt("%.2fx", r.mean_step_seconds["cp-all"] / r.mean_step_seconds["skrull"]),
                       Fmt("%.2fx", r.mean_seconds["sorted"] / skrull),
                       Fmt("%.2fx", r.mean_seconds["balanced-cp"] / skrull),
                       Fmt("%.2fx", r.mean_seconds["skrull-paper"] / skrull),
                       Fmt("%.2fx", skrull / r.lower_bound_seconds)});
    if (s.paper_vs_deepspeed > 0) {
      sum += vs_cp_all;
      log_sum += std::log(vs_cp_all);
      peak = std::max(peak, vs_cp_all);
      const double step_speedup = r.mean_step_seconds["cp-all"] / r.mean_step_seconds["skrull"];
      step_sum += step_speedup;
      step_peak = std::max(step_peak, step_speedup);
      ++n;
    }
  }
  std::printf(
      "\n== summary: skrull's speedup (baseline time / skrull time; higher = skrull "
      "faster); 'excl. grad AR' leaves out the gradient all-reduce's exposed part\n");
  std::printf("%s", FormatTable({"model", "dataset", "vs best baseline", "vs cp-all",
                                 "vs cp-all excl. grad AR", "vs sorted", "vs balanced-cp",
                                 "vs skrull-paper", "skrull / lower bound"},
                                summary)
                        .c_str());
  if (n > 0) {
    std::printf(
        "over the %d paper settings: skrull vs cp-all mean %.2fx (geomean %.2fx), peak "
        "%.2fx (the DeepSpeed hypotheses and the paper's bars: the paper table below)\n",
        n, sum / n, std::exp(log_sum / n), peak);
    std::printf(
        "excluding the exposed gradient all-reduce: skrull vs cp-all mean "
        "%.2fx, peak %.2fx\n",
        step_sum / n, step_peak);
  }
  PrintPaperTable(paper_rows);
  return 0;
}
