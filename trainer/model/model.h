// The dense Llama-family decoder (Llama, Mistral, Qwen2, Qwen3), run over
// packed token streams (one process, one device). Parameters carry Hugging
// Face tensor names and load from / save to safetensors checkpoints that
// transformers reads.
//
//   embed_tokens -> L x [x += o_proj(Attn(RoPE(q, k), v)) over
//   input_layernorm(x); x += down(silu(gate(h)) * up(h)) over
//   post_attention_layernorm(x)] -> norm -> lm_head (tied: embed_tokens)
//
// Qwen3 applies q_norm / k_norm (RMSNorm over each head's head_dim) to q and
// k before RoPE; biases follow scheduler::ModelConfig (model_config.h).
//
// Attention goes through an AttentionBackend (attention.h); every other layer
// works token by token, so a packed stream gives, per token, the same values
// and gradients as running its sequences one at a time.
//
// Precision: parameters and activations in ModelOptions::dtype; RMSNorm
// statistics, RoPE tables, attention softmax and the loss in float32.
//
// Thread safety: one thread drives a model at a time.
#ifndef SKRULL_TRAINER_MODEL_MODEL_H_
#define SKRULL_TRAINER_MODEL_MODEL_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "scheduler/model_config.h"
#include "trainer/model/attention.h"
#include "trainer/model/lora.h"
#include "trainer/model/packed_batch.h"
#include "trainer/model/rope.h"

namespace skrull::model {

struct ModelOptions {
  // Parameter and activation dtype: kFloat, kBFloat16 or kHalf.
  c10::ScalarType dtype = c10::kFloat;
  c10::Device device = c10::Device(c10::kCPU);
  // Random init (when no weights are loaded): every tensor draws from its own
  // stream derived from (seed, tensor name), so values do not depend on the
  // device, on LoRA being on, or on creation order. Linear and embedding
  // weights ~ N(0, init_std), biases 0, norm weights 1 (HF's _init_weights).
  uint64_t seed = 0;
  double init_std = 0.02;  // HF initializer_range
  // LM head + loss run over this many tokens at a time (memory: one
  // [loss_chunk_tokens, vocab] float32 block).
  int64_t loss_chunk_tokens = 2048;
  // Activation recomputation (spec.training.recompute). Values and
  // gradients are unchanged by either.
  //   full (recompute_layers): keep only each decoder layer's input for
  //     backward and re-run the layer during backward (about one extra
  //     forward of compute; activation memory per token drops from roughly a
  //     layer's intermediates times num_hidden_layers to one hidden vector
  //     per layer). The attention backend is called again for each layer
  //     during backward.
  //   selective (recompute_mlp): keep each layer's MLP input only and re-run
  //     the MLP (post-attention norm, gate, up, SwiGLU, down) in backward:
  //     the 4 x intermediate_size values per token that dominate a layer's
  //     activations are not kept; attention is not re-run.
  // recompute_layers wins when both are set.
  bool recompute_layers = false;
  bool recompute_mlp = false;
  LoraOptions lora;
};

// A parameter with its Hugging Face name (LoRA tensors:
// "<module>.lora_A.weight" / "<module>.lora_B.weight", without PEFT's
// "base_model.model." prefix).
using NamedTensor = std::pair<std::string, at::Tensor>;

class DecoderModel {
 public:
  // Validates the config and options (InvalidArgument naming the field:
  // sizes, head divisibility, rope scaling, dtype, LoRA) and builds a
  // randomly initialised model on options.device. The attention backend is
  // MakeDefaultAttention(options.device).
  static StatusOr<std::unique_ptr<DecoderModel>> Create(const scheduler::ModelConfig& config,
                                                        const ModelOptions& options);
  ~DecoderModel();

  // --- execution. REQUIRES (checked; a malformed batch is a trainer bug):
  // input_ids/position_ids/targets are [T] int64 on the model's device,
  // cu_seqlens runs 0 .. T non-decreasing, ids in [0, vocab).

