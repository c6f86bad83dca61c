#include "trainer/model/rope.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace skrull::model {
namespace {

// arange(0, dim, 2) as float32 / dim: the exponents of every RoPE table.
at::Tensor Exponents(int64_t dim) {
  return at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
         static_cast<double>(dim);
}

// transformers' get_mscale.
double MScale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// transformers' find_correction_dim.
double CorrectionDim(double rotations, double dim, double base, double max_positions) {
  return (dim * std::log(max_positions / (rotations * 2 * M_PI))) / (2 * std::log(base));
}

StatusOr<at::Tensor> Llama3(const at::Tensor& inv_freq, const scheduler::RopeScaling& rs) {
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
  return at::where(medium, smoothed, scaled);
}

// transformers' _compute_yarn_parameters: the table and the attention factor.
StatusOr<std::pair<at::Tensor, double>> Yarn(const scheduler::ModelConfig& config) {
  const scheduler::RopeScaling& rs = config.rope_scaling;
  const double factor = rs.factor;
  const double original = static_cast<double>(rs.original_max_position_embeddings);
  if (!(factor > 0) || !(original > 0)) {
    return InvalidArgumentError(
        "rope_scaling (yarn): need factor > 0 and original_max_position_embeddings > 0 (got " +
        std::to_string(factor) + " and " + std::to_string(rs.original_max_position_embeddings) +
        ")");
  }
  double attention_factor = rs.attention_factor;
  if (!(attention_factor > 0)) {
    attention_factor = rs.mscale > 0 && rs.mscale_all_dim > 0
                           ? MScale(factor, rs.mscale) / MScale(factor, rs.mscale_all_dim)
                           : MScale(factor, 1.0);
  }
  const int64_t dim = config.head_dim;
  const double base = config.rope_theta;
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor pos_freqs = at::pow(at::scalar_tensor(base, f32), Exponents(dim));
  at::Tensor extrapolation = 1.0 / pos_freqs;
  at::Tensor interpolation = 1.0 / (pos_freqs * factor);
  double low = CorrectionDim(rs.beta_fast, static_cast<double>(dim), base, original);
  double high = CorrectionDim(rs.beta_slow, static_cast<double>(dim), base, original);
  if (rs.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // HF: prevent singularity
  at::Tensor ramp = at::clamp((at::arange(dim / 2, f32) - low) / (high - low), 0, 1);
  at::Tensor extrapolation_factor = 1 - ramp;
  at::Tensor inv_freq =
      interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
  return std::make_pair(inv_freq, attention_factor);
}

}  // namespace

StatusOr<RotaryEmbedding> RotaryEmbedding::Create(const scheduler::ModelConfig& config) {
  const int64_t dim = config.head_dim;
  if (dim <= 2 || dim % 2 != 0) {
    return InvalidArgumentError("head_dim: rotary embeddings need an even head_dim > 2 (got " +
                                std::to_string(dim) + ")");
  }
  if (!(config.rope_theta > 0)) {
    return InvalidArgumentError("rope_theta: must be > 0 (got " +
                                std::to_string(config.rope_theta) + ")");
  }
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  // HF: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
  at::Tensor inv_freq = 1.0 / at::pow(at::scalar_tensor(config.rope_theta, f32), Exponents(dim));

  RotaryEmbedding rope;
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
    SKRULL_ASSIGN_OR_RETURN(inv_freq, Llama3(inv_freq, rs));
  } else if (type == "yarn") {
    SKRULL_ASSIGN_OR_RETURN(auto yarn, Yarn(config));
    inv_freq = yarn.first;
    rope.attention_scaling_ = yarn.second;
  } else if (type == "dynamic") {
    if (!(rs.factor > 0)) {
      return InvalidArgumentError("rope_scaling.factor: must be > 0 for dynamic scaling (got " +
                                  std::to_string(rs.factor) + ")");
    }
    rope.dynamic_ = true;
  } else {
    return InvalidArgumentError("rope_scaling.rope_type: \"" + type +
                                "\" is not supported (supported: default, linear, dynamic, "
                                "llama3, yarn)");
  }
  rope.inv_freq_ = inv_freq.contiguous();
  rope.theta_ = config.rope_theta;
  rope.factor_ = rs.factor;
  rope.max_position_embeddings_ = config.max_position_embeddings;
  rope.dim_ = dim;
  return rope;
}

at::Tensor RotaryEmbedding::InvFreqForLength(int64_t length) const {
  if (!dynamic_ || length <= max_position_embeddings_) return inv_freq_;
  // transformers' _compute_dynamic_ntk_parameters with seq_len a 0-dim int64
  // tensor (torch.max(position_ids) + 1): every step in float32.
  at::Tensor seq_len = at::scalar_tensor(length, at::TensorOptions().dtype(at::kLong));
  at::Tensor base = ((seq_len * factor_) / max_position_embeddings_) - (factor_ - 1);
  base = at::pow(base, static_cast<double>(dim_) / static_cast<double>(dim_ - 2)) * theta_;
  return (1.0 / at::pow(base, Exponents(dim_))).contiguous();
}

const at::Tensor& RotaryEmbedding::InvFreqOn(c10::Device device) const {
  if (device == inv_freq_.device()) return inv_freq_;
  if (!inv_freq_on_device_.defined() || inv_freq_on_device_.device() != device) {
    inv_freq_on_device_ = inv_freq_.to(device);
  }
  return inv_freq_on_device_;
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::CosSin(
    const at::Tensor& position_ids, const at::Tensor& sequence_lengths) const {
  at::Tensor inv = InvFreqOn(position_ids.device()).unsqueeze(0);  // [1, D/2]
  if (dynamic_ && sequence_lengths.defined()) {
    // One table per distinct length over max_position_embeddings; row 0 is
    // the plain table.
    at::Tensor lengths = sequence_lengths.to(at::kCPU).contiguous();
    const int64_t* l = lengths.data_ptr<int64_t>();
    std::map<int64_t, int64_t> row_of;
    std::vector<at::Tensor> rows = {inv_freq_};
    std::vector<int64_t> token_row(static_cast<size_t>(lengths.numel()), 0);
    for (int64_t t = 0; t < lengths.numel(); ++t) {
      if (l[t] <= max_position_embeddings_) continue;
      auto [it, added] = row_of.emplace(l[t], static_cast<int64_t>(rows.size()));
      if (added) rows.push_back(InvFreqForLength(l[t]));
      token_row[static_cast<size_t>(t)] = it->second;
    }
    if (rows.size() > 1) {
      at::Tensor table = at::stack(rows).to(position_ids.device());
      at::Tensor index =
          at::tensor(token_row, at::TensorOptions().dtype(at::kLong)).to(position_ids.device());
      inv = table.index_select(0, index);  // [T, D/2]
    }
  }
  at::Tensor angles = position_ids.to(at::kFloat).unsqueeze(1) * inv;  // [T, D/2]
  at::Tensor emb = at::cat({angles, angles}, 1);
  if (attention_scaling_ == 1.0) return {emb.cos(), emb.sin()};
  return {emb.cos() * attention_scaling_, emb.sin() * attention_scaling_};
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
