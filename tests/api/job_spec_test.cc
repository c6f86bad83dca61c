// Parsing, defaults, unknown fields, round trips and path resolution.
#include "api/job_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "tests/api/job_builder.h"
#include "tests/test_temp_dir.h"

namespace skrull::api {
namespace {

using testing::ErrorLines;
using testing::JobYaml;
using testing::kMinimalJob;
using testing::LoadErrors;

JobSpec MustLoad(const std::string& text, const std::string& base_dir = "") {
  StatusOr<JobSpec> spec = LoadJobSpec(text, "<test>", base_dir);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : JobSpec{};
}

std::string TempDir() { return ::skrull::testing_util::TestTempDir("api"); }

// A spec where every field differs from its default.
JobSpec EverythingSet() {
  JobSpec s;
  s.name = "full";
  s.namespace_name = "research";
  s.labels = {{"team", "ml"},   {"app.kubernetes.io/name", "skrull"},
              {"flag", "true"}, {"version", "1.0"},
              {"empty", ""},    {"nil", "null"}};
  s.annotations = {{"note", "a: b # not a comment\nsecond line"}, {"quote", "it's \"quoted\""}};
  s.model.config = "/models/qwen/config.json";
  s.model.weights = "/models/qwen";
  s.model.seed = std::numeric_limits<uint64_t>::max();
  s.model.lora = LoraSpec{8, 16.5, {"q_proj", "down_proj"}};
  s.data = {"/data/train.jsonl",
            DataFormat::kTextJsonl,
            32768,
            OverLengthPolicy::kTruncate,
            MalformedPolicy::kSkip,
            "/models/qwen2.5",
            "{%- for m in messages %}\n  {{- m.content + '\\n' }}\n{% endfor %}",
            int64_t{1} << 20,
            kDefaultTemplateMaxBytes,
            kDefaultTemplateMaxSteps,
            kDefaultTemplateMaxSeconds,
            {{"text", "body"}},
            {},
            EvalSpec{"/data/val.jsonl", DataFormat::kAlpaca, {{"output", "response"}}, 50, 100}};
  s.parallelism = {2, 4, 2, 4};
  s.scheduler = {scheduler::Policy::kBalancedCp, false, 26624, 40, 1, 12345, "/profiles/h100.json"};
  TrainingSpec& t = s.training;
  t.steps = 1000;
  t.learning_rate = 0.1 + 0.2;  // not exactly 0.3
  t.warmup_steps = 50;
  t.schedule = LrSchedule::kLinear;
  t.min_lr_ratio = 0;
  t.weight_decay = 0.01;
  t.adam_beta1 = 0.8;
  t.adam_beta2 = 0.999;
  t.adam_epsilon = 1e-12;
  t.grad_clip = 0;
  t.precision = Precision::kBf16;
  t.checkpoint_every = 100;
  t.output_dir = "/runs/full";
  t.resume_from = "latest";
  t.log_every = 10;
  t.collective_timeout_seconds = 7200;
  t.zero_stage = 2;
  t.grad_reduce_dtype = GradReduceDtype::kBf16;
  s.metrics = {0, "https://push.example.com:9091", "::"};
  s.resources = {0, "8", "64Gi"};
  s.image = {"localhost:5000/skrull", "1.10", "Always"};
  s.tuning = {true, 0.85, 4096, 65536};
  s.run_policy = {7, 120, 86400, 3600, CleanPodPolicy::kRunning, true};
  s.storage = {"team-data", "/mnt/skrull", true};
  return s;
}

TEST(LoadJobSpec, MinimalJobGetsEveryDefault) {
  JobSpec s = MustLoad(kMinimalJob);
  JobSpec expected;
  expected.name = "test-job";
  expected.model.config = "models/tiny/config.json";
  expected.data.path = "data/train.jsonl";
  expected.scheduler.bucket_size_auto = true;
  expected.training.output_dir = "runs/test-job";
  expected.image.tag = DefaultImageTag();
  EXPECT_EQ(s, expected);
  // The defaults documented in job_spec.h and docs/job-spec.md.
  EXPECT_EQ(s.namespace_name, "default");
  EXPECT_FALSE(s.model.lora.has_value());
  EXPECT_EQ(s.data.format, DataFormat::kTokenizedJsonl);
  EXPECT_EQ(s.data.over_length, OverLengthPolicy::kError);
  EXPECT_EQ(s.parallelism.WorldSize(), 1);
  EXPECT_EQ(s.scheduler.policy, scheduler::Policy::kSkrull);
  EXPECT_EQ(s.scheduler.batch_size, 8);
  EXPECT_EQ(s.training.steps, 100);
  EXPECT_EQ(s.training.learning_rate, 1e-4);
  EXPECT_EQ(s.metrics.port, 9400);
  EXPECT_EQ(s.metrics.address, "");
  EXPECT_EQ(s.data.max_line_bytes, 64 << 20);
  EXPECT_EQ(s.image.repository, "ghcr.io/skrull/trainer");
  EXPECT_EQ(s.image.pull_policy, "IfNotPresent");
  EXPECT_EQ(std::string(DefaultImageTag()), "0.1.0");
  EXPECT_EQ(s.source_dir, "");
}

TEST(LoadJobSpec, NullAndEmptyMeanDefault) {
  JobSpec s = MustLoad(JobYaml()
                           .Set("spec.training.steps", "~")
                           .Set("spec.training.outputDir", "''")
                           .Set("spec.image.tag", "''")
                           .Set("metadata.namespace", "''")
                           .Set("spec.scheduler", "~")
                           .Text());
  EXPECT_EQ(s.training.steps, 100);
  EXPECT_EQ(s.training.output_dir, "runs/test-job");
  EXPECT_EQ(s.image.tag, DefaultImageTag());
  EXPECT_EQ(s.namespace_name, "default");
  EXPECT_TRUE(s.scheduler.bucket_size_auto);
}

TEST(LoadJobSpec, NewFieldsAreWrittenOnlyWhenSet) {
  // Like hardwareProfile: documents (and JobSpecHash) of jobs without them
  // stay as they were.
  const std::string minimal = ToYaml(MustLoad(kMinimalJob));
  EXPECT_EQ(minimal.find("maxLineBytes"), std::string::npos) << minimal;
  EXPECT_EQ(minimal.find("address"), std::string::npos) << minimal;
  JobSpec s = MustLoad(JobYaml()
                           .Set("spec.data.maxLineBytes", "1024")
                           .Set("spec.metrics.address", "0.0.0.0")
                           .Text());
  EXPECT_EQ(s.data.max_line_bytes, 1024);
  EXPECT_EQ(s.metrics.address, "0.0.0.0");
  const std::string text = ToYaml(s);
  EXPECT_NE(text.find("    maxLineBytes: 1024\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    address: \"0.0.0.0\"\n"), std::string::npos) << text;
  EXPECT_EQ(MustLoad(text), s);
  JobSpec other = s;
  other.data.max_line_bytes = 2048;
  EXPECT_NE(other, s);
  other = s;
  other.metrics.address = "127.0.0.1";
  EXPECT_NE(other, s);
}

TEST(OutputDirOf, IsTheWrittenDirOrRunsSlashName) {
  JobSpec s;
  s.name = "my-job";
  EXPECT_EQ(OutputDirOf(s), "runs/my-job");
  s.training.output_dir = "/out";
  EXPECT_EQ(OutputDirOf(s), "/out");
  EXPECT_EQ(OutputDirOf(JobSpec()), "runs/job");
  JobSpec defaulted;
  defaulted.name = "my-job";
  ApplyDefaults(&defaulted);
  EXPECT_EQ(defaulted.training.output_dir, "runs/my-job");
}

TEST(MetricsAddressOf, IsLoopbackUnlessTheJobNamesAnAddress) {
  JobSpec s;
  EXPECT_EQ(MetricsAddressOf(s), "127.0.0.1");
  s.metrics.address = "::";
  EXPECT_EQ(MetricsAddressOf(s), "::");
}

TEST(LoadJobSpec, ZeroStageDefaultsToZeroAndIsWrittenOnlyWhenSet) {
  const JobSpec minimal = MustLoad(kMinimalJob);
  EXPECT_EQ(minimal.training.zero_stage, 0);
  EXPECT_EQ(ToYaml(minimal).find("zeroStage"), std::string::npos);
  JobSpec s = MustLoad(JobYaml().Set("spec.training.zeroStage", "2").Text());
  EXPECT_EQ(s.training.zero_stage, 2);
  EXPECT_NE(ToYaml(s).find("    zeroStage: 2\n"), std::string::npos) << ToYaml(s);
  EXPECT_EQ(MustLoad(ToYaml(s)), s);
  EXPECT_NE(s, minimal);
}

// Guards the collective timeout as its own field: 30 minutes by default (not
// the 300 s rendezvous timeout), written only when set, and read back.
TEST(LoadJobSpec, CollectiveTimeoutDefaultsToHalfAnHourAndIsWrittenOnlyWhenSet) {
  const JobSpec minimal = MustLoad(kMinimalJob);
  EXPECT_EQ(minimal.training.collective_timeout_seconds, 1800);
  EXPECT_EQ(ToYaml(minimal).find("collectiveTimeoutSeconds"), std::string::npos);
  JobSpec s = MustLoad(JobYaml().Set("spec.training.collectiveTimeoutSeconds", "7200").Text());
  EXPECT_EQ(s.training.collective_timeout_seconds, 7200);
  EXPECT_NE(ToYaml(s).find("    collectiveTimeoutSeconds: 7200\n"), std::string::npos) << ToYaml(s);
  EXPECT_EQ(MustLoad(ToYaml(s)), s);
  EXPECT_NE(s, minimal);
}

TEST(LoadJobSpec, GradReduceDtypeDefaultsToFp32AndIsWrittenOnlyWhenSet) {
  const JobSpec minimal = MustLoad(kMinimalJob);
  EXPECT_EQ(minimal.training.grad_reduce_dtype, GradReduceDtype::kFp32);
  EXPECT_EQ(ToYaml(minimal).find("gradReduceDtype"), std::string::npos);
  JobSpec s = MustLoad(JobYaml().Set("spec.training.gradReduceDtype", "bf16").Text());
  EXPECT_EQ(s.training.grad_reduce_dtype, GradReduceDtype::kBf16);
  EXPECT_NE(ToYaml(s).find("    gradReduceDtype: bf16\n"), std::string::npos) << ToYaml(s);
  EXPECT_EQ(MustLoad(ToYaml(s)), s);
  EXPECT_NE(s, minimal);
  EXPECT_EQ(MustLoad(JobYaml().Set("spec.training.gradReduceDtype", "fp32").Text()), minimal);
}

TEST(LoadJobSpec, GradReduceDtypeRefusesOtherValuesNamingTheAllowedOnes) {
  const auto errors = LoadErrors(JobYaml().Set("spec.training.gradReduceDtype", "fp16").Text());
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  EXPECT_NE(all.find("spec.training.gradReduceDtype: must be one of fp32, bf16"), std::string::npos)
      << all;
}

TEST(LoadJobSpec, ReadsEveryField) {
  JobSpec s = MustLoad(ToYaml(EverythingSet()));
  EXPECT_EQ(s, EverythingSet());
}

TEST(LoadJobSpec, BucketSizeTakesTokensSuffixesOrAuto) {
  auto bucket = [](const char* value) {
    return MustLoad(JobYaml().Set("spec.scheduler.bucketSize", value).Text()).scheduler;
  };
  EXPECT_EQ(bucket("2048").bucket_size_tokens, 2048);
  EXPECT_FALSE(bucket("2048").bucket_size_auto);
  EXPECT_EQ(bucket("26K").bucket_size_tokens, 26624);
  EXPECT_EQ(bucket("26k").bucket_size_tokens, 26624);
  EXPECT_EQ(bucket("1M").bucket_size_tokens, 1048576);
  EXPECT_EQ(bucket("'4096'").bucket_size_tokens, 4096);  // quoting does not matter
  EXPECT_TRUE(bucket("auto").bucket_size_auto);
  EXPECT_EQ(bucket("auto").bucket_size_tokens, 0);
  EXPECT_EQ(MustLoad(JobYaml().Set("spec.data.maxLength", "32K").Text()).data.max_length_tokens,
            32768);
}

TEST(LoadJobSpec, EmptyLoraMappingEnablesLoraWithDefaults) {
  JobSpec s = MustLoad(JobYaml().Set("spec.model.lora", "{}").Text());
  ASSERT_TRUE(s.model.lora.has_value());
  EXPECT_EQ(s.model.lora->rank, 16);
  EXPECT_EQ(s.model.lora->alpha, 32.0);
  EXPECT_EQ(s.model.lora->target_modules,
            (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj"}));
}

TEST(LoadJobSpec, UnknownFieldsSuggestTheClosestKeyAtTheirLevel) {
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.parallelism.contextParalel", "2").Text()),
            std::vector<std::string>{
                "spec.parallelism.contextParalel: unknown field; did you mean 'contextParallel'?"});
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.training.learning_rate", "0.1").Text()),
            std::vector<std::string>{
                "spec.training.learning_rate: unknown field; did you mean 'learningRate'?"});
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.parallelism.tensorParallel", "2").Text()),
            std::vector<std::string>{
                "spec.parallelism.tensorParallel: unknown field; allowed fields: nodes, "
                "procsPerNode, dataParallel, contextParallel"});
  EXPECT_EQ(LoadErrors(JobYaml().Set("specs", "{}").Text()),
            std::vector<std::string>{"specs: unknown field; did you mean 'spec'?"});
  EXPECT_EQ(LoadErrors(JobYaml().Set("metadata.lables", "{a: b}").Text()),
            std::vector<std::string>{"metadata.lables: unknown field; did you mean 'labels'?"});
}

TEST(LoadJobSpec, MergeKeysAreRefusedWithAReason) {
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.training.<<", "{steps: 20}").Text()),
            std::vector<std::string>{"spec.training.<<: unknown field; YAML merge keys are not "
                                     "supported, write the fields out"});
}

