#include "trainer/data/dataset.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/trainer/data_test_util.h"
#include "trainer/data/byte_tokenizer.h"

namespace skrull::data {
namespace {

using api::DataFormat;
using api::MalformedPolicy;
using api::OverLengthPolicy;
using Ids = std::vector<int32_t>;
constexpr int32_t M = kIgnoreIndex;

Sample GetOk(const Dataset& ds, int64_t i) {
  auto s = ds.Get(i);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : Sample{};
}

TEST(Dataset, IndexesLengthsAndLabelCountsBeforeAnySampleIsBuilt) {
  auto o = WriteData(
      "{\"input_ids\": [1, 2, 3]}\n"
      "{\"input_ids\": [4, 5], \"labels\": [-100, 5]}\n"
      "{\"input_ids\": [6, 7, 8, 9, 10], \"labels\": [-100, -100, -100, 9, 10]}\n");
  auto ds = OpenOk(o);
  ASSERT_NE(ds, nullptr);
  ASSERT_EQ(ds->size(), 3);
  EXPECT_EQ(ds->Length(0), 3);
  EXPECT_EQ(ds->Length(1), 2);
  EXPECT_EQ(ds->Length(2), 5);
  EXPECT_EQ(ds->LabelTokenCount(0), 2);
  EXPECT_EQ(ds->LabelTokenCount(1), 1);
  EXPECT_EQ(ds->LabelTokenCount(2), 2);
  EXPECT_EQ(ds->Location(2), o.path + ":3");
  const DatasetStats& s = ds->stats();
  EXPECT_EQ(s.lines, 3);
  EXPECT_EQ(s.samples, 3);
  EXPECT_EQ(s.total_tokens, 10);
  EXPECT_EQ(s.label_tokens, 5);
  EXPECT_EQ(s.max_length, 5);
  EXPECT_EQ(StatsSummary(s), "3 samples (3 lines), 10 tokens (5 with loss), longest 5");
}

TEST(Dataset, GetReturnsShiftedTargetsWithAndWithoutLabels) {
  auto ds =
      OpenOk(WriteData("{\"input_ids\": [1, 2, 3]}\n"
                       "{\"input_ids\": [6, 7, 8, 9], \"labels\": [-100, -100, 8, 9]}\n"));
  ASSERT_NE(ds, nullptr);
  Sample a = GetOk(*ds, 0);
  EXPECT_EQ(a.input_ids, (Ids{1, 2, 3}));
  EXPECT_EQ(a.targets, (Ids{2, 3, M}));
  Sample b = GetOk(*ds, 1);
  EXPECT_EQ(b.input_ids, (Ids{6, 7, 8, 9}));
  EXPECT_EQ(b.targets, (Ids{M, 8, 9, M}));
  for (int64_t i = 0; i < ds->size(); ++i) {
    Sample s = GetOk(*ds, i);
    EXPECT_EQ(static_cast<int64_t>(s.input_ids.size()), ds->Length(i));
    EXPECT_EQ(LabelTokens(s), ds->LabelTokenCount(i));
  }
}

TEST(Dataset, BlankLinesCrlfAndAMissingFinalNewlineAreFine) {
  auto ds = OpenOk(WriteData("\n{\"input_ids\": [1, 2]}\r\n   \n{\"input_ids\": [3]}"));
  ASSERT_NE(ds, nullptr);
  ASSERT_EQ(ds->size(), 2);
  EXPECT_EQ(ds->stats().lines, 4);
  EXPECT_EQ(ds->stats().blank_lines, 2);
  EXPECT_EQ(ds->Location(0).substr(ds->Location(0).rfind(':')), ":2");
  EXPECT_EQ(ds->Location(1).substr(ds->Location(1).rfind(':')), ":4");
  EXPECT_EQ(GetOk(*ds, 0).input_ids, (Ids{1, 2}));
  EXPECT_EQ(GetOk(*ds, 1).input_ids, (Ids{3}));
}

TEST(Dataset, MalformedLineIsAnErrorNamingFileLineWhatAndFix) {
  auto o = WriteData(
      "{\"input_ids\": [1, 2]}\n"
      "{\"input_ids\": [1, 2], \"labels\": [1]}\n");
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = ds.status().message();
  EXPECT_HAS(m, o.path +
                    " (tokenized-jsonl): 1 malformed line; fix them, or set "
                    "spec.data.onMalformed: skip");
  EXPECT_HAS(m, o.path + ":2: labels has length 1 but input_ids has length 2");
}

TEST(Dataset, EveryMalformedKindIsReportedWithItsLineAllAtOnce) {
  struct Case {
    const char* line;
    const char* message;
  };
  const Case cases[] = {
      {"{\"input_ids\": [1,", "not valid JSON"},
      {"[1, 2]", "expected a JSON object, got array"},
      {"{\"labels\": [1]}", "missing \"input_ids\""},
      {"{\"input_ids\": [1, 2.5]}", "input_ids[1] is 2.5, not an integer"},
      {"{\"input_ids\": [1, 2], \"labels\": [1]}",
       "labels has length 1 but input_ids has length 2"},
      {"{\"input_ids\": []}", "input_ids is empty"},
      {"{\"input_ids\": [-1]}", "input_ids[0] = -1 is outside the vocabulary [0, 256)"},
      {"{\"input_ids\": [256]}", "input_ids[0] = 256 is outside the vocabulary [0, 256)"},
  };
  std::string contents = "{\"input_ids\": [1, 2]}\n";
  for (const Case& c : cases) contents += std::string(c.line) + "\n";
  auto o = WriteData(contents);
  o.vocab_size = 256;
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  const std::string& m = ds.status().message();
  EXPECT_HAS(m, "8 malformed lines");
  for (size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_HAS(m, o.path + ":" + std::to_string(i + 2) + ": " + cases[i].message);
  }
}

TEST(Dataset, ReportsTheFirstProblemsAndCountsTheRest) {
  std::string contents = "{\"input_ids\": [1]}\n";
  for (int i = 0; i < 25; ++i) contents += "oops\n";
  auto o = WriteData(contents);
  o.max_reported_problems = 3;
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  const std::string& m = ds.status().message();
  EXPECT_HAS(m, "25 malformed lines");
  EXPECT_HAS(m, o.path + ":4: not valid JSON");
  EXPECT_EQ(m.find(o.path + ":5:"), std::string::npos) << m;
  EXPECT_HAS(m, "... and 22 more");
}

TEST(Dataset, SkipPolicyCountsMalformedLinesAndKeepsTheRest) {
  auto o = WriteData(
      "{\"input_ids\": [1, 2]}\n"
      "not json\n"
      "{\"input_ids\": []}\n"
      "{\"input_ids\": [3, 4, 5]}\n");
  o.malformed = MalformedPolicy::kSkip;
  auto ds = OpenOk(o);
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->size(), 2);
  EXPECT_EQ(ds->stats().skipped_malformed, 2);
  EXPECT_EQ(ds->Location(1), o.path + ":4");
  EXPECT_EQ(GetOk(*ds, 1).input_ids, (Ids{3, 4, 5}));
}

std::string ThreeLengths() {  // 2, 5 and 8 tokens
  return "{\"input_ids\": [1, 2]}\n"
         "{\"input_ids\": [1, 2, 3, 4, 5], \"labels\": [-100, -100, -100, 4, 5]}\n"
         "{\"input_ids\": [1, 2, 3, 4, 5, 6, 7, 8]}\n";
}

TEST(Dataset, OverLengthErrorNamesLineLengthLimitAndOptions) {
  auto o = WriteData(ThreeLengths());
  o.max_length_tokens = 4;
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kFailedPrecondition);
  const std::string& m = ds.status().message();
  EXPECT_HAS(m,
             "2 samples are longer than spec.data.maxLength = 4 tokens (longest 8); set "
             "spec.data.onOverLength: truncate or skip, or raise spec.data.maxLength");
  EXPECT_HAS(m, o.path + ":2: sample is 5 tokens, over the limit of 4");
  EXPECT_HAS(m, o.path + ":3: sample is 8 tokens, over the limit of 4");
}

