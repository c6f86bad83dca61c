// DecoderModel weights I/O: safetensors checkpoints with Hugging Face names
// and PEFT LoRA adapters.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <filesystem>
#include <set>

#include "common/file_util.h"
#include "trainer/model/model.h"
#include "trainer/model/safetensors_checkpoint.h"
#include "trainer/model/tensor_io.h"

namespace skrull::model {
namespace {

bool Ignorable(const std::string& name) {
  // Older transformers saved RoPE buffers; they are recomputed from the config.
  const std::string suffix = ".rotary_emb.inv_freq";
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

constexpr size_t kMaxListedProblems = 20;

}  // namespace

Status DecoderModel::LoadNamed(const std::string& path, const std::vector<NamedTensor>& expected,
                               const std::string& name_prefix) {
  SKRULL_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(path));
  std::vector<std::string> problems;
  std::set<std::string> wanted;
  for (const auto& [name, param] : expected) {
    const std::string disk_name = name_prefix + name;
    wanted.insert(disk_name);
    const std::vector<int64_t> shape = param.sizes().vec();
    const SafetensorsCheckpoint::Entry* e = ckpt->Find(disk_name);
    if (e == nullptr) {
      problems.push_back("missing tensor '" + disk_name + "' (expected shape " +
                         ShapeToString(shape) + ")");
      continue;
    }
    if (!IsFloatingPoint(e->info->dtype)) {
      problems.push_back("tensor '" + disk_name + "' in " + e->file->origin() +
                         " has unsupported dtype " + DTypeName(e->info->dtype) +
                         " (expected F32, F16 or BF16)");
    }
    if (e->info->shape != shape) {
      problems.push_back("tensor '" + disk_name + "' in " + e->file->origin() + " has shape " +
                         ShapeToString(e->info->shape) + ", expected " + ShapeToString(shape));
    }
  }
  for (const std::string& name : ckpt->Names()) {
    if (wanted.count(name) || Ignorable(name)) continue;
    std::string hint;
    if (name == "lm_head.weight" && config_.tie_word_embeddings) {
      hint = " (the config ties lm_head to embed_tokens; set tie_word_embeddings false)";
    }
    problems.push_back("unexpected tensor '" + name + "' in " + ckpt->Find(name)->file->origin() +
                       hint);
  }
  if (!problems.empty()) {
    std::string msg = path + ": " + std::to_string(problems.size()) +
                      " problem(s) loading weights for " + config_.model_type + ": ";
    for (size_t i = 0; i < problems.size() && i < kMaxListedProblems; ++i) {
      msg += (i ? "; " : "") + problems[i];
    }
    if (problems.size() > kMaxListedProblems) {
      msg += "; and " + std::to_string(problems.size() - kMaxListedProblems) + " more";
    }
    return InvalidArgumentError(msg);
  }
  try {
    at::NoGradGuard no_grad;
    for (const auto& [name, param] : expected) {
      const SafetensorsCheckpoint::Entry* e = ckpt->Find(name_prefix + name);
      at::Tensor host = TensorFromBytes(*e->info, e->file->Data(*e->info), param.scalar_type());
      at::Tensor dst = param;
      dst.copy_(host);
    }
  } catch (const c10::Error& err) {
    return InternalError(path + ": copying weights to " + options_.device.str() + ": " +
                         err.what_without_backtrace());
  }
  return OkStatus();
}

Status DecoderModel::LoadWeights(const std::string& path) {
  return LoadNamed(path, base_params_, "");
}

Status DecoderModel::SaveWeights(const std::string& path,
                                 std::optional<c10::ScalarType> dtype) const {
  SafetensorsWriter writer;
  for (const auto& [name, t] : base_params_) {
    SKRULL_RETURN_IF_ERROR(AddTensor(&writer, name, t, dtype.value_or(options_.dtype)));
  }
  return writer.WriteFile(path);
}

Status DecoderModel::SaveLoraAdapters(const std::string& dir, const std::string& base_model) const {
  if (!options_.lora.enabled()) {
    return FailedPreconditionError(dir + ": cannot save LoRA adapters: LoRA is off (lora.rank 0)");
  }
  SafetensorsWriter writer;
  for (const auto& [name, t] : lora_params_) {
    SKRULL_RETURN_IF_ERROR(AddTensor(&writer, kPeftPrefix + name, t));
  }
  const std::filesystem::path d(dir);
  SKRULL_RETURN_IF_ERROR(writer.WriteFile((d / kLoraAdapterFile).string()));
  return WriteFileAtomically((d / kLoraConfigFile).string(),
                             LoraAdapterConfigJson(options_.lora, base_model));
}

Status DecoderModel::LoadLoraAdapters(const std::string& path) {
  if (!options_.lora.enabled()) {
    return FailedPreconditionError(path + ": cannot load LoRA adapters: LoRA is off (lora.rank 0)");
  }
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    file = (std::filesystem::path(path) / kLoraAdapterFile).string();
  }
  return LoadNamed(file, lora_params_, kPeftPrefix);
}

}  // namespace skrull::model