TEST(LoadJobSpec, TypoDoesNotAlsoReportTheCrossFieldRuleItBreaks) {
  // contextParallel was misspelt, so it is 1 and dp x cp != world size; only the
  // typo is reported.
  EXPECT_EQ(
      LoadErrors(JobYaml().Set("spec.parallelism", "{procsPerNode: 2, contextParalel: 2}").Text()),
      std::vector<std::string>{
          "spec.parallelism.contextParalel: unknown field; did you mean 'contextParallel'?"});
}

TEST(LoadJobSpec, StatusAndServerWrittenMetadataAreIgnored) {
  JobSpec s = MustLoad(JobYaml()
                           .Set("status", "{phase: Running, anything: [1, 2]}")
                           .Set("metadata.uid", "0b6f")
                           .Set("metadata.resourceVersion", "'42'")
                           .Set("metadata.creationTimestamp", "2025-01-01T00:00:00Z")
                           .Set("metadata.managedFields", "[{manager: kubectl}]")
                           .Text());
  EXPECT_EQ(s, MustLoad(kMinimalJob));
}

TEST(LoadJobSpec, AcceptsJson) {
  JobSpec s = MustLoad(R"({"apiVersion": "skrull.io/v1alpha1", "kind": "SkrullJob",
      "metadata": {"name": "from-json"},
      "spec": {"model": {"config": "c.json"}, "data": {"path": "d.jsonl"},
               "scheduler": {"bucketSize": 4096}}})");
  EXPECT_EQ(s.name, "from-json");
  EXPECT_EQ(s.scheduler.bucket_size_tokens, 4096);
}

