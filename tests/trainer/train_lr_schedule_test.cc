#include "trainer/train/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace skrull::train {
namespace {

LrScheduleOptions Options(api::LrSchedule kind, int64_t warmup, int64_t steps) {
  LrScheduleOptions o;
  o.peak_lr = 1e-3;
  o.warmup_steps = warmup;
  o.total_steps = steps;
  o.kind = kind;
  o.min_lr_ratio = 0.1;
  return o;
}

TEST(LrSchedule, WarmupRisesLinearlyAndStepZeroAlreadyLearns) {
  auto o = Options(api::LrSchedule::kCosine, 4, 20);
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 0), 0.25e-3);
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 1), 0.5e-3);
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 3), 1e-3);
}

TEST(LrSchedule, CosineDecaysFromPeakToMinAtTheLastStep) {
  auto o = Options(api::LrSchedule::kCosine, 2, 12);  // decay over steps 2..11
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 2), 1e-3);
  EXPECT_NEAR(LearningRateAt(o, 11), 1e-4, 1e-15);
  // Midpoint of the decay (p = 0.5): halfway between peak and min.
  auto mid = Options(api::LrSchedule::kCosine, 0, 11);  // p = step / 10
  EXPECT_NEAR(LearningRateAt(mid, 5), 0.55e-3, 1e-15);
  EXPECT_NEAR(LearningRateAt(mid, 1), 1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(M_PI * 0.1)), 1e-15);
  // Past the end it stays at min.
  EXPECT_NEAR(LearningRateAt(o, 50), 1e-4, 1e-15);
}

TEST(LrSchedule, LinearDecaysLinearlyToMin) {
  auto o = Options(api::LrSchedule::kLinear, 0, 11);
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 0), 1e-3);
  EXPECT_NEAR(LearningRateAt(o, 5), 0.55e-3, 1e-15);
  EXPECT_NEAR(LearningRateAt(o, 10), 1e-4, 1e-15);
}

TEST(LrSchedule, ConstantStaysAtPeakAfterWarmup) {
  auto o = Options(api::LrSchedule::kConstant, 2, 10);
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 0), 0.5e-3);
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 2), 1e-3);
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 9), 1e-3);
}

TEST(LrSchedule, SingleStepRunUsesPeak) {
  auto o = Options(api::LrSchedule::kCosine, 0, 1);
  EXPECT_DOUBLE_EQ(LearningRateAt(o, 0), 1e-3);
}

TEST(LrSchedule, FromSpecCopiesTheTrainingFields) {
  api::TrainingSpec t;
  t.learning_rate = 3e-4;
  t.warmup_steps = 5;
  t.steps = 60;
  t.schedule = api::LrSchedule::kLinear;
  t.min_lr_ratio = 0.2;
  auto o = LrScheduleFromSpec(t);
  EXPECT_EQ(o.peak_lr, 3e-4);
  EXPECT_EQ(o.warmup_steps, 5);
  EXPECT_EQ(o.total_steps, 60);
  EXPECT_EQ(o.kind, api::LrSchedule::kLinear);
  EXPECT_EQ(o.min_lr_ratio, 0.2);
}

}  // namespace
}  // namespace skrull::train
