// The one scratch-directory helper of the test binaries.
//
// TestTempDir(prefix) makes a fresh, empty directory for the running test,
// $TMPDIR/skrull_<prefix>_<Suite>_<Test>_<pid>, and removes it, with
// everything in it, when the test binary exits normally. Only the process
// that made a directory removes it: a forked child that exits (launcher and
// rank tests) leaves its parent's directories alone.
#ifndef SKRULL_TESTS_TEST_TEMP_DIR_H_
#define SKRULL_TESTS_TEST_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace skrull::testing_util {

// Directories made by TestTempDir in this process, removed at exit.
class TestTempDirs {
 public:
  ~TestTempDirs() {
    if (::getpid() != owner_) return;
    for (const std::filesystem::path& dir : dirs_) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
  void Add(std::filesystem::path dir) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.push_back(std::move(dir));
  }

 private:
  const pid_t owner_ = ::getpid();
  std::mutex mu_;
  std::vector<std::filesystem::path> dirs_;
};

inline TestTempDirs& MadeTestTempDirs() {
  static TestTempDirs dirs;
  return dirs;
}

inline std::string TestTempDir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string test =
      info == nullptr ? "none" : std::string(info->test_suite_name()) + "_" + info->name();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("skrull_" + prefix + "_" + test + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  MadeTestTempDirs().Add(dir);
  return dir.string();
}

}  // namespace skrull::testing_util

#endif  // SKRULL_TESTS_TEST_TEMP_DIR_H_
