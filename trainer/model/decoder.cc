#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "trainer/data/rng.h"
#include "trainer/model/chunked_loss.h"
#include "trainer/model/model.h"
#include "trainer/model/recompute.h"
#include "trainer/model/torch_compat.h"

namespace skrull::model {

struct DecoderModel::Linear {
  at::Tensor weight;  // [out, in]
  at::Tensor bias;    // [out] or undefined
  at::Tensor lora_a;  // [rank, in] or undefined
  at::Tensor lora_b;  // [out, rank]
  double lora_scaling = 0;
};

struct DecoderModel::Layer {
  at::Tensor input_norm;
  at::Tensor post_norm;
  at::Tensor q_norm;  // [head_dim], qwen3 only
  at::Tensor k_norm;
  Linear q, k, v, o, gate, up, down;
};

namespace {

// A seed for one tensor: independent of creation order and device.
uint64_t TensorSeed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return data::SplitMix64(seed ^ data::SplitMix64(h).Next()).Next();
}

// The architecture is checked by scheduler::ValidateModelConfig; these are the
// options this model adds.
Status ValidateOptions(const ModelOptions& o) {
  std::vector<std::string> errors;
  if (o.dtype != c10::kFloat && o.dtype != c10::kBFloat16 && o.dtype != c10::kHalf) {
    errors.push_back("dtype: must be float32, bfloat16 or float16 (got " +
                     compat::DtypeName(o.dtype) + ")");
  }
  if (o.loss_chunk_tokens < 1) errors.push_back("loss_chunk_tokens: must be >= 1");
  if (!(o.init_std >= 0)) errors.push_back("init_std: must be >= 0");
  Status lora = ValidateLoraOptions(o.lora);
  if (!lora.ok()) errors.push_back(lora.message());
  if (errors.empty()) return OkStatus();
  std::string msg = "model options: " + errors[0];
  for (size_t i = 1; i < errors.size(); ++i) msg += "; " + errors[i];
  return InvalidArgumentError(msg);
}

}  // namespace

StatusOr<std::unique_ptr<DecoderModel>> DecoderModel::Create(const scheduler::ModelConfig& config,
                                                             const ModelOptions& options) {
  SKRULL_RETURN_IF_ERROR(scheduler::ValidateModelConfig(config, "model config"));
  SKRULL_RETURN_IF_ERROR(ValidateOptions(options));
  auto rope = RotaryEmbedding::Create(config);
  if (!rope.ok()) return rope.status().WithContext("model config");
  std::unique_ptr<DecoderModel> model(new DecoderModel(config, options, std::move(rope).value()));
  try {
    model->Build();
  } catch (const c10::Error& e) {
    return InternalError("building the model on " + options.device.str() + " in " +
                         compat::DtypeName(options.dtype) + ": " + e.what_without_backtrace());
  }
  return model;
}

DecoderModel::DecoderModel(const scheduler::ModelConfig& config, const ModelOptions& options,
                           RotaryEmbedding rope)
    : config_(config),
      options_(options),
      rope_(std::move(rope)),
      attention_(MakeDefaultAttention(options.device)) {}

DecoderModel::~DecoderModel() = default;

