// LoRA adapters (Hu et al. 2021) in PEFT's conventions:
//   y = x W^T + b + (alpha / rank) * (x A^T) B^T,
//   A [rank, in] ~ kaiming_uniform(a = sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)),
//   B [out, rank] = 0, so a fresh adapter leaves the model unchanged.
// No dropout. Saved as adapter_model.safetensors with PEFT tensor names
// "base_model.model.<module>.lora_A.weight" / ".lora_B.weight" plus an
// adapter_config.json, which PEFT's PeftModel.from_pretrained loads.
#ifndef SKRULL_TRAINER_MODEL_LORA_H_
#define SKRULL_TRAINER_MODEL_LORA_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::model {

inline constexpr char kLoraAdapterFile[] = "adapter_model.safetensors";
inline constexpr char kLoraConfigFile[] = "adapter_config.json";
inline constexpr char kPeftPrefix[] = "base_model.model.";

struct LoraOptions {
  int64_t rank = 0;     // 0: LoRA off (full fine-tuning)
  double alpha = 16.0;  // scaling = alpha / rank
  // Projection names: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj.
  std::vector<std::string> target_modules = {"q_proj", "v_proj"};
  uint64_t seed = 0;  // A's init; each adapter draws from its own name-derived stream

  bool enabled() const { return rank > 0; }
  double scaling() const { return alpha / static_cast<double>(rank); }
};

// The projection names LoRA can target.
const std::vector<std::string>& LoraTargetableModules();

// InvalidArgument naming the field: rank < 0, alpha <= 0 with rank > 0, an
// unknown or duplicate target module, or no target with rank > 0.
Status ValidateLoraOptions(const LoraOptions& options);

// adapter_config.json text for PEFT.
std::string LoraAdapterConfigJson(const LoraOptions& options, const std::string& base_model);

// x A^T B^T * scaling (the adapter's contribution to a projection).
at::Tensor LoraDelta(const at::Tensor& x, const at::Tensor& a, const at::Tensor& b, double scaling);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_LORA_H_
