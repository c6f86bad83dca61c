// skrull-trainer as a user meets it: flags, bad input files (exit 2 with a
// message naming the file, field and fix) and a good run (exit 0).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/train/trainer_cli.h"

namespace skrull::train {
namespace {

using testing::JobFiles;
using testing::TempDir;
using testing::WriteJob;
using testing::WriteText;

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

Outcome RunTrainer(const std::string& args) {
  const char* bin = std::getenv("SKRULL_BIN_DIR");
  const std::string exe = std::string(bin != nullptr ? bin : "bin") + "/skrull-trainer";
  const std::string cmd = exe + " " + args + " --no-metrics-server 2>&1";
  Outcome o;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) o.output.append(buf.data(), n);
  const int status = ::pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(TrainerFlags, ParsesEveryFlagInBothForms) {
  auto f = ParseTrainerFlags({"--job", "j.yaml", "--steps=7", "--output-dir", "o", "--device=cpu",
                              "--stop-after-steps", "3", "--no-metrics-server"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->job_file, "j.yaml");
  EXPECT_EQ(*f->steps, 7);
  EXPECT_EQ(f->output_dir, "o");
  EXPECT_EQ(f->device, "cpu");
  EXPECT_EQ(f->stop_after_steps, 3);
  EXPECT_FALSE(f->serve_metrics);
}

// CLI11's messages, each naming the flag.
TEST(TrainerFlags, ErrorsNameTheFlag) {
  EXPECT_EQ(ParseTrainerFlags({}).status().message(), "--job is required");
  // CLI11 2.3 (Debian 12) says "range 1 to N", 2.4 (Debian 13) "range [1 - N]".
  EXPECT_EQ(ParseTrainerFlags({"--job", "j", "--steps", "0"})
                .status()
                .message()
                .rfind("--steps: Value 0 not in range ", 0),
            0u);
  EXPECT_EQ(ParseTrainerFlags({"--job", "j", "--steps"}).status().message(),
            "--steps: 1 required N missing");
  EXPECT_EQ(ParseTrainerFlags({"--job", "j", "--steps", "x"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTrainerFlags({"--job", "j", "--frobnicate"}).status().message(),
            "The following argument was not expected: --frobnicate");
  EXPECT_EQ(ParseTrainerFlags({"--job", "j", "--output-dir="}).status().message(),
            "--output-dir: 1 required DIR missing");
  EXPECT_EQ(ParseTrainerFlags({"--job", "j", "--output-dir", ""}).status().message(),
            "--output-dir: must not be empty");
  EXPECT_TRUE(ParseTrainerFlags({"--help"})->help);
  EXPECT_TRUE(ParseTrainerFlags({"-h"})->help);
}

TEST(TrainerFlags, ToArgsParsesBackToTheSameFlags) {
  TrainerFlags f;
  f.job_file = "j.yaml";
  f.steps = 9;
  f.output_dir = "o";
  f.device = "cuda:1";
  f.stop_after_steps = 4;
  f.serve_metrics = false;
  StatusOr<TrainerFlags> back = ParseTrainerFlags(TrainerFlagsToArgs(f));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->job_file, "j.yaml");
  EXPECT_EQ(back->steps, 9);
  EXPECT_EQ(back->output_dir, "o");
  EXPECT_EQ(back->device, "cuda:1");
  EXPECT_EQ(back->stop_after_steps, 4);
  EXPECT_FALSE(back->serve_metrics);
  TrainerFlags defaults;
  defaults.job_file = "j.yaml";
  back = ParseTrainerFlags(TrainerFlagsToArgs(defaults));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->steps.has_value());
  EXPECT_EQ(back->output_dir, "");
  EXPECT_EQ(back->device, "auto");
  EXPECT_EQ(back->stop_after_steps, 0);
  EXPECT_TRUE(back->serve_metrics);
}

TEST(TrainerFlags, ExitCodesSeparateBadInputFromFailures) {
  EXPECT_EQ(ExitCodeFor(OkStatus()), 0);
  EXPECT_EQ(ExitCodeFor(InvalidArgumentError("x")), 2);
  EXPECT_EQ(ExitCodeFor(NotFoundError("x")), 2);
  EXPECT_EQ(ExitCodeFor(FailedPreconditionError("x")), 2);
  EXPECT_EQ(ExitCodeFor(IoError("x")), 1);
  EXPECT_EQ(ExitCodeFor(InternalError("x")), 1);
  EXPECT_EQ(ExitCodeFor(OutOfMemoryError("x")), 3) << "distinct: the tuner steps down on it";
  EXPECT_EQ(ExitCodeFor(ResourceExhaustedError("x")), 1) << "a plan over BucketSize is no OOM";
}

TEST(TrainerBinary, MissingJobFlagExits2WithUsage) {
  Outcome o = RunTrainer("");
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "--job is required")) << o.output;
  EXPECT_TRUE(Contains(o.output, "Usage: skrull-trainer")) << o.output;
}

TEST(TrainerBinary, AnUnknownFlagExits2NamingIt) {
  Outcome o = RunTrainer("--job j.yaml --frobnicate");
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "--frobnicate")) << o.output;
}

