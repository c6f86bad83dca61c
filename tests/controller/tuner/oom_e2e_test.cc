// The out-of-memory path end to end: the real skrull-trainer (on CPU, with
// the test hook SKRULL_TEST_OOM_AT_STEP standing in for a CUDA allocation
// that does not fit) exits 3 and leaves the out-of-memory record; the tuner
// reads the run directory and steps BucketSize down (its rule 1). Once as a
// single process, once as a 2-rank job through the launcher.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "api/job_spec.h"
#include "common/file_util.h"
#include "controller/tuner/run_dir.h"
#include "controller/tuner/tuner.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/metrics/oom_record.h"

namespace skrull::tuner {
namespace {

namespace fs = std::filesystem;

class OomEndToEndTest : public ::testing::Test {
 protected:
  // The shared tiny job (train_test_util.h) with BucketSize 4096 on `procs`
  // data-parallel ranks.
  std::string WriteJob(int procs) {
    train::testing::JobFiles f;
    f.steps = 4;
    f.bucket_size = 4096;
    std::string yaml = *ReadFileToString(train::testing::WriteJob(dir_, f));
    for (const char* key : {"procsPerNode: 1", "dataParallel: 1"}) {
      yaml.replace(yaml.find(key), std::strlen(key),
                   std::string(key, std::strlen(key) - 1) + std::to_string(procs));
    }
    const std::string path = dir_ / "job.yaml";
    train::testing::WriteText(path, yaml);
    return path;
  }

  // Runs skrull-trainer with the out-of-memory hook at `step`; returns its exit code.
  int RunTrainerWithOomAt(const std::string& job, int step) {
    const char* bin = std::getenv("SKRULL_BIN_DIR");
    const std::string cmd = "cd " + dir_.path().string() +
                            " && SKRULL_TEST_OOM_AT_STEP=" + std::to_string(step) + " " +
                            std::string(bin != nullptr ? bin : "bin") + "/skrull-trainer --job " +
                            job + " --no-metrics-server 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return -1;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) output_.append(buf.data(), n);
    const int status = ::pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // The tuner's decision for the run, after checking it saw an OOM death.
  void ExpectTheTunerStepsDown(const std::string& job_path) {
    StatusOr<api::JobSpec> job = api::LoadJobSpecFile(job_path);
    ASSERT_TRUE(job.ok()) << job.status();
    StatusOr<TuningInput> input = ReadRunDirectoryForJob(dir_ / "out", *job);
    ASSERT_TRUE(input.ok()) << input.status();
    EXPECT_TRUE(input->died_of_memory);
    EXPECT_NE(input->failure.find("out of memory at step 1 on cpu"), std::string::npos)
        << input->failure;
    EXPECT_EQ(input->bucket_size_tokens, 4096);
    StatusOr<TuningDecision> d = TuneRunDirectory(dir_ / "out", *job);
    ASSERT_TRUE(d.ok()) << d.status();
    // 0.8 x 4096 = 3276.8, down to the 256-token granularity.
    EXPECT_EQ(d->recommended_bucket_size_tokens, 3072) << d->reason;
    EXPECT_TRUE(d->change);
  }

  train::testing::TempDir dir_;
  std::string output_;
};

TEST_F(OomEndToEndTest, ASingleProcessExits3WithTheRecordAndTheTunerStepsDown) {
  const std::string job = WriteJob(1);
  ASSERT_EQ(RunTrainerWithOomAt(job, 1), metrics::kOutOfMemoryExitCode) << output_;
  EXPECT_NE(output_.find("out of memory: CUDA out of memory."), std::string::npos) << output_;
  ASSERT_TRUE(fs::exists(dir_ / "out/oom.json")) << output_;
  EXPECT_FALSE(fs::exists(dir_ / "out/summary.json")) << "a failed single process writes none";
  ExpectTheTunerStepsDown(job);
}

TEST_F(OomEndToEndTest, ATwoRankJobExits3WithEachRanksRecordAndTheTunerStepsDown) {
  const std::string job = WriteJob(2);
  ASSERT_EQ(RunTrainerWithOomAt(job, 1), metrics::kOutOfMemoryExitCode) << output_;
  EXPECT_TRUE(fs::exists(dir_ / "out/oom.json") || fs::exists(dir_ / "out/oom-rank1.json"))
      << output_;
  StatusOr<RunSummary> summary = ReadRunSummary(dir_ / "out/summary.json");
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_TRUE(summary->failure.has_value());
  EXPECT_EQ(summary->failure->exit_code, metrics::kOutOfMemoryExitCode);
  ExpectTheTunerStepsDown(job);
}

}  // namespace
}  // namespace skrull::tuner
