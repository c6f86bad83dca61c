#include "tests/controller/local/simulated_trainer.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/file_util.h"
#include "trainer/dist/env.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/run_summary.h"
#include "trainer/metrics/step_record.h"

namespace skrull::local::testing {
namespace {

namespace fs = std::filesystem;

void Append(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

std::string MetricsPath(const std::string& out, int rank) {
  return out + (rank == 0 ? "/metrics.jsonl" : "/metrics-rank" + std::to_string(rank) + ".jsonl");
}

}  // namespace

int64_t SimulatedTrainerSpawner::TokensHeld(int64_t bucket, int64_t step, int rank) {
  static constexpr double kFill[] = {0.55, 0.7, 0.85, 1.0, 0.6};
  const auto t = static_cast<int64_t>(std::floor(static_cast<double>(bucket) * kFill[step % 5]));
  return std::max<int64_t>(1, t - 7 * rank);
}

StatusOr<dist::Pid> SimulatedTrainerSpawner::Spawn(const dist::SpawnRequest& request) {
  requests_.push_back(request);
  const dist::Pid pid = 5000 + static_cast<dist::Pid>(requests_.size());
  dist::ProcessExit exit;
  exit.pid = pid;
  const auto job_flag = std::find(request.argv.begin(), request.argv.end(), "--job");
  if (job_flag == request.argv.end() || job_flag + 1 == request.argv.end()) {
    exit.exit_code = 2;
    Append(request.log_path, "skrull-trainer: --job: required\n");
    pending_.push_back(exit);
    return pid;
  }
  StatusOr<api::JobSpec> job = api::LoadJobSpecFile(*(job_flag + 1));
  if (!job.ok()) {
    exit.exit_code = 2;
    Append(request.log_path, "skrull-trainer: " + job.status().message() + "\n");
    pending_.push_back(exit);
    return pid;
  }
  const auto out_it = request.env.find(dist::env::kOutputDir);
  const std::string out = out_it != request.env.end() ? out_it->second : job->training.output_dir;
  const int64_t bucket = job->scheduler.bucket_size_tokens;
  bucket_sizes_.push_back(bucket);
  const int world = job->parallelism.WorldSize();
  Append(request.log_path, "skrull launcher: job " + job->name + ", starting " +
                               std::to_string(world) + " rank(s)\n");

  const int ppn = job->parallelism.procs_per_node;
  const double capacity =
      static_cast<double>(memory_.reported_capacity_bytes) / (memory_.cpu ? ppn : 1);
  // Lockstep steps; the first step some rank cannot hold kills that rank.
  std::optional<std::pair<int, int64_t>> oom;  // (rank, step)
  std::vector<uint64_t> hwm(static_cast<size_t>(world), 0);
  int64_t steps_done = 0;
  for (int64_t step = 0; step < memory_.steps && !oom; ++step) {
    std::vector<std::string> lines;
    for (int r = 0; r < world && !oom; ++r) {
      const int64_t tokens = TokensHeld(bucket, step, r);
      const double bytes =
          memory_.static_bytes + memory_.bytes_per_token * static_cast<double>(tokens);
      if (capacity > 0 && bytes > capacity) {
        oom = std::make_pair(r, step);
        break;
      }
      hwm[static_cast<size_t>(r)] =
          std::max(hwm[static_cast<size_t>(r)], static_cast<uint64_t>(std::llround(bytes)));
      metrics::StepLine l;
      l.job = job->name;
      l.rank = r;
      l.cp_rank = r % job->parallelism.context_parallel;
      l.dp_rank = r / job->parallelism.context_parallel;
      l.node = "sim-host";
      l.time_unix_seconds = 1.7e9 + static_cast<double>(step);
      l.record.step = step;
      l.record.loss = 3.0 / static_cast<double>(step + 1);
      l.record.tokens = static_cast<uint64_t>(tokens);
      l.record.step_seconds = 0.5;
      l.record.rank_tokens_peak = static_cast<uint64_t>(tokens);
      l.record.bucket_size_tokens = static_cast<uint64_t>(bucket);
      l.record.memory_peak_bytes = hwm[static_cast<size_t>(r)];
      l.record.memory_capacity_bytes = memory_.reported_capacity_bytes;
      l.record.micro_batches = 1;
      l.rates = metrics::ComputeStepRates(l.record);
      lines.push_back(metrics::FormatStepLine(l));
    }
    if (oom) {
      // The killed rank was writing its line: leave half of one, no newline.
      const std::string torn = lines.empty() ? "{\"schema\":1,\"job\":" : lines[0].substr(0, 50);
      Append(MetricsPath(out, oom->first), torn);
      break;
    }
    for (int r = 0; r < world; ++r) Append(MetricsPath(out, r), lines[static_cast<size_t>(r)]);
    ++steps_done;
  }

  dist::LaunchOptions lo;
  lo.job_name = job->name;
  lo.output_dir = out;
  lo.procs_per_node = ppn;
  dist::LaunchResult lr;
  lr.wall_seconds = 0.5 * static_cast<double>(steps_done);
  const bool fail = fail_next_.has_value();
  for (int r = 0; r < world; ++r) {
    dist::RankOutcome o;
    o.rank = o.local_rank = r;
    o.pid = pid * 10 + r;
    o.log_path = dist::RankLogPath(out, r);
    if (oom && r == oom->first) {
      o.exit.signal = SIGKILL;
      Append(o.log_path, "step " + std::to_string(oom->second) + "/" +
                             std::to_string(memory_.steps) + " ...\n");
      lr.failure = o;
      lr.failure_log_tail = dist::TailOfFile(o.log_path, 30);
    } else if (fail && r == 0) {
      o.exit.exit_code = fail_next_->first;
      Append(o.log_path, fail_next_->second + "\n");
      lr.failure = o;
      lr.failure_log_tail = dist::TailOfFile(o.log_path, 30);
    } else if (oom || fail) {
      o.exit.signal = SIGTERM;
      o.stopped_by_launcher = true;
    } else {
      const nlohmann::json summary = {
          {"job", job->name},
          {"steps", steps_done},
          {"initial_loss", 3.0},
          {"final_loss", 3.0 / static_cast<double>(steps_done)},
          {"tokens_per_second", 1000.0 * static_cast<double>(bucket) / 8192},
          {"policy", "skrull"},
          {"bucket_size_tokens", bucket},
          {"rank", r},
          {"world_size", world},
          {"device", memory_.cpu ? std::string("cpu") : "cuda:" + std::to_string(r)},
          {"peak_memory_bytes", hwm[static_cast<size_t>(r)]},
          {"rollbacks", {{"dacp", 0}, {"gds", 0}}}};
      SKRULL_RETURN_IF_ERROR(
          WriteFileAtomically(dist::RankSummaryPath(out, r), summary.dump(2) + "\n"));
    }
    lr.ranks.push_back(o);
  }
  lr.ok = !lr.failure.has_value();
  SKRULL_RETURN_IF_ERROR(dist::WriteRunSummary(out + "/summary.json", lo, lr, world));
  exit.exit_code = lr.ExitCode();
  Append(request.log_path, "skrull launcher: " + lr.Describe() + "\n");
  fail_next_.reset();
  pending_.push_back(exit);
  return pid;
}

std::optional<dist::ProcessExit> SimulatedTrainerSpawner::WaitAny(std::chrono::milliseconds) {
  if (pending_.empty()) return std::nullopt;
  dist::ProcessExit e = pending_.front();
  pending_.pop_front();
  return e;
}

}  // namespace skrull::local::testing
