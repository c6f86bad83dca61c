// The memory model of one training rank: the one source of its formulas for
// the cost model (BucketSize), `skrull-plan bucket` and the BucketSize tuner.
//
//   memory_bytes(tokens) = static_bytes + activation_bytes_per_token * tokens
//
// is Skrull's Mem_act(S) = alpha*S + beta (arXiv 2505.19609, App. C.1) with
// the static memory added. Packing makes a rank's activation memory depend on
// the sum of its tokens only, so BucketSize is the token count at which the
// line meets the rank's budget.
//
// Static bytes per rank follow ZeRO (Rajbhandari et al., arXiv 1910.02054,
// Sec. 3.1 and Fig. 1): mixed-precision (bf16) Adam keeps 2 bytes of weights,
// 2 of gradients and K = 12 of optimizer state (fp32 master weights, Adam m
// and v) per trainable parameter; fp32 training keeps 4 + 4 + 8 (the weights
// are their own master). ZeRO stage 1 divides the optimizer state by the
// ranks it is sharded over, stage 2 the gradients too, stage 3 the weights
// too. Skrull shards over all DP x CP ranks (CP ranks hold the same
// parameters). LoRA freezes the base weights: only the adapters have
// gradients and optimizer state.
//
// Thread safety: pure functions on values.
#ifndef SKRULL_SCHEDULER_MEMORY_MODEL_H_
#define SKRULL_SCHEDULER_MEMORY_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model_config.h"

namespace skrull::scheduler {

enum class Precision { kBf16, kFp32 };
const char* PrecisionName(Precision precision);  // "bf16", "fp32"
// "bf16" or "fp32"; anything else is InvalidArgument naming both.
StatusOr<Precision> ParsePrecision(const std::string& name);

// The ZeRO stages the trainer runs (spec.training.zeroStage). The model also
// prices stage 3 (weights sharded) for comparison.
inline constexpr int kMaxTrainerZeroStage = 2;

// Bytes per trainable parameter of each kind of static state (see above).
struct StateBytesPerParameter {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
};
StateBytesPerParameter BytesPerParameter(Precision precision);

// LoRA adapters: `rank` 0 = full fine-tuning. `target_modules` are Hugging
// Face projection names (q_proj k_proj v_proj o_proj gate_proj up_proj
// down_proj); unknown names add nothing.
struct LoraShape {
  int64_t rank = 0;
  std::vector<std::string> target_modules = {"q_proj", "k_proj", "v_proj", "o_proj"};
  bool enabled() const { return rank > 0; }
};
// The projection names LoRA can target, in layer order.
const std::vector<std::string>& LoraProjectionNames();
// Parameters the adapters add: rank x (in + out) per targeted projection per
// layer. 0 when LoRA is off.
int64_t LoraParameters(const ModelConfig& model, const LoraShape& lora);

struct StaticMemoryOptions {
  int zero_stage = 0;   // 0..3
  int shard_ranks = 1;  // ranks the sharded state is divided over (DP x CP)
  Precision precision = Precision::kBf16;
  LoraShape lora;
};

struct StaticMemory {
  double weights_bytes = 0;
  double gradient_bytes = 0;
  double optimizer_bytes = 0;
  int64_t trainable_parameters = 0;  // all parameters, or the adapters' under LoRA
  double total_bytes() const { return weights_bytes + gradient_bytes + optimizer_bytes; }
};
StaticMemory StaticMemoryPerRank(const ModelConfig& model, const StaticMemoryOptions& options);

struct ActivationOptions {
  Precision precision = Precision::kBf16;
  // Full activation recompute: keep each layer's input, rebuild one layer
  // at a time.
  bool recompute = false;
  // Selective recompute (spec.training.recompute: selective): each layer's
  // MLP is rebuilt in backward, so its norm output and SwiGLU intermediates
  // (h + 4f per token) are not kept. Ignored under `recompute`.
  bool recompute_mlp = false;
  // Bytes per (token x vocabulary entry) alive at the loss peak; < 0 derives
  // it from the precision: bf16 logits (2) + fp32 upcast (4) + fp32
  // log-softmax / gradient (4) = 10, fp32 4 + 4 = 8. 0 ignores the LM head's
  // peak (a chunked cross-entropy).
  double logits_bytes_per_token_per_vocab = -1;
  LoraShape lora;
};
// Activation bytes per token held on a rank: the tensors each layer saves
// for backward with FlashAttention (no S^2 term), the final norm, the
// logits peak, and LoRA's rank-wide intermediates.
double ActivationBytesPerToken(const ModelConfig& model, const ActivationOptions& options);

// The line itself.
struct MemoryLine {
  double static_bytes = 0;
  double bytes_per_token = 0;
  // Tokens within `budget_bytes`: (budget - static) / bytes_per_token, before
  // rounding; <= 0 when the static memory alone fills the budget.
  // REQUIRES: bytes_per_token > 0.
  double TokensWithin(double budget_bytes) const;
};

// A least-squares line y = slope * x + intercept: how `skrull-trainer
// --profile` and the BucketSize tuner fit measured memory (and the profile its
// collective timings) to the line above.
struct LinearFit {
  double slope = 0;
  double intercept = 0;
};
// Least squares on centred values: memory is ~1e10 bytes against ~1e4 tokens,
// so raw sums of squares would lose the slope to rounding. With one point, or
// every x equal, the line through the origin and the points' mean: slope =
// sum(y) / sum(x) (0 when sum(x) is 0), intercept 0.
// REQUIRES: xs.size() == ys.size() >= 1.
LinearFit FitLine(const std::vector<double>& xs, const std::vector<double>& ys);

// The BucketSize a rank of `device_memory_bytes` allows: floor of
// line.TokensWithin(device_memory_bytes * memory_fraction - reserve_bytes),
// 0 when nothing fits. REQUIRES: 0 < memory_fraction <= 1.
int64_t BucketSizeTokens(const MemoryLine& line, double device_memory_bytes, double memory_fraction,
                         double reserve_bytes);

// 1024-based, one decimal: 512 -> "512 B", 1.5 * 2^20 -> "1.5 MiB",
// 6.58e10 -> "61.3 GiB". Negative values keep their sign.
std::string FormatBytes(double bytes);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_MEMORY_MODEL_H_
