// ZeroOptimizer's checkpoint files (zero_optimizer.h):
//   optimizer.json   (rank 0) {"schema", "type": "AdamW", "hyper_parameters",
//                    "zero": {"stage", "world_size", "bucket_numel", "step",
//                    "master", "params": [{"name", "shape"}]}}
//   optimizer-shard-<r>-of-<W>.safetensors   (rank r) its shard, float32:
//                    "exp_avg", "exp_avg_sq", and "master" for mixed precision
// A shard is mapped back to parameters with ZeroPartition::Pieces, so any
// world size can read any other's (re-sharding), piece by piece.
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/model/safetensors.h"
#include "trainer/model/tensor_io.h"
#include "trainer/train/checkpoint.h"
#include "trainer/train/zero_optimizer.h"

namespace skrull::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kZeroSchema = 1;
constexpr const char* kStateNames[] = {"exp_avg", "exp_avg_sq", "master"};

// Copies the overlap of a source run (param, param_offset, numel at
// src[src_offset]) into every piece of `mine` for the same parameter.
void CopyOverlap(const ZeroPiece& src, const at::Tensor& src_data,
                 const std::multimap<size_t, ZeroPiece>& mine, at::Tensor& dst) {
  auto [lo, hi] = mine.equal_range(src.param);
  for (auto it = lo; it != hi; ++it) {
    const ZeroPiece& d = it->second;
    const int64_t begin = std::max(src.param_offset, d.param_offset);
    const int64_t end = std::min(src.param_offset + src.numel, d.param_offset + d.numel);
    if (begin >= end) continue;
    dst.narrow(0, d.shard_offset + begin - d.param_offset, end - begin)
        .copy_(src_data.narrow(0, src.shard_offset + begin - src.param_offset, end - begin));
  }
}

}  // namespace

Status ZeroOptimizer::SaveShard(const std::string& dir) const {
  model::SafetensorsWriter writer;
  SKRULL_RETURN_IF_ERROR(model::AddTensor(&writer, "exp_avg", exp_avg_));
  SKRULL_RETURN_IF_ERROR(model::AddTensor(&writer, "exp_avg_sq", exp_avg_sq_));
  if (mixed()) SKRULL_RETURN_IF_ERROR(model::AddTensor(&writer, "master", master_));
  writer.SetMetadata("format", "pt");
  writer.SetMetadata("zero_rank", std::to_string(coll_->rank()));
  writer.SetMetadata("zero_world_size", std::to_string(partition_.world_size()));
  return writer.WriteFile(
      (fs::path(dir) / ZeroShardFileName(coll_->rank(), partition_.world_size())).string());
}

Status ZeroOptimizer::SaveIndex(const std::string& dir) const {
  json params = json::array();
  for (const auto& [name, p] : params_)
    params.push_back({{"name", name}, {"shape", p.sizes().vec()}});
  json j;
  j["schema"] = kZeroSchema;
  j["type"] = "AdamW";
  j["hyper_parameters"] = json::parse(HyperParametersJson(options_));
  j["zero"] = {{"stage", stage_},
               {"world_size", partition_.world_size()},
               {"bucket_numel", partition_.bucket_numel()},
               {"step", step_},
               {"master", mixed()},
               {"params", params}};
  return WriteFileAtomically((fs::path(dir) / kOptimizerStateFile).string(), j.dump(2) + "\n");
}

