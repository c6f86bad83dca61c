// One JSONL line -> tokens: the fast tokenized scanner against the DOM
// reference, and every malformed-line message.
#include "trainer/data/jsonl_record.h"

#include <gtest/gtest.h>

#include <string>

#include "trainer/data/byte_tokenizer.h"
#include "trainer/data/rng.h"
#include "trainer/data/sample.h"

namespace skrull::data {
namespace {

using Ids = std::vector<int32_t>;

// The error message for a tokenized-jsonl line, or "" when it parses.
std::string TokenizedError(const std::string& line, int32_t vocab = 0) {
  TokenRecord r;
  Status s = ParseTokenizedLine(line, vocab, &r);
  EXPECT_TRUE(s.ok() || s.code() == StatusCode::kInvalidArgument) << s;
  return s.ok() ? "" : s.message();
}

std::string TextError(const std::string& line) {
  TokenRecord r;
  Status s = ParseTextLine(line, &r);
  EXPECT_TRUE(s.ok() || s.code() == StatusCode::kInvalidArgument) << s;
  return s.ok() ? "" : s.message();
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "message: " << (haystack)

TEST(TokenizedLine, ParsesIdsAndOptionalLabels) {
  TokenRecord r;
  ASSERT_TRUE(
      ParseTokenizedLine(R"({"input_ids": [1, 2, 3], "labels": [-100, 2, 3]})", 0, &r).ok());
  EXPECT_EQ(r.input_ids, (Ids{1, 2, 3}));
  EXPECT_TRUE(r.has_labels);
  EXPECT_EQ(r.labels, (Ids{-100, 2, 3}));

  ASSERT_TRUE(ParseTokenizedLine(R"({"id": "x", "input_ids": [4]})", 0, &r).ok());
  EXPECT_EQ(r.input_ids, (Ids{4}));
  EXPECT_FALSE(r.has_labels);

  ASSERT_TRUE(ParseTokenizedLine(R"({"input_ids": [4, 5], "labels": null})", 0, &r).ok());
  EXPECT_FALSE(r.has_labels);
  EXPECT_TRUE(r.labels.empty());
}

TEST(TokenizedLine, EveryMalformedLineSaysWhatIsWrongAndTheFix) {
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 2)"), "not valid JSON (parse error at line 1");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 2)"), "each line must be one JSON object");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1], "x": 1e999})"),
             "not valid JSON (number overflow");
  EXPECT_HAS(TokenizedError("[1, 2, 3]"), "expected a JSON object, got array");
  EXPECT_HAS(TokenizedError(R"({"labels": [1]})"),
             "missing \"input_ids\"; a tokenized-jsonl line is");
  EXPECT_HAS(TokenizedError(R"({"text": "hello"})"), "set spec.data.format: text-jsonl");
  EXPECT_HAS(TokenizedError(R"({"input_ids": "abc"})"),
             "\"input_ids\" must be an array of integers, got string \"abc\"");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 2.5]})"), "input_ids[1] is 2.5, not an integer");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, "7"]})"), "input_ids[1] is \"7\", not an integer");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [true]})"), "input_ids[0] is true, not an integer");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 3000000000]})"),
             "input_ids[1] = 3000000000 does not fit a 32-bit token id");
  EXPECT_HAS(TokenizedError(R"({"input_ids": []})"), "input_ids is empty; a sample needs at least");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, -3]})"),
             "input_ids[1] = -3 is outside the vocabulary [0, vocab_size)");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 300]})", 256),
             "input_ids[1] = 300 is outside the vocabulary [0, 256); was the data tokenized for "
             "a different model?");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 2], "labels": [1]})"),
             "labels has length 1 but input_ids has length 2; give one label per token");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 2], "labels": [1, -5]})"),
             "labels[1] = -5; a label is -100 (no loss) or a token id in [0, vocab_size)");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 2], "labels": [1, 256]})", 256),
             "labels[1] = 256; a label is -100 (no loss) or a token id in [0, 256)");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 2], "labels": "x"})"),
             "\"labels\" must be an array of integers, got string");
  EXPECT_HAS(TokenizedError(R"({"input_ids": [1, 2], "labels": []})"),
             "labels has length 0 but input_ids has length 2");
}

