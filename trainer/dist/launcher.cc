#include "trainer/dist/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "trainer/dist/env.h"
#include "trainer/dist/run_summary.h"

namespace skrull::dist {

StatusOr<int> ParseIntVar(const EnvMap& env, const char* name, int min_value, int default_value) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return default_value;
  const std::string& text = it->second;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < min_value || v > 1 << 30) {
    return InvalidArgumentError(std::string(name) + ": must be an integer >= " +
                                std::to_string(min_value) + " (got '" + text + "')");
  }
  return static_cast<int>(v);
}

namespace {

// The position variables of a rank's environment; kUnset where absent.
constexpr int kUnset = -1;
struct EnvPosition {
  int rank = 0;
  int world_size = kUnset;
  int local_rank = kUnset;
  int local_world_size = kUnset;
  int node_rank = kUnset;
  int nnodes = kUnset;
};

// Errors of the variables among themselves.
std::vector<std::string> PositionErrors(const EnvPosition& p) {
  std::vector<std::string> errors;
  if (p.world_size != kUnset && p.rank >= p.world_size) {
    errors.push_back(std::string(env::kRank) + ": must be < " + env::kWorldSize + " (" +
                     std::to_string(p.world_size) + "), got " + std::to_string(p.rank));
  }
  if (p.local_rank != kUnset && p.local_world_size != kUnset &&
      p.local_rank >= p.local_world_size) {
    errors.push_back(std::string(env::kLocalRank) + ": must be < " + env::kLocalWorldSize + " (" +
                     std::to_string(p.local_world_size) + "), got " + std::to_string(p.local_rank));
  }
  return errors;
}

// Errors of the variables against the layout the job gives SKRULL_RANK.
std::vector<std::string> PositionErrors(const EnvPosition& p, const RankLayout& l) {
  const struct {
    const char* name;
    int got;
    int want;
  } vars[] = {{env::kWorldSize, p.world_size, l.world_size()},
              {env::kLocalRank, p.local_rank, l.local_rank()},
              {env::kLocalWorldSize, p.local_world_size, l.procs_per_node()},
              {env::kNodeRank, p.node_rank, l.node_rank()},
              {env::kNnodes, p.nnodes, l.nnodes()}};
  std::vector<std::string> errors;
  for (const auto& v : vars) {
    if (v.got == kUnset || v.got == v.want) continue;
    errors.push_back(std::string(v.name) + ": " + std::to_string(v.got) + " disagrees with " +
                     env::kRank + " " + std::to_string(l.rank()) +
                     " under the job's spec.parallelism (nodes " + std::to_string(l.nnodes()) +
                     " x procsPerNode " + std::to_string(l.procs_per_node()) + "), which needs " +
                     std::to_string(v.want) + "; start the ranks with `skrull-trainer --job FILE`");
  }
  return errors;
}

std::string GetOr(const EnvMap& env, const char* name, const std::string& fallback) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

StatusOr<int> ParseFlagInt(const std::string& flag, const std::string& text, int min_value) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < min_value || v > 1 << 30) {
    return InvalidArgumentError(flag + ": must be an integer >= " + std::to_string(min_value) +
                                " (got '" + text + "')");
  }
  return static_cast<int>(v);
}

std::string DefaultRunId() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count()) + "-" +
         std::to_string(getpid());
}

std::atomic<int> g_interrupt_signal{0};

extern "C" void SkrullLauncherSignalHandler(int sig) { g_interrupt_signal.store(sig); }

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int64_t UnixMicrosNow() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sets result->failure (and failure_record) to the rank that failed first
// among the failed ones, by their failure records (PickFailedRank).
void BlameFirstFailure(const LaunchOptions& options, const std::string& run_id,
                       const std::vector<int64_t>& seen_unix_micros, LaunchResult* result) {
  std::vector<FailedRank> failed;
  std::vector<size_t> index;
  for (size_t i = 0; i < result->ranks.size(); ++i) {
    const RankOutcome& r = result->ranks[i];
    if (r.exit.success()) continue;
    FailedRank f;
    if (!options.output_dir.empty())
      f.record = ReadFailureRecord(options.output_dir, r.rank, run_id);
    f.signal = r.exit.signal;
    f.stopped_by_launcher = r.stopped_by_launcher;
    f.seen_unix_micros = seen_unix_micros[i];
    failed.push_back(std::move(f));
    index.push_back(i);
  }
  result->failed_ranks = static_cast<int>(failed.size());
  if (failed.empty()) return;
  const size_t pick = PickFailedRank(failed);
  result->failure = result->ranks[index[pick]];
  result->failure_record = failed[pick].record;
}

}  // namespace

