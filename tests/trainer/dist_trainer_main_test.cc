// End to end: `skrull-trainer --job FILE` for a 2-process job launches its
// ranks, trains, and aggregates the summaries; `--profile` writes a profile
// the scheduler reads. This test binary is its own trainer: run with
// SKRULL_TEST_AS_TRAINER=1 it is dist::TrainerMain (what skrull-trainer's
// main calls).
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "scheduler/hardware_profile.h"
#include "trainer/dist/distributed_trainer.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/profile.h"
#include "trainer/dist/trainer_main.h"
#include "trainer/train/hardware_profile_file.h"
#include "trainer/train/trainer.h"

extern char** environ;

namespace skrull::dist {
namespace {

namespace fs = std::filesystem;

std::string Self() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

class TrainerMainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("skrull_trainer_main_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "config.json")
        << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 4096,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": false,
        "torch_dtype": "float32"})";
    std::mt19937 rng(3);
    std::ofstream data(dir_ / "data.jsonl");
    for (int i = 0; i < 24; ++i) {
      const int len = i % 3 == 0 ? 90 : 8 + static_cast<int>(rng() % 30);
      data << "{\"input_ids\": [";
      for (int p = 0; p < len; ++p) data << (p ? "," : "") << 3 + (i + p) % 60;
      data << "]}\n";
    }
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string WriteJob(const std::string& data_path) {
    std::ostringstream y;
    y << "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata:\n  name: e2e\nspec:\n"
      << "  model:\n    config: config.json\n  data:\n    path: " << data_path << "\n"
      << "  parallelism:\n    nodes: 1\n    procsPerNode: 2\n    dataParallel: 1\n"
      << "    contextParallel: 2\n"
      << "  scheduler:\n    policy: skrull\n    bucketSize: 64\n    batchSize: 6\n"
      << "  training:\n    steps: 3\n    learningRate: 0.01\n    outputDir: out\n"
      << "  resources:\n    gpusPerProc: 0\n  metrics:\n    port: 0\n";
    const std::string path = (dir_ / "job.yaml").string();
    std::ofstream(path) << y.str();
    return path;
  }

  // Runs this binary as skrull-trainer with `args`; returns its exit code.
  int RunTrainer(const std::vector<std::string>& args) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("SKRULL_TEST_AS_TRAINER", "1", 1);
      std::vector<std::string> storage = {Self()};
      storage.insert(storage.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& s : storage) argv.push_back(s.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  fs::path dir_;
};

TEST_F(TrainerMainTest, LaunchesTheRanksTrainsAndAggregates) {
  const std::string job = WriteJob("data.jsonl");
  ASSERT_EQ(RunTrainer({"--job", job, "--no-metrics-server"}), 0);
  const std::string out = (dir_ / "out").string();
  auto text = ReadFileToString(out + "/summary.json");
  ASSERT_TRUE(text.ok()) << text.status();
  auto j = nlohmann::json::parse(*text);
  EXPECT_TRUE(j["ok"].get<bool>());
  ASSERT_EQ(j["ranks"].size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(j["ranks"][r]["summary"]["steps"], 3);
    EXPECT_EQ(j["ranks"][r]["summary"]["cp"], 2);
    EXPECT_TRUE(fs::exists(RankCommPath(out, r)));
  }
  EXPECT_EQ(j["ranks"][0]["summary"]["losses"], j["ranks"][1]["summary"]["losses"]);
  // The trainer's summary fields are also at the top level.
  for (const char* key :
       {"steps", "initial_loss", "final_loss", "tokens", "mean_iteration_seconds",
        "tokens_per_second", "policy", "dp", "cp", "peak_memory_bytes", "rollbacks"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["steps"], 3);
  EXPECT_EQ(j["final_loss"], j["ranks"][0]["summary"]["final_loss"]);
  EXPECT_TRUE(fs::exists(out + "/checkpoints/latest"));
}

TEST_F(TrainerMainTest, AFailingRankFailsTheLaunchWithItsLog) {
  const std::string job = WriteJob("missing.jsonl");
  const int code = RunTrainer({"--job", job, "--no-metrics-server"});
  EXPECT_EQ(code, 2);  // the rank's exit code: bad input
  auto text = ReadFileToString((dir_ / "out" / "summary.json").string());
  ASSERT_TRUE(text.ok()) << text.status();
  auto j = nlohmann::json::parse(*text);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["failure"]["exit_code"], 2);
  EXPECT_NE(j["failure"]["log_tail"].get<std::string>().find("missing.jsonl: no such file"),
            std::string::npos)
      << j["failure"];
}

TEST_F(TrainerMainTest, ProfilesTheJobsDevicesAndGroups) {
  const std::string job = WriteJob("data.jsonl");
  const std::string out = (dir_ / "profile.json").string();
  ASSERT_EQ(RunTrainer({"--profile", "--job", job, "--out", out}), 0);
  auto text = ReadFileToString(out);
  ASSERT_TRUE(text.ok()) << text.status();
  auto hw = scheduler::ParseHardwareProfileJson(*text, out);
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_GT(hw->peak_flops_per_second, 0);
  EXPECT_GT(hw->all_gather.bandwidth_bytes_per_second, 0);
  auto loaded = train::LoadHardwareProfileFile(out);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_GE(loaded->bucket_size_tokens, 1024);  // spec.tuning's default minimum
  auto j = nlohmann::json::parse(*text);
  EXPECT_GT(j["memory"]["alpha_bytes_per_token"].get<double>(), 0);
  EXPECT_EQ(j["measurements"]["collectives"]["group_size_kv"], 2);
}

}  // namespace
}  // namespace skrull::dist

int main(int argc, char** argv) {
  if (std::getenv("SKRULL_TEST_AS_TRAINER") != nullptr) {
    return skrull::dist::TrainerMain(argc, argv, environ);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
