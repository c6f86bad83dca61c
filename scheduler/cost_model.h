// CostModel: FLOPs and memory of one training step as a function of
// sequence length, for one decoder architecture. Data plus formulas; no I/O.
//
// FLOPs (model FLOPs, the MFU numerator; multiply-add = 2 FLOPs):
//   per token, per layer, forward: 2 * (h*q + 2*h*kv + q*h + 3*h*f)
//     (Q, K, V, O projections, SwiGLU gate/up/down; q = heads*head_dim,
//      kv = kv_heads*head_dim, f = intermediate_size)
//   per token, LM head, forward: 2 * h * V
//   per sequence of S tokens, per layer, forward, causal attention:
//     2 * q * S^2 (QK^T and PV, each 2*q*S^2, halved by the causal mask)
//   training = 3 x forward (backward is 2 x forward); full recompute adds
//   one more forward (reported by HardwareFlopsPerSequence only).
//
// Memory: the line of scheduler/memory_model.h: static bytes (weights,
// gradients, optimizer state by precision, LoRA and ZeRO stage, sharded over
// `dp_for_sharding` ranks) plus activation bytes linear in the tokens a rank
// holds (FlashAttention keeps attention O(S)).
//
// Thread safety: immutable after construction; safe to share.
#ifndef SKRULL_SCHEDULER_COST_MODEL_H_
#define SKRULL_SCHEDULER_COST_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/memory_model.h"
#include "scheduler/model_config.h"

namespace skrull::scheduler {

// Element type gradients are reduced in across ranks (the DP all-reduce or
// the ZeRO reduce-scatter payload): the trainer's spec.training.gradReduceDtype.
// The reduced shard is accumulated in float32 either way; only the bytes on
// the wire change.
enum class GradReduceDtype { kFp32, kBf16 };
// "fp32" / "bf16".
const char* GradReduceDtypeName(GradReduceDtype dtype);
// Parses "fp32" or "bf16"; false (and *dtype untouched) otherwise.
bool ParseGradReduceDtype(const std::string& text, GradReduceDtype* dtype);
// 4 or 2.
double GradReduceBytesPerElement(GradReduceDtype dtype);

struct CostModelOptions {
  // Full activation recompute (checkpoint every layer's input): adds one
  // forward to the hardware FLOPs and shrinks activation memory to the layer
  // inputs plus one layer's working set.
  bool recompute = false;
  // Selective recompute: each layer's MLP is rebuilt in backward (memory:
  // ActivationOptions::recompute_mlp; the extra MLP forward is not priced in
  // FLOPs). Ignored under `recompute`.
  bool recompute_mlp = false;
  // Training precision: bf16 mixed precision or fp32 (memory_model.h).
  Precision precision = Precision::kBf16;
  LoraShape lora;  // rank 0 (the default) = full fine-tuning
  // ZeRO stage: 0 replicates everything; 1 shards optimizer state; 2 also
  // gradients; 3 also weights. Sharding is over `dp_for_sharding` ranks (all
  // DP x CP ranks in Skrull).
  int zero_stage = 2;
  int dp_for_sharding = 1;
  // Measured activation bytes per token held on a rank (0 = derive from the
  // architecture; see ActivationBytesPerToken()).
  double activation_bytes_per_token = 0;
  // Measured static bytes (0 = derive from the parameter count).
  double static_bytes = 0;
  // Bytes BucketSizeTokens() keeps free besides the safety margin: CUDA
  // context, NCCL buffers, cuBLAS workspace, allocator fragmentation.
  double reserve_bytes = 2.0 * (1 << 30);
  // Bytes per (token x vocabulary entry) alive at the loss peak; < 0 = by
  // precision (ActivationOptions). A chunked cross-entropy lowers it; 0
  // ignores the LM head's peak.
  double logits_bytes_per_token_per_vocab = -1;
};

class CostModel {
 public:
  explicit CostModel(ModelConfig model, CostModelOptions options = {});

  const ModelConfig& model() const { return model_; }
  const CostModelOptions& options() const { return options_; }

