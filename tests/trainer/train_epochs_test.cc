// spec.training.epochs: the derived step count, and a run that uses it.
#include "trainer/train/epochs.h"

#include <gtest/gtest.h>

#include "tests/trainer/train_test_util.h"

namespace skrull::train {
namespace {

api::TrainingSpec Epochs(int64_t epochs, int64_t warmup = 0) {
  api::TrainingSpec t;
  t.steps = 0;
  t.epochs = epochs;
  t.warmup_steps = warmup;
  return t;
}

TEST(TotalSteps, IsStepsWhenSet) {
  api::TrainingSpec t;
  t.steps = 7;
  EXPECT_EQ(*TotalSteps(t, 1000, 16), 7);
  EXPECT_EQ(DescribeLength(t, 1000, 16, 7), "7 steps (spec.training.steps)");
}

TEST(TotalSteps, EpochsRoundUpSoEverySampleIsSeen) {
  EXPECT_EQ(*TotalSteps(Epochs(1), 40, 8), 5);
  EXPECT_EQ(*TotalSteps(Epochs(1), 41, 8), 6);
  EXPECT_EQ(*TotalSteps(Epochs(3), 1000, 16), 188);  // 3000 / 16 = 187.5
  EXPECT_EQ(*TotalSteps(Epochs(2), 3, 100), 1);      // a batch larger than the data
  EXPECT_EQ(DescribeLength(Epochs(3), 1000, 16, 188),
            "3 epochs x 1000 samples / global batch 16 = 188 steps");
}

TEST(TotalSteps, TooManyStepsAndTooMuchWarmupNameTheField) {
  StatusOr<int64_t> huge = TotalSteps(Epochs(api::kMaxSteps), int64_t{1} << 40, 1);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(),
            "spec.training.epochs: 2147483647 epochs of 1099511627776 samples at a global batch "
            "of 1 is more than 2147483647 steps; lower epochs");
  StatusOr<int64_t> warm = TotalSteps(Epochs(1, 5), 40, 8);
  ASSERT_FALSE(warm.ok());
  EXPECT_EQ(warm.status().message(),
            "spec.training.warmupSteps: must be < the 5 steps that spec.training.epochs gives "
            "(got 5); lower warmupSteps");
}

TEST(TrainerEpochs, RunsTheDerivedStepsAndSaysSoBeforeTraining) {
  testing::TempDir dir;
  testing::JobFiles f;
  f.batch_size = 8;  // 40 samples: 5 steps per epoch
  const std::string path = testing::WriteJob(dir, f);
  api::JobSpec job = testing::LoadJob(path);
  job.training.steps = 0;
  job.training.epochs = 2;
  ASSERT_TRUE(api::ValidateJobSpec(job).ok());
  testing::TrainResult r = testing::TrainInProcess(job);
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  EXPECT_EQ(r.summary.steps, 10);
  const size_t length = r.log.find("length: 2 epochs x 40 samples / global batch 8 = 10 steps");
  ASSERT_NE(length, std::string::npos) << r.log;
  EXPECT_LT(length, r.log.find("step 1/10 loss")) << r.log;
  EXPECT_NE(r.log.find("step 10/10 loss"), std::string::npos) << r.log;
}

}  // namespace
}  // namespace skrull::train
