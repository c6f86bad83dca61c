// Untrusted tokenizer.json files and chat templates (docs/tokenizer.md,
// "Untrusted model folders"): the bounds and the work budget, each error
// naming its limit. tests/tokenizer/hostile.py runs the full hostile corpus
// through skrull-tokenize.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_util.h"
#include "tokenizer/jinja/template.h"

namespace skrull {
namespace {

using jinja::RenderOptions;
using jinja::Template;
using jinja::Value;
using tokenizer::Tokenizer;
using tokenizer::testing::TokenizerJsonBuilder;

std::string Render(const std::string& source, RenderOptions options = {}) {
  auto t = Template::Parse(source);
  if (!t.ok()) return "PARSE ERROR: " + t.status().message();
  auto out = (*t)->Render({}, options);
  if (!out.ok()) return "ERROR: " + out.status().message();
  return out->text;
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(JinjaIntegers, FloorDivisionAndModuloArePythons) {
  EXPECT_EQ(Render("{{ 7 // -2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ (-9223372036854775807 - 1) % -1 }}"
                   " {{ 2 ** 62 }} {{ 1 ** 9223372036854775807 }} {{ 7 / 2 }}"),
            "-4 2 -2 0 4611686018427387904 1 3.5");
}

TEST(JinjaIntegers, OverflowIsAnErrorNotATrap) {
  EXPECT_EQ(Render("{{ (-9223372036854775807 - 1) // -1 }}"),
            "ERROR: line 1: integer overflow: -9223372036854775808 // -1 does not fit in 64 bits");
  EXPECT_EQ(Render("{{ 2 ** 63 }}"),
            "ERROR: line 1: integer overflow: 2 ** 63 does not fit in 64 bits");
  EXPECT_EQ(Render("{{ (1e19 | int) // -1 }}"),
            "ERROR: line 1: int: 1e+19 does not fit in a 64-bit integer");
  EXPECT_EQ(Render("{{ 1 // 0 }}"), "ERROR: line 1: division by zero");
  EXPECT_EQ(Render("{{ (-9223372036854775807 - 1) is divisibleby(-1) }}"), "True");
}

TEST(JinjaNesting, DeepTemplatesAreRefusedAtParse) {
  EXPECT_EQ(Render("{{ " + Repeat("(", 100000) + "1" + Repeat(")", 100000) + " }}"),
            "PARSE ERROR: line 1: expressions nested deeper than 64 levels");
  EXPECT_EQ(Render("{{ " + Repeat("not ", 100000) + "1 }}"),
            "PARSE ERROR: line 1: expressions nested deeper than 64 levels");
  EXPECT_EQ(Render("{{ x" + Repeat(".a", 100000) + " }}"),
            "PARSE ERROR: line 1: expressions nested deeper than 64 levels");
  EXPECT_EQ(Render("{{ 1" + Repeat("+1", 100000) + " }}"),
            "PARSE ERROR: line 1: expressions nested deeper than 64 levels");
  EXPECT_EQ(Render(Repeat("{% if true %}", 20000) + Repeat("{% endif %}", 20000)),
            "PARSE ERROR: line 1: blocks nested deeper than 64 levels");
  EXPECT_EQ(Render("{{ " + Repeat("(", 60) + "1" + Repeat(")", 60) + " }}"), "1");
}

TEST(JinjaNesting, ValuesThatContainThemselvesAreRefusedWhenWalked) {
  const std::string deep = "line 1: a value is nested deeper than 128 levels (or contains itself)";
  EXPECT_EQ(Render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), "ERROR: " + deep);
  EXPECT_EQ(Render("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}"
                   "{% set ns.x = [ns.x] %}{% endfor %}"),
            "ERROR: " + deep);
  EXPECT_EQ(Render("{% set a = namespace() %}{% set a.b = [a] %}{{ a | tojson }}"),
            "ERROR: line 1: tojson: a value is nested deeper than 128 levels (or contains "
            "itself)");
}

TEST(JinjaBudget, EveryLimitIsNamedInItsError) {
  RenderOptions small;
  small.limits.max_bytes = 1 << 20;
  EXPECT_EQ(Render("{{ 'ab' * 4611686018427387904 }}", small),
            "ERROR: line 1: a repeated string would be 9223372036854775808 bytes, over 1048576 "
            "(spec.data.templateMaxBytes)");
  EXPECT_EQ(Render("{{ 'a\\nb' | indent(1000000000) }}", small),
            "ERROR: line 1: indent()'s result would be 2000000003 bytes, over 1048576 "
            "(spec.data.templateMaxBytes)");
  EXPECT_EQ(Render("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                   "{% set ns.s = ns.s + ns.s %}{% endfor %}",
                   small),
            "ERROR: line 1: a concatenation would be 2097152 bytes, over 1048576 "
            "(spec.data.templateMaxBytes)");
  RenderOptions few;
  few.limits.max_steps = 100000;
  const std::string steps =
      "the rendering took over 100000 steps (spec.data.templateMaxSteps; a step is one "
      "expression, one item or 16 bytes of work)";
  EXPECT_EQ(Render("{{ range(100000) | unique | list | length }}", few), "ERROR: line 1: " + steps);
  EXPECT_EQ(Render("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}"
                   "{% endmacro %}{{ f(40) }}",
                   few)
                .substr(0, 6),
            "ERROR:");
  RenderOptions quick;
  quick.limits.max_seconds = 0.05;
  EXPECT_EQ(Render("{% for i in range(1000000) %}{% for j in range(1000) %}{% endfor %}"
                   "{% endfor %}",
                   quick),
            "ERROR: line 1: the rendering took over 0.05 s (spec.data.templateMaxSeconds)");
}

TEST(JinjaBudget, RealisticTemplatesFitTheDefaults) {
  std::string messages = "[";
  for (int i = 0; i < 200; ++i) {
    messages += std::string(i ? "," : "") + "{\"role\": \"" + (i % 2 ? "assistant" : "user") +
                "\", \"content\": \"" + Repeat("word ", 2000) + "\"}";
  }
  messages += "]";
  auto t = Template::Parse(
      "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content | trim + "
      "'<|im_end|>\\n' }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  auto out = (*t)->Render({{"messages", Value::FromJson(nlohmann::ordered_json::parse(messages))}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_GT(out->text.size(), 200u * 9999);
}

// Added tokens are matched leftmost-longest in linear time; the result equals
// trying every token at every position.
TEST(AddedTokens, LeftmostLongestEqualsTheNaiveSearch) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    TokenizerJsonBuilder b;
    std::vector<std::pair<std::string, int>> tokens;
    const int count = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < count; ++k) {
      std::string spelling;
      const int len = 1 + static_cast<int>(rng() % 4);
      for (int c = 0; c < len; ++c) spelling += "ab"[rng() % 2];
      bool seen = false;
      for (const auto& t : tokens) seen = seen || t.first == spelling;
      if (seen) continue;
      tokens.emplace_back(spelling, b.Added(spelling, /*special=*/true));
    }
    auto t = Tokenizer::FromJson(b.Json(), "t.json");
    ASSERT_TRUE(t.ok()) << t.status().message();
    std::string text;
    for (int c = 0; c < 40; ++c) text += "ab"[rng() % 2];
    std::vector<int32_t> want;
    for (size_t i = 0; i < text.size();) {
      size_t best = 0;
      int id = -1;
      for (const auto& [spelling, token_id] : tokens) {
        if (text.compare(i, spelling.size(), spelling) == 0 && spelling.size() > best) {
          best = spelling.size();
          id = token_id;
        }
      }
      want.push_back(id >= 0 ? id : static_cast<unsigned char>(text[i]));
      i += id >= 0 ? best : 1;
    }
    EXPECT_EQ(tokenizer::testing::EncodeIds(**t, text), want) << text;
  }
}

