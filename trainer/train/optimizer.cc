#include "trainer/train/optimizer.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <type_traits>

#include "common/file_util.h"
#include "trainer/model/safetensors.h"
#include "trainer/model/tensor_io.h"
#include "trainer/train/checkpoint.h"

namespace skrull::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kOptimizerSchema = 1;

// AdamW's state map key: std::string (the TensorImpl address printed with
// operator<<, libtorch < 2.2) or void* (libtorch >= 2.2).
using StateMap = std::decay_t<decltype(std::declval<torch::optim::AdamW&>().state())>;
using StateMapKey = typename StateMap::key_type;
template <class Key>
Key StateKeyAs(const at::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;  // what c10::guts::to_string(TensorImpl*) printed
    os << p.unsafeGetTensorImpl();
    return os.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}
StateMapKey StateKey(const at::Tensor& p) { return StateKeyAs<StateMapKey>(p); }

}  // namespace

OptimizerOptions OptimizerOptionsFromSpec(const api::TrainingSpec& t) {
  OptimizerOptions o;
  o.weight_decay = t.weight_decay;
  o.beta1 = t.adam_beta1;
  o.beta2 = t.adam_beta2;
  o.epsilon = t.adam_epsilon;
  o.grad_clip = t.grad_clip;
  return o;
}

std::string HyperParametersJson(const OptimizerOptions& o) {
  const json j = {{"weight_decay", o.weight_decay},
                  {"beta1", o.beta1},
                  {"beta2", o.beta2},
                  {"epsilon", o.epsilon},
                  {"grad_clip", o.grad_clip},
                  {"no_decay", "tensors with fewer than 2 dimensions"}};
  return j.dump();
}

Optimizer::Optimizer(std::vector<model::NamedTensor> params, const OptimizerOptions& options)
    : params_(std::move(params)), options_(options) {
  torch::NoGradGuard no_grad;
  std::set<std::string> names;
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& [name, p] : params_) {
    SKRULL_CHECK(names.insert(name).second) << "duplicate parameter " << name;
    SKRULL_CHECK(p.requires_grad()) << name << " does not require grad";
    at::Tensor master = p;
    if (p.scalar_type() != torch::kFloat) {
      master = p.detach().to(torch::kFloat).clone().set_requires_grad(true);
    }
    masters_.push_back(master);
    (p.dim() >= 2 ? decay : no_decay).push_back(master);
  }
  auto group_options = [&](double wd) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(0.0);
    o->betas(std::make_tuple(options_.beta1, options_.beta2))
        .eps(options_.epsilon)
        .weight_decay(wd)
        .amsgrad(false);
    return o;
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) groups.emplace_back(decay, group_options(options_.weight_decay));
  if (!no_decay.empty()) groups.emplace_back(no_decay, group_options(0.0));
  adamw_ = std::make_unique<torch::optim::AdamW>(groups, *group_options(0.0));
}

Optimizer::~Optimizer() = default;

void Optimizer::ZeroGrad() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& p = params_[i].second;
    if (p.grad().defined()) p.mutable_grad().zero_();
    if (mixed(i) && masters_[i].grad().defined()) masters_[i].mutable_grad().zero_();
  }
}

int64_t Optimizer::StaticMemoryBytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i].second;
    bytes += 2 * p.numel() * p.element_size() + 2 * p.numel() * 4;  // weight, grad, moments
    if (mixed(i)) bytes += 2 * p.numel() * 4;                       // master and its grad
  }
  return bytes;
}

std::vector<at::Tensor> Optimizer::ReducibleGradients() {
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < params_.size(); ++i) grads.push_back(ReducibleGradient(i));
  return grads;
}

void AddIntoFloat32Sum(at::Tensor& grad, at::Tensor& sum) {
  if (!grad.defined()) return;
  torch::NoGradGuard no_grad;
  if (sum.defined()) {
    sum.add_(grad);  // float32 += bf16: computed in float32
  } else {
    sum = grad.to(torch::kFloat);
  }
  grad = at::Tensor();
}

void Optimizer::AccumulateGradient(size_t i) {
  SKRULL_CHECK(i < params_.size()) << "AccumulateGradient(" << i << ") of " << params_.size();
  if (mixed(i)) AddIntoFloat32Sum(params_[i].second.mutable_grad(), masters_[i].mutable_grad());
}

at::Tensor Optimizer::ReducibleGradient(size_t i) {
  SKRULL_CHECK(i < params_.size()) << "ReducibleGradient(" << i << ") of " << params_.size();
  torch::NoGradGuard no_grad;
  AccumulateGradient(i);
  at::Tensor& m = masters_[i];
  if (!m.grad().defined()) m.mutable_grad() = torch::zeros_like(m);
  return m.grad();
}

double Optimizer::GradNorm() const {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> squares;
  for (const at::Tensor& m : masters_) {
    if (m.grad().defined()) squares.push_back(m.grad().to(torch::kDouble).pow(2).sum());
  }
  if (squares.empty()) return 0.0;
  return std::sqrt(torch::stack(squares).sum().item<double>());
}

