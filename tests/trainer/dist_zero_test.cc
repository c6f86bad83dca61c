// ZeRO stages 1 and 2 (spec.training.zeroStage, trainer/train/zero_optimizer.h)
// on real processes (Gloo on loopback): the weights after N steps equal
// stage 0's (fp32: relative difference < 1e-6) at DP2xCP1, DP1xCP2 and
// DP2xCP2 under skrull and cp-all; sharded checkpoints resume exactly, and at
// another world size by re-sharding.
//
// All tensor work happens in forked children; the parent compares the
// summaries and the final checkpoints' safetensors (torch-free).
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/file_util.h"
#include "tests/trainer/checkpoint_test_util.h"
#include "tests/trainer/dist_equivalence_harness.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/dist/distributed_trainer.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/testing/fork_ranks.h"
#include "trainer/train/checkpoint.h"
#include "trainer/train/collectives.h"
#include "trainer/train/trainer.h"
#include "trainer/train/zero_optimizer.h"

namespace skrull::dist {
namespace {

namespace fs = std::filesystem;

using equivalence::BimodalJsonl;
using equivalence::kSteps;
using equivalence::RunResult;
using equivalence::RunSpec;
using equivalence::Train;

// A run of the ZeRO tests: weight decay on (the optimizer state matters),
// resumable, and with CP=2 a bucket that shards the long samples.
RunSpec ZeroRun(int dp, int cp, const std::string& policy, int stage, int64_t stop_after = 0,
                const std::string& tag = "") {
  RunSpec r;
  r.dp = dp;
  r.cp = cp;
  r.policy = policy;
  r.bucket = cp == 2 ? 120 : 200;
  r.zero_stage = stage;
  r.weight_decay = 0.1;
  r.resume_latest = true;
  r.stop_after = stop_after;
  r.tag = tag;
  return r;
}

// The largest ||w_got - w_want|| / ||w_want|| over the model's tensors.
double WorstRelativeDifference(const RunResult& got, const RunResult& want,
                               const std::string& name) {
  EXPECT_EQ(got.weights.size(), want.weights.size()) << name;
  double worst = 0;
  for (const auto& [tensor, values] : want.weights) {
    auto it = got.weights.find(tensor);
    if (it == got.weights.end() || it->second.size() != values.size()) {
      ADD_FAILURE() << name << ": tensor " << tensor << " missing or resized";
      return INFINITY;
    }
    double diff = 0, norm = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const double d = static_cast<double>(it->second[i]) - values[i];
      diff += d * d;
      norm += static_cast<double>(values[i]) * values[i];
    }
    worst = std::max(worst, std::sqrt(diff / std::max(norm, 1e-30)));
  }
  return worst;
}

class ZeroTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("skrull_zero_" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
             std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ / "config.json") << train::testing::TinyConfigJson();
    std::ofstream(root_ / "data.jsonl") << BimodalJsonl(48, 11);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }
  fs::path root_;
};

TEST_F(ZeroTest, StagesOneAndTwoGiveStageZerosWeightsOnEveryLayoutAndPolicy) {
  for (const std::string policy : {"skrull", "cp-all"}) {
    for (const auto& [dp, cp] : std::vector<std::pair<int, int>>{{2, 1}, {1, 2}, {2, 2}}) {
      const RunResult stage0 = Train(root_, ZeroRun(dp, cp, policy, 0));
      ASSERT_EQ(stage0.losses.size(), static_cast<size_t>(kSteps));
      for (int stage : {1, 2}) {
        const RunSpec spec = ZeroRun(dp, cp, policy, stage);
        const RunResult got = Train(root_, spec);
        ASSERT_EQ(got.losses.size(), static_cast<size_t>(kSteps)) << spec.Name();
        for (int s = 0; s < kSteps; ++s) {
          EXPECT_NEAR(got.losses[s], stage0.losses[s], 1e-6 * std::abs(stage0.losses[s]))
              << spec.Name() << " step " << s;
        }
        const double rel = WorstRelativeDifference(got, stage0, spec.Name());
        EXPECT_LT(rel, 1e-6) << spec.Name();
        std::cout << "[zero] " << spec.Name()
                  << ": max relative weight difference vs stage 0 = " << rel << std::endl;
        EXPECT_EQ(got.summary["zero_stage"], stage);
        EXPECT_LT(got.summary["static_memory_bytes"].get<int64_t>(),
                  stage0.summary["static_memory_bytes"].get<int64_t>())
            << spec.Name();
      }
    }
  }
}

TEST_F(ZeroTest, ShardedCheckpointsResumeExactlyAndReshardToAnotherWorldSize) {
  const RunResult straight = Train(root_, ZeroRun(2, 1, "skrull", 2));
  // Preempted after 2 steps, then resumed by the same job.
  RunSpec split = ZeroRun(2, 1, "skrull", 2, /*stop_after=*/2, "-split");
  Train(root_, split);
  const std::string ckpt = train::CheckpointDir((root_ / split.Name() / "out").string(), 2);
  ASSERT_TRUE(fs::exists(fs::path(ckpt) / train::ZeroShardFileName(0, 2)));
  ASSERT_TRUE(fs::exists(fs::path(ckpt) / train::ZeroShardFileName(1, 2)));
  EXPECT_FALSE(fs::exists(ckpt + ".shards"));
  split.stop_after = 0;
  const RunResult resumed = Train(root_, split);
  EXPECT_EQ(WorstRelativeDifference(resumed, straight, "resumed"), 0.0);

  // The 2-rank checkpoint resumed by 1 rank (and by DP2 x CP2: 4 ranks).
  for (const auto& [dp, cp] : std::vector<std::pair<int, int>>{{1, 1}, {2, 2}}) {
    const RunSpec other = ZeroRun(dp, cp, "skrull", 2, 0, "-reshard");
    const fs::path out = root_ / other.Name() / "out";
    fs::create_directories(out);
    fs::copy(root_ / split.Name() / "out" / "checkpoints", out / "checkpoints",
             fs::copy_options::recursive);
    fs::remove_all(out / "checkpoints" / "step-4");
    ASSERT_TRUE(WriteFileAtomically((out / "checkpoints" / "latest").string(), "step-2\n").ok());
    const RunResult got = Train(root_, other);
    EXPECT_EQ(got.summary["resumed_from"], (out / "checkpoints" / "step-2").string());
    EXPECT_LT(WorstRelativeDifference(got, straight, other.Name()), 1e-6) << other.Name();
  }
}

}  // namespace
}  // namespace skrull::dist
