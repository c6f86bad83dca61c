// spec.data.eval in the training loop: the validation loss after every
// everySteps steps and the last, in metrics.jsonl, summary.json, the
// progress line and the checkpoint (best step, carried over a resume). That
// the value is the same for every DP x CP layout and policy is
// dist_eval_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_util.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/train/checkpoint.h"

namespace skrull::train {
namespace {

api::JobSpec EvalJob(const testing::TempDir& dir, int64_t steps, int64_t every) {
  testing::WriteText(dir / "held_out.jsonl", testing::LearnableJsonl(10, 4, 30, 21));
  testing::JobFiles f;
  f.steps = static_cast<int>(steps);
  f.checkpoint_every = 2;
  api::JobSpec job = testing::LoadJob(testing::WriteJob(dir, f));
  api::EvalSpec eval;
  eval.path = dir / "held_out.jsonl";
  eval.every_steps = every;
  eval.max_sequences = 9;
  job.data.eval = eval;
  EXPECT_TRUE(api::ValidateJobSpec(job).ok()) << api::ValidateJobSpec(job);
  return job;
}

TEST(TrainerEval, ReportsEvalLossEverywhereAndKeepsTheBestStepAcrossAResume) {
  testing::TempDir dir;
  const testing::TrainResult r = testing::TrainInProcess(EvalJob(dir, 6, 2));
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  EXPECT_NE(r.log.find("eval " + (dir / "held_out.jsonl") + ": 9 sequences"), std::string::npos)
      << r.log;
  std::vector<double> evals;
  for (const StepStats& s : r.summary.history) {
    EXPECT_EQ(std::isfinite(s.eval_loss), (s.step + 1) % 2 == 0) << s.step;
    if (std::isfinite(s.eval_loss)) evals.push_back(s.eval_loss);
  }
  ASSERT_EQ(evals.size(), 3u);
  EXPECT_LT(evals.back(), evals.front());  // it learns what the held-out set holds
  EXPECT_NE(r.log.find("step 6/6 loss"), std::string::npos);
  EXPECT_NE(r.log.find(" eval_loss "), std::string::npos) << r.log;

  const nlohmann::json summary = nlohmann::json::parse(*ReadFileToString(dir / "out/summary.json"));
  EXPECT_EQ(summary["eval_loss"].get<double>(), evals.back());
  const auto best = std::min_element(evals.begin(), evals.end());
  EXPECT_EQ(summary["best_eval_loss"].get<double>(), *best);
  EXPECT_EQ(summary["best_eval_step"].get<int64_t>(), 2 * (best - evals.begin() + 1));
  ASSERT_EQ(summary["eval_losses"].size(), 3u);
  EXPECT_EQ(summary["eval_losses"][0]["step"], 2);

  std::istringstream lines(*ReadFileToString(dir / "out/metrics.jsonl"));
  int with_eval = 0;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("eval_loss")) {
      EXPECT_EQ(j["step"].get<int64_t>() % 2, 1) << line;  // after steps 1, 3, 5 (0-based)
      ++with_eval;
    }
  }
  EXPECT_EQ(with_eval, 3);

  // Stopped after 4 steps and resumed: the best step is carried over.
  testing::TempDir split_dir;
  api::JobSpec split = EvalJob(split_dir, 6, 2);
  ASSERT_TRUE(testing::TrainInProcess(split, 4).status.ok());
  auto state = ReadTrainerState(CheckpointDir(split_dir / "out", 4));
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->last_eval_loss, evals[1]);
  split.training.resume_from = api::kResumeLatest;
  const testing::TrainResult second = testing::TrainInProcess(split);
  ASSERT_TRUE(second.status.ok()) << second.status;
  EXPECT_EQ(second.summary.best_eval_loss, *best);
  EXPECT_EQ(second.summary.eval_loss, evals.back());
}

TEST(TrainerEval, AnEvalSampleThatCannotBePlacedIsNamed) {
  testing::TempDir dir;
  api::JobSpec job = EvalJob(dir, 3, 0);
  testing::WriteText(dir / "held_out.jsonl", testing::LearnableJsonl(2, 300, 300, 3));
  const testing::TrainResult r = testing::TrainInProcess(job);
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find(dir / "held_out.jsonl" +
                                    ":1: spec.data.eval: sample of 300 "
                                    "tokens does not fit spec.scheduler.bucketSize (256)"),
            std::string::npos)
      << r.status;
}

}  // namespace
}  // namespace skrull::train
