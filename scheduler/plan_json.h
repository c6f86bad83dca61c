// Plan <-> JSON. The format (stable; the CLI and the trainer's logs use it):
//   {"policy": "skrull", "dp": 2, "cp": 4, "bucket_size": 26000,
//    "micro_batches": [{"dp_rank": 0, "index": 0,
//                       "sequences": [{"id": 3, "length": 900, "cp_rank": 1},
//                                     {"id": 7, "length": 40000, "cp_rank": -1},
//                                     {"id": 9, "length": 9000, "cp_rank": -1,
//                                      "group_first": 2, "group_size": 2}]}],
//    "rollbacks": {"dacp": 1, "gds": 0}, "schedule_seconds": 0.0004}
// cp_rank -1 means distributed: over all CP ranks, or, with group_first and
// group_size (written only then), over the aligned sub-group [group_first,
// group_first + group_size) (scheduler/plan.h). Derived fields (per-CP-rank tokens and FLOPs)
// are not stored; PlanFromJson recomputes them with the given CostModel.
#ifndef SKRULL_SCHEDULER_PLAN_JSON_H_
#define SKRULL_SCHEDULER_PLAN_JSON_H_

#include <string>

#include "common/status.h"
#include "scheduler/cost_model.h"
#include "scheduler/plan.h"

namespace skrull::scheduler {

std::string PlanToJson(const Plan& plan);

// Parses PlanToJson's format. Errors (InvalidArgument) name the field path,
// e.g. "micro_batches[3].sequences[0].cp_rank: must be -1 or in [0, 4) (got 7)".
// PlanToJson(*PlanFromJson(PlanToJson(p), cost)) == PlanToJson(p).
StatusOr<Plan> PlanFromJson(const std::string& json, const CostModel& cost);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_PLAN_JSON_H_
