#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/dist/env.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/process_spawner.h"
#include "trainer/dist/testing/fork_ranks.h"
#include "trainer/dist/testing/processes.h"

extern char** environ;

namespace skrull::dist {
namespace {

using std::chrono::milliseconds;
using testing::Parallelism;

std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "skrull_launcher_XXXXXX").string();
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

LaunchOptions FakeOptions(int procs) {
  LaunchOptions o;
  o.worker_argv = {"skrull-trainer", "--job", "job.yaml"};
  o.job_name = "t";
  o.job_file = "job.yaml";
  o.procs_per_node = procs;
  o.echo_output = false;
  o.kill_grace = milliseconds(200);
  return o;
}

FakeProcessSpawner::Script ExitsAfter(int ms, int code) {
  FakeProcessSpawner::Script s;
  s.exits_after = milliseconds(ms);
  s.exit_code = code;
  return s;
}

TEST(Launcher, StartsEveryRankWithItsEnvironment) {
  FakeProcessSpawner spawner({}, ExitsAfter(5, 0));
  LaunchOptions o = FakeOptions(3);
  o.nnodes = 2;
  o.node_rank = 1;
  o.master_addr = "10.0.0.1";
  o.master_port = 1234;
  auto r = RunNode(o, &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok);
  EXPECT_EQ(r->ExitCode(), 0);
  ASSERT_EQ(spawner.requests().size(), 3u);
  for (int local = 0; local < 3; ++local) {
    const auto& env = spawner.requests()[local].env;
    EXPECT_EQ(env.at(env::kRank), std::to_string(3 + local));
    EXPECT_EQ(env.at(env::kLocalRank), std::to_string(local));
    EXPECT_EQ(env.at(env::kWorldSize), "6");
    EXPECT_EQ(env.at(env::kLocalWorldSize), "3");
    EXPECT_EQ(env.at(env::kNodeRank), "1");
    EXPECT_EQ(env.at(env::kNnodes), "2");
    EXPECT_EQ(env.at(env::kMasterAddr), "10.0.0.1");
    EXPECT_EQ(env.at(env::kMasterPort), "1234");
    EXPECT_EQ(env.at(env::kJobFile), "job.yaml");
    EXPECT_EQ(env.at(env::kRunId), spawner.requests()[0].env.at(env::kRunId));
    EXPECT_EQ(spawner.requests()[local].argv, o.worker_argv);
  }
  EXPECT_TRUE(spawner.signals().empty());
}

TEST(Launcher, PicksAFreeMasterPortOnOneNode) {
  FakeProcessSpawner spawner({}, ExitsAfter(1, 0));
  auto r = RunNode(FakeOptions(2), &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  const int port = std::stoi(spawner.requests()[0].env.at(env::kMasterPort));
  EXPECT_GT(port, 0);
  EXPECT_EQ(spawner.requests()[1].env.at(env::kMasterPort), std::to_string(port));
  EXPECT_EQ(spawner.requests()[0].env.at(env::kMasterAddr), "127.0.0.1");
}

TEST(Launcher, StopsTheOtherRanksWhenOneFails) {
  FakeProcessSpawner spawner({{1, ExitsAfter(10, 3)}});  // the others run until signalled
  auto r = RunNode(FakeOptions(3), &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->ok);
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_EQ(r->failure->rank, 1);
  EXPECT_EQ(r->failure->exit.exit_code, 3);
  EXPECT_EQ(r->ExitCode(), 3);
  EXPECT_EQ(spawner.signals(), (std::vector<std::pair<int, int>>{{0, SIGTERM}, {2, SIGTERM}}));
  EXPECT_TRUE(r->ranks[0].stopped_by_launcher);
  EXPECT_FALSE(r->ranks[1].stopped_by_launcher);
  EXPECT_NE(r->Describe().find("rank 1 (local rank 1"), std::string::npos) << r->Describe();
  EXPECT_NE(r->Describe().find("exit code 3"), std::string::npos);
}

TEST(Launcher, KillsARankThatIgnoresSigtermAfterTheGrace) {
  FakeProcessSpawner::Script stubborn;
  stubborn.dies_on = {SIGKILL};
  FakeProcessSpawner spawner({{0, ExitsAfter(5, 1)}, {1, stubborn}});
  LaunchOptions o = FakeOptions(2);
  o.kill_grace = milliseconds(100);
  auto r = RunNode(o, &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(spawner.signals(), (std::vector<std::pair<int, int>>{{1, SIGTERM}, {1, SIGKILL}}));
  EXPECT_GE(r->teardown_seconds, 0.1);
  EXPECT_LT(r->teardown_seconds, 2.0);
  EXPECT_EQ(r->ranks[1].exit.signal, SIGKILL);
}

TEST(Launcher, ForwardsAnInterruptToEveryRank) {
  FakeProcessSpawner spawner;
  std::atomic<int> interrupt{0};
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(30));
    interrupt.store(SIGINT);
  });
  auto r = RunNode(FakeOptions(2), &spawner, &interrupt);
  t.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->ok);
  EXPECT_FALSE(r->failure.has_value());
  EXPECT_EQ(r->interrupted_by_signal, SIGINT);
  EXPECT_EQ(r->ExitCode(), 128 + SIGINT);
  EXPECT_EQ(spawner.signals(), (std::vector<std::pair<int, int>>{{0, SIGINT}, {1, SIGINT}}));
}

