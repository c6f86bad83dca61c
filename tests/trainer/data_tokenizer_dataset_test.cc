// text-jsonl through a Hugging Face tokenizer: the Dataset's ids equal the
// TextEncoder's, the chat labels arrive, vocabulary overflow names the line
// and id, indexing in parallel equals indexing serially, and the index cache
// is reused only while data, tokenizer and template are unchanged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/tokenizer/tokenizer_test_util.h"
#include "tokenizer/text_encoder.h"
#include "trainer/data/dataset.h"

namespace skrull::data {
namespace {

namespace fs = std::filesystem;

constexpr char kTemplate[] =
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{% endfor %}";

class TokenizerDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("skrull_tok_ds_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model");
    tokenizer::testing::TokenizerJsonBuilder b;
    b.Merge("h", "e");
    im_start_ = b.Added("<|im_start|>", true);
    im_end_ = b.Added("<|im_end|>", true);
    std::ofstream(dir_ / "model" / "tokenizer.json") << b.Json();
    WriteConfig(kTemplate);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void WriteConfig(const std::string& chat_template) {
    std::ofstream(dir_ / "model" / "tokenizer_config.json")
        << nlohmann::json({{"eos_token", "<|im_end|>"}, {"chat_template", chat_template}}).dump();
  }
  DatasetOptions Options(const std::string& data) {
    std::ofstream(dir_ / "data.jsonl", std::ios::binary) << data;
    DatasetOptions o;
    o.path = (dir_ / "data.jsonl").string();
    o.format = api::DataFormat::kTextJsonl;
    o.tokenizer = (dir_ / "model").string();
    return o;
  }
  static std::unique_ptr<Dataset> OpenOk(const DatasetOptions& o) {
    auto ds = Dataset::Open(o);
    EXPECT_TRUE(ds.ok()) << ds.status().message();
    return ds.ok() ? std::move(*ds) : nullptr;
  }

  fs::path dir_;
  int im_start_ = 0, im_end_ = 0;
};

TEST_F(TokenizerDatasetTest, TextAndChatLinesUseTheModelsTokenizer) {
  auto o = Options(
      "{\"text\": \"hello\"}\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, "
      "{\"role\": \"assistant\", \"content\": \"he\"}]}\n");
  auto ds = OpenOk(o);
  ASSERT_EQ(ds->size(), 2);
  auto encoder = tokenizer::TextEncoder::Load({o.tokenizer, ""});
  ASSERT_TRUE(encoder.ok());
  auto text = (*encoder)->EncodeText("hello");
  auto s0 = ds->Get(0);
  ASSERT_TRUE(s0.ok());
  EXPECT_EQ(s0->input_ids, text->input_ids);
  EXPECT_EQ(ds->LabelTokenCount(0), static_cast<int64_t>(text->input_ids.size()) - 1);
  auto s1 = ds->Get(1);
  ASSERT_TRUE(s1.ok());
  // Targets are shifted: the assistant's "he" token and <|im_end|> carry loss.
  int64_t with_loss = 0;
  for (int32_t t : s1->targets) with_loss += t != -100;
  EXPECT_EQ(with_loss, 2);
  EXPECT_EQ(s1->input_ids.front(), im_start_);
}

TEST_F(TokenizerDatasetTest, IdsBeyondTheModelsVocabularyNameLineAndId) {
  auto o = Options("{\"text\": \"he\"}\n{\"text\": \"x<|im_end|>\"}\n");
  o.vocab_size = im_end_;  // the model is one id short
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find(o.path + ":2: token id " + std::to_string(im_end_) +
                                       " (input_ids[1]) is >= the model's vocab_size " +
                                       std::to_string(im_end_)),
            std::string::npos)
      << ds.status().message();
}

TEST_F(TokenizerDatasetTest, ParallelIndexEqualsSerialIndex) {
  std::string data;
  for (int i = 0; i < 300; ++i) {
    data += "{\"text\": \"line " + std::to_string(i) +
            std::string(static_cast<size_t>(i % 17), 'h') + "\"}\n";
    if (i % 50 == 0) data += "\n";
  }
  auto o = Options(data);
  o.cache_index = false;
  o.threads = 1;
  auto serial = OpenOk(o);
  o.threads = 4;
  auto parallel = OpenOk(o);
  ASSERT_EQ(serial->size(), parallel->size());
  for (int64_t i = 0; i < serial->size(); ++i) {
    EXPECT_EQ(serial->Length(i), parallel->Length(i));
    EXPECT_EQ(serial->Location(i), parallel->Location(i));
  }
  EXPECT_EQ(StatsSummary(serial->stats()), StatsSummary(parallel->stats()));
}

TEST_F(TokenizerDatasetTest, IndexCacheIsReusedOnlyForTheSameInputs) {
  auto o = Options("{\"text\": \"hello\"}\n{\"text\": \"he he\"}\n");
  auto first = OpenOk(o);
  EXPECT_EQ(first->stats().index_cache.rfind("built in ", 0), 0u) << first->stats().index_cache;
  EXPECT_TRUE(fs::exists(o.path + ".skrull-index"));
  auto second = OpenOk(o);
  EXPECT_EQ(second->stats().index_cache, "loaded from " + o.path + ".skrull-index");
  EXPECT_EQ(second->Length(1), first->Length(1));
  // A new template (same data) rebuilds.
  WriteConfig(std::string(kTemplate) + " ");
  EXPECT_EQ(OpenOk(o)->stats().index_cache.rfind("built in ", 0), 0u);
  // New data (same size) rebuilds too.
  auto changed = Options("{\"text\": \"hellx\"}\n{\"text\": \"he he\"}\n");
  EXPECT_EQ(OpenOk(changed)->stats().index_cache.rfind("built in ", 0), 0u);
  EXPECT_EQ(OpenOk(changed)->stats().index_cache, "loaded from " + o.path + ".skrull-index");
}

TEST_F(TokenizerDatasetTest, ChatWithoutAnAssistantTurnIsMalformed) {
  auto o = Options("{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}\n");
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find(o.path + ":1: \"messages\" has no assistant turn"),
            std::string::npos)
      << ds.status().message();
}

}  // namespace
}  // namespace skrull::data
