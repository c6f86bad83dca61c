#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "tokenizer/regex.h"

namespace skrull::tokenizer {
namespace {

std::vector<std::string> Pieces(const nlohmann::json& spec, const std::string& text) {
  auto pre = PreTokenizer::FromJson(spec);
  EXPECT_TRUE(pre.ok()) << pre.status().message();
  std::vector<Piece> pieces;
  EXPECT_TRUE((*pre)->PreTokenize(text, &pieces).ok());
  std::vector<std::string> out;
  for (const Piece& p : pieces) {
    out.push_back((p.space_prefix ? " " : "") + text.substr(p.begin, p.end - p.begin));
  }
  return out;
}

nlohmann::json Split(const std::string& regex, const std::string& behavior) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", behavior}};
}

TEST(Regex, OnigurumaSpaceIncludesNextLine) {
  EXPECT_EQ(TranslateOnigurumaPattern(R"(\s+(?!\S)|[^\s\p{L}])"),
            R"([\s\x{85}]+(?![^\s\x{85}])|[^\s\x{85}\p{L}])");
  EXPECT_EQ(TranslateOnigurumaPattern(R"([[:alpha:]\s]\\s)"), R"([[:alpha:]\s\x{85}]\\s)");
  auto re = Regex::Compile(R"(\s+)");
  ASSERT_TRUE(re.ok());
  std::vector<std::pair<size_t, size_t>> m;
  ASSERT_TRUE((*re)->FindAll("a\xC2\x85 b", &m).ok());  // NEL then space
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0], std::make_pair(size_t{1}, size_t{4}));
}

TEST(Regex, ReportsPatternsThatDoNotCompile) {
  auto re = Regex::Compile("(unclosed");
  ASSERT_FALSE(re.ok());
  EXPECT_EQ(re.status().message(),
            "regex (unclosed does not compile (PCRE2: missing closing parenthesis at offset 9)");
}

TEST(PreTokenizer, SplitBehavioursAsHuggingFace) {
  const std::string text = "a-b--c";
  EXPECT_EQ(Pieces(Split("-", "Isolated"), text),
            std::vector<std::string>({"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(Pieces(Split("-", "Removed"), text), std::vector<std::string>({"a", "b", "c"}));
  EXPECT_EQ(Pieces(Split("-", "MergedWithPrevious"), text),
            std::vector<std::string>({"a-", "b-", "-", "c"}));
  EXPECT_EQ(Pieces(Split("-", "MergedWithNext"), text),
            std::vector<std::string>({"a", "-b", "-", "-c"}));
  EXPECT_EQ(Pieces(Split("-", "Contiguous"), text),
            std::vector<std::string>({"a", "-", "b", "--", "c"}));
}

TEST(PreTokenizer, ByteLevelPrefixSpaceAndGpt2Pattern) {
  const nlohmann::json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(Pieces(byte_level, "Hello world's  end"),
            std::vector<std::string>({" Hello", " world", "'s", " ", " end"}));
}

TEST(PreTokenizer, RefusesUnknownBehaviour) {
  auto pre = PreTokenizer::FromJson(Split("x", "Sideways"));
  ASSERT_FALSE(pre.ok());
  EXPECT_EQ(pre.status().message(), "pre_tokenizer.behavior: unknown behavior \"Sideways\"");
}

}  // namespace
}  // namespace skrull::tokenizer
