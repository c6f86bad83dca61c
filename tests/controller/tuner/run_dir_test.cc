// The tuner's run-directory source against files in the trainer's formats:
// metrics lines come from the trainer's own writer (metrics::FormatStepLine);
// summary.json follows trainer/dist/run_summary.cc's layout.
#include "controller/tuner/run_dir.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "trainer/metrics/oom_record.h"
#include "trainer/metrics/step_record.h"

namespace skrull::tuner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kGiB = 1ull << 30;

class RunDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("skrull_tuner_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
  }

  // One metrics.jsonl line as the trainer writes it.
  static std::string Line(int rank, int64_t step, uint64_t tokens, uint64_t memory,
                          uint64_t capacity, uint64_t bucket = 4096) {
    metrics::StepLine l;
    l.job = "sft";
    l.rank = rank;
    l.cp_rank = rank;
    l.node = "host-a";
    l.time_unix_seconds = 1.7e9 + static_cast<double>(step);
    l.record.step = step;
    l.record.loss = 2.5;
    l.record.tokens = tokens;
    l.record.step_seconds = 0.5;
    l.record.rank_tokens_peak = tokens;
    l.record.bucket_size_tokens = bucket;
    l.record.memory_peak_bytes = memory;
    l.record.memory_capacity_bytes = capacity;
    l.rates = metrics::ComputeStepRates(l.record);
    return metrics::FormatStepLine(l);
  }

  // `line` as a trainer wrote it while lines had "rollbacks_runtime" (always
  // 0 there; a count here, which must change nothing).
  static std::string WithOldRuntimeRollbacks(const std::string& line, int count) {
    return "{\"rollbacks_runtime\": " + std::to_string(count) + ", " + line.substr(1);
  }

  // summary.json in the launcher's layout, two ranks on one node.
  static json LauncherSummary(const std::string& device, bool ok = true) {
    json rank_summary = {{"job", "sft"},
                         {"steps", 3},
                         {"initial_loss", 5.5},
                         {"final_loss", 1.6},
                         {"tokens_per_second", 22000.0},
                         {"bucket_size_tokens", 4096},
                         {"device", device},
                         {"peak_memory_bytes", 3 * kGiB},
                         {"rollbacks", {{"dacp", 2}, {"gds", 0}, {"runtime", 1}}}};
    json ranks = json::array();
    for (int r = 0; r < 2; ++r) {
      json s = rank_summary;
      s["rank"] = r;
      ranks.push_back({{"rank", r},
                       {"local_rank", r},
                       {"exit_code", 0},
                       {"signal", 0},
                       {"stopped_by_launcher", false},
                       {"log", "logs/rank-" + std::to_string(r) + ".log"},
                       {"summary", s}});
    }
    json j = {{"job", "sft"},
              {"ok", ok},
              {"world_size", 2},
              {"nnodes", 1},
              {"node_rank", 0},
              {"procs_per_node", 2},
              {"wall_seconds", 21.5},
              {"teardown_seconds", 0.0},
              {"interrupted_by_signal", 0},
              {"failure", nullptr},
              {"ranks", ranks}};
    for (const auto& [k, v] : rank_summary.items()) j[k] = v;
    j["aggregate"] = json::object();
    return j;
  }

  fs::path dir_;
};

TEST_F(RunDirTest, ReadsEachRanksStepsAndSplitsHostMemoryBetweenTheNodesRanks) {
  Write("metrics.jsonl",
        Line(0, 0, 1000, 2 * kGiB, 64 * kGiB) +
            WithOldRuntimeRollbacks(Line(0, 1, 3000, 3 * kGiB, 64 * kGiB, 4096), 1));
  Write("metrics-rank1.jsonl",
        Line(1, 0, 900, 2 * kGiB, 64 * kGiB) + Line(1, 1, 2500, 3 * kGiB, 64 * kGiB, 4096));
  Write("summary.json", LauncherSummary("cpu").dump(2));
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->source, dir_.string());
  EXPECT_EQ(in->bucket_size_tokens, 4096);
  EXPECT_FALSE(in->died_of_memory);
  ASSERT_EQ(in->ranks.size(), 2u);
  EXPECT_EQ(in->ranks[0].rank, 0);
  EXPECT_EQ(in->ranks[0].steps, (std::vector<MemoryPoint>{{1000, 2 * kGiB}, {3000, 3 * kGiB}}));
  EXPECT_EQ(in->ranks[0].capacity_bytes, 32 * kGiB);
  EXPECT_EQ(in->ranks[0].capacity_note, "host memory 64.0 GiB shared by 2 ranks");
  EXPECT_EQ(in->ranks[1].steps, (std::vector<MemoryPoint>{{900, 2 * kGiB}, {2500, 3 * kGiB}}));
}

