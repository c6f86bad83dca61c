#include "trainer/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace skrull::train {

LrScheduleOptions LrScheduleFromSpec(const api::TrainingSpec& training) {
  LrScheduleOptions o;
  o.peak_lr = training.learning_rate;
  o.warmup_steps = training.warmup_steps;
  o.total_steps = training.steps;
  o.kind = training.schedule;
  o.min_lr_ratio = training.min_lr_ratio;
  return o;
}

double LearningRateAt(const LrScheduleOptions& o, int64_t step) {
  if (step < o.warmup_steps) {
    return o.peak_lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  }
  if (o.kind == api::LrSchedule::kConstant) return o.peak_lr;
  const double min_lr = o.peak_lr * o.min_lr_ratio;
  const int64_t decay_steps = std::max<int64_t>(1, o.total_steps - o.warmup_steps - 1);
  const double p = std::clamp(static_cast<double>(step - o.warmup_steps) / decay_steps, 0.0, 1.0);
  if (o.kind == api::LrSchedule::kLinear) return o.peak_lr - (o.peak_lr - min_lr) * p;
  return min_lr + (o.peak_lr - min_lr) * 0.5 * (1.0 + std::cos(M_PI * p));
}

}  // namespace skrull::train
