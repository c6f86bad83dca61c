// End to end: the local runner runs the real `skrull-trainer` twice on a tiny
// 2-rank CPU job (DP 1 x CP 2, the tiny model of examples/models/tiny) with
// spec.tuning.enabled, and the second run must train with the BucketSize the
// tuner derived from the first run's metrics.jsonl and summary.json.
//
// Needs skrull-trainer and skrull-make-data in $SKRULL_BIN_DIR (CTest sets
// it) or next to this binary. About 20-60 s on a loaded 2-core machine.
#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "common/file_util.h"
#include "controller/local/tuning_loop.h"
#include "controller/tuner/run_dir.h"
#include "tests/controller/local/local_test_util.h"
#include "trainer/dist/launcher.h"

extern char** environ;

namespace skrull::local {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteText;

std::string BinDir() {
  if (const char* dir = std::getenv("SKRULL_BIN_DIR"); dir != nullptr && *dir != '\0') return dir;
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? fs::path(std::string(buf, static_cast<size_t>(n))).parent_path().string() : ".";
}

std::string SourcePath(const std::string& path) {
  const char* root = std::getenv("SKRULL_SOURCE_DIR");
  return (fs::path(root != nullptr && *root != '\0' ? root : SKRULL_SOURCE_DIR_FALLBACK) / path)
      .string();
}

// The file's text, or why it could not be read.
std::string TextOf(const std::string& path) {
  StatusOr<std::string> text = ReadFileToString(path);
  return text.ok() ? *text : text.status().ToString();
}

// Runs a program to completion through the same spawner the runner uses,
// with this process's environment unless `env` is given.
StatusOr<dist::ProcessExit> RunToCompletion(
    const std::vector<std::string>& argv, const std::string& log,
    std::optional<std::map<std::string, std::string>> env = std::nullopt) {
  dist::PosixProcessSpawner spawner;
  dist::SpawnRequest req;
  req.argv = argv;
  req.env = env ? *env : dist::EnvironmentToMap(environ);
  req.log_path = log;
  SKRULL_ASSIGN_OR_RETURN(dist::Pid pid, spawner.Spawn(req));
  (void)pid;
  for (int i = 0; i < 1200; ++i) {
    if (auto exit = spawner.WaitAny(std::chrono::milliseconds(100))) return *exit;
  }
  return UnavailableError(argv[0] + " did not finish in 120 s");
}

TEST(LocalRunnerEndToEnd, TheSecondRunTrainsWithTheTunedBucketSize) {
  TempDir dir;
  const std::string trainer = BinDir() + "/skrull-trainer";
  const std::string make_data = BinDir() + "/skrull-make-data";
  ASSERT_EQ(::access(trainer.c_str(), X_OK), 0) << trainer << " is missing; build skrull-trainer";
  ASSERT_EQ(::access(make_data.c_str(), X_OK), 0)
      << make_data << " is missing; build skrull-make-data";

  StatusOr<dist::ProcessExit> data = RunToCompletion(
      {make_data, "--out", dir / "data.jsonl", "--n", "64", "--seed", "1", "--short-min", "48",
       "--short-max", "128", "--long-min", "300", "--long-max", "480", "--long-fraction", "0.2"},
      dir / "make-data.log");
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_TRUE(data->success()) << data->Describe() << ": "
                               << dist::TailOfFile(dir / "make-data.log", 20);

  std::ostringstream y;
  y << "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata:\n  name: tune-e2e\nspec:\n"
    << "  model: {config: " << SourcePath("examples/models/tiny/config.json") << "}\n"
    << "  data: {path: data.jsonl, format: tokenized-jsonl}\n"
    << "  parallelism: {nodes: 1, procsPerNode: 2, dataParallel: 1, contextParallel: 2}\n"
    << "  scheduler: {policy: skrull, bucketSize: 1024, batchSize: 8, seed: 1}\n"
    << "  training: {steps: 12, learningRate: 1e-3, warmupSteps: 2, outputDir: out, "
       "logEvery: 4}\n"
    << "  resources: {gpusPerProc: 0}\n"
    << "  metrics: {port: 0}\n"
    << "  tuning: {enabled: true, targetMemoryFraction: 0.9, minBucketSizeTokens: 512, "
       "maxBucketSizeTokens: 4096}\n";
  WriteText(dir / "job.yaml", y.str());
  StatusOr<api::JobSpec> job = api::LoadJobSpecFile(dir / "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status();

  dist::PosixProcessSpawner spawner;
  LocalRunnerOptions o;
  o.trainer_binary = trainer;
  o.env = dist::EnvironmentToMap(environ);
  o.echo_output = false;
  LocalRunner runner(o, &spawner);
  TuningLoopOptions lo;
  lo.runs = 2;
  StatusOr<TuningLoopReport> report = RunWithTuning(&runner, *job, lo);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->runs.size(), 2u);
  for (const RunRecord& r : report->runs) {
    ASSERT_EQ(r.result.phase, RunPhase::kSucceeded)
        << "run " << r.result.run_index << ": " << r.result.reason << "\n"
        << dist::TailOfFile(r.result.launcher_log, 40);
  }

  // Run 1: BucketSize 1024, measured, tuned.
  const RunRecord& first = report->runs[0];
  EXPECT_EQ(first.bucket_size_tokens, 1024);
  ASSERT_TRUE(first.decision.has_value()) << first.tuning_error;
  const tuner::TuningDecision& d = *first.decision;
  std::cerr << "run 1 decision: " << d.reason << "\n";
  EXPECT_GT(d.points, 0);
  EXPECT_GT(d.peak_memory_bytes, 0u);
  EXPECT_NE(d.reason.find("shared by 2 ranks"), std::string::npos) << d.reason;  // CPU ranks
  ASSERT_TRUE(d.change) << "the tiny model uses little memory: expected a raise; " << d.reason;
  const int64_t tuned = d.recommended_bucket_size_tokens;
  EXPECT_GT(tuned, 1024);
  EXPECT_LE(tuned, 4096);
  EXPECT_EQ(tuned % 256, 0);

  // Run 2 used it: its job file, its summary and every step it recorded.
  const RunResult& second = report->runs[1].result;
  EXPECT_EQ(second.run_dir, (fs::path(job->training.output_dir) / "run-2").string());
  EXPECT_EQ(second.requested_bucket_size_tokens, tuned);
  StatusOr<api::JobSpec> ran = api::LoadJobSpecFile(second.job_file);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->scheduler.bucket_size_tokens, tuned);
  ASSERT_TRUE(second.summary.has_value()) << second.summary_error;
  EXPECT_EQ(second.summary->bucket_size_tokens, tuned);
  EXPECT_EQ(second.summary->steps, 12);
  for (const std::string& file : tuner::MetricsFiles(second.run_dir)) {
    StatusOr<std::string> text = ReadFileToString(file);
    ASSERT_TRUE(text.ok()) << text.status();
    StatusOr<std::vector<tuner::StepMemory>> steps = tuner::ParseMetricsJsonl(*text, file);
    ASSERT_TRUE(steps.ok()) << steps.status();
    EXPECT_EQ(steps->size(), 12u) << file;
    for (const tuner::StepMemory& s : *steps) {
      EXPECT_EQ(s.bucket_size_tokens, tuned) << file << " step " << s.step;
      EXPECT_LE(s.rank_tokens_peak, tuned) << file << " step " << s.step;
    }
  }

