#include "controller/local/local_runner.h"

#include <signal.h>

#include <cstdio>
#include <filesystem>

#include "common/file_util.h"
#include "trainer/dist/env.h"
#include "trainer/dist/launcher.h"

namespace skrull::local {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The last non-blank line of `text`, at most 240 characters.
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  std::string line = text.substr(start, end + 1 - start);
  if (line.size() > 240) line = line.substr(0, 237) + "...";
  return line;
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGKILL:
      return "SIGKILL";
    default:
      return "signal " + std::to_string(sig);
  }
}

// "60 steps, loss 5.532 -> 1.563, 22.0k tokens/s, bucketSize 2048"
std::string DescribeSummary(const tuner::RunSummary& s) {
  char buf[160];
  const double tps = s.tokens_per_second;
  char rate[32];
  if (tps >= 1e4) {
    std::snprintf(rate, sizeof(rate), "%.1fk", tps / 1e3);
  } else {
    std::snprintf(rate, sizeof(rate), "%.0f", tps);
  }
  std::snprintf(buf, sizeof(buf), "%lld steps, loss %.3f -> %.3f, %s tokens/s, bucketSize %lld",
                static_cast<long long>(s.steps), s.initial_loss, s.final_loss, rate,
                static_cast<long long>(s.bucket_size_tokens));
  return buf;
}

// The environment of the launcher: the caller's, without the variables that
// would make it a rank or a node of a multi-node job.
std::map<std::string, std::string> LauncherEnv(std::map<std::string, std::string> env,
                                               const std::string& run_dir) {
  namespace e = dist::env;
  for (const char* name : {e::kRank, e::kWorldSize, e::kLocalRank, e::kLocalWorldSize, e::kNodeRank,
                           e::kNnodes, e::kMasterAddr, e::kMasterPort, e::kJobFile}) {
    env.erase(name);
  }
  env[e::kOutputDir] = run_dir;
  return env;
}

}  // namespace

const char* RunPhaseName(RunPhase phase) {
  return phase == RunPhase::kSucceeded ? "Succeeded" : "Failed";
}

StatusOr<api::JobSpec> DeriveRunJob(const api::JobSpec& job, const std::string& run_dir,
                                    std::optional<int64_t> bucket_size_tokens) {
  std::error_code ec;
  std::string base = job.source_dir;
  if (base.empty()) base = fs::current_path(ec).string();
  // Loading the spec's own YAML against its directory resolves every relative
  // path the way LoadJobSpecFile does.
  SKRULL_ASSIGN_OR_RETURN(api::JobSpec derived,
                          api::LoadJobSpec(api::ToYaml(job), "job " + job.name, base));
  derived.training.output_dir = fs::absolute(run_dir, ec).lexically_normal().string();
  const std::string origin = "run " + derived.training.output_dir;
  if (bucket_size_tokens) return api::WithBucketSize(derived, *bucket_size_tokens, origin);
  SKRULL_RETURN_IF_ERROR(api::ValidateJobSpec(derived, origin));
  return derived;
}

LocalRunner::LocalRunner(LocalRunnerOptions options, dist::ProcessSpawner* spawner)
    : options_(std::move(options)), spawner_(spawner) {
  SKRULL_CHECK(spawner_ != nullptr);
}

