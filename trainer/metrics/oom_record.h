// The out-of-memory record: the file a rank writes into its output directory
// when an allocation fails (the CUDA caching allocator's
// c10::OutOfMemoryError), just before skrull-trainer exits with
// kOutOfMemoryExitCode. The BucketSize tuner (controller/tuner/run_dir.h)
// reads it and applies its out-of-memory step-down; docs/metrics.md
// ("Out-of-memory record") documents the format.
//
//   <outputDir>/oom.json            rank 0
//   <outputDir>/oom-rank<r>.json    rank r > 0
//
// One JSON object, written atomically:
//   {"schema": 1, "rank": 1, "step": 3, "device": "cuda:1",
//    "bucket_size_tokens": 16384, "rank_tokens_planned": 16120,
//    "memory_peak_bytes": 79456894976, "memory_peak_allocated_bytes": 76235669504,
//    "memory_capacity_bytes": 85520809984,
//    "message": "CUDA out of memory. Tried to allocate 2.00 GiB ..."}
// "step" is -1 when setting up (model, optimizer) ran out; the memory fields
// are the allocator's peaks of the failing step (0 when unknown).
//
// The constants and OomRecordFileName are header-only so the controller,
// which does not link the trainer, names the same files and exit status.
//
// Thread safety: values.
#ifndef SKRULL_TRAINER_METRICS_OOM_RECORD_H_
#define SKRULL_TRAINER_METRICS_OOM_RECORD_H_

#include <cstdint>
#include <string>

#include "common/status.h"

namespace skrull::metrics {

// skrull-trainer's exit status after an out-of-memory error (a rank's, and
// the launcher's when that rank failed first). Distinct from 1 (other
// failures) and 2 (bad input).
inline constexpr int kOutOfMemoryExitCode = 3;

// Current schema of an out-of-memory record (field "schema").
inline constexpr int kOomRecordSchema = 1;

// "oom.json" for rank 0, "oom-rank<r>.json" for rank r (the metrics.jsonl
// naming).
inline std::string OomRecordFileName(int rank) {
  return rank == 0 ? std::string("oom.json") : "oom-rank" + std::to_string(rank) + ".json";
}

struct OomRecord {
  int rank = 0;
  int64_t step = -1;               // the optimizer step that failed; -1 = during setup
  std::string device;              // "cuda:0", "cpu"
  int64_t bucket_size_tokens = 0;  // the BucketSize in force (0 = not yet known)
  // Most tokens this rank's plan put in one of its micro-batches that step.
  int64_t rank_tokens_planned = 0;
  uint64_t memory_peak_bytes = 0;            // reserved by the allocator (CPU: peak RSS)
  uint64_t memory_peak_allocated_bytes = 0;  // held by tensors (CPU: peak RSS)
  uint64_t memory_capacity_bytes = 0;        // the device's total (CPU: host memory)
  std::string message;                       // the allocator's error, first line
};

// The record as one JSON object (fields in the order above, plus "schema").
std::string FormatOomRecord(const OomRecord& record);

// Writes `record` to <output_dir>/OomRecordFileName(record.rank) atomically;
// returns the path.
StatusOr<std::string> WriteOomRecord(const std::string& output_dir, const OomRecord& record);

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_OOM_RECORD_H_
