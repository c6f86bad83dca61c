#include "scheduler/cli/commands.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/text_table.h"
#include "scheduler/checked_math.h"
#include "scheduler/cli/lengths_file.h"
#include "scheduler/cli/timeline.h"
#include "scheduler/cli/timeline_svg.h"
#include "scheduler/model_config.h"
#include "scheduler/plan_json.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::scheduler::cli {
namespace {

std::string PolicyNames() {
  std::string names;
  for (Policy p : AllPolicies()) names += (names.empty() ? "" : ", ") + std::string(PolicyName(p));
  return names;
}

StatusOr<Policy> ParsePolicyFlag(const std::string& flag, const std::string& name) {
  auto policy = ParsePolicy(name);
  if (!policy.ok()) {
    return InvalidArgumentError(flag + ": unknown policy '" + name + "'; valid: " + PolicyNames());
  }
  return *policy;
}

std::vector<Sequence> ToSequences(const std::vector<int64_t>& lengths) {
  std::vector<Sequence> batch;
  batch.reserve(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    batch.push_back({static_cast<int64_t>(i), lengths[i]});
  }
  return batch;
}

Status WriteSvg(const std::string& path, const Plan& plan, const CostModel& cost,
                const HardwareProfile& hardware, const std::string& title) {
  Timeline timeline = BuildTimeline(plan, cost, hardware, title);
  Status s = WriteFileAtomically(path, RenderTimelineSvg(timeline));
  if (!s.ok()) return s.WithContext("--svg");
  return OkStatus();
}

std::string SequenceList(const std::vector<const PlacedSequence*>& seqs, size_t max_items) {
  std::string out;
  for (size_t i = 0; i < seqs.size() && i < max_items; ++i) {
    out += (i ? " " : "") + std::string("#") + std::to_string(seqs[i]->id) + "(" +
           WithCommas(seqs[i]->length) + ")";
  }
  if (seqs.size() > max_items) out += " ... +" + std::to_string(seqs.size() - max_items) + " more";
  return out.empty() ? "-" : out;
}

std::string ScheduleText(const Plan& plan, const std::string& model_name, const CostModel& cost,
                         const HardwareProfile& hw, int64_t num_sequences, int64_t total_tokens) {
  const int cp = plan.topology.cp;
  const IterationTime it = SimulatePlan(plan, cost, hw);
  std::ostringstream out;
  out << "policy " << plan.policy << " | DP=" << plan.topology.dp << " x CP=" << cp
      << " | BucketSize " << WithCommas(plan.bucket_size_tokens) << " tokens | model " << model_name
      << " | hardware " << hw.name << "\n";
  out << WithCommas(num_sequences) << " sequences, " << WithCommas(total_tokens) << " tokens; "
      << plan.NumMicroBatches() << (plan.NumMicroBatches() == 1 ? " micro-batch" : " micro-batches")
      << " per DP rank; roll-backs dacp " << plan.rollbacks.dacp << ", gds " << plan.rollbacks.gds
      << "; scheduled in " << Fmt("%.3f", plan.schedule_seconds * 1e3) << " ms\n";
  out << "simulated iteration " << Fmt("%.2f", it.seconds * 1e3) << " ms (slowest DP rank: compute "
      << Fmt("%.2f", it.compute_seconds * 1e3) << " ms, communication "
      << Fmt("%.2f", it.comm_seconds * 1e3) << " ms, of which gradient all-reduce not hidden by "
      << "backward " << Fmt("%.2f", it.exposed_all_reduce_seconds * 1e3) << " of "
      << Fmt("%.2f", it.all_reduce_seconds * 1e3) << " ms)\n";
  for (size_t d = 0; d < plan.ranks.size(); ++d) {
    out << "\nDP rank " << d << ": "
        << Fmt("%.2f", d < it.dp_rank_seconds.size() ? it.dp_rank_seconds[d] * 1e3 : 0.0)
        << " ms\n";
    for (const MicroBatch& mb : plan.ranks[d].micro_batches) {
      if (mb.empty()) {
        out << "  mb " << mb.index << ": empty (padding)\n";
        continue;
      }
      const MicroBatchTime mbt = SimulateMicroBatch(mb, cp, cost, hw);
      std::vector<const PlacedSequence*> dist;
      int64_t mb_tokens = 0;
      for (const PlacedSequence& s : mb.sequences) {
        mb_tokens += s.length;
        if (s.distributed()) dist.push_back(&s);
      }
      out << "  mb " << mb.index << ": " << mb.sequences.size() << " sequences, "
          << WithCommas(mb_tokens) << " tokens, " << Fmt("%.2f", mbt.seconds * 1e3)
          << " ms (CP comm " << Fmt("%.2f", mbt.comm_seconds * 1e3) << " ms)\n";
      out << "    distributed: " << SequenceList(dist, 10) << "\n";
      for (int j = 0; j < cp; ++j) {
        std::vector<const PlacedSequence*> local;
        for (const PlacedSequence& s : mb.sequences) {
          if (s.cp_rank == j) local.push_back(&s);
        }
        const int64_t tokens =
            j < static_cast<int>(mb.cp_rank_tokens.size()) ? mb.cp_rank_tokens[j] : 0;
        const double seconds =
            j < static_cast<int>(mbt.cp_rank_seconds.size()) ? mbt.cp_rank_seconds[j] : 0.0;
        char head[96];
        std::snprintf(head, sizeof(head), "    cp%-3d %9s tokens (%3.0f%% of bucket) %9.2f ms  ", j,
                      WithCommas(tokens).c_str(),
                      100.0 * static_cast<double>(tokens) /
                          static_cast<double>(std::max<int64_t>(1, plan.bucket_size_tokens)),
                      seconds * 1e3);
        out << head << "local: " << SequenceList(local, 8) << "\n";
      }
    }
  }
  return out.str();
}

// The first global batch Simulate() draws: indices uniform over the dataset
// from std::mt19937_64(seed), ids 0..n-1 in draw order (see simulator.cc).
std::vector<Sequence> FirstSampledBatch(const std::vector<int64_t>& dataset, int64_t n,
                                        uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, dataset.size() - 1);
  std::vector<Sequence> batch;
  batch.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) batch.push_back({i, dataset[pick(rng)]});
  return batch;
}

}  // namespace