TEST(Dataset, OverLengthSkipDropsAndCounts) {
  auto o = WriteData(ThreeLengths());
  o.max_length_tokens = 5;
  o.over_length = OverLengthPolicy::kSkip;
  auto ds = OpenOk(o);
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->size(), 2);
  EXPECT_EQ(ds->stats().skipped_over_length, 1);
  EXPECT_EQ(ds->stats().max_length, 5);
  EXPECT_EQ(ds->stats().total_tokens, 7);
}

TEST(Dataset, OverLengthTruncateKeepsTheFirstTokensAndRecountsLabels) {
  auto o = WriteData(ThreeLengths());
  o.max_length_tokens = 4;
  o.over_length = OverLengthPolicy::kTruncate;
  auto ds = OpenOk(o);
  ASSERT_NE(ds, nullptr);
  ASSERT_EQ(ds->size(), 3);
  EXPECT_EQ(ds->stats().truncated, 2);
  EXPECT_EQ(ds->Length(1), 4);
  EXPECT_EQ(ds->Length(2), 4);
  EXPECT_EQ(ds->stats().max_length, 4);
  // Labels [-, -, -, 4, (5)] cut to 4 tokens: only label 4 remains, at target 2.
  Sample b = GetOk(*ds, 1);
  EXPECT_EQ(b.input_ids, (Ids{1, 2, 3, 4}));
  EXPECT_EQ(b.targets, (Ids{M, M, 4, M}));
  EXPECT_EQ(ds->LabelTokenCount(1), 1);
  Sample c = GetOk(*ds, 2);
  EXPECT_EQ(c.targets, (Ids{2, 3, 4, M}));
}