StatusOr<RunResult> LocalRunner::Run(const api::JobSpec& job, const RunRequest& request) {
  if (options_.trainer_binary.empty()) {
    return InvalidArgumentError("local runner: the skrull-trainer binary is not set");
  }
  if (job.parallelism.nodes != 1) {
    return FailedPreconditionError(
        "spec.parallelism.nodes: the local runner runs one machine (got " +
        std::to_string(job.parallelism.nodes) +
        "); run the job on Kubernetes, or start `skrull-trainer --job FILE --nnodes N "
        "--node-rank R --master HOST:PORT` on each node");
  }
  std::error_code ec;
  RunResult result;
  result.run_index = request.run_index;
  result.run_dir = fs::absolute(request.run_dir, ec).lexically_normal().string();
  result.job_file = (fs::path(result.run_dir) / "job.yaml").string();
  result.launcher_log = (fs::path(result.run_dir) / "launcher.log").string();
  result.requested_bucket_size_tokens = request.bucket_size_tokens.value_or(0);
  SKRULL_ASSIGN_OR_RETURN(api::JobSpec derived,
                          DeriveRunJob(job, result.run_dir, request.bucket_size_tokens));
  fs::create_directories(result.run_dir, ec);
  if (ec) return IoError(result.run_dir + ": cannot create the run directory: " + ec.message());
  SKRULL_RETURN_IF_ERROR(WriteFileAtomically(result.job_file, api::ToYaml(derived)));
  const std::string summary_path = (fs::path(result.run_dir) / "summary.json").string();
  fs::remove(summary_path, ec);
  if (ec) {
    return IoError(summary_path + ": cannot remove the previous run's summary: " + ec.message());
  }

  dist::SpawnRequest spawn;
  spawn.argv = {options_.trainer_binary, "--job", result.job_file};
  spawn.argv.insert(spawn.argv.end(), options_.trainer_args.begin(), options_.trainer_args.end());
  spawn.env = LauncherEnv(options_.env, result.run_dir);
  spawn.log_path = result.launcher_log;
  spawn.truncate_log = true;  // the reason quotes this run's output, never an earlier run's
  if (options_.echo_output) spawn.echo_prefix = "[run " + std::to_string(request.run_index) + "] ";
  const Clock::time_point start = Clock::now();
  StatusOr<dist::Pid> pid = spawner_->Spawn(spawn);
  if (!pid.ok()) return pid.status().WithContext("run " + std::to_string(request.run_index));

  std::optional<dist::ProcessExit> exit;
  Clock::time_point forwarded_at;
  while (!(exit = spawner_->WaitAny(options_.poll_interval))) {
    const int sig = options_.interrupt_signal != nullptr ? options_.interrupt_signal->load() : 0;
    if (sig != 0 && result.interrupted_by_signal == 0) {
      result.interrupted_by_signal = sig;
      forwarded_at = Clock::now();
      spawner_->Signal(*pid, sig);
    } else if (result.interrupted_by_signal != 0 && !result.killed_after_grace &&
               Clock::now() - forwarded_at >= options_.kill_grace) {
      result.killed_after_grace = true;
      spawner_->Signal(*pid, SIGKILL);
    }
  }
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.exit_code = exit->exit_code;
  result.signal = exit->signal;

  StatusOr<tuner::RunSummary> summary = tuner::ReadRunSummary(summary_path);
  if (summary.ok()) {
    result.summary = *summary;
  } else {
    result.summary_error = summary.status().message();
  }
  const std::string launcher_tail = dist::TailOfFile(result.launcher_log, 30);

  // How it died of memory: a rank (the launcher's summary), or the launcher
  // process itself (a single-process run is the rank), unless this runner
  // sent the kill.
  if (result.summary && result.summary->failure) {
    const tuner::RunSummary::Failure& f = *result.summary->failure;
    const std::string evidence = tuner::MemoryFailureEvidence(f.signal, f.log_tail);
    result.died_of_memory = !evidence.empty();
    result.failure = "rank " + std::to_string(f.rank) + ": " + f.description +
                     (evidence.empty() ? "" : "; " + evidence);
  } else if (!exit->success() && result.interrupted_by_signal == 0) {
    const std::string evidence = tuner::MemoryFailureEvidence(exit->signal, launcher_tail);
    result.died_of_memory = !evidence.empty();
    result.failure =
        "skrull-trainer: " + exit->Describe() + (evidence.empty() ? "" : "; " + evidence);
  }

  if (result.interrupted_by_signal != 0) {
    result.reason = "interrupted by " + SignalName(result.interrupted_by_signal) +
                    " (forwarded to skrull-trainer); it ended with " + exit->Describe() +
                    (result.killed_after_grace
                         ? " after SIGKILL, " + std::to_string(options_.kill_grace.count()) +
                               " ms after the forward"
                         : "");
  } else if (exit->success() && result.summary && result.summary->ok) {
    result.phase = RunPhase::kSucceeded;
    result.reason = "Succeeded: " + DescribeSummary(*result.summary);
  } else if (result.summary && result.summary->failure) {
    const tuner::RunSummary::Failure& f = *result.summary->failure;
    result.reason = "rank " + std::to_string(f.rank) + " failed: " + f.description +
                    (f.log.empty() ? "" : " (log " + f.log + ")");
    const std::string last = LastLine(f.log_tail);
    if (!last.empty()) result.reason += ": " + last;
  } else if (exit->success()) {
    result.reason =
        "skrull-trainer exited 0 but " +
        (result.summary ? std::string("summary.json does not say ok") : result.summary_error);
  } else {
    result.reason =
        "skrull-trainer ended with " + exit->Describe() + " (log " + result.launcher_log + ")";
    const std::string last = LastLine(launcher_tail);
    if (!last.empty()) result.reason += ": " + last;
  }
  return result;
}

}  // namespace skrull::local
