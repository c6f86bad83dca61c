#include "bench/length_samplers.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace skrull::bench {
namespace {

double EmpiricalCdf(const std::vector<int64_t>& sorted, int64_t length) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), length);  // count of < length
  return static_cast<double>(it - sorted.begin()) / sorted.size();
}

TEST(LengthSamplers, EmpiricalCdfMatchesTableKnotsWithinOnePercent) {
  for (const std::string& name : DatasetNames()) {
    SCOPED_TRACE(name);
    auto sampler = Dataset(name);
    ASSERT_TRUE(sampler.ok()) << sampler.status();
    std::vector<int64_t> lengths = sampler->SampleMany(200000, 7);
    std::sort(lengths.begin(), lengths.end());
    for (const CdfKnot& knot : sampler->knots()) {
      SCOPED_TRACE(knot.length_tokens);
      if (knot.cumulative == 1.0) {
        // The last knot is the longest: inclusive.
        EXPECT_LE(lengths.back(), knot.length_tokens);
        continue;
      }
      EXPECT_NEAR(EmpiricalCdf(lengths, knot.length_tokens), knot.cumulative, 0.01);
    }
    EXPECT_GE(lengths.front(), sampler->knots().front().length_tokens);
  }
}

TEST(LengthSamplers, TableOneKnotsUseKEquals1024) {
  auto wiki = Dataset("wikipedia");
  ASSERT_TRUE(wiki.ok());
  EXPECT_EQ(wiki->knots()[1].length_tokens, 1024);
  EXPECT_DOUBLE_EQ(wiki->knots()[1].cumulative, 0.8788);
  EXPECT_EQ(wiki->LongestTokens(), 78 * 1024);
  auto chat = Dataset("chatqa2");
  ASSERT_TRUE(chat.ok());
  EXPECT_NEAR(chat->Cdf(8 * 1024), 0.4043, 1e-12);
  EXPECT_EQ(chat->LongestTokens(), 99 * 1024);
}

TEST(LengthSamplers, Llama3MixIsLongTailWithStatedMeans) {
  auto mix = Dataset("llama3-mix");
  ASSERT_TRUE(mix.ok());
  std::vector<int64_t> lengths = mix->SampleMany(2000000, 3);
  double short_sum = 0, long_sum = 0;
  int64_t short_n = 0, long_n = 0;
  for (int64_t l : lengths) {
    if (l < 16 * 1024) {
      short_sum += l;
      ++short_n;
    } else {
      long_sum += l;
      ++long_n;
    }
  }
  const double long_fraction = static_cast<double>(long_n) / lengths.size();
  EXPECT_NEAR(long_fraction, 0.0011, 0.0002);
  EXPECT_LT(short_sum / short_n, 1024.0);
  EXPECT_NEAR(long_sum / long_n, 37.0 * 1024, 1.5 * 1024);
}

TEST(LengthSamplers, SameSeedSameLengths) {
  auto s = Dataset("lmsyschat1m");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->SampleMany(1000, 42), s->SampleMany(1000, 42));
  EXPECT_NE(s->SampleMany(1000, 42), s->SampleMany(1000, 43));
}

TEST(LengthSamplers, UnknownDatasetNamesTheKnownOnes) {
  auto s = Dataset("pile");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("chatqa2"), std::string::npos);
}

TEST(LengthSamplers, RejectsMalformedCdf) {
  EXPECT_FALSE(LengthSampler::FromCdf("x", "", {{10, 0.0}}).ok());
  EXPECT_FALSE(LengthSampler::FromCdf("x", "", {{10, 0.1}, {20, 1.0}}).ok());
  EXPECT_FALSE(LengthSampler::FromCdf("x", "", {{10, 0.0}, {10, 1.0}}).ok());
  EXPECT_FALSE(LengthSampler::FromCdf("x", "", {{10, 0.0}, {20, 0.6}, {30, 0.5}, {40, 1.0}}).ok());
  EXPECT_TRUE(LengthSampler::FromCdf("x", "", {{10, 0.0}, {20, 1.0}}).ok());
}

}  // namespace
}  // namespace skrull::bench