TEST_F(RunDirTest, DeviceCapacityIsNotSplitAndAMissingOneComesFromTheProfile) {
  Write("metrics.jsonl", Line(0, 0, 1000, 2 * kGiB, 80 * kGiB));
  Write("metrics-rank1.jsonl", Line(1, 0, 1000, 2 * kGiB, 0));
  Write("summary.json", LauncherSummary("cuda:0").dump());
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->ranks[0].capacity_bytes, 80 * kGiB);
  EXPECT_EQ(in->ranks[0].capacity_note, "");
  EXPECT_EQ(in->ranks[1].capacity_bytes, 0u);

  api::JobSpec job;
  job.parallelism.procs_per_node = 2;
  job.scheduler.hardware_profile = Path("profile.json");
  Write("profile.json", R"({"name": "x", "memory": {"capacity_bytes": 85899345920}})");
  in = ReadRunDirectoryForJob(dir_.string(), job);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->ranks[1].capacity_bytes, 80 * kGiB);
  EXPECT_EQ(in->ranks[1].capacity_note, "capacity from " + Path("profile.json"));

  Write("profile.json", R"({"name": "h100"})");
  in = ReadRunDirectoryForJob(dir_.string(), job);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().message(),
            "rank 1 reported no memory capacity, so the tuner needs "
            "spec.scheduler.hardwareProfile's: " +
                Path("profile.json") +
                ": memory: required for the memory capacity; a shipped profile has "
                "none: measure one with `skrull-trainer --profile --job FILE --out profile.json`");
}

TEST_F(RunDirTest, RanksWithoutASummaryRanOnTheSameKindOfDevice) {
  Write("metrics.jsonl", Line(0, 0, 1000, 2 * kGiB, 80 * kGiB));
  Write("metrics-rank1.jsonl", Line(1, 0, 1000, 2 * kGiB, 80 * kGiB));
  json s = LauncherSummary("cuda:0", false);
  s["ranks"][1]["summary"] = nullptr;  // rank 1 failed
  Write("summary.json", s.dump());
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->ranks[1].capacity_bytes, 80 * kGiB);  // device memory: not shared
}

TEST_F(RunDirTest, TuneRunDirectoryDecidesWithTheJobsTuningSpec) {
  // Rank 0 of a CPU pair: 1 GiB + 1 MiB/token of 64 GiB / 2 ranks.
  std::string lines;
  for (int step = 0; step < 4; ++step) {
    const uint64_t tokens = 1000 + 1000 * static_cast<uint64_t>(step);
    lines += Line(0, step, tokens, kGiB + tokens * (1 << 20), 64 * kGiB);
  }
  Write("metrics.jsonl", lines);
  Write("summary.json", LauncherSummary("cpu").dump());
  api::JobSpec job;
  job.parallelism.procs_per_node = 2;
  job.tuning.enabled = true;
  job.tuning.target_memory_fraction = 0.5;  // 16 GiB: (16 - 1) GiB / 1 MiB = 15360 tokens
  job.tuning.max_bucket_size_tokens = 6000;
  StatusOr<TuningDecision> d = TuneRunDirectory(dir_.string(), job);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NEAR(d->model_tokens, 15360, 1e-6);
  EXPECT_EQ(d->recommended_bucket_size_tokens, 5888);  // 6000 rounded down to 256
  EXPECT_NE(d->reason.find("(host memory 64.0 GiB shared by 2 ranks)"), std::string::npos)
      << d->reason;
}

