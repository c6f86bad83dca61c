// Builders shared by the trainer/train tests: a tiny model config, a
// learnable tokenized dataset and a job spec, all in a temporary folder.
#ifndef SKRULL_TESTS_TRAINER_TRAIN_TEST_UTIL_H_
#define SKRULL_TESTS_TRAINER_TRAIN_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "scheduler/model_config.h"
#include "trainer/train/collectives.h"
#include "trainer/train/trainer.h"

namespace skrull::train::testing {

namespace fs = std::filesystem;

// A fresh folder removed at destruction.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("skrull_train_" + std::string(info ? info->name() : "x") +
                                         "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A 2-layer GQA Llama with a 64-token vocabulary.
inline std::string TinyConfigJson(bool tied = false) {
  return std::string(R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64,
  "max_position_embeddings": 4096, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
  "tie_word_embeddings": )") +
         (tied ? "true" : "false") + R"(, "torch_dtype": "float32"})";
}

inline scheduler::ModelConfig TinyConfig(bool tied = false) {
  auto c = scheduler::ParseHfConfigJson(TinyConfigJson(tied), "tiny");
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// `n` learnable samples: each counts up by a per-sample stride mod 61 from a
// random start, so the next token is predictable from the previous two.
// Sample i is length(i, rng) tokens long; every fourth sample masks its
// first half with -100 labels.
inline std::string LearnableJsonl(int n, const std::function<int(int, std::mt19937&)>& length,
                                  uint32_t seed) {
  std::mt19937 rng(seed);
  std::ostringstream out;
  for (int i = 0; i < n; ++i) {
    const int len = length(i, rng);
    const int start = std::uniform_int_distribution<int>(0, 60)(rng);
    const int stride = 1 + i % 3;
    out << "{\"input_ids\": [";
    for (int p = 0; p < len; ++p) out << (p ? ", " : "") << 3 + (start + p * stride) % 61;
    out << "]";
    if (i % 4 == 3) {
      out << ", \"labels\": [";
      for (int p = 0; p < len; ++p) {
        out << (p ? ", " : "") << (p < len / 2 ? -100 : 3 + (start + p * stride) % 61);
      }
      out << "]";
    }
    out << "}\n";
  }
  return out.str();
}

// The same with lengths uniform in [min_len, max_len].
inline std::string LearnableJsonl(int n, int min_len, int max_len, uint32_t seed = 7) {
  return LearnableJsonl(
      n,
      [&](int, std::mt19937& rng) {
        return std::uniform_int_distribution<int>(min_len, max_len)(rng);
      },
      seed);
}

struct JobFiles {
  int steps = 6;
  int batch_size = 4;
  int64_t bucket_size = 256;
  std::string policy = "skrull";
  int checkpoint_every = 0;
  std::string resume_from;
  double learning_rate = 1e-2;
  std::string extra_training;  // more YAML lines under training:, indented 4
  std::string lora;            // e.g. "{rank: 4, alpha: 8}"
};

// Writes config.json, data.jsonl (unless present) and job.yaml into `dir`;
// returns the job file path.
inline std::string WriteJob(const TempDir& dir, const JobFiles& f) {
  if (!fs::exists(dir / "config.json")) WriteText(dir / "config.json", TinyConfigJson());
  if (!fs::exists(dir / "data.jsonl")) WriteText(dir / "data.jsonl", LearnableJsonl(40, 4, 48));
  std::ostringstream y;
  y << "apiVersion: skrull.io/v1alpha1\n"
    << "kind: SkrullJob\n"
    << "metadata:\n  name: train-test\n"
    << "spec:\n"
    << "  model:\n    config: config.json\n    seed: 3\n";
  if (!f.lora.empty()) y << "    lora: " << f.lora << "\n";
  y << "  data:\n    path: data.jsonl\n    format: tokenized-jsonl\n"
    << "  parallelism:\n    nodes: 1\n    procsPerNode: 1\n    dataParallel: 1\n"
    << "    contextParallel: 1\n"
    << "  scheduler:\n    policy: " << f.policy << "\n    bucketSize: " << f.bucket_size
    << "\n    batchSize: " << f.batch_size << "\n    seed: 1\n"
    << "  training:\n    steps: " << f.steps << "\n    learningRate: " << f.learning_rate
    << "\n    warmupSteps: 2\n    outputDir: out\n    checkpointEvery: " << f.checkpoint_every
    << "\n";
  if (!f.resume_from.empty()) y << "    resumeFrom: " << f.resume_from << "\n";
  y << f.extra_training;
  y << "  resources:\n    gpusPerProc: 0\n"
    << "  metrics:\n    port: 0\n";
  const std::string path = dir / "job.yaml";
  WriteText(path, y.str());
  return path;
}

inline api::JobSpec LoadJob(const std::string& path) {
  auto job = api::LoadJobSpecFile(path);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : api::JobSpec();
}

// What a single-process RunTrainer (LocalCollectives, no /metrics server)
// returned, with the progress log it wrote.
struct TrainResult {
  Status status;
  TrainSummary summary;
  std::string log;
};

// Trains `job` in this process as rank 0 of 1. `stop_after` > 0 stops after
// that many steps (TrainerOptions::stop_after_steps).
inline TrainResult TrainInProcess(const api::JobSpec& job, int64_t stop_after = 0,
                                  TrainerOptions o = {}) {
  LocalCollectives coll;
  std::ostringstream log;
  o.serve_metrics = false;
  o.log = &log;
  o.stop_after_steps = stop_after;
  auto rank = dist::RankLayout::Make(job.parallelism, 0);
  EXPECT_TRUE(rank.ok()) << rank.status();
  TrainResult r;
  if (!rank.ok()) {
    r.status = rank.status();
    return r;
  }
  auto s = RunTrainer(job, *rank, &coll, o);
  r.log = log.str();
  if (s.ok()) {
    r.summary = *s;
  } else {
    r.status = s.status();
  }
  return r;
}

}  // namespace skrull::train::testing

#endif  // SKRULL_TESTS_TRAINER_TRAIN_TEST_UTIL_H_
