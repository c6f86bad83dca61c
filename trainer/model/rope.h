// Rotary position embeddings with Hugging Face's formulas
// (transformers/modeling_rope_utils.py and Qwen3RotaryEmbedding), op for op
// in float32 so the tables equal transformers' bit for bit:
//   inv_freq[i] = 1 / theta^(2i / head_dim);
//   "linear": inv_freq / factor;
//   "llama3": wavelengths above original_max_position_embeddings /
//     low_freq_factor are divided by factor, those below .../high_freq_factor
//     kept, and the band between interpolated smoothly;
//   "yarn": interpolated (/ factor) and extrapolated frequencies blended by a
//     linear ramp over the correction range of beta_fast .. beta_slow
//     rotations in original_max_position_embeddings, and cos/sin multiplied
//     by the attention factor (0.1 ln(factor) + 1 unless given);
//   "dynamic" (NTK): a sequence of L > max_position_embeddings tokens uses
//     base' = theta * (factor * L / max_pos - (factor - 1))^(D / (D - 2)),
//     computed as transformers computes it for seq_len = L (a float32
//     tensor); shorter sequences use the plain table. Each sequence gets the
//     table of its own whole length, which is what transformers gives a
//     sequence run on its own through a freshly loaded model (its rotary
//     module otherwise caches the longest length seen so far, and a padded
//     batch shares the longest sequence's table).
//   angles = position * inv_freq (float32), emb = cat(angles, angles),
//   cos = cos(emb) * attention_factor, sin likewise,
//   x' = x * cos + rotate_half(x) * sin, rotate_half(x) =
//   cat(-x[D/2:], x[:D/2]); cos/sin are cast to x's dtype first, as HF does.
#ifndef SKRULL_TRAINER_MODEL_ROPE_H_
#define SKRULL_TRAINER_MODEL_ROPE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <utility>

#include "common/status.h"
#include "scheduler/model_config.h"

namespace skrull::model {

// Thread safety: one thread at a time (CosSin fills a cache of the table on
// the device it is asked for).
class RotaryEmbedding {
 public:
  // InvalidArgument naming the field for an odd head_dim, theta <= 0 or a
  // rope type or parameter it cannot compute.
  static StatusOr<RotaryEmbedding> Create(const scheduler::ModelConfig& config);

  // [head_dim / 2] float32 on the CPU: the table of sequences that need no
  // dynamic rescaling (every sequence unless the type is "dynamic").
  const at::Tensor& inv_freq() const { return inv_freq_; }
  // The factor cos and sin are multiplied by (yarn; 1 otherwise).
  double attention_scaling() const { return attention_scaling_; }
  // "dynamic": the table of a sequence of `length` tokens (inv_freq() when
  // length <= max_position_embeddings). Other types: inv_freq().
  at::Tensor InvFreqForLength(int64_t length) const;

  // cos and sin, [T, head_dim] float32 on position_ids' device, for int64
  // positions [T]. `sequence_lengths` ([T] int64, the whole length of the
  // sequence each token belongs to) is read only by "dynamic" and may then
  // be undefined when no sequence is longer than max_position_embeddings.
  std::pair<at::Tensor, at::Tensor> CosSin(const at::Tensor& position_ids,
                                           const at::Tensor& sequence_lengths = {}) const;

  // True when CosSin reads sequence lengths ("dynamic").
  bool NeedsSequenceLengths() const { return dynamic_; }

 private:
  // inv_freq_ on `device`: a copy kept from the first call on that device,
  // so a GPU forward does not upload the table every time.
  const at::Tensor& InvFreqOn(c10::Device device) const;

  at::Tensor inv_freq_;
  mutable at::Tensor inv_freq_on_device_;  // inv_freq_ on the last non-CPU device used
  double attention_scaling_ = 1.0;
  bool dynamic_ = false;
  double theta_ = 0;
  double factor_ = 1.0;
  int64_t max_position_embeddings_ = 0;
  int64_t dim_ = 0;
};

// Applies the rotation to x [T, H, D] with cos/sin [T, D] (float32; cast to
// x's dtype). Differentiable.
at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_ROPE_H_