TEST_F(RunDirTest, AFailureKilledBySigkillIsAnOutOfMemoryDeath) {
  Write("metrics.jsonl", Line(0, 0, 1000, 2 * kGiB, 64 * kGiB));
  json s = LauncherSummary("cpu", false);
  s["failure"] = {{"rank", 1},
                  {"exit_code", 0},
                  {"signal", SIGKILL},
                  {"description", "signal 9 (Killed)"},
                  {"log", "logs/rank-1.log"},
                  {"log_tail", "step 3/60 loss 2.1\n"}};
  Write("summary.json", s.dump());
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_TRUE(in->died_of_memory);
  EXPECT_EQ(in->failure,
            "rank 1: signal 9 (Killed); signal 9 (Killed), which is what the kernel's OOM killer "
            "sends");
}

TEST_F(RunDirTest, AnAllocationFailureInTheLogIsAnOutOfMemoryDeath) {
  json s = LauncherSummary("cuda:0", false);
  s["failure"] = {{"rank", 0},
                  {"exit_code", 1},
                  {"signal", 0},
                  {"description", "exit code 1"},
                  {"log_tail",
                   "step 1/60\nskrull-trainer: libtorch error on rank 0: CUDA out of memory. "
                   "Tried to allocate 2.00 GiB\n"}};
  Write("summary.json", s.dump());
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_TRUE(in->died_of_memory);
  EXPECT_EQ(in->failure,
            "rank 0: exit code 1; log: skrull-trainer: libtorch error on rank 0: CUDA out of "
            "memory. Tried to allocate 2.00 GiB");
  EXPECT_TRUE(in->ranks.empty());  // died before its first step
}

TEST(MemoryFailureEvidence, RecognisesKillsAndAllocationFailuresOnly) {
  EXPECT_NE(MemoryFailureEvidence(SIGKILL, ""), "");
  EXPECT_EQ(MemoryFailureEvidence(0, "x\nterminate called after std::bad_alloc\ny"),
            "log: terminate called after std::bad_alloc");
  EXPECT_EQ(MemoryFailureEvidence(0, "OSError: [Errno 12] Cannot allocate memory"),
            "log: OSError: [Errno 12] Cannot allocate memory");
  EXPECT_EQ(MemoryFailureEvidence(SIGSEGV, "Segmentation fault"), "");
  EXPECT_EQ(MemoryFailureEvidence(0, "data.jsonl:3: not JSON"), "");
}

TEST_F(RunDirTest, WithoutASummaryTheLastStepGivesTheBucketSize) {
  Write("metrics.jsonl", Line(0, 0, 1000, 2 * kGiB, 64 * kGiB, 2048));
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->bucket_size_tokens, 2048);
  EXPECT_EQ(in->ranks[0].capacity_bytes, 64 * kGiB);  // one rank: nothing to share
}

TEST_F(RunDirTest, ReadsASingleProcessTrainerSummary) {
  Write("summary.json", R"({"job": "sft", "steps": 60, "initial_loss": 5.5, "final_loss": 1.6,
    "tokens_per_second": 900.5, "bucket_size_tokens": 2048, "rank": 0, "world_size": 1,
    "device": "cpu", "peak_memory_bytes": 1000, "rollbacks": {"dacp": 0, "gds": 0, "runtime": 4},
    "stopped_early": false})");
  StatusOr<RunSummary> s = ReadRunSummary(Path("summary.json"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->ok);
  EXPECT_EQ(s->steps, 60);
  EXPECT_DOUBLE_EQ(s->tokens_per_second, 900.5);
  ASSERT_EQ(s->ranks.size(), 1u);
  EXPECT_EQ(s->ranks[0].device, "cpu");
}

TEST_F(RunDirTest, ABadMetricsFieldNamesTheFileLineAndField) {
  std::string bad = Line(0, 1, 1000, 2 * kGiB, 64 * kGiB);
  bad.replace(bad.find("\"memory_peak_bytes\":"), std::string("\"memory_peak_bytes\":").size(),
              "\"memory_peak_bytes\":\"lots\",\"x\":");
  Write("metrics.jsonl", Line(0, 0, 1000, 2 * kGiB, 64 * kGiB) + bad);
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(in.status().message(), Path("metrics.jsonl") +
                                       ":2: memory_peak_bytes: must be an integer "
                                       "(got \"lots\")");
}

