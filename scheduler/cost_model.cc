#include "scheduler/cost_model.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace skrull::scheduler {
namespace {

// Forward + backward = 3 forwards (backward computes input and weight grads).
constexpr double kTrainingPasses = 3.0;
constexpr double kBf16Bytes = 2.0;
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
