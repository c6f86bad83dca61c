#include "trainer/dist/runtime_guard.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "trainer/train/micro_batch_builder.h"

namespace skrull::dist {

std::vector<int64_t> ExactCpRankTokens(const scheduler::MicroBatch& mb, int cp) {
  std::vector<int64_t> tokens(cp, 0);
  for (const scheduler::PlacedSequence& s : mb.sequences) {
    if (cp == 1) {
      tokens[0] += s.length;
    } else if (!s.distributed()) {
      tokens[s.cp_rank] += s.length;
    } else {
      const scheduler::ShardGroup g = s.Group(cp);
      for (int i = 0; i < g.size; ++i) {
        const auto shard = train::ZigZagShard(s.length, g.size, i);
        tokens[g.first + i] += shard[0].size() + shard[1].size();
      }
    }
  }
  return tokens;
}

int64_t MemoryLimitTokens(double capacity_bytes, double static_bytes,
                          double activation_intercept_bytes, double bytes_per_token,
                          double safety_margin) {
  SKRULL_CHECK(bytes_per_token > 0) << bytes_per_token;
  const double room =
      capacity_bytes * (1.0 - safety_margin) - static_bytes - activation_intercept_bytes;
  return room <= 0 ? 0 : static_cast<int64_t>(std::floor(room / bytes_per_token));
}

StatusOr<RuntimeGuardResult> ApplyRuntimeGuard(scheduler::Plan* plan, int64_t limit_tokens,
                                               const scheduler::CostModel* cost) {
  SKRULL_CHECK(plan != nullptr);
  const int cp = plan->topology.cp;
  RuntimeGuardResult result;
  for (size_t d = 0; d < plan->ranks.size(); ++d) {
    for (scheduler::MicroBatch& mb : plan->ranks[d].micro_batches) {
      bool changed = false;
      for (;;) {
        const std::vector<int64_t> tokens = ExactCpRankTokens(mb, cp);
        // The most loaded rank over the limit.
        int worst = -1;
        for (int r = 0; r < cp; ++r) {
          if (tokens[r] > limit_tokens && (worst < 0 || tokens[r] > tokens[worst])) worst = r;
        }
        if (worst < 0) break;
        // Its shortest local sequence (lowest id on ties), else the shortest
        // sequence on a CP sub-group holding it (widened to all ranks).
        scheduler::PlacedSequence* victim = nullptr;
        for (bool sub_groups : {false, true}) {
          for (scheduler::PlacedSequence& s : mb.sequences) {
            const bool candidate = sub_groups ? s.on_sub_group(cp) && s.Group(cp).Contains(worst)
                                              : cp > 1 && s.cp_rank == worst;
            if (!candidate) continue;
            if (victim == nullptr || s.length < victim->length ||
                (s.length == victim->length && s.id < victim->id)) {
              victim = &s;
            }
          }
          if (victim != nullptr) break;
        }
        if (victim == nullptr) {
          return ResourceExhaustedError(
              "runtime guard: micro-batch " + std::to_string(mb.index) + " of DP rank " +
              std::to_string(d) + ": CP rank " + std::to_string(worst) + " would hold " +
              std::to_string(tokens[worst]) + " tokens" +
              (cp > 1 ? " with no local sequence left to distribute" : "") +
              ", above the limit of " + std::to_string(limit_tokens) +
              " (spec.scheduler.bucketSize or the measured memory); lower bucketSize, raise "
              "contextParallel, or shorten the longest samples (spec.data.maxLength)");
        }
        victim->cp_rank = scheduler::kDistributed;
        victim->group_first = 0;
        victim->group_size = 0;
        result.rollbacks += 1;
        result.rolled_back_ids.push_back(victim->id);
        changed = true;
      }
      if (changed && cost != nullptr) scheduler::FillDerived(mb, cp, *cost);
    }
  }
  return result;
}

}  // namespace skrull::dist
