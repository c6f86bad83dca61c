#include "trainer/train/train_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace skrull::train {
namespace {

TEST(TrainSummary, JsonHasTheContractFieldsAndNullForNonFinite) {
  TrainSummary s;
  s.job = "j";
  s.steps = 3;
  s.initial_loss = 5.5;
  s.final_loss = std::nan("");
  s.tokens = 100;
  s.policy = "skrull";
  s.dp = 2;
  s.cp = 4;
  s.rollbacks = {1, 2};
  s.history = {StepStats{0, 5.5, 1e-3}, StepStats{1, 4.5, 2e-3}};
  auto j = nlohmann::json::parse(SummaryToJson(s));
  for (const char* k : {"steps", "initial_loss", "final_loss", "tokens", "mean_iteration_seconds",
                        "tokens_per_second", "policy", "dp", "cp", "peak_memory_bytes"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_TRUE(j["final_loss"].is_null());
  EXPECT_EQ(j["rollbacks"], (nlohmann::json{{"dacp", 1}, {"gds", 2}}));
  EXPECT_EQ(j["losses"], (nlohmann::json{5.5, 4.5}));
  EXPECT_EQ(j["cp"], 4);
}

TEST(TrainSummary, ProgressLineShowsStepLossLrThroughputAndEta) {
  StepStats st;
  st.step = 11;
  st.loss = 3.21449;
  st.lr = 2.4e-3;
  st.grad_norm = 1.2344;
  st.seconds = 0.35;
  EXPECT_EQ(ProgressLine(st, 60, 6.0, 69000, 12),
            "step 12/60 loss 3.2145 lr 2.40e-03 grad_norm 1.234 tokens/s 11.5k step 0.35s eta 24s");
}

TEST(TrainSummary, Formats) {
  EXPECT_EQ(FormatCount(950), "950");
  EXPECT_EQ(FormatCount(12345), "12.3k");
  EXPECT_EQ(FormatCount(2.5e6), "2.5M");
  EXPECT_EQ(FormatDuration(42), "42s");
  EXPECT_EQ(FormatDuration(130), "2m10s");
  EXPECT_EQ(FormatDuration(7300), "2h01m");
  EXPECT_EQ(FormatDuration(std::nan("")), "?");
}

}  // namespace
}  // namespace skrull::train
