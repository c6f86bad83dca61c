// Per-step phase seconds and the gradient all-reduce overlapped with backward,
// on real 2-process runs (Gloo on loopback):
//   - every metrics.jsonl line's phases add up to its step time (the trainer
//     clamps compute and idle at 0, so a wait counted twice or outside the
//     step breaks the sum) and compute is not 0;
//   - CP=2 with distributed sequences: cp_comm_wait is not 0;
//   - DP=2 with one rank made slow before its forward pass: the other rank's
//     dp_comm_wait grows by about the delay, the slow rank's idle by at
//     least the delay, and its own dp_comm_wait stays below the other's;
//   - DP=2 with small gradient buckets: buckets go out during backward, and
//     the training is bit-for-bit the one that reduces after backward.
//
// All tensor work happens in forked children; the parent reads the files.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/file_util.h"
#include "tests/trainer/checkpoint_test_util.h"
#include "trainer/dist/distributed_trainer.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/testing/fork_ranks.h"
#include "trainer/metrics/step_record.h"

namespace skrull::dist {
namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 3;

class StepPhasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("skrull_step_phases_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ / "config.json")
        << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64,
        "max_position_embeddings": 4096, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
        "tie_word_embeddings": false, "torch_dtype": "float32"})";
    // Mostly short samples, every third one 100..180 tokens (sharded with
    // CP=2 and bucketSize 120).
    std::mt19937 rng(5);
    std::ofstream data(root_ / "data.jsonl");
    for (int i = 0; i < 32; ++i) {
      const int len = i % 3 == 2 ? std::uniform_int_distribution<int>(100, 180)(rng)
                                 : std::uniform_int_distribution<int>(4, 40)(rng);
      data << "{\"input_ids\": [";
      for (int p = 0; p < len; ++p) data << (p ? ", " : "") << 3 + (i + 7 * p) % 61;
      data << "]}\n";
    }
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  // Trains a 2-process job; returns its output folder. Rank `slow_rank`
  // (none when < 0) sleeps `slow_seconds` in every step after planning,
  // before its forward pass. `training_yaml`: more spec.training lines.
  std::string Train(const std::string& name, int dp, int cp, int64_t bucket_tokens,
                    const C10dCollectivesOptions& collectives, int slow_rank = -1,
                    double slow_seconds = 0, const std::string& training_yaml = "") {
    const fs::path dir = root_ / name;
    fs::create_directories(dir);
    std::ostringstream y;
    y << "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata:\n  name: " << name << "\n"
      << "spec:\n  model:\n    config: " << (root_ / "config.json").string() << "\n    seed: 3\n"
      << "  data:\n    path: " << (root_ / "data.jsonl").string()
      << "\n    format: tokenized-jsonl\n"
      << "  parallelism:\n    nodes: 1\n    procsPerNode: " << dp * cp
      << "\n    dataParallel: " << dp << "\n    contextParallel: " << cp << "\n"
      << "  scheduler:\n    policy: skrull\n    bucketSize: " << bucket_tokens
      << "\n    batchSize: " << 8 / dp << "\n    seed: 1\n"
      << "  training:\n    steps: " << kSteps << "\n    learningRate: 0.01\n    warmupSteps: 1\n"
      << "    outputDir: " << (dir / "out").string() << "\n"
      << training_yaml << "  resources:\n    gpusPerProc: 0\n  metrics:\n    port: 0\n";
    const std::string job_file = (dir / "job.yaml").string();
    std::ofstream(job_file) << y.str();
    Status st = testing::RunForkedJobRanks(
        job_file, dp * cp, name,
        [&](const api::JobSpec& job, const RankEnv& env) {
          std::ostringstream quiet;
          DistributedRunOptions o;
          o.trainer.device = "cpu";
          o.trainer.serve_metrics = false;
          o.trainer.log = &quiet;
          o.collectives = collectives;
          if (slow_rank >= 0) {
            // Every rank gets the same hook, which leaves the plan alone.
            const bool slow = env.layout.rank() == slow_rank;
            o.trainer.plan_hook_for_testing = [slow, slow_seconds](scheduler::Plan*) -> Status {
              if (slow) std::this_thread::sleep_for(std::chrono::duration<double>(slow_seconds));
              return OkStatus();
            };
          }
          return RunDistributedTrainer(job, env, o).status();
        },
        std::chrono::seconds(120));
    EXPECT_TRUE(st.ok()) << name << ": " << st;
    return (dir / "out").string();
  }

  fs::path root_;
};

std::vector<metrics::StepRecord> ReadRecords(const std::string& path) {
  std::vector<metrics::StepRecord> records;
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return records;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    auto parsed = metrics::ParseStepLine(line);
    EXPECT_TRUE(parsed.ok()) << path << ": " << parsed.status();
    if (parsed.ok()) records.push_back(parsed->record);
  }
  return records;
}

