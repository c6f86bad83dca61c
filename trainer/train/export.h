// skrull-export: a saved model folder (a checkpoint's step-<N>, or any
// Hugging Face model folder) to a serving folder that transformers'
// from_pretrained and serving engines load as it is: config.json (both RoPE
// layouts, model_config.h), generation_config.json, the tokenizer files
// (serving_files.h) and model.safetensors.
//
//   full fine-tuning checkpoint -> its weights, in config.json's torch_dtype
//   LoRA checkpoint (--merge-lora) -> base weights + (B A) * alpha / rank,
//     as PEFT's merge_and_unload, in config.json's torch_dtype; the base is
//     --base, else the adapter's base_model_name_or_path (the job's
//     spec.model.weights).
// OUT must not exist or be empty; it is filled through OUT.tmp and renamed,
// so a folder named OUT is complete.
#ifndef SKRULL_TRAINER_TRAIN_EXPORT_H_
#define SKRULL_TRAINER_TRAIN_EXPORT_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::train {

struct ExportOptions {
  std::string in;   // a model folder with config.json
  std::string out;  // the serving folder to create
  bool merge_lora = false;
  std::string base;  // LoRA base weights (file or folder); "" = from adapter_config.json
};

// Errors name the file and the fix: a LoRA folder without --merge-lora, a
// merge without base weights, a config or weights that do not load.
Status ExportModel(const ExportOptions& options);

// Flags -> options: `[--merge-lora] [--base PATH] IN OUT`. InvalidArgument
// with the usage for anything else.
StatusOr<ExportOptions> ParseExportFlags(const std::vector<std::string>& args);
const char* ExportUsage();

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_EXPORT_H_