TEST(AddedTokens, SingleWordAndLongTokensStayLinear) {
  TokenizerJsonBuilder b;
  const int x = b.Added("x", true, {{"single_word", true}});
  b.Added(std::string(65536, 'a') + "b", true);
  auto t = Tokenizer::FromJson(b.Json(), "t.json");
  ASSERT_TRUE(t.ok());
  std::string words = Repeat("x ", 100000);
  std::vector<int32_t> ids = tokenizer::testing::EncodeIds(**t, words);
  EXPECT_EQ(ids.size(), 200000u);
  EXPECT_EQ(ids[0], x);
  ids = tokenizer::testing::EncodeIds(**t, std::string(300000, 'a'));
  EXPECT_EQ(ids.size(), 300000u);
}

TEST(TokenizerJson, HostileFilesNameTheFieldAndTheBound) {
  TokenizerJsonBuilder b;
  b.Set("post_processor", {{"type", "TemplateProcessing"},
                           {"single", {{{"SpecialToken", {{"id", "<s>"}}}}}},
                           {"special_tokens", {{"<s>", {{"ids", {-7}}}}}}});
  auto t = Tokenizer::FromJson(b.Json(), "t.json");
  EXPECT_EQ(t.status().message(),
            "t.json: post_processor.special_tokens.<s>.ids[0]: must be a token id in [0, 256) "
            "(the vocabulary and added tokens of this file) (got -7)");
  nlohmann::json doc = nlohmann::json::parse(TokenizerJsonBuilder().Json());
  doc["model"]["vocab"]["big"] = (1 << 30) - 1;
  t = Tokenizer::FromJson(doc.dump(), "t.json");
  EXPECT_EQ(t.status().message().substr(0, 62),
            "t.json: model.vocab[\"big\"]: ids must be integers in [0, 1538) ");
  std::string deep = TokenizerJsonBuilder().Json();
  deep.insert(deep.find("\"normalizer\":null"),
              "\"decoder\":" + Repeat("[", 100000) + Repeat("]", 100000) + ",");
  t = Tokenizer::FromJson(deep, "t.json");
  EXPECT_EQ(t.status().message().substr(0, 49),
            "t.json:1: JSON nested deeper than 64 levels (byte");
  // Every proper prefix of a file is refused.
  const std::string whole = TokenizerJsonBuilder().Json();
  for (size_t n = 0; n + 1 < whole.size(); n += 97) {
    EXPECT_FALSE(Tokenizer::FromJson(whole.substr(0, n), "t.json").ok()) << n;
  }
}

}  // namespace
}  // namespace skrull