nlohmann::json ReadComm(const std::string& out_dir, int rank) {
  auto text = ReadFileToString(RankCommPath(out_dir, rank));
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

std::string MetricsPath(const std::string& out, int rank) {
  return out + (rank == 0 ? "/metrics.jsonl" : "/metrics-rank" + std::to_string(rank) + ".jsonl");
}

// compute = work - waits and idle = step - work - ... are clamped at 0 by the
// trainer, so ">= 0" cannot fail; the sum can: it equals the step only when
// both waits lie inside the work window and neither is counted twice.
void ExpectPhasesAddUpToTheStep(const metrics::StepRecord& r, const std::string& where) {
  const metrics::PhaseSeconds& p = r.phase_seconds;
  EXPECT_GT(p.compute, 0.0) << where;
  EXPECT_GT(r.step_seconds, 0.0) << where;
  const double sum = p.compute + p.cp_comm_wait + p.dp_comm_wait + p.idle;
  EXPECT_NEAR(sum, r.step_seconds, 1e-9 + 1e-9 * r.step_seconds)
      << where << ": compute " << p.compute << " + cp " << p.cp_comm_wait << " + dp "
      << p.dp_comm_wait << " + idle " << p.idle << " != step " << r.step_seconds;
}

TEST_F(StepPhasesTest, CpRunReportsCpWaitPerStepAndPhasesFitTheStep) {
  const std::string out = Train("cp2", 1, 2, 120, C10dCollectivesOptions());
  double cp_wait = 0, dp_wait = 0;
  int64_t distributed = 0;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path = MetricsPath(out, rank);
    const std::vector<metrics::StepRecord> records = ReadRecords(path);
    EXPECT_EQ(records.size(), static_cast<size_t>(kSteps)) << path;
    double rank_cp_wait = 0;
    metrics::PhaseSeconds sums;
    for (const metrics::StepRecord& r : records) {
      ExpectPhasesAddUpToTheStep(r, path + " step " + std::to_string(r.step));
      distributed += static_cast<int64_t>(r.distributed_sequences);
      rank_cp_wait += r.phase_seconds.cp_comm_wait;
      dp_wait += r.phase_seconds.dp_comm_wait;
      sums.compute += r.phase_seconds.compute;
      sums.cp_comm_wait += r.phase_seconds.cp_comm_wait;
      sums.dp_comm_wait += r.phase_seconds.dp_comm_wait;
      sums.idle += r.phase_seconds.idle;
    }
    cp_wait += rank_cp_wait;
    // summary.json's phase_seconds are the steps' phases added up.
    auto summary = ReadFileToString(RankSummaryPath(out, rank));
    EXPECT_TRUE(summary.ok()) << summary.status();
    if (summary.ok()) {
      const nlohmann::json p = nlohmann::json::parse(*summary)["phase_seconds"];
      EXPECT_NEAR(p["compute"].get<double>(), sums.compute, 1e-9) << "rank " << rank;
      EXPECT_NEAR(p["cp_comm_wait"].get<double>(), sums.cp_comm_wait, 1e-9) << "rank " << rank;
      EXPECT_NEAR(p["dp_comm_wait"].get<double>(), sums.dp_comm_wait, 1e-9) << "rank " << rank;
      EXPECT_NEAR(p["idle"].get<double>(), sums.idle, 1e-9) << "rank " << rank;
    }
    // comm.json keeps the run's totals; the steps' CP waits are all of it.
    const nlohmann::json comm = ReadComm(out, rank);
    if (!comm.is_null()) {
      EXPECT_GT(comm["cp"]["distributed_calls"].get<int64_t>(), 0);
      EXPECT_NEAR(rank_cp_wait, comm["cp"]["comm_wait_seconds"].get<double>(), 1e-9);
    }
  }
  EXPECT_GT(distributed, 0) << "no sequence was sharded; the test needs CP exchanges";
  EXPECT_GT(cp_wait, 0.0) << "cp_comm_wait stayed 0 on a CP=2 run with distributed sequences";
  EXPECT_GT(dp_wait, 0.0);
}

TEST_F(StepPhasesTest, ASlowRankShowsAsTheOtherRanksDpWaitAndItsOwnIdle) {
  // Seconds per step on rank 1: long against the noise of a loaded 2-core
  // machine (0.4 s once left rank 0 waiting 49% of it).
  constexpr double kDelay = 1.0;
  const std::string out = Train("dp2-slow", 2, 1, 200, C10dCollectivesOptions(), 1, kDelay);
  metrics::PhaseSeconds total[2];
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<metrics::StepRecord> records = ReadRecords(MetricsPath(out, rank));
    ASSERT_EQ(records.size(), static_cast<size_t>(kSteps)) << "rank " << rank;
    for (const metrics::StepRecord& r : records) {
      const std::string where = "rank " + std::to_string(rank) + " step " + std::to_string(r.step);
      ExpectPhasesAddUpToTheStep(r, where);
      if (rank == 1) {
        // The sleep lies inside the step but before the work window: idle.
        EXPECT_GE(r.phase_seconds.idle, kDelay) << where;
      }
      total[rank].dp_comm_wait += r.phase_seconds.dp_comm_wait;
      total[rank].idle += r.phase_seconds.idle;
    }
  }
  // Rank 0 reaches the gradient all-reduce about kDelay before rank 1 every
  // step; half of that allows for scheduling noise on a loaded machine.
  EXPECT_GE(total[0].dp_comm_wait, 0.5 * kDelay * kSteps)
      << "rank 0 waited " << total[0].dp_comm_wait << " s for a rank " << kDelay
      << " s late per step";
  EXPECT_LT(total[1].dp_comm_wait, total[0].dp_comm_wait)
      << "the slow rank should wait less than the one waiting for it";
  EXPECT_GT(total[1].idle, total[0].idle);
}

