// bench_cost_model_validation: the cost model's predictions next to
// published measurements it was not calibrated on.
//
// Reads bench/data/cost_model_validation.json (each row: a configuration,
// the published figure, its unit and source; plus the list of calibration
// sources), predicts each row with the built-in H100 profile
// (scheduler/h100_profile.cc) and prints predicted, published, their ratio
// and whether it is within +-20%. Row kinds:
//   throughput  tokens/s/GPU of plain data parallelism (FSDP): `gpus` ranks,
//               `grad_accum` micro-steps of `micro_batch` sequences of
//               `seq_len` tokens, fp32 gradient reduce-scatter per
//               micro-step overlapped with backward (FSDP's default), the
//               optimizer step; FSDP's per-layer parameter all-gathers are
//               assumed hidden behind compute (prefetch) and not priced;
//   collective  microseconds of one collective of `megabytes` (2^20 bytes)
//               over `group` ranks;
//   speedup     baseline time / policy time over sampled batches of a paper
//               setting, both priced with DeepSpeed ZeRO-2's defaults
//               (deepspeed_bracket.h, hypothesis B's synchronisation).
// The targets are not checked here; --check-structure exits 1 when the data
// or the table is malformed (what the CTest checks).
//
//   bench_cost_model_validation [--data FILE] [--steps N] [--check-structure]
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_util.h"
#include "bench/length_samplers.h"
#include "scheduler/cost_model.h"
#include "scheduler/deepspeed_bracket.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/model_config.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::bench {
namespace {

using nlohmann::json;

constexpr double kTolerance = 0.20;

scheduler::ModelConfig Architecture(const json& a) {
  scheduler::ModelConfig m;
  m.model_type = "llama";
  m.hidden_size = a.at("hidden").get<int64_t>();
  m.num_hidden_layers = a.at("layers").get<int64_t>();
  m.num_attention_heads = a.at("heads").get<int64_t>();
  m.num_key_value_heads = a.at("kv_heads").get<int64_t>();
  m.head_dim = m.hidden_size / m.num_attention_heads;
  m.intermediate_size = a.at("intermediate").get<int64_t>();
  m.vocab_size = a.at("vocab").get<int64_t>();
  m.max_position_embeddings = 1 << 20;
  return m;
}

// tokens/s/GPU of one data-parallel step (header comment).
double PredictThroughput(const json& row, const scheduler::HardwareProfile& hw) {
  const int gpus = row.at("gpus").get<int>();
  const int64_t seq_len = row.at("seq_len").get<int64_t>();
  const int micro_batch = row.at("micro_batch").get<int>();
  const int grad_accum = row.at("grad_accum").get<int>();
  scheduler::CostModelOptions o;
  o.recompute = row.at("recompute").get<bool>();
  o.zero_stage = 2;
  o.dp_for_sharding = gpus;
  const scheduler::CostModel cost(Architecture(row.at("arch")), o);
  scheduler::Plan plan;
  plan.topology = {gpus, 1};
  plan.bucket_size_tokens = seq_len * micro_batch;
  plan.ranks.resize(static_cast<size_t>(gpus));
  int64_t id = 0;
  for (int d = 0; d < gpus; ++d) {
    for (int i = 0; i < grad_accum; ++i) {
      scheduler::MicroBatch mb;
      mb.dp_rank = d;
      mb.index = i;
      for (int s = 0; s < micro_batch; ++s) mb.sequences.push_back({id++, seq_len, 0});
      plan.ranks[static_cast<size_t>(d)].micro_batches.push_back(mb);
    }
  }
  scheduler::GradientSyncOptions sync;
  sync.zero_stage = 2;
  const double seconds = scheduler::SimulatePlan(plan, cost, hw, sync).seconds;
  return static_cast<double>(seq_len) * micro_batch * grad_accum / seconds;
}

double PredictCollective(const json& row, const scheduler::HardwareProfile& hw) {
  const std::string op = row.at("op").get<std::string>();
  const scheduler::CollectiveOp c = op == "all_reduce"   ? scheduler::CollectiveOp::kAllReduce
                                    : op == "all_gather" ? scheduler::CollectiveOp::kAllGather
                                                         : scheduler::CollectiveOp::kReduceScatter;
  const double bytes = row.at("megabytes").get<double>() * (1 << 20);
  return hw.CollectiveSeconds(c, bytes, row.at("group").get<int>()) * 1e6;
}

// Mean baseline time / mean policy time over `steps` sampled batches.
double PredictSpeedup(const json& row, const scheduler::HardwareProfile& hw, int steps) {
  auto model = scheduler::ModelPreset(row.at("model").get<std::string>());
  auto sampler = Dataset(row.at("dataset").get<std::string>());
  auto policy = scheduler::ParsePolicy(row.at("policy").get<std::string>());
  auto baseline = scheduler::ParsePolicy(row.at("baseline").get<std::string>());
  if (!model.ok() || !sampler.ok() || !policy.ok() || !baseline.ok()) {
    std::cerr << row.at("id") << ": unknown model, dataset or policy\n";
    std::exit(1);
  }
  const scheduler::Topology topology{row.at("dp").get<int>(), row.at("cp").get<int>()};
  const int64_t bucket = row.at("bucket_k").get<int64_t>() * kTokensPerK;
  scheduler::CostModelOptions o;
  o.dp_for_sharding = topology.WorldSize();
  const scheduler::CostModel cost(*model, o);
  int64_t truncated = 0;
  const std::vector<int64_t> dataset =
      Truncate(sampler->SampleMany(100000, 1), bucket * topology.cp, &truncated);
  scheduler::ScheduleOptions so;
  so.topology = topology;
  so.bucket_size_tokens = bucket;
  so.hardware = &hw;
  const scheduler::GradientSyncOptions sync = scheduler::DeepSpeedBracket().back().sync;
  std::mt19937_64 rng(1001);
  std::uniform_int_distribution<size_t> pick(0, dataset.size() - 1);
  double policy_seconds = 0, baseline_seconds = 0;
  const int batch = row.at("batch").get<int>() * topology.dp;
  for (int step = 0; step < steps; ++step) {
    std::vector<scheduler::Sequence> sequences(static_cast<size_t>(batch));
    for (size_t k = 0; k < sequences.size(); ++k) sequences[k] = {int64_t(k), dataset[pick(rng)]};
    for (auto [p, total] : {std::pair{*policy, &policy_seconds}, {*baseline, &baseline_seconds}}) {
      const scheduler::Plan plan =
          VerifiedOrAbort(p, scheduler::Schedule(p, sequences, so, cost), sequences);
      *total += scheduler::SimulatePlan(plan, cost, hw, sync).seconds;
    }
  }
  return baseline_seconds / policy_seconds;
}

// printf into a string (one row's description).
std::string Describe(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Describe(const char* format, ...) {
  char buffer[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

std::string Configuration(const json& row) {
  const std::string kind = row.at("kind").get<std::string>();
  if (kind == "throughput") {
    return Describe("%s S=%lld mb=%d ga=%d %dGPU%s",
                    row.at("arch").at("name").get<std::string>().c_str(),
                    static_cast<long long>(row.at("seq_len").get<int64_t>()),
                    row.at("micro_batch").get<int>(), row.at("grad_accum").get<int>(),
                    row.at("gpus").get<int>(), row.at("recompute").get<bool>() ? " AC" : "");
  }
  if (kind == "collective") {
    return Describe("%s %.0f MB over %d", row.at("op").get<std::string>().c_str(),
                    row.at("megabytes").get<double>(), row.at("group").get<int>());
  }
  return Describe("%s vs %s, %s %s DP=%d CP=%d", row.at("policy").get<std::string>().c_str(),
                  row.at("baseline").get<std::string>().c_str(),
                  row.at("model").get<std::string>().c_str(),
                  row.at("dataset").get<std::string>().c_str(), row.at("dp").get<int>(),
                  row.at("cp").get<int>());
}

// Structural problems of the data file (empty: none).
std::vector<std::string> StructureProblems(const json& data) {
  std::vector<std::string> problems;
  if (!data.contains("rows") || !data["rows"].is_array()) {
    problems.push_back("rows: must be an array of published configurations");
    return problems;
  }
  if (data["rows"].size() < 8) {
    problems.push_back("rows: need at least 8 published configurations (got " +
                       std::to_string(data["rows"].size()) + ")");
  }
  if (!data.contains("calibration_sources") || data["calibration_sources"].empty()) {
    problems.push_back("calibration_sources: must name what the profile was calibrated on");
    return problems;
  }
  for (const json& row : data["rows"]) {
    const std::string id = row.value("id", std::string("?"));
    for (const char* key : {"id", "kind", "unit", "published", "source"}) {
      if (!row.contains(key)) problems.push_back(id + ": missing '" + key + "'");
    }
    if (!row.contains("source")) continue;
    const std::string source = row["source"].get<std::string>();
    for (const json& c : data["calibration_sources"]) {
      if (source.find(c.get<std::string>()) != std::string::npos) {
        problems.push_back(id + ": source '" + source + "' is a calibration source");
      }
    }
    if (!row.contains("published") || !row["published"].is_number() ||
        !(row["published"].get<double>() > 0)) {
      problems.push_back(id + ": published must be > 0");
    }
  }
  return problems;
}

}  // namespace
}  // namespace skrull::bench

int main(int argc, char** argv) {
  using namespace skrull::bench;
  std::string data_path = "bench/data/cost_model_validation.json";
  int steps = 50;
  bool check_structure = false;
  CLI::App app{"bench_cost_model_validation: predicted vs published, not calibrated on"};
  app.add_option("--data", data_path, "validation data file (JSON)");
  app.add_option("--steps", steps, "sampled batches per speedup row")->check(CLI::Range(1, 10000));
  app.add_flag("--check-structure", check_structure,
               "exit 1 when the data or the table is malformed");
  CLI11_PARSE(app, argc, argv);
  std::ifstream in(data_path);
  if (!in) {
    std::cerr << data_path << ": cannot open (run from the repository root or pass --data)\n";
    return 1;
  }
  nlohmann::json data;
  try {
    data = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    std::cerr << data_path << ": " << e.what() << "\n";
    return 1;
  }
  const std::vector<std::string> problems = StructureProblems(data);
  for (const std::string& p : problems) std::cerr << data_path << ": " << p << "\n";
  if (!problems.empty()) return 1;

  const skrull::scheduler::HardwareProfile hw = skrull::scheduler::H100Profile();
  std::printf(
      "bench_cost_model_validation: profile %s (attention %s), data %s, %d steps per speedup "
      "row\ncalibrated on:",
      hw.name.c_str(), hw.attention_kernel.c_str(), data_path.c_str(), steps);
  for (const auto& c : data["calibration_sources"])
    std::printf(" [%s]", c.get<std::string>().c_str());
  std::printf("\n\n");
  std::vector<std::vector<std::string>> rows;
  int within = 0, bad = 0;
  std::vector<std::string> sources;
  for (const auto& row : data["rows"]) {
    const std::string kind = row.at("kind").get<std::string>();
    double predicted = 0;
    try {
      if (kind == "throughput") {
        predicted = PredictThroughput(row, hw);
      } else if (kind == "collective") {
        predicted = PredictCollective(row, hw);
      } else if (kind == "speedup") {
        predicted = PredictSpeedup(row, hw, steps);
      }
    } catch (const nlohmann::json::exception& e) {
      std::cerr << row.value("id", std::string("?")) << ": " << e.what() << "\n";
      return 1;
    }
    const double published = row.at("published").get<double>();
    const double ratio = predicted / published;
    if (!(predicted > 0) || !std::isfinite(predicted)) ++bad;
    const bool ok = std::fabs(ratio - 1) <= kTolerance;
    within += ok ? 1 : 0;
    rows.push_back({row.at("id").get<std::string>(), Configuration(row),
                    row.at("unit").get<std::string>(), Fmt("%.2f", published),
                    Fmt("%.2f", predicted), Fmt("%.2f", ratio), ok ? "yes" : "NO"});
    sources.push_back(row.at("id").get<std::string>() + ": " + row.at("source").get<std::string>() +
                      (row.contains("notes") ? "; " + row["notes"].get<std::string>() : ""));
  }
  std::printf("%s", FormatTable({"id", "configuration", "unit", "published", "predicted",
                                 "predicted/published", "within 20%"},
                                rows)
                        .c_str());
  std::printf("\n%d of %zu within +-20%%\nsources:\n", within, rows.size());
  for (const auto& s : sources) std::printf("  %s\n", s.c_str());
  if (check_structure && (bad > 0 || rows.size() < 8)) {
    std::cerr << "structure: " << bad << " rows without a finite positive prediction\n";
    return 1;
  }
  return 0;
}