Status ZeroOptimizer::Load(const std::string& dir) {
  const std::string json_path = (fs::path(dir) / kOptimizerStateFile).string();
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(json_path));
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("type", "") != "AdamW") {
    return InvalidArgumentError(json_path +
                                ": not an AdamW optimizer state file; the checkpoint "
                                "is damaged");
  }
  std::multimap<size_t, ZeroPiece> mine;
  for (const ZeroPiece& pc : pieces_) mine.emplace(pc.param, pc);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < params_.size(); ++i) index[params_[i].first] = i;
  torch::NoGradGuard no_grad;
  at::Tensor* targets[] = {&exp_avg_, &exp_avg_sq_, &master_};
  const bool want_master = mixed();

  if (!j.contains("zero")) {
    // Stage 0's per-parameter tensors (optimizer.h).
    const std::string path = (fs::path(dir) / kOptimizerTensorsFile).string();
    SKRULL_ASSIGN_OR_RETURN(auto file, model::SafetensorsFile::Open(path));
    const json& steps = j.value("steps", json::object());
    step_ = steps.empty() ? 0 : steps.begin()->get<int64_t>();
    for (size_t i = 0; i < params_.size(); ++i) {
      const std::string& name = params_[i].first;
      for (int k = 0; k < (want_master ? 3 : 2); ++k) {
        if (k < 2 && !steps.contains(name)) continue;  // never stepped
        const model::TensorInfo* info = file->Find(name + "." + kStateNames[k]);
        if (info == nullptr || info->NumElements() != params_[i].second.numel()) {
          return InvalidArgumentError(path + ": tensor \"" + name + "." + kStateNames[k] +
                                      "\" missing or of another shape; was the checkpoint "
                                      "written by another model or LoRA setting?");
        }
        const at::Tensor full =
            model::TensorFromBytes(*info, file->Data(*info), torch::kFloat).reshape({-1});
        CopyOverlap({i, 0, 0, full.numel()}, full.to(exp_avg_.device()), mine, *targets[k]);
      }
    }
    return OkStatus();
  }

  const json& z = j["zero"];
  if (!z.is_object() || !z.contains("params") || !z["params"].is_array() ||
      !z.contains("world_size") || !z.contains("bucket_numel") || !z.contains("step")) {
    return InvalidArgumentError(json_path +
                                ": field \"zero\" lacks params, world_size, "
                                "bucket_numel or step; the checkpoint is damaged");
  }
  std::vector<int64_t> old_numel;
  std::vector<size_t> old_to_new;
  std::vector<std::string> problems;
  for (const json& p : z["params"]) {
    const std::string name = p.value("name", "");
    const std::vector<int64_t> shape = p.value("shape", std::vector<int64_t>{});
    auto it = index.find(name);
    if (it == index.end()) {
      problems.push_back(name + ": not a trainable parameter of this model");
    } else if (params_[it->second].second.sizes().vec() != shape) {
      problems.push_back(name + ": shape " + model::ShapeToString(shape) + ", expected " +
                         model::ShapeToString(params_[it->second].second.sizes().vec()));
    }
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    old_numel.push_back(n);
    old_to_new.push_back(it == index.end() ? 0 : it->second);
  }
  if (problems.empty() && old_numel.size() != params_.size()) {
    problems.push_back("holds " + std::to_string(old_numel.size()) + " parameters, the model " +
                       std::to_string(params_.size()));
  }
  if (!problems.empty()) {
    std::string msg = json_path +
                      ": optimizer state does not match the model (was the "
                      "checkpoint written by another model or LoRA setting?):";
    for (size_t i = 0; i < problems.size() && i < 10; ++i) msg += "\n  " + problems[i];
    return InvalidArgumentError(msg);
  }
  const int old_world = z["world_size"].get<int>();
  const ZeroPartition old(old_numel, old_world, z["bucket_numel"].get<int64_t>());
  for (int q = 0; q < old_world; ++q) {
    const std::string path = (fs::path(dir) / ZeroShardFileName(q, old_world)).string();
    StatusOr<std::unique_ptr<model::SafetensorsFile>> file = model::SafetensorsFile::Open(path);
    if (!file.ok()) {
      return file.status().WithContext(
          "the checkpoint was written by " + std::to_string(old_world) + " ranks (zeroStage " +
          std::to_string(z.value("stage", 0)) + ") and needs all their shards");
    }
    std::vector<ZeroPiece> pieces = old.Pieces(q);
    for (ZeroPiece& pc : pieces) pc.param = old_to_new[pc.param];
    for (int k = 0; k < (want_master ? 3 : 2); ++k) {
      const model::TensorInfo* info = (*file)->Find(kStateNames[k]);
      if (info == nullptr || info->NumElements() != old.shard_numel()) {
        return InvalidArgumentError(path + ": tensor \"" + kStateNames[k] + "\" missing or not " +
                                    std::to_string(old.shard_numel()) + " elements");
      }
      const at::Tensor data =
          model::TensorFromBytes(*info, (*file)->Data(*info), torch::kFloat).to(exp_avg_.device());
      for (const ZeroPiece& pc : pieces) CopyOverlap(pc, data, mine, *targets[k]);
    }
  }
  step_ = z["step"].get<int64_t>();
  return OkStatus();
}

}  // namespace skrull::train