TEST(TokenizedLine, VocabularyBoundIsExclusive) {
  EXPECT_EQ(TokenizedError(R"({"input_ids": [0, 255], "labels": [-100, 255]})", 256), "");
  EXPECT_NE(TokenizedError(R"({"input_ids": [256]})", 256), "");
  EXPECT_EQ(TokenizedError(R"({"input_ids": [100000]})", 0), "");  // unchecked
}

TEST(TextLine, TextAndMessagesEncodeWithTheByteTokenizer) {
  TokenRecord r;
  ASSERT_TRUE(ParseTextLine(R"({"text": "ab"})", &r).ok());
  EXPECT_EQ(r.input_ids, (Ids{kBosId, 'a', 'b', kEosId}));
  EXPECT_EQ(r.labels, r.input_ids);

  ASSERT_TRUE(
      ParseTextLine(
          R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})",
          &r)
          .ok());
  EXPECT_EQ(r.input_ids, (Ids{kBosId, kUserId, 'q', kEosId, kAssistantId, 'a', kEosId}));
  EXPECT_EQ(r.labels, (Ids{kIgnoreIndex, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex,
                           'a', kEosId}));
}

TEST(TextLine, EveryMalformedLineSaysWhatIsWrongAndTheFix) {
  EXPECT_HAS(TextError("{\"text\": "), "not valid JSON");
  EXPECT_HAS(TextError("\"text\""), "expected a JSON object, got string");
  EXPECT_HAS(TextError(R"({"input_ids": [1]})"), "set spec.data.format: tokenized-jsonl");
  EXPECT_HAS(TextError(R"({"prompt": "x"})"),
             "missing \"text\" or \"messages\"; a text-jsonl line is");
  EXPECT_HAS(TextError(R"({"text": 5})"), "\"text\" must be a string, got number 5");
  EXPECT_HAS(TextError(R"({"text": ""})"), "\"text\" is empty");
  EXPECT_HAS(TextError(R"({"text": "a", "messages": []})"), "has both \"text\" and \"messages\"");
  EXPECT_HAS(TextError(R"({"messages": {}})"), "\"messages\" must be an array of {role, content}");
  EXPECT_HAS(TextError(R"({"messages": []})"), "\"messages\" is empty");
  EXPECT_HAS(TextError(R"({"messages": [1]})"), "messages[0] must be an object");
  EXPECT_HAS(TextError(R"({"messages": [{"content": "x"}]})"), "messages[0] is missing \"role\"");
  EXPECT_HAS(TextError(R"({"messages": [{"role": "bot", "content": "x"}]})"),
             "messages[0].role: unknown role \"bot\"; use one of system, user, assistant");
  EXPECT_HAS(TextError(R"({"messages": [{"role": "user"}]})"),
             "messages[0] is missing \"content\"");
  EXPECT_HAS(TextError(R"({"messages": [{"role": "user", "content": 3}]})"),
             "messages[0].content must be a string, got number 3");
  EXPECT_HAS(TextError(R"({"messages": [{"role": "user", "content": "x"}]})"),
             "\"messages\" has no assistant turn");
  EXPECT_HAS(TextError(R"({"text": "a\u0002"})"), "text has byte 0x02 at byte offset 1");
  EXPECT_HAS(
      TextError(
          R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "\u0005"}]})"),
      "messages[1].content has byte 0x05");
}

// ---- fast scanner vs DOM reference ----

void ExpectFastAgreesWithDom(const std::string& line) {
  TokenRecord fast;
  TokenRecord dom;
  bool fast_ok = FastParseTokenizedLine(line, &fast);
  Status dom_status = DomParseTokenizedLine(line, &dom);
  if (fast_ok) {
    ASSERT_TRUE(dom_status.ok()) << "fast accepted what the DOM rejects: " << line << "\n"
                                 << dom_status;
    EXPECT_EQ(fast.input_ids, dom.input_ids) << line;
    EXPECT_EQ(fast.has_labels, dom.has_labels) << line;
    EXPECT_EQ(fast.labels, dom.labels) << line;
  }
}