TEST_F(RunDirTest, AMissingMetricsFieldIsRequired) {
  StatusOr<std::vector<StepMemory>> steps =
      ParseMetricsJsonl("{\"schema\":1,\"rank\":0,\"step\":0}\n", "m.jsonl");
  ASSERT_FALSE(steps.ok());
  EXPECT_EQ(steps.status().message(), "m.jsonl:1: rank_tokens_peak: required field missing");
}

TEST_F(RunDirTest, AnUnparsableLineNamesItsLineAndColumn) {
  const std::string text = Line(0, 0, 1, 2, 3) + "\n{\"schema\": 1, oops}\n";
  StatusOr<std::vector<StepMemory>> steps = ParseMetricsJsonl(text, "m.jsonl");
  ASSERT_FALSE(steps.ok());
  EXPECT_EQ(steps.status().message(),
            "m.jsonl:3:15: not JSON: syntax error while parsing object key - invalid literal; "
            "last read: '1, o'; expected string literal");
}

TEST_F(RunDirTest, ATornLastLineFromAKilledWriterIsDropped) {
  const std::string line = Line(0, 0, 1000, 2 * kGiB, 64 * kGiB);
  bool truncated = false;
  StatusOr<std::vector<StepMemory>> steps =
      ParseMetricsJsonl(line + line.substr(0, 40), "m.jsonl", &truncated);
  ASSERT_TRUE(steps.ok()) << steps.status();
  EXPECT_EQ(steps->size(), 1u);
  EXPECT_TRUE(truncated);
  // The same text with its newline is a real error.
  steps = ParseMetricsJsonl(line + line.substr(0, 40) + "\n", "m.jsonl");
  EXPECT_FALSE(steps.ok());
}

TEST_F(RunDirTest, AnotherSchemaIsRefused) {
  StatusOr<std::vector<StepMemory>> steps = ParseMetricsJsonl("{\"schema\":2}\n", "m.jsonl");
  ASSERT_FALSE(steps.ok());
  EXPECT_EQ(steps.status().message(),
            "m.jsonl:1: schema 2 is not supported (this controller reads schema 1); use a "
            "controller as new as the trainer");
}

TEST_F(RunDirTest, ABadSummaryFieldNamesItsPath) {
  json s = LauncherSummary("cpu");
  s["ranks"][1]["summary"]["peak_memory_bytes"] = -5;
  Write("summary.json", s.dump());
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().message(), Path("summary.json") +
                                       ": ranks[1].summary.peak_memory_bytes: must be "
                                       ">= 0 (got -5)");
}

TEST_F(RunDirTest, ASummaryThatIsNotJsonNamesLineAndColumn) {
  Write("summary.json", "{\n  \"job\": \"sft\",\n  \"ok\": tru\n}\n");
  StatusOr<RunSummary> s = ReadRunSummary(Path("summary.json"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message().rfind(
                Path("summary.json") + ":3:12: not JSON: syntax error while parsing value", 0),
            0u)
      << s.status();
}

TEST_F(RunDirTest, AnEmptyDirectoryIsNotFound) {
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), StatusCode::kNotFound);
  EXPECT_NE(in.status().message().find("no summary.json and no metrics.jsonl"), std::string::npos);
  StatusOr<RunSummary> s = ReadRunSummary(Path("summary.json"));
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
}

TEST_F(RunDirTest, MetricsFilesComeInRankOrder) {
  for (const char* name : {"metrics-rank10.jsonl", "metrics.jsonl", "metrics-rank2.jsonl",
                           "metrics-rankx.jsonl", "metrics.jsonl.tmp", "summary.json"}) {
    Write(name, "");
  }
  EXPECT_EQ(MetricsFiles(dir_.string()),
            (std::vector<std::string>{Path("metrics.jsonl"), Path("metrics-rank2.jsonl"),
                                      Path("metrics-rank10.jsonl")}));
}

