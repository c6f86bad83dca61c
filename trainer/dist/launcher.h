// The local launcher: `skrull-trainer --job FILE` without SKRULL_RANK starts
// this node's ranks (torchrun-like) and watches them.
//
//  * spawns procs_per_node copies of the trainer binary with the rank
//    environment (env.h) set; rank = node_rank * procs_per_node + local_rank;
//  * single node: picks a free master port on 127.0.0.1; multi-node
//    (--nnodes/--node-rank/--master or the SKRULL_* variables): one node of
//    the job, the master address is given;
//  * forwards SIGINT/SIGTERM/SIGHUP to the ranks;
//  * fails fast: when a rank dies, the others get SIGTERM, then SIGKILL after
//    kill_grace; the failure names the rank that failed first, its exit code
//    or signal, and the tail of its log (<outputDir>/logs/rank-<r>.log, which
//    holds this launch's output only: it starts empty). "First" is decided
//    from the ranks' failure records (failure_record.h), not from the order
//    the exits were seen: a peer that died of the failed rank's absence is
//    never blamed;
//  * aggregates the ranks' summaries (RankSummaryPath) into
//    <outputDir>/summary.json (summary.node<k>.json on nodes other than 0).
//
// Torch-free. Process creation goes through ProcessSpawner.
#ifndef SKRULL_TRAINER_DIST_LAUNCHER_H_
#define SKRULL_TRAINER_DIST_LAUNCHER_H_

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/dist/failure_record.h"
#include "trainer/dist/process_spawner.h"
#include "trainer/dist/rank_layout.h"

