// `skrull-plan bucket`: the memory model's BucketSize from the command line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/cli/commands.h"
#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/model_config.h"

namespace skrull::scheduler::cli {
namespace {

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

Result Bucket(std::vector<std::string> args) {
  args.insert(args.begin(), "bucket");
  std::ostringstream out, err;
  Result r;
  r.exit_code = RunCli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::vector<std::string> Qwen7b(const std::string& stage) {
  return {"--model", "qwen2.5-7b",   "--dp", "4",           "--cp",
          "8",       "--zero-stage", stage,  "--precision", "bf16"};
}

std::vector<std::string> Json(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  return args;
}

TEST(SkrullPlanBucket, Qwen7bStageZeroOnH100ExitsTwoNamingTheStageThatFits) {
  const Result r = Bucket(Json(Qwen7b("0")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--zero-stage 0: static memory 113.5 GiB per rank fills the 69.7 GiB "
                       "budget of h100-sxm-80gb"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--zero-stage 1 fits (static 31.0 GiB, bucket_size_tokens 5,892)"),
            std::string::npos)
      << r.err;
  const auto j = nlohmann::json::parse(r.out);  // the report is printed all the same
  EXPECT_EQ(j["bucket_size_tokens"], 0);
  EXPECT_EQ(j["fits"], false);
  EXPECT_EQ(j["lowest_fitting_zero_stage"], 1);
}

TEST(SkrullPlanBucket, Qwen7bStageTwoGetsABucketSizeOfThePapersOrder) {
  const Result r = Bucket(Json(Qwen7b("2")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // The paper profiled 13K with selective recompute (arXiv 2505.19609 Sec. 5);
  // the model without recompute gives 7,987: same order, stated not tuned.
  EXPECT_EQ(j["bucket_size_tokens"], 7987);
  EXPECT_EQ(j["fits"], true);
  EXPECT_EQ(j["shard_ranks"], 32);
  EXPECT_EQ(j["device_memory_bytes"], 81559.0 * (1 << 20));
}

TEST(SkrullPlanBucket, JsonFiguresAreTheCostModelsThatTheSchedulerAndTrainerUse) {
  const Result r = Bucket(Json(Qwen7b("1")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  CostModelOptions o;
  o.zero_stage = 1;
  o.dp_for_sharding = 32;
  const CostModel cost(ModelPreset("qwen2.5-7b").value(), o);
  EXPECT_DOUBLE_EQ(j["static_bytes"]["total"].get<double>(), cost.StaticMemoryBytes());
  EXPECT_DOUBLE_EQ(j["activation_bytes_per_token"].get<double>(), cost.ActivationBytesPerToken());
  EXPECT_EQ(j["bucket_size_tokens"], cost.BucketSizeTokens(H100Profile().device_memory_bytes, 0.1));
  const double parts = j["static_bytes"]["weights"].get<double>() +
                       j["static_bytes"]["gradients"].get<double>() +
                       j["static_bytes"]["optimizer"].get<double>();
  EXPECT_DOUBLE_EQ(parts, cost.StaticMemoryBytes());
}

TEST(SkrullPlanBucket, LoraAndRecomputeEachRaiseTheBucketSize) {
  auto bucket = [](std::vector<std::string> extra) {
    std::vector<std::string> args = Json(Qwen7b("2"));
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = Bucket(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["bucket_size_tokens"].get<int64_t>();
  };
  const int64_t plain = bucket({});
  EXPECT_GT(bucket({"--lora-rank", "16"}), plain);
  EXPECT_GT(bucket({"--recompute", "full"}), plain);
  EXPECT_LT(bucket({"--memory-fraction", "0.5"}), plain);
}

TEST(SkrullPlanBucket, NoStageFitsOnOneRankNamesTheWaysOut) {
  const Result r = Bucket({"--model", "qwen2.5-7b", "--dp", "1", "--cp", "1", "--zero-stage", "2",
                           "--precision", "fp32"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no ZeRO stage up to 2 fits at DP x CP = 1 ranks; add ranks, use LoRA"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("bucket_size_tokens"), std::string::npos) << r.out;
}

TEST(SkrullPlanBucket, TextReportNamesEveryQuantity) {
  const Result r = Bucket(Qwen7b("2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"ZeRO-2 over 32 ranks", "static bytes per rank", "17.3 GiB",
                        "activation bytes per token", "6.7 MiB", "bucket_size_tokens", "7,987"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

TEST(SkrullPlanBucket, ProfileWithoutDeviceMemoryExitsTwoNamingTheField) {
  HardwareProfile p = H100Profile();
  p.device_memory_bytes = 0;
  const std::string path =
      ::testing::TempDir() + "/no_memory_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << ToJson(p);
  std::vector<std::string> args = Qwen7b("2");
  args.insert(args.end(), {"--hardware", path});
  const Result r = Bucket(args);
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ": no \"device_memory_bytes\""), std::string::npos) << r.err;
}

TEST(SkrullPlanBucket, BadFlagsAreReportedTogether) {
  const Result r = Bucket({"--dp", "4", "--cp", "8", "--zero-stage", "3", "--precision", "fp16",
                           "--lora-modules", "q_proj,w_proj", "--memory-fraction", "1.5"});
  EXPECT_EQ(r.exit_code, 2);
  for (const char* s : {"--model: required", "--zero-stage: expected an integer in [0, 2]",
                        "--precision: precision must be 'bf16' or 'fp32' (got 'fp16')",
                        "--lora-modules: unknown module 'w_proj'",
                        "--memory-fraction: expected a number in (0, 1] (got '1.5')"}) {
    EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
  }
}

}  // namespace
}  // namespace skrull::scheduler::cli