  // The history says the same.
  StatusOr<std::string> history = ReadFileToString(report->history_path);
  ASSERT_TRUE(history.ok()) << history.status();
  const nlohmann::json h = nlohmann::json::parse(*history);
  EXPECT_EQ(h["runs"][0]["bucket_size_tokens"], 1024);
  EXPECT_EQ(h["runs"][0]["decision"]["recommended_bucket_size_tokens"], tuned);
  EXPECT_EQ(h["runs"][1]["bucket_size_tokens"], tuned);
  EXPECT_GT(h["runs"][1]["tokens_per_second"].get<double>(), 0);
}

// Guards `build/bin/skrull-controller run JOB.yaml`, as in the README, finding
// the trainer beside itself (it once said "cannot exec skrull-trainer"
// unless build/bin was on PATH).
TEST(LocalRunnerEndToEnd, TheControllerFindsTheTrainerBesideItselfWithoutPath) {
  TempDir dir;
  const std::string controller = BinDir() + "/skrull-controller";
  ASSERT_EQ(::access(controller.c_str(), X_OK), 0) << controller << " is missing";
  // The trainer starts, finds no data and exits 2 saying so.
  WriteText(dir / "job.yaml",
            "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata: {name: beside}\nspec:\n"
            "  model: {config: " +
                SourcePath("examples/models/tiny/config.json") +
                "}\n"
                "  data: {path: no-such-data.jsonl, format: tokenized-jsonl}\n"
                "  parallelism: {nodes: 1, procsPerNode: 1, dataParallel: 1, contextParallel: 1}\n"
                "  scheduler: {bucketSize: 1024}\n"
                "  training: {steps: 1, outputDir: out}\n"
                "  metrics: {port: 0}\n");
  const std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"},
                                                  {"HOME", dir.path().string()}};
  StatusOr<dist::ProcessExit> run =
      RunToCompletion({controller, "run", dir / "job.yaml"}, dir / "controller.log", env);
  ASSERT_TRUE(run.ok()) << run.status();
  const std::string log = TextOf(dir / "controller.log");
  EXPECT_EQ(log.find("cannot exec"), std::string::npos) << log;
  EXPECT_NE(log.find("no-such-data.jsonl"), std::string::npos) << log;

  // A --trainer that cannot be the trainer is refused before any run.
  run = RunToCompletion({controller, "run", dir / "job.yaml", "--trainer", dir.path().string()},
                        dir / "dir.log", env);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 2);
  const std::string dir_log = TextOf(dir / "dir.log");
  EXPECT_NE(dir_log.find("--trainer " + dir.path().string() + ": is a directory"),
            std::string::npos)
      << dir_log;
}

}  // namespace
}  // namespace skrull::local
