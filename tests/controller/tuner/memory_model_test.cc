#include "controller/tuner/memory_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace skrull::tuner {
namespace {

constexpr double kMiB = 1 << 20;
constexpr double kGiB = 1 << 30;

uint64_t Bytes(double static_bytes, double per_token, int64_t tokens) {
  return static_cast<uint64_t>(
      std::llround(static_bytes + per_token * static_cast<double>(tokens)));
}

TEST(UpperEnvelope, PairsTheHighWaterMarkWithTheMostTokensHeldSoFar) {
  // A high-water mark never falls; a step holding fewer tokens still reports it.
  const std::vector<MemoryPoint> steps = {{1000, 100}, {600, 100},  {1500, 150},
                                          {1200, 150}, {1500, 155}, {2000, 200}};
  const std::vector<MemoryPoint> want = {{1000, 100}, {1500, 155}, {2000, 200}};
  EXPECT_EQ(UpperEnvelope(steps), want);
}

TEST(UpperEnvelope, PerStepPeaksThatFallWithTheTokensAreEachAPoint) {
  // Memory falls with the tokens: each step starts a new run and is its own point.
  const std::vector<MemoryPoint> steps = {{4000, 400}, {1000, 100}, {3000, 300}, {2000, 200}};
  const std::vector<MemoryPoint> want = {{1000, 100}, {2000, 200}, {3000, 300}, {4000, 400}};
  EXPECT_EQ(UpperEnvelope(steps), want);
}

TEST(UpperEnvelope, ARestartedProcessStartsANewHighWaterMark) {
  // Process 1 reached 2000 tokens; the resumed process 2 starts low again.
  const std::vector<MemoryPoint> steps = {{1000, 100}, {2000, 200}, {1500, 200},
                                          {1200, 120}, {800, 120},  {1600, 160}};
  const std::vector<MemoryPoint> want = {{1000, 100}, {1200, 120}, {1600, 160}, {2000, 200}};
  EXPECT_EQ(UpperEnvelope(steps), want);
}

TEST(UpperEnvelope, KeepsTheHighestMemorySeenAtEachTokenCount) {
  EXPECT_EQ(UpperEnvelope({{1000, 120}, {500, 50}, {1000, 110}}),
            (std::vector<MemoryPoint>{{500, 50}, {1000, 120}}));
}

TEST(UpperEnvelope, SkipsStepsThatHeldNoTokens) {
  EXPECT_EQ(UpperEnvelope({{0, 500}, {100, 10}}), (std::vector<MemoryPoint>{{100, 10}}));
  EXPECT_TRUE(UpperEnvelope({{0, 5}}).empty());
}

TEST(FitMemoryModel, RecoversKnownSlopeAndStaticFromPerStepPeaks) {
  const double alpha = 1.9 * kMiB, beta = 11.3 * kGiB;
  std::vector<MemoryPoint> steps;
  for (int64_t t : {4096, 8192, 12288, 16384, 20480, 26624})
    steps.push_back({t, Bytes(beta, alpha, t)});
  const MemoryFit fit = FitMemoryModel(steps);
  ASSERT_EQ(fit.method, FitMethod::kLeastSquares) << fit.why_no_line;
  EXPECT_NEAR(fit.bytes_per_token, alpha, alpha * 1e-9);
  EXPECT_NEAR(fit.static_bytes, beta, beta * 1e-9);
  EXPECT_EQ(fit.points, 6);
  EXPECT_EQ(fit.peak, (MemoryPoint{26624, Bytes(beta, alpha, 26624)}));
  EXPECT_NEAR(TokensForBudget(fit, 0.9 * 80 * kGiB), (0.9 * 80 * kGiB - beta) / alpha, 1e-3);
}

TEST(FitMemoryModel, RecoversTheLineFromAHighWaterMarkSeriesInAnyStepOrder) {
  // Steps in random order; the high-water mark is what a CPU rank reports.
  const double alpha = 300 * 1024.0, beta = 2 * kGiB;
  std::mt19937 rng(7);
  std::vector<int64_t> tokens;
  for (int i = 0; i < 200; ++i)
    tokens.push_back(std::uniform_int_distribution<int64_t>(64, 8192)(rng));
  std::vector<MemoryPoint> steps;
  uint64_t hwm = 0;
  for (int64_t t : tokens) {
    hwm = std::max(hwm, Bytes(beta, alpha, t));
    steps.push_back({t, hwm});
  }
  const MemoryFit fit = FitMemoryModel(steps);
  ASSERT_EQ(fit.method, FitMethod::kLeastSquares);
  EXPECT_NEAR(fit.bytes_per_token, alpha, alpha * 1e-6);
  EXPECT_NEAR(fit.static_bytes, beta, beta * 1e-6);
}

TEST(FitMemoryModel, StaysUnbiasedUnderSymmetricNoise) {
  const double alpha = 2 * kMiB, beta = 10 * kGiB;
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 50 * kMiB);
  std::vector<MemoryPoint> steps;
  for (int64_t t = 2048; t <= 32768; t += 2048) {
    steps.push_back({t, static_cast<uint64_t>(beta + alpha * static_cast<double>(t) + noise(rng))});
  }
  // Ascending tokens make every step an envelope point, so the noise stays symmetric.
  const MemoryFit fit = FitMemoryModel(steps);
  ASSERT_EQ(fit.method, FitMethod::kLeastSquares);
  EXPECT_NEAR(fit.bytes_per_token / alpha, 1.0, 0.02);
  EXPECT_NEAR(fit.static_bytes / beta, 1.0, 0.02);
}