void DecoderModel::Build() {
  const auto& c = config_;
  const bool lora_on = options_.lora.enabled();
  auto target = at::TensorOptions().dtype(options_.dtype).device(options_.device);

  auto make = [&](const std::string& name, std::vector<int64_t> shape, char init) {
    at::Tensor t;
    if (init == 'n') {
      t = at::empty(shape, at::kFloat);
      t.normal_(0.0, options_.init_std, compat::MakeCpuGenerator(TensorSeed(options_.seed, name)));
    } else if (init == '1') {
      t = at::ones(shape, at::kFloat);
    } else {
      t = at::zeros(shape, at::kFloat);
    }
    t = t.to(target).contiguous();
    t.set_requires_grad(!lora_on);
    base_params_.emplace_back(name, t);
    return t;
  };
  auto make_lora = [&](const std::string& module, Linear* linear) {
    const int64_t r = options_.lora.rank;
    const int64_t in = linear->weight.size(1), out = linear->weight.size(0);
    const std::string a_name = module + ".lora_A.weight";
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    at::Tensor a = at::empty({r, in}, at::kFloat);
    a.uniform_(-bound, bound, compat::MakeCpuGenerator(TensorSeed(options_.lora.seed, a_name)));
    linear->lora_a = a.to(target).contiguous().set_requires_grad(true);
    linear->lora_b = at::zeros({out, r}, target).set_requires_grad(true);
    linear->lora_scaling = options_.lora.scaling();
    lora_params_.emplace_back(a_name, linear->lora_a);
    lora_params_.emplace_back(module + ".lora_B.weight", linear->lora_b);
  };
  auto targeted = [&](const std::string& proj) {
    if (!lora_on) return false;
    const auto& t = options_.lora.target_modules;
    return std::find(t.begin(), t.end(), proj) != t.end();
  };
  auto linear = [&](const std::string& prefix, const std::string& proj, int64_t out, int64_t in,
                    bool bias, Linear* l) {
    const std::string module = prefix + proj;
    l->weight = make(module + ".weight", {out, in}, 'n');
    if (bias) l->bias = make(module + ".bias", {out}, '0');
  };

  embed_tokens_ = make("model.embed_tokens.weight", {c.vocab_size, c.hidden_size}, 'n');
  const bool qkv_bias = c.attention_bias;
  const bool o_bias = c.OutputBias();
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    auto layer = std::make_unique<Layer>();
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const std::string attn = p + "self_attn.", mlp = p + "mlp.";
    linear(attn, "q_proj", c.QDim(), c.hidden_size, qkv_bias, &layer->q);
    linear(attn, "k_proj", c.KvDim(), c.hidden_size, qkv_bias, &layer->k);
    linear(attn, "v_proj", c.KvDim(), c.hidden_size, qkv_bias, &layer->v);
    linear(attn, "o_proj", c.hidden_size, c.QDim(), o_bias, &layer->o);
    if (c.QkNorm()) {
      layer->q_norm = make(attn + "q_norm.weight", {c.head_dim}, '1');
      layer->k_norm = make(attn + "k_norm.weight", {c.head_dim}, '1');
    }
    linear(mlp, "gate_proj", c.intermediate_size, c.hidden_size, false, &layer->gate);
    linear(mlp, "up_proj", c.intermediate_size, c.hidden_size, false, &layer->up);
    linear(mlp, "down_proj", c.hidden_size, c.intermediate_size, false, &layer->down);
    layer->input_norm = make(p + "input_layernorm.weight", {c.hidden_size}, '1');
    layer->post_norm = make(p + "post_attention_layernorm.weight", {c.hidden_size}, '1');
    const std::tuple<const std::string&, const char*, Linear*> projections[] = {
        {attn, "q_proj", &layer->q},      {attn, "k_proj", &layer->k},
        {attn, "v_proj", &layer->v},      {attn, "o_proj", &layer->o},
        {mlp, "gate_proj", &layer->gate}, {mlp, "up_proj", &layer->up},
        {mlp, "down_proj", &layer->down}};
    for (const auto& [prefix, proj, l] : projections) {
      if (targeted(proj)) make_lora(prefix + proj, l);
    }
    layers_.push_back(std::move(layer));
  }
  final_norm_ = make("model.norm.weight", {c.hidden_size}, '1');
  if (!c.tie_word_embeddings) lm_head_ = make("lm_head.weight", {c.vocab_size, c.hidden_size}, 'n');
}

const at::Tensor& DecoderModel::LmHeadWeight() const {
  return config_.tie_word_embeddings ? embed_tokens_ : lm_head_;
}

void DecoderModel::SetAttentionBackend(std::unique_ptr<AttentionBackend> backend) {
  SKRULL_CHECK(backend != nullptr);
  attention_ = std::move(backend);
}

void DecoderModel::CheckBatch(const PackedBatch& b) const {
  SKRULL_CHECK(b.input_ids.defined() && b.position_ids.defined())
      << "PackedBatch needs input_ids and position_ids";
  const int64_t t = b.input_ids.size(0);
  for (const at::Tensor* x : {&b.input_ids, &b.position_ids}) {
    SKRULL_CHECK(x->dim() == 1 && x->size(0) == t && x->scalar_type() == at::kLong)
        << "PackedBatch tensors must be [T] int64 (T = " << t << "), got " << x->sizes() << " "
        << x->scalar_type();
    SKRULL_CHECK(x->device() == options_.device)
        << "PackedBatch on " << x->device() << ", model on " << options_.device;
  }
  if (b.targets.defined()) {
    SKRULL_CHECK(b.targets.dim() == 1 && b.targets.size(0) == t &&
                 b.targets.scalar_type() == at::kLong && b.targets.device() == options_.device)
        << "PackedBatch.targets must be [T] int64 on the model's device";
  }
  SKRULL_CHECK(!b.cu_seqlens.empty() && b.cu_seqlens.front() == 0)
      << "PackedBatch.cu_seqlens must start at 0";
  for (size_t i = 1; i < b.cu_seqlens.size(); ++i) {
    SKRULL_CHECK(b.cu_seqlens[i] >= b.cu_seqlens[i - 1] && b.cu_seqlens[i] <= t)
        << "PackedBatch.cu_seqlens must be non-decreasing within [0, " << t << "] at index " << i;
  }
}

