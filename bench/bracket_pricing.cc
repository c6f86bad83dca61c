#include "bench/bracket_pricing.h"

#include "bench/bench_util.h"
#include "scheduler/deepspeed_bracket.h"
#include "scheduler/simulator.h"

namespace skrull::bench {

void AddBracketSeconds(const std::vector<scheduler::Sequence>& batch,
                       const scheduler::ScheduleOptions& options, const scheduler::CostModel& cost,
                       const scheduler::HardwareProfile& hw, const scheduler::Plan& skrull,
                       BracketSeconds* sums) {
  for (const scheduler::DeepSpeedHypothesis& h : scheduler::DeepSpeedBracket()) {
    scheduler::ScheduleOptions ho = options;
    ho.micro_batch_size = h.micro_batch_size;
    const scheduler::Plan plan =
        VerifiedOrAbort(h.policy, scheduler::Schedule(h.policy, batch, ho, cost), batch);
    sums->baseline[h.name] += scheduler::SimulatePlan(plan, cost, hw, h.sync).seconds;
    sums->skrull[h.name] += scheduler::SimulatePlan(skrull, cost, hw, h.sync).seconds;
  }
}

}  // namespace skrull::bench
