// The torch-free half of checkpoints: trainer_state.json, the commit protocol
// and how a resume folder is found after crashes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/train/checkpoint.h"

namespace skrull::train {
namespace {

namespace fs = std::filesystem;

class CheckpointDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("skrull_ckpt_dir_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Commits a checkpoint of `step` holding one small file and its state.
  std::string Commit(int64_t step) {
    auto r = CommitCheckpoint(dir_.string(), step, [&](const std::string& tmp) {
      SKRULL_RETURN_IF_ERROR(WriteFileAtomically(tmp + "/weights.bin", "w" + std::to_string(step)));
      TrainerState s;
      s.step = step;
      return WriteFileAtomically(tmp + "/" + kTrainerStateFile, TrainerStateToJson(s));
    });
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : "";
  }
  std::string Resolve(const std::string& from) {
    auto r = ResolveResumeDir(dir_.string(), from);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && r->has_value() ? fs::path(**r).filename().string() : "<none>";
  }

  fs::path dir_;
};

TEST(TrainerState, JsonRoundTripKeepsEveryField) {
  TrainerState s;
  s.step = 31;
  s.sampler_seed = 18446744073709551615ull;
  s.data_position = 31;
  s.rng_state_hex = "00ff";
  s.loss_history = {2.5, std::nan(""), 1.25};
  s.loss_history_first_step = 28;
  s.job_spec_hash = "abc";
  s.initial_loss = 5.5;
  s.tokens = 123456789;
  s.train_seconds = 12.5;
  s.rollbacks_dacp = 1;
  s.rollbacks_gds = 2;
  auto back = ParseTrainerStateJson(TrainerStateToJson(s), "t.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->step, 31);
  EXPECT_EQ(back->sampler_seed, s.sampler_seed);
  EXPECT_EQ(back->rng_state_hex, "00ff");
  ASSERT_EQ(back->loss_history.size(), 3u);
  EXPECT_TRUE(std::isnan(back->loss_history[1]));
  EXPECT_EQ(back->loss_history[2], 1.25);
  EXPECT_EQ(back->loss_history_first_step, 28);
  EXPECT_EQ(back->tokens, 123456789);
  EXPECT_EQ(TrainerStateToJson(*back), TrainerStateToJson(s));
}

// A checkpoint written while the state counted runtime roll-backs (always 0)
// still resumes; the state no longer carries them.
TEST(TrainerState, AStateWithTheOldRuntimeRollbacksStillParses) {
  TrainerState s;
  s.rng_state_hex = "00ff";
  s.job_spec_hash = "abc";
  auto j = nlohmann::json::parse(TrainerStateToJson(s));
  EXPECT_FALSE(j["rollbacks"].contains("runtime"));
  j["rollbacks"]["runtime"] = 0;
  auto back = ParseTrainerStateJson(j.dump(), "t.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(TrainerStateToJson(*back), TrainerStateToJson(s));
}

TEST(TrainerState, MissingFieldIsNamed) {
  auto r = ParseTrainerStateJson(R"({"schema": 1, "step": 3})", "x/trainer_state.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("x/trainer_state.json: sampler_seed: required field missing"),
            std::string::npos)
      << r.status();
}

TEST_F(CheckpointDirTest, CommitWritesStepFolderAndLatest) {
  std::string d = Commit(5);
  EXPECT_EQ(fs::path(d).filename(), "step-5");
  EXPECT_TRUE(fs::exists(fs::path(d) / kTrainerStateFile));
  EXPECT_FALSE(fs::exists(d + ".tmp"));
  EXPECT_EQ(*ReadFileToString(CheckpointsRoot(dir_.string()) + "/latest"), "step-5\n");
  EXPECT_EQ(Resolve("latest"), "step-5");
  Commit(10);
  EXPECT_EQ(Resolve("latest"), "step-10");
}

TEST_F(CheckpointDirTest, EmptyResumeFromAndNoCheckpointMeanFreshRun) {
  EXPECT_EQ(Resolve(""), "<none>");
  EXPECT_EQ(Resolve("latest"), "<none>");
}

TEST_F(CheckpointDirTest, LeftoverTmpFolderFromACrashIsIgnoredAndReplaced) {
  Commit(5);
  // A crash while writing step 10: a partial tmp folder with a torn file.
  fs::create_directories(CheckpointDir(dir_.string(), 10) + ".tmp");
  std::ofstream(CheckpointDir(dir_.string(), 10) + ".tmp/model.safetensors") << "torn";
  EXPECT_EQ(Resolve("latest"), "step-5");
  // The next commit of step 10 replaces the leftover.
  Commit(10);
  EXPECT_EQ(Resolve("latest"), "step-10");
  EXPECT_FALSE(fs::exists(CheckpointDir(dir_.string(), 10) + ".tmp"));
  EXPECT_FALSE(fs::exists(CheckpointDir(dir_.string(), 10) + "/model.safetensors"));
}

TEST_F(CheckpointDirTest, FailingWriterLeavesLastGoodCheckpoint) {
  Commit(5);
  auto r = CommitCheckpoint(dir_.string(), 10, [](const std::string& tmp) {
    std::ofstream(tmp + "/model.safetensors") << "half";
    return IoError("disk full");
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "disk full");
  EXPECT_FALSE(fs::exists(CheckpointDir(dir_.string(), 10)));
  EXPECT_EQ(Resolve("latest"), "step-5");
}

TEST_F(CheckpointDirTest, StaleOrMissingLatestFallsBackToNewestCompleteStep) {
  Commit(5);
  Commit(10);
  // Crash between the folder rename and the `latest` update, seen as: latest
  // names a folder that is gone.
  ASSERT_TRUE(WriteFileAtomically(CheckpointsRoot(dir_.string()) + "/latest", "step-15\n").ok());
  EXPECT_EQ(Resolve("latest"), "step-10");
  fs::remove(CheckpointsRoot(dir_.string()) + "/latest");
  EXPECT_EQ(Resolve("latest"), "step-10");
  // A folder without trainer_state.json is not a checkpoint.
  fs::create_directories(CheckpointDir(dir_.string(), 20));
  EXPECT_EQ(Resolve("latest"), "step-10");
}

TEST_F(CheckpointDirTest, RecommittingAStepReplacesIt) {
  Commit(5);
  Commit(5);
  EXPECT_EQ(*ReadFileToString(CheckpointDir(dir_.string(), 5) + "/weights.bin"), "w5");
  EXPECT_FALSE(fs::exists(CheckpointDir(dir_.string(), 5) + ".old"));
}

TEST_F(CheckpointDirTest, ExplicitFolderMustExistAndBeComplete) {
  auto missing = ResolveResumeDir(dir_.string(), (dir_ / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("spec.training.resumeFrom"), std::string::npos);
  fs::create_directories(dir_ / "empty");
  auto empty = ResolveResumeDir(dir_.string(), (dir_ / "empty").string());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  std::string d = Commit(7);
  EXPECT_EQ(Resolve(d), "step-7");
}

}  // namespace
}  // namespace skrull::train
