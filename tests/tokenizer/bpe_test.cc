#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

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
            "t.json: model.dropout: is not supported by this byte-level BPE (it must be null, "
            "false or empty) (got 0.1)");
}

// Fields of the wrong JSON type used to throw nlohmann::type_error out of
// Tokenizer::FromJson (json::value()); they are errors naming the field now.
TEST(Bpe, FieldsOfTheWrongTypeAreErrorsNamingTheField) {
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& d) { d["model"]["ignore_merges"] = "yes"; },
       "t.json: model.ignore_merges: must be true or false (got \"yes\")"},
      {[](nlohmann::json& d) { d["model"]["type"] = 7; },
       "t.json: model.type: must be a string (got 7)"},
      {[](nlohmann::json& d) { d["model"]["vocab"] = nlohmann::json::array(); },
       "t.json: model.vocab: must be an object (got [])"},
      {[](nlohmann::json& d) { d["model"].erase("merges"); },
       "t.json: model.merges: required field missing"},
      {[](nlohmann::json& d) {
         d["added_tokens"] = {{{"id", 300}, {"content", "<x>"}, {"special", 1}}};
       },
       "t.json: added_tokens[0].special: must be true or false (got 1)"},
      {[](nlohmann::json& d) {
         d["post_processor"] = {{"type", false}};
       },
       "t.json: post_processor.type: must be a string (got false)"},
  };
  for (const auto& [edit, want] : cases) {
    nlohmann::json doc = nlohmann::json::parse(TokenizerJsonBuilder().Json());
    edit(doc);
    std::string got;
    try {
      auto t = Tokenizer::FromJson(doc.dump(), "t.json");
      got = t.ok() ? "ok" : t.status().message();
    } catch (const std::exception& e) {
      got = std::string("threw: ") + e.what();
    }
    EXPECT_EQ(got, want);
  }
}

}  // namespace
}  // namespace skrull::tokenizer
