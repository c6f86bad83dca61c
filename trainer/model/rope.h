// Rotary position embeddings with Hugging Face's formulas
// (transformers/modeling_rope_utils.py and LlamaRotaryEmbedding):
//   inv_freq[i] = 1 / theta^(2i / head_dim), computed in float32;
//   "linear": inv_freq / factor;
//   "llama3": wavelengths above original_max_position_embeddings /
//     low_freq_factor are divided by factor, those below .../high_freq_factor
//     kept, and the band between interpolated smoothly;
//   angles = position * inv_freq (float32), emb = cat(angles, angles),
//   x' = x * cos(emb) + rotate_half(x) * sin(emb), rotate_half(x) =
//   cat(-x[D/2:], x[:D/2]); cos/sin are cast to x's dtype first, as HF does.
// Not supported (Create returns InvalidArgument): "dynamic" (HF recomputes
// its frequencies from the longest sequence in each batch, so a packed
// stream could not equal its sequences run one at a time) and "yarn".
#ifndef SKRULL_TRAINER_MODEL_ROPE_H_
#define SKRULL_TRAINER_MODEL_ROPE_H_

#include <ATen/core/Tensor.h>

#include <utility>

#include "common/status.h"
#include "scheduler/model_config.h"

namespace skrull::model {

class RotaryEmbedding {
 public:
  static StatusOr<RotaryEmbedding> Create(const scheduler::ModelConfig& config);

  // [head_dim / 2] float32 on the CPU.
  const at::Tensor& inv_freq() const { return inv_freq_; }

  // cos and sin, [T, head_dim] float32 on position_ids' device, for int64
  // positions [T].
  std::pair<at::Tensor, at::Tensor> CosSin(const at::Tensor& position_ids) const;

 private:
  at::Tensor inv_freq_;
};

// Applies the rotation to x [T, H, D] with cos/sin [T, D] (float32; cast to
// x's dtype). Differentiable.
at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_ROPE_H_
