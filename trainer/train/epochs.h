// spec.training.epochs: the run's length in optimizer steps once the data is
// indexed (docs/job-spec.md, spec.training).
//
// One epoch is one pass over the training samples; the sampler's stream
// (trainer/data/sampler.h) runs epoch after epoch, so `epochs` passes take
// ceil(epochs x samples / global batch) steps. The last step may reach into
// the next epoch's permutation to fill its global batch, as LLaMA-Factory and
// TRL (drop_last=False) keep a last partial batch rather than dropping it.
// Torch-free.
#ifndef SKRULL_TRAINER_TRAIN_EPOCHS_H_
#define SKRULL_TRAINER_TRAIN_EPOCHS_H_

#include <cstdint>
#include <string>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::train {

// The steps of `training`: training.steps when set (> 0), else
// ceil(epochs x samples / global_batch). InvalidArgument naming
// spec.training.epochs when that is over kMaxSteps, and naming
// spec.training.warmupSteps when warmup is not below the derived count.
// REQUIRES: samples >= 1, global_batch >= 1, and exactly one of steps and
// epochs set (validated).
StatusOr<int64_t> TotalSteps(const api::TrainingSpec& training, int64_t samples,
                             int64_t global_batch);

// "3 epochs x 1000 samples / global batch 16 = 188 steps" (or "200 steps
// (spec.training.steps)"), for the line printed before training starts.
std::string DescribeLength(const api::TrainingSpec& training, int64_t samples, int64_t global_batch,
                           int64_t total_steps);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_EPOCHS_H_
