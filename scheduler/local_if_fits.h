// The `local-if-fits` policy: no context parallelism for a sequence that
// does not need it. What a practitioner writes when CP exists only for the
// long tail:
//   - a sequence longer than BucketSize is sharded over its DP rank's whole
//     CP group. These go first, LPT by FLOPs over the DP ranks (each costs
//     FlopsPerSequence / cp on every GPU of its rank);
//   - every other sequence runs whole on one GPU: LPT by FLOPs over all
//     dp x cp GPUs (longest first, each to the GPU with the fewest FLOPs so
//     far counting the sharded sequences' share, lowest index on ties);
//   - per DP rank, the sharded sequences are packed first-fit decreasing
//     into micro-batches (balanced-cp's packing); then each GPU's own
//     sequences, longest first, go into the first micro-batch where that GPU
//     still has room, a new micro-batch when none has.
// Private to scheduler/.
#ifndef SKRULL_SCHEDULER_LOCAL_IF_FITS_H_
#define SKRULL_SCHEDULER_LOCAL_IF_FITS_H_

#include <vector>

#include "scheduler/cost_model.h"
#include "scheduler/plan.h"

namespace skrull::scheduler {

// Fills plan.ranks (sized topology.dp) with the policy's micro-batches.
// REQUIRES: plan.topology and plan.bucket_size_tokens set, every sequence
// FitsCpGroup (layout.h).
void ScheduleLocalIfFits(const std::vector<Sequence>& batch, const CostModel& cost, Plan& plan);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_LOCAL_IF_FITS_H_
