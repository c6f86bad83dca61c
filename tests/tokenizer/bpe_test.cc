#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_util.h"
#include "tokenizer/tokenizer.h"

namespace skrull::tokenizer {
namespace {

using testing::EncodeIds;
using testing::TokenizerJsonBuilder;

TEST(Bpe, AppliesTheLowestRankedPairFirst) {
  TokenizerJsonBuilder b;
  const int bc = b.Merge("b", "c");  // rank 0
  b.Merge("a", "b");                 // rank 1: loses to "bc" in "abc"
  const int abc = b.Merge("a", "bc");
  auto t = Tokenizer::FromJson(b.Json(), "t.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(EncodeIds(**t, "abc"), std::vector<int32_t>({abc}));
  EXPECT_EQ(EncodeIds(**t, "bcb"), std::vector<int32_t>({bc, 'b'}));
}

TEST(Bpe, MergesTheLeftmostPairOnEqualRanks) {
  TokenizerJsonBuilder b;
  const int aa = b.Merge("a", "a");
  auto t = Tokenizer::FromJson(b.Json(), "t.json");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(EncodeIds(**t, "aaa"), std::vector<int32_t>({aa, 'a'}));
}

TEST(Bpe, IgnoreMergesTakesAWholePieceFromTheVocabulary) {
  TokenizerJsonBuilder b;
  b.Merge("a", "b");
  const int whole = b.Vocab("abc");  // reachable only through ignore_merges
  auto plain = Tokenizer::FromJson(b.Json(), "t.json");
  ASSERT_TRUE(plain.ok());
  EXPECT_NE(EncodeIds(**plain, "abc"), std::vector<int32_t>({whole}));
  b.SetModel("ignore_merges", true);
  auto ignoring = Tokenizer::FromJson(b.Json(), "t.json");
  ASSERT_TRUE(ignoring.ok());
  EXPECT_EQ(EncodeIds(**ignoring, "abc"), std::vector<int32_t>({whole}));
}

TEST(Bpe, MergesNamingUnknownTokensAreRefusedByRank) {
  TokenizerJsonBuilder b;
  b.Merge("a", "b");
  nlohmann::json doc = nlohmann::json::parse(b.Json());
  doc["model"]["merges"].push_back({"x", "zz"});
  auto t = Tokenizer::FromJson(doc.dump(), "t.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "t.json: model.merges[1] (\"x\", \"zz\"): token \"zz\" is not in model.vocab");
}

TEST(Bpe, AcceptsMergesWrittenAsStrings) {
  TokenizerJsonBuilder b;
  const int ab = b.Merge("a", "b");
  nlohmann::json doc = nlohmann::json::parse(b.Json());
  doc["model"]["merges"] = {"a b"};
  auto t = Tokenizer::FromJson(doc.dump(), "t.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(EncodeIds(**t, "ab"), std::vector<int32_t>({ab}));
}

TEST(Bpe, RefusesAVocabularyWithoutAllByteTokens) {
  TokenizerJsonBuilder b;
  nlohmann::json doc = nlohmann::json::parse(b.Json());
  doc["model"]["vocab"].erase("!");
  auto t = Tokenizer::FromJson(doc.dump(), "t.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "t.json: model.vocab has no token for byte 33 (\"!\"); only byte-level BPE "
            "vocabularies (all 256 byte tokens) are supported");
}

TEST(Bpe, RefusesDropoutAndByteFallback) {
  TokenizerJsonBuilder b;
  b.SetModel("dropout", 0.1);
  auto t = Tokenizer::FromJson(b.Json(), "t.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "t.json: model.dropout = 0.1 is not supported by this byte-level BPE (it must be "
            "null, false or empty)");
}

}  // namespace
}  // namespace skrull::tokenizer