  // Model FLOPs of one sequence of `length` tokens, forward + backward
  // (3 x forward): dense layers, GQA projections, SwiGLU MLP, LM head, and
  // causal attention (S^2 / 2 score entries). Excludes recompute.
  double FlopsPerSequence(int64_t length) const;
  // FlopsPerSequence plus the recomputed forward when options.recompute.
  double HardwareFlopsPerSequence(int64_t length) const;
  // Per-rank model FLOPs of one sequence sharded over `cp` ranks with a
  // zig-zag (load-balanced causal) layout: FlopsPerSequence(length) / cp.
  // REQUIRES: cp >= 1.
  double FlopsSharded(int64_t length, int cp) const;

  // Pieces of the formula, for time models. All fwd+bwd model FLOPs (no
  // recompute); HardwareFlopsFactor() converts model to hardware FLOPs.
  double LinearFlopsPerToken() const;           // layers' GEMMs + LM head
  double AttentionFlops(int64_t length) const;  // causal, all layers
  double HardwareFlopsFactor() const { return options_.recompute ? 4.0 / 3.0 : 1.0; }

  // One dense GEMM of a forward pass: [tokens x k] x [k x n], `count` times
  // (per layer x layers, or once for the LM head).
  struct GemmShape {
    int64_t k = 0, n = 0;
    double count = 0;
  };
  // The forward's GEMMs: fused Q/K/V, O, fused gate/up, down, LM head. Their
  // FLOPs per token, x 3 for training, sum to LinearFlopsPerToken().
  const std::vector<GemmShape>& GemmShapes() const { return gemm_shapes_; }
  // Device-memory bytes per token that the element-wise work moves, forward
  // + backward (no recompute): RMSNorm, RoPE, residual adds, SwiGLU's
  // activation, and the loss over the vocabulary (float32 logits, softmax
  // and its gradient), counted from an eager implementation (cost_model.cc).
  double NonGemmBytesPerToken() const { return non_gemm_bytes_per_token_; }
  // Device-memory bytes one rank's AdamW step moves (parameters, gradients,
  // two moments; sharded over dp_for_sharding from ZeRO stage 1).
  double OptimizerStepBytes() const;

  // Bytes of K and V for `tokens` tokens in one layer (bf16), the payload a
  // CP all-gather of a distributed sequence moves.
  double KvBytesPerLayer(int64_t tokens) const;
  // Gradient bytes reduced once per step: the trainable parameters (the
  // adapters under LoRA) in `dtype`; float32 is what the trainer reduces by
  // default (trainer/train/optimizer.h, ReducibleGradients).
  double GradientBytes(GradReduceDtype dtype = GradReduceDtype::kFp32) const;

  // Weights, gradients and optimizer state on one rank, by kind.
  StaticMemory StaticMemoryBreakdown() const;
  // Their sum (or options.static_bytes when set).
  double StaticMemoryBytes() const;
  // Activation bytes per token held on a rank, including the logits/loss
  // peak (or options.activation_bytes_per_token).
  double ActivationBytesPerToken() const;
  // {StaticMemoryBytes(), ActivationBytesPerToken()}.
  MemoryLine Memory() const;
  // BucketSize = floor((device_memory_bytes * (1 - safety_margin)
  //                     - StaticMemoryBytes() - reserve_bytes) / ActivationBytesPerToken()),
  // or 0 when nothing is left (scheduler::BucketSizeTokens).
  // REQUIRES: 0 <= safety_margin < 1.
  int64_t BucketSizeTokens(double device_memory_bytes, double safety_margin) const;

 private:
  ModelConfig model_;
  CostModelOptions options_;
  double linear_flops_per_token_ = 0;      // cached: fwd+bwd
  double attention_flops_per_token2_ = 0;  // cached: fwd+bwd FLOPs per S^2
  std::vector<GemmShape> gemm_shapes_;
  double non_gemm_bytes_per_token_ = 0;
};

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_COST_MODEL_H_
