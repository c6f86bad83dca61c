#include "trainer/data/byte_tokenizer.h"

#include <gtest/gtest.h>

#include "trainer/data/sample.h"

namespace skrull::data {
namespace {

using Ids = std::vector<int32_t>;
constexpr int32_t M = kIgnoreIndex;

TEST(ByteTokenizer, VocabularyIsExactlyTheBytesAndSpecialsAreControlBytes) {
  EXPECT_EQ(kByteVocabSize, 256);
  for (int32_t id : {kBosId, kEosId, kSystemId, kUserId, kAssistantId}) {
    EXPECT_GE(id, 0x01);
    EXPECT_LE(id, 0x05);
  }
}

TEST(ByteTokenizer, TextIsBosBytesEosAllLabelled) {
  auto e = EncodeText("hi");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->input_ids, (Ids{kBosId, 'h', 'i', kEosId}));
  EXPECT_EQ(e->labels, e->input_ids);
  EXPECT_EQ(static_cast<int64_t>(e->input_ids.size()), TextTokenCount(2));
}

TEST(ByteTokenizer, Utf8BytesAreTokensOfTheirOwn) {
  auto e = EncodeText("\xc3\xa9");  // é
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->input_ids, (Ids{kBosId, 0xc3, 0xa9, kEosId}));
}

TEST(ByteTokenizer, ChatLabelsOnlyAssistantContentAndItsEos) {
  auto e =
      EncodeChat({{ChatRole::kSystem, "s"}, {ChatRole::kUser, "hi"}, {ChatRole::kAssistant, "yo"}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->input_ids, (Ids{kBosId, kSystemId, 's', kEosId, kUserId, 'h', 'i', kEosId,
                               kAssistantId, 'y', 'o', kEosId}));
  EXPECT_EQ(e->labels, (Ids{M, M, M, M, M, M, M, M, M, 'y', 'o', kEosId}));
  // Shifted: the assistant marker predicts the first answer byte.
  Sample s = MakeShiftedSample(e->input_ids, e->labels);
  EXPECT_EQ(s.targets, (Ids{M, M, M, M, M, M, M, M, 'y', 'o', kEosId, M}));
  EXPECT_EQ(LabelTokens(s), 3);
}

TEST(ByteTokenizer, MultiTurnLabelsEveryAssistantTurn) {
  auto e = EncodeChat({{ChatRole::kUser, "a"},
                       {ChatRole::kAssistant, "b"},
                       {ChatRole::kUser, "c"},
                       {ChatRole::kAssistant, "d"}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->labels, (Ids{M, M, M, M, M, 'b', kEosId, M, M, M, M, 'd', kEosId}));
  int64_t expected = kChatPrefixTokens + 4 * ChatTurnTokenCount(1);
  EXPECT_EQ(static_cast<int64_t>(e->input_ids.size()), expected);
}

TEST(ByteTokenizer, ReservedBytesAreRejectedNamingWhereAndHow) {
  auto t = EncodeText(std::string("ab\x03", 3));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("text has byte 0x03 at byte offset 2"), std::string::npos)
      << t.status();
  EXPECT_NE(t.status().message().find("\\u0001-\\u0005"), std::string::npos);

  auto c = EncodeChat({{ChatRole::kUser, "ok"}, {ChatRole::kAssistant, std::string("\x01", 1)}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("messages[1].content has byte 0x01"), std::string::npos)
      << c.status();
}

TEST(ByteTokenizer, NulAndOtherControlBytesAreOrdinaryTokens) {
  auto e = EncodeText(std::string("\0\x06\x7f", 3));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->input_ids, (Ids{kBosId, 0, 6, 127, kEosId}));
}

TEST(ByteTokenizer, RolesParseAndUnknownRoleNamesTheChoices) {
  EXPECT_EQ(*ParseChatRole("assistant"), ChatRole::kAssistant);
  EXPECT_STREQ(ChatRoleName(*ParseChatRole("system")), "system");
  auto bad = ParseChatRole("bot");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "unknown role \"bot\"; use one of system, user, assistant");
}

TEST(ByteTokenizer, DecodeForDisplayShowsSpecials) {
  auto e = EncodeChat({{ChatRole::kUser, "q"}, {ChatRole::kAssistant, "a"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(DecodeForDisplay(e->input_ids), "<|bos|><|user|>q<|eos|><|assistant|>a<|eos|>");
  EXPECT_EQ(DecodeForDisplay({300, -1}), "<|id:300|><|id:-1|>");
}

}  // namespace
}  // namespace skrull::data
