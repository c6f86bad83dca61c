// The training loop end to end on a tiny model: outputs, checkpoints,
// resume equivalence, crash leftovers, LoRA.
#include "trainer/train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/file_util.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/model/safetensors.h"
#include "trainer/train/checkpoint.h"
#include "trainer/train/collectives.h"

namespace skrull::train {
namespace {

using testing::JobFiles;
using testing::TempDir;
using testing::WriteJob;
namespace fs = std::filesystem;

using Result = testing::TrainResult;

Result Train(const api::JobSpec& job, int64_t stop_after = 0, TrainerOptions o = {}) {
  return testing::TrainInProcess(job, stop_after, o);
}

std::vector<double> Losses(const std::vector<TrainSummary>& runs) {
  std::vector<double> l;
  for (const auto& r : runs)
    for (const auto& h : r.history) l.push_back(h.loss);
  return l;
}

// Every tensor of two safetensors files, compared byte for byte.
void ExpectSameTensors(const std::string& a_path, const std::string& b_path) {
  auto a = model::SafetensorsFile::Open(a_path);
  auto b = model::SafetensorsFile::Open(b_path);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  for (const auto& t : (*a)->tensors()) {
    const model::TensorInfo* u = (*b)->Find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ((*a)->Data(t), (*b)->Data(*u)) << t.name;
  }
}

TEST(Trainer, WritesSummaryMetricsAndFinalCheckpoint) {
  TempDir dir;
  JobFiles f;
  f.steps = 6;
  Result r = Train(testing::LoadJob(WriteJob(dir, f)));
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  EXPECT_EQ(r.summary.steps, 6);
  ASSERT_EQ(r.summary.history.size(), 6u);
  EXPECT_TRUE(std::isfinite(r.summary.initial_loss));
  EXPECT_EQ(r.summary.initial_loss, r.summary.history[0].loss);
  EXPECT_EQ(r.summary.final_loss, r.summary.history[5].loss);
  EXPECT_LT(r.summary.final_loss, r.summary.initial_loss);
  EXPECT_NE(r.log.find("step 6/6 loss"), std::string::npos) << r.log;

  const std::string out = dir / "out";
  auto summary = nlohmann::json::parse(*ReadFileToString(out + "/summary.json"));
  for (const char* k :
       {"steps", "initial_loss", "final_loss", "tokens", "mean_iteration_seconds",
        "tokens_per_second", "policy", "dp", "cp", "peak_memory_bytes", "rollbacks"}) {
    EXPECT_TRUE(summary.contains(k)) << k;
  }
  EXPECT_EQ(summary["steps"], 6);
  EXPECT_EQ(summary["policy"], "skrull");
  EXPECT_TRUE(summary["rollbacks"].contains("dacp"));
  EXPECT_FALSE(summary["rollbacks"].contains("runtime")) << "the runtime count is gone";
  EXPECT_GT(summary["tokens"].get<int64_t>(), 0);
  EXPECT_GT(summary["peak_memory_bytes"].get<int64_t>(), 0);

  std::istringstream lines(*ReadFileToString(out + "/metrics.jsonl"));
  int n = 0;
  for (std::string line; std::getline(lines, line);) ++n;
  EXPECT_EQ(n, 6);

  const std::string ckpt = CheckpointDir(out, 6);
  for (const char* file : {kModelWeightsFile, kOptimizerTensorsFile, kOptimizerStateFile,
                           kTrainerStateFile, kHfConfigFile}) {
    EXPECT_TRUE(fs::exists(ckpt + "/" + file)) << file;
  }
  EXPECT_EQ(*ReadFileToString(CheckpointsRoot(out) + "/latest"), "step-6\n");
  auto state = ReadTrainerState(ckpt);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->step, 6);
  EXPECT_EQ(state->data_position, 6);
  EXPECT_EQ(state->loss_history.size(), 6u);
}

TEST(Trainer, ResumeGivesTheSameLossesAndWeightsAsAStraightRun) {
  TempDir straight_dir, split_dir;
  JobFiles f;
  f.steps = 8;
  f.checkpoint_every = 3;
  Result straight = Train(testing::LoadJob(WriteJob(straight_dir, f)));
  ASSERT_TRUE(straight.status.ok()) << straight.status;

  // First half stops early (as a preempted run would), the second resumes.
  Result first = Train(testing::LoadJob(WriteJob(split_dir, f)), /*stop_after=*/4);
  ASSERT_TRUE(first.status.ok()) << first.status;
  EXPECT_TRUE(first.summary.stopped_early);
  EXPECT_EQ(first.summary.steps, 4);
  f.resume_from = "latest";
  Result second = Train(testing::LoadJob(WriteJob(split_dir, f)));
  ASSERT_TRUE(second.status.ok()) << second.status << second.log;
  EXPECT_EQ(second.summary.first_step, 4);
  EXPECT_EQ(second.summary.steps, 8);
  EXPECT_NE(second.summary.resumed_from.find("step-4"), std::string::npos);
  EXPECT_EQ(second.summary.initial_loss, straight.summary.initial_loss);

  std::vector<double> a = Losses({straight.summary});
  std::vector<double> b = Losses({first.summary, second.summary});
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << "step " << i;
  std::vector<StepStats> split = first.summary.history;
  split.insert(split.end(), second.summary.history.begin(), second.summary.history.end());
  for (size_t i = 0; i < split.size(); ++i) {
    EXPECT_EQ(split[i].step, static_cast<int64_t>(i));
    EXPECT_EQ(split[i].lr, straight.summary.history[i].lr) << "step " << i;
  }
  ExpectSameTensors(CheckpointDir(straight_dir / "out", 8) + "/model.safetensors",
                    CheckpointDir(split_dir / "out", 8) + "/model.safetensors");
  ExpectSameTensors(CheckpointDir(straight_dir / "out", 8) + "/optimizer.safetensors",
                    CheckpointDir(split_dir / "out", 8) + "/optimizer.safetensors");
}

TEST(Trainer, ResumeFromAnExplicitCheckpointReproducesItsNextLoss) {
  TempDir dir;
  JobFiles f;
  f.steps = 5;
  f.checkpoint_every = 2;
  Result full = Train(testing::LoadJob(WriteJob(dir, f)));
  ASSERT_TRUE(full.status.ok()) << full.status;
  // Resume from step-2 into another output folder: steps 2..4 again.
  f.resume_from = CheckpointDir(dir / "out", 2);
  api::JobSpec job = testing::LoadJob(WriteJob(dir, f));
  job.training.output_dir = dir / "again";
  Result again = Train(job);
  ASSERT_TRUE(again.status.ok()) << again.status;
  ASSERT_EQ(again.summary.history.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(again.summary.history[i].loss, full.summary.history[2 + i].loss, 1e-6);
  }
}

TEST(Trainer, CrashLeftoversAreIgnoredAndLatestStillLoads) {
  TempDir dir;
  JobFiles f;
  f.steps = 6;
  f.checkpoint_every = 2;
  Result straight = Train(testing::LoadJob(WriteJob(dir, f)));
  ASSERT_TRUE(straight.status.ok()) << straight.status;
  const std::string out = dir / "out";
  // Simulate a crash while writing step 6 after step 4 was committed: drop
  // step-6, leave a torn step-6.tmp, and a `latest` pointing at nothing.
  fs::remove_all(CheckpointDir(out, 6));
  fs::create_directories(CheckpointDir(out, 6) + ".tmp");
  testing::WriteText(CheckpointDir(out, 6) + ".tmp/model.safetensors", "torn");
  testing::WriteText(CheckpointsRoot(out) + "/latest", "step-6\n");
  f.resume_from = "latest";
  Result resumed = Train(testing::LoadJob(WriteJob(dir, f)));
  ASSERT_TRUE(resumed.status.ok()) << resumed.status << resumed.log;
  EXPECT_EQ(resumed.summary.first_step, 4);
  ASSERT_EQ(resumed.summary.history.size(), 2u);
  EXPECT_NEAR(resumed.summary.history[0].loss, straight.summary.history[4].loss, 1e-6);
  EXPECT_NEAR(resumed.summary.history[1].loss, straight.summary.history[5].loss, 1e-6);
  EXPECT_FALSE(fs::exists(CheckpointDir(out, 6) + ".tmp"));
  EXPECT_EQ(*ReadFileToString(CheckpointsRoot(out) + "/latest"), "step-6\n");
}

TEST(Trainer, ResumeOfAFinishedRunDoesNothing) {
  TempDir dir;
  JobFiles f;
  f.steps = 3;
  ASSERT_TRUE(Train(testing::LoadJob(WriteJob(dir, f))).status.ok());
  f.resume_from = "latest";
  Result again = Train(testing::LoadJob(WriteJob(dir, f)));
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_TRUE(again.summary.history.empty());
  EXPECT_EQ(again.summary.steps, 3);
}

TEST(Trainer, LoraSavesAdaptersAndResumesExactly) {
  TempDir straight_dir, split_dir;
  JobFiles f;
  f.steps = 4;
  f.lora = "{rank: 4, alpha: 8, targetModules: [q_proj, v_proj]}";
  Result straight = Train(testing::LoadJob(WriteJob(straight_dir, f)));
  ASSERT_TRUE(straight.status.ok()) << straight.status;
  const std::string ckpt = CheckpointDir(straight_dir / "out", 4);
  EXPECT_TRUE(fs::exists(ckpt + "/adapter_model.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt + "/adapter_config.json"));
  EXPECT_FALSE(fs::exists(ckpt + "/model.safetensors"));

  Result first = Train(testing::LoadJob(WriteJob(split_dir, f)), 2);
  ASSERT_TRUE(first.status.ok()) << first.status;
  f.resume_from = "latest";
  Result second = Train(testing::LoadJob(WriteJob(split_dir, f)));
  ASSERT_TRUE(second.status.ok()) << second.status;
  std::vector<double> a = Losses({straight.summary});
  std::vector<double> b = Losses({first.summary, second.summary});
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << "step " << i;
  ExpectSameTensors(ckpt + "/adapter_model.safetensors",
                    CheckpointDir(split_dir / "out", 4) + "/adapter_model.safetensors");
}

// Micro-batches per step in the run's metrics.jsonl.
std::vector<int64_t> MicroBatchesPerStep(const TempDir& dir) {
  std::vector<int64_t> counts;
  StatusOr<std::string> text = ReadFileToString(dir / "out/metrics.jsonl");
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return counts;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("micro_batches")) counts.push_back(j["micro_batches"].get<int64_t>());
  }
  return counts;
}

TEST(Trainer, DeepSpeedPolicyRunsMicroBatchSizeSequencesPerMicroBatch) {
  for (int micro_batch_size : {1, 2}) {
    TempDir dir;
    JobFiles f;
    f.steps = 3;
    f.policy = "deepspeed";
    api::JobSpec job = testing::LoadJob(WriteJob(dir, f));
    job.scheduler.micro_batch_size = micro_batch_size;
    Result r = Train(job);
    ASSERT_TRUE(r.status.ok()) << r.status;
    // batchSize 4 on one rank: 4 / micro_batch_size micro-batches every step.
    EXPECT_EQ(MicroBatchesPerStep(dir), std::vector<int64_t>(3, f.batch_size / micro_batch_size))
        << "microBatchSize " << micro_batch_size;
  }
}

TEST(Trainer, LossesDoNotDependOnPolicyOrBucketSize) {
  // Same global batches, different micro-batch groupings.
  std::vector<std::vector<double>> runs;
  for (auto [policy, bucket] : std::vector<std::pair<std::string, int64_t>>{{"skrull", 256},
                                                                            {"sorted", 64},
                                                                            {"balanced-cp", 48},
                                                                            {"cp-all", 100},
                                                                            {"deepspeed", 256}}) {
    TempDir dir;
    JobFiles f;
    f.steps = 5;
    f.policy = policy;
    f.bucket_size = bucket;
    Result r = Train(testing::LoadJob(WriteJob(dir, f)));
    ASSERT_TRUE(r.status.ok()) << policy << ": " << r.status;
    runs.push_back(Losses({r.summary}));
  }
  for (size_t k = 1; k < runs.size(); ++k) {
    ASSERT_EQ(runs[k].size(), runs[0].size());
    for (size_t i = 0; i < runs[0].size(); ++i) {
      EXPECT_NEAR(runs[k][i], runs[0][i], 1e-5 * std::abs(runs[0][i]))
          << "run " << k << " step " << i;
    }
  }
}

TEST(Trainer, TwoDataParallelRanksMatchOneRankWithTheSameGlobalBatch) {
  TempDir one_dir, two_dir;
  JobFiles f;
  f.steps = 5;
  f.batch_size = 8;  // global batch 8
  Result one = Train(testing::LoadJob(WriteJob(one_dir, f)));
  ASSERT_TRUE(one.status.ok()) << one.status;

  f.batch_size = 4;  // 2 DP ranks x 4 = the same global batch
  api::JobSpec job = testing::LoadJob(WriteJob(two_dir, f));
  job.parallelism.procs_per_node = 2;
  job.parallelism.data_parallel = 2;
  auto group = MakeInMemoryGroup(2);
  std::vector<StatusOr<TrainSummary>> results(2, InternalError("not run"));
  std::vector<std::ostringstream> logs(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      TrainerOptions o;
      o.serve_metrics = false;
      o.log = &logs[r];
      o.summary_path = two_dir / ("summary-rank" + std::to_string(r) + ".json");
      auto rank = dist::RankLayout::Make(job.parallelism, r);
      results[r] = rank.ok() ? RunTrainer(job, *rank, group[r].get(), o)
                             : StatusOr<TrainSummary>(rank.status());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(results[r].ok()) << results[r].status();
  const std::vector<double> a = Losses({one.summary});
  for (int r = 0; r < 2; ++r) {
    const std::vector<double> b = Losses({*results[r]});
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i], b[i], 1e-5 * std::abs(a[i])) << "rank " << r << " step " << i;
    }
  }
  EXPECT_EQ(results[0]->tokens, one.summary.tokens);
  EXPECT_TRUE(fs::exists(two_dir / "out/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(two_dir / "out/metrics-rank1.jsonl"));
  EXPECT_TRUE(fs::exists(CheckpointDir(two_dir / "out", 5) + "/model.safetensors"));
}

TEST(Trainer, APlanRewrittenBeforeItRunsTrainsTheSameAndItsErrorStopsTraining) {
  TempDir plain_dir, guarded_dir;
  JobFiles f;
  f.steps = 3;
  f.bucket_size = 64;  // several micro-batches per step
  Result plain = Train(testing::LoadJob(WriteJob(plain_dir, f)));
  ASSERT_TRUE(plain.status.ok()) << plain.status;
  TrainerOptions o;
  o.plan_hook_for_testing = [](scheduler::Plan* plan) -> Status {
    // Everything into the first micro-batch (the hook may regroup freely).
    auto& mbs = plan->ranks[0].micro_batches;
    for (size_t i = 1; i < mbs.size(); ++i) {
      mbs[0].sequences.insert(mbs[0].sequences.end(), mbs[i].sequences.begin(),
                              mbs[i].sequences.end());
      mbs[i].sequences.clear();
    }
    return OkStatus();
  };
  Result guarded = Train(testing::LoadJob(WriteJob(guarded_dir, f)), 0, o);
  ASSERT_TRUE(guarded.status.ok()) << guarded.status;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(guarded.summary.history[i].loss, plain.summary.history[i].loss,
                1e-5 * plain.summary.history[i].loss);
  }
  o.plan_hook_for_testing = [](scheduler::Plan*) -> Status {
    return ResourceExhaustedError("micro-batch 0 of DP rank 0: too big");
  };
  TempDir failing_dir;
  Result failed = Train(testing::LoadJob(WriteJob(failing_dir, f)), 0, o);
  EXPECT_EQ(failed.status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(failed.status.message(), "step 0: micro-batch 0 of DP rank 0: too big");
}

TEST(Trainer, ContextParallelWithoutABackendIsRefusedByName) {
  TempDir dir;
  api::JobSpec job = testing::LoadJob(WriteJob(dir, JobFiles{}));
  job.parallelism.procs_per_node = 2;
  job.parallelism.context_parallel = 2;
  LocalCollectives coll;
  std::ostringstream log;
  TrainerOptions o;
  o.serve_metrics = false;
  o.log = &log;
  auto rank = dist::RankLayout::Make(job.parallelism, 0);
  ASSERT_TRUE(rank.ok());
  EXPECT_EQ(rank->cp_rank(), 0);
  auto s = RunTrainer(job, *rank, &coll, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("contextParallel"), std::string::npos);
}

}  // namespace
}  // namespace skrull::train
