// Builds the drawable Timeline (timeline_svg.h) of a Plan from the
// simulator's time model.
#ifndef SKRULL_SCHEDULER_CLI_TIMELINE_H_
#define SKRULL_SCHEDULER_CLI_TIMELINE_H_

#include "scheduler/cli/timeline_svg.h"
#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/plan.h"

namespace skrull::scheduler::cli {

// Lays out every micro-batch of every DP rank on the time axis:
//   - micro-batch durations, per-CP-rank busy times and the CP communication
//     time are SimulateMicroBatch's, and the iteration end is SimulatePlan's,
//     so the drawing agrees with `simulate` and with the printed totals;
//   - within a CP rank, the split into one box per local sequence and one per
//     distributed shard follows the same formulas (dense GEMMs at the rank's
//     token count, attention at each sequence's or shard's query length),
//     scaled so the boxes add up to the simulator's per-rank time;
//   - the communication bar starts with the micro-batch and overlaps the
//     local boxes (Time_j = max(comm, local_j) + dist_j); distributed boxes
//     start once both are done.
// `title` becomes the first heading line; the second is generated.
Timeline BuildTimeline(const Plan& plan, const CostModel& cost, const HardwareProfile& hardware,
                       const std::string& title);

}  // namespace skrull::scheduler::cli

#endif  // SKRULL_SCHEDULER_CLI_TIMELINE_H_
