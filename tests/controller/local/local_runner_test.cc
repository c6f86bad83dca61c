// LocalRunner's state machine with no real trainer: a simulated trainer that
// writes the trainer's files, and the launcher's scripted FakeProcessSpawner
// for signals.
#include "controller/local/local_runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>

#include "common/file_util.h"
#include "tests/controller/local/local_test_util.h"
#include "tests/controller/local/simulated_trainer.h"
#include "trainer/dist/env.h"

namespace skrull::local {
namespace {

using testing::SimulatedTrainerSpawner;
using testing::TempDir;
using testing::WriteJob;
using testing::WriteText;

LocalRunnerOptions Options() {
  LocalRunnerOptions o;
  o.trainer_binary = "/opt/skrull/bin/skrull-trainer";
  o.env = {{"PATH", "/usr/bin"},
           {dist::env::kRank, "3"},
           {dist::env::kMasterPort, "29500"},
           {dist::env::kOutputDir, "/elsewhere"}};
  o.trainer_args = {"--device", "cpu"};
  o.echo_output = false;
  o.poll_interval = std::chrono::milliseconds(5);
  return o;
}

// One run of `job` into `run_dir`.
StatusOr<RunResult> RunOnce(const api::JobSpec& job, dist::ProcessSpawner* spawner,
                            const std::string& run_dir,
                            const LocalRunnerOptions& options = Options(), int run_index = 1,
                            std::optional<int64_t> bucket = std::nullopt) {
  LocalRunner runner(options, spawner);
  RunRequest request;
  request.run_dir = run_dir;
  request.run_index = run_index;
  request.bucket_size_tokens = bucket;
  return runner.Run(job, request);
}

TEST(LocalRunner, RunsTheTrainerOnTheDerivedJobAndReportsSuccess) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  SimulatedTrainerSpawner spawner;
  StatusOr<RunResult> r = RunOnce(job, &spawner, dir / "out/run-1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->phase, RunPhase::kSucceeded) << r->reason;
  EXPECT_EQ(r->reason, "Succeeded: 8 steps, loss 3.000 -> 0.375, 1000 tokens/s, bucketSize 8192");
  EXPECT_EQ(r->run_dir, dir / "out/run-1");
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_FALSE(r->died_of_memory);
  ASSERT_TRUE(r->summary.has_value()) << r->summary_error;
  EXPECT_EQ(r->summary->steps, 8);

  ASSERT_EQ(spawner.requests().size(), 1u);
  const dist::SpawnRequest& spawn = spawner.requests()[0];
  EXPECT_EQ(spawn.argv, (std::vector<std::string>{"/opt/skrull/bin/skrull-trainer", "--job",
                                                  dir / "out/run-1/job.yaml", "--device", "cpu"}));
  // The launcher is not a rank and writes where the runner says.
  EXPECT_EQ(spawn.env.count(dist::env::kRank), 0u);
  EXPECT_EQ(spawn.env.count(dist::env::kMasterPort), 0u);
  EXPECT_EQ(spawn.env.at(dist::env::kOutputDir), dir / "out/run-1");
  EXPECT_EQ(spawn.env.at("PATH"), "/usr/bin");
  EXPECT_EQ(spawn.log_path, dir / "out/run-1/launcher.log");
  EXPECT_TRUE(spawn.truncate_log);  // launcher.log holds this run's output only
  EXPECT_EQ(spawn.echo_prefix, "");
}

TEST(LocalRunner, WritesTheBucketSizeOverrideAndAbsolutePathsIntoTheRunsJob) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  SimulatedTrainerSpawner spawner;
  StatusOr<RunResult> r = RunOnce(job, &spawner, dir / "out/run-2", Options(), 2, 12288);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->requested_bucket_size_tokens, 12288);
  EXPECT_EQ(spawner.bucket_sizes(), std::vector<int64_t>{12288});

