#include "controller/tuner/tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace skrull::tuner {
namespace {

constexpr double kMiB = 1 << 20;
constexpr double kGiB = 1 << 30;

// A rank whose memory follows static + per_token x tokens exactly.
RankObservation LinearRank(int rank, double static_bytes, double per_token,
                           std::vector<int64_t> tokens, double capacity_bytes) {
  RankObservation r;
  r.rank = rank;
  for (int64_t t : tokens) {
    r.steps.push_back({t, static_cast<uint64_t>(
                              std::llround(static_bytes + per_token * static_cast<double>(t)))});
  }
  r.capacity_bytes = static_cast<uint64_t>(capacity_bytes);
  return r;
}

// The brief's H100 example: 1.9 MiB/token + 11.3 GiB on 80 GiB, 26K in force.
TuningInput H100Run(int64_t bucket = 26624) {
  TuningInput in;
  in.source = "runs/sft";
  in.bucket_size_tokens = bucket;
  in.ranks.push_back(
      LinearRank(0, 11.3 * kGiB, 1.9 * kMiB, {4096, 8192, 12288, 16384, 20480, 26624}, 80 * kGiB));
  return in;
}

api::TuningSpec Spec(int64_t min = 1024, int64_t max = 1 << 20, double target = 0.9) {
  api::TuningSpec s;
  s.enabled = true;
  s.target_memory_fraction = target;
  s.min_bucket_size_tokens = min;
  s.max_bucket_size_tokens = max;
  return s;
}

// (0.9 x 80 GiB - 11.3 GiB) / 1.9 MiB = 32714.1 tokens.
constexpr int64_t kH100Target = 32512;

TEST(Tune, RaisesToTheFittedTargetRoundedDownToAMultipleOf256) {
  StatusOr<TuningDecision> d = Tune(H100Run(), Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->change);
  EXPECT_EQ(d->current_bucket_size_tokens, 26624);
  EXPECT_EQ(d->recommended_bucket_size_tokens, kH100Target);
  EXPECT_EQ(d->method, FitMethod::kLeastSquares);
  EXPECT_NEAR(d->bytes_per_token, 1.9 * kMiB, 1e-3);
  EXPECT_NEAR(d->static_bytes, 11.3 * kGiB, 1.0);
  EXPECT_EQ(d->points, 6);
  EXPECT_EQ(d->binding_rank, 0);
  EXPECT_EQ(d->peak_tokens, 26624);
  EXPECT_NEAR(d->model_tokens, 32714.1, 0.1);
  EXPECT_EQ(d->reason,
            "rank 0: peak 60.7 GiB of 80.0 GiB at 26624 tokens; fitted 1.9 MiB/token + 11.3 GiB "
            "over 6 points; target 90% (72.0 GiB) -> 32714 tokens; raising bucketSize 26624 -> "
            "32512 (+22.1%)");
}

TEST(Tune, NeverRecommendsAboveTheMaximum) {
  StatusOr<TuningDecision> d = Tune(H100Run(), Spec(1024, 30000));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 29952);  // 30000 rounded down to 256
  EXPECT_NE(d->reason.find("capped at spec.tuning.maxBucketSizeTokens"), std::string::npos)
      << d->reason;
}

TEST(Tune, ACurrentValueAboveTheMaximumIsLoweredToIt) {
  StatusOr<TuningDecision> d = Tune(H100Run(26624), Spec(1024, 16384));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 16384);
  EXPECT_NE(d->reason.find("above spec.tuning.maxBucketSizeTokens (16384)"), std::string::npos)
      << d->reason;
}

TEST(Tune, NeverRecommendsBelowTheMinimum) {
  // Memory asks for 32714 tokens; the minimum is 36000: 36096 is its multiple of 256.
  StatusOr<TuningDecision> d = Tune(H100Run(40960), Spec(36000));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 36096);
  EXPECT_NE(d->reason.find("held at spec.tuning.minBucketSizeTokens (36000)"), std::string::npos)
      << d->reason;
}

