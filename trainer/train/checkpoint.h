// Checkpoints on disk: layout, trainer state, atomic commit, resume lookup.
// Torch-free; trainer.cc fills a checkpoint directory with the model and
// optimizer tensors through the `write_files` callback.
//
// Layout:
//   <outputDir>/checkpoints/
//     step-<N>/                      a complete checkpoint after N optimizer steps
//       config.json                  Hugging Face config (the folder loads in transformers)
//       model.safetensors            full fine-tuning: every weight, HF names
//       adapter_model.safetensors    LoRA: the adapters (+ adapter_config.json)
//       optimizer.safetensors        AdamW exp_avg / exp_avg_sq per trainable parameter
//       optimizer.json               AdamW step counters and hyper-parameters
//       trainer_state.json           TrainerState (written last)
//     step-<N>.tmp/                  being written; never read
//     latest                         "step-<N>\n": the newest complete checkpoint
//
// Commit protocol (CommitCheckpoint): the caller writes into step-<N>.tmp;
// every file and the folder are fsynced; the folder is renamed to step-<N>;
// the parent is fsynced; `latest` is replaced atomically. A crash at any
// point leaves the previous checkpoint and `latest` usable: a step-<N> folder
// exists only once complete, and ResolveResumeDir falls back to the newest
// complete step-<N> when `latest` is missing or names a folder that is gone.
//
// Thread safety: functions of their arguments and the filesystem; one writer
// (rank 0) per output directory.
#ifndef SKRULL_TRAINER_TRAIN_CHECKPOINT_H_
#define SKRULL_TRAINER_TRAIN_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::train {

inline constexpr char kTrainerStateFile[] = "trainer_state.json";
inline constexpr char kModelWeightsFile[] = "model.safetensors";
inline constexpr char kAdapterWeightsFile[] = "adapter_model.safetensors";
inline constexpr char kAdapterConfigFile[] = "adapter_config.json";
inline constexpr char kOptimizerTensorsFile[] = "optimizer.safetensors";
inline constexpr char kOptimizerStateFile[] = "optimizer.json";
inline constexpr char kHfConfigFile[] = "config.json";
inline constexpr char kLatestFile[] = "latest";
// Losses kept in TrainerState::loss_history.
inline constexpr size_t kLossHistoryTail = 100;

// Everything besides tensors that a resumed run needs to continue exactly.
struct TrainerState {
  int64_t step = 0;           // optimizer steps completed (= the next step to run)
  uint64_t sampler_seed = 0;  // spec.scheduler.seed the run sampled with
  int64_t data_position = 0;  // index of the next global batch (== step)
  // Samples each data source has given in steps < step (MixtureSampler's
  // state, trainer/data/mixture_sampler.h); empty in checkpoints written
  // before sources existed (the sampler then replays to `step`).
  std::vector<int64_t> source_cursors;
  // spec.data.eval: the last and the lowest validation loss so far and the
  // steps done at the lowest (-1: none yet); optional in the file.
  double last_eval_loss = std::numeric_limits<double>::quiet_NaN();
  double best_eval_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t best_eval_step = -1;
  std::string rng_state_hex;  // torch's default CPU generator state
  // Per-step losses of the last kLossHistoryTail steps; loss_history[i] is
  // the loss of step loss_history_first_step + i.
  std::vector<double> loss_history;
  int64_t loss_history_first_step = 0;
  std::string job_spec_hash;  // JobSpecHash of the job that wrote it
  // Run totals, so a resumed run's summary covers the whole run.
  double initial_loss = 0;
  int64_t tokens = 0;        // tokens trained on, all ranks
  double train_seconds = 0;  // wall time of the steps (excluding checkpoints)
  int64_t rollbacks_dacp = 0;
  int64_t rollbacks_gds = 0;
};

std::string TrainerStateToJson(const TrainerState& state);
// `origin` names the file in errors.
StatusOr<TrainerState> ParseTrainerStateJson(const std::string& text, const std::string& origin);

// <output_dir>/checkpoints
std::string CheckpointsRoot(const std::string& output_dir);
// <output_dir>/checkpoints/step-<step>
std::string CheckpointDir(const std::string& output_dir, int64_t step);

// Writes the checkpoint of `step`: removes a leftover step-<step>.tmp, calls
// `write_files(tmp_dir)` to fill it (it must write kTrainerStateFile last),
// fsyncs, renames to step-<step> (replacing an older folder of that step),
// fsyncs the parent, and points `latest` at it. Returns the final folder.
StatusOr<std::string> CommitCheckpoint(
    const std::string& output_dir, int64_t step,
    const std::function<Status(const std::string& tmp_dir)>& write_files);

// The checkpoint folder to resume from:
//   resume_from == ""        -> nullopt (fresh run)
//   resume_from == "latest"  -> the folder `latest` names if complete, else the
//                               newest complete step-<N> under output_dir,
//                               else nullopt (nothing to resume: fresh run)
//   otherwise                -> that folder; NotFound/InvalidArgument when it
//                               is missing or holds no kTrainerStateFile.
StatusOr<std::optional<std::string>> ResolveResumeDir(const std::string& output_dir,
                                                      const std::string& resume_from);

// spec.checkpoint.keepLast: deletes the complete step-<N> folders older than
// the newest `keep_last` ones, sparing the folder `latest` names; step-<N>.tmp
// and .shards folders (a checkpoint being written) are never touched.
// keep_last <= 0 keeps all. Returns the folders deleted. Call after
// CommitCheckpoint.
StatusOr<std::vector<std::string>> PruneCheckpoints(const std::string& output_dir,
                                                    int64_t keep_last);

// Reads <dir>/trainer_state.json.
StatusOr<TrainerState> ReadTrainerState(const std::string& dir);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_CHECKPOINT_H_