namespace skrull::dist {

using EnvMap = std::map<std::string, std::string>;

// The integer variable `name` of `env`; `default_value` when it is unset or
// empty. InvalidArgument naming the variable when it is not an integer in
// [min_value, 2^30].
StatusOr<int> ParseIntVar(const EnvMap& env, const char* name, int min_value, int default_value);

// `environ` as a map (for main()).
EnvMap EnvironmentToMap(char** environ_ptr);

// What one rank process learns from its environment (env.h): where it sits
// in the job (the layout, against the job's spec.parallelism) and how to reach
// the others.
struct RankEnv {
  RankLayout layout;  // rank, world size, node / local rank, DP / CP rank
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string job_file;    // "" when not set
  std::string output_dir;  // "" = the job's spec.training.outputDir
  int rendezvous_timeout_seconds = 300;
  std::string gloo_interface;  // "" = default
  std::string run_id;
};

// nullopt when SKRULL_RANK is absent (the process is a launcher). Otherwise
// the layout is RankLayout::Make(parallelism, SKRULL_RANK), and
// SKRULL_WORLD_SIZE, SKRULL_LOCAL_RANK, SKRULL_LOCAL_WORLD_SIZE,
// SKRULL_NODE_RANK and SKRULL_NNODES, each optional, must agree with it (the
// launcher sets them all). Errors name the variable and its value:
// "SKRULL_WORLD_SIZE: must be an integer >= 1 (got 'x')".
StatusOr<std::optional<RankEnv>> ParseRankEnv(const EnvMap& env,
                                              const api::ParallelismSpec& parallelism);

// Where rank `rank` writes its summary JSON (the trainer writes it, the
// launcher aggregates it) and where the launcher writes its output.
std::string RankSummaryPath(const std::string& output_dir, int rank);
std::string RankLogPath(const std::string& output_dir, int rank);

// Launcher-only flags (`--nnodes N`, `--node-rank R`, `--master
// HOST[:PORT]`); the ranks do not get them. Parsed by skrull-trainer's
// command line (trainer_main.h).
struct NodeFlags {
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
};

// `--master`'s value: "host:port", "host" (port unset) or "[v6addr]:port".
// Sets flags->master_addr (and master_port). InvalidArgument naming --master.
Status ParseMasterFlag(const std::string& text, NodeFlags* flags);

// This node's place in the job, from the node flags or else
// SKRULL_NNODES / SKRULL_NODE_RANK in `env`: the node count must equal
// spec.parallelism.nodes and the node rank be below it. InvalidArgument
// naming the flag (or variable), the job file and the fix; every problem at
// once.
Status CheckNodeFlagsAgainstJob(const api::JobSpec& job, const std::string& job_file,
                                const NodeFlags& flags, const EnvMap& env);

struct LaunchOptions {
  std::vector<std::string> worker_argv;  // argv[0] is the program each rank runs
  EnvMap base_env;                       // the ranks inherit this, plus the rank variables
  std::string job_name;
  std::string job_file;
  std::string output_dir;  // logs/, rank summaries and summary.json
  int nnodes = 1;
  int node_rank = 0;
  int procs_per_node = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: pick a free port (single node only)
  // SIGTERM -> SIGKILL delay when stopping ranks after a failure or a signal.
  std::chrono::milliseconds kill_grace{10000};
  bool echo_output = true;  // also print rank output with a "[rank r] " prefix
  int log_tail_lines = 30;
};

// Builds options for `job`: procs_per_node and outputDir from the spec, node
// flags (or SKRULL_NNODES/SKRULL_NODE_RANK/SKRULL_MASTER_ADDR/PORT in `env`)
// for multi-node. `worker_args` are the arguments each rank gets after the
// program (e.g. {"--job", FILE}).
StatusOr<LaunchOptions> LaunchOptionsForJob(const api::JobSpec& job, const std::string& job_file,
                                            const NodeFlags& flags, const EnvMap& env,
                                            const std::string& program,
                                            std::vector<std::string> worker_args);

struct RankOutcome {
  int rank = 0;
  int local_rank = 0;
  Pid pid = 0;
  ProcessExit exit;
  bool stopped_by_launcher = false;  // signalled after another rank failed or on interrupt
  std::string log_path;
};

struct LaunchResult {
  bool ok = false;
  std::vector<RankOutcome> ranks;  // by local rank
  // The rank that failed first (PickFailedRank over the failed ranks) and
  // its failure record when it wrote one.
  std::optional<RankOutcome> failure;
  std::optional<FailureRecord> failure_record;
  int failed_ranks = 0;  // ranks that ended unsuccessfully, the blamed one included
  std::string failure_log_tail;
  int interrupted_by_signal = 0;  // the signal the launcher forwarded, 0 if none
  double wall_seconds = 0;
  // From the first failure (or interrupt) until every rank was gone.
  double teardown_seconds = 0;
  std::string summary_path;  // "" if it could not be written

  // 0 on success; the failed rank's shell code; 128 + signal when interrupted.
  int ExitCode() const;
  // One paragraph for the terminal: who failed, how, and the log tail.
  std::string Describe() const;
};

// Starts the node's ranks and waits for them. `interrupt_signal`, when not
// null, is polled: a non-zero value is a signal to forward (see
// InstallForwardingSignalHandlers). Returns an error only when the launch
// itself failed (spawn, port); a failed rank is a LaunchResult with ok=false.
StatusOr<LaunchResult> RunNode(const LaunchOptions& options, ProcessSpawner* spawner,
                               const std::atomic<int>* interrupt_signal = nullptr);

// Installs SIGINT/SIGTERM/SIGHUP handlers that store the signal number in the
// returned flag (and ignore SIGPIPE). Call once, from main.
const std::atomic<int>* InstallForwardingSignalHandlers();

// A port that was free on `host` a moment ago (bind to port 0, read it back).
StatusOr<int> PickFreePort(const std::string& host);

// Last `lines` lines of a text file ("" if unreadable).
std::string TailOfFile(const std::string& path, int lines);

// The whole launcher for a loaded job: options, signal handlers, RunNode with
// a PosixProcessSpawner, the report on stderr. Returns the process exit code.
// `worker_args` are the arguments every rank gets (node flags removed).
int RunLauncherMain(const api::JobSpec& job, const std::string& job_file, const NodeFlags& flags,
                    std::vector<std::string> worker_args, const EnvMap& env,
                    const std::string& program);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_LAUNCHER_H_
