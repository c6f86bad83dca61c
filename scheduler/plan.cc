#include "scheduler/plan.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "scheduler/cost_model.h"
#include "scheduler/policy.h"

namespace skrull::scheduler {
namespace {

std::string Where(const MicroBatch& mb) {
  return "micro-batch (dp_rank " + std::to_string(mb.dp_rank) + ", index " +
         std::to_string(mb.index) + ")";
}

}  // namespace

void FillDerived(MicroBatch& mb, int cp, const CostModel& cost) {
  mb.cp_rank_tokens.assign(static_cast<size_t>(cp), 0);
  mb.cp_rank_flops.assign(static_cast<size_t>(cp), 0.0);
  for (const PlacedSequence& s : mb.sequences) {
    if (s.distributed()) {
      const int64_t shard = ShardTokens(s.length, cp);
      const double flops = cost.FlopsSharded(s.length, cp);
      for (int r = 0; r < cp; ++r) {
        mb.cp_rank_tokens[r] += shard;
        mb.cp_rank_flops[r] += flops;
      }
    } else {
      SKRULL_CHECK(s.cp_rank >= 0 && s.cp_rank < cp) << "cp_rank " << s.cp_rank << " cp " << cp;
      mb.cp_rank_tokens[s.cp_rank] += s.length;
      mb.cp_rank_flops[s.cp_rank] += cost.FlopsPerSequence(s.length);
    }
  }
}

void FillDerived(Plan& plan, const CostModel& cost) {
  for (DpRankPlan& rank : plan.ranks) {
    for (MicroBatch& mb : rank.micro_batches) FillDerived(mb, plan.topology.cp, cost);
  }
}

std::string Plan::DebugString() const {
  std::ostringstream os;
  os << "plan policy=" << policy << " dp=" << topology.dp << " cp=" << topology.cp
     << " bucket_size=" << bucket_size_tokens << " micro_batches=" << NumMicroBatches()
     << " rollbacks(dacp=" << rollbacks.dacp << ", gds=" << rollbacks.gds << ")\n";
  for (const DpRankPlan& rank : ranks) {
    for (const MicroBatch& mb : rank.micro_batches) {
      os << "  dp " << mb.dp_rank << " mb " << mb.index << ":";
      if (mb.empty()) {
        os << " (empty)\n";
        continue;
      }
      os << "\n";
      for (size_t r = 0; r < mb.cp_rank_tokens.size(); ++r) {
        char line[96];
        std::snprintf(line, sizeof(line), "    cp %-3zu tokens %8lld (%5.1f%%) flops %10.3e  ", r,
                      static_cast<long long>(mb.cp_rank_tokens[r]),
                      bucket_size_tokens > 0 ? 100.0 * static_cast<double>(mb.cp_rank_tokens[r]) /
                                                   static_cast<double>(bucket_size_tokens)
                                             : 0.0,
                      r < mb.cp_rank_flops.size() ? mb.cp_rank_flops[r] : 0.0);
        os << line << "local:";
        for (const PlacedSequence& s : mb.sequences) {
          if (s.cp_rank == static_cast<int>(r)) os << " " << s.id << "(" << s.length << ")";
        }
        os << "\n";
      }
      os << "    distributed:";
      for (const PlacedSequence& s : mb.sequences) {
        if (s.distributed()) os << " " << s.id << "(" << s.length << ")";
      }
      os << "\n";
    }
  }
  return os.str();
}

Status VerifyPlan(const Plan& plan, const std::vector<Sequence>& batch) {
  const int dp = plan.topology.dp;
  const int cp = plan.topology.cp;
  if (dp < 1 || cp < 1) {
    return InternalError("plan topology dp=" + std::to_string(dp) + " cp=" + std::to_string(cp));
  }
  if (static_cast<int>(plan.ranks.size()) != dp) {
    return InternalError("plan has " + std::to_string(plan.ranks.size()) + " DP ranks, want " +
                         std::to_string(dp));
  }
  std::unordered_map<int64_t, int64_t> want;  // id -> length
  for (const Sequence& s : batch) want[s.id] = s.length;
  std::unordered_map<int64_t, int> seen;
  const size_t num_mbs = plan.ranks[0].micro_batches.size();
  for (int d = 0; d < dp; ++d) {
    const auto& mbs = plan.ranks[d].micro_batches;
    if (mbs.size() != num_mbs) {
      return InternalError("DP rank " + std::to_string(d) + " has " + std::to_string(mbs.size()) +
                           " micro-batches, DP rank 0 has " + std::to_string(num_mbs));
    }
    for (size_t i = 0; i < mbs.size(); ++i) {
      const MicroBatch& mb = mbs[i];
      if (mb.dp_rank != d || mb.index != static_cast<int>(i)) {
        return InternalError(Where(mb) + " stored at dp_rank " + std::to_string(d) + " index " +
                             std::to_string(i));
      }
      std::vector<int64_t> tokens(static_cast<size_t>(cp), 0);
      for (const PlacedSequence& s : mb.sequences) {
        auto it = want.find(s.id);
        if (it == want.end()) {
          return InternalError(Where(mb) + ": sequence id " + std::to_string(s.id) +
                               " is not in the batch");
        }
        if (it->second != s.length) {
          return InternalError(Where(mb) + ": sequence id " + std::to_string(s.id) +
                               " has length " + std::to_string(s.length) + ", the batch says " +
                               std::to_string(it->second));
        }
        if (++seen[s.id] > 1) {
          return InternalError("sequence id " + std::to_string(s.id) + " placed more than once");
        }
        if (s.cp_rank < kDistributed || s.cp_rank >= cp) {
          return InternalError(Where(mb) + ": sequence id " + std::to_string(s.id) + " cp_rank " +
                               std::to_string(s.cp_rank) + " outside [-1, " + std::to_string(cp) +
                               ")");
        }
        if (s.distributed()) {
          for (auto& t : tokens) t += ShardTokens(s.length, cp);
        } else {
          tokens[s.cp_rank] += s.length;
        }
      }
      if (mb.cp_rank_tokens != tokens) {
        return InternalError(Where(mb) + ": cp_rank_tokens do not match its sequences");
      }
      if (mb.cp_rank_flops.size() != static_cast<size_t>(cp)) {
        return InternalError(Where(mb) + ": cp_rank_flops has " +
                             std::to_string(mb.cp_rank_flops.size()) + " entries, want " +
                             std::to_string(cp));
      }
      for (int r = 0; r < cp; ++r) {
        if (tokens[r] > plan.bucket_size_tokens) {
          return InternalError(Where(mb) + ": CP rank " + std::to_string(r) + " holds " +
                               std::to_string(tokens[r]) + " tokens, above BucketSize " +
                               std::to_string(plan.bucket_size_tokens));
        }
      }
    }
  }
  for (const Sequence& s : batch) {
    if (seen.count(s.id) == 0) {
      return InternalError("sequence id " + std::to_string(s.id) + " (length " +
                           std::to_string(s.length) + ") is not placed");
    }
  }
  return OkStatus();
}

}  // namespace skrull::scheduler
