#include "trainer/model/rope.h"

#include <ATen/ATen.h>

#include <cmath>

namespace skrull::model {

StatusOr<RotaryEmbedding> RotaryEmbedding::Create(const scheduler::ModelConfig& config) {
  const int64_t dim = config.head_dim;
  if (dim <= 0 || dim % 2 != 0) {
    return InvalidArgumentError("head_dim: rotary embeddings need a positive even head_dim (got " +
                                std::to_string(dim) + ")");
  }
  if (!(config.rope_theta > 0)) {
    return InvalidArgumentError("rope_theta: must be > 0 (got " +
                                std::to_string(config.rope_theta) + ")");
  }
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  // HF: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
  at::Tensor exponent = at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                        static_cast<double>(dim);
  at::Tensor inv_freq = 1.0 / at::pow(at::scalar_tensor(config.rope_theta, f32), exponent);

  const scheduler::RopeScaling& rs = config.rope_scaling;
  const std::string& type = rs.type;
  if (type.empty() || type == "default") {
    // Plain RoPE.
  } else if (type == "linear") {
    if (!(rs.factor > 0)) {
      return InvalidArgumentError("rope_scaling.factor: must be > 0 for linear scaling (got " +
                                  std::to_string(rs.factor) + ")");
    }
    inv_freq = inv_freq / rs.factor;
  } else if (type == "llama3") {
    const double factor = rs.factor;
    const double low = rs.low_freq_factor;
    const double high = rs.high_freq_factor;
    const double old_len = static_cast<double>(rs.original_max_position_embeddings);
    if (!(factor > 0) || !(low > 0) || !(high > low) || !(old_len > 0)) {
      return InvalidArgumentError(
          "rope_scaling (llama3): need factor > 0, 0 < low_freq_factor < high_freq_factor and "
          "original_max_position_embeddings > 0");
    }
    const double low_freq_wavelen = old_len / low;
    const double high_freq_wavelen = old_len / high;
    at::Tensor wavelen = 2 * M_PI / inv_freq;
    at::Tensor scaled = at::where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq);
    at::Tensor smooth = (old_len / wavelen - low) / (high - low);
    at::Tensor smoothed = (1 - smooth) * scaled / factor + smooth * scaled;
    at::Tensor medium = at::logical_not(wavelen < high_freq_wavelen)
                            .logical_and(at::logical_not(wavelen > low_freq_wavelen));
    inv_freq = at::where(medium, smoothed, scaled);
  } else if (type == "dynamic") {
    return InvalidArgumentError(
        "rope_scaling.type 'dynamic' is not supported: Hugging Face recomputes its frequencies "
        "from the longest sequence in each batch, which breaks packing; use 'linear' or 'llama3'");
  } else {
    return InvalidArgumentError("rope_scaling.type '" + type +
                                "' is not supported (supported: default, linear, llama3)");
  }
  RotaryEmbedding rope;
  rope.inv_freq_ = inv_freq.contiguous();
  return rope;
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::CosSin(const at::Tensor& position_ids) const {
  at::Tensor inv = inv_freq_.to(position_ids.device());
  at::Tensor angles = position_ids.to(at::kFloat).unsqueeze(1) * inv.unsqueeze(0);  // [T, D/2]
  at::Tensor emb = at::cat({angles, angles}, 1);
  return {emb.cos(), emb.sin()};
}

at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor c = cos.to(x.scalar_type()).unsqueeze(1);  // [T, 1, D]
  at::Tensor s = sin.to(x.scalar_type()).unsqueeze(1);
  at::Tensor x1 = x.narrow(-1, 0, half);
  at::Tensor x2 = x.narrow(-1, half, half);
  at::Tensor rotated = at::cat({-x2, x1}, -1);
  return x * c + rotated * s;
}

}  // namespace skrull::model
