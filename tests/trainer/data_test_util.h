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

#include "tests/test_temp_dir.h"
#include "trainer/data/dataset.h"

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "message: " << (haystack)

namespace skrull::data {

// A fresh directory named after the running test.
inline std::string TempDir() { return ::skrull::testing_util::TestTempDir("data"); }

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