TEST(LoadJobSpec, DuplicateKeysAreErrors) {
  std::string text = std::string(kMinimalJob) + "  training:\n    steps: 5\n    steps: 6\n";
  EXPECT_EQ(LoadErrors(text), std::vector<std::string>{
                                  "spec.training.steps: duplicate field (first set at line 11)"});
}

TEST(LoadJobSpec, ErrorsCarryLineAndColumnAndComeInDocumentOrder) {
  const char* text = R"(apiVersion: skrull.io/v1alpha1
kind: SkrullJob
metadata:
  name: Bad_Name
spec:
  training:
    steps: ten
  model:
    config: c.json
    colour: blue
  data:
    path: d.jsonl
)";
  StatusOr<JobSpec> spec = LoadJobSpec(text, "jobs/bad.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "jobs/bad.yaml:4:9: metadata.name: must be a DNS-1123 label: at most 63 lowercase "
            "letters, digits and '-', starting and ending with a letter or digit (got "
            "'Bad_Name')\n"
            "jobs/bad.yaml:7:12: spec.training.steps: expected an integer, got 'ten'\n"
            "jobs/bad.yaml:10:5: spec.model.colour: unknown field; allowed fields: config, "
            "weights, seed, lora");
}

TEST(LoadJobSpec, MissingRequiredFieldsAreAllReported) {
  EXPECT_EQ(
      LoadErrors("apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\n"),
      (std::vector<std::string>{"metadata.name: required: a DNS-1123 label such as my-job",
                                "spec.model.config: required: path to a Hugging Face config.json",
                                "spec.data.path: required: path to a .jsonl file"}));
  EXPECT_EQ(LoadErrors("metadata: {name: x}\nspec: {model: {config: c}, data: {path: d}}\n"),
            (std::vector<std::string>{"apiVersion: required: write apiVersion: skrull.io/v1alpha1",
                                      "kind: required: write kind: SkrullJob"}));
}