TEST(FitMemoryModel, OneTokenCountFallsBackToTheHeadroomRatio) {
  const MemoryFit fit = FitMemoryModel({{1000, 4000}, {1000, 5000}});
  EXPECT_EQ(fit.method, FitMethod::kHeadroomRatio);
  EXPECT_EQ(fit.why_no_line, "one token count (1000)");
  EXPECT_DOUBLE_EQ(fit.bytes_per_token, 5.0);
  EXPECT_DOUBLE_EQ(fit.static_bytes, 0);
  // 1000 tokens used 5000 bytes: a budget of 9000 holds 1800.
  EXPECT_DOUBLE_EQ(TokensForBudget(fit, 9000), 1800);
}

TEST(FitMemoryModel, TokenCountsTooCloseForASlopeFallBackToTheRatio) {
  const MemoryFit fit = FitMemoryModel({{1000, 4000}, {1050, 9000}});
  EXPECT_EQ(fit.method, FitMethod::kHeadroomRatio);
  EXPECT_NE(fit.why_no_line.find("span 4.8%, under the 10%"), std::string::npos) << fit.why_no_line;
  EXPECT_EQ(fit.peak, (MemoryPoint{1050, 9000}));
}

TEST(FitMemoryModel, MemoryThatDoesNotGrowWithTokensFallsBackToTheRatio) {
  // A flat envelope has slope 0: nothing to extrapolate with.
  const MemoryFit fit = FitMemoryModel({{1000, 7000}, {2000, 7000}, {4000, 7000}});
  EXPECT_EQ(fit.method, FitMethod::kHeadroomRatio);
  EXPECT_NE(fit.why_no_line.find("slope not positive over 3 points"), std::string::npos);
}

TEST(FitMemoryModel, NoUsableStepIsNone) {
  EXPECT_EQ(FitMemoryModel({}).method, FitMethod::kNone);
  EXPECT_EQ(FitMemoryModel({{0, 100}}).method, FitMethod::kNone);
  EXPECT_EQ(FitMemoryModel({{100, 0}}).method, FitMethod::kNone);
}

TEST(FormatBytes, UsesBinaryUnitsWithOneDecimal) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1.5 * kMiB), "1.5 MiB");
  EXPECT_EQ(FormatBytes(61.25 * kGiB), "61.2 GiB");
  EXPECT_EQ(FormatBytes(80 * kGiB), "80.0 GiB");
  EXPECT_EQ(FormatBytes(-0.5 * kGiB), "-512.0 MiB");
}

}  // namespace
}  // namespace skrull::tuner
