// The training loop of one rank.
//
//   JobSpec -> ModelConfig (config.json) -> DecoderModel (weights or seeded
//   init) -> Dataset (lengths indexed up front) -> Sampler
//   per step s:
//     global batch = Sampler.GlobalBatch(s); lengths -> scheduler::Schedule
//     -> this rank's micro-batches (MicroBatchBuilder) -> forward / backward
//     of LossSum / (label tokens of the whole global batch)
//     -> gradient all-reduce (Collectives, once) -> clip -> AdamW at the
//     scheduled LR -> metrics (metrics.jsonl, Prometheus) -> progress line
//     -> checkpoint every checkpointEvery steps and at the end.
//
// Every rank computes the same plan from the same inputs; the step result
// does not depend on how sequences are grouped into micro-batches. A resumed
// run (resumeFrom) continues from the checkpoint's step with the same data
// order, optimizer state and LR schedule, so its losses and weights match an
// uninterrupted run's.
//
// Hardware profile and BucketSize: spec.scheduler.hardwareProfile, when set,
// is loaded once (LoadHardwareProfileFile, hardware_profile_file.h) and prices every step's plan
// (ScheduleOptions::hardware); unset, the scheduler's built-in H100 profile
// does. bucketSize auto takes the profile's bucket_size_tokens; with no
// profile a CPU run derives it from host memory with the analytic memory
// model (with a notice) and a CUDA run fails, asking for
// `skrull-trainer --profile`. Rank 0 logs which profile and BucketSize it used.
//
// Where the process sits (rank, DP x CP, local rank): dist::RankLayout
// (trainer/dist/rank_layout.h, torch-free), validated once by its creator and
// only asked here.
//
// Memory (device_memory.h): every step records this rank's memory peak (CUDA:
// the caching allocator's reserved and allocated peaks of that step; CPU: the
// process's peak RSS) and the capacity (CUDA: free device memory plus the
// allocator's reservation, re-read after the first step; CPU: host memory)
// in metrics.jsonl and the skrull_memory_* gauges; summary.json
// has the run's peaks. An out-of-memory error (c10::OutOfMemoryError) ends the
// run with an OutOfMemory status after writing <outputDir>/oom[-rank<r>].json
// (trainer/metrics/oom_record.h); a run that starts removes its rank's old one.
// One raised inside a gradient hook (packing a bucket for the reduction that
// overlaps backward) reaches every rank: the rank still joins the step's
// collectives (collectives.h, GradientReducer), the step's scalar all-reduce
// carries the flag, and every rank writes its record and returns OutOfMemory.
//
// Device and precision: dist::ChooseRankDevice (trainer/dist/rank_device.h),
// the rule the NCCL groups follow: under `auto`, CUDA (cuda:<local rank>) when
// resources.gpusPerProc > 0 and a GPU is visible, else CPU; never two ranks
// of a node on one GPU. CPU runs train in float32 (a bf16 spec is run in
// float32 on CPU, with a notice).
//
// Outputs under <outputDir>: checkpoints/ (checkpoint.h), metrics.jsonl
// (rank 0; metrics-rank<r>.jsonl for other ranks), and summary.json
// (train_summary.h) from single-process runs.
#ifndef SKRULL_TRAINER_TRAIN_TRAINER_H_
#define SKRULL_TRAINER_TRAIN_TRAINER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "scheduler/plan.h"
#include "trainer/dist/rank_layout.h"
#include "trainer/train/collectives.h"
#include "trainer/train/context_parallel.h"
#include "trainer/train/device_memory.h"
#include "trainer/train/train_summary.h"

namespace skrull::train {

struct TrainerOptions {
  // Stop after this many steps of this invocation (writing a checkpoint), as
  // a preempted run would; 0 = run to spec.training.steps.
  int64_t stop_after_steps = 0;
  // "auto" (from resources.gpusPerProc and what is visible), "cpu", "cuda[:N]".
  std::string device = "auto";
  // Serve Prometheus /metrics on spec.metrics.port + local_rank.
  bool serve_metrics = true;
  // Where to write the summary JSON; "" = <outputDir>/summary.json.
  std::string summary_path;
  // Progress lines and notices (rank 0); nullptr = std::cerr.
  std::ostream* log = nullptr;
  // Polled between steps: a non-zero value (a signal number) makes every rank
  // stop after the current step and write a checkpoint. May be null.
  const std::atomic<int>* stop_signal = nullptr;
  // Required when contextParallel > 1 (trainer/dist supplies it).
  ContextParallelAttentionFactory cp_attention;
  // Test hook: called on every step's plan after scheduling and before it
  // runs; may rewrite the plan (the same way on every rank: plans must stay
  // equal) or stall the rank. An error stops training. Empty in
  // skrull-trainer: the scheduler's plan fits BucketSize in the exact layout
  // the trainer runs (scheduler/layout.h), so nothing corrects it here.
  std::function<Status(scheduler::Plan* plan)> plan_hook_for_testing;
  // Where the step's memory peak and the capacity come from; empty =
  // MakeDeviceMemory (the CUDA caching allocator, or host memory on CPU).
  DeviceMemoryFactory device_memory;
  // Test hook (skrull-trainer reads it from SKRULL_TEST_OOM_AT_STEP): step
  // N's micro-batches throw c10::OutOfMemoryError as a CUDA allocation that
  // does not fit would. -1 = never.
  int64_t out_of_memory_at_step = -1;
  // Test hook (skrull-trainer sets it on the rank SKRULL_TEST_DISK_FULL_ON_RESUME_RANK
  // names): resuming from a checkpoint fails with an I/O error as a full disk
  // would, after the ranks agreed on the checkpoint. Tests the launcher's blame.
  bool disk_full_on_resume = false;
  // Test hook (SKRULL_TEST_OOM_IN_GRAD_HOOK_AT_STEP, for the ranks
  // SKRULL_TEST_OOM_IN_GRAD_HOOK_RANK names): packing a gradient bucket
  // inside a gradient hook at step N throws c10::OutOfMemoryError (see
  // GradientReducer). -1 = never.
  int64_t out_of_memory_in_gradient_hook_at_step = -1;
};

// Trains the rank `layout` places in `job`: the process's rank, its DP and CP
// ranks and sizes, and its local rank (GPU, metrics port) all come from
// `layout` (RankLayout::Make(job.parallelism, rank); RankLayout() for one
// process). `collectives` connects the world group (LocalCollectives for one
// process). Errors from the job's files (config, weights, data, checkpoints)
// name the file and field; an out-of-memory error is returned as
// OutOfMemory (after writing the out-of-memory record), other libtorch
// exceptions as Internal. Writes the summary (options).
StatusOr<TrainSummary> RunTrainer(const api::JobSpec& job, const dist::RankLayout& layout,
                                  Collectives* collectives, const TrainerOptions& options = {});

// Stable hash of the parts of a job that must not change across a resume
// (model, data, parallelism, scheduler, optimizer; not steps, outputDir,
// resumeFrom, logging or metrics). 16 hex digits.
std::string JobSpecHash(const api::JobSpec& job);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_TRAINER_H_