TEST(LoadJobSpec, MalformedDocuments) {
  StatusOr<JobSpec> spec = LoadJobSpec("a: [1, 2\nb: 3\n", "x.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "x.yaml:2:2: invalid YAML: end of sequence flow not found");
  EXPECT_EQ(LoadJobSpec("", "x.yaml").status().message(),
            "x.yaml: the document is empty; expected a SkrullJob with apiVersion, kind, metadata "
            "and spec");
  EXPECT_EQ(LoadJobSpec("- a\n- b\n", "x.yaml").status().message(),
            "x.yaml:1:1: expected a SkrullJob mapping with apiVersion, kind, metadata and spec, "
            "got a list");
  EXPECT_EQ(
      LoadJobSpec(std::string(kMinimalJob) + "---\n" + kMinimalJob, "x.yaml").status().message(),
      "x.yaml: expected one YAML document, found 2 (separated by ---)");
}

TEST(ToYaml, RoundTripsDefaultsAndEveryField) {
  for (const JobSpec& s : {MustLoad(kMinimalJob), EverythingSet()}) {
    std::string yaml = ToYaml(s);
    StatusOr<JobSpec> back = LoadJobSpec(yaml, "<round trip>");
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
    EXPECT_EQ(*back, s) << yaml;
    EXPECT_EQ(ToYaml(*back), yaml);  // serialize -> parse -> serialize is stable
  }
}

TEST(ToYaml, WritesMicroBatchSizeOnlyWhenNotTheDefaultAndRoundTripsIt) {
  EXPECT_EQ(MustLoad(kMinimalJob).scheduler.micro_batch_size, 1);
  EXPECT_EQ(ToYaml(MustLoad(kMinimalJob)).find("microBatchSize"), std::string::npos);
  const JobSpec s = MustLoad(JobYaml()
                                 .Set("spec.scheduler.policy", "deepspeed")
                                 .Set("spec.scheduler.microBatchSize", "4")
                                 .Text());
  EXPECT_EQ(s.scheduler.policy, scheduler::Policy::kDeepSpeed);
  EXPECT_EQ(s.scheduler.micro_batch_size, 4);
  const std::string yaml = ToYaml(s);
  EXPECT_NE(yaml.find("microBatchSize: 4\n"), std::string::npos) << yaml;
  EXPECT_EQ(MustLoad(yaml), s);
}

TEST(ToYaml, QuotesStringsOtherReadersWouldRetype) {
  std::string yaml = ToYaml(EverythingSet());
  EXPECT_NE(yaml.find("flag: \"true\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("version: \"1.0\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("nil: \"null\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("cpu: \"8\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("tag: \"1.10\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("bucketSize: 26624\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("learningRate: 0.30000000000000004\n"), std::string::npos) << yaml;
}

TEST(ToYaml, WritesAutoBucketSize) {
  EXPECT_NE(ToYaml(MustLoad(kMinimalJob)).find("bucketSize: auto\n"), std::string::npos);
}

TEST(ToYaml, WritesHardwareProfileOnlyWhenSet) {
  // Unset: the document (and JobSpecHash of old checkpoints) is as before the field existed.
  EXPECT_EQ(ToYaml(MustLoad(kMinimalJob)).find("hardwareProfile"), std::string::npos);
  EXPECT_NE(ToYaml(EverythingSet()).find("hardwareProfile: /profiles/h100.json\n"),
            std::string::npos);
}

TEST(LoadJobSpec, HardwareProfileIsAnOptionalPath) {
  EXPECT_EQ(MustLoad(kMinimalJob).scheduler.hardware_profile, "");
  EXPECT_EQ(MustLoad(JobYaml().Set("spec.scheduler.hardwareProfile", "''").Text())
                .scheduler.hardware_profile,
            "");
  EXPECT_EQ(MustLoad(JobYaml().Set("spec.scheduler.hardwareProfile", "prof/gpu.json").Text())
                .scheduler.hardware_profile,
            "prof/gpu.json");  // no base_dir: kept relative
  std::vector<std::string> errors =
      LoadErrors(JobYaml().Set("spec.scheduler.hardwareProfile", "{path: x.json}").Text());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("spec.scheduler.hardwareProfile: expected a string"), std::string::npos)
      << errors[0];
  errors = LoadErrors(JobYaml().Set("spec.scheduler.hardwarProfile", "x.json").Text());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("did you mean 'hardwareProfile'?"), std::string::npos) << errors[0];
}