EnvMap EnvironmentToMap(char** environ_ptr) {
  EnvMap env;
  for (char** p = environ_ptr; p != nullptr && *p != nullptr; ++p) {
    std::string kv(*p);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

StatusOr<std::optional<RankEnv>> ParseRankEnv(const EnvMap& env,
                                              const api::ParallelismSpec& parallelism) {
  if (env.find(env::kRank) == env.end()) return std::optional<RankEnv>();
  RankEnv r;
  std::vector<std::string> errors;
  auto take = [&](const char* name, int min_value, int def) {
    auto v = ParseIntVar(env, name, min_value, def);
    if (!v.ok()) errors.push_back(v.status().message());
    return v.ok() ? *v : def;
  };
  EnvPosition pos;
  pos.rank = take(env::kRank, 0, 0);
  pos.world_size = take(env::kWorldSize, 1, kUnset);
  pos.local_rank = take(env::kLocalRank, 0, kUnset);
  pos.local_world_size = take(env::kLocalWorldSize, 1, kUnset);
  pos.node_rank = take(env::kNodeRank, 0, kUnset);
  pos.nnodes = take(env::kNnodes, 1, kUnset);
  r.master_port = take(env::kMasterPort, 1, 0);
  r.rendezvous_timeout_seconds = take(env::kRendezvousTimeoutSeconds, 1, 300);
  r.master_addr = GetOr(env, env::kMasterAddr, "127.0.0.1");
  r.job_file = GetOr(env, env::kJobFile, "");
  r.output_dir = GetOr(env, env::kOutputDir, "");
  r.gloo_interface = GetOr(env, env::kGlooInterface, "");
  r.run_id = GetOr(env, env::kRunId, "");
  if (errors.empty()) errors = PositionErrors(pos);
  if (errors.empty()) {
    StatusOr<RankLayout> layout = RankLayout::Make(parallelism, pos.rank);
    if (layout.ok()) {
      r.layout = *layout;
      errors = PositionErrors(pos, r.layout);
    } else {
      errors.push_back(layout.status().message());
    }
  }
  if (errors.empty() && r.layout.world_size() > 1 && r.master_port == 0) {
    errors.push_back(std::string(env::kMasterPort) +
                     ": required when the job has more than one process");
  }
  if (!errors.empty()) {
    std::string msg = "trainer rank environment: ";
    for (size_t i = 0; i < errors.size(); ++i) msg += (i ? "; " : "") + errors[i];
    return InvalidArgumentError(msg);
  }
  return std::optional<RankEnv>(r);
}

std::string RankSummaryPath(const std::string& output_dir, int rank) {
  return output_dir + "/ranks/rank-" + std::to_string(rank) + "/summary.json";
}

std::string RankLogPath(const std::string& output_dir, int rank) {
  return output_dir + "/logs/rank-" + std::to_string(rank) + ".log";
}

Status ParseMasterFlag(const std::string& text, NodeFlags* flags) {
  std::string host = text;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos)
      return InvalidArgumentError("--master: unclosed '[' in '" + text + "'");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':')
        return InvalidArgumentError("--master: expected HOST[:PORT], got '" + text + "'");
      port = text.substr(close + 2);
    }
  } else if (auto colon = text.rfind(':'); colon != std::string::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty())
    return InvalidArgumentError("--master: empty host in '" + text + "'; use HOST[:PORT]");
  flags->master_addr = host;
  if (!port.empty()) {
    SKRULL_ASSIGN_OR_RETURN(int p, ParseFlagInt("--master port", port, 1));
    if (p > 65535)
      return InvalidArgumentError("--master: port must be <= 65535 (got " + port + ")");
    flags->master_port = p;
  }
  return OkStatus();
}