TEST(Dataset, TextJsonlTextAndMessagesAreMaskedByTheTemplate) {
  auto o = WriteData(
      "{\"text\": \"ab\"}\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", "
      "\"content\": \"q\"}, {\"role\": \"assistant\", \"content\": \"ok\"}]}\n",
      DataFormat::kTextJsonl);
  o.vocab_size = 256;
  auto ds = OpenOk(o);
  ASSERT_NE(ds, nullptr);
  Sample t = GetOk(*ds, 0);
  EXPECT_EQ(t.input_ids, (Ids{kBosId, 'a', 'b', kEosId}));
  EXPECT_EQ(t.targets, (Ids{'a', 'b', kEosId, M}));
  Sample c = GetOk(*ds, 1);
  EXPECT_EQ(c.input_ids, (Ids{kBosId, kSystemId, 's', kEosId, kUserId, 'q', kEosId, kAssistantId,
                              'o', 'k', kEosId}));
  EXPECT_EQ(c.targets, (Ids{M, M, M, M, M, M, M, 'o', 'k', kEosId, M}));
  EXPECT_EQ(ds->LabelTokenCount(1), 3);
  EXPECT_EQ(ds->stats().label_tokens, 6);
}

TEST(Dataset, TextJsonlErrorsNameTheLine) {
  auto o =
      WriteData("{\"text\": \"ok\"}\n{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n",
                DataFormat::kTextJsonl);
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_HAS(ds.status().message(), o.path + " (text-jsonl): 1 malformed line");
  EXPECT_HAS(ds.status().message(), o.path + ":2: \"messages\" has no assistant turn");
}

TEST(Dataset, TextJsonlNeedsAVocabularyOfAtLeast256) {
  auto o = WriteData("{\"text\": \"ok\"}\n", DataFormat::kTextJsonl);
  o.vocab_size = 128;
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_HAS(ds.status().message(),
             "text-jsonl uses the byte tokenizer (256 ids) but the model's "
             "vocab_size is 128");
}

TEST(Dataset, EmptyDataSetIsAnError) {
  auto ds = Dataset::Open(WriteData("\n\n"));
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_HAS(ds.status().message(), "no usable samples (0 samples (2 lines, 2 blank)");

  auto o = WriteData("bad\n");
  o.malformed = MalformedPolicy::kSkip;
  auto skipped = Dataset::Open(o);
  ASSERT_FALSE(skipped.ok());
  EXPECT_HAS(skipped.status().message(),
             "no usable samples (0 samples (1 lines, 1 malformed skipped)");
}