  // Final hidden states after the last norm: [T, hidden], model dtype.
  at::Tensor Forward(const PackedBatch& batch);
  // [T, vocab] float32 logits (materialises them all: tests, evaluation).
  at::Tensor Logits(const PackedBatch& batch);
  // Sum over targets != -100 of the token cross-entropy, float32 scalar,
  // with the LM head applied loss_chunk_tokens at a time (the [T, vocab]
  // logits never exist at once, in forward or backward). The trainer divides
  // by the global batch's label-token count.
  at::Tensor LossSum(const PackedBatch& batch);

  // --- parameters.

  // Every parameter, base then LoRA, in a stable order (layer by layer).
  std::vector<NamedTensor> NamedParameters() const;
  // The parameters the optimizer updates: LoRA A/B when LoRA is on (base
  // weights then have requires_grad false), else every base parameter.
  std::vector<NamedTensor> NamedTrainableParameters() const;
  std::vector<at::Tensor> TrainableParameters() const;
  int64_t NumParameters() const;  // base parameters (tied head counted once)
  int64_t NumTrainableParameters() const;

  // --- weights I/O (safetensors, Hugging Face names).

  // Loads base weights from a .safetensors file or a folder (sharded with
  // model.safetensors.index.json, or model.safetensors). On-disk F32 / F16 /
  // BF16 are converted to the model dtype. Every problem is reported at once
  // in one InvalidArgument naming the tensor, the file and the expected
  // shape: a missing, unexpected (ignored: "*.rotary_emb.inv_freq" buffers)
  // or mis-shaped tensor, an unsupported dtype. Corrupt or truncated files
  // fail as SafetensorsFile::Open does. The model is unchanged on error.
  Status LoadWeights(const std::string& path);
  // Writes the base weights to the safetensors file `path` (atomically;
  // metadata {"format": "pt"}) in `dtype` (default: the model dtype). Tied
  // models write no lm_head.weight, as transformers does.
  Status SaveWeights(const std::string& path,
                     std::optional<c10::ScalarType> dtype = std::nullopt) const;
  // Writes <dir>/adapter_model.safetensors (PEFT names) and
  // <dir>/adapter_config.json. FailedPrecondition when LoRA is off.
  Status SaveLoraAdapters(const std::string& dir, const std::string& base_model = "") const;
  // Loads adapters from <dir>/adapter_model.safetensors or a .safetensors
  // file, strictly (same errors as LoadWeights).
  Status LoadLoraAdapters(const std::string& path);
  // Adds each adapter into its base weight as PEFT's merge does,
  // W += (B A) * alpha / rank, and zeroes B so the model's outputs are
  // unchanged; SaveWeights then writes the merged model. FailedPrecondition
  // when LoRA is off.
  Status MergeLoraAdapters();

  // --- configuration.
  void SetAttentionBackend(std::unique_ptr<AttentionBackend> backend);
  AttentionBackend& attention_backend() { return *attention_; }
  const scheduler::ModelConfig& config() const { return config_; }
  const ModelOptions& options() const { return options_; }
  // The LM head matrix [vocab, hidden] (the embedding when tied).
  const at::Tensor& LmHeadWeight() const;

 private:
  struct Linear;
  struct Layer;
  DecoderModel(const scheduler::ModelConfig& config, const ModelOptions& options,
               RotaryEmbedding rope);
  void Build();
  void CheckBatch(const PackedBatch& batch) const;
  at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight) const;
  at::Tensor LinearForward(const Linear& linear, const at::Tensor& x) const;
  std::vector<at::Tensor> LayerParameters(const Layer& layer) const;
  at::Tensor LayerForward(const Layer& layer, int index, const at::Tensor& x, const at::Tensor& cos,
                          const at::Tensor& sin, const AttentionLayout& layout);
  at::Tensor MlpForward(const Layer& layer, const at::Tensor& x) const;
  std::vector<at::Tensor> MlpParameters(const Layer& layer) const;
  Status LoadNamed(const std::string& path, const std::vector<NamedTensor>& expected,
                   const std::string& name_prefix);

  scheduler::ModelConfig config_;
  ModelOptions options_;
  RotaryEmbedding rope_;
  std::unique_ptr<AttentionBackend> attention_;
  at::Tensor embed_tokens_;
  at::Tensor final_norm_;
  at::Tensor lm_head_;  // undefined when tied
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<NamedTensor> base_params_;
  std::vector<NamedTensor> lora_params_;
};

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_MODEL_H_
