// examples/: the quickstart job validates, and every examples/errors/X.yaml
// fails with exactly the text in X.expected (what `skrull-job validate
// examples/errors/X.yaml` prints from the repository root).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/file_util.h"

namespace skrull::api {
namespace {

namespace fs = std::filesystem;

std::string SourceDir() {
  const char* dir = std::getenv("SKRULL_SOURCE_DIR");
  return dir == nullptr ? "" : dir;
}

TEST(Examples, QuickstartValidates) {
  ASSERT_FALSE(SourceDir().empty()) << "SKRULL_SOURCE_DIR is not set; run through ctest";
  StatusOr<JobSpec> spec = LoadJobSpecFile(SourceDir() + "/examples/quickstart.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::string examples = fs::path(SourceDir() + "/examples").lexically_normal().string();
  EXPECT_EQ(spec->name, "quickstart");
  EXPECT_EQ(spec->model.config, examples + "/models/tiny/config.json");
  EXPECT_EQ(spec->data.path, examples + "/data/quickstart.jsonl");
  EXPECT_EQ(spec->data.format, DataFormat::kTokenizedJsonl);
  EXPECT_EQ(spec->data.over_length, OverLengthPolicy::kSkip);
  EXPECT_EQ(spec->parallelism.WorldSize(), 2);
  EXPECT_EQ(spec->parallelism.data_parallel, 1);
  EXPECT_EQ(spec->parallelism.context_parallel, 2);
  EXPECT_EQ(spec->scheduler.policy, scheduler::Policy::kSkrull);
  EXPECT_EQ(spec->scheduler.bucket_size_tokens, 2048);
  EXPECT_EQ(spec->scheduler.batch_size, 16);
  EXPECT_EQ(spec->scheduler.seed, 1u);
  EXPECT_EQ(spec->training.steps, 60);
  EXPECT_EQ(spec->training.learning_rate, 3e-3);
  EXPECT_EQ(spec->training.warmup_steps, 5);
  EXPECT_EQ(spec->training.schedule, LrSchedule::kCosine);
  EXPECT_EQ(spec->training.precision, Precision::kFp32);
  EXPECT_EQ(spec->training.output_dir,
            fs::path(SourceDir() + "/runs/quickstart").lexically_normal().string());
  EXPECT_EQ(spec->metrics.port, 9400);
}

TEST(Examples, QuickstartWithARealTokenizerValidates) {
  ASSERT_FALSE(SourceDir().empty()) << "SKRULL_SOURCE_DIR is not set; run through ctest";
  StatusOr<JobSpec> spec = LoadJobSpecFile(SourceDir() + "/examples/quickstart-tokenizer.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->data.format, DataFormat::kTextJsonl);
  EXPECT_EQ(spec->data.tokenizer,
            fs::path(SourceDir() + "/third_party/npm/tokenizer-refs/tokenizer-qwen3/models")
                .lexically_normal()
                .string());
}

TEST(Examples, EveryErrorExampleFailsWithItsExpectedText) {
  ASSERT_FALSE(SourceDir().empty()) << "SKRULL_SOURCE_DIR is not set; run through ctest";
  const fs::path dir = fs::path(SourceDir()) / "examples" / "errors";
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") cases.push_back(entry.path());
    if (entry.path().extension() == ".expected") {
      fs::path yaml = entry.path();
      yaml.replace_extension(".yaml");
      EXPECT_TRUE(fs::exists(yaml)) << entry.path() << " has no .yaml";
    }
  }
  ASSERT_GE(cases.size(), 5u);
  for (const fs::path& yaml : cases) {
    const std::string relative = "examples/errors/" + yaml.filename().string();
    SCOPED_TRACE(relative);
    fs::path expected_path = yaml;
    expected_path.replace_extension(".expected");
    StatusOr<std::string> expected = ReadFileToString(expected_path.string());
    ASSERT_TRUE(expected.ok()) << expected.status();
    StatusOr<std::string> text = ReadFileToString(yaml.string());
    ASSERT_TRUE(text.ok()) << text.status();
    StatusOr<JobSpec> spec = LoadJobSpec(*text, relative, dir.string());
    ASSERT_FALSE(spec.ok()) << relative << " loaded, but it is an error example";
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(spec.status().message() + "\n", *expected);
  }
}

}  // namespace
}  // namespace skrull::api
