// RunWithTuning against the simulated trainer, whose ranks use
// 10 GiB + 2.1 MiB per token of 80 GiB (half of a 160 GiB host each, as CPU
// ranks report it): with a 90% target the answer is
// (72 - 10) GiB / 2.1 MiB = 30232 tokens, 30208 rounded down to 256.
#include "controller/local/tuning_loop.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>

#include "common/file_util.h"
#include "tests/controller/local/local_test_util.h"
#include "tests/controller/local/simulated_trainer.h"

namespace skrull::local {
namespace {

using nlohmann::json;
using testing::SimulatedMemory;
using testing::SimulatedTrainerSpawner;
using testing::TempDir;
using testing::WriteJob;

constexpr char kTuning[] = "  tuning: {enabled: true, targetMemoryFraction: 0.9}\n";
constexpr int64_t kTarget = 30208;

LocalRunnerOptions Options() {
  LocalRunnerOptions o;
  o.trainer_binary = "skrull-trainer";
  o.echo_output = false;
  o.poll_interval = std::chrono::milliseconds(5);
  return o;
}

StatusOr<TuningLoopReport> Loop(const api::JobSpec& job, dist::ProcessSpawner* spawner, int runs,
                                const LocalRunnerOptions& options = Options()) {
  LocalRunner runner(options, spawner);
  TuningLoopOptions o;
  o.runs = runs;
  return RunWithTuning(&runner, job, o);
}

json History(const TuningLoopReport& report) {
  StatusOr<std::string> text = ReadFileToString(report.history_path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? json::parse(*text) : json();
}

TEST(RunWithTuning, ConvergesOnTheMemoryTargetAndThenHoldsIt) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192, kTuning);
  SimulatedTrainerSpawner spawner;
  StatusOr<TuningLoopReport> report = Loop(job, &spawner, 4);
  ASSERT_TRUE(report.ok()) << report.status();
  // 8192 -> 16384 (2x cap) -> 30208 (the fit) -> kept.
  EXPECT_EQ(spawner.bucket_sizes(), (std::vector<int64_t>{8192, 16384, kTarget, kTarget}));
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->ExitCode(), 0);
  EXPECT_EQ(report->next_bucket_size_tokens, kTarget);
  ASSERT_EQ(report->runs.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const RunRecord& r = report->runs[static_cast<size_t>(k)];
    EXPECT_EQ(r.result.run_dir, dir / ("out/run-" + std::to_string(k + 1)));
    EXPECT_EQ(r.result.phase, RunPhase::kSucceeded) << r.result.reason;
    ASSERT_TRUE(r.decision.has_value()) << r.tuning_error;
    EXPECT_EQ(r.decision->method, tuner::FitMethod::kLeastSquares);
    EXPECT_NEAR(r.decision->bytes_per_token, 2.1 * (1 << 20), 1.0);
  }
  EXPECT_TRUE(report->runs[0].decision->change);
  EXPECT_TRUE(report->runs[1].decision->change);
  EXPECT_FALSE(report->runs[2].decision->change);
  EXPECT_NE(report->runs[1].decision->reason.find(
                "target 90% (72.0 GiB) -> 30232 tokens; raising bucketSize 16384 -> 30208"),
            std::string::npos)
      << report->runs[1].decision->reason;

  EXPECT_EQ(report->history_path, dir / "out/tuning-history.json");
  const json h = History(*report);
  EXPECT_EQ(h["job"], "sim");
  EXPECT_EQ(h["next_bucket_size_tokens"], kTarget);
  ASSERT_EQ(h["runs"].size(), 4u);
  const json& first = h["runs"][0];
  EXPECT_EQ(first["run"], 1);
  EXPECT_EQ(first["bucket_size_tokens"], 8192);
  EXPECT_EQ(first["phase"], "Succeeded");
  EXPECT_EQ(first["steps"], 8);
  EXPECT_EQ(first["tokens_per_second"], 1000.0);
  EXPECT_GT(first["peak_memory_bytes"].get<uint64_t>(), 10ull << 30);
  EXPECT_EQ(first["decision"]["recommended_bucket_size_tokens"], 16384);
  EXPECT_EQ(h["runs"][2]["bucket_size_tokens"], kTarget);
  EXPECT_EQ(h["runs"][2]["decision"]["change"], false);
}