TEST(FastTokenizedParser, AcceptsTheCommonShapes) {
  for (const char* line : {
           R"({"input_ids":[1,2,3]})",
           R"(  { "input_ids" : [ 1 , 2 ] , "labels" : [ -100 , 2 ] }  )",
           R"({"labels":[-100,5],"input_ids":[4,5]})",
           R"({"id":"a\"b\\c\n","meta":{"x":[1,2.5,true,false,null,{}],"y":-0.0},"input_ids":[0]})",
           R"({"input_ids":[2147483647,-2147483648],"labels":null})",
           "{\"input_ids\":[1]}\r",
       }) {
    TokenRecord r;
    EXPECT_TRUE(FastParseTokenizedLine(line, &r)) << line;
    ExpectFastAgreesWithDom(line);
  }
}

TEST(FastTokenizedParser, LeavesUnusualOrInvalidLinesToTheDom) {
  for (const char* line : {
           R"({"input_ids":[1,2.0]})",                // float
           R"({"input_ids":[1e2]})",                  // exponent
           R"({"x":1e999,"input_ids":[1]})",          // overflows a double: the DOM rejects it
           R"({"input_ids":[01]})",                   // leading zero: invalid JSON
           R"({"input_ids":[2147483648]})",           // over int32
           R"({"input_ids":[1],"input_ids":[2]})",    // duplicate key
           R"({"input_ids":[1],})",                   // trailing comma
           R"({"input_ids":[1]} x)",                  // trailing garbage
           R"({"t":"\u00e9","input_ids":[1]})",       // \u escape
           "{\"t\":\"\xc3\xa9\",\"input_ids\":[1]}",  // non-ASCII
           "{\"t\":\"\xff\",\"input_ids\":[1]}",      // invalid UTF-8
           R"({"input_ids":[1]]})",
           R"({"input_ids":[1 2]})",
           R"({"labels":[1]})",
           R"({})",
           R"([])",
           "",
       }) {
    TokenRecord r;
    EXPECT_FALSE(FastParseTokenizedLine(line, &r)) << line;
    ExpectFastAgreesWithDom(line);
  }
}

// Random lines from a small grammar, then random byte edits: whenever the fast
// scanner accepts, the DOM must accept the same tokens.
TEST(FastTokenizedParser, NeverDisagreesWithTheDomOnRandomAndMutatedLines) {
  SplitMix64 rng(42);
  const std::vector<std::string> values = {"1",   "-100", "0",       "-0",       "12",
                                           "2.5", "1e3",  "\"s\"",   "null",     "true",
                                           "[]",  "{}",   "[1,[2]]", "{\"k\":1}"};
  const std::string alphabet = "{}[],:\"\\ 0123456789-.eEnulltrufas\xc3";
  int fast_accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string ids = "[";
    int n = static_cast<int>(rng.Below(6));
    for (int i = 0; i < n; ++i) ids += (i ? "," : "") + std::to_string(rng.Between(-200, 300));
    ids += "]";
    std::string line = "{";
    std::vector<std::string> members = {"\"input_ids\":" + ids};
    if (rng.Below(2)) members.push_back("\"labels\":" + ids);
    if (rng.Below(2)) members.push_back("\"x\":" + values[rng.Below(values.size())]);
    for (size_t i = 0; i < members.size(); ++i) {
      line += (i ? "," : "") + members[(i + rng.Below(members.size())) % members.size()];
    }
    line += "}";
    int edits = static_cast<int>(rng.Below(3));
    for (int e = 0; e < edits && !line.empty(); ++e) {
      size_t at = rng.Below(line.size());
      switch (rng.Below(3)) {
        case 0:
          line.erase(at, 1);
          break;
        case 1:
          line.insert(at, 1, alphabet[rng.Below(alphabet.size())]);
          break;
        default:
          line[at] = alphabet[rng.Below(alphabet.size())];
      }
    }
    TokenRecord r;
    fast_accepted += FastParseTokenizedLine(line, &r);
    ExpectFastAgreesWithDom(line);
    if (HasFailure()) return;
  }
  EXPECT_GT(fast_accepted, 5000);  // the fast path is actually taken
}

}  // namespace
}  // namespace skrull::data