TEST_F(RunDirTest, AProfileWithoutAUsableCapacityIsAnError) {
  Write("p.json", R"({"memory": {"capacity_bytes": 0}})");
  EXPECT_EQ(ReadProfileCapacityBytes(Path("p.json")).status().message(),
            Path("p.json") + ": memory.capacity_bytes: must be >= 1 (got 0)");
  Write("p.json", R"({"memory": {"capacity_bytes": "80G"}})");
  EXPECT_EQ(ReadProfileCapacityBytes(Path("p.json")).status().message(),
            Path("p.json") + ": memory.capacity_bytes: must be an integer (got \"80G\")");
  EXPECT_EQ(ReadProfileCapacityBytes(Path("none.json")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace skrull::tuner

namespace skrull::tuner {
namespace {

// An out-of-memory record as the trainer writes it (metrics::WriteOomRecord).
metrics::OomRecord CudaOom(int rank, int64_t step) {
  metrics::OomRecord r;
  r.rank = rank;
  r.step = step;
  r.device = "cuda:" + std::to_string(rank);
  r.bucket_size_tokens = 16384;
  r.rank_tokens_planned = 16000;
  r.memory_peak_bytes = 79 * kGiB;
  r.memory_capacity_bytes = 80 * kGiB;
  r.message = "CUDA out of memory. Tried to allocate 2.00 GiB";
  return r;
}

// A CUDA run: the trainer reports the device's capacity itself, so no
// hardware profile is needed, and the record alone (a failed single process
// writes no summary.json) says the run died of memory.
TEST_F(RunDirTest, AnOutOfMemoryRecordMakesTheRunDieOfMemoryAndStepsDown) {
  Write("metrics.jsonl", Line(0, 0, 12000, 60 * kGiB, 80 * kGiB, 16384) +
                             Line(0, 1, 14000, 68 * kGiB, 80 * kGiB, 16384));
  ASSERT_TRUE(metrics::WriteOomRecord(dir_.string(), CudaOom(0, 2)).ok());
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_TRUE(in->died_of_memory);
  EXPECT_EQ(in->failure, "rank 0: out of memory at step 2 on cuda:0 (" + Path("oom.json") +
                             ": CUDA out of memory. Tried to allocate 2.00 GiB)");
  EXPECT_EQ(in->bucket_size_tokens, 16384);
  ASSERT_EQ(in->ranks.size(), 1u);
  EXPECT_EQ(in->ranks[0].capacity_bytes, 80 * kGiB) << "the device's, not split as host memory";
  StatusOr<TuningDecision> d = Tune(*in, api::TuningSpec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->change);
  EXPECT_LE(d->recommended_bucket_size_tokens, 13107) << "at most 0.8 x 16384: " << d->reason;
}

TEST_F(RunDirTest, OutOfMemoryRecordsAloneAreARunAndEveryRanksIsCounted) {
  ASSERT_TRUE(metrics::WriteOomRecord(dir_.string(), CudaOom(1, -1)).ok());
  ASSERT_TRUE(metrics::WriteOomRecord(dir_.string(), CudaOom(3, -1)).ok());
  StatusOr<std::vector<RankOutOfMemory>> records = ReadOutOfMemoryRecords(dir_.string());
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].rank, 1);
  EXPECT_EQ((*records)[1].path, Path("oom-rank3.json"));
  StatusOr<TuningInput> in = ReadRunDirectory(dir_.string());
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_TRUE(in->died_of_memory);
  EXPECT_EQ(in->failure.rfind("rank 1: out of memory while setting up on cuda:1 (", 0), 0u)
      << in->failure;
  EXPECT_NE(in->failure.find(" and 1 more rank(s)"), std::string::npos) << in->failure;
  StatusOr<TuningDecision> d = Tune(*in, api::TuningSpec());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->recommended_bucket_size_tokens, 13056) << "0.8 x 16384, in 256s: " << d->reason;
}

TEST_F(RunDirTest, ABadOutOfMemoryRecordIsAnErrorNamingTheFileAndField) {
  Write("oom.json", R"({"schema": 1, "rank": 0, "step": "x"})");
  EXPECT_EQ(ReadRunDirectory(dir_.string()).status().message(),
            Path("oom.json") + ": step: must be an integer (got \"x\")");
  Write("oom.json", R"({"schema": 2, "rank": 0, "step": 1})");
  EXPECT_NE(ReadRunDirectory(dir_.string())
                .status()
                .message()
                .find("oom.json: schema 2 is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace skrull::tuner
