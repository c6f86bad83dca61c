// The trainer's model on one packed batch, for run_reference.py: loads a
// Hugging Face model folder exactly as skrull-trainer does (config.json ->
// ModelConfig -> DecoderModel -> LoadWeights), packs the batch's sequences
// into one stream (positions restarting per sequence, targets shifted as
// the trainer shifts them) and writes to a safetensors file:
//   logits        [T, vocab] float32 (the packed forward)
//   loss_sum      [1] float64: sum of the token cross-entropies
//   label_tokens  [1] int64
//   grad.<name>   float32: d(loss_sum / label_tokens) / d(parameter), per
//                 Hugging Face parameter name
//
//   reference_tool --model DIR --batch BATCH.json --out OUT.safetensors
//                  [--dtype float32|bfloat16] [--recompute none|selective|full]
// BATCH.json: {"sequences": [{"input_ids": [...], "labels": [...]}, ...]},
// labels unshifted as transformers takes them (-100 = no loss).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "scheduler/model_config.h"
#include "trainer/model/chunked_loss.h"
#include "trainer/model/model.h"
#include "trainer/model/safetensors.h"
#include "trainer/model/tensor_io.h"

namespace {

using namespace skrull;

int Fail(const std::string& what) {
  std::cerr << "reference_tool: " << what << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, batch_path, out_path, dtype = "float32", recompute = "none";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model")
      model_dir = value;
    else if (flag == "--batch")
      batch_path = value;
    else if (flag == "--out")
      out_path = value;
    else if (flag == "--dtype")
      dtype = value;
    else if (flag == "--recompute")
      recompute = value;
    else
      return Fail("unknown flag " + flag);
  }
  if (model_dir.empty() || batch_path.empty() || out_path.empty()) {
    return Fail("usage: reference_tool --model DIR --batch BATCH.json --out OUT.safetensors");
  }
  const std::string config_path = (std::filesystem::path(model_dir) / "config.json").string();
  StatusOr<std::string> text = ReadFileToString(config_path);
  if (!text.ok()) return Fail(text.status().message());
  StatusOr<scheduler::ModelConfig> config = scheduler::ParseHfConfigJson(*text, config_path);
  if (!config.ok()) return Fail(config.status().message());
  model::ModelOptions options;
  options.dtype = dtype == "bfloat16" ? c10::kBFloat16 : c10::kFloat;
  options.recompute_layers = recompute == "full";
  options.recompute_mlp = recompute == "selective";
  auto created = model::DecoderModel::Create(*config, options);
  if (!created.ok()) return Fail(created.status().message());
  std::unique_ptr<model::DecoderModel> m = std::move(created).value();
  Status loaded = m->LoadWeights(model_dir);
  if (!loaded.ok()) return Fail(loaded.message());

  StatusOr<std::string> batch_text = ReadFileToString(batch_path);
  if (!batch_text.ok()) return Fail(batch_text.status().message());
  const nlohmann::json batch = nlohmann::json::parse(*batch_text);
  std::vector<int64_t> ids, positions, targets;
  model::PackedBatch packed;
  packed.cu_seqlens.push_back(0);
  for (const nlohmann::json& seq : batch["sequences"]) {
    const std::vector<int64_t> in = seq["input_ids"].get<std::vector<int64_t>>();
    const std::vector<int64_t> labels = seq["labels"].get<std::vector<int64_t>>();
    for (size_t i = 0; i < in.size(); ++i) {
      ids.push_back(in[i]);
      positions.push_back(static_cast<int64_t>(i));
      targets.push_back(i + 1 < in.size() ? labels[i + 1] : model::kIgnoreIndex);
    }
    packed.cu_seqlens.push_back(static_cast<int64_t>(ids.size()));
  }
  const auto long_options = at::TensorOptions().dtype(at::kLong);
  packed.input_ids = at::tensor(ids, long_options);
  packed.position_ids = at::tensor(positions, long_options);
  packed.targets = at::tensor(targets, long_options);
  int64_t label_tokens = 0;
  for (int64_t t : targets) label_tokens += t != model::kIgnoreIndex;

  model::SafetensorsWriter writer;
  at::Tensor logits;
  {
    at::NoGradGuard no_grad;
    logits = m->Logits(packed).contiguous();
  }
  at::Tensor loss_sum = m->LossSum(packed);
  (loss_sum / static_cast<double>(label_tokens)).backward();
  Status added = model::AddTensor(&writer, "logits", logits);
  if (added.ok()) {
    added = model::AddTensor(&writer, "loss_sum", loss_sum.detach().to(at::kDouble).reshape({1}));
  }
  if (added.ok()) added = model::AddTensor(&writer, "label_tokens", at::tensor({label_tokens}));
  for (const auto& [name, p] : m->NamedParameters()) {
    if (!added.ok()) break;
    if (p.grad().defined()) added = model::AddTensor(&writer, "grad." + name, p.grad(), at::kFloat);
  }
  if (!added.ok()) return Fail(added.message());
  Status written = writer.WriteFile(out_path);
  if (!written.ok()) return Fail(written.message());
  return 0;
}
