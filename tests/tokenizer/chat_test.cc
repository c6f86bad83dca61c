#include "tokenizer/chat.h"

#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_util.h"

namespace skrull::tokenizer {
namespace {

using testing::TokenizerJsonBuilder;

constexpr char kChatMl[] =
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{% endfor %}";

struct ChatFixture {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ChatTemplate> chat;
  int start = 0, end = 0;
};

ChatFixture Make(const std::string& source) {
  TokenizerJsonBuilder b;
  ChatFixture f;
  f.start = b.Added("<|im_start|>", true);
  f.end = b.Added("<|im_end|>", true);
  auto t = Tokenizer::FromJson(b.Json(), "t.json");
  EXPECT_TRUE(t.ok());
  f.tokenizer = std::move(*t);
  auto c = ChatTemplate::Create(source, {}, "tokenizer_config.json");
  EXPECT_TRUE(c.ok()) << c.status().message();
  f.chat = std::move(*c);
  return f;
}

std::vector<int32_t> Labels(const ChatFixture& f, const std::string& messages,
                            std::vector<int32_t>* ids_out = nullptr) {
  auto rendered = f.chat->Render(nlohmann::ordered_json::parse(messages));
  EXPECT_TRUE(rendered.ok()) << rendered.status().message();
  std::vector<int32_t> ids;
  std::vector<TokenOffsets> offsets;
  EXPECT_TRUE(f.tokenizer->Encode(rendered->text, false, &ids, &offsets).ok());
  if (ids_out) *ids_out = ids;
  return ChatLabels(*rendered, ids, offsets, *f.tokenizer);
}

TEST(ChatLabels, OnlyAssistantContentAndItsEndOfTurnCarryLoss) {
  ChatFixture f = Make(kChatMl);
  std::vector<int32_t> ids;
  auto labels = Labels(f, R"([{"role": "user", "content": "q"}, {"role": "assistant",
                              "content": "ab"}])",
                       &ids);
  // <|im_start|> u s e r \n q <|im_end|> \n <|im_start|> a s s i s t a n t \n a b <|im_end|> \n
  ASSERT_EQ(ids.size(), 24u);
  std::vector<int32_t> expected(ids.size(), kIgnoreLabel);
  expected[20] = 'a';
  expected[21] = 'b';
  expected[22] = f.end;
  EXPECT_EQ(labels, expected);
}

TEST(ChatLabels, EveryAssistantTurnIsLabelledNotTheUserCopy) {
  ChatFixture f = Make(kChatMl);
  std::vector<int32_t> ids;
  // The user says the same words as the assistant: only the assistant's count.
  auto labels = Labels(f, R"([{"role": "user", "content": "x"}, {"role": "assistant",
      "content": "x"}, {"role": "user", "content": "y"}, {"role": "assistant", "content": "y"}])",
                       &ids);
  int64_t with_loss = 0;
  for (int32_t l : labels) with_loss += l != kIgnoreLabel;
  EXPECT_EQ(with_loss, 4);  // x <|im_end|> y <|im_end|>
}

TEST(ChatLabels, TrimmedContentKeepsItsLabels) {
  ChatFixture f = Make(
      "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n\\n' + m.content | trim + "
      "'<|im_end|>' }}{% endfor %}");
  std::vector<int32_t> ids;
  auto labels = Labels(
      f, R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": "  z  "}])", &ids);
  EXPECT_EQ(labels[labels.size() - 2], 'z');
  EXPECT_EQ(labels.back(), f.end);
}

TEST(ChatTemplate, ErrorsNameTheTemplateOrigin) {
  auto bad = ChatTemplate::Create("{% for x in y %}", {}, "tokenizer_config.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "tokenizer_config.json: chat template: unexpected end of template: missing "
            "{% endfor %}");
  auto raising =
      ChatTemplate::Create("{{ raise_exception('Only user and assistant roles') }}", {}, "spec");
  ASSERT_TRUE(raising.ok());
  auto out = (*raising)->Render(nlohmann::ordered_json::array());
  EXPECT_EQ(out.status().message(),
            "spec: chat template: line 1: raise_exception: Only user and assistant roles");
}

TEST(TokenizerConfig, ReadsTemplatesAndSpecialTokens) {
  auto config = ParseTokenizerConfig(
      R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
          "pad_token": null, "chat_template": [{"name": "tool_use", "template": "T"},
          {"name": "default", "template": "D"}]})",
      "c.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->chat_template, "D");
  ASSERT_EQ(config->special_tokens.size(), 2u);
  EXPECT_EQ(config->special_tokens[0].first, "bos_token");
  EXPECT_EQ(config->special_tokens[0].second.Text(), "<s>");
  EXPECT_EQ(config->special_tokens[1].second.Text(), "</s>");
}

}  // namespace
}  // namespace skrull::tokenizer
