#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/cli/commands.h"
#include "scheduler/cli/flags.h"
#include "scheduler/cli/lengths_file.h"
#include "scheduler/cli/timeline.h"
#include "scheduler/cli/timeline_svg.h"
#include "scheduler/model_config.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::scheduler::cli {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("skrull_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::string p = (path_ / name).string();
    std::ofstream(p) << contents;
    return p;
  }
  std::string Path(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CliResult RunPlan(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliResult r;
  r.exit_code = RunCli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A mixed batch: mostly short, a few long (one needs CP to fit in 8K x 4).
std::string MixedBatch() {
  return "# a global batch\n"
         "900\n1200\n300\n\n"
         "20000   # long: must be distributed at an 8K bucket\n"
         "64\n5000\n700\n2048\n130\n7000\n450\n3100\n";
}
constexpr int kMixedBatchSize = 12;

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  return keys;
}

// Minimal XML well-formedness: every start tag closed in order.
bool WellFormedXml(const std::string& xml, std::string* why) {
  std::vector<std::string> stack;
  size_t pos = 0;
  while ((pos = xml.find('<', pos)) != std::string::npos) {
    size_t end = xml.find('>', pos);
    if (end == std::string::npos) {
      *why = "unterminated tag at " + std::to_string(pos);
      return false;
    }
    std::string tag = xml.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) {
        *why = "unexpected </" + name + ">";
        return false;
      }
      stack.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;
    stack.push_back(tag.substr(0, tag.find_first_of(" \t\n")));
  }
  if (!stack.empty()) {
    *why = "unclosed <" + stack.back() + ">";
    return false;
  }
  return true;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST(SkrullPlanSchedule, JsonMatchesSchemaAndPlacesEveryIdOnce) {
  TempDir dir;
  const std::string lengths = dir.Write("batch.txt", MixedBatch());
  for (Policy policy : AllPolicies()) {
    SCOPED_TRACE(PolicyName(policy));
    CliResult r =
        RunPlan({"schedule", "--lengths", lengths, "--dp", "2", "--cp", "4", "--bucket-size", "8K",
                 "--policy", PolicyName(policy), "--format", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(Keys(j), (std::set<std::string>{"policy", "dp", "cp", "bucket_size", "micro_batches",
                                              "rollbacks", "schedule_seconds"}));
    EXPECT_EQ(j["policy"], PolicyName(policy));
    EXPECT_EQ(j["dp"], 2);
    EXPECT_EQ(j["cp"], 4);
    EXPECT_EQ(j["bucket_size"], 8 * 1024);
    EXPECT_EQ(Keys(j["rollbacks"]), (std::set<std::string>{"dacp", "gds"}));
    EXPECT_TRUE(j["schedule_seconds"].is_number());
    const std::vector<int64_t> expected = {900, 1200, 300, 20000, 64,  5000,
                                           700, 2048, 130, 7000,  450, 3100};
    std::vector<int> seen(kMixedBatchSize, 0);
    ASSERT_TRUE(j["micro_batches"].is_array());
    for (const auto& mb : j["micro_batches"]) {
      EXPECT_EQ(Keys(mb), (std::set<std::string>{"dp_rank", "index", "sequences"}));
      EXPECT_GE(mb["dp_rank"].get<int>(), 0);
      EXPECT_LT(mb["dp_rank"].get<int>(), 2);
      for (const auto& s : mb["sequences"]) {
        EXPECT_EQ(Keys(s), (std::set<std::string>{"id", "length", "cp_rank"}));
        const int64_t id = s["id"].get<int64_t>();
        ASSERT_GE(id, 0);
        ASSERT_LT(id, kMixedBatchSize);
        ++seen[static_cast<size_t>(id)];
        EXPECT_EQ(s["length"].get<int64_t>(), expected[static_cast<size_t>(id)]) << "id " << id;
        const int cp_rank = s["cp_rank"].get<int>();
        EXPECT_TRUE(cp_rank == -1 || (cp_rank >= 0 && cp_rank < 4)) << cp_rank;
        if (id == 3) {
          EXPECT_EQ(cp_rank, -1) << "20000 tokens cannot sit whole in an 8K bucket";
        }
      }
    }
    for (int id = 0; id < kMixedBatchSize; ++id) EXPECT_EQ(seen[id], 1) << "id " << id;
  }
}

TEST(SkrullPlanSchedule, TextPrintsEveryDpAndCpRank) {
  TempDir dir;
  const std::string lengths = dir.Write("batch.txt", MixedBatch());
  CliResult r = RunPlan(
      {"schedule", "--lengths", lengths, "--dp", "2", "--cp", "4", "--bucket-size", "8192"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("policy skrull"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DP rank 0"), std::string::npos);
  EXPECT_NE(r.out.find("DP rank 1"), std::string::npos);
  EXPECT_NE(r.out.find("cp3"), std::string::npos);
  EXPECT_NE(r.out.find("simulated iteration"), std::string::npos);
}

TEST(SkrullPlanSchedule, WritesWellFormedSvgWithOneRowPerRank) {
  TempDir dir;
  const std::string lengths = dir.Write("batch.txt", MixedBatch());
  const std::string svg_path = dir.Path("plan.svg");
  CliResult r = RunPlan({"schedule", "--lengths", lengths, "--dp", "2", "--cp", "4",
                         "--bucket-size", "8K", "--format", "json", "--svg", svg_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = ReadFile(svg_path);
  ASSERT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 80);
  std::string why;
  EXPECT_TRUE(WellFormedXml(svg, &why)) << why;
  EXPECT_EQ(Count(svg, "class=\"rank-row\""), 8u);
  for (int d = 0; d < 2; ++d) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_NE(svg.find(">dp" + std::to_string(d) + " cp" + std::to_string(c) + "<"),
                std::string::npos);
    }
  }
  EXPECT_NE(svg.find("#3"), std::string::npos) << "sequence labels or tooltips are drawn";
}

TEST(SkrullPlanSchedule, BadLengthLineExitsTwoNamingFileAndLine) {
  TempDir dir;
  const std::string lengths = dir.Write("bad.txt", "# header\n100\n\n12x\n200\n-5\n");
  CliResult r =
      RunPlan({"schedule", "--lengths", lengths, "--dp", "1", "--cp", "2", "--bucket-size", "4K"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find(lengths + ":4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'12x'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(lengths + ":6:"), std::string::npos) << "reports every bad line: " << r.err;
}

TEST(SkrullPlanSchedule, MissingFileExitsTwoNamingIt) {
  TempDir dir;
  const std::string missing = dir.Path("nope.txt");
  CliResult r =
      RunPlan({"schedule", "--lengths", missing, "--dp", "1", "--cp", "2", "--bucket-size", "4K"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find("--lengths"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

TEST(SkrullPlanSchedule, SequenceLongerThanCpTimesBucketExitsTwo) {
  TempDir dir;
  const std::string lengths = dir.Write("long.txt", "100\n50000\n");
  CliResult r =
      RunPlan({"schedule", "--lengths", lengths, "--dp", "1", "--cp", "2", "--bucket-size", "4K"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find(lengths), std::string::npos) << r.err;
}

// Guards every policy against a length over the maximum (2^63-1 once
// overflowed the shard size, aborted skrull/round-robin/skrull-paper and
// printed negative token counts with exit 0 for cp-all/sorted/balanced-cp).
TEST(SkrullPlanSchedule, LengthAboveTheMaximumExitsTwoForEveryPolicy) {
  TempDir dir;
  for (const char* huge : {"9223372036854775807", "2147483648"}) {
    const std::string lengths = dir.Write("huge.txt", std::string("100\n") + huge + "\n");
    for (Policy policy : AllPolicies()) {
      CliResult r = RunPlan({"schedule", "--lengths", lengths, "--dp", "2", "--cp", "4",
                             "--bucket-size", "26K", "--policy", PolicyName(policy)});
      EXPECT_EQ(r.exit_code, kExitUsage) << PolicyName(policy) << " " << huge << ": " << r.out;
      EXPECT_NE(r.err.find(lengths + ":2: length exceeds the scheduler's maximum of "
                                     "2147483647 tokens"),
                std::string::npos)
          << r.err;
      EXPECT_EQ(r.out.find('-'), std::string::npos) << "no negative token counts: " << r.out;
    }
  }
}

// `--dp 65536 --cp 65536` used to abort on std::bad_alloc.
TEST(SkrullPlanFlags, SizeProductsAboveTheirMaximumExitTwoNamingTheFlags) {
  TempDir dir;
  const std::string lengths = dir.Write("b.txt", "100\n");
  const std::vector<std::string> common = {"--lengths", lengths, "--bucket-size", "26K"};
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"schedule", "--dp", "65536", "--cp", "65536"},
       "--dp x --cp = 4294967296 ranks exceeds the maximum 65536"},
      {{"schedule", "--dp", "65537", "--cp", "1"},
       "--dp: expected an integer in [1, 65536] (got '65537')"},
      {{"simulate", "--dp", "65536", "--cp", "1", "--batch-size", "16777216"},
       "--dp x --batch-size = 1099511627776 sequences per step exceeds the maximum 16777216"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), common.begin(), common.end());
    CliResult r = RunPlan(args);
    EXPECT_EQ(r.exit_code, kExitUsage) << c.expected;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  }
}

TEST(SkrullPlanSchedule, UnknownPolicyListsTheValidOnes) {
  TempDir dir;
  const std::string lengths = dir.Write("b.txt", "100\n");
  CliResult r = RunPlan({"schedule", "--lengths", lengths, "--dp", "1", "--cp", "2",
                         "--bucket-size", "4K", "--policy", "fastest"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find("--policy: unknown policy 'fastest'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cp-all"), std::string::npos) << r.err;
}

TEST(SkrullPlanSchedule, UnknownModelPresetExitsTwo) {
  TempDir dir;
  const std::string lengths = dir.Write("b.txt", "100\n");
  CliResult r = RunPlan({"schedule", "--lengths", lengths, "--dp", "1", "--cp", "2",
                         "--bucket-size", "4K", "--model", "gpt5"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find("--model: unknown preset 'gpt5'"), std::string::npos) << r.err;
}

TEST(SkrullPlanSchedule, AcceptsHuggingFaceConfigJsonAsModel) {
  TempDir dir;
  auto tiny = ModelPreset("tiny");
  ASSERT_TRUE(tiny.ok());
  const std::string config = dir.Write("config.json", ToHfConfigJson(*tiny));
  const std::string lengths = dir.Write("b.txt", "100\n300\n");
  CliResult r = RunPlan({"schedule", "--lengths", lengths, "--dp", "1", "--cp", "2",
                         "--bucket-size", "4K", "--model", config, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(SkrullPlanFlags, BadFlagsExitTwoAndNameEveryProblem) {
  CliResult r = RunPlan({"schedule", "--dp", "0", "--cp", "x", "--format", "xml", "--bogus", "1"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  for (const char* expected : {"--lengths: required", "--bucket-size: required",
                               "--dp:", "--cp:", "--format: must be 'text' or 'json' (got 'xml')",
                               "unknown flag '--bogus'", "--help"}) {
    EXPECT_NE(r.err.find(expected), std::string::npos) << expected << " in:\n" << r.err;
  }
}

TEST(SkrullPlanFlags, MissingValueAndUnknownCommandExitTwo) {
  CliResult no_value = RunPlan({"schedule", "--lengths"});
  EXPECT_EQ(no_value.exit_code, kExitUsage);
  EXPECT_NE(no_value.err.find("--lengths: 1 required TEXT missing"), std::string::npos)
      << no_value.err;  // CLI11's wording
  CliResult twice = RunPlan({"schedule", "--dp", "1", "--dp", "2"});
  EXPECT_EQ(twice.exit_code, kExitUsage);
  EXPECT_NE(twice.err.find("--dp: At Most 1 required but received 2"), std::string::npos)
      << twice.err;
  EXPECT_EQ(RunPlan({"plan"}).exit_code, kExitUsage);
  EXPECT_EQ(RunPlan({}).exit_code, kExitUsage);
  CliResult r = RunPlan({"simulate", "--lengths", "f", "--dp", "1", "--cp", "1", "--bucket-size",
                         "1K", "--policies", "skrull,,cp-all"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find("--batch-size: required"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--policies: empty name"), std::string::npos) << r.err;
}

TEST(SkrullPlanFlags, HelpPrintsUsageAndExitsZero) {
  CliResult top = RunPlan({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("usage:"), std::string::npos);
  CliResult sched = RunPlan({"schedule", "--dp", "3", "--help"});
  EXPECT_EQ(sched.exit_code, 0);
  EXPECT_NE(sched.out.find("--bucket-size"), std::string::npos);
  EXPECT_NE(sched.out.find("round-robin"), std::string::npos);
  CliResult sim = RunPlan({"help", "simulate"});
  EXPECT_EQ(sim.exit_code, 0);
  EXPECT_NE(sim.out.find("--batch-size"), std::string::npos);
}

TEST(SkrullPlanFlags, ParsesEqualsFormAndTokenSuffixes) {
  auto inv = ParseCommandLine({"simulate", "--lengths=data.txt", "--dp=4", "--cp", "8",
                               "--bucket-size=26K", "--batch-size", "64", "--steps", "3", "--seed",
                               "9", "--policies", "skrull, cp-all", "--format", "json"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->command, Command::kSimulate);
  EXPECT_EQ(inv->simulate.common.lengths_path, "data.txt");
  EXPECT_EQ(inv->simulate.common.topology.dp, 4);
  EXPECT_EQ(inv->simulate.common.topology.cp, 8);
  EXPECT_EQ(inv->simulate.common.bucket_size_tokens, 26624);
  EXPECT_EQ(inv->simulate.batch_size, 64);
  EXPECT_EQ(inv->simulate.steps, 3);
  EXPECT_EQ(inv->simulate.seed, 9u);
  EXPECT_EQ(inv->simulate.policies, (std::vector<std::string>{"skrull", "cp-all"}));
  EXPECT_EQ(inv->simulate.common.format, OutputFormat::kJson);
  EXPECT_EQ(inv->simulate.common.model, "qwen2.5-0.5b");
  EXPECT_EQ(*ParseTokenCount("--x", "1M"), 1 << 20);
  EXPECT_FALSE(ParseTokenCount("--x", "26KB").ok());
  EXPECT_FALSE(ParseTokenCount("--x", "0").ok());
}

TEST(SkrullPlanLengths, IdsCountOnlyDataLines) {
  auto lengths = ParseLengths("# c\n\n  10 \n20 # trailing\n\n30", "f.txt");
  ASSERT_TRUE(lengths.ok()) << lengths.status();
  EXPECT_EQ(*lengths, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_FALSE(ParseLengths("# only comments\n", "f.txt").ok());
  auto zero = ParseLengths("5\n0\n", "f.txt");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("f.txt:2: length must be > 0"), std::string::npos)
      << zero.status();
  auto round_trip = ParseLengths(FormatLengths({3, 1, 2}, "hello"), "x");
  ASSERT_TRUE(round_trip.ok());
  EXPECT_EQ(*round_trip, (std::vector<int64_t>{3, 1, 2}));
}

std::string Dataset(int n) {
  // Long-tail: mostly short, one in 25 long.
  std::string text;
  for (int i = 0; i < n; ++i)
    text += std::to_string(i % 25 == 0 ? 12000 + 37 * i : 200 + 13 * i) + "\n";
  return text;
}

TEST(SkrullPlanSimulate, JsonHasEveryPolicyWithItsStats) {
  TempDir dir;
  const std::string lengths = dir.Write("data.txt", Dataset(400));
  CliResult r =
      RunPlan({"simulate", "--lengths", lengths, "--dp", "2", "--cp", "4", "--bucket-size", "8K",
               "--batch-size", "16", "--steps", "3", "--seed", "5", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("policies"));
  ASSERT_TRUE(j.contains("lower_bound_seconds"));
  EXPECT_GT(j["lower_bound_seconds"].get<double>(), 0);
  ASSERT_TRUE(j.contains("tight_bound_seconds"));
  EXPECT_GT(j["tight_bound_seconds"].get<double>(), 0);
  for (Policy p : AllPolicies()) {
    SCOPED_TRACE(PolicyName(p));
    ASSERT_TRUE(j["policies"].contains(PolicyName(p)));
    const auto& s = j["policies"][PolicyName(p)];
    for (const char* key : {"mean_iteration_seconds", "tokens_per_second", "flops_imbalance"}) {
      ASSERT_TRUE(s.contains(key)) << key;
      EXPECT_GT(s[key].get<double>(), 0) << key;
    }
    EXPECT_EQ(Keys(s["rollbacks"]), (std::set<std::string>{"dacp", "gds"}));
    EXPECT_GE(s["mean_iteration_seconds"].get<double>(), j["lower_bound_seconds"].get<double>());
    EXPECT_GE(s["mean_iteration_seconds"].get<double>(), j["tight_bound_seconds"].get<double>());
  }
}

TEST(SkrullPlanSimulate, ZeroStageAndMicroBatchSizeChangeThePricing) {
  TempDir dir;
  const std::string lengths = dir.Write("data.txt", Dataset(400));
  const auto mean = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "simulate",         "--lengths", lengths,        "--dp", "2",       "--cp", "4",
        "--bucket-size",    "8K",        "--batch-size", "8",    "--steps", "2",    "--policies",
        "cp-all,deepspeed", "--format",  "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliResult r = RunPlan(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    return std::pair{j["policies"]["cp-all"]["mean_iteration_seconds"].get<double>(),
                     j["policies"]["deepspeed"]["mean_iteration_seconds"].get<double>()};
  };
  const auto stage0 = mean({});
  const auto stage2 = mean({"--zero-stage", "2"});
  EXPECT_NE(stage0.first, stage2.first) << "cp-all is priced at the stage asked for";
  EXPECT_EQ(stage0.second, stage2.second) << "deepspeed is always priced at ZeRO-2";
  EXPECT_NE(mean({"--micro-batch-size", "4"}).second, stage0.second);
  CliResult bad = RunPlan({"simulate", "--lengths", lengths, "--dp", "1", "--cp", "4",
                           "--bucket-size", "8K", "--batch-size", "8", "--zero-stage", "3"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--zero-stage"), std::string::npos) << bad.err;
}

TEST(SkrullPlanSimulate, TextTableHasSpeedupVsCpAllAndSvgDrawsFirstBatch) {
  TempDir dir;
  const std::string lengths = dir.Write("data.txt", Dataset(200));
  const std::string svg_path = dir.Path("sim.svg");
  CliResult r = RunPlan({"simulate", "--lengths", lengths, "--dp", "2", "--cp", "2",
                         "--bucket-size", "16K", "--batch-size", "8", "--steps", "2", "--policies",
                         "skrull,cp-all", "--svg", svg_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vs cp-all"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.00x"), std::string::npos) << "cp-all against itself: " << r.out;
  EXPECT_EQ(r.out.find("balanced-cp"), std::string::npos) << "only the listed policies";
  const std::string svg = ReadFile(svg_path);
  ASSERT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(Count(svg, "class=\"rank-row\""), 4u);
}

TEST(SkrullPlanSimulate, TooLongSequenceNamesItsLineAndTheFix) {
  TempDir dir;
  const std::string lengths = dir.Write("data.txt", "100\n200\n99999\n");
  CliResult r = RunPlan({"simulate", "--lengths", lengths, "--dp", "1", "--cp", "2",
                         "--bucket-size", "4K", "--batch-size", "2"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find("sequence 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("raise --cp or --bucket-size"), std::string::npos) << r.err;
}

TEST(SkrullPlanTimeline, AgreesWithSimulatorAndKeepsBoxesInsideMicroBatches) {
  auto model = ModelPreset("qwen2.5-0.5b");
  ASSERT_TRUE(model.ok());
  CostModel cost(*model);
  HardwareProfile hw = H100Profile();
  std::vector<Sequence> batch;
  const std::vector<int64_t> lengths = {900, 1200, 300, 20000, 64, 5000, 700, 2048, 130, 7000};
  for (size_t i = 0; i < lengths.size(); ++i)
    batch.push_back({static_cast<int64_t>(i), lengths[i]});
  ScheduleOptions options;
  options.topology = {2, 4};
  options.bucket_size_tokens = 8192;
  auto plan = Schedule(Policy::kSkrull, batch, options, cost);
  ASSERT_TRUE(plan.ok()) << plan.status();
  Timeline t = BuildTimeline(*plan, cost, hw, "test");
  EXPECT_DOUBLE_EQ(t.end_seconds, SimulatePlan(*plan, cost, hw).seconds);
  int compute_boxes = 0;
  for (const TimelineSpan& s : t.spans) {
    EXPECT_LE(s.start_seconds, s.end_seconds);
    EXPECT_LE(s.end_seconds, t.end_seconds * (1 + 1e-9));
    if (s.kind == SpanKind::kCommunication || s.kind == SpanKind::kGradientSync) continue;
    ++compute_boxes;
    bool inside = false;
    for (const TimelineMicroBatch& mb : t.micro_batches) {
      if (mb.dp_rank == s.dp_rank && s.start_seconds >= mb.start_seconds - 1e-12 &&
          s.end_seconds <= mb.end_seconds * (1 + 1e-9) + 1e-12) {
        inside = true;
      }
    }
    EXPECT_TRUE(inside) << s.detail;
  }
  // Each local sequence is one box; each distributed one is a box on every CP rank.
  int expected = 0;
  for (const DpRankPlan& r : plan->ranks) {
    for (const MicroBatch& mb : r.micro_batches) {
      for (const PlacedSequence& s : mb.sequences) expected += s.distributed() ? 4 : 1;
    }
  }
  EXPECT_EQ(compute_boxes, expected);
  std::string why;
  EXPECT_TRUE(WellFormedXml(RenderTimelineSvg(t), &why)) << why;
}

TEST(SkrullPlanTimeline, EscapesTextInSvg) {
  Timeline t;
  t.topology = {1, 1};
  t.title = "a<b & \"c\"";
  t.end_seconds = 0.01;
  t.spans.push_back({0, 0, 0.0, 0.01, SpanKind::kLocalCompute, "#1", "x<y"});
  const std::string svg = RenderTimelineSvg(t);
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
  std::string why;
  EXPECT_TRUE(WellFormedXml(svg, &why)) << why;
}

TEST(SkrullPlanBinary, ExitCodeTwoOnBadFlags) {
  const char* bin_dir = std::getenv("SKRULL_BIN_DIR");
  if (bin_dir == nullptr) GTEST_SKIP() << "SKRULL_BIN_DIR not set (run under ctest)";
  const std::string binary = std::string(bin_dir) + "/skrull-plan";
  if (!fs::exists(binary)) GTEST_SKIP() << binary << " not built";
  int status = std::system((binary + " schedule --dp 0 >/dev/null 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  status = std::system((binary + " --help >/dev/null 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace skrull::scheduler::cli
