// `skrull-plan bucket`: BucketSize from the memory model (memory_model.h)
// through the CostModel the scheduler and trainer use.
#include <optional>

#include <nlohmann/json.hpp>

#include "common/text_table.h"
#include "scheduler/cli/commands.h"
#include "scheduler/memory_model.h"

namespace skrull::scheduler::cli {
namespace {

// One ZeRO stage's figures.
struct StageMemory {
  int zero_stage = 0;
  StaticMemory static_memory;
  double activation_bytes_per_token = 0;
  double reserve_bytes = 0;
  int64_t bucket_size_tokens = 0;
};

StageMemory Evaluate(const ModelConfig& model, const BucketFlags& f, int stage,
                     double device_memory_bytes) {
  CostModelOptions o;
  o.zero_stage = stage;
  o.dp_for_sharding = f.topology.WorldSize();
  o.precision = f.precision;
  o.lora = f.lora;
  o.recompute = f.recompute;
  o.recompute_mlp = f.recompute_mlp;
  const CostModel cost(model, o);
  StageMemory m;
  m.zero_stage = stage;
  m.static_memory = cost.StaticMemoryBreakdown();
  m.activation_bytes_per_token = cost.ActivationBytesPerToken();
  m.reserve_bytes = o.reserve_bytes;
  m.bucket_size_tokens =
      BucketSizeTokens(cost.Memory(), device_memory_bytes, f.memory_fraction, o.reserve_bytes);
  return m;
}

// The lowest stage the trainer runs whose static memory leaves room for a token.
std::optional<StageMemory> LowestFittingStage(const ModelConfig& model, const BucketFlags& f,
                                              double device_memory_bytes) {
  for (int s = 0; s <= kMaxTrainerZeroStage; ++s) {
    StageMemory m = Evaluate(model, f, s, device_memory_bytes);
    if (m.bucket_size_tokens > 0) return m;
  }
  return std::nullopt;
}

nlohmann::ordered_json ReportJson(const BucketFlags& f, const HardwareProfile& hw,
                                  const StageMemory& m, const std::optional<StageMemory>& fit) {
  const StaticMemory& s = m.static_memory;
  nlohmann::ordered_json j;
  j["model"] = f.model;
  j["hardware"] = hw.name;
  j["dp"] = f.topology.dp;
  j["cp"] = f.topology.cp;
  j["zero_stage"] = m.zero_stage;
  j["shard_ranks"] = f.topology.WorldSize();
  j["precision"] = PrecisionName(f.precision);
  j["lora_rank"] = f.lora.rank;
  j["recompute"] = f.recompute ? "full" : (f.recompute_mlp ? "selective" : "none");
  j["trainable_parameters"] = s.trainable_parameters;
  j["static_bytes"] = {{"weights", s.weights_bytes},
                       {"gradients", s.gradient_bytes},
                       {"optimizer", s.optimizer_bytes},
                       {"total", s.total_bytes()}};
  j["activation_bytes_per_token"] = m.activation_bytes_per_token;
  j["device_memory_bytes"] = hw.device_memory_bytes;
  j["memory_fraction"] = f.memory_fraction;
  j["reserve_bytes"] = m.reserve_bytes;
  j["bucket_size_tokens"] = m.bucket_size_tokens;
  j["fits"] = m.bucket_size_tokens > 0;
  j["lowest_fitting_zero_stage"] = fit ? nlohmann::ordered_json(fit->zero_stage) : nullptr;
  return j;
}

std::string ReportText(const BucketFlags& f, const HardwareProfile& hw, const StageMemory& m) {
  const StaticMemory& s = m.static_memory;
  const double budget = hw.device_memory_bytes * f.memory_fraction - m.reserve_bytes;
  std::vector<std::vector<std::string>> rows = {
      {"static bytes per rank", FormatBytes(s.total_bytes()),
       "weights " + FormatBytes(s.weights_bytes) + ", gradients " + FormatBytes(s.gradient_bytes) +
           ", optimizer " + FormatBytes(s.optimizer_bytes)},
      {"activation bytes per token", FormatBytes(m.activation_bytes_per_token),
       f.recompute ? "full recompute" : (f.recompute_mlp ? "selective recompute" : "no recompute")},
      {"budget", FormatBytes(budget),
       FormatBytes(hw.device_memory_bytes) + " x " + Fmt("%g", f.memory_fraction) + " - " +
           FormatBytes(m.reserve_bytes) + " reserve"},
      {"bucket_size_tokens", WithCommas(m.bucket_size_tokens),
       "(budget - static) / activation bytes per token"}};
  return "bucket | model " + f.model + " | hardware " + hw.name +
         " | DP=" + std::to_string(f.topology.dp) + " x CP=" + std::to_string(f.topology.cp) +
         " | ZeRO-" + std::to_string(m.zero_stage) + " over " +
         std::to_string(f.topology.WorldSize()) + " ranks | " + PrecisionName(f.precision) +
         (f.lora.enabled() ? " | LoRA rank " + std::to_string(f.lora.rank) : "") + " | " +
         WithCommas(s.trainable_parameters) + " trainable parameters\n" +
         FormatTable({"quantity", "value", "from"}, rows);
}

Status Refusal(const BucketFlags& f, const HardwareProfile& hw, const StageMemory& m,
               const std::optional<StageMemory>& fit) {
  const double budget = hw.device_memory_bytes * f.memory_fraction - m.reserve_bytes;
  std::string message = "--zero-stage " + std::to_string(m.zero_stage) + ": static memory " +
                        FormatBytes(m.static_memory.total_bytes()) + " per rank fills the " +
                        FormatBytes(budget) + " budget of " + hw.name +
                        " (device x --memory-fraction - reserve) before any activation; ";
  if (fit) {
    return FailedPreconditionError(
        message + "--zero-stage " + std::to_string(fit->zero_stage) + " fits (static " +
        FormatBytes(fit->static_memory.total_bytes()) + ", bucket_size_tokens " +
        WithCommas(fit->bucket_size_tokens) + ")");
  }
  return FailedPreconditionError(
      message + "no ZeRO stage up to " + std::to_string(kMaxTrainerZeroStage) +
      " fits at DP x CP = " + std::to_string(f.topology.WorldSize()) +
      " ranks; add ranks, use LoRA (--lora-rank) or a device with more memory");
}

}  // namespace

Status RunBucket(const BucketFlags& flags, std::ostream& out) {
  std::vector<Status> errors;
  auto model = LoadModelConfig(flags.model);
  if (!model.ok()) errors.push_back(model.status());
  auto hw = LoadHardwareProfile(flags.hardware_path);
  if (!hw.ok()) {
    errors.push_back(hw.status());
  } else if (hw->device_memory_bytes <= 0) {
    errors.push_back(InvalidArgumentError(
        "--hardware: " + flags.hardware_path +
        ": no \"device_memory_bytes\"; add the device's total memory in bytes (nvidia-smi's "
        "total, e.g. 85520809984 for an H100 80GB)"));
  }
  if (!errors.empty()) {
    std::string message;
    for (const Status& e : errors) message += (message.empty() ? "" : "\n") + e.message();
    return Status(errors.front().code(), message);
  }
  const StageMemory m = Evaluate(*model, flags, flags.zero_stage, hw->device_memory_bytes);
  const std::optional<StageMemory> fit = LowestFittingStage(*model, flags, hw->device_memory_bytes);
  if (flags.format == OutputFormat::kJson) {
    out << ReportJson(flags, *hw, m, fit).dump(2) << "\n";
  } else {
    out << ReportText(flags, *hw, m);
  }
  if (m.bucket_size_tokens <= 0) return Refusal(flags, *hw, m, fit);
  return OkStatus();
}

}  // namespace skrull::scheduler::cli