TEST(Tune, AMinimumWithoutAMultipleOf256BelowTheMaximumIsUsedAsIs) {
  StatusOr<TuningDecision> d = Tune(H100Run(40960), Spec(36000, 36050));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 36050);
}

TEST(Tune, ACurrentValueBelowTheMinimumIsRaisedToItWithoutHysteresis) {
  TuningInput in = H100Run(1000);
  StatusOr<TuningDecision> d = Tune(in, Spec(1024));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 2000 / 256 * 256);  // 2x growth cap
  TunerOptions slow;
  slow.max_growth_factor = 1.01;  // 1010 tokens: below the minimum, which wins
  d = Tune(in, Spec(1024), slow);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 1024);
  EXPECT_TRUE(d->change);
}

TEST(Tune, RaisesAtMostTheGrowthFactorPerRun) {
  StatusOr<TuningDecision> d = Tune(H100Run(8192), Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 16384);
  EXPECT_NE(d->reason.find("raising bucketSize 8192 -> 16384 (+100.0%, capped at 2x per run)"),
            std::string::npos)
      << d->reason;
}

TEST(Tune, LowersWhenMemoryAtTheBoundWouldExceedTheTargetHoweverSmallTheChange) {
  // 32768 tokens would need 71.8 GiB + ... above 72 GiB: down 0.8%, no hysteresis.
  StatusOr<TuningDecision> d = Tune(H100Run(32768), Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->change);
  EXPECT_EQ(d->recommended_bucket_size_tokens, kH100Target);
  EXPECT_NE(d->reason.find("lowering bucketSize 32768 -> 32512 (-0.8%)"), std::string::npos)
      << d->reason;
}

TEST(Tune, IgnoresRaisesInsideTheHysteresisBand) {
  // 31744 -> 32512 is +2.4%, under 5%.
  StatusOr<TuningDecision> d = Tune(H100Run(31744), Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->change);
  EXPECT_EQ(d->recommended_bucket_size_tokens, 31744);
  EXPECT_NE(d->reason.find("keeping bucketSize 31744: 32512 (+2.4%) is within the 5% hysteresis "
                           "band"),
            std::string::npos)
      << d->reason;
  TunerOptions eager;
  eager.min_relative_change = 0.01;
  d = Tune(H100Run(31744), Spec(), eager);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 32512);
}

TEST(Tune, AtTheTargetItKeepsTheValue) {
  StatusOr<TuningDecision> d = Tune(H100Run(kH100Target), Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->change);
  EXPECT_EQ(d->recommended_bucket_size_tokens, kH100Target);
}

TEST(Tune, AfterAnOutOfMemoryDeathStepsDownToTheFitWhenItIsLower) {
  // 40960 tokens needed 87.3 GiB of 80: the fit of the steps before says 32714.
  TuningInput in = H100Run(40960);
  in.died_of_memory = true;
  in.failure = "rank 0: signal 9 (Killed)";
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, kH100Target);
  EXPECT_EQ(d->reason.rfind("run died of memory (rank 0: signal 9 (Killed)); rank 0: peak", 0), 0u)
      << d->reason;
  EXPECT_NE(d->reason.find("stepping bucketSize down 40960 -> 32512 (-20.6%, to the fit)"),
            std::string::npos)
      << d->reason;
}

TEST(Tune, AfterAnOutOfMemoryDeathNeverStepsUp) {
  // The fit says 32714 tokens fit, but 26624 died: take the 20% step down.
  TuningInput in = H100Run(26624);
  in.died_of_memory = true;
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 21248);  // 0.8 x 26624 = 21299, rounded down
  EXPECT_NE(d->reason.find("the out-of-memory step of 20%"), std::string::npos) << d->reason;
}

