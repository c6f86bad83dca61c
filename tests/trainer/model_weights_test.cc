// DecoderModel weights I/O: save/load round trips (fp32, bf16, fp16), a
// sharded folder, and the specific error for each kind of bad checkpoint.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/model/model.h"
#include "trainer/model/safetensors.h"
#include "trainer/model/safetensors_checkpoint.h"

namespace skrull::model {
namespace {

namespace fs = std::filesystem;

scheduler::ModelConfig SmallConfig(bool tied) {
  scheduler::ModelConfig c;
  c.model_type = "qwen2";
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 8;
  c.intermediate_size = 24;
  c.vocab_size = 37;
  c.max_position_embeddings = 1024;
  c.attention_bias = true;
  c.tie_word_embeddings = tied;
  return c;
}

std::unique_ptr<DecoderModel> Make(bool tied, uint64_t seed, c10::ScalarType dtype = c10::kFloat) {
  ModelOptions o;
  o.seed = seed;
  o.dtype = dtype;
  auto m = DecoderModel::Create(SmallConfig(tied), o);
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(m).value();
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("skrull_w_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void ExpectSameParameters(const DecoderModel& a, const DecoderModel& b) {
  auto pa = a.NamedParameters(), pb = b.NamedParameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
  }
}

// Rewrites a safetensors file through `edit`, which may drop, rename or
// replace entries: returns false to drop the tensor.
using Edit = std::function<bool(TensorInfo* info, std::string* bytes)>;
void Rewrite(const std::string& in, const std::string& out, const Edit& edit,
             const std::vector<std::pair<TensorInfo, std::string>>& extra = {}) {
  auto file = SafetensorsFile::Open(in);
  ASSERT_TRUE(file.ok()) << file.status();
  SafetensorsWriter w;
  for (const TensorInfo& t : (*file)->tensors()) {
    TensorInfo info = t;
    std::string bytes((*file)->Data(t));
    if (!edit(&info, &bytes)) continue;
    ASSERT_TRUE(w.AddBytes(info.name, info.dtype, info.shape, bytes).ok()) << info.name;
  }
  for (const auto& [info, bytes] : extra) {
    ASSERT_TRUE(w.AddBytes(info.name, info.dtype, info.shape, bytes).ok());
  }
  ASSERT_TRUE(w.WriteFile(out).ok());
}

TEST(ModelWeights, SaveThenLoadGivesIdenticalParametersAndLogits) {
  TempDir dir;
  auto a = Make(/*tied=*/false, 1);
  ASSERT_TRUE(a->SaveWeights(dir / "model.safetensors").ok());
  auto b = Make(false, 2);
  ASSERT_TRUE(b->LoadWeights(dir.str()).ok());  // folder with model.safetensors
  ExpectSameParameters(*a, *b);
  PackedBatch batch = PackSequences({{1, 2, 3, 4}, {5, 6}});
  EXPECT_TRUE(at::equal(a->Logits(batch), b->Logits(batch)));

  auto file = SafetensorsFile::Open(dir / "model.safetensors");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  EXPECT_NE((*file)->Find("lm_head.weight"), nullptr);
  EXPECT_EQ((*file)->Find("model.layers.1.self_attn.v_proj.bias")->shape,
            (std::vector<int64_t>{8}));
}

TEST(ModelWeights, TiedModelWritesNoLmHead) {
  TempDir dir;
  auto a = Make(/*tied=*/true, 1);
  ASSERT_TRUE(a->SaveWeights(dir / "m.safetensors").ok());
  auto file = SafetensorsFile::Open(dir / "m.safetensors");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->Find("lm_head.weight"), nullptr);
  EXPECT_EQ((*file)->tensors().size(), a->NamedParameters().size());
}

TEST(ModelWeights, Bf16OnDiskConvertsToModelDtype) {
  TempDir dir;
  auto a = Make(true, 1);
  ASSERT_TRUE(a->SaveWeights(dir / "bf16.safetensors", c10::kBFloat16).ok());
  auto file = SafetensorsFile::Open(dir / "bf16.safetensors");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->Find("model.norm.weight")->dtype, DType::kBF16);