StatusOr<ModelConfig> LoadModelConfig(const std::string& model_flag) {
  const bool ends_in_json =
      model_flag.size() > 5 && model_flag.compare(model_flag.size() - 5, 5, ".json") == 0;
  const bool looks_like_path = ends_in_json || model_flag.find('/') != std::string::npos;
  std::error_code ec;
  if (looks_like_path || std::filesystem::is_regular_file(model_flag, ec)) {
    auto text = ReadFileToString(model_flag);
    if (!text.ok()) {
      return Status(text.status().code(),
                    "--model: " + text.status().message() +
                        "; give a Hugging Face config.json path or a preset name");
    }
    auto config = ParseHfConfigJson(*text, model_flag);
    if (!config.ok()) return config.status().WithContext("--model");
    return *config;
  }
  auto config = ModelPreset(model_flag);
  if (!config.ok()) {
    return InvalidArgumentError("--model: unknown preset '" + model_flag +
                                "'; use qwen2.5-0.5b, qwen2.5-7b, tiny, or a path to a Hugging "
                                "Face config.json");
  }
  return *config;
}

StatusOr<CostModel> LoadCostModel(const std::string& model_flag, const Topology& topology) {
  CostModelOptions options;
  options.zero_stage = 2;
  options.dp_for_sharding = std::max(1, topology.WorldSize());
  auto config = LoadModelConfig(model_flag);
  if (!config.ok()) return config.status();
  return CostModel(*config, options);
}

StatusOr<HardwareProfile> LoadHardwareProfile(const std::string& path) {
  if (path.empty()) return H100Profile();
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    return Status(text.status().code(), "--hardware: " + text.status().message() +
                                            " (scheduler/profiles/h100.json is an example)");
  }
  auto profile = ParseHardwareProfileJson(*text, path);
  if (!profile.ok()) return profile.status().WithContext("--hardware");
  return *profile;
}