TEST(Tune, AnOutOfMemoryDeathBeforeTheFirstStepStillStepsDown) {
  TuningInput in;
  in.source = "runs/x";
  in.bucket_size_tokens = 8192;
  in.died_of_memory = true;
  in.failure = "rank 1: exit code 1; log: CUDA out of memory";
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->method, FitMethod::kNone);
  EXPECT_EQ(d->binding_rank, -1);
  EXPECT_EQ(d->recommended_bucket_size_tokens, 6400);  // 0.8 x 8192 = 6553, rounded down
  EXPECT_EQ(d->reason,
            "run died of memory (rank 1: exit code 1; log: CUDA out of memory); stepping "
            "bucketSize down 8192 -> 6400 (-21.9%, the out-of-memory step of 20%)");
}

TEST(Tune, AnOutOfMemoryDeathAtTheMinimumKeepsTheValueAndSaysWhatToDo) {
  TuningInput in;
  in.source = "runs/x";
  in.bucket_size_tokens = 1024;
  in.died_of_memory = true;
  StatusOr<TuningDecision> d = Tune(in, Spec(1024));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->change);
  EXPECT_EQ(d->recommended_bucket_size_tokens, 1024);
  EXPECT_NE(d->reason.find("cannot step down below spec.tuning.minBucketSizeTokens (1024)"),
            std::string::npos)
      << d->reason;
}

TEST(Tune, OneTokenCountScalesByTheHeadroomRatio) {
  // Every step held 1000 tokens at 10 GiB; 90% of 40 GiB holds 3600.
  TuningInput in;
  in.source = "runs/x";
  in.bucket_size_tokens = 2048;
  RankObservation r;
  r.steps = {{1000, static_cast<uint64_t>(10 * kGiB)}, {1000, static_cast<uint64_t>(9 * kGiB)}};
  r.capacity_bytes = static_cast<uint64_t>(40 * kGiB);
  in.ranks.push_back(r);
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->method, FitMethod::kHeadroomRatio);
  EXPECT_DOUBLE_EQ(d->model_tokens, 3600);
  EXPECT_EQ(d->recommended_bucket_size_tokens, 3584);
  EXPECT_EQ(d->reason,
            "rank 0: peak 10.0 GiB of 40.0 GiB at 1000 tokens; one token count (1000), so scaled "
            "by the headroom ratio (10.2 MiB/token, all memory assumed to grow with tokens); "
            "target 90% (36.0 GiB) -> 3600 tokens; raising bucketSize 2048 -> 3584 (+75.0%)");
}

TEST(Tune, TheRankWithTheLeastRoomBindsAndItsCapacityNoteIsQuoted) {
  TuningInput in = H100Run();
  in.ranks.push_back(LinearRank(1, 18 * kGiB, 1.9 * kMiB, {4096, 16384, 26624}, 80 * kGiB));
  in.ranks.back().capacity_note = "a test note";
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->binding_rank, 1);
  // (72 - 18) GiB / 1.9 MiB = 29103.2 -> 28928.
  EXPECT_EQ(d->recommended_bucket_size_tokens, 28928);
  EXPECT_EQ(d->reason.rfind("rank 1: peak 67.4 GiB of 80.0 GiB (a test note) at 26624 tokens", 0),
            0u)
      << d->reason;
}

TEST(Tune, StaticMemoryAboveTheBudgetSaysNothingFits) {
  TuningInput in;
  in.source = "runs/x";
  in.bucket_size_tokens = 4096;
  in.ranks.push_back(LinearRank(0, 75 * kGiB, 1 * kMiB, {1024, 2048, 4096}, 80 * kGiB));
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 1024);  // the minimum
  EXPECT_NE(d->reason.find("nothing fits: the fitted static 75.0 GiB alone exceeds the budget"),
            std::string::npos)
      << d->reason;
}

TEST(Tune, RanksWithoutAMeasurementAreNamedAsUnused) {
  TuningInput in = H100Run();
  in.ranks.push_back(in.ranks[0]);
  in.ranks.back().rank = 1;
  in.ranks.back().capacity_bytes = 0;
  in.ranks.push_back(RankObservation{});
  in.ranks.back().rank = 2;
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, kH100Target);
  EXPECT_NE(d->reason.find("-> 32714 tokens (rank(s) 1, 2 not used: no step measured or no "
                           "capacity); raising"),
            std::string::npos)
      << d->reason;
}