  auto b = Make(true, 2);
  ASSERT_TRUE(b->LoadWeights(dir / "bf16.safetensors").ok());
  auto pa = a->NamedParameters(), pb = b->NamedParameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(at::equal(pa[i].second.to(at::kBFloat16).to(at::kFloat), pb[i].second))
        << pa[i].first;
  }
  // And a bf16 model loads it bit for bit, and saves the same bytes back.
  auto c = Make(true, 3, c10::kBFloat16);
  ASSERT_TRUE(c->LoadWeights(dir / "bf16.safetensors").ok());
  ASSERT_TRUE(c->SaveWeights(dir / "again.safetensors").ok());
  EXPECT_EQ(*ReadFileToString(dir / "bf16.safetensors"),
            *ReadFileToString(dir / "again.safetensors"));
}

TEST(ModelWeights, Fp16OnDiskLoads) {
  TempDir dir;
  auto a = Make(true, 1);
  ASSERT_TRUE(a->SaveWeights(dir / "h.safetensors", c10::kHalf).ok());
  auto b = Make(true, 2);
  ASSERT_TRUE(b->LoadWeights(dir / "h.safetensors").ok());
  auto pa = a->NamedParameters(), pb = b->NamedParameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(at::equal(pa[i].second.to(at::kHalf).to(at::kFloat), pb[i].second)) << pa[i].first;
  }
}

TEST(ModelWeights, ShardedFolderWithIndexLoads) {
  TempDir dir;
  auto a = Make(false, 1);
  ASSERT_TRUE(a->SaveWeights(dir / "full.safetensors").ok());
  // Layer 0 and embeddings in shard 1, the rest in shard 2.
  auto in_first = [](const std::string& n) {
    return n.find("layers.0.") != std::string::npos || n.find("embed") != std::string::npos;
  };
  Rewrite(dir / "full.safetensors", dir / "ckpt/model-00001-of-00002.safetensors",
          [&](TensorInfo* t, std::string*) { return in_first(t->name); });
  Rewrite(dir / "full.safetensors", dir / "ckpt/model-00002-of-00002.safetensors",
          [&](TensorInfo* t, std::string*) { return !in_first(t->name); });
  nlohmann::json map;
  for (const auto& [name, p] : a->NamedParameters()) {
    map[name] =
        in_first(name) ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  ASSERT_TRUE(WriteFileAtomically(dir / "ckpt/model.safetensors.index.json",
                                  nlohmann::json{{"weight_map", map}}.dump())
                  .ok());
  auto b = Make(false, 2);
  Status s = b->LoadWeights(dir / "ckpt");
  ASSERT_TRUE(s.ok()) << s;
  ExpectSameParameters(*a, *b);
}

class BadCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = Make(true, 1);
    ASSERT_TRUE(model_->SaveWeights(dir_ / "good.safetensors").ok());
  }
  // Loads `path` into a fresh model, expects failure, checks the model is
  // unchanged, returns the message.
  std::string LoadError(const std::string& path) {
    auto fresh = Make(true, 9);
    auto before = Make(true, 9);
    Status s = fresh->LoadWeights(path);
    EXPECT_FALSE(s.ok());
    ExpectSameParameters(*fresh, *before);
    return s.message();
  }
  TempDir dir_;
  std::unique_ptr<DecoderModel> model_;
};

