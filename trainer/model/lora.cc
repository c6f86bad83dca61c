#include "trainer/model/lora.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace skrull::model {

const std::vector<std::string>& LoraTargetableModules() {
  static const std::vector<std::string> kModules = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                    "gate_proj", "up_proj", "down_proj"};
  return kModules;
}

Status ValidateLoraOptions(const LoraOptions& options) {
  std::vector<std::string> errors;
  if (options.rank < 0) {
    errors.push_back("lora.rank: must be >= 0 (got " + std::to_string(options.rank) + ")");
  }
  if (options.rank > 0) {
    if (!(options.alpha > 0)) {
      errors.push_back("lora.alpha: must be > 0 (got " + std::to_string(options.alpha) + ")");
    }
    if (options.target_modules.empty()) {
      errors.push_back("lora.target_modules: must name at least one projection");
    }
    std::set<std::string> seen;
    const auto& ok = LoraTargetableModules();
    for (const auto& m : options.target_modules) {
      if (std::find(ok.begin(), ok.end(), m) == ok.end()) {
        errors.push_back("lora.target_modules: unknown module '" + m +
                         "' (expected q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj or "
                         "down_proj)");
      } else if (!seen.insert(m).second) {
        errors.push_back("lora.target_modules: '" + m + "' listed twice");
      }
    }
  }
  if (errors.empty()) return OkStatus();
  std::string msg = errors[0];
  for (size_t i = 1; i < errors.size(); ++i) msg += "; " + errors[i];
  return InvalidArgumentError(msg);
}

std::string LoraAdapterConfigJson(const LoraOptions& options, const std::string& base_model) {
  nlohmann::json j = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", base_model},
      {"r", options.rank},
      {"lora_alpha", options.alpha},
      {"lora_dropout", 0.0},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"target_modules", options.target_modules},
  };
  return j.dump(2) + "\n";
}

at::Tensor LoraDelta(const at::Tensor& x, const at::Tensor& a, const at::Tensor& b,
                     double scaling) {
  return at::linear(at::linear(x, a), b) * scaling;
}

}  // namespace skrull::model