double Optimizer::Step(double lr) {
  torch::NoGradGuard no_grad;
  const double norm = GradNorm();
  if (options_.grad_clip > 0 && std::isfinite(norm) && norm > options_.grad_clip) {
    // torch.nn.utils.clip_grad_norm_: coefficient max_norm / (norm + 1e-6).
    const double coef = options_.grad_clip / (norm + 1e-6);
    for (at::Tensor& m : masters_) {
      if (m.grad().defined()) m.mutable_grad().mul_(coef);
    }
  }
  for (auto& group : adamw_->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  adamw_->step();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (mixed(i)) params_[i].second.copy_(masters_[i]);
  }
  ZeroGrad();
  return norm;
}

Status Optimizer::Save(const std::string& dir) const {
  model::SafetensorsWriter writer;
  json steps = json::object();
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    if (mixed(i)) {
      SKRULL_RETURN_IF_ERROR(model::AddTensor(&writer, name + ".master", masters_[i]));
    }
    auto it = adamw_->state().find(StateKey(masters_[i]));
    if (it == adamw_->state().end()) continue;  // never stepped
    auto& st = static_cast<torch::optim::AdamWParamState&>(*it->second);
    SKRULL_RETURN_IF_ERROR(
        model::AddTensor(&writer, name + ".exp_avg", st.exp_avg(), torch::kFloat));
    SKRULL_RETURN_IF_ERROR(
        model::AddTensor(&writer, name + ".exp_avg_sq", st.exp_avg_sq(), torch::kFloat));
    steps[name] = st.step();
  }
  writer.SetMetadata("format", "pt");
  SKRULL_RETURN_IF_ERROR(writer.WriteFile((fs::path(dir) / kOptimizerTensorsFile).string()));
  json j;
  j["schema"] = kOptimizerSchema;
  j["type"] = "AdamW";
  j["hyper_parameters"] = json::parse(HyperParametersJson(options_));
  j["steps"] = steps;
  return WriteFileAtomically((fs::path(dir) / kOptimizerStateFile).string(), j.dump(2) + "\n");
}

Status Optimizer::Load(const std::string& dir) {
  const std::string json_path = (fs::path(dir) / kOptimizerStateFile).string();
  const std::string tensors_path = (fs::path(dir) / kOptimizerTensorsFile).string();
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(json_path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("zero") && j["zero"].is_object()) {
    return FailedPreconditionError(json_path + ": written with spec.training.zeroStage " +
                                   j["zero"].value("stage", json(0)).dump() +
                                   " (sharded optimizer state); resume it with "
                                   "zeroStage 1 or 2 (any world size), not 0");
  }
  if (j.is_discarded() || !j.is_object() || !j.contains("steps") || !j["steps"].is_object()) {
    return InvalidArgumentError(json_path +
                                ": not an optimizer state file (expected a JSON "
                                "object with \"steps\"); the checkpoint is damaged");
  }
  if (j.value("type", "") != "AdamW") {
    return InvalidArgumentError(json_path + ": field \"type\": expected \"AdamW\"");
  }
  SKRULL_ASSIGN_OR_RETURN(auto file, model::SafetensorsFile::Open(tensors_path));

  std::map<std::string, std::unique_ptr<torch::optim::AdamWParamState>> loaded;
  std::map<std::string, at::Tensor> loaded_masters;
  std::vector<std::string> problems;
  std::set<std::string> known;
  auto read = [&](const std::string& key, const at::Tensor& like) -> at::Tensor {
    const model::TensorInfo* info = file->Find(key);
    if (info == nullptr) {
      problems.push_back(key + ": missing");
      return at::Tensor();
    }
    if (info->shape != like.sizes().vec()) {
      problems.push_back(key + ": shape " + model::ShapeToString(info->shape) + ", expected " +
                         model::ShapeToString(like.sizes().vec()));
      return at::Tensor();
    }
    return model::TensorFromBytes(*info, file->Data(*info), like.scalar_type()).to(like.device());
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    const at::Tensor& p = masters_[i];
    known.insert(name);
    if (mixed(i)) loaded_masters[name] = read(name + ".master", p);
    if (!j["steps"].contains(name)) continue;  // not stepped when saved
    auto st = std::make_unique<torch::optim::AdamWParamState>();
    st->step(j["steps"][name].get<int64_t>());
    for (const char* which : {"exp_avg", "exp_avg_sq"}) {
      at::Tensor t = read(name + "." + which, p);
      if (!t.defined()) continue;
      if (std::string(which) == "exp_avg") {
        st->exp_avg(t);
      } else {
        st->exp_avg_sq(t);
      }
    }
    loaded[name] = std::move(st);
  }
  for (auto it = j["steps"].begin(); it != j["steps"].end(); ++it) {
    if (known.count(it.key()) == 0) {
      problems.push_back(it.key() + ": not a trainable parameter of this model");
    }
  }
  if (!problems.empty()) {
    std::string msg = tensors_path + ": optimizer state does not match the model (" +
                      std::to_string(problems.size()) +
                      " problems; was the checkpoint written "
                      "by another model or LoRA setting?):";
    for (size_t i = 0; i < problems.size() && i < 10; ++i) msg += "\n  " + problems[i];
    return InvalidArgumentError(msg);
  }
  torch::NoGradGuard no_grad;
  adamw_->state().clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    auto it = loaded.find(params_[i].first);
    if (it != loaded.end()) adamw_->state()[StateKey(masters_[i])] = std::move(it->second);
    if (mixed(i)) {
      masters_[i].copy_(loaded_masters[params_[i].first]);
      params_[i].second.copy_(masters_[i]);
    }
  }
  return OkStatus();
}

}  // namespace skrull::train
