// Learning-rate schedule: linear warmup, then cosine / linear decay to
// min_lr_ratio x peak, or constant. Pure function of the step.
//
//   step < warmup:  lr = peak * (step + 1) / warmup      (step 0 already learns)
//   after warmup:   p = (step - warmup) / max(1, steps - warmup - 1), clamped to [0, 1]
//                   cosine:   lr = min + (peak - min) * (1 + cos(pi * p)) / 2
//                   linear:   lr = peak - (peak - min) * p
//                   constant: lr = peak
//   where min = peak * min_lr_ratio; the last step (steps - 1) runs at min.
#ifndef SKRULL_TRAINER_TRAIN_LR_SCHEDULE_H_
#define SKRULL_TRAINER_TRAIN_LR_SCHEDULE_H_

#include <cstdint>

#include "api/job_spec.h"

namespace skrull::train {

struct LrScheduleOptions {
  double peak_lr = 1e-4;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  api::LrSchedule kind = api::LrSchedule::kCosine;
  double min_lr_ratio = 0.1;
};

LrScheduleOptions LrScheduleFromSpec(const api::TrainingSpec& training);

// Learning rate of optimizer step `step` (0-based).
double LearningRateAt(const LrScheduleOptions& options, int64_t step);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_LR_SCHEDULE_H_
