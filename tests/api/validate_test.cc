// Every field's validation: one bad value -> one specific message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/job_spec.h"
#include "tests/api/job_builder.h"

namespace skrull::api {
namespace {

using testing::JobYaml;
using testing::LoadErrors;

struct BadField {
  const char* path;   // field to set
  const char* value;  // YAML text
  const char* error;  // the one expected error line, location stripped
};

// Sets `path` to `value` in the minimal job and expects exactly `error`.
void ExpectOnlyError(const BadField& c) {
  SCOPED_TRACE(std::string(c.path) + ": " + c.value);
  EXPECT_EQ(LoadErrors(JobYaml().Set(c.path, c.value).Text()), std::vector<std::string>{c.error});
}

TEST(Validate, MetadataAndHeader) {
  const BadField cases[] = {
      {"apiVersion", "skrull.io/v1", "apiVersion: must be skrull.io/v1alpha1 (got 'skrull.io/v1')"},
      {"apiVersion", "''", "apiVersion: required: write apiVersion: skrull.io/v1alpha1"},
      {"kind", "PyTorchJob", "kind: must be SkrullJob (got 'PyTorchJob')"},
      {"metadata.name", "My_Job",
       "metadata.name: must be a DNS-1123 label: at most 63 lowercase letters, digits and '-', "
       "starting and ending with a letter or digit (got 'My_Job')"},
      {"metadata.name", "job-",
       "metadata.name: must be a DNS-1123 label: at most 63 lowercase letters, digits and '-', "
       "starting and ending with a letter or digit (got 'job-')"},
      {"metadata.name", "~", "metadata.name: required: a DNS-1123 label such as my-job"},
      {"metadata.name", "{a: 1}", "metadata.name: expected a string, got a mapping"},
      {"metadata.namespace", "Prod",
       "metadata.namespace: must be a DNS-1123 label: at most 63 lowercase letters, digits and "
       "'-', starting and ending with a letter or digit (got 'Prod')"},
      {"metadata.labels", "{team: has space}",
       "metadata.labels[team]: value must be empty or at most 63 letters, digits, '-', '_' and "
       "'.', starting and ending with a letter or digit (got 'has space')"},
      {"metadata.labels", "{'-team': ml}",
       "metadata.labels[-team]: key must be a key name of at most 63 letters, digits, '-', '_' "
       "and '.', starting and ending with a letter or digit, with an optional 'prefix/' (got "
       "'-team')"},
      {"metadata.labels", "{'Example.com/team': ml}",
       "metadata.labels[Example.com/team]: key must have a prefix that is a DNS subdomain "
       "(lowercase letters, digits, '-' and '.', at most 253 characters) before the '/' (got "
       "'Example.com/team')"},
      {"metadata.labels", "[a, b]",
       "metadata.labels: expected a mapping of strings to strings, got a list"},
      {"metadata.annotations", "{'a b': anything goes}",
       "metadata.annotations[a b]: key must be a key name of at most 63 letters, digits, '-', "
       "'_' and '.', starting and ending with a letter or digit, with an optional 'prefix/' "
       "(got 'a b')"},
      {"metadata", "job", "metadata: expected a mapping, got 'job'"},
  };
  // (A rejected `metadata` does not also report its missing name.)
  for (const BadField& c : cases) ExpectOnlyError(c);
}

TEST(Validate, LabelNamesAndValuesAtTheLimitsAreAccepted) {
  std::string name63(63, 'a');
  EXPECT_TRUE(
      LoadErrors(JobYaml()
                     .Set("metadata.name", name63)
                     .Set("metadata.labels",
                          "{app.kubernetes.io/name: skrull, team: '', tier: " + name63 + "}")
                     .Text())
          .empty());
  EXPECT_EQ(LoadErrors(JobYaml().Set("metadata.name", name63 + "a").Text()).size(), 1u);
}

TEST(Validate, Model) {
  const BadField cases[] = {
      {"spec.model.config", "''",
       "spec.model.config: required: path to a Hugging Face config.json"},
      {"spec.model.seed", "-1", "spec.model.seed: must be >= 0 (got -1)"},
      {"spec.model.seed", "abc", "spec.model.seed: expected a non-negative integer, got 'abc'"},
      {"spec.model.seed", "18446744073709551616",
       "spec.model.seed: is out of range for a 64-bit unsigned integer (got "
       "18446744073709551616)"},
      {"spec.model.lora", "~",
       "spec.model.lora: is empty; write 'lora: {}' for LoRA with default settings, or remove "
       "it for full fine-tuning"},
      {"spec.model.lora", "{rank: 0}", "spec.model.lora.rank: must be in 1..65536 (got 0)"},
      {"spec.model.lora", "{alpha: 0}", "spec.model.lora.alpha: must be > 0 (got 0)"},
      {"spec.model.lora", "{targetModules: []}",
       "spec.model.lora.targetModules: must name at least one of q_proj, k_proj, v_proj, o_proj, "
       "gate_proj, up_proj, down_proj"},
      {"spec.model.lora", "{targetModules: [q_proj, q_proj]}",
       "spec.model.lora.targetModules[1]: duplicate module 'q_proj'"},
      {"spec.model.lora", "{targetModules: [v_porj]}",
       "spec.model.lora.targetModules[0]: must be one of q_proj, k_proj, v_proj, o_proj, "
       "gate_proj, up_proj, down_proj (got 'v_porj'); did you mean 'v_proj'?"},
      {"spec.model.lora", "{targetModules: q_proj}",
       "spec.model.lora.targetModules: expected a list of strings, got 'q_proj'"},
      {"spec.model.lora", "{targetModules: [[q_proj]]}",
       "spec.model.lora.targetModules[0]: expected a string, got a list"},
      {"spec.model.lora", "{ranks: 8}",
       "spec.model.lora.ranks: unknown field; did you mean 'rank'?"},
      {"spec.model.lora", "{r: 8}",
       "spec.model.lora.r: unknown field; allowed fields: rank, alpha, targetModules"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
}

TEST(Validate, Data) {
  const BadField cases[] = {
      {"spec.data.path", "''", "spec.data.path: required: path to a .jsonl file"},
      {"spec.data.format", "jsonl",
       "spec.data.format: must be one of tokenized-jsonl, text-jsonl, alpaca, sharegpt (got "
       "'jsonl')"},
      {"spec.data.format", "text_jsonl",
       "spec.data.format: must be one of tokenized-jsonl, text-jsonl, alpaca, sharegpt (got "
       "'text_jsonl'); did you "
       "mean 'text-jsonl'?"},
      {"spec.data.maxLength", "-1", "spec.data.maxLength: must be in 0..2147483647 (got -1)"},
      {"spec.data.maxLength", "32KB",
       "spec.data.maxLength: expected a token count such as 2048 or 26K (K = 1024, M = 1048576), "
       "got '32KB'"},
      {"spec.data.onOverLength", "drop",
       "spec.data.onOverLength: must be one of error, truncate, skip (got 'drop')"},
      {"spec.data.onMalformed", "ignore",
       "spec.data.onMalformed: must be one of error, skip (got 'ignore')"},
      {"spec.data.tokenizer", "models/qwen",
       "spec.data.tokenizer: only used with spec.data.format: text-jsonl, alpaca or sharegpt "
       "(tokenized-jsonl already holds ids); remove it or switch the format"},
      {"spec.data.tokenizer", "[a]", "spec.data.tokenizer: expected a string, got a list"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
}

TEST(Validate, TextDataForPretrainedWeightsNeedsTheModelsTokenizer) {
  const std::string job = JobYaml()
                              .Set("spec.model.weights", "models/qwen/model.safetensors")
                              .Set("spec.data.format", "text-jsonl")
                              .Text();
  EXPECT_EQ(LoadErrors(job),
            std::vector<std::string>{
                "spec.data.tokenizer: required: text-jsonl with pretrained weights "
                "(spec.model.weights) needs the model's own tokenizer; set spec.data.tokenizer to "
                "the model folder or its tokenizer.json (the built-in byte tokenizer's ids mean "
                "nothing to a pretrained model)"});
  EXPECT_TRUE(LoadErrors(JobYaml(job).Set("spec.data.tokenizer", "models/qwen").Text()).empty());
  // Random init with text-jsonl keeps the byte tokenizer.
  EXPECT_TRUE(LoadErrors(JobYaml().Set("spec.data.format", "text-jsonl").Text()).empty());
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.data.format", "text-jsonl")
                           .Set("spec.data.chatTemplate", "'{{ x }}'")
                           .Text()),
            std::vector<std::string>{"spec.data.chatTemplate: needs spec.data.tokenizer (the byte "
                                     "tokenizer has a fixed chat format)"});
}

TEST(Validate, ParallelismDegreesAreAtLeastOne) {
  const BadField cases[] = {
      {"spec.parallelism.nodes", "0", "spec.parallelism.nodes: must be in 1..8192 (got 0)"},
      {"spec.parallelism.procsPerNode", "0",
       "spec.parallelism.procsPerNode: must be in 1..1024 (got 0)"},
      {"spec.parallelism.dataParallel", "-2",
       "spec.parallelism.dataParallel: must be in 1..65536 (got -2)"},
      {"spec.parallelism.contextParallel", "0",
       "spec.parallelism.contextParallel: must be in 1..65536 (got 0)"},
      {"spec.parallelism.procsPerNode", "1.5",
       "spec.parallelism.procsPerNode: expected an integer, got '1.5'"},
      {"spec.parallelism.nodes", "99999999999",
       "spec.parallelism.nodes: must be between -2147483648 and 2147483647 (got 99999999999)"},
      {"spec.parallelism.nodes", "99999999999999999999",
       "spec.parallelism.nodes: is out of range for a 64-bit integer (got 99999999999999999999)"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
}

TEST(Validate, WorldSizeMismatchNamesAllFourValuesAndSuggestsFixes) {
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.parallelism",
                                "{nodes: 2, procsPerNode: 4, dataParallel: 2, "
                                "contextParallel: 2}")
                           .Text()),
            std::vector<std::string>{
                "spec.parallelism: dataParallel x contextParallel must equal nodes x "
                "procsPerNode (the world size), but dataParallel (2) x contextParallel (2) = 4 "
                "and nodes (2) x procsPerNode (4) = 8; set dataParallel: 4, or contextParallel: "
                "4, or procsPerNode: 2"});
  // No integer fix for dataParallel or contextParallel: only procsPerNode is offered.
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.parallelism",
                                "{nodes: 1, procsPerNode: 5, dataParallel: 2, "
                                "contextParallel: 2}")
                           .Text()),
            std::vector<std::string>{
                "spec.parallelism: dataParallel x contextParallel must equal nodes x "
                "procsPerNode (the world size), but dataParallel (2) x contextParallel (2) = 4 "
                "and nodes (1) x procsPerNode (5) = 5; set procsPerNode: 4"});
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.parallelism",
                                "{nodes: 3, procsPerNode: 5, dataParallel: 2, "
                                "contextParallel: 2}")
                           .Text()),
            std::vector<std::string>{
                "spec.parallelism: dataParallel x contextParallel must equal nodes x "
                "procsPerNode (the world size), but dataParallel (2) x contextParallel (2) = 4 "
                "and nodes (3) x procsPerNode (5) = 15; choose dataParallel x contextParallel = "
                "15"});
}