at::Tensor DecoderModel::RmsNorm(const at::Tensor& x, const at::Tensor& weight) const {
  // HF LlamaRMSNorm: statistics in float32, scale in the input dtype.
  at::Tensor xf = x.to(at::kFloat);
  xf = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + config_.rms_norm_eps);
  return weight * xf.to(x.scalar_type());
}

at::Tensor DecoderModel::LinearForward(const Linear& l, const at::Tensor& x) const {
  at::Tensor y = at::linear(x, l.weight, l.bias);
  if (l.lora_a.defined()) y = y + LoraDelta(x, l.lora_a, l.lora_b, l.lora_scaling);
  return y;
}

std::vector<at::Tensor> DecoderModel::LayerParameters(const Layer& layer) const {
  std::vector<at::Tensor> out = {layer.input_norm, layer.post_norm};
  for (const at::Tensor* t : {&layer.q_norm, &layer.k_norm}) {
    if (t->defined()) out.push_back(*t);
  }
  for (const Linear* l :
       {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down}) {
    for (const at::Tensor* t : {&l->weight, &l->bias, &l->lora_a, &l->lora_b}) {
      if (t->defined()) out.push_back(*t);
    }
  }
  return out;
}

at::Tensor DecoderModel::LayerForward(const Layer& layer, int index, const at::Tensor& x,
                                      const at::Tensor& cos, const at::Tensor& sin,
                                      const AttentionLayout& layout) {
  const int64_t t = x.size(0);
  const int64_t d = config_.head_dim;
  at::Tensor h = RmsNorm(x, layer.input_norm);
  at::Tensor q = LinearForward(layer.q, h).view({t, config_.num_attention_heads, d});
  at::Tensor k = LinearForward(layer.k, h).view({t, config_.num_key_value_heads, d});
  at::Tensor v = LinearForward(layer.v, h).view({t, config_.num_key_value_heads, d});
  if (layer.q_norm.defined()) {  // qwen3: per head, over head_dim, before RoPE
    q = RmsNorm(q, layer.q_norm);
    k = RmsNorm(k, layer.k_norm);
  }
  q = ApplyRotary(q, cos, sin);
  k = ApplyRotary(k, cos, sin);
  at::Tensor a = attention_->Attend(q, k, v, layout, index);
  at::Tensor out = x + LinearForward(layer.o, a.reshape({t, config_.QDim()}));
  if (options_.recompute_mlp && !options_.recompute_layers && at::GradMode::is_enabled()) {
    const Layer* l = &layer;
    BlockFn fn = [this, l](const at::Tensor& in) { return MlpForward(*l, in); };
    return out + RecomputeInBackward(std::move(fn), out, MlpParameters(layer));
  }
  return out + MlpForward(layer, out);
}

at::Tensor DecoderModel::MlpForward(const Layer& layer, const at::Tensor& x) const {
  at::Tensor h = RmsNorm(x, layer.post_norm);
  at::Tensor mlp = at::silu(LinearForward(layer.gate, h)) * LinearForward(layer.up, h);
  return LinearForward(layer.down, mlp);
}

std::vector<at::Tensor> DecoderModel::MlpParameters(const Layer& layer) const {
  std::vector<at::Tensor> out = {layer.post_norm};
  for (const Linear* l : {&layer.gate, &layer.up, &layer.down}) {
    for (const at::Tensor* t : {&l->weight, &l->bias, &l->lora_a, &l->lora_b}) {
      if (t->defined()) out.push_back(*t);
    }
  }
  return out;
}

