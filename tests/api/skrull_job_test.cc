// The skrull-job binary: output and exit codes. Runs $SKRULL_BIN_DIR/skrull-job
// from the source root, as a user would.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "api/job_spec.h"
#include "api/skrull_job_cli.h"
#include "common/file_util.h"
#include "tests/test_temp_dir.h"

namespace skrull::api {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string ScratchDir() { return ::skrull::testing_util::TestTempDir("job_test"); }

// Runs `skrull-job <args>` in the source root; args are passed to the shell as is.
CliRun SkrullJob(const std::string& args) {
  const std::string bin = Env("SKRULL_BIN_DIR") + "/skrull-job";
  const std::string dir = ScratchDir();
  const std::string command = "cd '" + Env("SKRULL_SOURCE_DIR") + "' && '" + bin + "' " + args +
                              " >'" + dir + "/out' 2>'" + dir + "/err'";
  CliRun run;
  int status = std::system(command.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadFileToString(dir + "/out").value();
  run.err = ReadFileToString(dir + "/err").value();
  return run;
}

class SkrullJobBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Env("SKRULL_BIN_DIR").empty() || Env("SKRULL_SOURCE_DIR").empty()) {
      GTEST_SKIP() << "SKRULL_BIN_DIR / SKRULL_SOURCE_DIR not set; run through ctest";
    }
  }
};

TEST_F(SkrullJobBinary, ValidateQuickstartPrintsOkAndASummaryAndExitsZero) {
  CliRun run = SkrullJob("validate examples/quickstart.yaml");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(run.out.rfind("examples/quickstart.yaml: ok\nquickstart (namespace default): 2 ranks "
                          "= 1 node x 2 procs per node, split as dataParallel 1 x "
                          "contextParallel 2. Scheduler skrull with bucketSize 2048 tokens per "
                          "rank; global batch 16 sequences",
                          0),
            0u)
      << run.out;
}

TEST_F(SkrullJobBinary, ValidateErrorExamplePrintsTheExpectedErrorsAndExitsTwo) {
  for (const char* name : {"unknown-field", "zero-context-parallel", "world-size-mismatch",
                           "bad-bucket-size", "several-errors"}) {
    SCOPED_TRACE(name);
    CliRun run = SkrullJob(std::string("validate examples/errors/") + name + ".yaml");
    EXPECT_EQ(run.exit_code, kExitInvalid);
    EXPECT_EQ(run.out, "");
    EXPECT_EQ(run.err,
              ReadFileToString(Env("SKRULL_SOURCE_DIR") + "/examples/errors/" + name + ".expected")
                  .value());
  }
}

TEST_F(SkrullJobBinary, ValidateSeveralFilesFailsIfAnyFails) {
  CliRun run = SkrullJob("validate examples/quickstart.yaml examples/errors/bad-bucket-size.yaml");
  EXPECT_EQ(run.exit_code, kExitInvalid);
  EXPECT_EQ(run.out.rfind("examples/quickstart.yaml: ok\n", 0), 0u) << run.out;
  EXPECT_NE(run.err.find("examples/errors/bad-bucket-size.yaml:"), std::string::npos) << run.err;
}

TEST_F(SkrullJobBinary, ShowPrintsTheDefaultedSpecWhichLoadsBackEqual) {
  CliRun run = SkrullJob("show examples/quickstart.yaml");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  StatusOr<JobSpec> shown = LoadJobSpec(run.out, "<show>");
  ASSERT_TRUE(shown.ok()) << shown.status() << "\n" << run.out;
  StatusOr<JobSpec> file = LoadJobSpecFile(Env("SKRULL_SOURCE_DIR") + "/examples/quickstart.yaml");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*shown, *file);
  EXPECT_NE(run.out.find("  tuning:\n    enabled: false\n"), std::string::npos) << run.out;
}

TEST_F(SkrullJobBinary, BadUsageExitsTwoWithUsage) {
  for (const char* args : {"", "frobnicate x.yaml", "validate",
                           "validate --strict "
                           "examples/quickstart.yaml",
                           "show", "show a.yaml b.yaml"}) {
    SCOPED_TRACE(args);
    CliRun run = SkrullJob(args);
    EXPECT_EQ(run.exit_code, kExitInvalid);
    EXPECT_EQ(run.out, "");
    EXPECT_EQ(run.err.rfind("skrull-job: ", 0), 0u) << run.err;
    EXPECT_NE(run.err.find("usage: skrull-job validate FILE..."), std::string::npos) << run.err;
  }
}

TEST_F(SkrullJobBinary, HelpExitsZero) {
  CliRun run = SkrullJob("--help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out.rfind("usage: skrull-job", 0), 0u) << run.out;
}

TEST_F(SkrullJobBinary, MissingFileExitsTwoNamingIt) {
  CliRun run = SkrullJob("validate examples/no-such-job.yaml");
  EXPECT_EQ(run.exit_code, kExitInvalid);
  EXPECT_EQ(run.err, "examples/no-such-job.yaml: no such file\n");
}

TEST(SkrullJobCli, RunsInProcess) {
  std::ostringstream out, err;
  EXPECT_EQ(RunSkrullJobCli({"help"}, out, err), kExitOk);
  EXPECT_NE(out.str().find("usage:"), std::string::npos);
  std::ostringstream out2, err2;
  EXPECT_EQ(RunSkrullJobCli({"validate", "/nonexistent/job.yaml"}, out2, err2), kExitInvalid);
  EXPECT_EQ(err2.str(), "/nonexistent/job.yaml: no such file\n");
}

TEST(SkrullJobCli, ValidatesAnAliasBombInUnderASecond) {
  // Guards the time of an alias bomb: 103 KB whose aliases repeat one 100 KB
  // string 1000 times (once 52 s in `skrull-job validate`).
  std::string text =
      "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata: {name: x}\nspec:\n"
      "  data: {path: d.jsonl}\n  image: {tag: &long " +
      std::string(100 * 1000, 'x') +
      "}\n  model:\n    config: c.json\n    lora:\n      targetModules: [*long";
  for (int i = 1; i < 1000; ++i) text += ", *long";
  text += "]\n";
  const std::string path = ScratchDir() + "/bomb.yaml";
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunSkrullJobCli({"validate", path}, out, err), kExitInvalid);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_EQ(out.str(), "");
  EXPECT_NE(err.str().find(path + ": YAML aliases expand the document to more than "),
            std::string::npos)
      << err.str().substr(0, 300);
  EXPECT_LT(err.str().size(), 300u);
}

}  // namespace
}  // namespace skrull::api
