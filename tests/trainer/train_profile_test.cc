// spec.scheduler.hardwareProfile end to end: `--profile` (RunProfileRank)
// writes a profile of a tiny job, a run with bucketSize: auto takes its
// bucket_size_tokens, and bad paths, JSON and members fail naming the field
// and the file.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/file_util.h"
#include "scheduler/hardware_profile.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/dist/profile.h"
#include "trainer/train/collectives.h"
#include "trainer/train/hardware_profile_file.h"
#include "trainer/train/trainer.h"

namespace skrull::train {
namespace {

using testing::JobFiles;
using testing::TempDir;
using testing::WriteJob;
using testing::WriteText;

using Result = testing::TrainResult;

Result Train(const api::JobSpec& job) {
  TrainerOptions o;
  o.device = "cpu";
  return testing::TrainInProcess(job, 0, o);
}

// The test job with `bucket` ("auto" or a count) and, when not empty,
// hardwareProfile: `profile` (written as is, so relative to the job file).
std::string WriteProfiledJob(const TempDir& dir, const std::string& bucket,
                             const std::string& profile, int steps = 3) {
  JobFiles f;
  f.steps = steps;
  const std::string path = WriteJob(dir, f);
  StatusOr<std::string> text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status();
  std::string yaml = *text;
  const std::string written = "bucketSize: " + std::to_string(f.bucket_size) + "\n";
  const size_t at = yaml.find(written);
  EXPECT_NE(at, std::string::npos) << yaml;
  std::string replacement = "bucketSize: " + bucket + "\n";
  if (!profile.empty()) replacement += "    hardwareProfile: " + profile + "\n";
  yaml.replace(at, written.size(), replacement);
  WriteText(path, yaml);
  return path;
}

// A profile the scheduler reads, with `extra` top-level members (JSON text
// after a comma), e.g. "\"bucket_size_tokens\": 300".
std::string ProfileJson(const std::string& extra) {
  scheduler::HardwareProfile hw = scheduler::H100Profile();
  hw.name = "test-device";
  std::string text = scheduler::ToJson(hw);
  if (extra.empty()) return text;
  const size_t brace = text.rfind('}');
  return text.substr(0, brace) + ", " + extra + "}\n";
}

std::vector<nlohmann::json> MetricsLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

TEST(HardwareProfileTraining, AutoBucketSizeIsTheMeasuredProfiles) {
  TempDir dir;
  // Profile the tiny job on this host, as `skrull-trainer --profile` does.
  const std::string profile = dir / "profile.json";
  api::JobSpec job = testing::LoadJob(WriteProfiledJob(dir, "256", ""));
  job.tuning.min_bucket_size_tokens = 64;
  job.tuning.max_bucket_size_tokens = 1000;  // host memory would allow far more
  dist::RankEnv env;
  dist::ProfileOptions po;
  po.out_path = profile;
  po.device = "cpu";
  po.token_counts = {64, 128, 256};
  po.short_sequence_tokens = 32;
  po.sequence_lengths = {32, 64};
  po.collective_bytes = {4 << 10};
  po.repeats = 1;
  ASSERT_TRUE(dist::RunProfileRank(job, env, po).ok());
  StatusOr<train::HardwareProfileFile> loaded = train::LoadHardwareProfileFile(profile);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const int64_t measured = loaded->bucket_size_tokens;
  EXPECT_EQ(measured, 1000);

  // Train with bucketSize: auto and the profile (relative to the job file).
  Result r = Train(testing::LoadJob(WriteProfiledJob(dir, "auto", "profile.json")));
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  EXPECT_EQ(r.summary.bucket_size_tokens, measured);
  EXPECT_EQ(r.summary.hardware_profile, profile);
  EXPECT_NE(r.log.find("hardware profile: " + profile), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("bucketSize " + std::to_string(measured) +
                       " tokens per rank (auto, from the hardware profile)"),
            std::string::npos)
      << r.log;
  StatusOr<std::string> summary = ReadFileToString(dir / "out/summary.json");
  ASSERT_TRUE(summary.ok()) << summary.status();
  const nlohmann::json s = nlohmann::json::parse(*summary);
  EXPECT_EQ(s["bucket_size_tokens"], measured);
  EXPECT_EQ(s["hardware_profile"], profile);
  const std::vector<nlohmann::json> lines = MetricsLines(dir / "out/metrics.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  for (const nlohmann::json& line : lines) EXPECT_EQ(line["bucket_size_tokens"], measured);
}

TEST(HardwareProfileTraining, ACountedBucketSizeKeepsItsValueAndStillUsesTheProfile) {
  TempDir dir;
  WriteText(dir / "h100.json", ProfileJson(""));  // no bucket_size_tokens: fine here
  Result r = Train(testing::LoadJob(WriteProfiledJob(dir, "256", "h100.json", 3)));
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  EXPECT_EQ(r.summary.bucket_size_tokens, 256);
  EXPECT_EQ(r.summary.hardware_profile, dir / "h100.json");
  EXPECT_NE(r.log.find("(test-device) prices the plans; bucketSize 256 tokens per rank "
                       "(spec.scheduler.bucketSize)"),
            std::string::npos)
      << r.log;
}

TEST(HardwareProfileTraining, WithoutAProfileCpuAutoFallsBackToHostMemoryAndSaysSo) {
  TempDir dir;
  Result r = Train(testing::LoadJob(WriteProfiledJob(dir, "auto", "", 3)));
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  EXPECT_GT(r.summary.bucket_size_tokens, 0);
  EXPECT_EQ(r.summary.hardware_profile, "built-in h100-sxm-80gb");
  EXPECT_NE(r.log.find("estimated from host memory with the analytic memory model because no "
                       "spec.scheduler.hardwareProfile is set"),
            std::string::npos)
      << r.log;
}

TEST(HardwareProfileTraining, MissingProfileFileNamesFieldFileAndFix) {
  TempDir dir;
  Result r = Train(testing::LoadJob(WriteProfiledJob(dir, "auto", "nope/profile.json")));
  EXPECT_EQ(r.status.code(), StatusCode::kNotFound) << r.status;
  EXPECT_EQ(r.status.message(), "spec.scheduler.hardwareProfile: " + (dir / "nope/profile.json") +
                                    ": no such file; write it with `skrull-trainer --profile "
                                    "--job FILE --out " +
                                    (dir / "nope/profile.json") + "` or fix the path");
}

TEST(HardwareProfileTraining, ProfileTheSchedulerCannotParseNamesFieldAndFile) {
  TempDir dir;
  const std::string path = dir / "bad.json";
  WriteText(path, "{\"name\": \"x\", \"bucket_size_tokens\": 512");  // truncated
  Result r = Train(testing::LoadJob(WriteProfiledJob(dir, "auto", "bad.json")));
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument) << r.status;
  EXPECT_EQ(
      r.status.message().rfind("spec.scheduler.hardwareProfile: " + path + ": not valid JSON", 0),
      0u)
      << r.status;
  EXPECT_NE(r.status.message().find("skrull-trainer --profile"), std::string::npos) << r.status;

  // Valid JSON, but not a profile: every problem listed.
  WriteText(path, "{\"bucket_size_tokens\": 512}");
  r = Train(testing::LoadJob(WriteProfiledJob(dir, "auto", "bad.json")));
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument) << r.status;
  EXPECT_NE(r.status.message().find("spec.scheduler.hardwareProfile: " + path +
                                    ": name: required field missing; "),
            std::string::npos)
      << r.status;
  EXPECT_NE(r.status.message().find("; peak_flops_per_second: required field missing"),
            std::string::npos)
      << r.status;
}

TEST(HardwareProfileTraining, AutoNeedsAPositiveIntegerBucketSizeInTheProfile) {
  TempDir dir;
  const std::string path = dir / "p.json";
  WriteText(path, ProfileJson(""));
  Result r = Train(testing::LoadJob(WriteProfiledJob(dir, "auto", "p.json")));
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument) << r.status;
  EXPECT_EQ(r.status.message(),
            "spec.scheduler.hardwareProfile: " + path +
                ": has no \"bucket_size_tokens\", which spec.scheduler.bucketSize: auto takes "
                "from it; write the profile with `skrull-trainer --profile --job FILE --out " +
                path + "` on this device, or set bucketSize to a token count");

  for (const auto& [bad, what] :
       std::vector<std::pair<std::string, std::string>>{{"0", "must be >= 1"},
                                                        {"-5", "must be >= 1"},
                                                        {"2.5", "must be an integer"},
                                                        {"\"4K\"", "must be an integer"}}) {
    SCOPED_TRACE(bad);
    WriteText(path, ProfileJson("\"bucket_size_tokens\": " + bad));
    StatusOr<HardwareProfileFile> file = LoadHardwareProfileFile(path);
    EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument) << file.status();
    EXPECT_EQ(file.status().message(), "spec.scheduler.hardwareProfile: " + path +
                                           ": bucket_size_tokens: " + what + " (got " + bad +
                                           "); re-run `skrull-trainer --profile`");
  }
  WriteText(path, ProfileJson("\"bucket_size_tokens\": 300"));
  StatusOr<HardwareProfileFile> file = LoadHardwareProfileFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->bucket_size_tokens, 300);
  EXPECT_EQ(file->hardware.name, "test-device");
  EXPECT_EQ(file->path, path);
}

}  // namespace
}  // namespace skrull::train