TEST(Validate, Scheduler) {
  const BadField cases[] = {
      {"spec.scheduler.policy", "fast",
       "spec.scheduler.policy: must be one of skrull, cp-all, sorted, balanced-cp, round-robin, "
       "deepspeed, dynamic-cp, local-if-fits (got 'fast')"},
      {"spec.scheduler.policy", "cp_all",
       "spec.scheduler.policy: must be one of skrull, cp-all, sorted, balanced-cp, round-robin, "
       "deepspeed, dynamic-cp, local-if-fits (got 'cp_all'); did you mean 'cp-all'?"},
      {"spec.scheduler.bucketSize", "0",
       "spec.scheduler.bucketSize: must be > 0 tokens or 'auto' (got 0)"},
      {"spec.scheduler.bucketSize", "-5K",
       "spec.scheduler.bucketSize: must be > 0 tokens or 'auto' (got -5K)"},
      {"spec.scheduler.bucketSize", "Auto",
       "spec.scheduler.bucketSize: expected 'auto' or a token count such as 2048 or 26K (K = "
       "1024, M = 1048576), got 'Auto'"},
      {"spec.scheduler.bucketSize", "26.5K",
       "spec.scheduler.bucketSize: expected 'auto' or a token count such as 2048 or 26K (K = "
       "1024, M = 1048576), got '26.5K'"},
      {"spec.scheduler.batchSize", "0", "spec.scheduler.batchSize: must be in 1..65536 (got 0)"},
      {"spec.scheduler.seed", "-3", "spec.scheduler.seed: must be >= 0 (got -3)"},
      {"spec.scheduler.microBatchSize", "2",
       "spec.scheduler.microBatchSize: only policy deepspeed reads it (policy is 'skrull'); "
       "remove it or set spec.scheduler.policy: deepspeed (got 2)"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
}

TEST(Validate, DeepSpeedMicroBatchSizeIsOneToBatchSize) {
  const auto deepspeed = [](const char* micro) {
    return LoadErrors(JobYaml()
                          .Set("spec.scheduler.policy", "deepspeed")
                          .Set("spec.scheduler.batchSize", "4")
                          .Set("spec.scheduler.microBatchSize", micro)
                          .Text());
  };
  EXPECT_EQ(deepspeed("4"), std::vector<std::string>{});
  EXPECT_EQ(deepspeed("5"), std::vector<std::string>{
                                "spec.scheduler.microBatchSize: must be 1..4 sequences (at most "
                                "batchSize) (got 5)"});
  EXPECT_EQ(deepspeed("0"), std::vector<std::string>{
                                "spec.scheduler.microBatchSize: must be 1..4 sequences (at most "
                                "batchSize) (got 0)"});
}

TEST(Validate, Training) {
  const BadField cases[] = {
      {"spec.training.steps", "ten", "spec.training.steps: expected an integer, got 'ten'"},
      {"spec.training.steps", "0", "spec.training.steps: must be in 1..2147483647 (got 0)"},
      {"spec.training.steps", "1e3", "spec.training.steps: expected an integer, got '1e3'"},
      {"spec.training.steps", "[1]", "spec.training.steps: expected an integer, got a list"},
      {"spec.training.learningRate", "0", "spec.training.learningRate: must be > 0 (got 0)"},
      {"spec.training.learningRate", "fast",
       "spec.training.learningRate: expected a finite number, got 'fast'"},
      {"spec.training.learningRate", ".inf",
       "spec.training.learningRate: expected a finite number, got '.inf'"},
      {"spec.training.warmupSteps", "-1",
       "spec.training.warmupSteps: must be in 0..2147483647 (got -1)"},
      {"spec.training.warmupSteps", "100",
       "spec.training.warmupSteps: must be < steps (100) (got 100)"},
      {"spec.training.schedule", "step",
       "spec.training.schedule: must be one of cosine, linear, constant (got 'step')"},
      {"spec.training.minLrRatio", "1.5", "spec.training.minLrRatio: must be in [0, 1] (got 1.5)"},
      {"spec.training.minLrRatio", "-0.1",
       "spec.training.minLrRatio: must be in [0, 1] (got -0.1)"},
      {"spec.training.weightDecay", "-0.01", "spec.training.weightDecay: must be >= 0 (got -0.01)"},
      {"spec.training.adamBeta1", "1", "spec.training.adamBeta1: must be in [0, 1) (got 1)"},
      {"spec.training.adamBeta2", "-0.5", "spec.training.adamBeta2: must be in [0, 1) (got -0.5)"},
      {"spec.training.adamEpsilon", "0", "spec.training.adamEpsilon: must be > 0 (got 0)"},
      {"spec.training.gradClip", "-1", "spec.training.gradClip: must be >= 0 (got -1)"},
      {"spec.training.precision", "fp16",
       "spec.training.precision: must be one of fp32, bf16 (got 'fp16')"},
      {"spec.training.checkpointEvery", "-10",
       "spec.training.checkpointEvery: must be in 0..2147483647 (got -10)"},
      {"spec.training.logEvery", "0", "spec.training.logEvery: must be in 1..2147483647 (got 0)"},
      {"spec.training.collectiveTimeoutSeconds", "0",
       "spec.training.collectiveTimeoutSeconds: must be in 1..2147483647 (got 0)"},
      {"spec.training.zeroStage", "3", "spec.training.zeroStage: must be in 0..2 (got 3)"},
      {"spec.training.zeroStage", "-1", "spec.training.zeroStage: must be in 0..2 (got -1)"},
      {"spec.training.outputDir", "{a: b}",
       "spec.training.outputDir: expected a string, got a mapping"},
      {"spec.training", "5", "spec.training: expected a mapping, got '5'"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
}

TEST(Validate, WarmupIsJudgedAgainstTheStepsWritten) {
  EXPECT_EQ(
      LoadErrors(
          JobYaml().Set("spec.training.steps", "10").Set("spec.training.warmupSteps", "10").Text()),
      std::vector<std::string>{"spec.training.warmupSteps: must be < steps (10) (got 10)"});
  // A rejected `steps` is reported once; warmup is not judged against the default.
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.training.steps", "ten")
                           .Set("spec.training.warmupSteps", "500")
                           .Text()),
            std::vector<std::string>{"spec.training.steps: expected an integer, got 'ten'"});
}

TEST(Validate, Metrics) {
  const BadField cases[] = {
      {"spec.metrics.port", "-1", "spec.metrics.port: must be in 0..65535 (got -1)"},
      {"spec.metrics.port", "65536", "spec.metrics.port: must be in 0..65535 (got 65536)"},
      {"spec.metrics.pushgateway", "pushgateway:9091",
       "spec.metrics.pushgateway: must be http://host:port or https://host:port with a port in "
       "1..65535, e.g. http://pushgateway:9091 (got 'pushgateway:9091')"},
      {"spec.metrics.pushgateway", "http://pushgateway",
       "spec.metrics.pushgateway: must be http://host:port or https://host:port with a port in "
       "1..65535, e.g. http://pushgateway:9091 (got 'http://pushgateway')"},
      {"spec.metrics.pushgateway", "ftp://pushgateway:21",
       "spec.metrics.pushgateway: must be http://host:port or https://host:port with a port in "
       "1..65535, e.g. http://pushgateway:9091 (got 'ftp://pushgateway:21')"},
      {"spec.metrics.pushgateway", "http://pushgateway:0",
       "spec.metrics.pushgateway: must be http://host:port or https://host:port with a port in "
       "1..65535, e.g. http://pushgateway:9091 (got 'http://pushgateway:0')"},
      {"spec.metrics.address", "localhost",
       "spec.metrics.address: must be an IPv4 or IPv6 address such as 127.0.0.1, 0.0.0.0 or :: "
       "(got 'localhost')"},
      {"spec.metrics.address", "'[::1]'",
       "spec.metrics.address: must be an IPv4 or IPv6 address such as 127.0.0.1, 0.0.0.0 or :: "
       "(got '[::1]')"},
      {"spec.metrics.address", "1.2.3.256",
       "spec.metrics.address: must be an IPv4 or IPv6 address such as 127.0.0.1, 0.0.0.0 or :: "
       "(got '1.2.3.256')"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
  for (const char* ok : {"127.0.0.1", "0.0.0.0", "'::'", "'::1'", "10.1.2.3", "fe80::1"}) {
    EXPECT_TRUE(LoadErrors(JobYaml().Set("spec.metrics.address", ok).Text()).empty()) << ok;
  }
  for (const char* ok : {"http://pushgateway:9091", "https://push.example.com:443/",
                         "http://10.0.0.7:9091", "http://[::1]:9091"}) {
    EXPECT_TRUE(LoadErrors(JobYaml().Set("spec.metrics.pushgateway", ok).Text()).empty()) << ok;
  }
}

TEST(Validate, MetricsPortLeavesRoomForEveryLocalRank) {
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.parallelism", "{procsPerNode: 8, dataParallel: 8}")
                           .Set("spec.metrics.port", "65530")
                           .Text()),
            std::vector<std::string>{"spec.metrics.port: ranks serve on port + local rank, so "
                                     "with spec.parallelism.procsPerNode 8 it must be <= 65528 "
                                     "(got 65530)"});
  EXPECT_TRUE(LoadErrors(JobYaml()
                             .Set("spec.parallelism", "{procsPerNode: 8, dataParallel: 8}")
                             .Set("spec.metrics.port", "65528")
                             .Text())
                  .empty());
}

TEST(Validate, Resources) {
  const std::string quantity =
      "must be a Kubernetes quantity such as 8, 0.5, 500m or 64Gi (binary suffixes Ki Mi Gi Ti "
      "Pi Ei, decimal k M G T P E)";
  const std::string cpu_error = "spec.resources.cpu: " + quantity + " (got '8 cores')";
  const std::string memory_error = "spec.resources.memory: " + quantity + " (got '64GB')";
  const BadField cases[] = {
      {"spec.resources.gpusPerProc", "-1", "spec.resources.gpusPerProc: must be >= 0 (got -1)"},
      {"spec.resources.cpu", "8 cores", cpu_error.c_str()},
      {"spec.resources.memory", "64GB", memory_error.c_str()},
      {"spec.resources.memory", "-1Gi", "spec.resources.memory: must not be negative (got '-1Gi')"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
  for (const char* ok : {"8", "0.5", "500m", "64Gi", "1e3", "128M", ".5", "+2"}) {
    EXPECT_TRUE(LoadErrors(JobYaml().Set("spec.resources.memory", ok).Text()).empty()) << ok;
  }
}

TEST(Validate, Image) {
  const BadField cases[] = {
      {"spec.image.repository", "ghcr.io/Skrull/trainer",
       "spec.image.repository: must be an image repository such as ghcr.io/skrull/trainer: "
       "lowercase letters, digits and '.', '_', '-' in '/'-separated parts, optionally after a "
       "registry host[:port]/ (got 'ghcr.io/Skrull/trainer')"},
      {"spec.image.repository", "ghcr.io/skrull/trainer:v1",
       "spec.image.repository: must be a repository without a tag or digest; put the tag in "
       "spec.image.tag (got 'ghcr.io/skrull/trainer:v1')"},
      {"spec.image.tag", "-rc1",
       "spec.image.tag: must be at most 128 letters, digits, '_', '.' and '-', not starting with "
       "'.' or '-' (got '-rc1')"},
      {"spec.image.pullPolicy", "always",
       "spec.image.pullPolicy: must be one of Always, IfNotPresent, Never (got 'always'); did "
       "you mean 'Always'?"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
  for (const char* ok : {"localhost:5000/trainer", "registry.example.com/team/skrull-trainer",
                         "trainer", "a__b/c.d-e"}) {
    EXPECT_TRUE(LoadErrors(JobYaml().Set("spec.image.repository", ok).Text()).empty()) << ok;
  }
}

TEST(Validate, Tuning) {
  const BadField cases[] = {
      {"spec.tuning.enabled", "yes", "spec.tuning.enabled: expected true or false, got 'yes'"},
      {"spec.tuning.targetMemoryFraction", "0",
       "spec.tuning.targetMemoryFraction: must be in (0, 1] (got 0)"},
      {"spec.tuning.targetMemoryFraction", "1.01",
       "spec.tuning.targetMemoryFraction: must be in (0, 1] (got 1.01)"},
      {"spec.tuning.minBucketSizeTokens", "0",
       "spec.tuning.minBucketSizeTokens: must be in 1..1073741824 (got 0)"},
      {"spec.tuning.maxBucketSizeTokens", "512",
       "spec.tuning.minBucketSizeTokens: must be <= maxBucketSizeTokens (512) (got 1024)"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
  EXPECT_TRUE(LoadErrors(JobYaml()
                             .Set("spec.tuning",
                                  "{enabled: true, targetMemoryFraction: 1, "
                                  "minBucketSizeTokens: 4K, maxBucketSizeTokens: 4K}")
                             .Text())
                  .empty());
}

TEST(Validate, RunPolicy) {
  const BadField cases[] = {
      {"spec.runPolicy.backoffLimit", "-1", "spec.runPolicy.backoffLimit: must be >= 0 (got -1)"},
      {"spec.runPolicy.startDeadlineSeconds", "-5",
       "spec.runPolicy.startDeadlineSeconds: must be in 0..2147483647 (got -5)"},
      {"spec.runPolicy.activeDeadlineSeconds", "-1",
       "spec.runPolicy.activeDeadlineSeconds: must be in 0..2147483647 (got -1)"},
      {"spec.runPolicy.ttlSecondsAfterFinished", "-1",
       "spec.runPolicy.ttlSecondsAfterFinished: must be in 0..2147483647 (got -1)"},
      {"spec.runPolicy.suspend", "maybe",
       "spec.runPolicy.suspend: expected true or false, got 'maybe'"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
  std::vector<std::string> errors =
      LoadErrors(JobYaml().Set("spec.runPolicy.cleanPodPolicy", "running").Text());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("spec.runPolicy.cleanPodPolicy"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("did you mean 'Running'?"), std::string::npos) << errors[0];
  StatusOr<JobSpec> ok = LoadJobSpec(JobYaml()
                                         .Set("spec.runPolicy",
                                              "{backoffLimit: 0, startDeadlineSeconds: 0, "
                                              "cleanPodPolicy: All, suspend: true}")
                                         .Text(),
                                     "<test>");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->run_policy.backoff_limit, 0);
  EXPECT_EQ(ok->run_policy.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_TRUE(ok->run_policy.suspend);
  EXPECT_EQ(ok->run_policy.ttl_seconds_after_finished, 0);  // default
}

TEST(Validate, Storage) {
  const BadField cases[] = {
      {"spec.storage.claimName", "Team_Data",
       "spec.storage.claimName: must be a DNS-1123 label: at most 63 lowercase letters, digits "
       "and '-', starting and ending with a letter or digit (got 'Team_Data')"},
      {"spec.storage.mountPath", "data",
       "spec.storage.mountPath: must be an absolute path in the trainer pod, e.g. /data (got "
       "'data')"},
  };
  for (const BadField& c : cases) ExpectOnlyError(c);
  StatusOr<JobSpec> ok = LoadJobSpec(
      JobYaml().Set("spec.storage", "{claimName: team-data, readOnly: true}").Text(), "<test>");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->storage.claim_name, "team-data");
  EXPECT_EQ(ok->storage.mount_path, "/data");  // default
  EXPECT_TRUE(ok->storage.read_only);
}

TEST(WithBucketSize, SetsACountAndValidatesTheWholeSpec) {
  StatusOr<JobSpec> loaded = LoadJobSpec(testing::kMinimalJob, "<test>");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  StatusOr<JobSpec> tuned = WithBucketSize(*loaded, 15360, "tuner");
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_FALSE(tuned->scheduler.bucket_size_auto);
  EXPECT_EQ(tuned->scheduler.bucket_size_tokens, 15360);
  EXPECT_EQ(WithBucketSize(*loaded, 0, "tuner").status().message(),
            "tuner: spec.scheduler.bucketSize: the override must be > 0 tokens (got 0)");
  EXPECT_EQ(WithBucketSize(*loaded, kMaxBucketSizeTokens + 1, "tuner").status().message(),
            "tuner: spec.scheduler.bucketSize: must be 1..1073741824 tokens (1024M) or 'auto' "
            "(got 1073741825)");
  // The rest of the spec is checked too: a broken field is reported with it.
  JobSpec broken = *loaded;
  broken.training.warmup_steps = broken.training.steps;
  EXPECT_EQ(WithBucketSize(broken, 4096, "tuner").status().message(),
            "tuner: spec.training.warmupSteps: must be < steps (100) (got 100)");
}

TEST(Validate, ProgrammaticSpecsGetTheSameRulesWithoutPositions) {
  StatusOr<JobSpec> loaded = LoadJobSpec(testing::kMinimalJob, "<test>");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(ValidateJobSpec(*loaded).ok());
  JobSpec spec = *loaded;
  spec.parallelism.context_parallel = 0;
  spec.training.warmup_steps = spec.training.steps;
  spec.scheduler.bucket_size_auto = false;
  spec.scheduler.bucket_size_tokens = -1;
  Status status = ValidateJobSpec(spec, "tuner");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      status.message(),
      "tuner: spec.parallelism.contextParallel: must be in 1..65536 (got 0)\n"
      "tuner: spec.scheduler.bucketSize: must be 1..1073741824 tokens (1024M) or 'auto' (got -1)\n"
      "tuner: spec.training.warmupSteps: must be < steps (100) (got 100)");
  // Before ApplyDefaults, 0 tokens means "unset" and is valid.
  JobSpec unset = *loaded;
  unset.scheduler = SchedulerSpec{};
  EXPECT_TRUE(ValidateJobSpec(unset).ok());
}

}  // namespace
}  // namespace skrull::api
