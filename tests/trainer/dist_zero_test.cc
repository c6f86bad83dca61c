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

constexpr int kSteps = 4;
constexpr int kGlobalBatch = 8;

// Bimodal lengths (as dist_equivalence_test): with CP=2 and bucket 120 the
// long samples are sharded.
std::string BimodalJsonl(int n, uint32_t seed) {
  return train::testing::LearnableJsonl(
      n,
      [](int i, std::mt19937& rng) {
        return i % 3 == 2 ? std::uniform_int_distribution<int>(100, 180)(rng)
                          : std::uniform_int_distribution<int>(4, 40)(rng);
      },
      seed);
}

struct RunSpec {
  int dp = 1;
  int cp = 1;
  std::string policy = "skrull";
  int stage = 0;
  int64_t stop_after = 0;  // TrainerOptions::stop_after_steps
  std::string tag;         // distinguishes runs of the same layout
  std::string Name() const {
    return policy + "-dp" + std::to_string(dp) + "-cp" + std::to_string(cp) + "-zero" +
           std::to_string(stage) + tag;
  }
};

std::string WriteJob(const fs::path& root, const RunSpec& r) {
  const fs::path dir = root / r.Name();
  fs::create_directories(dir);
  std::ostringstream y;
  y << "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata:\n  name: zero\n"
    << "spec:\n  model:\n    config: " << (root / "config.json").string() << "\n    seed: 3\n"
    << "  data:\n    path: " << (root / "data.jsonl").string() << "\n    format: tokenized-jsonl\n"
    << "  parallelism:\n    nodes: 1\n    procsPerNode: " << r.dp * r.cp
    << "\n    dataParallel: " << r.dp << "\n    contextParallel: " << r.cp << "\n"
    << "  scheduler:\n    policy: " << r.policy << "\n    bucketSize: " << (r.cp == 2 ? 120 : 200)
    << "\n    batchSize: " << kGlobalBatch / r.dp << "\n    seed: 1\n"
    << "  training:\n    steps: " << kSteps << "\n    learningRate: 0.01\n    warmupSteps: 1\n"
    << "    weightDecay: 0.1\n    zeroStage: " << r.stage << "\n    resumeFrom: latest\n"
    << "    outputDir: " << (dir / "out").string() << "\n"
    << "  resources:\n    gpusPerProc: 0\n  metrics:\n    port: 0\n";
  const std::string path = (dir / "job.yaml").string();
  std::ofstream(path) << y.str();
  return path;
}

struct RunResult {
  std::vector<double> losses;
  nlohmann::json summary;
  std::map<std::string, std::vector<float>> weights;
};

RunResult Train(const fs::path& root, const RunSpec& r) {
  const std::string job_file = WriteJob(root, r);
  const int world = r.dp * r.cp;
  Status st = testing::RunForkedJobRanks(
      job_file, world, r.Name(),
      [&](const api::JobSpec& job, const RankEnv& env) -> Status {
        std::ostringstream quiet;
        train::TrainerOptions options;
        options.device = "cpu";
        options.serve_metrics = false;
        options.log = &quiet;
        options.stop_after_steps = r.stop_after;
        if (world == 1) {
          SKRULL_ASSIGN_OR_RETURN(RankLayout ctx, RankLayout::Make(job.parallelism, 0));
          train::LocalCollectives coll;
          return train::RunTrainer(job, ctx, &coll, options).status();
        }
        DistributedRunOptions dopts;
        dopts.trainer = options;
        return RunDistributedTrainer(job, env, dopts).status();
      },
      std::chrono::seconds(120));
  EXPECT_TRUE(st.ok()) << r.Name() << ": " << st;
  RunResult out;
  const std::string out_dir = (root / r.Name() / "out").string();
  auto text =
      ReadFileToString(world == 1 ? out_dir + "/summary.json" : RankSummaryPath(out_dir, 0));
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return out;
  out.summary = nlohmann::json::parse(*text);
  for (const auto& l : out.summary["losses"]) out.losses.push_back(l.get<double>());
  auto tensors = train::testing::LatestCheckpointTensors(out_dir);
  EXPECT_TRUE(tensors.ok()) << tensors.status();
  if (!tensors.ok()) return out;
  for (const auto& [name, tensor] : *tensors) {
    std::vector<float> values(tensor.data.size() / sizeof(float));
    std::memcpy(values.data(), tensor.data.data(), values.size() * sizeof(float));
    out.weights[name] = std::move(values);
  }
  return out;
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
      const RunResult stage0 = Train(root_, RunSpec{dp, cp, policy, 0, 0, ""});
      ASSERT_EQ(stage0.losses.size(), static_cast<size_t>(kSteps));
      for (int stage : {1, 2}) {
        const RunSpec spec{dp, cp, policy, stage, 0, ""};
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
  const RunResult straight = Train(root_, RunSpec{2, 1, "skrull", 2, 0, ""});
  // Preempted after 2 steps, then resumed by the same job.
  RunSpec split{2, 1, "skrull", 2, /*stop_after=*/2, "-split"};
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
    const RunSpec other{dp, cp, "skrull", 2, 0, "-reshard"};
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
