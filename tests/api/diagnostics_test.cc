// The "did you mean" hint, error ordering and number formatting.
#include "api/diagnostics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "api/yaml_reader.h"

namespace skrull::api {
namespace {

const std::vector<std::string> kParallelismKeys = {"nodes", "procsPerNode", "dataParallel",
                                                   "contextParallel"};

TEST(ClosestMatch, FindsOneEditTypos) {
  EXPECT_EQ(ClosestMatch("contextParalel", kParallelismKeys), "contextParallel");
  EXPECT_EQ(ClosestMatch("node", kParallelismKeys), "nodes");
  EXPECT_EQ(ClosestMatch("procsPreNode", kParallelismKeys), "procsPerNode");  // swap
}

TEST(ClosestMatch, IgnoresCaseUnderscoresAndDashes) {
  EXPECT_EQ(ClosestMatch("context_parallel", kParallelismKeys), "contextParallel");
  EXPECT_EQ(ClosestMatch("DATA-PARALLEL", kParallelismKeys), "dataParallel");
}

TEST(ClosestMatch, GivesNothingWhenNothingIsClose) {
  EXPECT_EQ(ClosestMatch("tensorParallel", kParallelismKeys), "");
  EXPECT_EQ(ClosestMatch("x", kParallelismKeys), "");
  EXPECT_EQ(ClosestMatch("", kParallelismKeys), "");
  EXPECT_EQ(DidYouMean("x", kParallelismKeys), "");
  EXPECT_EQ(DidYouMean("nodez", kParallelismKeys), "; did you mean 'nodes'?");
}

TEST(Diagnostics, SortsByPositionThenKeepsInsertionOrder) {
  Diagnostics d;
  d.Add(SourcePos{5, 2}, "b", "second");
  d.Add(SourcePos{}, "z", "no position");
  d.Add(SourcePos{1, 0}, "a", "first");
  d.Add(SourcePos{5, 2}, "c", "third");
  Status s = d.ToStatus("job.yaml");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "job.yaml:2:1: a: first\n"
            "job.yaml:6:3: b: second\n"
            "job.yaml:6:3: c: third\n"
            "job.yaml: z: no position");
  EXPECT_TRUE(Diagnostics().ToStatus("job.yaml").ok());
}

TEST(ParentPath, StepsUpOneFieldOrEntry) {
  EXPECT_EQ(ParentPath("spec.model.lora"), "spec.model");
  EXPECT_EQ(ParentPath("metadata.labels[a.b/c]"), "metadata.labels");
  EXPECT_EQ(ParentPath("spec.model.lora.targetModules[2]"), "spec.model.lora.targetModules");
  EXPECT_EQ(ParentPath("spec"), "");
  EXPECT_EQ(ParentPath(""), "");
}

TEST(FieldIndex, PositionFallsBackToTheNearestAncestor) {
  FieldIndex index;
  index.positions["spec"] = SourcePos{3, 0};
  index.positions["spec.model"] = SourcePos{4, 2};
  EXPECT_EQ(index.PositionOf("spec.model.lora.targetModules[2]").line, 4);
  EXPECT_EQ(index.PositionOf("spec.data.path").line, 3);
  EXPECT_FALSE(index.PositionOf("metadata.labels[a.b/c]").known());
}

TEST(FormatDouble, IsShortestAndExact) {
  EXPECT_EQ(FormatDouble(3e-3), "0.003");
  EXPECT_EQ(FormatDouble(1e-8), "1e-08");
  EXPECT_EQ(FormatDouble(32.0), "32");
  EXPECT_EQ(FormatDouble(0.95), "0.95");
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-300, 300);
  for (int i = 0; i < 1000; ++i) {
    double v = std::pow(10.0, exponent(rng)) * (rng() % 2 ? 1 : -1);
    EXPECT_EQ(std::strtod(FormatDouble(v).c_str(), nullptr), v) << FormatDouble(v);
  }
}

TEST(ParseTokenCount, AcceptsPlainAnd1024BasedSuffixes) {
  EXPECT_EQ(ParseTokenCount("2048"), 2048);
  EXPECT_EQ(ParseTokenCount("26K"), 26 * 1024);
  EXPECT_EQ(ParseTokenCount("26k"), 26 * 1024);
  EXPECT_EQ(ParseTokenCount("1M"), 1 << 20);
  EXPECT_EQ(ParseTokenCount("-5"), -5);
  EXPECT_EQ(ParseTokenCount("+7"), 7);
  for (const char* bad :
       {"", "K", "26KB", "26Ki", "2.5K", "1e3", "0x10", "auto", "26 K", "9223372036854775807K"}) {
    EXPECT_FALSE(ParseTokenCount(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace skrull::api
