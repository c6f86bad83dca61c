#include "common/file_util.h"
#include "tests/test_temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace skrull {
namespace {

std::string TempDir() { return ::skrull::testing_util::TestTempDir("file_util"); }

TEST(FileUtil, AtomicWriteCreatesParentsAndReplaces) {
  std::string dir = TempDir();
  std::string path = dir + "/a/b/file.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  auto got = ReadFileToString(path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "second");
  // No temporary files are left behind.
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir + "/a/b")) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(FileUtil, MissingFileIsNotFoundNamingThePath) {
  auto got = ReadFileToString("/nonexistent/skrull/x.json");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("/nonexistent/skrull/x.json"), std::string::npos);
}

TEST(FileUtil, DirectoryIsRejected) {
  auto got = ReadFileToString(TempDir());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
}

TEST(FileUtil, FsyncPathSyncsFilesAndDirectories) {
  std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomically(dir + "/f", "x").ok());
  EXPECT_TRUE(FsyncPath(dir + "/f").ok());
  EXPECT_TRUE(FsyncPath(dir).ok());
}

TEST(FileUtil, FsyncPathOfMissingPathIsIoErrorNamingIt) {
  std::string missing = TempDir() + "/nope";
  Status s = FsyncPath(missing);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find(missing + ": open for fsync failed"), std::string::npos) << s;
}

}  // namespace
}  // namespace skrull
