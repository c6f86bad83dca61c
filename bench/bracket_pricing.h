// The DeepSpeed baseline bracket (scheduler/deepspeed_bracket.h) priced on one
// batch, shared by the benches that report skrull against it: each
// hypothesis's own plan and skrull's plan, both priced with the hypothesis's
// gradient synchronisation (the paper built Skrull on the same DeepSpeed).
#ifndef SKRULL_BENCH_BRACKET_PRICING_H_
#define SKRULL_BENCH_BRACKET_PRICING_H_

#include <map>
#include <string>
#include <vector>

#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"

namespace skrull::bench {

// Seconds summed over the batches added, keyed by hypothesis name.
struct BracketSeconds {
  std::map<std::string, double> baseline, skrull;
};

// Schedules every hypothesis's plan of `batch` under `options` (its own
// micro-batch size), verifies it (abort on a violation, VerifiedOrAbort) and
// adds its seconds and `skrull`'s (skrull's plan of the same batch) to `sums`.
void AddBracketSeconds(const std::vector<scheduler::Sequence>& batch,
                       const scheduler::ScheduleOptions& options, const scheduler::CostModel& cost,
                       const scheduler::HardwareProfile& hw, const scheduler::Plan& skrull,
                       BracketSeconds* sums);

}  // namespace skrull::bench

#endif  // SKRULL_BENCH_BRACKET_PRICING_H_