at::Tensor DecoderModel::Forward(const PackedBatch& batch) {
  CheckBatch(batch);
  AttentionLayout layout;
  layout.cu_seqlens = batch.cu_seqlens;
  layout.num_tokens = batch.NumTokens();
  at::Tensor x = at::embedding(embed_tokens_, batch.input_ids);
  at::Tensor lengths = batch.sequence_lengths;
  if (rope_.NeedsSequenceLengths() && !lengths.defined()) {
    // Every token in a whole sequence: its length from cu_seqlens.
    std::vector<int64_t> per_token;
    per_token.reserve(static_cast<size_t>(layout.num_tokens));
    for (size_t i = 1; i < batch.cu_seqlens.size(); ++i) {
      per_token.insert(per_token.end(), batch.cu_seqlens[i] - batch.cu_seqlens[i - 1],
                       batch.cu_seqlens[i] - batch.cu_seqlens[i - 1]);
    }
    SKRULL_CHECK(static_cast<int64_t>(per_token.size()) == layout.num_tokens)
        << "dynamic RoPE on a stream with tokens outside cu_seqlens needs "
           "PackedBatch.sequence_lengths";
    lengths = at::tensor(per_token, at::TensorOptions().dtype(at::kLong));
  }
  auto [cos, sin] = rope_.CosSin(batch.position_ids, lengths);
  const bool recompute = options_.recompute_layers && at::GradMode::is_enabled();
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer* layer = layers_[i].get();
    const int index = static_cast<int>(i);
    if (recompute) {
      // Captures by value: backward runs after Forward has returned.
      BlockFn fn = [this, layer, index, cos = cos, sin = sin, layout](const at::Tensor& in) {
        return LayerForward(*layer, index, in, cos, sin, layout);
      };
      x = RecomputeInBackward(std::move(fn), x, LayerParameters(*layer));
    } else {
      x = LayerForward(*layer, index, x, cos, sin, layout);
    }
  }
  return RmsNorm(x, final_norm_);
}

at::Tensor DecoderModel::Logits(const PackedBatch& batch) {
  return at::matmul(Forward(batch), LmHeadWeight().t()).to(at::kFloat);
}

at::Tensor DecoderModel::LossSum(const PackedBatch& batch) {
  SKRULL_CHECK(batch.targets.defined()) << "LossSum needs PackedBatch.targets";
  return LinearCrossEntropySum(Forward(batch), LmHeadWeight(), batch.targets,
                               options_.loss_chunk_tokens);
}

Status DecoderModel::MergeLoraAdapters() {
  if (!options_.lora.enabled()) {
    return FailedPreconditionError("cannot merge LoRA adapters: LoRA is off (lora.rank 0)");
  }
  at::NoGradGuard no_grad;
  for (const auto& layer : layers_) {
    for (Linear* l :
         {&layer->q, &layer->k, &layer->v, &layer->o, &layer->gate, &layer->up, &layer->down}) {
      if (!l->lora_a.defined()) continue;
      // PEFT: weight + transpose(B @ A, fan_in_fan_out) * scaling.
      l->weight.add_((at::matmul(l->lora_b, l->lora_a) * l->lora_scaling).to(l->weight.dtype()));
      l->lora_b.zero_();
    }
  }
  return OkStatus();
}

std::vector<NamedTensor> DecoderModel::NamedParameters() const {
  std::vector<NamedTensor> all = base_params_;
  all.insert(all.end(), lora_params_.begin(), lora_params_.end());
  return all;
}

std::vector<NamedTensor> DecoderModel::NamedTrainableParameters() const {
  return options_.lora.enabled() ? lora_params_ : base_params_;
}

std::vector<at::Tensor> DecoderModel::TrainableParameters() const {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : NamedTrainableParameters()) out.push_back(t);
  return out;
}

int64_t DecoderModel::NumParameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : base_params_) n += t.numel();
  return n;
}

int64_t DecoderModel::NumTrainableParameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : NamedTrainableParameters()) n += t.numel();
  return n;
}

PackedBatch PackSequences(const std::vector<std::vector<int64_t>>& sequences, c10::Device device) {
  std::vector<int64_t> ids, pos, tgt;
  PackedBatch b;
  b.cu_seqlens.push_back(0);
  for (const auto& seq : sequences) {
    for (size_t i = 0; i < seq.size(); ++i) {
      ids.push_back(seq[i]);
      pos.push_back(static_cast<int64_t>(i));
      tgt.push_back(i + 1 < seq.size() ? seq[i + 1] : kIgnoreIndex);
    }
    b.cu_seqlens.push_back(static_cast<int64_t>(ids.size()));
  }
  auto make = [&](const std::vector<int64_t>& v) {
    return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(device);
  };
  b.input_ids = make(ids);
  b.position_ids = make(pos);
  b.targets = make(tgt);
  return b;
}

}  // namespace skrull::model
