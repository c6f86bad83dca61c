// The equivalence harness shared by the Gloo (dist_equivalence_test) and
// NCCL (dist_gpu_nccl_equivalence_test) tests: a tiny Llama, a bimodal
// dataset, a job per (policy, DP x CP) layout, training in forked ranks,
// and the comparison of per-step losses and final weights against a
// single-process reference.
//
// All tensor work happens in forked children; the parent compares the
// summaries and the final checkpoints' safetensors (torch-free).
#ifndef SKRULL_TESTS_TRAINER_DIST_EQUIVALENCE_HARNESS_H_
#define SKRULL_TESTS_TRAINER_DIST_EQUIVALENCE_HARNESS_H_

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/file_util.h"
#include "scheduler/plan.h"
#include "tests/trainer/checkpoint_test_util.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/dist/distributed_trainer.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/testing/fork_ranks.h"
#include "trainer/train/collectives.h"
#include "trainer/train/trainer.h"

namespace skrull::dist::equivalence {

namespace fs = std::filesystem;

inline constexpr int kSteps = 4;
inline constexpr int kGlobalBatch = 8;

inline std::string TinyConfigJson() {
  return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64,
  "max_position_embeddings": 4096, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
  "tie_word_embeddings": false, "torch_dtype": "float32"})";
}

// Bimodal lengths: mostly 4..40 tokens, every third sample 100..180; a
// quarter of the samples mask their first half's labels.
inline std::string BimodalJsonl(int n, uint32_t seed) {
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
  int64_t bucket = 200;
  int gpus_per_proc = 0;       // spec.resources.gpusPerProc (> 0: NCCL in a CUDA build)
  std::string device = "cpu";  // TrainerOptions::device
  int zero_stage = 0;          // spec.training.zeroStage
  double weight_decay = 0;     // spec.training.weightDecay (written when > 0)
  bool resume_latest = false;  // spec.training.resumeFrom: latest
  int64_t stop_after = 0;      // TrainerOptions::stop_after_steps (0: all steps)
  std::string tag{};           // distinguishes runs of the same layout
  std::string data_yaml{};     // more lines under spec.data, indented 4 (e.g. eval)
  std::string Name() const {
    return policy + "-dp" + std::to_string(dp) + "-cp" + std::to_string(cp) +
           (zero_stage > 0 ? "-zero" + std::to_string(zero_stage) : "") + tag;
  }
};

inline std::string WriteJob(const fs::path& root, const RunSpec& r) {
  const fs::path dir = root / r.Name();
  fs::create_directories(dir);
  std::ostringstream y;
  y << "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata:\n  name: " << r.Name() << "\n"
    << "spec:\n  model:\n    config: " << (root / "config.json").string() << "\n    seed: 3\n"
    << "  data:\n    path: " << (root / "data.jsonl").string() << "\n    format: tokenized-jsonl\n"
    << r.data_yaml << "  parallelism:\n    nodes: 1\n    procsPerNode: " << r.dp * r.cp
    << "\n    dataParallel: " << r.dp << "\n    contextParallel: " << r.cp << "\n"
    << "  scheduler:\n    policy: " << r.policy << "\n    bucketSize: " << r.bucket
    << "\n    batchSize: " << kGlobalBatch / r.dp << "\n    seed: 1\n"
    << "  training:\n    steps: " << kSteps << "\n    learningRate: 0.01\n    warmupSteps: 1\n"
    << "    zeroStage: " << r.zero_stage << "\n";
  if (r.weight_decay > 0) y << "    weightDecay: " << r.weight_decay << "\n";
  if (r.resume_latest) y << "    resumeFrom: latest\n";
  y << "    outputDir: " << (dir / "out").string() << "\n"
    << "  resources:\n    gpusPerProc: " << r.gpus_per_proc << "\n  metrics:\n    port: 0\n";
  const std::string path = (dir / "job.yaml").string();
  std::ofstream(path) << y.str();
  return path;
}

struct RunResult {
  std::vector<double> losses;
  std::map<std::string, std::vector<float>> weights;
  nlohmann::json comm;     // rank 0's comm.json (multi-process runs)
  nlohmann::json summary;  // rank 0's summary.json
};

