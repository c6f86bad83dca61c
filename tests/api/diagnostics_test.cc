// The "did you mean" hint, error ordering and number formatting.
#include "api/diagnostics.h"

#include <gtest/gtest.h>

#include <algorithm>
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

TEST(ClosestMatch, SkipsStringsLongerThanTheEchoLimit) {
  // Defect 4: the edit distance is quadratic, so a 5 MB value cost 2 s.
  const std::string long_typo = "contextParalel" + std::string(kMaxEchoBytes, 'l');
  EXPECT_EQ(ClosestMatch(long_typo, kParallelismKeys), "");
  EXPECT_EQ(ClosestMatch(std::string(5 << 20, 'n'), kParallelismKeys), "");
  const std::string long_candidate(kMaxEchoBytes + 1, 'n');
  EXPECT_EQ(ClosestMatch(long_candidate.substr(1), {long_candidate}), "");
  const std::string longest(kMaxEchoBytes, 'n');
  EXPECT_EQ(ClosestMatch(longest.substr(1) + "m", {longest}), longest);
}

TEST(ClosestMatch, MatchesAFullEditDistanceOnRandomStrings) {
  // The bounded, three-row distance against a plain Levenshtein-with-swaps
  // reference: the suggestion is the reference's closest within the limit.
  auto reference = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min(
            {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.size()][b.size()];
  };
  std::mt19937 rng(3);
  auto word = [&](size_t max_len) {
    std::string w(1 + rng() % max_len, 'a');
    for (char& c : w) c = static_cast<char>('a' + rng() % 3);
    return w;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const std::string got = word(12);
    std::vector<std::string> candidates;
    for (int i = 0; i < 4; ++i) candidates.push_back(word(12));
    const size_t limit = std::max<size_t>(1, got.size() / 3);
    std::string want;
    size_t best = limit + 1;
    for (const std::string& c : candidates) {
      if (reference(got, c) < best) {
        best = reference(got, c);
        want = c;
      }
    }
    bool folded_match = false;
    for (const std::string& c : candidates) folded_match = folded_match || c == got;
    if (folded_match) want = got;
    EXPECT_EQ(ClosestMatch(got, candidates), want) << got;
  }
}

TEST(Quote, EchoesAtMost64BytesAndTheLength) {
  EXPECT_EQ(Quote("ten"), "'ten'");
  EXPECT_EQ(Quote(std::string(64, 'x')), "'" + std::string(64, 'x') + "'");
  EXPECT_EQ(Quote(std::string(100000, 'x')), "'" + std::string(64, 'x') + "...' (100000 bytes)");
  EXPECT_EQ(Abbreviate(std::string(65, 'y')), std::string(64, 'y') + "... (65 bytes)");
}

TEST(Diagnostics, ListsAtMostAHundredErrorsAndCountsTheRest) {
  Diagnostics diag;
  for (int i = 250; i > 0; --i) diag.Add(SourcePos{i, 0}, "spec.x", "bad " + std::to_string(i));
  const std::string text = diag.ToStatus("job.yaml").message();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 100);
  EXPECT_EQ(text.rfind("job.yaml:2:1: spec.x: bad 1\n", 0), 0u) << text.substr(0, 100);
  EXPECT_NE(text.find("job.yaml:101:1: spec.x: bad 100\njob.yaml: ... and 150 more errors (fix "
                      "these first)"),
            std::string::npos);
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