TEST_F(BadCheckpoint, MissingTensorNamesTensorAndExpectedShape) {
  Rewrite(dir_ / "good.safetensors", dir_ / "bad.safetensors", [](TensorInfo* t, std::string*) {
    return t->name != "model.layers.1.mlp.up_proj.weight";
  });
  std::string msg = LoadError(dir_ / "bad.safetensors");
  EXPECT_NE(
      msg.find("missing tensor 'model.layers.1.mlp.up_proj.weight' (expected shape [24, 16])"),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
}

TEST_F(BadCheckpoint, ExtraTensorNamesTensorAndFile) {
  TensorInfo extra;
  extra.name = "model.layers.0.self_attn.surprise";
  extra.dtype = DType::kF32;
  extra.shape = {2};
  Rewrite(dir_ / "good.safetensors", dir_ / "bad.safetensors",
          [](TensorInfo*, std::string*) { return true; }, {{extra, std::string(8, '\0')}});
  std::string msg = LoadError(dir_ / "bad.safetensors");
  EXPECT_NE(msg.find("unexpected tensor 'model.layers.0.self_attn.surprise' in "),
            std::string::npos)
      << msg;
}

TEST_F(BadCheckpoint, LmHeadInTiedCheckpointExplainsTheFix) {
  TensorInfo head;
  head.name = "lm_head.weight";
  head.dtype = DType::kF32;
  head.shape = {37, 16};
  Rewrite(dir_ / "good.safetensors", dir_ / "bad.safetensors",
          [](TensorInfo*, std::string*) { return true; }, {{head, std::string(37 * 16 * 4, '\0')}});
  std::string msg = LoadError(dir_ / "bad.safetensors");
  EXPECT_NE(msg.find("tie_word_embeddings"), std::string::npos) << msg;
}

TEST_F(BadCheckpoint, WrongShapeNamesTensorFileAndBothShapes) {
  Rewrite(dir_ / "good.safetensors", dir_ / "bad.safetensors", [](TensorInfo* t, std::string* b) {
    if (t->name == "model.norm.weight") {
      t->shape = {8};
      b->resize(8 * 4);
    }
    return true;
  });
  std::string msg = LoadError(dir_ / "bad.safetensors");
  EXPECT_NE(msg.find("tensor 'model.norm.weight' in " + (dir_ / "bad.safetensors") +
                     " has shape [8], expected [16]"),
            std::string::npos)
      << msg;
}

TEST_F(BadCheckpoint, IntegerDtypeIsUnsupported) {
  Rewrite(dir_ / "good.safetensors", dir_ / "bad.safetensors", [](TensorInfo* t, std::string*) {
    if (t->name == "model.norm.weight") t->dtype = DType::kI32;
    return true;
  });
  std::string msg = LoadError(dir_ / "bad.safetensors");
  EXPECT_NE(msg.find("'model.norm.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unsupported dtype I32"), std::string::npos) << msg;
}

TEST_F(BadCheckpoint, TruncatedFileAndCorruptHeader) {
  std::string good = *ReadFileToString(dir_ / "good.safetensors");
  ASSERT_TRUE(
      WriteFileAtomically(dir_ / "trunc.safetensors", good.substr(0, good.size() - 100)).ok());
  std::string msg = LoadError(dir_ / "trunc.safetensors");
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("trunc.safetensors"), std::string::npos) << msg;

  std::string corrupt = good;
  corrupt[8] = '[';
  corrupt[9] = '!';
  ASSERT_TRUE(WriteFileAtomically(dir_ / "corrupt.safetensors", corrupt).ok());
  msg = LoadError(dir_ / "corrupt.safetensors");
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
}

TEST_F(BadCheckpoint, AllProblemsReportedAtOnce) {
  Rewrite(dir_ / "good.safetensors", dir_ / "bad.safetensors", [](TensorInfo* t, std::string* b) {
    if (t->name == "model.norm.weight") return false;
    if (t->name == "model.layers.0.input_layernorm.weight") {
      t->shape = {4};
      b->resize(16);
    }
    return true;
  });
  std::string msg = LoadError(dir_ / "bad.safetensors");
  EXPECT_NE(msg.find("2 problem(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.norm.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers.0.input_layernorm.weight"), std::string::npos) << msg;
}

TEST_F(BadCheckpoint, RotaryBuffersAreIgnored) {
  TensorInfo inv;
  inv.name = "model.layers.0.self_attn.rotary_emb.inv_freq";
  inv.dtype = DType::kF32;
  inv.shape = {4};
  Rewrite(dir_ / "good.safetensors", dir_ / "ok.safetensors",
          [](TensorInfo*, std::string*) { return true; }, {{inv, std::string(16, '\0')}});
  auto fresh = Make(true, 9);
  EXPECT_TRUE(fresh->LoadWeights(dir_ / "ok.safetensors").ok());
  ExpectSameParameters(*fresh, *model_);
}

TEST_F(BadCheckpoint, MissingPathIsNotFound) {
  auto fresh = Make(true, 9);
  Status s = fresh->LoadWeights(dir_ / "nope");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace skrull::model