// Guards that an outputDir naming a regular file is a usage error (exit 2).
TEST(TrainerBinary, OutputDirNamingAFileExits2NamingTheField) {
  TempDir dir;
  const std::string job = WriteJob(dir, JobFiles{});  // outputDir: out
  WriteText(dir / "out", "a file, not a directory\n");
  Outcome o = RunTrainer("--job " + job);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, job + ": spec.training.outputDir: " + dir / "out" +
                                     " is a file, not a directory; name a directory"))
      << o.output;
  o = RunTrainer("--job " + job + " --output-dir " + (dir / "out/sub"));
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(
      o.output, "--output-dir: " + dir / "out/sub" + ": its parent " + dir / "out" + " is a file"))
      << o.output;
}

// Guards that a one-process job refuses node flags it does not have.
TEST(TrainerBinary, NodeFlagsTheJobDoesNotHaveExit2NamingThem) {
  TempDir dir;
  const std::string job = WriteJob(dir, JobFiles{});  // nodes: 1
  Outcome o = RunTrainer("--job " + job + " --nnodes 2 --node-rank 5");
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "--nnodes 2: disagrees with " + job)) << o.output;
  EXPECT_TRUE(Contains(o.output, "--node-rank 5: must be < spec.parallelism.nodes (1)"))
      << o.output;
  EXPECT_FALSE(Contains(o.output, "step 1/")) << o.output;
  o = RunTrainer("--job " + job + " --node-rank 1");
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "--node-rank 1: must be <")) << o.output;
}

TEST(TrainerBinary, MissingJobFileExits2NamingIt) {
  TempDir dir;
  Outcome o = RunTrainer("--job " + (dir / "nope.yaml"));
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "nope.yaml")) << o.output;
}

TEST(TrainerBinary, InvalidJobExits2NamingTheField) {
  TempDir dir;
  const std::string job = WriteJob(dir, JobFiles{});
  std::string text = *ReadFileToString(job);
  text.replace(text.find("contextParallel: 1"), 18, "contextParallel: 0");
  WriteText(job, text);
  Outcome o = RunTrainer("--job " + job);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "contextParallel")) << o.output;
}

TEST(TrainerBinary, MissingDataFileExits2NamingIt) {
  TempDir dir;
  const std::string job = WriteJob(dir, JobFiles{});
  std::filesystem::remove(dir / "data.jsonl");
  Outcome o = RunTrainer("--job " + job);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "data.jsonl")) << o.output;
}

TEST(TrainerBinary, MalformedDataLineExits2NamingFileAndLine) {
  TempDir dir;
  WriteText(dir / "data.jsonl", testing::LearnableJsonl(3, 4, 8) + "{\"input_ids\": [1, \n");
  const std::string job = WriteJob(dir, JobFiles{});
  Outcome o = RunTrainer("--job " + job);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "data.jsonl:4")) << o.output;
}

TEST(TrainerBinary, TokenOutsideTheVocabularyExits2) {
  TempDir dir;
  WriteText(dir / "data.jsonl", "{\"input_ids\": [1, 2, 999]}\n");
  const std::string job = WriteJob(dir, JobFiles{});
  Outcome o = RunTrainer("--job " + job);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "data.jsonl:1")) << o.output;
}

TEST(TrainerBinary, BadModelConfigExits2NamingTheField) {
  TempDir dir;
  WriteText(dir / "config.json", R"({"model_type": "llama", "num_hidden_layers": 2})");
  const std::string job = WriteJob(dir, JobFiles{});
  Outcome o = RunTrainer("--job " + job);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "config.json")) << o.output;
  EXPECT_TRUE(Contains(o.output, "hidden_size")) << o.output;
}

TEST(TrainerBinary, SampleLongerThanBucketTimesCpExits2BeforeTraining) {
  TempDir dir;
  JobFiles f;
  f.bucket_size = 16;
  WriteText(dir / "data.jsonl",
            testing::LearnableJsonl(5, 4, 8) + testing::LearnableJsonl(1, 20, 20));
  Outcome o = RunTrainer("--job " + WriteJob(dir, f));
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "data.jsonl:6: sample of 20 tokens")) << o.output;
  EXPECT_TRUE(Contains(o.output, "BucketSize >= 20 at CP 1")) << o.output;
  EXPECT_FALSE(Contains(o.output, "step 1/")) << o.output;
}

TEST(TrainerBinary, DamagedCheckpointExits2NamingTheFile) {
  TempDir dir;
  JobFiles f;
  f.steps = 3;
  ASSERT_EQ(RunTrainer("--job " + WriteJob(dir, f)).exit_code, 0);
  WriteText(dir / "out/checkpoints/step-3/model.safetensors", "garbage");
  f.resume_from = "latest";
  f.steps = 4;
  Outcome o = RunTrainer("--job " + WriteJob(dir, f));
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(Contains(o.output, "step-3/model.safetensors")) << o.output;
}

TEST(TrainerBinary, GoodRunExits0WithProgressAndSummary) {
  TempDir dir;
  JobFiles f;
  f.steps = 20;  // --steps overrides
  Outcome o =
      RunTrainer("--job " + WriteJob(dir, f) + " --steps 3 --output-dir " + (dir / "elsewhere"));
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_TRUE(Contains(o.output, "step 3/3 loss")) << o.output;
  EXPECT_TRUE(Contains(o.output, "tokens/s")) << o.output;
  EXPECT_TRUE(Contains(o.output, "eta")) << o.output;
  auto summary = nlohmann::json::parse(*ReadFileToString(dir / "elsewhere/summary.json"));
  EXPECT_EQ(summary["steps"], 3);
}

}  // namespace
}  // namespace skrull::train
