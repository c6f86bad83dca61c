#include "trainer/train/export.h"

#include <c10/util/Exception.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "scheduler/model_config.h"
#include "trainer/model/model.h"
#include "trainer/model/torch_compat.h"
#include "trainer/train/checkpoint.h"
#include "trainer/train/serving_files.h"

namespace skrull::train {

namespace fs = std::filesystem;

namespace {

c10::ScalarType DtypeOf(const std::string& torch_dtype) {
  if (torch_dtype == "bfloat16") return c10::kBFloat16;
  if (torch_dtype == "float16") return c10::kHalf;
  return c10::kFloat;
}

// LoRA options from adapter_config.json (PEFT's names).
StatusOr<model::LoraOptions> ReadAdapterConfig(const std::string& path, std::string* base) {
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgumentError(path + ": not valid JSON: " + e.what());
  }
  FieldErrors errors(path);
  const JsonFields f(j, path);
  model::LoraOptions o;
  o.rank = errors.Take(f.RequiredInt("r", 1));
  o.alpha = errors.Take(f.RequiredDouble("lora_alpha"));
  o.target_modules.clear();
  const nlohmann::json* targets = errors.Take(f.RequiredArray("target_modules"));
  if (targets != nullptr) {
    for (const nlohmann::json& t : *targets) {
      if (t.is_string()) o.target_modules.push_back(t.get<std::string>());
    }
  }
  *base = errors.Take(f.OptionalString("base_model_name_or_path", ""), std::string());
  if (!errors.empty()) return errors.ToStatus();
  SKRULL_RETURN_IF_ERROR(model::ValidateLoraOptions(o).WithContext(path));
  return o;
}

Status WriteWeights(const ExportOptions& o, const scheduler::ModelConfig& config,
                    const std::string& tmp) {
  const fs::path in(o.in);
  const bool lora = fs::exists(in / kAdapterConfigFile);
  if (lora && !o.merge_lora) {
    return FailedPreconditionError(o.in + ": holds a LoRA adapter (" + kAdapterConfigFile +
                                   "), not full weights; run `skrull-export --merge-lora " + o.in +
                                   " " + o.out + "` to merge it into its base weights");
  }
  if (!lora && o.merge_lora) {
    return FailedPreconditionError(o.in + ": --merge-lora given but there is no " +
                                   kAdapterConfigFile +
                                   " (a full fine-tuning folder exports "
                                   "without it)");
  }
  model::ModelOptions mo;
  mo.dtype = c10::kFloat;  // merge in float32; written in config.json's dtype
  std::string base = o.base;
  if (lora) {
    std::string adapter_base;
    SKRULL_ASSIGN_OR_RETURN(mo.lora,
                            ReadAdapterConfig((in / kAdapterConfigFile).string(), &adapter_base));
    if (base.empty()) base = adapter_base;
    if (base.empty()) {
      return FailedPreconditionError(
          (in / kAdapterConfigFile).string() +
          ": names no base weights (the job trained its base from a random init); pass "
          "--base WEIGHTS");
    }
  }
  SKRULL_ASSIGN_OR_RETURN(std::unique_ptr<model::DecoderModel> m,
                          model::DecoderModel::Create(config, mo));
  if (lora) {
    SKRULL_RETURN_IF_ERROR(m->LoadWeights(base));
    SKRULL_RETURN_IF_ERROR(m->LoadLoraAdapters(o.in));
    SKRULL_RETURN_IF_ERROR(m->MergeLoraAdapters());
  } else {
    SKRULL_RETURN_IF_ERROR(m->LoadWeights(o.in));
  }
  return m->SaveWeights((fs::path(tmp) / kModelWeightsFile).string(), DtypeOf(config.torch_dtype));
}

}  // namespace

Status ExportModel(const ExportOptions& o) {
  std::error_code ec;
  if (fs::exists(o.out, ec) && !fs::is_empty(o.out, ec)) {
    return FailedPreconditionError(o.out + ": exists and is not empty; choose a new output folder");
  }
  const std::string config_path = (fs::path(o.in) / kHfConfigFile).string();
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(config_path));
  SKRULL_ASSIGN_OR_RETURN(scheduler::ModelConfig config,
                          scheduler::ParseHfConfigJson(text, config_path));
  const std::string tmp = o.out + ".tmp";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return IoError(tmp + ": cannot create: " + ec.message());
  try {
    SKRULL_RETURN_IF_ERROR(WriteWeights(o, config, tmp));
  } catch (const c10::Error& e) {
    return InternalError(o.in + ": " + e.what_without_backtrace());
  }
  SKRULL_RETURN_IF_ERROR(WriteFileAtomically((fs::path(tmp) / kHfConfigFile).string(),
                                             scheduler::ToHfConfigJson(config)));
  ServingSources sources;
  sources.model_dir = o.in;
  SKRULL_RETURN_IF_ERROR(WriteServingFiles(config, sources, tmp).status());
  fs::remove(o.out, ec);  // an empty folder
  fs::rename(tmp, o.out, ec);
  if (ec) return IoError(tmp + ": cannot rename to " + o.out + ": " + ec.message());
  return OkStatus();
}

const char* ExportUsage() {
  return "usage: skrull-export [--merge-lora] [--base WEIGHTS] IN OUT\n"
         "  IN   a model folder with config.json: a checkpoint's step-<N>, or a Hugging Face "
         "folder\n"
         "  OUT  the serving folder to create (config.json, generation_config.json, tokenizer "
         "files, model.safetensors)\n"
         "  --merge-lora     IN holds a LoRA adapter: merge it into its base weights\n"
         "  --base WEIGHTS   the base weights (default: adapter_config.json's "
         "base_model_name_or_path)\n";
}

StatusOr<ExportOptions> ParseExportFlags(const std::vector<std::string>& args) {
  ExportOptions o;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--merge-lora") {
      o.merge_lora = true;
    } else if (args[i] == "--base" && i + 1 < args.size()) {
      o.base = args[++i];
    } else if (!args[i].empty() && args[i][0] == '-') {
      return InvalidArgumentError("unknown flag " + args[i]);
    } else {
      positional.push_back(args[i]);
    }
  }
  if (positional.size() != 2) {
    return InvalidArgumentError("need IN and OUT (got " + std::to_string(positional.size()) +
                                " paths)");
  }
  o.in = positional[0];
  o.out = positional[1];
  return o;
}

}  // namespace skrull::train
