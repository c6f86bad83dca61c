#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_util.h"

namespace skrull::tokenizer {
namespace {

using testing::EncodeIds;
using testing::TokenizerJsonBuilder;

std::unique_ptr<Tokenizer> Load(const TokenizerJsonBuilder& b) {
  auto t = Tokenizer::FromJson(b.Json(), "t.json");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(Tokenizer, MatchesAddedTokensBeforeThePreTokenizer) {
  TokenizerJsonBuilder b;
  const int end = b.Added("<|im_end|>", true);
  auto t = Load(b);
  EXPECT_EQ(EncodeIds(*t, "a<|im_end|>b"), std::vector<int32_t>({'a', end, 'b'}));
  // A broken spelling is ordinary text.
  EXPECT_EQ(EncodeIds(*t, "<|im_end").size(), 8u);
}

TEST(Tokenizer, AddedTokensMatchLeftmostLongest) {
  TokenizerJsonBuilder b;
  const int ab = b.Added("ab", false);
  const int abc = b.Added("abc", false);
  const int bcd = b.Added("bcd", false);
  auto t = Load(b);
  EXPECT_EQ(EncodeIds(*t, "abcd"), std::vector<int32_t>({abc, 'd'}));
  EXPECT_EQ(EncodeIds(*t, "xbcd"), std::vector<int32_t>({'x', bcd}));
  EXPECT_EQ(EncodeIds(*t, "abx"), std::vector<int32_t>({ab, 'x'}));
}

TEST(Tokenizer, AddedTokenStripsAndSingleWordAsHuggingFace) {
  TokenizerJsonBuilder b;
  const int mask = b.Added("<mask>", true, {{"lstrip", true}, {"rstrip", true}});
  const int word = b.Added("ony", false, {{"single_word", true}});
  auto t = Load(b);
  // lstrip/rstrip swallow the spaces around the token.
  EXPECT_EQ(EncodeIds(*t, "a  <mask>  b"), std::vector<int32_t>({'a', mask, 'b'}));
  // single_word: not inside a word.
  EXPECT_EQ(EncodeIds(*t, "x ony y").size(), 5u);
  EXPECT_EQ(EncodeIds(*t, "x ony y")[2], word);
  EXPECT_EQ(EncodeIds(*t, "Tony").size(), 4u);
}

TEST(Tokenizer, TemplateProcessingAddsBosOnlyWithSpecialTokens) {
  TokenizerJsonBuilder b;
  const int bos = b.Added("<|begin_of_text|>", true);
  b.Set("post_processor", {{"type", "Sequence"},
                           {"processors",
                            {{{"type", "ByteLevel"}},
                             {{"type", "TemplateProcessing"},
                              {"single",
                               {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                              {"special_tokens",
                               {{"<|begin_of_text|>",
                                 {{"id", "<|begin_of_text|>"},
                                  {"ids", {bos}},
                                  {"tokens", {"<|begin_of_text|>"}}}}}}}}}});
  auto t = Load(b);
  EXPECT_EQ(EncodeIds(*t, "hi", /*special=*/true), std::vector<int32_t>({bos, 'h', 'i'}));
  EXPECT_EQ(EncodeIds(*t, "hi", /*special=*/false), std::vector<int32_t>({'h', 'i'}));
}

TEST(Tokenizer, NfcNormalizerComposesBeforeBpe) {
  TokenizerJsonBuilder b;
  const int e_acute = b.Merge("\xC3", "\xA9");  // é = C3 A9
  b.Set("normalizer", {{"type", "NFC"}});
  auto t = Load(b);
  // e + COMBINING ACUTE ACCENT -> é.
  EXPECT_EQ(EncodeIds(*t, "e\xCC\x81"), std::vector<int32_t>({e_acute}));
}

TEST(Tokenizer, OffsetsPointIntoTheInputText) {
  TokenizerJsonBuilder b;
  const int end = b.Added("<|end|>", true);
  b.Set("normalizer", {{"type", "NFC"}});
  auto t = Load(b);
  std::vector<int32_t> ids;
  std::vector<TokenOffsets> offsets;
  ASSERT_TRUE(t->Encode("ab<|end|> e\xCC\x81z", false, &ids, &offsets).ok());
  ASSERT_EQ(ids.size(), offsets.size());
  EXPECT_EQ(ids[2], end);
  EXPECT_EQ(offsets[2].begin, 2u);
  EXPECT_EQ(offsets[2].end, 9u);
  // Every offset range lies inside the input and they never go backwards.
  for (size_t k = 1; k < offsets.size(); ++k) {
    EXPECT_LE(offsets[k - 1].begin, offsets[k].begin);
    EXPECT_LE(offsets[k].end, 14u);
  }
}

TEST(Tokenizer, RefusesInvalidUtf8NamingTheByte) {
  TokenizerJsonBuilder b;
  auto t = Load(b);
  std::vector<int32_t> ids;
  Status s = t->Encode("ok\xFFno", true, &ids);
  EXPECT_EQ(s.message(), "text is not valid UTF-8 (byte 2); the tokenizer needs UTF-8 text");
  s = t->Encode("\xED\xA0\x80", true, &ids);  // a UTF-16 surrogate
  EXPECT_EQ(s.message(), "text is not valid UTF-8 (byte 0); the tokenizer needs UTF-8 text");
}

TEST(Tokenizer, RefusesUnsupportedTypesNamingThem) {
  struct Case {
    std::string key;
    nlohmann::json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"normalizer",
       {{"type", "Lowercase"}},
       "t.json: normalizer.type: \"Lowercase\" is not supported (supported: NFC, NFD, NFKC, NFKD, "
       "Sequence of them, or null)"},
      {"pre_tokenizer",
       {{"type", "Metaspace"}},
       "t.json: pre_tokenizer.type: \"Metaspace\" is not supported (supported: Split, ByteLevel, "
       "Sequence)"},
      {"post_processor",
       {{"type", "RobertaProcessing"}},
       "t.json: post_processor.type: \"RobertaProcessing\" is not supported (supported: "
       "ByteLevel, TemplateProcessing, Sequence of them, or null)"},
      {"truncation",
       {{"max_length", 512}},
       "t.json: truncation: is set; set it to null (spec.data.maxLength and the scheduler decide "
       "lengths)"},
  };
  for (const Case& c : cases) {
    TokenizerJsonBuilder b;
    b.Set(c.key, c.value);
    auto t = Tokenizer::FromJson(b.Json(), "t.json");
    ASSERT_FALSE(t.ok()) << c.key;
    EXPECT_EQ(t.status().message(), c.message);
  }
  TokenizerJsonBuilder unigram;
  unigram.SetModel("type", "Unigram");
  auto t = Tokenizer::FromJson(unigram.Json(), "t.json");
  EXPECT_EQ(t.status().message(),
            "t.json: model.type: \"Unigram\" is not supported (supported: byte-level BPE, as Qwen2 "
            "and Llama-3 use)");
  TokenizerJsonBuilder no_bytes;
  no_bytes.Set("pre_tokenizer",
               {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}});
  t = Tokenizer::FromJson(no_bytes.Json(), "t.json");
  EXPECT_EQ(t.status().message(),
            "t.json: pre_tokenizer has no ByteLevel step; only byte-level BPE tokenizers (Qwen2, "
            "Qwen2.5, Qwen3, Llama-3, GPT-2) are supported");
}

TEST(Tokenizer, EndIdCoversVocabularyAndAddedTokens) {
  TokenizerJsonBuilder b;
  b.Merge("a", "b");
  const int special = b.Added("<s>", true);
  auto t = Load(b);
  EXPECT_EQ(t->end_id(), special + 1);
  EXPECT_TRUE(t->IsSpecial(special));
  EXPECT_FALSE(t->IsSpecial('a'));
  EXPECT_EQ(t->TokenToId("<s>"), special);
}

}  // namespace
}  // namespace skrull::tokenizer