Status CheckNodeFlagsAgainstJob(const api::JobSpec& job, const std::string& job_file,
                                const NodeFlags& flags, const EnvMap& env) {
  const int nodes = job.parallelism.nodes;
  const std::string nnodes_name = flags.nnodes ? "--nnodes" : env::kNnodes;
  const std::string node_rank_name = flags.node_rank ? "--node-rank" : env::kNodeRank;
  std::vector<std::string> errors;
  int nnodes = nodes;
  if (flags.nnodes) {
    nnodes = *flags.nnodes;
  } else if (auto v = ParseIntVar(env, env::kNnodes, 1, nodes); v.ok()) {
    nnodes = *v;
  } else {
    errors.push_back(v.status().message());
  }
  int node_rank = 0;
  if (flags.node_rank) {
    node_rank = *flags.node_rank;
  } else if (auto v = ParseIntVar(env, env::kNodeRank, 0, 0); v.ok()) {
    node_rank = *v;
  } else {
    errors.push_back(v.status().message());
  }
  if (nnodes != nodes) {
    errors.push_back(nnodes_name + " " + std::to_string(nnodes) + ": disagrees with " + job_file +
                     ", whose spec.parallelism.nodes is " + std::to_string(nodes) +
                     "; give the job's node count or change the job");
  }
  if (node_rank >= nodes) {
    errors.push_back(node_rank_name + " " + std::to_string(node_rank) +
                     ": must be < spec.parallelism.nodes (" + std::to_string(nodes) + ") of " +
                     job_file + "; this node's rank is 0.." + std::to_string(nodes - 1));
  }
  if (errors.empty()) return OkStatus();
  std::string msg;
  for (size_t i = 0; i < errors.size(); ++i) msg += (i ? "; " : "") + errors[i];
  return InvalidArgumentError(msg);
}

StatusOr<LaunchOptions> LaunchOptionsForJob(const api::JobSpec& job, const std::string& job_file,
                                            const NodeFlags& flags, const EnvMap& env,
                                            const std::string& program,
                                            std::vector<std::string> worker_args) {
  SKRULL_RETURN_IF_ERROR(CheckNodeFlagsAgainstJob(job, job_file, flags, env));
  LaunchOptions o;
  o.job_name = job.name;
  o.job_file = job_file;
  o.base_env = env;
  o.procs_per_node = job.parallelism.procs_per_node;
  o.output_dir = GetOr(env, env::kOutputDir, api::OutputDirOf(job));
  SKRULL_ASSIGN_OR_RETURN(int env_nnodes, ParseIntVar(env, env::kNnodes, 1, job.parallelism.nodes));
  SKRULL_ASSIGN_OR_RETURN(int env_node_rank, ParseIntVar(env, env::kNodeRank, 0, 0));
  SKRULL_ASSIGN_OR_RETURN(int env_port, ParseIntVar(env, env::kMasterPort, 1, 0));
  o.nnodes = flags.nnodes.value_or(env_nnodes);
  o.node_rank = flags.node_rank.value_or(env_node_rank);
  o.master_addr = flags.master_addr.value_or(GetOr(env, env::kMasterAddr, ""));
  o.master_port = flags.master_port.value_or(env_port);
  if (o.nnodes > 1) {
    if (o.master_addr.empty()) {
      return InvalidArgumentError(
          "--master HOST[:PORT] is required when the job has more than one node (or set " +
          std::string(env::kMasterAddr) + " and " + env::kMasterPort + ")");
    }
    if (o.master_port == 0) o.master_port = 29500;
  } else if (o.master_addr.empty()) {
    o.master_addr = "127.0.0.1";
  }
  o.worker_argv.push_back(program);
  for (auto& a : worker_args) o.worker_argv.push_back(std::move(a));
  return o;
}

int LaunchResult::ExitCode() const {
  if (ok) return 0;
  if (interrupted_by_signal != 0) return 128 + interrupted_by_signal;
  if (failure) return failure->exit.ShellCode() != 0 ? failure->exit.ShellCode() : 1;
  return 1;
}

std::string LaunchResult::Describe() const {
  std::ostringstream os;
  if (ok) {
    os << "all " << ranks.size() << " rank(s) finished in " << wall_seconds << " s";
    if (!summary_path.empty()) os << "; summary: " << summary_path;
    return os.str();
  }
  if (interrupted_by_signal != 0) {
    os << "interrupted by signal " << interrupted_by_signal << " ("
       << strsignal(interrupted_by_signal) << "); forwarded to " << ranks.size()
       << " rank(s), all gone after " << teardown_seconds << " s";
    return os.str();
  }
  if (failure) {
    const int others = static_cast<int>(ranks.size()) - 1;
    os << "rank " << failure->rank << " (local rank " << failure->local_rank << ", pid "
       << failure->pid << ") failed first, with " << failure->exit.Describe();
    if (failure_record) {
      os << " (" << failure_record->status << (failure_record->peer ? ", a collective" : "") << ")";
    }
    if (failed_ranks > 1) {
      os << "; " << failed_ranks - 1 << " other rank(s) failed after it";
    }
    os << "; stopped the other " << others << " rank(s) in " << teardown_seconds << " s";
    if (!failure->log_path.empty()) {
      os << "\n--- last lines of " << failure->log_path << " ---\n" << failure_log_tail;
      if (!failure_log_tail.empty() && failure_log_tail.back() != '\n') os << "\n";
      os << "---";
    }
  }
  return os.str();
}

