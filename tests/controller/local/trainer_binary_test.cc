// FindTrainerBinary: `skrull-controller run` finds skrull-trainer beside its
// own binary before PATH, and every failure names --trainer and the fix.
#include "controller/local/trainer_binary.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/controller/local/local_test_util.h"

namespace skrull::local {
namespace {

using testing::TempDir;
using testing::WriteText;

// An executable script at `path`.
void WriteExecutable(const std::string& path) {
  WriteText(path, "#!/bin/sh\nexit 0\n");
  ::chmod(path.c_str(), 0755);
}

TEST(FindTrainerBinary, PrefersTheOneBesideTheControllerToPath) {
  TempDir dir;
  WriteExecutable(dir / "bin/skrull-trainer");
  WriteExecutable(dir / "elsewhere/skrull-trainer");
  StatusOr<std::string> found = FindTrainerBinary("skrull-trainer", dir / "bin", dir / "elsewhere");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, dir / "bin/skrull-trainer");
}

TEST(FindTrainerBinary, FallsBackToPathInOrder) {
  TempDir dir;
  WriteText(dir / "a/skrull-trainer", "not executable\n");
  WriteExecutable(dir / "b/skrull-trainer");
  WriteExecutable(dir / "c/skrull-trainer");
  StatusOr<std::string> found = FindTrainerBinary(
      "skrull-trainer", dir / "empty", "/nonexistent:" + dir / "a" + ":" + dir / "b:" + dir / "c");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, dir / "b/skrull-trainer");
}

TEST(FindTrainerBinary, ANameFoundNowhereNamesTheFlagThePlacesAndTheFix) {
  TempDir dir;
  StatusOr<std::string> found = FindTrainerBinary("skrull-trainer", dir / "bin", "/nonexistent");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(found.status().message(),
            "--trainer skrull-trainer: not found beside skrull-controller (" + dir / "bin" +
                ") or on PATH; build it (cmake --build build --target skrull-trainer) or pass "
                "--trainer PATH");
}

TEST(FindTrainerBinary, APathIsTakenAsItIsAndNotSearched) {
  TempDir dir;
  WriteExecutable(dir / "bin/skrull-trainer");
  WriteExecutable(dir / "my-trainer");
  StatusOr<std::string> found = FindTrainerBinary(dir / "my-trainer", dir / "bin", dir / "bin");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, dir / "my-trainer");
  found = FindTrainerBinary(dir / "missing", dir / "bin", dir / "bin");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(found.status().message().rfind("--trainer " + dir / "missing" + ": no such file", 0),
            0u)
      << found.status();
}

TEST(FindTrainerBinary, ADirectoryOrANonExecutableFileIsRefusedNamingTheFlag) {
  TempDir dir;
  WriteExecutable(dir / "bin/skrull-trainer");
  StatusOr<std::string> found = FindTrainerBinary(dir / "bin", "", "");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(found.status().message(), "--trainer " + dir / "bin" +
                                          ": is a directory; pass the skrull-trainer binary in "
                                          "it, e.g. --trainer " +
                                          dir / "bin/skrull-trainer");
  WriteText(dir / "plain", "text\n");
  found = FindTrainerBinary(dir / "plain", "", "");
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find("--trainer " + dir / "plain" + ": not an executable"),
            std::string::npos)
      << found.status();
}

TEST(SelfExecutableDir, IsTheDirectoryOfThisTestBinary) {
  const std::string dir = SelfExecutableDir();
  ASSERT_FALSE(dir.empty());
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / "controller_local_test")) << dir;
}

}  // namespace
}  // namespace skrull::local