TEST(Tune, UnknownCapacityIsAnErrorThatNamesTheRankAndTheFix) {
  TuningInput in = H100Run();
  in.ranks[0].capacity_bytes = 0;
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(d.status().message().find("runs/sft: cannot tune bucketSize: rank(s) 0 reported no "
                                      "memory capacity (memory_capacity_bytes 0"),
            std::string::npos)
      << d.status();
  EXPECT_NE(d.status().message().find("memory.capacity_bytes"), std::string::npos);
}

TEST(Tune, NoStepIsAnErrorUnlessTheRunDiedOfMemory) {
  TuningInput in;
  in.source = "runs/x";
  in.bucket_size_tokens = 4096;
  in.ranks.push_back(RankObservation{});
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("rank(s) 0 recorded no step"), std::string::npos)
      << d.status();
  in.ranks.clear();
  d = Tune(in, Spec());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("no rank reported any step"), std::string::npos);
}

TEST(Tune, AnUnknownBucketSizeIsInvalid) {
  TuningInput in = H100Run(0);
  StatusOr<TuningDecision> d = Tune(in, Spec());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("runs/sft: the BucketSize the run used is unknown"),
            std::string::npos);
}

TEST(Tune, RecommendationsStayInBoundsAndStepDownAfterOutOfMemory) {
  // Property: random models, bounds and outcomes.
  std::mt19937 rng(11);
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  for (int i = 0; i < 2000; ++i) {
    const int64_t lo = std::uniform_int_distribution<int64_t>(1, 8192)(rng);
    const int64_t hi = lo + std::uniform_int_distribution<int64_t>(0, 100000)(rng);
    TuningInput in;
    in.source = "random";
    in.bucket_size_tokens = std::uniform_int_distribution<int64_t>(1, 150000)(rng);
    std::vector<int64_t> tokens;
    const int n = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int k = 0; k < n; ++k)
      tokens.push_back(std::uniform_int_distribution<int64_t>(1, 100000)(rng));
    in.ranks.push_back(LinearRank(0, uni(0, 60) * kGiB, uni(0.01, 4) * kMiB, tokens, 80 * kGiB));
    in.died_of_memory = i % 3 == 0;
    StatusOr<TuningDecision> d = Tune(in, Spec(lo, hi, uni(0.5, 1.0)));
    ASSERT_TRUE(d.ok()) << d.status();
    const int64_t cur = in.bucket_size_tokens, rec = d->recommended_bucket_size_tokens;
    EXPECT_EQ(d->change, rec != cur);
    if (d->change) {
      EXPECT_GE(rec, lo) << d->reason;
      EXPECT_LE(rec, hi) << d->reason;
    }
    if (in.died_of_memory) {
      EXPECT_LE(rec, cur) << d->reason;
      if (cur > lo + 256) {
        EXPECT_LT(rec, cur) << d->reason;
      }
    }
  }
}

TEST(TuningDecisionToJson, CarriesEveryField) {
  StatusOr<TuningDecision> d = Tune(H100Run(), Spec());
  ASSERT_TRUE(d.ok()) << d.status();
  const nlohmann::json j = TuningDecisionToJson(*d);
  EXPECT_EQ(j["current_bucket_size_tokens"], 26624);
  EXPECT_EQ(j["recommended_bucket_size_tokens"], kH100Target);
  EXPECT_EQ(j["change"], true);
  EXPECT_EQ(j["method"], "least-squares");
  EXPECT_EQ(j["points"], 6);
  EXPECT_EQ(j["binding_rank"], 0);
  EXPECT_EQ(j["reason"], d->reason);
  EXPECT_NEAR(j["bytes_per_token"].get<double>(), 1.9 * kMiB, 1e-3);
}

}  // namespace
}  // namespace skrull::tuner