std::string TailOfFile(const std::string& path, int lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff window = std::min<std::streamoff>(size, 64 * 1024);
  in.seekg(size - window);
  std::string text(static_cast<size_t>(window), '\0');
  in.read(text.data(), window);
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  int seen = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++seen == lines) break;
    --pos;
  }
  return text.substr(pos);
}

StatusOr<int> PickFreePort(const std::string& host) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return InvalidArgumentError("PickFreePort: '" + host + "' is not an IPv4 address");
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(fd);
    return UnavailableError("cannot bind a port on " + host + ": " + std::strerror(err));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

const std::atomic<int>* InstallForwardingSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = SkrullLauncherSignalHandler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return &g_interrupt_signal;
}

StatusOr<LaunchResult> RunNode(const LaunchOptions& options, ProcessSpawner* spawner,
                               const std::atomic<int>* interrupt_signal) {
  SKRULL_CHECK(spawner != nullptr);
  if (options.procs_per_node < 1) {
    return InvalidArgumentError("spec.parallelism.procsPerNode: must be >= 1 (got " +
                                std::to_string(options.procs_per_node) + ")");
  }
  if (options.worker_argv.empty()) return InvalidArgumentError("launcher: no worker program");
  const auto start = std::chrono::steady_clock::now();
  int master_port = options.master_port;
  if (master_port == 0) {
    if (options.nnodes > 1) {
      return InvalidArgumentError("launcher: a multi-node job needs an explicit master port");
    }
    SKRULL_ASSIGN_OR_RETURN(master_port, PickFreePort("127.0.0.1"));
  }
  const int world = options.nnodes * options.procs_per_node;
  const std::string run_id = GetOr(options.base_env, env::kRunId, DefaultRunId());
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int omp_threads = std::max(1, static_cast<int>(hw) / options.procs_per_node);

  LaunchResult result;
  for (int local = 0; local < options.procs_per_node; ++local) {
    const int rank = RankLayout::GlobalRank(options.node_rank, local, options.procs_per_node);
    SpawnRequest req;
    req.argv = options.worker_argv;
    req.env = options.base_env;
    req.env[env::kRank] = std::to_string(rank);
    req.env[env::kWorldSize] = std::to_string(world);
    req.env[env::kLocalRank] = std::to_string(local);
    req.env[env::kLocalWorldSize] = std::to_string(options.procs_per_node);
    req.env[env::kNodeRank] = std::to_string(options.node_rank);
    req.env[env::kNnodes] = std::to_string(options.nnodes);
    req.env[env::kMasterAddr] = options.master_addr;
    req.env[env::kMasterPort] = std::to_string(master_port);
    req.env[env::kRunId] = run_id;
    if (!options.job_file.empty()) req.env[env::kJobFile] = options.job_file;
    if (!options.output_dir.empty()) req.env[env::kOutputDir] = options.output_dir;
    if (req.env.find(env::kOmpNumThreads) == req.env.end()) {
      req.env[env::kOmpNumThreads] = std::to_string(omp_threads);
    }
    req.log_path = options.output_dir.empty() ? "" : RankLogPath(options.output_dir, rank);
    if (!options.output_dir.empty()) {
      std::error_code ignored;  // an earlier launch's record must not be read as this one's
      std::filesystem::remove(RankFailurePath(options.output_dir, rank), ignored);
    }
    req.truncate_log = true;  // a failure's log tail is this launch's, never an earlier one's
    if (options.echo_output) req.echo_prefix = "[rank " + std::to_string(rank) + "] ";
    auto pid = spawner->Spawn(req);
    if (!pid.ok()) {
      for (auto& r : result.ranks) spawner->Signal(r.pid, SIGKILL);
      while (spawner->WaitAny(std::chrono::milliseconds(2000))) {
      }
      return pid.status().WithContext("launching rank " + std::to_string(rank));
    }
    RankOutcome o;
    o.rank = rank;
    o.local_rank = local;
    o.pid = *pid;
    o.log_path = req.log_path;
    result.ranks.push_back(o);
  }

  std::vector<bool> done(result.ranks.size(), false);
  std::vector<int64_t> seen_unix_micros(result.ranks.size(), 0);
  bool failure_seen = false;
  size_t remaining = result.ranks.size();
  std::optional<std::chrono::steady_clock::time_point> teardown_start;
  std::optional<std::chrono::steady_clock::time_point> kill_deadline;
  bool killed = false;
  auto signal_running = [&](int sig) {
    for (size_t i = 0; i < result.ranks.size(); ++i) {
      if (done[i]) continue;
      result.ranks[i].stopped_by_launcher = true;
      spawner->Signal(result.ranks[i].pid, sig);
    }
  };

  while (remaining > 0) {
    const int pending = interrupt_signal ? interrupt_signal->load() : 0;
    if (pending != 0 && result.interrupted_by_signal == 0) {
      result.interrupted_by_signal = pending;
      if (!teardown_start) teardown_start = std::chrono::steady_clock::now();
      kill_deadline = std::chrono::steady_clock::now() + options.kill_grace;
      signal_running(pending);
    }
    // Notes an exit; true when it is the run's first failure.
    auto note_exit = [&](const ProcessExit& exit) {
      for (size_t i = 0; i < result.ranks.size(); ++i) {
        if (done[i] || result.ranks[i].pid != exit.pid) continue;
        done[i] = true;
        --remaining;
        result.ranks[i].exit = exit;
        seen_unix_micros[i] = UnixMicrosNow();
        if (!exit.success() && !failure_seen && !result.ranks[i].stopped_by_launcher &&
            result.interrupted_by_signal == 0) {
          failure_seen = true;
          return true;
        }
      }
      return false;
    };
    auto exit = spawner->WaitAny(std::chrono::milliseconds(20));
    if (exit && note_exit(*exit)) {
      teardown_start = std::chrono::steady_clock::now();
      kill_deadline = *teardown_start + options.kill_grace;
      // Ranks that already ended (the one that failed first, often) are
      // noted as ending on their own, not as stopped by this SIGTERM.
      while (auto ended = spawner->WaitAny(std::chrono::milliseconds(0))) note_exit(*ended);
      signal_running(SIGTERM);
    }
    if (kill_deadline && !killed && std::chrono::steady_clock::now() >= *kill_deadline) {
      killed = true;
      signal_running(SIGKILL);
    }
  }
  if (teardown_start) result.teardown_seconds = SecondsSince(*teardown_start);
  result.wall_seconds = SecondsSince(start);
  result.ok = !result.failure && result.interrupted_by_signal == 0;
  for (const auto& r : result.ranks) result.ok = result.ok && r.exit.success();
  if (!result.ok && result.interrupted_by_signal == 0) {
    BlameFirstFailure(options, run_id, seen_unix_micros, &result);
  }
  if (result.failure) {
    result.failure_log_tail = TailOfFile(result.failure->log_path, options.log_tail_lines);
  }
  if (!options.output_dir.empty()) {
    const std::string path =
        options.output_dir + (options.node_rank == 0
                                  ? "/summary.json"
                                  : "/summary.node" + std::to_string(options.node_rank) + ".json");
    Status s = WriteRunSummary(path, options, result, world);
    if (s.ok()) {
      result.summary_path = path;
    } else {
      std::cerr << "skrull launcher: cannot write " << path << ": " << s << "\n";
    }
  }
  return result;
}

int RunLauncherMain(const api::JobSpec& job, const std::string& job_file, const NodeFlags& flags,
                    std::vector<std::string> worker_args, const EnvMap& env,
                    const std::string& program) {
  auto options = LaunchOptionsForJob(job, job_file, flags, env, program, std::move(worker_args));
  if (!options.ok()) {
    std::cerr << "skrull-trainer: " << options.status() << "\n";
    return 2;
  }
  const std::atomic<int>* interrupt = InstallForwardingSignalHandlers();
  std::cerr << "skrull launcher: job " << job.name << ", node " << options->node_rank << "/"
            << options->nnodes << ", starting " << options->procs_per_node << " rank(s); logs in "
            << options->output_dir << "/logs\n";
  PosixProcessSpawner spawner;
  auto result = RunNode(*options, &spawner, interrupt);
  if (!result.ok()) {
    std::cerr << "skrull-trainer: " << result.status() << "\n";
    return 1;
  }
  std::cerr << "skrull launcher: " << result->Describe() << "\n";
  return result->ExitCode();
}

}  // namespace skrull::dist