Status RunSchedule(const ScheduleFlags& flags, std::ostream& out) {
  const CommonFlags& c = flags.common;
  // Gather every independent input error before failing.
  std::vector<Status> errors;
  auto policy = ParsePolicyFlag("--policy", flags.policy);
  if (!policy.ok()) errors.push_back(policy.status());
  auto lengths = ReadLengthsFile(c.lengths_path);
  if (!lengths.ok()) errors.push_back(lengths.status().WithContext("--lengths"));
  auto cost = LoadCostModel(c.model, c.topology);
  if (!cost.ok()) errors.push_back(cost.status());
  auto hw = LoadHardwareProfile(c.hardware_path);
  if (!hw.ok()) errors.push_back(hw.status());
  if (!errors.empty()) {
    std::string message;
    for (const Status& e : errors) message += (message.empty() ? "" : "\n") + e.message();
    return Status(errors.front().code(), message);
  }

  const std::vector<Sequence> batch = ToSequences(*lengths);
  ScheduleOptions options;
  options.topology = c.topology;
  options.bucket_size_tokens = c.bucket_size_tokens;
  options.hardware = &*hw;
  auto plan = Schedule(*policy, batch, options, *cost);
  if (!plan.ok()) return plan.status().WithContext(c.lengths_path);
  Status verified = VerifyPlan(*plan, batch);
  if (!verified.ok()) {
    return InternalError("policy " + flags.policy +
                         " produced an invalid plan (a scheduler bug): " + verified.message());
  }

  if (c.format == OutputFormat::kJson) {
    out << PlanToJson(*plan) << "\n";
  } else {
    int64_t total = 0;
    for (int64_t l : *lengths) total += l;
    out << ScheduleText(*plan, c.model, *cost, *hw, static_cast<int64_t>(batch.size()), total);
  }
  if (!c.svg_path.empty()) {
    SKRULL_RETURN_IF_ERROR(WriteSvg(c.svg_path, *plan, *cost, *hw,
                                    "skrull-plan schedule: policy " + plan->policy + ", " +
                                        c.lengths_path + ", model " + c.model));
  }
  return OkStatus();
}