using PlanRewrite = std::function<Status(scheduler::Plan*)>;

// Trains `r` in forked processes; returns rank 0's losses and the final
// weights. `rewrite`, when set, rewrites every step's plan before it runs
// (TrainerOptions::plan_hook_for_testing).
inline RunResult Train(const fs::path& root, const RunSpec& r, PlanRewrite rewrite = nullptr) {
  const std::string job_file = WriteJob(root, r);
  const int world = r.dp * r.cp;
  Status st = testing::RunForkedJobRanks(
      job_file, world, r.Name(),
      [&](const api::JobSpec& job, const RankEnv& env) -> Status {
        std::ostringstream quiet;
        train::TrainerOptions options;
        options.device = r.device;
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
        dopts.trainer.plan_hook_for_testing = rewrite;
        return RunDistributedTrainer(job, env, dopts).status();
      },
      std::chrono::seconds(120));
  EXPECT_TRUE(st.ok()) << r.Name() << ": " << st;
  RunResult out;
  const std::string out_dir = (root / r.Name() / "out").string();
  const std::string summary_path =
      world == 1 ? out_dir + "/summary.json" : RankSummaryPath(out_dir, 0);
  auto text = ReadFileToString(summary_path);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return out;
  out.summary = nlohmann::json::parse(*text);
  for (const auto& l : out.summary["losses"]) out.losses.push_back(l.get<double>());
  if (world > 1) {
    auto comm = ReadFileToString(RankCommPath(out_dir, 0));
    EXPECT_TRUE(comm.ok()) << comm.status();
    if (comm.ok()) out.comm = nlohmann::json::parse(*comm);
  }
  auto tensors = train::testing::LatestCheckpointTensors(out_dir);
  EXPECT_TRUE(tensors.ok()) << tensors.status();
  if (!tensors.ok()) return out;
  for (const auto& [name, tensor] : *tensors) {
    EXPECT_EQ(tensor.dtype, model::DType::kF32) << name;
    std::vector<float> values(tensor.data.size() / sizeof(float));
    std::memcpy(values.data(), tensor.data.data(), values.size() * sizeof(float));
    out.weights[name] = std::move(values);
  }
  return out;
}

// How close a run must come to the reference: relative per-step loss and
// absolute final-weight differences.
struct Tolerance {
  double loss_rel = 1e-4;
  double weight_abs = 1e-4;
};

inline void ExpectSameTraining(const RunResult& got, const RunResult& want, const std::string& name,
                               Tolerance tol = {}) {
  ASSERT_EQ(got.losses.size(), static_cast<size_t>(kSteps)) << name;
  ASSERT_EQ(want.losses.size(), static_cast<size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) {
    const double rel = std::abs(got.losses[s] - want.losses[s]) / std::abs(want.losses[s]);
    EXPECT_LT(rel, tol.loss_rel) << name << " step " << s << ": loss " << got.losses[s] << " vs "
                                 << want.losses[s];
  }
  ASSERT_EQ(got.weights.size(), want.weights.size()) << name;
  double worst = 0;
  std::string worst_name;
  for (const auto& [tensor, values] : want.weights) {
    auto it = got.weights.find(tensor);
    ASSERT_NE(it, got.weights.end()) << name << ": missing " << tensor;
    ASSERT_EQ(it->second.size(), values.size()) << name << ": " << tensor;
    for (size_t i = 0; i < values.size(); ++i) {
      const double d = std::abs(static_cast<double>(it->second[i]) - values[i]);
      if (d > worst) {
        worst = d;
        worst_name = tensor;
      }
    }
  }
  // Weights are O(0.1-1); after a few AdamW steps at lr 1e-2 summation-order
  // noise stays orders of magnitude below one update.
  EXPECT_LT(worst, tol.weight_abs)
      << name << ": weights differ by " << worst << " in " << worst_name;
  std::cout << "[equivalence] " << name << ": max |dw| = " << worst << ", losses";
  for (double l : got.losses) std::cout << " " << l;
  std::cout << std::endl;
}

}  // namespace skrull::dist::equivalence

#endif  // SKRULL_TESTS_TRAINER_DIST_EQUIVALENCE_HARNESS_H_
