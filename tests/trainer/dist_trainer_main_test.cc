// End to end: `skrull-trainer --job FILE` for a 2-process job launches its
// ranks, trains, and aggregates the summaries; `--profile` writes a profile
// the scheduler reads. This test binary is its own trainer: run with
// SKRULL_TEST_AS_TRAINER=1 it is dist::TrainerMain (what skrull-trainer's
// main calls).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "scheduler/hardware_profile.h"
#include "trainer/dist/distributed_trainer.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/profile.h"
#include "trainer/dist/testing/processes.h"
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
    const pid_t pid = StartTrainer(args);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // Starts this binary as skrull-trainer with `args`; does not wait.
  pid_t StartTrainer(const std::vector<std::string>& args) {
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
    return pid;
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
  // Memory is per rank: the job's peaks are the largest rank's.
  for (const char* key : {"peak_memory_bytes", "peak_memory_allocated_bytes"}) {
    EXPECT_EQ(j[key], std::max(j["ranks"][0]["summary"][key].get<int64_t>(),
                               j["ranks"][1]["summary"][key].get<int64_t>()))
        << key;
  }
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

// Guards that an out-of-memory error raised inside a gradient hook of ONE rank
// (packing a bucket for the reduction that overlaps backward) ends every rank
// with exit status 3 and its out-of-memory record, instead of an Internal error
// on that rank and peers waiting for collectives that never come. Data
// parallel (dp 2), on the all-reduce reducer and on ZeRO stages 1 and 2.
TEST_F(TrainerMainTest, AnOutOfMemoryInOneRanksGradientHookEndsEveryRankWithExit3) {
  std::string yaml = *ReadFileToString(WriteJob("data.jsonl"));
  yaml.replace(yaml.find("dataParallel: 1"), 15, "dataParallel: 2");
  yaml.replace(yaml.find("contextParallel: 2"), 18, "contextParallel: 1");
  yaml.replace(yaml.find("bucketSize: 64"), 14, "bucketSize: 128");  // the 90-token samples
  for (int zero_stage : {0, 1, 2}) {
    SCOPED_TRACE("zeroStage " + std::to_string(zero_stage));
    std::string staged = yaml;
    staged.replace(staged.find("outputDir: out"), 14,
                   "outputDir: out\n    zeroStage: " + std::to_string(zero_stage));
    const std::string job = (dir_ / "job.yaml").string();
    std::ofstream(job) << staged;
    fs::remove_all(dir_ / "out");
    setenv("SKRULL_TEST_OOM_IN_GRAD_HOOK_AT_STEP", "1", 1);
    setenv("SKRULL_TEST_OOM_IN_GRAD_HOOK_RANK", "1", 1);
    const auto start = std::chrono::steady_clock::now();
    const int code = RunTrainer({"--job", job, "--no-metrics-server"});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    unsetenv("SKRULL_TEST_OOM_IN_GRAD_HOOK_AT_STEP");
    unsetenv("SKRULL_TEST_OOM_IN_GRAD_HOOK_RANK");
    EXPECT_EQ(code, 3);
    EXPECT_LT(seconds, 60) << "a rank waited for a collective until the timeout";
    for (const char* name : {"oom.json", "oom-rank1.json"}) {
      auto text = ReadFileToString((dir_ / "out" / name).string());
      ASSERT_TRUE(text.ok()) << text.status();
      auto record = nlohmann::json::parse(*text);
      EXPECT_EQ(record["step"], 1) << name;
    }
    const std::string own = *ReadFileToString((dir_ / "out" / "oom-rank1.json").string());
    EXPECT_NE(own.find("injected at step 1"), std::string::npos) << own;
    const std::string peer = *ReadFileToString((dir_ / "out" / "oom.json").string());
    EXPECT_NE(peer.find("other rank(s) ran out of memory"), std::string::npos) << peer;
  }
}

// Guards a 2-rank job whose outputDir is a file: refused with exit 2 before
// launching, not a launcher that cannot open the ranks' logs and exits 1.
TEST_F(TrainerMainTest, AnOutputDirThatIsAFileExits2BeforeLaunching) {
  const std::string job = WriteJob("data.jsonl");
  std::ofstream(dir_ / "out") << "a file\n";
  EXPECT_EQ(RunTrainer({"--job", job, "--no-metrics-server"}), 2);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "out"));
}

