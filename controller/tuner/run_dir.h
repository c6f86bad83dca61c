// Reading a finished trainer run from its output directory: the tuner's
// source for local runs, and the local runner's view of how a run ended.
//
// What the trainer writes there (docs/metrics.md, trainer/dist/run_summary.h,
// trainer/train/train_summary.h):
//   summary.json         the launcher's summary (multi-process: "ok",
//                        "failure", "ranks"[].summary, aggregates) or, for a
//                        single-process run, the trainer's own summary
//   metrics.jsonl        rank 0's steps, one JSON object per line (schema 1)
//   metrics-rank<r>.jsonl   rank r's steps
//   oom.json, oom-rank<r>.json   the out-of-memory record of a rank that ran
//                        out of device memory (trainer/metrics/oom_record.h)
// The controller does not link the trainer: these readers take only the
// fields they need, by name, and ignore the rest, so fields can be added to
// the files without breaking them.
//
// Thread safety: functions on values and files; no shared state.
#ifndef SKRULL_CONTROLLER_TUNER_RUN_DIR_H_
#define SKRULL_CONTROLLER_TUNER_RUN_DIR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "controller/tuner/tuner.h"

namespace skrull::tuner {

// The parts of summary.json the controller uses. Numbers absent from the file
// are 0 (a failed run's summary has no training figures).
struct RunSummary {
  struct Failure {
    int rank = 0;
    int exit_code = 0;
    int signal = 0;
    std::string description;  // "exit code 1" / "signal 9 (Killed)"
    std::string log;          // the rank's log file
    std::string log_tail;     // its last lines
  };
  struct Rank {
    int rank = 0;
    int exit_code = 0;
    int signal = 0;
    bool has_summary = false;  // the rank wrote its own summary
    std::string device;        // "cpu", "cuda:0"; "" without a summary
    uint64_t peak_memory_bytes = 0;
    int64_t bucket_size_tokens = 0;
  };

