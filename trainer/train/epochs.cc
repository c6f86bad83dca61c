#include "trainer/train/epochs.h"

namespace skrull::train {

StatusOr<int64_t> TotalSteps(const api::TrainingSpec& training, int64_t samples,
                             int64_t global_batch) {
  SKRULL_CHECK(samples >= 1 && global_batch >= 1);
  if (training.epochs <= 0) return training.steps;
  // epochs < 2^31 (validated) times any int64 sample count fits 128 bits.
  const __int128 need = static_cast<__int128>(training.epochs) * samples;
  const __int128 steps = (need + global_batch - 1) / global_batch;
  if (steps > api::kMaxSteps) {
    return InvalidArgumentError(
        "spec.training.epochs: " + std::to_string(training.epochs) + " epochs of " +
        std::to_string(samples) + " samples at a global batch of " + std::to_string(global_batch) +
        " is more than " + std::to_string(api::kMaxSteps) + " steps; lower epochs");
  }
  if (training.warmup_steps >= steps) {
    return InvalidArgumentError("spec.training.warmupSteps: must be < the " +
                                std::to_string(static_cast<int64_t>(steps)) +
                                " steps that spec.training.epochs gives (got " +
                                std::to_string(training.warmup_steps) + "); lower warmupSteps");
  }
  return static_cast<int64_t>(steps);
}

std::string DescribeLength(const api::TrainingSpec& training, int64_t samples, int64_t global_batch,
                           int64_t total_steps) {
  if (training.epochs <= 0) {
    return std::to_string(total_steps) + " steps (spec.training.steps)";
  }
  return std::to_string(training.epochs) + (training.epochs == 1 ? " epoch" : " epochs") + " x " +
         std::to_string(samples) + " samples / global batch " + std::to_string(global_batch) +
         " = " + std::to_string(total_steps) + " steps";
}

}  // namespace skrull::train