Status RunSimulate(const SimulateFlags& flags, std::ostream& out) {
  const CommonFlags& c = flags.common;
  std::vector<Status> errors;
  std::vector<Policy> policies;
  for (const std::string& name : flags.policies) {
    auto p = ParsePolicyFlag("--policies", name);
    if (!p.ok()) {
      errors.push_back(p.status());
    } else if (std::find(policies.begin(), policies.end(), *p) == policies.end()) {
      policies.push_back(*p);
    }
  }
  if (flags.policies.empty()) policies = AllPolicies();
  auto lengths = ReadLengthsFile(c.lengths_path);
  if (!lengths.ok()) errors.push_back(lengths.status().WithContext("--lengths"));
  auto cost = LoadCostModel(c.model, c.topology);
  if (!cost.ok()) errors.push_back(cost.status());
  auto hw = LoadHardwareProfile(c.hardware_path);
  if (!hw.ok()) errors.push_back(hw.status());
  if (!errors.empty()) {
    std::string message;
    for (const Status& e : errors) message += (message.empty() ? "" : "\n") + e.message();
    return Status(errors.front().code(), message);
  }
  int64_t capacity = 0;
  if (!CheckedMul(c.bucket_size_tokens, c.topology.cp, &capacity)) {
    return InvalidArgumentError("--bucket-size x --cp overflows int64; lower either");
  }
  for (size_t i = 0; i < lengths->size(); ++i) {
    if ((*lengths)[i] > capacity) {
      return FailedPreconditionError(
          c.lengths_path + ": sequence " + std::to_string(i) + " has " + WithCommas((*lengths)[i]) +
          " tokens, more than --cp x --bucket-size = " + WithCommas(capacity) +
          "; raise --cp or --bucket-size, or truncate the dataset to " + std::to_string(capacity) +
          " tokens");
    }
  }

  SimulationOptions options;
  options.topology = c.topology;
  options.bucket_size_tokens = c.bucket_size_tokens;
  options.batch_size = flags.batch_size;
  options.steps = flags.steps;
  options.seed = flags.seed;
  options.policies = policies;
  options.zero_stage = flags.zero_stage;
  options.micro_batch_size = flags.micro_batch_size;
  auto report = Simulate(*lengths, options, *cost, *hw);
  if (!report.ok()) return report.status();

  const std::string baseline = PolicyName(Policy::kCpAll);
  if (c.format == OutputFormat::kJson) {
    nlohmann::ordered_json j;
    nlohmann::ordered_json ps = nlohmann::ordered_json::object();
    for (Policy p : policies) {
      const std::string name = PolicyName(p);
      auto found = report->policies.find(name);
      if (found == report->policies.end()) continue;
      const PolicyStats& s = found->second;
      ps[name] = {{"mean_iteration_seconds", s.mean_iteration_seconds},
                  {"tokens_per_second", s.tokens_per_second},
                  {"flops_imbalance", s.flops_imbalance},
                  {"rollbacks", {{"dacp", s.rollbacks_dacp}, {"gds", s.rollbacks_gds}}},
                  {"peak_tokens_fraction", s.peak_tokens_fraction},
                  {"mean_schedule_seconds", s.mean_schedule_seconds}};
    }
    j["policies"] = ps;
    j["lower_bound_seconds"] = report->lower_bound_seconds;
    j["tight_bound_seconds"] = report->tight_bound_seconds;
    j["steps"] = report->steps;
    j["global_batch_size"] = static_cast<int64_t>(c.topology.dp) * flags.batch_size;
    out << j.dump(2) << "\n";
  } else {
    int64_t max_len = 0;
    double sum = 0;
    for (int64_t l : *lengths) {
      max_len = std::max(max_len, l);
      sum += static_cast<double>(l);
    }
    out << "simulate | DP=" << c.topology.dp << " x CP=" << c.topology.cp << " | BucketSize "
        << WithCommas(c.bucket_size_tokens) << " tokens | batch " << flags.batch_size
        << " per DP rank (global " << c.topology.dp * flags.batch_size << ") | " << report->steps
        << " steps, seed " << flags.seed << "\nmodel " << c.model << " | hardware " << hw->name
        << " | dataset " << c.lengths_path << ": "
        << WithCommas(static_cast<int64_t>(lengths->size())) << " sequences, mean "
        << Fmt("%.0f", sum / static_cast<double>(lengths->size())) << " tokens, longest "
        << WithCommas(max_len) << "\n\n";
    const PolicyStats* base = nullptr;
    auto found = report->policies.find(baseline);
    if (found != report->policies.end()) base = &found->second;
    std::vector<std::vector<std::string>> rows;
    for (Policy p : policies) {
      auto it = report->policies.find(PolicyName(p));
      if (it == report->policies.end()) continue;
      const PolicyStats& s = it->second;
      rows.push_back(
          {it->first, Fmt("%.2f", s.mean_iteration_seconds * 1e3),
           base ? Fmt("%.2fx", base->mean_iteration_seconds / s.mean_iteration_seconds) : "n/a",
           Fmt("%.2fx", s.mean_iteration_seconds / std::max(1e-12, report->lower_bound_seconds)),
           Fmt("%.0f", s.tokens_per_second), Fmt("%.3f", s.flops_imbalance),
           std::to_string(s.rollbacks_dacp) + "/" + std::to_string(s.rollbacks_gds),
           Fmt("%.0f%%", s.peak_tokens_fraction * 100),
           Fmt("%.3f", s.mean_schedule_seconds * 1e3)});
    }
    out << FormatTable({"policy", "iter ms", "vs cp-all", "/ lower bound", "tokens/s", "imbalance",
                        "rollbacks dacp/gds", "peak bucket", "sched ms"},
                       rows);
    out << "\nlower bound " << Fmt("%.2f", report->lower_bound_seconds * 1e3)
        << " ms/iteration (all FLOPs spread evenly at peak); 'vs cp-all' = cp-all time / policy "
           "time (higher is faster); tight bound "
        << Fmt("%.2f", report->tight_bound_seconds * 1e3)
        << " ms (each sequence at its best efficiency, balanced, no communication)\n";
  }

  if (!c.svg_path.empty()) {
    const Policy drawn =
        std::find(policies.begin(), policies.end(), Policy::kSkrull) != policies.end()
            ? Policy::kSkrull
            : policies.front();
    const std::vector<Sequence> batch = FirstSampledBatch(
        *lengths, static_cast<int64_t>(c.topology.dp) * flags.batch_size, flags.seed);
    ScheduleOptions so;
    so.topology = c.topology;
    so.bucket_size_tokens = c.bucket_size_tokens;
    so.hardware = &*hw;
    so.micro_batch_size = flags.micro_batch_size;
    auto plan = Schedule(drawn, batch, so, *cost);
    if (!plan.ok()) return plan.status().WithContext("--svg");
    SKRULL_RETURN_IF_ERROR(WriteSvg(c.svg_path, *plan, *cost, *hw,
                                    "skrull-plan simulate: first sampled batch, policy " +
                                        plan->policy + ", " + c.lengths_path + ", model " +
                                        c.model));
  }
  return OkStatus();
}

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto inv = ParseCommandLine(args);
  if (!inv.ok()) {
    err << "skrull-plan: " << inv.status().message() << "\n";
    return kExitUsage;
  }
  Status status;
  switch (inv->command) {
    case Command::kHelp:
      out << inv->help_text;
      return kExitOk;
    case Command::kSchedule:
      status = RunSchedule(inv->schedule, out);
      break;
    case Command::kSimulate:
      status = RunSimulate(inv->simulate, out);
      break;
    case Command::kBucket:
      status = RunBucket(inv->bucket, out);
      break;
  }
  if (status.ok()) return kExitOk;
  err << "skrull-plan: " << status.message() << "\n";
  return status.code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
}

}  // namespace skrull::scheduler::cli
