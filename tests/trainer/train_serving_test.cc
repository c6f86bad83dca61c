// Serving-ready output: checkpoint retention (keepLast), the
// generation and tokenizer files every saved folder carries, and
// skrull-export with and without --merge-lora.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "tests/test_temp_dir.h"
#include "trainer/model/model.h"
#include "trainer/train/checkpoint.h"
#include "trainer/train/export.h"
#include "trainer/train/serving_files.h"

namespace skrull::train {
namespace {

namespace fs = std::filesystem;
using testing_util::TestTempDir;

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

Status WriteState(const std::string& tmp) {
  return WriteFileAtomically((fs::path(tmp) / kTrainerStateFile).string(),
                             TrainerStateToJson(TrainerState()));
}

TEST(KeepLast, DeletesOnlyCompleteCheckpointsOlderThanTheNewestN) {
  const std::string out = TestTempDir("keep");
  for (int64_t step : {1, 2, 3, 4}) ASSERT_TRUE(CommitCheckpoint(out, step, WriteState).ok());
  // A checkpoint being written, and a folder that is not a checkpoint.
  fs::create_directories(fs::path(CheckpointsRoot(out)) / "step-5.tmp");
  fs::create_directories(fs::path(CheckpointsRoot(out)) / "step-0");
  auto removed = PruneCheckpoints(out, 2);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(removed->size(), 2u);
  for (const char* gone : {"step-1", "step-2"}) {
    EXPECT_FALSE(fs::exists(fs::path(CheckpointsRoot(out)) / gone)) << gone;
  }
  for (const char* kept : {"step-3", "step-4", "step-5.tmp", "step-0"}) {
    EXPECT_TRUE(fs::exists(fs::path(CheckpointsRoot(out)) / kept)) << kept;
  }
  // keepLast 1 after a resume wrote an older step: `latest` (step-2) is spared
  // along with the newest.
  ASSERT_TRUE(CommitCheckpoint(out, 2, WriteState).ok());
  removed = PruneCheckpoints(out, 1);
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(fs::exists(CheckpointDir(out, 2)));
  EXPECT_TRUE(fs::exists(CheckpointDir(out, 4)));
  EXPECT_FALSE(fs::exists(CheckpointDir(out, 3)));
  EXPECT_TRUE(PruneCheckpoints(out, 0)->empty());  // 0 keeps all
}

scheduler::ModelConfig TinyConfig() {
  scheduler::ModelConfig c;
  c.model_type = "qwen3";
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 48;
  c.vocab_size = 61;
  c.max_position_embeddings = 64;
  c.rope_theta = 1e6;
  c.eos_token_ids = {7, 9};
  return c;
}

TEST(ServingFiles, CopiesTokenizerAndWritesTheTrainedChatTemplate) {
  const fs::path model = TestTempDir("model"), tok = TestTempDir("tok"), out = TestTempDir("out");
  Write(model / "generation_config.json", "{\"eos_token_id\": 5}\n");
  Write(model / "tokenizer.json", "model's");
  Write(model / "merges.txt", "m");
  Write(tok / "tokenizer.json", "tokenizer's");
  Write(tok / "tokenizer_config.json", R"({"chat_template": "old", "eos_token": "x"})");
  Write(tok / "chat_template.jinja", "old");
  ServingSources s{model.string(), (tok / "tokenizer.json").string(), "{{ new }}"};
  auto written = WriteServingFiles(TinyConfig(), s, out.string());
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*ReadFileToString((out / "generation_config.json").string()),
            "{\"eos_token_id\": 5}\n");
  EXPECT_EQ(*ReadFileToString((out / "tokenizer.json").string()), "tokenizer's");
  EXPECT_EQ(*ReadFileToString((out / "merges.txt").string()), "m");
  EXPECT_FALSE(fs::exists(out / "chat_template.jinja"));
  auto config = nlohmann::json::parse(*ReadFileToString((out / "tokenizer_config.json").string()));
  EXPECT_EQ(config["chat_template"], "{{ new }}");
  EXPECT_EQ(config["eos_token"], "x");
  // No generation_config.json in the model folder: written from config.json's ids.
  const fs::path out2 = TestTempDir("out2");
  ASSERT_TRUE(WriteServingFiles(TinyConfig(), ServingSources{}, out2.string()).ok());
  EXPECT_NE(ReadFileToString((out2 / "generation_config.json").string())->find("\"eos_token_id\""),
            std::string::npos);
}

TEST(Export, MergesLoraAsPeftAndRefusesWithoutTheFlag) {
  const scheduler::ModelConfig c = TinyConfig();
  const fs::path base = TestTempDir("base"), ckpt = TestTempDir("ckpt");
  model::ModelOptions o;
  o.seed = 3;
  o.lora.rank = 2;
  o.lora.alpha = 8;
  o.lora.target_modules = {"q_proj", "up_proj"};
  auto lora = model::DecoderModel::Create(c, o);
  ASSERT_TRUE(lora.ok()) << lora.status();
  {
    at::NoGradGuard no_grad;
    for (auto& [name, p] : (*lora)->NamedTrainableParameters()) p.normal_(0, 0.1);
  }
  ASSERT_TRUE((*lora)->SaveWeights((base / "model.safetensors").string()).ok());
  Write(base / "config.json", scheduler::ToHfConfigJson(c));
  ASSERT_TRUE((*lora)->SaveLoraAdapters(ckpt.string(), base.string()).ok());
  Write(ckpt / "config.json", scheduler::ToHfConfigJson(c));

  const std::string out = TestTempDir("exports") + "/merged";
  Status refused = ExportModel({ckpt.string(), out, false, ""});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("--merge-lora"), std::string::npos) << refused;
  Status merged = ExportModel({ckpt.string(), out, true, ""});
  ASSERT_TRUE(merged.ok()) << merged;
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"}) {
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  }
  auto plain = model::DecoderModel::Create(c, model::ModelOptions());
  ASSERT_TRUE((*plain)->LoadWeights(out).ok());
  const auto batch = model::PackSequences({{1, 2, 3, 4, 5}, {6, 7}});
  at::NoGradGuard no_grad;
  at::Tensor want = (*lora)->Logits(batch), got = (*plain)->Logits(batch);
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-5 * want.abs().max().item<double>());
  // The full-weight folder exports without the flag.
  const std::string again = TestTempDir("exports2") + "/full";
  Status full = ExportModel({out, again, false, ""});
  EXPECT_TRUE(full.ok()) << full;
}

}  // namespace
}  // namespace skrull::train
