#include "tokenizer/text_encoder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/tokenizer/tokenizer_test_util.h"

namespace skrull::tokenizer {
namespace {

namespace fs = std::filesystem;

class TextEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skrull_text_encoder_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    testing::TokenizerJsonBuilder b;
    end_ = b.Added("<|im_end|>", true);
    Write("tokenizer.json", b.Json());
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
  int end_ = 0;
};

TEST_F(TextEncoderTest, LoadsAModelFolderWithItsChatTemplate) {
  Write(
      "tokenizer_config.json",
      R"({"eos_token": "<|im_end|>", "chat_template": "{% for m in messages %}{{ m.content + eos_token }}{% endfor %}"})");
  auto e = TextEncoder::Load({dir_.string(), ""});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ((*e)->chat_template_origin(), (dir_ / "tokenizer_config.json").string());
  auto r = (*e)->EncodeChat(nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->input_ids, std::vector<int32_t>({'a', end_, 'b', end_}));
  EXPECT_EQ(r->labels, std::vector<int32_t>({-100, -100, 'b', end_}));
  auto text = (*e)->EncodeText("ab");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->input_ids, std::vector<int32_t>({'a', 'b'}));
  EXPECT_TRUE(text->labels.empty());
}

TEST_F(TextEncoderTest, ChatTemplateOverrideWinsAndChangesTheFingerprint) {
  auto plain = TextEncoder::Load({(dir_ / "tokenizer.json").string(), ""});
  ASSERT_TRUE(plain.ok());
  auto chat = (*plain)->EncodeChat(nlohmann::ordered_json::array());
  EXPECT_EQ(chat.status().message(),
            (dir_ / "tokenizer.json").string() +
                " has no chat template (no chat_template in tokenizer_config.json, no "
                "chat_template.jinja); set spec.data.chatTemplate to the model's template");
  auto custom = TextEncoder::Load({(dir_ / "tokenizer.json").string(), "{{ 'x' }}"});
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ((*custom)->chat_template_origin(), "spec.data.chatTemplate");
  EXPECT_NE((*custom)->fingerprint(), (*plain)->fingerprint());
  auto again = TextEncoder::Load({(dir_ / "tokenizer.json").string(), ""});
  EXPECT_EQ((*again)->fingerprint(), (*plain)->fingerprint());
}

TEST_F(TextEncoderTest, MissingFilesNameTheField) {
  auto missing = TextEncoder::Load({(dir_ / "nope").string(), ""});
  EXPECT_EQ(missing.status().message(),
            (dir_ / "nope").string() + ": no such file or folder; check spec.data.tokenizer");
  fs::create_directory(dir_ / "empty");
  auto empty = TextEncoder::Load({(dir_ / "empty").string(), ""});
  EXPECT_EQ(empty.status().message(),
            (dir_ / "empty").string() +
                ": the folder has no tokenizer.json; spec.data.tokenizer must name a "
                "tokenizer.json or a Hugging Face model folder that has one");
}

}  // namespace
}  // namespace skrull::tokenizer
