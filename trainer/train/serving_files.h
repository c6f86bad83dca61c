// The files besides the weights that make a saved model folder (a checkpoint,
// an export) load as it is in transformers' from_pretrained and in serving
// engines: generation_config.json and the tokenizer files. Torch-free.
//
// Sources, in order: the tokenizer the job trained with (spec.data.tokenizer,
// a folder or a tokenizer.json inside one), then the folder of
// spec.model.config. generation_config.json is copied from the model's folder
// when it has one, else written from config.json's bos / eos / pad ids. A
// spec.data.chatTemplate replaces the tokenizer_config.json "chat_template"
// (and chat_template.jinja is then not copied), so the folder serves the
// template the model was trained on.
//
// Thread safety: functions of their arguments and the filesystem.
#ifndef SKRULL_TRAINER_TRAIN_SERVING_FILES_H_
#define SKRULL_TRAINER_TRAIN_SERVING_FILES_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model_config.h"

namespace skrull::train {

inline constexpr char kGenerationConfigFile[] = "generation_config.json";
// The tokenizer files copied when present (Hugging Face names).
inline constexpr const char* kTokenizerFiles[] = {
    "tokenizer.json",      "tokenizer_config.json", "special_tokens_map.json",
    "chat_template.jinja", "added_tokens.json",     "vocab.json",
    "merges.txt",          "tokenizer.model"};

struct ServingSources {
  std::string model_dir;      // folder of spec.model.config; may be empty
  std::string tokenizer;      // spec.data.tokenizer (folder or file); may be empty
  std::string chat_template;  // spec.data.chatTemplate; empty = the tokenizer's own
};

// Writes generation_config.json and copies the tokenizer files into `dir`
// (which exists). Returns the names written. Errors name the file.
StatusOr<std::vector<std::string>> WriteServingFiles(const scheduler::ModelConfig& config,
                                                     const ServingSources& sources,
                                                     const std::string& dir);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_SERVING_FILES_H_