TEST_F(StepPhasesTest, OverlappedBucketsTrainBitForBitLikeReducingAfterBackward) {
  C10dCollectivesOptions overlapped;
  overlapped.bucket_bytes = 4096;  // the tiny model's ~70 KB of gradients in ~20 buckets
  C10dCollectivesOptions after = overlapped;
  after.overlap_with_backward = false;
  const std::string out_overlapped = Train("dp2-overlap", 2, 1, 200, overlapped);
  const std::string out_after = Train("dp2-after", 2, 1, 200, after);

  for (int rank = 0; rank < 2; ++rank) {
    const nlohmann::json a = ReadComm(out_overlapped, rank);
    const nlohmann::json b = ReadComm(out_after, rank);
    if (a.is_null() || b.is_null()) continue;
    const int64_t reductions = a["dp"]["gradient_allreduces"].get<int64_t>();
    EXPECT_EQ(reductions, kSteps);
    EXPECT_GT(a["dp"]["buckets"].get<int64_t>(), 2 * reductions) << "want > 2 buckets per step";
    EXPECT_GT(a["dp"]["buckets_during_backward"].get<int64_t>(), 0) << "rank " << rank;
    EXPECT_EQ(b["dp"]["buckets_during_backward"].get<int64_t>(), 0) << "rank " << rank;
    EXPECT_EQ(a["dp"]["bytes"], b["dp"]["bytes"]);
  }
  for (const std::string& out : {out_overlapped, out_after}) {
    for (const metrics::StepRecord& r : ReadRecords(out + "/metrics.jsonl")) {
      ExpectPhasesAddUpToTheStep(r, out + " step " + std::to_string(r.step));
      EXPECT_EQ(r.phase_seconds.cp_comm_wait, 0.0);
    }
  }

  // Same losses and weights, exactly.
  auto summary = [](const std::string& out) {
    auto text = ReadFileToString(RankSummaryPath(out, 0));
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? nlohmann::json::parse(*text)["losses"] : nlohmann::json();
  };
  EXPECT_EQ(summary(out_overlapped), summary(out_after));
  auto weights = [](const std::string& out) {
    auto w = train::testing::LatestCheckpointTensors(out);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *w : std::map<std::string, train::testing::CheckpointTensor>();
  };
  const auto wa = weights(out_overlapped);
  const auto wb = weights(out_after);
  EXPECT_FALSE(wa.empty());
  EXPECT_TRUE(wa == wb) << "overlapped reduction changed the weights";
}

// spec.training.gradReduceDtype reaches the trainer's collectives: half the
// gradient bytes, the same first loss (computed before any update) and
// losses close to float32's after (docs/architecture.md bounds each
// reduction; a few steps of AdamW keep the difference small).
TEST_F(StepPhasesTest, Bf16GradReduceDtypeHalvesTheGradientBytesAndTrainsClose) {
  const std::string out_fp32 = Train("dp2-fp32-wire", 2, 1, 200, C10dCollectivesOptions());
  const std::string out_bf16 = Train("dp2-bf16-wire", 2, 1, 200, C10dCollectivesOptions(), -1, 0,
                                     "    gradReduceDtype: bf16\n");
  for (int rank = 0; rank < 2; ++rank) {
    const nlohmann::json a = ReadComm(out_fp32, rank);
    const nlohmann::json b = ReadComm(out_bf16, rank);
    if (a.is_null() || b.is_null()) continue;
    EXPECT_GT(a["dp"]["bytes"].get<int64_t>(), 0);
    EXPECT_EQ(b["dp"]["bytes"].get<int64_t>() * 2, a["dp"]["bytes"].get<int64_t>())
        << "rank " << rank;
  }
  const std::vector<metrics::StepRecord> fp32 = ReadRecords(out_fp32 + "/metrics.jsonl");
  const std::vector<metrics::StepRecord> bf16 = ReadRecords(out_bf16 + "/metrics.jsonl");
  ASSERT_EQ(fp32.size(), bf16.size());
  ASSERT_FALSE(fp32.empty());
  EXPECT_EQ(fp32[0].loss, bf16[0].loss);
  bool differs = false;
  for (size_t i = 0; i < fp32.size(); ++i) {
    EXPECT_NEAR(bf16[i].loss, fp32[i].loss, 1e-2 * fp32[i].loss) << "step " << i;
    differs = differs || bf16[i].grad_norm != fp32[i].grad_norm;
  }
  EXPECT_TRUE(differs) << "the bf16 wire left every gradient norm bit-identical";
}

}  // namespace
}  // namespace skrull::dist