TEST(Dataset, AllMaskedDataSetIsAnError) {
  auto ds = Dataset::Open(WriteData("{\"input_ids\": [1, 2], \"labels\": [-100, -100]}\n"));
  ASSERT_FALSE(ds.ok());
  EXPECT_HAS(ds.status().message(), "no token carries loss");
}

TEST(Dataset, MissingFileIsNotFoundNamingThePath) {
  DatasetOptions o;
  o.path = "/nonexistent/skrull/data.jsonl";
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kNotFound);
  EXPECT_HAS(ds.status().message(), "/nonexistent/skrull/data.jsonl: no such file");
}

TEST(Dataset, DirectoryAndBadOptionsAreRejected) {
  DatasetOptions o;
  o.path = TempDir();
  auto dir = Dataset::Open(o);
  ASSERT_FALSE(dir.ok());
  EXPECT_HAS(dir.status().message(), "is a directory");

  DatasetOptions bad;
  bad.max_length_tokens = -1;
  auto st = Dataset::Open(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.status().message(), "spec.data.path: is empty");
  EXPECT_HAS(st.status().message(), "spec.data.maxLength: must be >= 0");
}

TEST(Dataset, GetNoticesAFileChangedAfterIndexing) {
  auto o = WriteData("{\"input_ids\": [1, 2, 3]}\n");
  auto ds = OpenOk(o);
  ASSERT_NE(ds, nullptr);
  {
    std::fstream f(o.path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(15);
    f << "x";  // {"input_ids": [x, 2, 3]}
  }
  auto s = ds->Get(0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_HAS(s.status().message(), o.path + ":1: changed since the data set was indexed");
}

TEST(Dataset, LinesLongerThanTheReadBufferAndManyLinesIndexCorrectly) {
  std::string contents;
  std::vector<int64_t> lengths;
  for (int i = 0; i < 300; ++i) {
    int64_t n = (i % 7 == 0) ? 200000 : 1 + i;  // ~1.4 MB lines cross buffer refills
    lengths.push_back(n);
    contents += "{\"input_ids\": [";
    for (int64_t k = 0; k < n; ++k) contents += (k ? ",7" : "7");
    contents += "]}\n";
  }
  auto ds = OpenOk(WriteData(contents));
  ASSERT_NE(ds, nullptr);
  ASSERT_EQ(ds->size(), 300);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(ds->Length(i), lengths[i]) << i;
  EXPECT_EQ(GetOk(*ds, 7).input_ids.size(), 200000u);
  EXPECT_EQ(GetOk(*ds, 299).input_ids.size(), 300u);
}

TEST(Dataset, ConcurrentGetsAgree) {
  std::string contents;
  for (int i = 0; i < 64; ++i) {
    contents += "{\"input_ids\": [" + std::to_string(i) + ", 1, 2]}\n";
  }
  auto ds = OpenOk(WriteData(contents));
  ASSERT_NE(ds, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        for (int64_t i = 0; i < ds->size(); ++i) {
          auto s = ds->Get(i);
          if (!s.ok() || s->input_ids[0] != i) ++bad;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Dataset, OptionsFromTheJobSpec) {
  api::DataSpec spec;
  spec.path = "/d.jsonl";
  spec.format = DataFormat::kTextJsonl;
  spec.max_length_tokens = 100;
  spec.over_length = OverLengthPolicy::kTruncate;
  spec.malformed = MalformedPolicy::kSkip;
  DatasetOptions o = DatasetOptionsFromSpec(spec, 256);
  EXPECT_EQ(o.path, "/d.jsonl");
  EXPECT_EQ(o.format, DataFormat::kTextJsonl);
  EXPECT_EQ(o.max_length_tokens, 100);
  EXPECT_EQ(o.over_length, OverLengthPolicy::kTruncate);
  EXPECT_EQ(o.malformed, MalformedPolicy::kSkip);
  EXPECT_EQ(o.vocab_size, 256);
  EXPECT_EQ(o.max_line_bytes, kDefaultMaxLineBytes);  // 64 MiB, spec.data.maxLineBytes' default
  spec.max_line_bytes = 4096;
  EXPECT_EQ(DatasetOptionsFromSpec(spec, 256).max_line_bytes, 4096);
}

}  // namespace
}  // namespace skrull::data
