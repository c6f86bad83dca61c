#include "scheduler/hardware_profile.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

std::string ReadSourceFile(const std::string& relative) {
  const char* root = std::getenv("SKRULL_SOURCE_DIR");
  const std::string path = std::string(root ? root : ".") + "/" + relative;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(HardwareProfile, ShippedH100JsonEqualsH100Profile) {
  for (const auto& [file, kernel] : {std::pair{"h100.json", AttentionKernel::kFa2},
                                     std::pair{"h100-fa3.json", AttentionKernel::kFa3}}) {
    const std::string path = std::string("scheduler/profiles/") + file;
    const std::string text = ReadSourceFile(path);
    ASSERT_FALSE(text.empty()) << path << " not found; set SKRULL_SOURCE_DIR";
    EXPECT_EQ(text, ToJson(H100Profile(kernel)))
        << "regenerate " << path << " from ToJson(H100Profile(...))";
    auto parsed = ParseHardwareProfileJson(text, file);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(ToJson(*parsed), text);
  }
}

TEST(HardwareProfile, H100UsesPublishedPeakAndNamesItsSources) {
  const HardwareProfile p = H100Profile();
  EXPECT_DOUBLE_EQ(p.peak_flops_per_second, 989e12);
  for (const char* source : {"989 TFLOP/s", "2407.08608", "2505.19609", "Table 5",
                             "nccl-tests issue 212", "nccl-tests issue 290", "ml-engineering"}) {
    EXPECT_NE(p.source_notes.find(source), std::string::npos) << source;
  }
}

TEST(HardwareProfile, H100PricesNvlinkWithinANodeAndTheNetworkAcrossNodes) {
  // The paper's Table 5 is no longer fitted (bench_cost_model_validation
  // compares it with these figures); only its latencies are kept.
  const HardwareProfile p = H100Profile();
  const double gigabyte = 1 << 30;
  for (CollectiveOp op :
       {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter, CollectiveOp::kAllReduce}) {
    const double intra = p.CollectiveSeconds(op, gigabyte, 8);
    const double inter = p.CollectiveSeconds(op, gigabyte, 16);
    EXPECT_GT(inter, 7 * intra) << CollectiveOpName(op);  // 370-480 vs 47 GB/s
  }
  EXPECT_DOUBLE_EQ(p.collective(CollectiveOp::kAllReduce).latency_seconds, 64.4e-6);
}

TEST(HardwareProfile, CollectiveSecondsIsLatencyPlusBusBytesOverBandwidth) {
  const HardwareProfile p = testing::UnitProfile();  // 10 us + bytes / 1e9
  EXPECT_DOUBLE_EQ(p.CollectiveSeconds(CollectiveOp::kAllGather, 4e6, 4), 10e-6 + 4e6 * 0.75 / 1e9);
  EXPECT_DOUBLE_EQ(p.CollectiveSeconds(CollectiveOp::kAllReduce, 4e6, 4), 10e-6 + 4e6 * 1.5 / 1e9);
  EXPECT_EQ(p.CollectiveSeconds(CollectiveOp::kAllGather, 4e6, 1), 0);  // no peers
  EXPECT_EQ(p.CollectiveSeconds(CollectiveOp::kReduceScatter, 0, 8), 0);
}

TEST(HardwareProfile, InterpolatesEfficiencyAndClampsAtTheEnds) {
  const std::vector<std::pair<int64_t, double>> t = {{100, 0.2}, {200, 0.6}, {400, 0.8}};
  EXPECT_DOUBLE_EQ(HardwareProfile::Interpolate(t, 1), 0.2);
  EXPECT_DOUBLE_EQ(HardwareProfile::Interpolate(t, 150), 0.4);
  EXPECT_DOUBLE_EQ(HardwareProfile::Interpolate(t, 300), 0.7);
  EXPECT_DOUBLE_EQ(HardwareProfile::Interpolate(t, 400), 0.8);
  EXPECT_DOUBLE_EQ(HardwareProfile::Interpolate(t, 1 << 20), 0.8);
  HardwareProfile p = testing::UnitProfile();
  p.gemm_efficiency = t;
  p.attention_efficiency = {{1, 0.5}};
  EXPECT_DOUBLE_EQ(p.ComputeSeconds(4e11, 150), 4e11 / (1e12 * 0.4));
  EXPECT_DOUBLE_EQ(p.AttentionSeconds(1e12, 7), 2.0);
  EXPECT_EQ(p.ComputeSeconds(0, 150), 0);
}

TEST(HardwareProfile, JsonRoundTrips) {
  HardwareProfile p = testing::UnitProfile();
  p.gemm_efficiency = {{16, 0.125}, {1024, 0.5}};
  auto back = ParseHardwareProfileJson(ToJson(p), "unit.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToJson(*back), ToJson(p));
  EXPECT_EQ(back->gemm_efficiency, p.gemm_efficiency);
}

TEST(HardwareProfile, ParseReportsEveryProblemWithItsField) {
  auto p = ParseHardwareProfileJson(R"({"name": "x", "peak_flops_per_second": 0,
      "gemm_efficiency": [[100, 0.5], [50, 1.5]], "attention_efficiency": [],
      "all_gather": {"latency_seconds": 1e-5}, "reduce_scatter": {"latency_seconds": 1e-5,
      "bandwidth_bytes_per_second": 1e9}, "kernel_launch_seconds": 1e-6})",
                                    "bad.json");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = p.status().message();
  for (const char* want :
       {"bad.json", "peak_flops_per_second: must be > 0", "gemm_efficiency[1]: fraction of peak",
        "gemm_efficiency[1]: tokens must be strictly ascending",
        "attention_efficiency: must be a non-empty array",
        "all_gather.bandwidth_bytes_per_second: required field missing", "all_reduce: required"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << " in " << m;
  }
  EXPECT_FALSE(ParseHardwareProfileJson("[1,", "x.json").ok());
}

TEST(HardwareProfile, RejectsLaunchesPricedTwice) {
  // Both per-kernel launch costs would charge every launch twice (pricing.h,
  // LaunchCostPerMicroBatch); either alone is valid.
  HardwareProfile p = H100Profile();
  ASSERT_GT(p.cpu_seconds_per_kernel, 0);
  EXPECT_EQ(p.kernel_launch_seconds, 0);
  p.kernel_launch_seconds = 2e-6;
  auto both = ParseHardwareProfileJson(ToJson(p), "both.json");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("kernel_launch_seconds: must be 0 when "
                                         "cpu_seconds_per_kernel is set"),
            std::string::npos)
      << both.status();
  p.cpu_seconds_per_kernel = 0;
  EXPECT_TRUE(ParseHardwareProfileJson(ToJson(p), "serial.json").ok());
}

}  // namespace
}  // namespace skrull::scheduler
