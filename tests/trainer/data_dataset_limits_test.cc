// Dataset::Open on hostile input: lines nested far too deep and lines longer
// than max_line_bytes, /dev/zero included, fail cleanly by name.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <string>

#include "tests/trainer/data_test_util.h"
#include "trainer/data/dataset.h"
#include "trainer/data/json_depth.h"

namespace skrull::data {
namespace {

using api::DataFormat;
using api::MalformedPolicy;

constexpr int kHostileDepth = 100000;

// `depth` nested arrays around 1: [[[...1...]]].
std::string Nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + "1" +
         std::string(static_cast<size_t>(depth), ']');
}

// A file whose line 2 nests kHostileDepth levels, between two good lines.
DatasetOptions DeepLineBetweenGoodOnes(DataFormat format) {
  if (format == DataFormat::kTokenizedJsonl) {
    return WriteData("{\"input_ids\": [1, 2]}\n{\"input_ids\": " + Nested(kHostileDepth) +
                         "}\n{\"input_ids\": [3, 4, 5]}\n",
                     format);
  }
  return WriteData(
      "{\"text\": \"ab\"}\n{\"text\": " + Nested(kHostileDepth) + "}\n{\"text\": \"cde\"}\n",
      format);
}

std::string FormatName(const ::testing::TestParamInfo<DataFormat>& info) {
  return info.param == DataFormat::kTextJsonl ? "TextJsonl" : "TokenizedJsonl";
}

class DeepNesting : public ::testing::TestWithParam<DataFormat> {};

TEST_P(DeepNesting, IsAMalformedLineNamingFileAndLine) {
  const DatasetOptions o = DeepLineBetweenGoodOnes(GetParam());
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_HAS(ds.status().message(), "1 malformed line");
  EXPECT_HAS(ds.status().message(), o.path + ":2: JSON nested deeper than 64 levels");
}

TEST_P(DeepNesting, IsSkippedAndCountedUnderSkip) {
  DatasetOptions o = DeepLineBetweenGoodOnes(GetParam());
  o.malformed = MalformedPolicy::kSkip;
  auto ds = OpenOk(o);
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->size(), 2);
  EXPECT_EQ(ds->stats().skipped_malformed, 1);
  EXPECT_EQ(ds->Location(1), o.path + ":3");
}

INSTANTIATE_TEST_SUITE_P(Formats, DeepNesting,
                         ::testing::Values(DataFormat::kTokenizedJsonl, DataFormat::kTextJsonl),
                         FormatName);

TEST(JsonDepth, CountsBracketsOutsideStringsOnly) {
  EXPECT_FALSE(JsonNestedDeeperThan(Nested(64)));
  EXPECT_TRUE(JsonNestedDeeperThan(Nested(65)));
  EXPECT_FALSE(JsonNestedDeeperThan("{\"a\": \"" + Nested(100) + "\"}"));
  EXPECT_FALSE(JsonNestedDeeperThan("{\"a\": \"\\\"" + Nested(100) + "\"}"));
  EXPECT_TRUE(JsonNestedDeeperThan("[[[{\"a\": \"]]]\"}]]]", 3));
}

TEST(Dataset, LineOverMaxLineBytesFailsNamingLineCapAndFieldUnderEitherPolicy) {
  const std::string good = "{\"input_ids\": [1, 2, 3]}";  // 24 bytes
  DatasetOptions o = WriteData(good + "\n" + good + "   \n" + good + "\n");
  o.max_line_bytes = static_cast<int64_t>(good.size());
  for (MalformedPolicy policy : {MalformedPolicy::kError, MalformedPolicy::kSkip}) {
    o.malformed = policy;
    auto ds = Dataset::Open(o);
    ASSERT_FALSE(ds.ok());
    EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
    EXPECT_HAS(ds.status().message(), o.path + ":2: line is longer than 24 bytes");
    EXPECT_HAS(ds.status().message(), "spec.data.maxLineBytes");
  }
}

TEST(Dataset, LineOfExactlyMaxLineBytesIsRead) {
  const std::string good = "{\"input_ids\": [1, 2, 3]}";
  DatasetOptions o = WriteData(good + "\n" + good);  // the last line has no newline
  o.max_line_bytes = static_cast<int64_t>(good.size());
  auto ds = OpenOk(o);
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->size(), 2);
}

TEST(Dataset, MaxLineBytesOutOfRangeIsAnOptionError) {
  DatasetOptions o = WriteData("{\"input_ids\": [1]}\n");
  o.max_line_bytes = 0;
  auto ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_HAS(ds.status().message(), "spec.data.maxLineBytes: must be in [1, 4294967295]");
}

int64_t MaxRssBytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

class DevZero : public ::testing::TestWithParam<DataFormat> {};

// /dev/zero never ends a line: Open stops at the default cap, quickly and
// with about the cap in memory, instead of growing until std::bad_alloc.
TEST_P(DevZero, FailsAtTheDefaultLineCapQuickly) {
  DatasetOptions o;
  o.path = "/dev/zero";
  o.format = GetParam();
  o.malformed = MalformedPolicy::kSkip;
  const int64_t rss_before = MaxRssBytes();
  const auto start = std::chrono::steady_clock::now();
  auto ds = Dataset::Open(o);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_HAS(ds.status().message(), "/dev/zero:1: line is longer than 67108864 bytes");
  EXPECT_HAS(ds.status().message(), "spec.data.maxLineBytes");
  // Reading 64 MiB takes well under a second; 5 s allows a loaded machine.
  EXPECT_LT(seconds, 5.0);
  // About the cap: the buffer grows by realloc up to cap + 1 bytes.
  EXPECT_LT(MaxRssBytes() - rss_before, kDefaultMaxLineBytes * 5 / 4);
}

INSTANTIATE_TEST_SUITE_P(Formats, DevZero,
                         ::testing::Values(DataFormat::kTokenizedJsonl, DataFormat::kTextJsonl),
                         FormatName);

}  // namespace
}  // namespace skrull::data