TEST(PathResolution, RelativePathsResolveAgainstBaseDirAndAbsoluteOnesAreKept) {
  JobSpec s = MustLoad(JobYaml()
                           .Set("spec.model.config", "models/tiny/../tiny/config.json")
                           .Set("spec.model.weights", "/abs/weights")
                           .Set("spec.data.path", "./data/train.jsonl")
                           .Set("spec.scheduler.hardwareProfile", "../profiles/./gpu.json")
                           .Set("spec.training.resumeFrom", "latest")
                           .Text(),
                       "/jobs/team");
  EXPECT_EQ(s.scheduler.hardware_profile, "/jobs/profiles/gpu.json");
  EXPECT_EQ(s.model.config, "/jobs/team/models/tiny/config.json");
  EXPECT_EQ(s.model.weights, "/abs/weights");
  EXPECT_EQ(s.data.path, "/jobs/team/data/train.jsonl");
  EXPECT_EQ(s.training.output_dir, "/jobs/team/runs/test-job");  // the default resolves too
  EXPECT_EQ(s.training.resume_from, "latest");
  EXPECT_EQ(s.source_dir, "/jobs/team");

  JobSpec up = MustLoad(JobYaml()
                            .Set("spec.training.outputDir", "../runs/x")
                            .Set("spec.training.resumeFrom", "../runs/x/step-10")
                            .Text(),
                        "/repo/examples");
  EXPECT_EQ(up.training.output_dir, "/repo/runs/x");
  EXPECT_EQ(up.training.resume_from, "/repo/runs/x/step-10");
  EXPECT_EQ(up.model.weights, "");  // empty stays empty
}

