// LocalRunner: runs a SkrullJob on this machine as processes, the embedded
// default for one machine (`skrull-controller run JOB.yaml`).
//
// One run:
//   1. derives the run's job (DeriveRunJob): spec.training.outputDir = the
//      run directory and, when asked, spec.scheduler.bucketSize = N (what the
//      tuner recommended); writes it to <run dir>/job.yaml with api::ToYaml;
//   2. spawns `skrull-trainer --job <run dir>/job.yaml [trainer_args]` through
//      a dist::ProcessSpawner in its own process group, output written to
//      <run dir>/launcher.log, which starts empty for every run (a failure's
//      last line is this run's). The trainer's launcher starts the
//      procsPerNode ranks itself (trainer/dist/launcher.h);
//   3. forwards SIGINT/SIGTERM/SIGHUP (polled from `interrupt_signal`) to the
//      process group once; the launcher stops its ranks (SIGTERM, then
//      SIGKILL after its own 10 s). If the launcher is still there
//      `kill_grace` after the forward, the group gets SIGKILL;
//   4. reads <run dir>/summary.json and reports a RunResult.
// Phase is Succeeded when the launcher exited 0, was not interrupted, and
// summary.json says ok; Failed otherwise, with a one-line reason naming the
// failed rank, its exit code or signal, its log and the log's last line.
//
// The runner talks to the trainer only through the process, its environment
// (trainer/dist/env.h), the job file and the output files.
//
// Thread safety: a LocalRunner runs one job at a time, from one thread.
#ifndef SKRULL_CONTROLLER_LOCAL_LOCAL_RUNNER_H_
#define SKRULL_CONTROLLER_LOCAL_LOCAL_RUNNER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "controller/tuner/run_dir.h"
#include "trainer/dist/process_spawner.h"

namespace skrull::local {

struct LocalRunnerOptions {
  // The skrull-trainer binary: a path, or a name looked up on PATH. Required.
  std::string trainer_binary;
  // The launcher's environment (main passes its own). The rank and rendezvous
  // variables of trainer/dist/env.h are removed (a local run is one node that
  // picks its own port); SKRULL_OUTPUT_DIR is set to the run directory.
  std::map<std::string, std::string> env;
  // Extra trainer flags after `--job FILE`, e.g. {"--device", "cpu"}.
  std::vector<std::string> trainer_args;
  // Polled while a run is in flight: a non-zero value is a signal to forward
  // (dist::InstallForwardingSignalHandlers returns such a flag). nullptr =
  // never interrupted. Not owned.
  const std::atomic<int>* interrupt_signal = nullptr;
  // How long after a forwarded signal the launcher may take before its group
  // gets SIGKILL. Longer than the launcher's own SIGTERM -> SIGKILL grace
  // (10 s) so the ranks are gone first.
  std::chrono::milliseconds kill_grace{30000};
  std::chrono::milliseconds poll_interval{100};
  // Also copy the launcher's output to stderr, each line prefixed "[run k] ".
  bool echo_output = true;
};

struct RunRequest {
  std::string run_dir;                        // the run's outputDir; created. Made absolute.
  int run_index = 1;                          // 1-based, for messages and the echo prefix
  std::optional<int64_t> bucket_size_tokens;  // overrides spec.scheduler.bucketSize
};

enum class RunPhase { kSucceeded, kFailed };
const char* RunPhaseName(RunPhase phase);  // "Succeeded", "Failed"

struct RunResult {
  RunPhase phase = RunPhase::kFailed;
  int run_index = 1;
  std::string run_dir;       // absolute
  std::string job_file;      // <run_dir>/job.yaml, the job the trainer ran
  std::string launcher_log;  // <run_dir>/launcher.log
  // How the launcher process ended.
  int exit_code = 0;
  int signal = 0;
  int interrupted_by_signal = 0;    // the signal this runner forwarded, 0 if none
  bool killed_after_grace = false;  // this runner sent SIGKILL after kill_grace
  // One line for status and events: "Succeeded: 60 steps, loss 5.532 ->
  // 1.563, 22.0k tokens/s, bucketSize 2048", "rank 1 failed: signal 9
  // (Killed) (log .../rank-1.log): <its last line>", ...
  std::string reason;
  // The run died of memory, and the evidence (tuner::MemoryFailureEvidence).
  bool died_of_memory = false;
  std::string failure;
  int64_t requested_bucket_size_tokens = 0;  // the override, 0 when none
  std::optional<tuner::RunSummary> summary;  // when summary.json was read
  std::string summary_error;                 // why it was not, "" when it was
  double wall_seconds = 0;                   // spawn to exit, measured here
};

// The job a run executes: `job` with relative paths resolved against
// job.source_dir (or the working directory when it is empty),
// training.outputDir = run_dir and, when given, bucketSize = tokens.
// Validated (api::ValidateJobSpec); InvalidArgument lists the problems with
// origin "run <run_dir>".
StatusOr<api::JobSpec> DeriveRunJob(const api::JobSpec& job, const std::string& run_dir,
                                    std::optional<int64_t> bucket_size_tokens);

class LocalRunner {
 public:
  // `spawner` is not owned and must outlive the runner.
  LocalRunner(LocalRunnerOptions options, dist::ProcessSpawner* spawner);

  // Runs `job` once and waits for it. Returns an error only when the run
  // could not start: FailedPrecondition for a job one machine cannot run
  // (spec.parallelism.nodes > 1), the job's validation errors, I/O errors
  // writing the run directory, or the spawn failing (names the binary). A
  // run that starts and fails is a RunResult with phase kFailed.
  //
  // A summary.json left in run_dir by an earlier run is removed first, so
  // the one read afterwards is this run's. metrics*.jsonl are appended to by
  // the trainer (a resumed run continues them).
  StatusOr<RunResult> Run(const api::JobSpec& job, const RunRequest& request);

  const LocalRunnerOptions& options() const { return options_; }

 private:
  LocalRunnerOptions options_;
  dist::ProcessSpawner* spawner_;
};

}  // namespace skrull::local

#endif  // SKRULL_CONTROLLER_LOCAL_LOCAL_RUNNER_H_
