// spec.data.sources in the training loop: two weighted sources train, count
// per source in metrics.jsonl, and resume from the checkpoint's sampler state
// with the same losses as a straight run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_util.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/train/checkpoint.h"

namespace skrull::train {
namespace {

api::JobSpec TwoSourceJob(const testing::TempDir& dir, int64_t steps) {
  testing::WriteText(dir / "a/part-0.jsonl", testing::LearnableJsonl(20, 4, 24, 11));
  testing::WriteText(dir / "a/part-1.jsonl", testing::LearnableJsonl(10, 4, 24, 12));
  testing::WriteText(dir / "b.jsonl", testing::LearnableJsonl(15, 8, 40, 13));
  testing::JobFiles f;
  f.steps = static_cast<int>(steps);
  f.checkpoint_every = 2;
  api::JobSpec job = testing::LoadJob(testing::WriteJob(dir, f));
  job.data.path.clear();
  job.data.sources = {{dir / "a", api::DataFormat::kTokenizedJsonl, 3.0, {}},
                      {dir / "b.jsonl", api::DataFormat::kTokenizedJsonl, 1.0, {}}};
  EXPECT_TRUE(api::ValidateJobSpec(job).ok()) << api::ValidateJobSpec(job);
  return job;
}

TEST(TrainerSources, CountsEverySourceInMetricsAndResumesFromTheSamplerState) {
  testing::TempDir straight_dir, split_dir;
  const testing::TrainResult straight = testing::TrainInProcess(TwoSourceJob(straight_dir, 6));
  ASSERT_TRUE(straight.status.ok()) << straight.status << "\n" << straight.log;
  EXPECT_NE(straight.log.find("data source 0 (weight 3): " + (straight_dir / "a/part-0.jsonl")),
            std::string::npos)
      << straight.log;

  std::istringstream lines(*ReadFileToString(straight_dir / "out/metrics.jsonl"));
  std::vector<uint64_t> samples(2, 0);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ASSERT_EQ(j["source_samples"].size(), 2u) << line;
    EXPECT_EQ(j["source_samples"][0].get<uint64_t>() + j["source_samples"][1].get<uint64_t>(),
              4u);  // the global batch
    EXPECT_GT(j["source_tokens"][0].get<uint64_t>() + j["source_tokens"][1].get<uint64_t>(), 0u);
    for (int s = 0; s < 2; ++s) samples[s] += j["source_samples"][s].get<uint64_t>();
  }
  EXPECT_EQ(samples[0] + samples[1], 24u);
  auto state = ReadTrainerState(CheckpointDir(straight_dir / "out", 6));
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->source_cursors, (std::vector<int64_t>{static_cast<int64_t>(samples[0]),
                                                         static_cast<int64_t>(samples[1])}));

  api::JobSpec split = TwoSourceJob(split_dir, 6);
  const testing::TrainResult first = testing::TrainInProcess(split, /*stop_after=*/4);
  ASSERT_TRUE(first.status.ok()) << first.status;
  split.training.resume_from = api::kResumeLatest;
  const testing::TrainResult second = testing::TrainInProcess(split);
  ASSERT_TRUE(second.status.ok()) << second.status << "\n" << second.log;
  std::vector<double> losses;
  for (const auto* run : {&first, &second})
    for (const StepStats& s : run->summary.history) losses.push_back(s.loss);
  ASSERT_EQ(losses.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(losses[i], straight.summary.history[i].loss) << i;
}

}  // namespace
}  // namespace skrull::train