  StatusOr<api::JobSpec> ran = api::LoadJobSpecFile(r->job_file);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_FALSE(ran->scheduler.bucket_size_auto);
  EXPECT_EQ(ran->scheduler.bucket_size_tokens, 12288);
  EXPECT_EQ(ran->training.output_dir, dir / "out/run-2");
  EXPECT_EQ(ran->model.config, dir / "models/tiny/config.json");
  EXPECT_EQ(ran->data.path, dir / "data/train.jsonl");
  // Everything else is the user's job.
  api::JobSpec expected = job;
  expected.scheduler.bucket_size_tokens = 12288;
  expected.training.output_dir = dir / "out/run-2";
  EXPECT_EQ(*ran, expected);
}

TEST(DeriveRunJob, ResolvesRelativePathsOfASpecParsedFromText) {
  TempDir dir;
  StatusOr<api::JobSpec> job = api::LoadJobSpec(
      "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata: {name: t}\n"
      "spec: {model: {config: c.json}, data: {path: d.jsonl}, scheduler: {bucketSize: 2K}}\n",
      "<string>");
  ASSERT_TRUE(job.ok()) << job.status();
  job->source_dir = dir.path().string();
  StatusOr<api::JobSpec> d = DeriveRunJob(*job, dir / "r", 4096);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->model.config, dir / "c.json");
  EXPECT_EQ(d->scheduler.bucket_size_tokens, 4096);
}

TEST(DeriveRunJob, AnOverrideThatBreaksTheSpecIsRefusedWithTheRunAsOrigin) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  StatusOr<api::JobSpec> d = DeriveRunJob(job, dir / "r", -5);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("run " + dir / "r" + ": spec.scheduler.bucketSize"),
            std::string::npos)
      << d.status();
}

TEST(LocalRunner, AnOutOfMemoryDeathIsAFailureThatSaysSo) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 40960);  // 10 + 2.1 x 40 GiB > 80 GiB
  SimulatedTrainerSpawner spawner;
  StatusOr<RunResult> r = RunOnce(job, &spawner, dir / "out");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->phase, RunPhase::kFailed);
  EXPECT_EQ(r->exit_code, 137);
  EXPECT_TRUE(r->died_of_memory);
  EXPECT_EQ(r->failure,
            "rank 0: signal 9 (Killed); signal 9 (Killed), which is what the kernel's OOM killer "
            "sends");
  EXPECT_EQ(r->reason, "rank 0 failed: signal 9 (Killed) (log " + dir / "out" +
                           "/logs/rank-0.log): step 2/8 ...");
}

TEST(LocalRunner, AFailureWithoutASummaryQuotesTheLaunchersLastLine) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  // A summary.json from an earlier run must not be taken for this run's.
  WriteText(dir / "out/summary.json", R"({"ok": true, "ranks": []})");
  WriteText(dir / "out/launcher.log", "skrull-trainer: data/train.jsonl: no such file\n");
  dist::FakeProcessSpawner spawner({},
                                   dist::FakeProcessScript{std::chrono::milliseconds(0), 2, {}});
  StatusOr<RunResult> r = RunOnce(job, &spawner, dir / "out");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->phase, RunPhase::kFailed);
  EXPECT_FALSE(r->summary.has_value());
  EXPECT_NE(r->summary_error.find("summary.json: no such file"), std::string::npos);
  EXPECT_FALSE(r->died_of_memory);
  EXPECT_EQ(r->reason, "skrull-trainer ended with exit code 2 (log " + dir / "out/launcher.log" +
                           "): skrull-trainer: data/train.jsonl: no such file");
}