TEST(PathResolution, LoadJobSpecFileUsesTheFilesDirectory) {
  std::string dir = TempDir();
  std::filesystem::create_directories(dir + "/jobs");
  std::ofstream(dir + "/jobs/job.yaml") << kMinimalJob;
  StatusOr<JobSpec> s = LoadJobSpecFile(dir + "/jobs/job.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->source_dir, dir + "/jobs");
  EXPECT_EQ(s->model.config, dir + "/jobs/models/tiny/config.json");
  EXPECT_EQ(s->data.path, dir + "/jobs/data/train.jsonl");
  EXPECT_EQ(s->training.output_dir, dir + "/jobs/runs/test-job");

  // A relative file path gives an absolute source_dir.
  std::string relative =
      std::filesystem::relative(dir + "/jobs/job.yaml", std::filesystem::current_path()).string();
  StatusOr<JobSpec> r = LoadJobSpecFile(relative);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source_dir, dir + "/jobs");
  EXPECT_EQ(*r, *s);

  // Round trip after resolution: the absolute paths are kept as written.
  StatusOr<JobSpec> back = LoadJobSpec(ToYaml(*s), "<round trip>");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *s);
  // ... and loading it again from another directory changes nothing.
  StatusOr<JobSpec> elsewhere = LoadJobSpec(ToYaml(*s), "<round trip>", "/somewhere/else");
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ(*elsewhere, *s);
}

