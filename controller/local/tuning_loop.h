// RunWithTuning: `skrull-controller run JOB.yaml [--runs N]` on one machine.
// Runs the job `runs` times in a row with the LocalRunner; with
// spec.tuning.enabled, after each run the tuner reads the run's directory
// (tuner::ReadRunDirectoryForJob + tuner::Tune) and the next run starts with
// the BucketSize it recommends.
//
// Layout under the job's outputDir:
//   runs == 1:  the run writes to outputDir itself, as `skrull-trainer --job`
//   runs  > 1:  outputDir/run-1, outputDir/run-2, ... (each a fresh run of the
//               whole job: no checkpoint is carried from one run to the next)
//   outputDir/tuning-history.json   with tuning or runs > 1; rewritten
//     (atomically) after every run:
//     {"job", "runs": [{"run", "run_dir", "bucket_size_tokens", "phase",
//       "reason", "exit_code", "signal", "died_of_memory", "failure",
//       "steps", "tokens_per_second", "peak_memory_bytes", "wall_seconds",
//       "decision": <tuner::TuningDecisionToJson> | null, "tuning_error"}],
//      "stopped_by_signal", "next_bucket_size_tokens"}
//   Figures a run did not report (a failed run has no tokens/s) are null.
//
// The loop stops early after an interrupted run (or when the runner's
// interrupt flag is set between runs), and after a failed run the tuner
// cannot help with (one that did not die of memory, or one whose BucketSize
// the tuner could not lower). A run that died
// of memory is followed by one with a smaller BucketSize, when tuning is on.
//
// Thread safety: as LocalRunner.
#ifndef SKRULL_CONTROLLER_LOCAL_TUNING_LOOP_H_
#define SKRULL_CONTROLLER_LOCAL_TUNING_LOOP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/status.h"
#include "controller/local/local_runner.h"
#include "controller/tuner/tuner.h"

namespace skrull::local {

struct TuningLoopOptions {
  int runs = 1;  // >= 1
  tuner::TunerOptions tuner;
};

struct RunRecord {
  RunResult result;
  // The BucketSize the run used: the summary's, else the override, else 0
  // (bucketSize auto and no summary).
  int64_t bucket_size_tokens = 0;
  std::optional<tuner::TuningDecision> decision;  // with tuning, when the tuner could decide
  std::string tuning_error;                       // why it could not
};

struct TuningLoopReport {
  std::vector<RunRecord> runs;
  // What a next run would use: the last decision's recommendation, or 0 when
  // nothing was tuned (the spec's bucketSize stands).
  int64_t next_bucket_size_tokens = 0;
  std::string history_path;   // "" when no history is kept (one run, no tuning)
  int stopped_by_signal = 0;  // a signal that came between two runs and ended the loop

  // The last run succeeded.
  bool ok() const;
  // For main: 128 + signal when a run or the loop was interrupted; else 0
  // when ok(), 1 when not.
  int ExitCode() const;
};

// Where run `run_index` (1-based) of `runs` writes: outputDir, or
// outputDir/run-<k> when runs > 1.
std::string RunDirFor(const api::JobSpec& job, int run_index, int runs);

// The history document (see above).
nlohmann::json TuningHistoryJson(const api::JobSpec& job, const TuningLoopReport& report);

// Runs the loop. Errors: InvalidArgument when runs < 1; a run that could not
// start (LocalRunner::Run's errors) and a history that cannot be written end
// the loop with that error. Everything else is in the report.
StatusOr<TuningLoopReport> RunWithTuning(LocalRunner* runner, const api::JobSpec& job,
                                         const TuningLoopOptions& options);

}  // namespace skrull::local

#endif  // SKRULL_CONTROLLER_LOCAL_TUNING_LOOP_H_
