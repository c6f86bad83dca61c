// Test helpers for trainer/data (skrull_data) tests: temp data files and
// Dataset::Open wrappers.
#ifndef SKRULL_TESTS_TRAINER_DATA_TEST_UTIL_H_
#define SKRULL_TESTS_TRAINER_DATA_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "trainer/data/dataset.h"

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "message: " << (haystack)

namespace skrull::data {

// A fresh directory named after the running test.
inline std::string TempDir() {
  auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::temp_directory_path() /
             ("skrull_data_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
              std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Writes `contents` to a fresh file and returns options for it.
inline DatasetOptions WriteData(const std::string& contents,
                                api::DataFormat format = api::DataFormat::kTokenizedJsonl) {
  DatasetOptions o;
  o.path = TempDir() + "/data.jsonl";
  o.format = format;
  std::ofstream(o.path, std::ios::binary) << contents;
  return o;
}

inline std::unique_ptr<Dataset> OpenOk(const DatasetOptions& o) {
  auto ds = Dataset::Open(o);
  EXPECT_TRUE(ds.ok()) << ds.status();
  return ds.ok() ? std::move(ds).value() : nullptr;
}

}  // namespace skrull::data

#endif  // SKRULL_TESTS_TRAINER_DATA_TEST_UTIL_H_