TEST(RankEnv, AbsentRankMeansLauncher) {
  auto r = ParseRankEnv({{"PATH", "/bin"}}, Parallelism(1, 2, 2, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(RankEnv, ParsesEveryVariableIntoTheJobsLayout) {
  auto r = ParseRankEnv({{env::kRank, "3"},
                         {env::kWorldSize, "4"},
                         {env::kLocalRank, "1"},
                         {env::kLocalWorldSize, "2"},
                         {env::kNodeRank, "1"},
                         {env::kNnodes, "2"},
                         {env::kMasterAddr, "host0"},
                         {env::kMasterPort, "29500"},
                         {env::kJobFile, "/j.yaml"},
                         {env::kRendezvousTimeoutSeconds, "7"}},
                        Parallelism(2, 2, 2, 2));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_value());
  const RankEnv& e = **r;
  EXPECT_EQ(e.layout.rank(), 3);
  EXPECT_EQ(e.layout.world_size(), 4);
  EXPECT_EQ(e.layout.local_rank(), 1);
  EXPECT_EQ(e.layout.procs_per_node(), 2);
  EXPECT_EQ(e.layout.node_rank(), 1);
  EXPECT_EQ(e.layout.nnodes(), 2);
  EXPECT_EQ(e.layout.dp_rank(), 1);
  EXPECT_EQ(e.layout.cp_rank(), 1);
  EXPECT_EQ(e.master_addr, "host0");
  EXPECT_EQ(e.master_port, 29500);
  EXPECT_EQ(e.job_file, "/j.yaml");
  EXPECT_EQ(e.rendezvous_timeout_seconds, 7);
}

TEST(RankEnv, PositionVariablesAreOptional) {
  auto r = ParseRankEnv({{env::kRank, "2"}, {env::kMasterPort, "1"}}, Parallelism(1, 4, 2, 2));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->layout.local_rank(), 2);
  EXPECT_EQ((*r)->layout.Describe(), "rank 2 (dp 1, cp 0)");
}

TEST(RankEnv, ReportsEveryBadVariableByName) {
  auto r = ParseRankEnv({{env::kRank, "x"}, {env::kWorldSize, "0"}}, Parallelism(1, 2, 2, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("SKRULL_RANK: must be an integer >= 0 (got 'x')"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("SKRULL_WORLD_SIZE: must be an integer >= 1 (got '0')"),
            std::string::npos);
}

TEST(RankEnv, RankMustBeBelowWorldSize) {
  auto r = ParseRankEnv({{env::kRank, "2"}, {env::kWorldSize, "2"}, {env::kMasterPort, "1"}},
                        Parallelism(1, 2, 2, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SKRULL_RANK: must be < SKRULL_WORLD_SIZE (2), got 2"),
            std::string::npos)
      << r.status();
}

TEST(RankEnv, WorldSizeThatDisagreesWithTheJobIsRefused) {
  auto r = ParseRankEnv({{env::kRank, "1"}, {env::kWorldSize, "2"}, {env::kMasterPort, "1"}},
                        Parallelism(1, 4, 4, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "trainer rank environment: SKRULL_WORLD_SIZE: 2 disagrees with SKRULL_RANK 1 under "
            "the job's spec.parallelism (nodes 1 x procsPerNode 4), which needs 4; start the "
            "ranks with `skrull-trainer --job FILE`");
}

TEST(RankEnv, LocalRankThatDisagreesWithTheJobIsRefused) {
  auto r = ParseRankEnv({{env::kRank, "3"}, {env::kLocalRank, "3"}, {env::kMasterPort, "1"}},
                        Parallelism(2, 2, 4, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SKRULL_LOCAL_RANK: 3 disagrees with SKRULL_RANK 3"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("which needs 1"), std::string::npos) << r.status();
}

TEST(RankEnv, RankOutsideTheJobIsRefused) {
  auto r = ParseRankEnv({{env::kRank, "4"}, {env::kMasterPort, "1"}}, Parallelism(1, 4, 4, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "trainer rank environment: rank 4 is outside [0, 4) (spec.parallelism: nodes x "
            "procsPerNode)");
}

TEST(RankEnv, MasterPortIsRequiredForMoreThanOneProcess) {
  auto r = ParseRankEnv({{env::kRank, "0"}}, Parallelism(1, 2, 2, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SKRULL_MASTER_PORT: required"), std::string::npos)
      << r.status();
  EXPECT_TRUE(ParseRankEnv({{env::kRank, "0"}}, Parallelism(1, 1, 1, 1)).ok());
}

TEST(NodeFlags, MasterTakesHostPortHostAloneAndBracketedIpv6) {
  NodeFlags f;
  ASSERT_TRUE(ParseMasterFlag("host0:1234", &f).ok());
  EXPECT_EQ(f.master_addr, "host0");
  EXPECT_EQ(f.master_port, 1234);
  NodeFlags g;
  ASSERT_TRUE(ParseMasterFlag("host1", &g).ok());
  EXPECT_EQ(g.master_addr, "host1");
  EXPECT_FALSE(g.master_port.has_value());
  NodeFlags h;
  ASSERT_TRUE(ParseMasterFlag("[::1]:29500", &h).ok());
  EXPECT_EQ(h.master_addr, "::1");
  EXPECT_EQ(h.master_port, 29500);
  EXPECT_EQ(ParseMasterFlag("host:70000", &f).message(),
            "--master: port must be <= 65535 (got 70000)");
  EXPECT_EQ(ParseMasterFlag(":1", &f).message(), "--master: empty host in ':1'; use HOST[:PORT]");
}

// Guards against `--nnodes 2 --node-rank 5` on a 1-node job being silently
// ignored when the job runs in one process.
TEST(NodeFlags, ANodeCountOrRankTheJobDoesNotHaveIsRefusedNamingTheFlags) {
  api::JobSpec job;
  job.parallelism.nodes = 1;
  NodeFlags flags;
  flags.nnodes = 2;
  flags.node_rank = 5;
  Status s = CheckNodeFlagsAgainstJob(job, "j.yaml", flags, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--nnodes 2: disagrees with j.yaml, whose spec.parallelism.nodes is 1; give the job's "
            "node count or change the job; --node-rank 5: must be < spec.parallelism.nodes (1) "
            "of j.yaml; this node's rank is 0..0");
  flags.nnodes = 1;
  flags.node_rank = 0;
  EXPECT_TRUE(CheckNodeFlagsAgainstJob(job, "j.yaml", flags, {}).ok());
  EXPECT_TRUE(CheckNodeFlagsAgainstJob(job, "j.yaml", {}, {}).ok());
}

TEST(NodeFlags, TheEnvironmentIsCheckedWhenTheFlagsAreAbsent) {
  api::JobSpec job;
  job.parallelism.nodes = 2;
  Status s = CheckNodeFlagsAgainstJob(job, "j.yaml", {}, {{env::kNodeRank, "2"}});
  EXPECT_EQ(s.message().rfind("SKRULL_NODE_RANK 2: must be < spec.parallelism.nodes (2)", 0), 0u)
      << s;
  NodeFlags flags;
  flags.node_rank = 1;  // the flag wins over the variable
  EXPECT_TRUE(CheckNodeFlagsAgainstJob(job, "j.yaml", flags, {{env::kNodeRank, "2"}}).ok());
  s = CheckNodeFlagsAgainstJob(job, "j.yaml", {}, {{env::kNnodes, "x"}});
  EXPECT_EQ(s.message(), "SKRULL_NNODES: must be an integer >= 1 (got 'x')");
}

TEST(LaunchOptionsForJob, MultiNodeNeedsAMaster) {
  api::JobSpec job;
  job.name = "j";
  job.parallelism.nodes = 2;
  job.parallelism.procs_per_node = 2;
  NodeFlags flags;
  flags.node_rank = 1;
  auto o = LaunchOptionsForJob(job, "j.yaml", flags, {}, "/bin/trainer", {"--job", "j.yaml"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--master HOST[:PORT] is required"), std::string::npos);
  flags.master_addr = "host0";
  o = LaunchOptionsForJob(job, "j.yaml", flags, {}, "/bin/trainer", {"--job", "j.yaml"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->master_port, 29500);
  EXPECT_EQ(o->node_rank, 1);
  EXPECT_EQ(o->output_dir, "runs/j");
  EXPECT_EQ(o->worker_argv, (std::vector<std::string>{"/bin/trainer", "--job", "j.yaml"}));
}

TEST(LaunchOptionsForJob, NodeRankFromTheEnvironment) {
  api::JobSpec job;
  job.parallelism.nodes = 2;
  auto o = LaunchOptionsForJob(
      job, "j.yaml", {}, {{env::kNodeRank, "1"}, {env::kMasterAddr, "m"}, {env::kMasterPort, "99"}},
      "/bin/trainer", {});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->node_rank, 1);
  EXPECT_EQ(o->master_addr, "m");
  EXPECT_EQ(o->master_port, 99);
}

// --- Real processes: /bin/sh scripts stand in for the trainer. -------------

LaunchOptions ShellOptions(const std::string& dir, int procs, const std::string& script) {
  LaunchOptions o;
  o.worker_argv = {"/bin/sh", "-c", script};
  o.base_env = {{"PATH", "/usr/bin:/bin"}};
  o.job_name = "sh";
  o.output_dir = dir;
  o.procs_per_node = procs;
  o.echo_output = false;
  o.kill_grace = milliseconds(2000);
  return o;
}

TEST(LauncherProcesses, AggregatesTheRankSummaries) {
  const std::string dir = MakeTempDir();
  const std::string script =
      "d=$SKRULL_OUTPUT_DIR/ranks/rank-$SKRULL_RANK; mkdir -p $d; "
      "echo \"hello from $SKRULL_RANK of $SKRULL_WORLD_SIZE\"; "
      "echo \"{\\\"steps\\\": 2, \\\"timing\\\": {\\\"loss\\\": $SKRULL_RANK}}\" > $d/summary.json";
  PosixProcessSpawner spawner;
  auto r = RunNode(ShellOptions(dir, 3, script), &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok) << r->Describe();
  EXPECT_EQ(TailOfFile(RankLogPath(dir, 2), 5), "hello from 2 of 3\n");
  auto text = ReadFileToString(dir + "/summary.json");
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["world_size"], 3);
  ASSERT_EQ(j["ranks"].size(), 3u);
  EXPECT_EQ(j["ranks"][1]["summary"]["timing"]["loss"], 1);
  EXPECT_DOUBLE_EQ(j["aggregate"]["timing.loss"]["mean"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["aggregate"]["timing.loss"]["max"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["aggregate"]["steps"]["sum"].get<double>(), 6.0);
  std::filesystem::remove_all(dir);
}

TEST(LauncherProcesses, OneFailureStopsTheRestQuicklyAndShowsItsLog) {
  const std::string dir = MakeTempDir();
  const std::string script =
      "if [ \"$SKRULL_RANK\" = 1 ]; then echo 'loading'; echo 'boom: out of cheese' >&2; "
      "sleep 0.2; exit 7; fi; exec sleep 60";
  PosixProcessSpawner spawner;
  auto r = RunNode(ShellOptions(dir, 3, script), &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->ok);
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_EQ(r->failure->rank, 1);
  EXPECT_EQ(r->failure->exit.exit_code, 7);
  EXPECT_EQ(r->ExitCode(), 7);
  EXPECT_LT(r->teardown_seconds, 1.5);  // SIGTERM ends `sleep` at once
  EXPECT_LT(r->wall_seconds, 10.0);
  EXPECT_EQ(r->ranks[0].exit.signal, SIGTERM);
  EXPECT_EQ(r->ranks[2].exit.signal, SIGTERM);
  EXPECT_NE(r->failure_log_tail.find("boom: out of cheese"), std::string::npos);
  EXPECT_NE(r->Describe().find("boom: out of cheese"), std::string::npos);
  auto j = nlohmann::json::parse(*ReadFileToString(dir + "/summary.json"));
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["failure"]["rank"], 1);
  EXPECT_EQ(j["failure"]["exit_code"], 7);
  std::filesystem::remove_all(dir);
}

// A rank whose error is its own (a full disk) is blamed, not the peer whose
// collective failed because the first had gone, even when the peer's exit is
// seen first and the first one was signalled by the launcher meanwhile.
TEST(LauncherProcesses, BlamesTheRankThatFailedFirstNotThePeerThatExitedFirst) {
  const std::string dir = MakeTempDir();
  const std::string record =
      "d=$SKRULL_OUTPUT_DIR/ranks/rank-$SKRULL_RANK; mkdir -p $d; printf "
      "'{\"schema\": 1, \"rank\": %s, \"run_id\": \"%s\", \"unix_micros\": %s, "
      "\"cause\": \"%s\", \"status\": \"%s\", \"message\": \"m\"}' "
      "$SKRULL_RANK $SKRULL_RUN_ID $(date +%s%6N) ";
  const std::string script =
      "if [ \"$SKRULL_RANK\" = 1 ]; then trap '' TERM; " + record +
      "own IO_ERROR > $d/failure.json; echo 'No space left on device'; sleep 0.6; exit 4; fi; "
      "sleep 0.2; " +
      record + "peer UNAVAILABLE > $d/failure.json; exit 1";
  PosixProcessSpawner spawner;
  auto r = RunNode(ShellOptions(dir, 2, script), &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_EQ(r->failure->rank, 1) << r->Describe();
  EXPECT_EQ(r->ExitCode(), 4);
  EXPECT_TRUE(r->ranks[1].stopped_by_launcher);  // signalled when rank 0 ended
  ASSERT_TRUE(r->failure_record.has_value());
  EXPECT_EQ(r->failure_record->status, "IO_ERROR");
  EXPECT_EQ(r->failed_ranks, 2);
  EXPECT_NE(r->Describe().find("rank 1 (local rank 1"), std::string::npos) << r->Describe();
  EXPECT_NE(r->Describe().find("1 other rank(s) failed after it"), std::string::npos);
  EXPECT_NE(r->failure_log_tail.find("No space left on device"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A rank that crashes (SIGSEGV) is blamed over a peer whose collective failed,
// although the peer's exit came first and the launcher had sent the crashing
// rank SIGTERM meanwhile; the report names the signal and shows its log.
TEST(LauncherProcesses, BlamesACrashOverThePeerWhoseExitCameFirst) {
  const std::string dir = MakeTempDir();
  const std::string script =
      "d=$SKRULL_OUTPUT_DIR/ranks/rank-$SKRULL_RANK; mkdir -p $d; "
      "if [ \"$SKRULL_RANK\" = 1 ]; then trap '' TERM; echo 'dividing by zero'; sleep 0.5; "
      "kill -SEGV $$; fi; sleep 0.1; printf '{\"schema\": 1, \"rank\": 0, \"run_id\": "
      "\"%s\", \"unix_micros\": %s, \"cause\": \"peer\"}' $SKRULL_RUN_ID $(date +%s%6N) "
      "> $d/failure.json; exit 1";
  PosixProcessSpawner spawner;
  auto r = RunNode(ShellOptions(dir, 2, script), &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_EQ(r->failure->rank, 1) << r->Describe();
  EXPECT_EQ(r->failure->exit.signal, SIGSEGV);
  EXPECT_EQ(r->ExitCode(), 128 + SIGSEGV);
  EXPECT_NE(r->Describe().find("signal 11"), std::string::npos) << r->Describe();
  EXPECT_NE(r->Describe().find("dividing by zero"), std::string::npos) << r->Describe();
  std::filesystem::remove_all(dir);
}

// A record left by an earlier launch is removed before the ranks start: it
// cannot make this launch blame a rank that only followed.
TEST(LauncherProcesses, AnEarlierLaunchsFailureRecordIsNotThisOnes) {
  const std::string dir = MakeTempDir();
  FailureRecord old;
  old.rank = 1;
  old.run_id = "same-id";
  old.unix_micros = 1;
  ASSERT_TRUE(WriteFailureRecord(dir, old).ok());
  LaunchOptions o =
      ShellOptions(dir, 2, "if [ \"$SKRULL_RANK\" = 0 ]; then exit 5; fi; sleep 0.3; exit 1");
  o.base_env[env::kRunId] = "same-id";
  PosixProcessSpawner spawner;
  auto r = RunNode(o, &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_EQ(r->failure->rank, 0) << r->Describe();
  EXPECT_FALSE(r->failure_record.has_value());
  EXPECT_FALSE(std::filesystem::exists(RankFailurePath(dir, 1)));
  std::filesystem::remove_all(dir);
}

TEST(LauncherProcesses, ASignalToTheLauncherReachesEveryRank) {
  const std::string dir = MakeTempDir();
  // Each rank records the signal it got, then exits 0: a clean shutdown.
  const std::string script =
      "trap 'echo TERM > $SKRULL_OUTPUT_DIR/got-$SKRULL_RANK; exit 0' TERM; "
      "touch $SKRULL_OUTPUT_DIR/ready-$SKRULL_RANK; while true; do sleep 0.05; done";
  const std::atomic<int>* interrupt = InstallForwardingSignalHandlers();
  std::thread killer([&] {
    for (int i = 0; i < 400; ++i) {
      if (std::filesystem::exists(dir + "/ready-0") && std::filesystem::exists(dir + "/ready-1")) {
        break;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    kill(getpid(), SIGTERM);  // the real handler stores it; RunNode forwards it
  });
  PosixProcessSpawner spawner;
  auto r = RunNode(ShellOptions(dir, 2, script), &spawner, interrupt);
  killer.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->interrupted_by_signal, SIGTERM);
  EXPECT_EQ(r->ExitCode(), 128 + SIGTERM);
  EXPECT_TRUE(std::filesystem::exists(dir + "/got-0"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/got-1"));
  EXPECT_EQ(r->ranks[0].exit.exit_code, 0);
  signal(SIGTERM, SIG_DFL);
  std::filesystem::remove_all(dir);
}

TEST(LauncherProcesses, AFailuresLogTailIsThisLaunchsOutputOnly) {
  const std::string dir = MakeTempDir();
  std::filesystem::create_directories(dir + "/logs");
  std::ofstream(RankLogPath(dir, 0)) << "boom from an earlier launch\n";
  PosixProcessSpawner spawner;
  auto r = RunNode(ShellOptions(dir, 1, "exit 3"), &spawner);  // fails without a word
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_EQ(r->failure->exit.exit_code, 3);
  EXPECT_EQ(r->failure_log_tail, "");
  EXPECT_EQ(r->Describe().find("earlier launch"), std::string::npos) << r->Describe();
  std::filesystem::remove_all(dir);
}

TEST(LauncherProcesses, AMissingProgramIsAFailedRank) {
  const std::string dir = MakeTempDir();
  LaunchOptions o = ShellOptions(dir, 1, "");
  o.worker_argv = {dir + "/no-such-trainer"};
  PosixProcessSpawner spawner;
  auto r = RunNode(o, &spawner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_EQ(r->failure->exit.exit_code, 127);
  EXPECT_NE(r->failure_log_tail.find("cannot exec"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// --- The launcher killed with SIGKILL takes its ranks with it. -------------

// Run as SKRULL_TEST_AS_LAUNCHER=DIR, this binary is a launcher of two ranks
// that record their pid in DIR/pid-<rank> and then sleep for a minute.
constexpr char kAsLauncher[] = "SKRULL_TEST_AS_LAUNCHER";

int LauncherHelperMain(const std::string& dir) {
  const std::string script =
      "echo $$ > $SKRULL_OUTPUT_DIR/pid-$SKRULL_RANK.tmp && "
      "mv $SKRULL_OUTPUT_DIR/pid-$SKRULL_RANK.tmp "
      "$SKRULL_OUTPUT_DIR/pid-$SKRULL_RANK; exec sleep 60";
  PosixProcessSpawner spawner;
  auto r = RunNode(ShellOptions(dir, 2, script), &spawner);
  return r.ok() && r->ok ? 0 : 1;
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

TEST(LauncherProcesses, RanksDieWithinSecondsWhenTheLauncherIsKilled) {
  const std::string dir = MakeTempDir();
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    setenv(kAsLauncher, dir.c_str(), 1);
    const std::string self = SelfExe();
    execl(self.c_str(), self.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::vector<pid_t> ranks;
  for (int i = 0; i < 3000 && ranks.size() < 2; ++i) {  // up to 30 s on a loaded machine
    ranks.clear();
    for (int r = 0; r < 2; ++r) {
      auto text = ReadFileToString(dir + "/pid-" + std::to_string(r));
      if (text.ok() && !text->empty()) ranks.push_back(static_cast<pid_t>(std::stol(*text)));
    }
    if (ranks.size() < 2) std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(ranks.size(), 2u) << "the ranks did not start";
  for (pid_t pid : ranks) ASSERT_TRUE(testing::ProcessIsAlive(pid)) << pid;

  ASSERT_EQ(kill(launcher, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  ASSERT_TRUE(WIFSIGNALED(status));
  // The kernel delivers the parent-death signal as the launcher exits; 3 s
  // is margin for a loaded machine, the ranks would otherwise sleep 60 s.
  EXPECT_TRUE(testing::WaitUntilGone(ranks, milliseconds(3000)));
  for (pid_t pid : ranks) {
    EXPECT_FALSE(testing::ProcessIsAlive(pid)) << "rank pid " << pid << " outlived its launcher";
    if (testing::ProcessIsAlive(pid)) kill(pid, SIGKILL);  // leave no orphan behind a failed test
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace skrull::dist

int main(int argc, char** argv) {
  if (const char* dir = std::getenv(skrull::dist::kAsLauncher); dir != nullptr) {
    return skrull::dist::LauncherHelperMain(dir);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
