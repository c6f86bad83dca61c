#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/file_util.h"
#include "tests/test_temp_dir.h"
#include "trainer/data/byte_tokenizer.h"
#include "trainer/data/dataset.h"
#include "trainer/data/key_retrieval.h"

namespace skrull::data {
namespace {

using api::DataFormat;

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "message: " << (haystack)

std::string TempDir() { return ::skrull::testing_util::TestTempDir("make_data"); }

KeyRetrievalOptions Small(uint64_t seed = 1) {
  KeyRetrievalOptions o;
  o.n = 200;
  o.seed = seed;
  o.long_min_tokens = 600;
  o.long_max_tokens = 900;
  o.long_fraction = 0.2;
  return o;
}

TEST(KeyRetrieval, SameSeedSameBytesOtherSeedOtherBytes) {
  const std::string dir = TempDir();
  for (DataFormat f : {DataFormat::kTokenizedJsonl, DataFormat::kTextJsonl}) {
    KeyRetrievalOptions o = Small();
    o.format = f;
    ASSERT_TRUE(WriteKeyRetrievalData(o, dir + "/a.jsonl").ok());
    ASSERT_TRUE(WriteKeyRetrievalData(o, dir + "/b.jsonl").ok());
    o.seed = 2;
    ASSERT_TRUE(WriteKeyRetrievalData(o, dir + "/c.jsonl").ok());
    EXPECT_EQ(*ReadFileToString(dir + "/a.jsonl"), *ReadFileToString(dir + "/b.jsonl"));
    EXPECT_NE(*ReadFileToString(dir + "/a.jsonl"), *ReadFileToString(dir + "/c.jsonl"));
  }
}

TEST(KeyRetrieval, PinnedFirstSampleSoTheDataSetIsStableAcrossPlatforms) {
  // Golden values, also computed by an independent Python implementation.
  KeyRetrievalSample s = MakeKeyRetrievalSample(KeyRetrievalOptions{}, 0);
  EXPECT_EQ(s.key, "FZQ");
  EXPECT_EQ(s.tokens, 81);
  EXPECT_EQ(s.context, "quiet slowly with north from key=FZQ water and winte\nwhat is the key?");
}

TEST(KeyRetrieval, AnswerIsInTheContextExactlyOnceAndIsTheOnlyLabel) {
  KeyRetrievalOptions o = Small();
  for (int64_t i = 0; i < o.n; ++i) {
    KeyRetrievalSample s = MakeKeyRetrievalSample(o, i);
    ASSERT_EQ(s.key.size(), 3u);
    for (char c : s.key) ASSERT_TRUE(c >= 'A' && c <= 'Z') << s.key;
    EXPECT_EQ(s.answer, "key=" + s.key);
    size_t at = s.context.find(s.answer + " ");
    ASSERT_NE(at, std::string::npos) << s.context;
    EXPECT_EQ(s.context.find("key=", at + 1), std::string::npos) << "two keys: " << s.context;
    EXPECT_TRUE(at == 0 || s.context[at - 1] == ' ') << "not at a word start: " << s.context;
    // Nothing else looks like a key: no uppercase and no '=' outside the needle.
    std::string rest = s.context.substr(0, at) + s.context.substr(at + s.answer.size());
    for (char c : rest) ASSERT_FALSE((c >= 'A' && c <= 'Z') || c == '=') << s.context;

    auto enc = EncodeChat(KeyRetrievalMessages(s));
    ASSERT_TRUE(enc.ok());
    EXPECT_EQ(static_cast<int64_t>(enc->input_ids.size()), s.tokens);
    std::string labelled;
    for (int32_t l : enc->labels) {
      if (l != kIgnoreIndex) labelled.push_back(static_cast<char>(l));
    }
    EXPECT_EQ(labelled, s.answer + static_cast<char>(kEosId));
  }
}

TEST(KeyRetrieval, LengthsAreBimodalAndInRange) {
  KeyRetrievalOptions o = Small();
  o.n = 2000;
  int64_t long_count = 0;
  for (int64_t i = 0; i < o.n; ++i) {
    KeyRetrievalSample s = MakeKeyRetrievalSample(o, i);
    if (s.is_long) {
      ++long_count;
      EXPECT_GE(s.tokens, o.long_min_tokens);
      EXPECT_LE(s.tokens, o.long_max_tokens);
    } else {
      EXPECT_GE(s.tokens, o.short_min_tokens);
      EXPECT_LE(s.tokens, o.short_max_tokens);
    }
  }
  EXPECT_NEAR(static_cast<double>(long_count) / o.n, o.long_fraction, 0.03);
}

TEST(KeyRetrieval, BothFormatsIndexToTheSameSamples) {
  const std::string dir = TempDir();
  KeyRetrievalOptions o = Small();
  o.format = DataFormat::kTokenizedJsonl;
  ASSERT_TRUE(WriteKeyRetrievalData(o, dir + "/tok.jsonl").ok());
  o.format = DataFormat::kTextJsonl;
  ASSERT_TRUE(WriteKeyRetrievalData(o, dir + "/text.jsonl").ok());
  DatasetOptions tok_options;
  tok_options.path = dir + "/tok.jsonl";
  tok_options.vocab_size = 256;
  DatasetOptions text_options = tok_options;
  text_options.path = dir + "/text.jsonl";
  text_options.format = DataFormat::kTextJsonl;
  auto tok = Dataset::Open(tok_options);
  auto text = Dataset::Open(text_options);
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_TRUE(text.ok()) << text.status();
  ASSERT_EQ((*tok)->size(), o.n);
  ASSERT_EQ((*text)->size(), o.n);
  EXPECT_EQ((*tok)->stats().label_tokens, 8 * o.n);  // "key=XYZ" + EOS
  for (int64_t i = 0; i < o.n; ++i) {
    ASSERT_EQ((*tok)->Length(i), MakeKeyRetrievalSample(o, i).tokens);
    auto a = (*tok)->Get(i);
    auto b = (*text)->Get(i);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->input_ids, b->input_ids);
    ASSERT_EQ(a->targets, b->targets);
  }
}

TEST(KeyRetrieval, BadOptionsAreAllReportedWithTheirFlags) {
  KeyRetrievalOptions o;
  o.n = 0;
  o.short_min_tokens = 10;
  o.long_max_tokens = 100;
  o.long_fraction = 1.5;
  Status s = ValidateKeyRetrievalOptions(o);
  ASSERT_FALSE(s.ok());
  EXPECT_HAS(s.message(), "--n: must be >= 1 (got 0)");
  EXPECT_HAS(s.message(), "--short-min: must be >= " + std::to_string(KeyRetrievalMinTokens()));
  EXPECT_HAS(s.message(), "--long-max: must be >= --long-min (2048), got 100");
  EXPECT_HAS(s.message(), "--long-fraction: must be in [0, 1]");
  EXPECT_TRUE(ValidateKeyRetrievalOptions(KeyRetrievalOptions{}).ok());
}

TEST(KeyRetrieval, ShortestAllowedSampleIsExact) {
  KeyRetrievalOptions o;
  o.short_min_tokens = o.short_max_tokens = KeyRetrievalMinTokens();
  o.long_fraction = 0;
  ASSERT_TRUE(ValidateKeyRetrievalOptions(o).ok());
  KeyRetrievalSample s = MakeKeyRetrievalSample(o, 3);
  EXPECT_EQ(s.tokens, KeyRetrievalMinTokens());
  EXPECT_NE(s.context.find(s.answer), std::string::npos);
}

std::string BinDir() {
  const char* bin = std::getenv("SKRULL_BIN_DIR");
  return bin != nullptr ? bin : "bin";
}

TEST(MakeDataBinary, WritesTheFileAndRejectsBadFlags) {
  const std::string dir = TempDir();
  const std::string tool = BinDir() + "/skrull-make-data";
  if (!std::filesystem::exists(tool)) GTEST_SKIP() << tool << " not built";
  const std::string out = dir + "/sub/q.jsonl";
  std::string cmd =
      tool + " --out " + out + " --n 50 --seed 3 --format=text-jsonl > " + dir + "/log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << *ReadFileToString(dir + "/log");
  EXPECT_HAS(*ReadFileToString(dir + "/log"), "wrote " + out + ": 50 samples");
  KeyRetrievalOptions o;
  o.n = 50;
  o.seed = 3;
  o.format = DataFormat::kTextJsonl;
  ASSERT_TRUE(WriteKeyRetrievalData(o, dir + "/lib.jsonl").ok());
  EXPECT_EQ(*ReadFileToString(out), *ReadFileToString(dir + "/lib.jsonl"));

  // Flags are CLI11's: the first bad one is reported, with exit status 2.
  for (const auto& [flags, want] : std::vector<std::pair<std::string, std::string>>{
           {"--out " + out + " --n x", "--n = x"},
           {"--out " + out + " --format csv", "--format: csv not in {tokenized-jsonl,text-jsonl}"},
           {"--out " + out + " --seed -1", "--seed"},
           {"--n 5", "--out is required"},
           {"--out " + out + " --n 0", "--n: must be >= 1 (got 0)"}}) {
    const std::string bad = tool + " " + flags + " > " + dir + "/bad 2>&1";
    const int rc = std::system(bad.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 2) << flags << ": " << rc;
    EXPECT_HAS(*ReadFileToString(dir + "/bad"), want);
  }
}

}  // namespace
}  // namespace skrull::data