TEST(RunWithTuning, StepsDownAfterAnOutOfMemoryDeathAndRecovers) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 40960, kTuning);
  SimulatedTrainerSpawner spawner;
  StatusOr<TuningLoopReport> report = Loop(job, &spawner, 3);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(spawner.bucket_sizes(), (std::vector<int64_t>{40960, kTarget, kTarget}));
  const RunRecord& died = report->runs[0];
  EXPECT_EQ(died.result.phase, RunPhase::kFailed);
  EXPECT_TRUE(died.result.died_of_memory);
  ASSERT_TRUE(died.decision.has_value()) << died.tuning_error;
  // Two steps ran before the third OOM-killed rank 0; their line says 30232.
  EXPECT_EQ(died.decision->points, 2);
  EXPECT_NE(died.decision->reason.find("stepping bucketSize down 40960 -> 30208 (-26.2%, to the "
                                       "fit)"),
            std::string::npos)
      << died.decision->reason;
  EXPECT_EQ(report->runs[1].result.phase, RunPhase::kSucceeded);
  EXPECT_TRUE(report->ok());
  const json h = History(*report);
  EXPECT_EQ(h["runs"][0]["died_of_memory"], true);
  EXPECT_EQ(h["runs"][0]["tokens_per_second"], nullptr);  // a failed run has no figures
  EXPECT_EQ(h["runs"][0]["bucket_size_tokens"], 40960);   // from its steps
}

TEST(RunWithTuning, StopsAfterAFailureTheTunerCannotFix) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192, kTuning);
  SimulatedTrainerSpawner spawner;
  spawner.FailNextRun(1, "skrull-trainer: data/train.jsonl:7: not JSON");
  StatusOr<TuningLoopReport> report = Loop(job, &spawner, 3);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->runs.size(), 1u);
  EXPECT_FALSE(report->ok());
  EXPECT_EQ(report->ExitCode(), 1);
  EXPECT_EQ(report->runs[0].result.reason, "rank 0 failed: exit code 1 (log " +
                                               dir / "out/run-1/logs/rank-0.log" +
                                               "): skrull-trainer: data/train.jsonl:7: not JSON");
}

TEST(RunWithTuning, WithoutTuningAndOneRunItWritesToTheOutputDirAndKeepsNoHistory) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  SimulatedTrainerSpawner spawner;
  StatusOr<TuningLoopReport> report = Loop(job, &spawner, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->runs.size(), 1u);
  EXPECT_EQ(report->runs[0].result.run_dir, dir / "out");
  EXPECT_FALSE(report->runs[0].decision.has_value());
  EXPECT_EQ(report->history_path, "");
  EXPECT_FALSE(std::filesystem::exists(dir / "out/tuning-history.json"));
  EXPECT_EQ(report->next_bucket_size_tokens, 0);
}

TEST(RunWithTuning, ATuningErrorIsRecordedAndTheBucketSizeStands) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192, kTuning);
  SimulatedMemory memory;
  memory.cpu = false;
  memory.reported_capacity_bytes = 0;  // what the trainer reports on CUDA today
  SimulatedTrainerSpawner spawner(memory);
  StatusOr<TuningLoopReport> report = Loop(job, &spawner, 2);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(spawner.bucket_sizes(), (std::vector<int64_t>{8192, 8192}));
  EXPECT_FALSE(report->runs[0].decision.has_value());
  EXPECT_NE(report->runs[0].tuning_error.find("rank(s) 0, 1 reported no memory capacity"),
            std::string::npos)
      << report->runs[0].tuning_error;
  EXPECT_EQ(History(*report)["runs"][1]["tuning_error"], report->runs[1].tuning_error);
}

TEST(RunWithTuning, AnInterruptedRunEndsTheLoop) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192, kTuning);
  dist::FakeProcessSpawner spawner;
  std::atomic<int> interrupt{SIGINT};
  LocalRunnerOptions ro = Options();
  ro.interrupt_signal = &interrupt;
  StatusOr<TuningLoopReport> report = Loop(job, &spawner, 3, ro);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->runs.size(), 1u);
  EXPECT_EQ(report->ExitCode(), 128 + SIGINT);
  EXPECT_FALSE(report->runs[0].decision.has_value());  // not tuned on a partial run
}

TEST(RunWithTuning, ASignalBetweenRunsStartsNoFurtherRun) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192, kTuning);
  SimulatedTrainerSpawner spawner;  // its runs end before the runner polls the flag
  std::atomic<int> interrupt{SIGTERM};
  LocalRunnerOptions ro = Options();
  ro.interrupt_signal = &interrupt;
  StatusOr<TuningLoopReport> report = Loop(job, &spawner, 3, ro);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->runs.size(), 1u);
  EXPECT_EQ(report->runs[0].result.phase, RunPhase::kSucceeded);
  EXPECT_EQ(report->stopped_by_signal, SIGTERM);
  EXPECT_EQ(report->ExitCode(), 128 + SIGTERM);
  EXPECT_EQ(History(*report)["stopped_by_signal"], SIGTERM);
}

TEST(RunWithTuning, RefusesZeroRuns) {
  TempDir dir;
  const api::JobSpec job = WriteJob(dir, 8192);
  SimulatedTrainerSpawner spawner;
  StatusOr<TuningLoopReport> report = Loop(job, &spawner, 0);
  EXPECT_EQ(report.status().message(), "--runs: must be >= 1 (got 0)");
}

}  // namespace
}  // namespace skrull::local