// A run whose --trainer named a directory, then a run of /bin/false into the
// same directory. Guards that the second run's reason does not quote the
// first run's "cannot exec".
TEST(LocalRunner, ReportsOnlyThisRunsLauncherOutputAfterAnEarlierFailedRun) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  dist::PosixProcessSpawner spawner;
  LocalRunnerOptions o = Options();
  o.env = {{"PATH", "/usr/bin:/bin"}};
  o.trainer_args.clear();
  o.trainer_binary = dir.path().string();  // a directory: the child cannot exec it
  StatusOr<RunResult> first = RunOnce(job, &spawner, dir / "out", o, 1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->exit_code, 127);
  EXPECT_NE(first->reason.find("cannot exec " + dir.path().string()), std::string::npos)
      << first->reason;

  o.trainer_binary = "/bin/false";  // exits 1 and says nothing
  StatusOr<RunResult> second = RunOnce(job, &spawner, dir / "out", o, 2);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->exit_code, 1);
  EXPECT_EQ(second->reason,
            "skrull-trainer ended with exit code 1 (log " + dir / "out/launcher.log" + ")");
  StatusOr<std::string> log = ReadFileToString(dir / "out/launcher.log");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(*log, "");
}

TEST(LocalRunner, ForwardsAnInterruptToTheProcessGroupOnce) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  dist::FakeProcessSpawner spawner;  // runs until signalled; dies on SIGINT/SIGTERM/SIGKILL
  std::atomic<int> interrupt{SIGTERM};
  LocalRunnerOptions o = Options();
  o.interrupt_signal = &interrupt;
  StatusOr<RunResult> r = RunOnce(job, &spawner, dir / "out", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(spawner.signals(), (std::vector<std::pair<int, int>>{{0, SIGTERM}}));
  EXPECT_EQ(r->phase, RunPhase::kFailed);
  EXPECT_EQ(r->interrupted_by_signal, SIGTERM);
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_FALSE(r->killed_after_grace);
  EXPECT_FALSE(r->died_of_memory);
  EXPECT_EQ(r->reason,
            "interrupted by SIGTERM (forwarded to skrull-trainer); it ended with signal 15 "
            "(Terminated)");
}

TEST(LocalRunner, KillsTheGroupWhenItOutlivesTheGraceAndDoesNotCallThatOutOfMemory) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  dist::FakeProcessSpawner spawner({}, dist::FakeProcessScript{std::nullopt, 0, {SIGKILL}});
  std::atomic<int> interrupt{SIGINT};
  LocalRunnerOptions o = Options();
  o.interrupt_signal = &interrupt;
  o.kill_grace = std::chrono::milliseconds(50);
  StatusOr<RunResult> r = RunOnce(job, &spawner, dir / "out", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(spawner.signals(), (std::vector<std::pair<int, int>>{{0, SIGINT}, {0, SIGKILL}}));
  EXPECT_TRUE(r->killed_after_grace);
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_FALSE(r->died_of_memory);
  EXPECT_EQ(r->reason,
            "interrupted by SIGINT (forwarded to skrull-trainer); it ended with signal 9 "
            "(Killed) after SIGKILL, 50 ms after the forward");
}

TEST(LocalRunner, RefusesAMultiNodeJob) {
  TempDir dir;
  const api::JobSpec job =
      WriteJob(dir, 8192, "", "{nodes: 2, procsPerNode: 1, dataParallel: 1, contextParallel: 2}");
  SimulatedTrainerSpawner spawner;
  StatusOr<RunResult> r = RunOnce(job, &spawner, dir / "out");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message().rfind(
                "spec.parallelism.nodes: the local runner runs one machine (got 2)", 0),
            0u);
  EXPECT_TRUE(spawner.requests().empty());
}

TEST(LocalRunner, EchoesTheLaunchersOutputWithTheRunIndex) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  SimulatedTrainerSpawner spawner;
  LocalRunnerOptions o = Options();
  o.echo_output = true;
  ASSERT_TRUE(RunOnce(job, &spawner, dir / "out", o, 3).ok());
  EXPECT_EQ(spawner.requests()[0].echo_prefix, "[run 3] ");
}

}  // namespace
}  // namespace skrull::local
