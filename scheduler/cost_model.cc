#include "scheduler/cost_model.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace skrull::scheduler {
namespace {

// Forward + backward = 3 forwards (backward computes input and weight grads).
constexpr double kTrainingPasses = 3.0;
constexpr double kBf16Bytes = 2.0;

// Bytes the element-wise work moves per token, forward, counted from
// transformers v5.24.0's eager Qwen2 (models/qwen2/modeling_qwen2.py) in
// bf16 with float32 upcasts; backward reads saved inputs and writes
// gradients, about twice the forward (kTrainingPasses covers both).
//   RMSNorm (lines 241-246): to(float32) 2+4, pow 4+4, mean 4, scale 4+4,
//     to(bf16) 4+2, weight multiply 2+2 = 36 bytes per element; two per layer.
//   Residual adds (lines 285, 291): read 2 x 2, write 2 = 6 per element, two.
//   RoPE (lines 97-126) on q and k: rotate_half's cat 2+2, x*cos 2+2,
//     rot*sin 2+2, add 4+2 = 18 per element.
//   SwiGLU (line 47): act(gate) 2+2, * up 4+2 = 10 per intermediate element.
constexpr double kRmsNormBytes = 36, kResidualBytes = 6, kRopeBytes = 18, kSwigluBytes = 10;
// The loss (loss/loss_utils.py lines 61 and 42: logits.float(), then
// cross_entropy): bf16 logits written 2, upcast 2+4, log_softmax 4+4; backward
// log_softmax 4+4+4, gradient scatter 4, downcast 4+2 = 38 bytes per token and
// vocabulary entry, forward and backward together.
constexpr double kLossBytesPerVocab = 38;
// AdamW step per trainable parameter (torch.optim.AdamW's update, float32
// master state): read weight, gradient, two moments 16, write weight and
// moments 12, the bf16 weight copy 2, zeroing the gradient 4.
constexpr double kOptimizerBytesPerParameter = 34;
}  // namespace

const char* GradReduceDtypeName(GradReduceDtype dtype) {
  return dtype == GradReduceDtype::kBf16 ? "bf16" : "fp32";
}

bool ParseGradReduceDtype(const std::string& text, GradReduceDtype* dtype) {
  if (text == "fp32") {
    *dtype = GradReduceDtype::kFp32;
  } else if (text == "bf16") {
    *dtype = GradReduceDtype::kBf16;
  } else {
    return false;
  }
  return true;
}

double GradReduceBytesPerElement(GradReduceDtype dtype) {
  return dtype == GradReduceDtype::kBf16 ? 2.0 : 4.0;
}

CostModel::CostModel(ModelConfig model, CostModelOptions options)
    : model_(std::move(model)), options_(options) {
  const double h = static_cast<double>(model_.hidden_size);
  const double q = static_cast<double>(model_.QDim());
  const double kv = static_cast<double>(model_.KvDim());
  const double f = static_cast<double>(model_.intermediate_size);
  const double layers = static_cast<double>(model_.num_hidden_layers);
  const double vocab = static_cast<double>(model_.vocab_size);
  // Multiply-accumulates per token: Q, K, V, O projections and SwiGLU's three GEMMs.
  const double layer_macs = h * q + 2 * h * kv + q * h + 3 * h * f;
  linear_flops_per_token_ = kTrainingPasses * 2.0 * (layers * layer_macs + h * vocab);
  // QK^T and PV are 2*q*S^2 FLOPs each; the causal mask halves both.
  attention_flops_per_token2_ = kTrainingPasses * layers * 2.0 * q;
  const int64_t hi = model_.hidden_size, qi = model_.QDim(), kvi = model_.KvDim(),
                fi = model_.intermediate_size;
  gemm_shapes_ = {{hi, qi + 2 * kvi, layers},
                  {qi, hi, layers},
                  {hi, 2 * fi, layers},
                  {fi, hi, layers},
                  {hi, model_.vocab_size, 1.0}};
  const double layer_bytes =
      2 * kRmsNormBytes * h + 2 * kResidualBytes * h + kRopeBytes * (q + kv) + kSwigluBytes * f;
  non_gemm_bytes_per_token_ = kTrainingPasses * layers * layer_bytes + kLossBytesPerVocab * vocab;
}

double CostModel::OptimizerStepBytes() const {
  const double shards = options_.zero_stage >= 1 ? std::max(1, options_.dp_for_sharding) : 1;
  return static_cast<double>(StaticMemoryBreakdown().trainable_parameters) *
         kOptimizerBytesPerParameter / shards;
}

double CostModel::LinearFlopsPerToken() const { return linear_flops_per_token_; }

double CostModel::AttentionFlops(int64_t length) const {
  const double s = static_cast<double>(length);
  return attention_flops_per_token2_ * s * s;
}

double CostModel::FlopsPerSequence(int64_t length) const {
  return linear_flops_per_token_ * static_cast<double>(length) + AttentionFlops(length);
}

double CostModel::HardwareFlopsPerSequence(int64_t length) const {
  return FlopsPerSequence(length) * HardwareFlopsFactor();
}

double CostModel::FlopsSharded(int64_t length, int cp) const {
  SKRULL_CHECK(cp >= 1) << "cp=" << cp;
  return FlopsPerSequence(length) / cp;
}

double CostModel::KvBytesPerLayer(int64_t tokens) const {
  return 2.0 * static_cast<double>(tokens) * static_cast<double>(model_.KvDim()) * kBf16Bytes;
}

double CostModel::GradientBytes(GradReduceDtype dtype) const {
  return static_cast<double>(StaticMemoryBreakdown().trainable_parameters) *
         GradReduceBytesPerElement(dtype);
}

StaticMemory CostModel::StaticMemoryBreakdown() const {
  StaticMemoryOptions o;
  o.zero_stage = options_.zero_stage;
  o.shard_ranks = options_.dp_for_sharding;
  o.precision = options_.precision;
  o.lora = options_.lora;
  return StaticMemoryPerRank(model_, o);
}

double CostModel::StaticMemoryBytes() const {
  if (options_.static_bytes > 0) return options_.static_bytes;
  return StaticMemoryBreakdown().total_bytes();
}

double CostModel::ActivationBytesPerToken() const {
  if (options_.activation_bytes_per_token > 0) return options_.activation_bytes_per_token;
  ActivationOptions o;
  o.precision = options_.precision;
  o.recompute = options_.recompute;
  o.recompute_mlp = options_.recompute_mlp;
  o.logits_bytes_per_token_per_vocab = options_.logits_bytes_per_token_per_vocab;
  o.lora = options_.lora;
  return scheduler::ActivationBytesPerToken(model_, o);
}

MemoryLine CostModel::Memory() const { return {StaticMemoryBytes(), ActivationBytesPerToken()}; }

int64_t CostModel::BucketSizeTokens(double device_memory_bytes, double safety_margin) const {
  SKRULL_CHECK(safety_margin >= 0 && safety_margin < 1) << "safety_margin=" << safety_margin;
  return scheduler::BucketSizeTokens(Memory(), device_memory_bytes, 1.0 - safety_margin,
                                     options_.reserve_bytes);
}

}  // namespace skrull::scheduler