  std::string path;  // the file read
  bool ok = false;   // the run finished successfully
  std::string job;
  int world_size = 1;
  int procs_per_node = 1;
  int interrupted_by_signal = 0;  // the signal the launcher forwarded, 0 if none
  std::optional<Failure> failure;
  std::vector<Rank> ranks;  // by rank; one entry for a single-process run
  // The job's figures (the lowest rank's, as the launcher lifts them).
  int64_t steps = 0;
  double initial_loss = 0;
  double final_loss = 0;
  double tokens_per_second = 0;
  double wall_seconds = 0;
  int64_t bucket_size_tokens = 0;
  uint64_t peak_memory_bytes = 0;  // the maximum over ranks
};

// Parses summary.json text; `path` names the file in errors. Errors:
// InvalidArgument "<path>:<line>:<column>: not JSON: ..." or "<path>:
// ranks[1].summary.peak_memory_bytes: must be an integer (got "x")"
// (common/json_fields.h).
StatusOr<RunSummary> ParseRunSummary(const std::string& text, const std::string& path);
// Reads and parses <path>. NotFound names the file and says the run may not
// have started or may have been killed before writing it.
StatusOr<RunSummary> ReadRunSummary(const std::string& path);

// What one metrics.jsonl line tells the tuner.
struct StepMemory {
  int rank = 0;
  int64_t step = 0;
  int64_t rank_tokens_peak = 0;
  uint64_t memory_peak_bytes = 0;
  uint64_t memory_capacity_bytes = 0;
  int64_t bucket_size_tokens = 0;
};

// Parses a metrics.jsonl file's text; `path` names it in errors, which also
// give the 1-based line: "<path>:7: memory_peak_bytes: must be an integer
// (got \"x\")", "<path>:3:12: not JSON: ...", "<path>:1:
// schema 2 is not supported (this controller reads schema 1)". A last line
// without its newline that does not parse is dropped (the writer was killed
// mid-line, which is how out-of-memory runs end); `truncated_last_line`, when
// given, says whether that happened. Blank lines are skipped.
StatusOr<std::vector<StepMemory>> ParseMetricsJsonl(const std::string& text,
                                                    const std::string& path,
                                                    bool* truncated_last_line = nullptr);

// The metrics files of a run directory, rank 0 first: metrics.jsonl and
// metrics-rank<r>.jsonl, ascending r. Empty when there are none.
std::vector<std::string> MetricsFiles(const std::string& output_dir);

// When a failure looks like running out of memory, the evidence ("signal 9
// (Killed), which is what the kernel's OOM killer sends", "log: CUDA out of
// memory. Tried to allocate ..."); "" otherwise. `signal` / `log_tail` are the
// failed process's. SIGKILL counts because nothing else in a trainer run sends
// it unprompted (the launcher's own kills are not failures).
std::string MemoryFailureEvidence(int signal, const std::string& log_tail);

// The parts of an out-of-memory record (trainer/metrics/oom_record.h) the
// tuner uses.
struct RankOutOfMemory {
  std::string path;  // the file read
  int rank = 0;
  int64_t step = -1;  // -1: while setting up
  std::string device;
  int64_t bucket_size_tokens = 0;
  std::string message;
};

// Parses an out-of-memory record's text; `path` names the file in errors
// ("<path>: step: must be an integer (got \"x\")", "<path>: schema 2 is not
// supported ...").
StatusOr<RankOutOfMemory> ParseOutOfMemoryRecord(const std::string& text, const std::string& path);

// The out-of-memory records of a run directory, rank 0 first: oom.json and
// oom-rank<r>.json, ascending r. Empty when no rank ran out of memory.
StatusOr<std::vector<RankOutOfMemory>> ReadOutOfMemoryRecords(const std::string& output_dir);

struct RunDirOptions {
  // Ranks per node, which share host memory on CPU. 0 = summary.json's
  // procs_per_node, or without one the number of ranks with metrics.
  int procs_per_node = 0;
};

// Builds the tuner's input from a finished run: steps and capacity from the
// metrics files, BucketSize, roll-backs, device and failure from summary.json
// (the BucketSize from the last step when the summary has none). An
// out-of-memory record makes the run one that died of memory (the tuner's
// step-down rule), whatever else the summary says; it also gives the
// BucketSize and device when the summary does not (a single-process run
// writes no summary when it fails).
// On CPU (device "cpu" in the ranks' summaries or out-of-memory records;
// with neither, assumed: metrics lines name no device) capacity is host
// memory that the node's ranks share, so each rank gets capacity /
// procs_per_node. Known gap: a GPU run that left neither (its launcher was
// killed) has its device capacity divided too, which only makes the tuner
// more cautious; metrics lines would need a device field to tell. Every step of the metrics
// files counts: a resumed run or a re-run into the same directory appends to
// them, which is right as long as the job's model, parallelism and precision
// did not change. A summary without metrics files is fine (a run that died of
// memory before its first step). Errors from the files, with their paths;
// NotFound when there is no summary.json, metrics file or out-of-memory
// record.
StatusOr<TuningInput> ReadRunDirectory(const std::string& output_dir,
                                       const RunDirOptions& options = {});

// ReadRunDirectory with what `job` says: procs_per_node, and for ranks that
// report no capacity (CUDA runs) spec.scheduler.hardwareProfile's
// memory.capacity_bytes (ReadProfileCapacityBytes; its errors are returned
// only when a rank needs it).
StatusOr<TuningInput> ReadRunDirectoryForJob(const std::string& output_dir,
                                             const api::JobSpec& job);

// `skrull-controller tune --run DIR --job JOB.yaml`: ReadRunDirectoryForJob
// then Tune with job.tuning. Errors from either.
StatusOr<TuningDecision> TuneRunDirectory(const std::string& output_dir, const api::JobSpec& job,
                                          const TunerOptions& options = {});

// The memory capacity a hardware profile written by `skrull-trainer
// --profile` measured ("memory": {"capacity_bytes"}), already per rank.
// NotFound / InvalidArgument name the file and the field.
StatusOr<uint64_t> ReadProfileCapacityBytes(const std::string& profile_path);

}  // namespace skrull::tuner

#endif  // SKRULL_CONTROLLER_TUNER_RUN_DIR_H_
