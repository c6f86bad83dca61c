// Builders shared by the local runner tests: a temporary folder and a job
// file in it (validation never touches the filesystem, so the model and data
// paths need not exist for the simulated trainer).
#ifndef SKRULL_TESTS_CONTROLLER_LOCAL_LOCAL_TEST_UTIL_H_
#define SKRULL_TESTS_CONTROLLER_LOCAL_LOCAL_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "api/job_spec.h"

namespace skrull::local::testing {

// A fresh folder, removed at destruction unless the test failed.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("skrull_local_" + std::string(info ? info->name() : "x") + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    if (::testing::Test::HasFailure()) {
      std::cerr << "kept " << path_ << " for inspection\n";
    } else {
      std::filesystem::remove_all(path_);
    }
  }
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// `extra` is appended under spec: (e.g. "  tuning: {enabled: true}\n").
inline api::JobSpec WriteJob(const TempDir& dir, int64_t bucket, const std::string& extra = "",
                             const std::string& parallelism =
                                 "{nodes: 1, procsPerNode: 2, dataParallel: 1, "
                                 "contextParallel: 2}") {
  const std::string yaml =
      "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata:\n  name: sim\nspec:\n"
      "  model: {config: models/tiny/config.json}\n"
      "  data: {path: data/train.jsonl}\n"
      "  parallelism: " +
      parallelism + "\n  scheduler: {bucketSize: " + std::to_string(bucket) +
      "}\n"
      "  training: {steps: 8, outputDir: out}\n" +
      extra;
  const std::string path = dir / "job.yaml";
  WriteText(path, yaml);
  StatusOr<api::JobSpec> job = api::LoadJobSpecFile(path);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : api::JobSpec();
}

}  // namespace skrull::local::testing

#endif  // SKRULL_TESTS_CONTROLLER_LOCAL_LOCAL_TEST_UTIL_H_
