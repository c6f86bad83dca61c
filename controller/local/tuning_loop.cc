#include "controller/local/tuning_loop.h"

#include <atomic>
#include <filesystem>

#include "common/file_util.h"
#include "controller/tuner/run_dir.h"

namespace skrull::local {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json RunRecordJson(const RunRecord& r) {
  const RunResult& res = r.result;
  const auto figure = [&](auto value) {
    return res.summary && res.summary->steps > 0 ? json(value) : json(nullptr);
  };
  json j = {{"run", res.run_index},
            {"run_dir", res.run_dir},
            {"bucket_size_tokens", r.bucket_size_tokens > 0 ? json(r.bucket_size_tokens) : json()},
            {"phase", RunPhaseName(res.phase)},
            {"reason", res.reason},
            {"exit_code", res.exit_code},
            {"signal", res.signal},
            {"died_of_memory", res.died_of_memory},
            {"failure", res.failure},
            {"steps", figure(res.summary ? res.summary->steps : 0)},
            {"tokens_per_second", figure(res.summary ? res.summary->tokens_per_second : 0)},
            {"peak_memory_bytes", figure(res.summary ? res.summary->peak_memory_bytes : 0)},
            {"wall_seconds", res.wall_seconds},
            {"decision", r.decision ? tuner::TuningDecisionToJson(*r.decision) : json(nullptr)},
            {"tuning_error", r.tuning_error}};
  return j;
}

}  // namespace

bool TuningLoopReport::ok() const {
  return !runs.empty() && runs.back().result.phase == RunPhase::kSucceeded;
}

int TuningLoopReport::ExitCode() const {
  if (stopped_by_signal != 0) return 128 + stopped_by_signal;
  if (ok()) return 0;
  if (!runs.empty() && runs.back().result.interrupted_by_signal != 0) {
    return 128 + runs.back().result.interrupted_by_signal;
  }
  return 1;
}

std::string RunDirFor(const api::JobSpec& job, int run_index, int runs) {
  if (runs <= 1) return job.training.output_dir;
  return (fs::path(job.training.output_dir) / ("run-" + std::to_string(run_index))).string();
}

json TuningHistoryJson(const api::JobSpec& job, const TuningLoopReport& report) {
  json runs = json::array();
  for (const RunRecord& r : report.runs) runs.push_back(RunRecordJson(r));
  return {
      {"job", job.name},
      {"runs", runs},
      {"stopped_by_signal", report.stopped_by_signal},
      {"next_bucket_size_tokens",
       report.next_bucket_size_tokens > 0 ? json(report.next_bucket_size_tokens) : json(nullptr)}};
}

StatusOr<TuningLoopReport> RunWithTuning(LocalRunner* runner, const api::JobSpec& job,
                                         const TuningLoopOptions& options) {
  SKRULL_CHECK(runner != nullptr);
  if (options.runs < 1) {
    return InvalidArgumentError("--runs: must be >= 1 (got " + std::to_string(options.runs) + ")");
  }
  // Resolve the outputDir once, so every run and the history agree on it.
  SKRULL_ASSIGN_OR_RETURN(api::JobSpec resolved,
                          DeriveRunJob(job, job.training.output_dir, std::nullopt));
  TuningLoopReport report;
  if (resolved.tuning.enabled || options.runs > 1) {
    report.history_path = (fs::path(resolved.training.output_dir) / "tuning-history.json").string();
  }
  const auto write_history = [&]() -> Status {
    if (report.history_path.empty()) return OkStatus();
    return WriteFileAtomically(report.history_path,
                               TuningHistoryJson(resolved, report).dump(2) + "\n");
  };
  std::optional<int64_t> bucket;
  const std::atomic<int>* interrupt = runner->options().interrupt_signal;
  for (int k = 1; k <= options.runs; ++k) {
    // A signal that came between two runs ends the loop before the next.
    if (k > 1 && interrupt != nullptr && interrupt->load() != 0) {
      report.stopped_by_signal = interrupt->load();
      SKRULL_RETURN_IF_ERROR(write_history());
      break;
    }
    RunRequest request;
    request.run_index = k;
    request.run_dir = RunDirFor(resolved, k, options.runs);
    request.bucket_size_tokens = bucket;
    SKRULL_ASSIGN_OR_RETURN(RunResult result, runner->Run(resolved, request));

    RunRecord record;
    record.result = std::move(result);
    const RunResult& res = record.result;
    record.bucket_size_tokens = res.summary && res.summary->bucket_size_tokens > 0
                                    ? res.summary->bucket_size_tokens
                                    : res.requested_bucket_size_tokens;
    if (record.bucket_size_tokens == 0 && !resolved.scheduler.bucket_size_auto) {
      record.bucket_size_tokens = resolved.scheduler.bucket_size_tokens;
    }
    if (resolved.tuning.enabled && res.interrupted_by_signal == 0) {
      StatusOr<tuner::TuningInput> input = tuner::ReadRunDirectoryForJob(res.run_dir, resolved);
      if (input.ok()) {
        // A single-process run that died leaves no summary; the runner saw how.
        if (res.died_of_memory && !input->died_of_memory) {
          input->died_of_memory = true;
          input->failure = res.failure;
        }
        if (input->bucket_size_tokens <= 0) input->bucket_size_tokens = record.bucket_size_tokens;
        StatusOr<tuner::TuningDecision> decision =
            tuner::Tune(*input, resolved.tuning, options.tuner);
        if (decision.ok()) {
          record.decision = *decision;
          report.next_bucket_size_tokens = decision->recommended_bucket_size_tokens;
          if (decision->change) bucket = decision->recommended_bucket_size_tokens;
        } else {
          record.tuning_error = decision.status().message();
        }
      } else {
        record.tuning_error = input.status().message();
      }
    }
    report.runs.push_back(std::move(record));
    SKRULL_RETURN_IF_ERROR(write_history());

    const RunResult& last = report.runs.back().result;
    if (last.interrupted_by_signal != 0) break;
    if (last.phase == RunPhase::kFailed &&
        !(resolved.tuning.enabled && last.died_of_memory && report.runs.back().decision &&
          report.runs.back().decision->change)) {
      break;
    }
  }
  return report;
}

}  // namespace skrull::local