// Guards with real ranks that `kill -9` of the launcher does not leave its
// ranks training (holding ports, writing checkpoints, output going nowhere).
TEST_F(TrainerMainTest, RanksOfARealJobDieWithinSecondsWhenTheLauncherIsKilled) {
  std::string yaml = *ReadFileToString(WriteJob("data.jsonl"));
  yaml.replace(yaml.find("steps: 3"), 8, "steps: 1000000");  // trains until killed
  const std::string job = (dir_ / "job.yaml").string();
  std::ofstream(job) << yaml;
  const pid_t launcher = StartTrainer({"--job", job, "--no-metrics-server"});
  ASSERT_GT(launcher, 0);
  // Both ranks started and at least one is training (past rendezvous).
  std::vector<pid_t> ranks;
  const std::string log = (dir_ / "out" / "logs" / "rank-0.log").string();
  for (int i = 0; i < 12000; ++i) {  // up to 120 s on a loaded machine
    ranks = testing::ChildrenOf(launcher);
    auto text = ReadFileToString(log);
    if (ranks.size() == 2 && text.ok() && text->find("step ") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(ranks.size(), 2u) << ReadFileToString(log).status();

  ASSERT_EQ(kill(launcher, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  // The kernel signals them as the launcher exits; 5 s is margin for a
  // loaded machine (they would otherwise train for a million steps).
  EXPECT_TRUE(testing::WaitUntilGone(ranks, std::chrono::seconds(5)));
  for (pid_t pid : ranks) {
    EXPECT_FALSE(testing::ProcessIsAlive(pid)) << "rank pid " << pid << " outlived its launcher";
    if (testing::ProcessIsAlive(pid)) kill(pid, SIGKILL);
  }
}

TEST(TrainerCommandLine, ParsesNodeAndProfileFlagsBesideTheTrainersFlags) {
  StatusOr<TrainerCommandLine> cl =
      ParseTrainerCommandLine({"--job", "j.yaml", "--nnodes", "2", "--node-rank=1", "--master",
                               "host0:1234", "--steps", "3", "--profile", "--out", "p.json"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->trainer.job_file, "j.yaml");
  EXPECT_EQ(cl->trainer.steps, 3);
  EXPECT_EQ(cl->node.nnodes, 2);
  EXPECT_EQ(cl->node.node_rank, 1);
  EXPECT_EQ(cl->node.master_addr, "host0");
  EXPECT_EQ(cl->node.master_port, 1234);
  EXPECT_TRUE(cl->profile);
  EXPECT_EQ(cl->profile_out, "p.json");

  cl = ParseTrainerCommandLine({"--job", "j.yaml"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_FALSE(cl->node.nnodes.has_value());
  EXPECT_FALSE(cl->node.master_addr.has_value());
  EXPECT_FALSE(cl->profile);
}

TEST(TrainerCommandLine, BadFlagsAreCli11ErrorsNamingTheFlag) {
  EXPECT_EQ(ParseTrainerCommandLine({"--job", "j", "--nnodes"}).status().message(),
            "--nnodes: 1 required N missing");
  // CLI11 2.3 (Debian 12) says "range 0 to N", 2.4 (Debian 13) "range [0 - N]".
  EXPECT_EQ(ParseTrainerCommandLine({"--job", "j", "--node-rank", "-1"})
                .status()
                .message()
                .rfind("--node-rank: Value -1 not in range ", 0),
            0u);
  EXPECT_EQ(ParseTrainerCommandLine({"--job", "j", "--master", "h:99999"}).status().message(),
            "--master: port must be <= 65535 (got 99999)");
  EXPECT_EQ(ParseTrainerCommandLine({"--job", "j", "--bogus"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseTrainerCommandLine({"--help"})->trainer.help);
  const std::string usage = TrainerCommandLineUsage();
  for (const char* flag :
       {"--job", "--steps", "--output-dir", "--device", "--stop-after-steps", "--no-metrics-server",
        "--nnodes", "--node-rank", "--master", "--profile", "--out"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag << " missing from\n" << usage;
  }
}

TEST(CheckOutputDirUsable, AcceptsADirectoryOrAPathToCreateAndRefusesAFile) {
  const fs::path dir = fs::temp_directory_path() / ("skrull_outdir_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  EXPECT_TRUE(CheckOutputDirUsable(dir.string(), "o").ok());
  EXPECT_TRUE(CheckOutputDirUsable((dir / "new/deeper").string(), "o").ok());
  Status s = CheckOutputDirUsable((dir / "file").string(), "spec.training.outputDir");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec.training.outputDir: " + (dir / "file").string() +
                             " is a file, not a directory; name a directory (it is created when "
                             "missing) or move the file away");
  EXPECT_EQ(CheckOutputDirUsable((dir / "file/sub").string(), "o").code(),
            StatusCode::kInvalidArgument);
  fs::remove_all(dir);
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
