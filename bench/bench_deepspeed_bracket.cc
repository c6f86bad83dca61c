// bench_deepspeed_bracket: skrull against each named hypothesis of the
// paper's DeepSpeed baseline (scheduler/deepspeed_bracket.h: A, A-sp, C, B),
// in the paper's six settings and its Table 3 case, next to the paper's bars, and the
// gradient reduction's dtype (fp32 vs bf16) under skrull's own default
// synchronisation (ZeRO stage 0, overlapped).
//
// Per setting it samples the dataset (bench/length_samplers.h), truncates it
// to CP x BucketSize, draws `--steps` global batches, schedules skrull and
// every hypothesis's plan on each (VerifyPlan on every plan), and prices the
// baseline's plan and skrull's plan with the hypothesis's gradient
// synchronisation. Times are simulated with the built-in H100 profile
// (`--fa3` for FlashAttention-3's curves), not measured.
//
//   bench_deepspeed_bracket [--steps N] [--seed S] [--only MODEL/DATASET] [--fa3]
#include <cstdio>
#include <iostream>
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
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::bench {
namespace {

namespace sch = scheduler;

struct Totals {
  BracketSeconds bracket;
  double skrull_fp32 = 0, skrull_bf16 = 0, cp_all_fp32 = 0, cp_all_bf16 = 0;
};

Totals RunSetting(const Setting& s, int steps, uint64_t seed, const sch::HardwareProfile& hw) {
  auto sampler = Dataset(s.dataset);
  if (!sampler.ok()) {
    std::cerr << sampler.status() << "\n";
    std::exit(1);
  }
  const sch::CostModel cost = SettingCostModel(s);
  const int64_t bucket = s.bucket_k * kTokensPerK;
  int64_t truncated = 0;
  const std::vector<int64_t> dataset =
      Truncate(sampler->SampleMany(100000, seed), bucket * s.topology.cp, &truncated);
  sch::ScheduleOptions so;
  so.topology = s.topology;
  so.bucket_size_tokens = bucket;
  so.hardware = &hw;
  sch::GradientSyncOptions fp32, bf16;
  bf16.dtype = sch::GradReduceDtype::kBf16;
  std::mt19937_64 rng(seed + 1000);
  std::uniform_int_distribution<size_t> pick(0, dataset.size() - 1);
  Totals t;
  for (int step = 0; step < steps; ++step) {
    std::vector<sch::Sequence> batch(static_cast<size_t>(s.topology.dp) * s.batch_size);
    for (size_t k = 0; k < batch.size(); ++k) batch[k] = {int64_t(k), dataset[pick(rng)]};
    const sch::Plan skrull = VerifiedOrAbort(
        sch::Policy::kSkrull, sch::Schedule(sch::Policy::kSkrull, batch, so, cost), batch);
    const sch::Plan cp_all = VerifiedOrAbort(
        sch::Policy::kCpAll, sch::Schedule(sch::Policy::kCpAll, batch, so, cost), batch);
    t.skrull_fp32 += sch::SimulatePlan(skrull, cost, hw, fp32).seconds;
    t.skrull_bf16 += sch::SimulatePlan(skrull, cost, hw, bf16).seconds;
    t.cp_all_fp32 += sch::SimulatePlan(cp_all, cost, hw, fp32).seconds;
    t.cp_all_bf16 += sch::SimulatePlan(cp_all, cost, hw, bf16).seconds;
    AddBracketSeconds(batch, so, cost, hw, skrull, &t.bracket);
  }
  return t;
}

}  // namespace
}  // namespace skrull::bench