TEST(LoadJobSpecFile, MissingFileIsNotFoundNamingThePath) {
  StatusOr<JobSpec> s = LoadJobSpecFile("/nonexistent/skrull/job.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "/nonexistent/skrull/job.yaml: no such file");
}

TEST(LoadJobSpecFile, ErrorsArePrefixedWithThePathAsGiven) {
  std::string dir = TempDir();
  std::ofstream(dir + "/bad.yaml") << JobYaml().Set("spec.training.steps", "ten").Text();
  StatusOr<JobSpec> s = LoadJobSpecFile(dir + "/bad.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message().rfind(dir + "/bad.yaml:", 0), 0u) << s.status();
  EXPECT_EQ(ErrorLines(s.status()),
            std::vector<std::string>{"spec.training.steps: expected an integer, got 'ten'"});
}

TEST(EnumNames, JobPoliciesAreTheSchedulersEnumByItsNames) {
  for (scheduler::Policy p : kJobPolicies) {
    SCOPED_TRACE(scheduler::PolicyName(p));
    StatusOr<JobSpec> s = LoadJobSpec(
        JobYaml().Set("spec.scheduler.policy", scheduler::PolicyName(p)).Text(), "<test>");
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->scheduler.policy, p);
    EXPECT_NE(ToYaml(*s).find(std::string("policy: ") + scheduler::PolicyName(p) + "\n"),
              std::string::npos);
  }
  EXPECT_EQ(std::string(scheduler::PolicyName(scheduler::Policy::kBalancedCp)), "balanced-cp");
}

TEST(EnumNames, SkrullPaperIsNotAJobPolicy) {
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.scheduler.policy", "skrull-paper").Text()),
            std::vector<std::string>{"spec.scheduler.policy: must be one of skrull, cp-all, "
                                     "sorted, balanced-cp, round-robin, deepspeed, dynamic-cp, "
                                     "local-if-fits (got "
                                     "'skrull-paper')"});
  JobSpec s = MustLoad(kMinimalJob);
  s.scheduler.policy = scheduler::Policy::kSkrullPaper;
  EXPECT_EQ(ValidateJobSpec(s, "tuner").message(),
            "tuner: spec.scheduler.policy: must be one of skrull, cp-all, sorted, balanced-cp, "
            "round-robin, deepspeed, dynamic-cp, local-if-fits (got 'skrull-paper')");
}

TEST(EnumNames, RoundTrip) {
  EXPECT_EQ(std::string(DataFormatName(DataFormat::kTokenizedJsonl)), "tokenized-jsonl");
  EXPECT_EQ(std::string(PrecisionName(Precision::kBf16)), "bf16");
  EXPECT_EQ(std::string(LrScheduleName(LrSchedule::kConstant)), "constant");
  EXPECT_EQ(std::string(OverLengthPolicyName(OverLengthPolicy::kTruncate)), "truncate");
  EXPECT_EQ(std::string(MalformedPolicyName(MalformedPolicy::kSkip)), "skip");
  EXPECT_EQ(std::string(CleanPodPolicyName(CleanPodPolicy::kAll)), "All");
  EXPECT_EQ(LoadErrors(JobYaml().Set("spec.scheduler.policy", "roundrobin").Text()),
            std::vector<std::string>{"spec.scheduler.policy: must be one of skrull, cp-all, "
                                     "sorted, balanced-cp, round-robin, deepspeed, dynamic-cp, "
                                     "local-if-fits (got "
                                     "'roundrobin'); did "
                                     "you mean 'round-robin'?"});
}

TEST(DescribeJobSpec, SummarizesWorldSizePolicyBucketAndGlobalBatch) {
  JobSpec s = EverythingSet();
  std::string text = DescribeJobSpec(s);
  EXPECT_NE(text.find("8 ranks = 2 nodes x 4 procs per node"), std::string::npos) << text;
  EXPECT_NE(text.find("dataParallel 2 x contextParallel 4"), std::string::npos) << text;
  EXPECT_NE(text.find("Scheduler balanced-cp with bucketSize 26624 tokens per rank"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("global batch 80 sequences (batchSize 40 x dataParallel 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("LoRA rank 8 on q_proj, down_proj"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_NE(text.find("plans priced with /profiles/h100.json"), std::string::npos) << text;
  EXPECT_NE(DescribeJobSpec(MustLoad(kMinimalJob)).find("bucketSize auto"), std::string::npos);
}

TEST(JobSpecEquality, IgnoresSourceDirOnly) {
  JobSpec a = EverythingSet();
  JobSpec b = a;
  b.source_dir = "/elsewhere";
  EXPECT_EQ(a, b);
  b.model.lora->target_modules.pop_back();
  EXPECT_NE(a, b);
  b = a;
  b.model.lora.reset();
  EXPECT_NE(a, b);
  b = a;
  b.annotations.clear();
  EXPECT_NE(a, b);
  b = a;
  b.scheduler.hardware_profile.clear();
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace skrull::api