int main(int argc, char** argv) {
  using namespace skrull::bench;
  int steps = 50;
  uint64_t seed = 1;
  std::string only;
  bool fa3 = false;
  CLI::App app{"bench_deepspeed_bracket: skrull vs each DeepSpeed baseline hypothesis"};
  app.add_option("--steps", steps, "global batches per setting")->check(CLI::Range(1, 100000));
  app.add_option("--seed", seed, "sampler seed");
  app.add_option("--only", only, "run only this MODEL/DATASET setting");
  app.add_flag("--fa3", fa3, "FlashAttention-3 curves instead of FlashAttention-2");
  CLI11_PARSE(app, argc, argv);
  const skrull::scheduler::HardwareProfile hw = skrull::scheduler::H100Profile(
      fa3 ? skrull::scheduler::AttentionKernel::kFa3 : skrull::scheduler::AttentionKernel::kFa2);
  const auto bracket = skrull::scheduler::DeepSpeedBracket();
  std::printf("bench_deepspeed_bracket: simulated, profile %s, %d steps, seed %llu\n",
              hw.name.c_str(), steps, static_cast<unsigned long long>(seed));
  for (const auto& h : bracket) std::printf("  %-5s %s\n", h.name.c_str(), h.description.c_str());
  std::printf("skrull is priced with the same synchronisation as each baseline.\n\n");
  std::vector<std::string> header = {"model", "dataset", "paper"};
  for (const auto& h : bracket) {
    header.push_back(h.name + " ms");
    header.push_back("skrull ms");
    header.push_back("vs " + h.name);
  }
  std::vector<std::vector<std::string>> rows, dtype_rows;
  std::map<std::string, double> sums;
  int n = 0;
  std::vector<Setting> settings;
  for (const Setting& s : PaperSettings()) {
    if (s.paper_vs_deepspeed > 0) settings.push_back(s);  // the bars to stand beside
  }
  settings.push_back(Table3Setting());
  for (const Setting& s : settings) {
    if (!only.empty() && only != s.model + "/" + s.dataset) continue;
    const Totals t = RunSetting(s, steps, seed, hw);
    const std::string dataset = s.table3 ? s.dataset + " (Table 3, DP=1)" : s.dataset;
    std::vector<std::string> row = {s.model, dataset, Fmt("%.2fx", s.paper_vs_deepspeed)};
    for (const auto& h : bracket) {
      const double base = t.bracket.baseline.at(h.name) / steps,
                   sk = t.bracket.skrull.at(h.name) / steps;
      row.push_back(Fmt("%.1f", base * 1e3));
      row.push_back(Fmt("%.1f", sk * 1e3));
      row.push_back(Fmt("%.2fx", base / sk));
      if (!s.table3) sums[h.name] += base / sk;
    }
    if (!s.table3) {
      sums["paper"] += s.paper_vs_deepspeed;
      ++n;
    }
    rows.push_back(row);
    dtype_rows.push_back(
        {s.model, dataset, Fmt("%.1f", t.skrull_fp32 / steps * 1e3),
         Fmt("%.1f", t.skrull_bf16 / steps * 1e3), Fmt("%.2fx", t.skrull_fp32 / t.skrull_bf16),
         Fmt("%.1f", t.cp_all_fp32 / steps * 1e3), Fmt("%.1f", t.cp_all_bf16 / steps * 1e3),
         Fmt("%.2fx", t.cp_all_fp32 / t.skrull_fp32), Fmt("%.2fx", t.cp_all_bf16 / t.skrull_bf16)});
  }
  std::printf("== skrull vs each DeepSpeed hypothesis (baseline time / skrull time)\n%s",
              FormatTable(header, rows).c_str());
  if (n > 0) {
    std::printf("mean over the %d Fig. 3 settings: paper %.2fx", n, sums["paper"] / n);
    for (const auto& h : bracket) std::printf(", vs %s %.2fx", h.name.c_str(), sums[h.name] / n);
    std::printf("\n");
  }
  std::printf(
      "\n== gradient reduction dtype under ZeRO stage 0 (one all-reduce per step, overlapped)\n%s",
      FormatTable(
          {"model", "dataset", "skrull fp32 ms", "skrull bf16 ms", "bf16 gain", "cp-all fp32 ms",
           "cp-all bf16 ms", "skrull vs cp-all fp32", "skrull vs cp-all bf16"},
          dtype_rows)
          .c_str());
  return 0;
}
