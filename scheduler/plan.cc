#include "scheduler/plan.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "scheduler/cost_model.h"
#include "scheduler/layout.h"

namespace skrull::scheduler {
namespace {

std::string Where(const MicroBatch& mb) {
  return "micro-batch (dp_rank " + std::to_string(mb.dp_rank) + ", index " +
         std::to_string(mb.index) + ")";
}

// Sub-group codes: -2 - (first << kLogBits | log2(size)).
constexpr int kLogBits = 5;

int Log2(int size) {
  int log = 0;
  while ((1 << log) < size) ++log;
  return log;
}

}  // namespace

bool IsAlignedSubGroup(int first, int size, int cp) {
  return size >= 2 && size < cp && (size & (size - 1)) == 0 && first >= 0 && first % size == 0 &&
         first + size <= cp;
}

int NextGroupSize(int size, int cp) {
  if (size >= cp) return 0;
  return size * 2 < cp ? size * 2 : cp;
}

int SmallestGroupSize(int64_t length, int cp, int64_t bucket_size_tokens) {
  int size = 1;
  while (size != 0 && ShardTokens(length, size) > bucket_size_tokens) {
    size = NextGroupSize(size, cp);
  }
  return size;
}

int SubGroupCode(int first, int size) {
  SKRULL_CHECK(size >= 2 && (size & (size - 1)) == 0 && first >= 0 && first % size == 0)
      << "not an aligned sub-group: first " << first << " size " << size;
  return -2 - ((first << kLogBits) | Log2(size));
}

ShardGroup GroupOfCode(int code, int cp) {
  if (code >= 0) return ShardGroup{code, 1};
  if (code == kDistributed) return ShardGroup{0, cp};
  const int v = -2 - code;
  const ShardGroup g{v >> kLogBits, 1 << (v & ((1 << kLogBits) - 1))};
  if (g.first == 0 && g.size == cp) return g;
  SKRULL_CHECK(IsAlignedSubGroup(g.first, g.size, cp))
      << "placement code " << code << " is no aligned sub-group of cp " << cp;
  return g;
}

ShardGroup PlacedSequence::Group(int cp) const {
  if (!distributed()) return ShardGroup{cp_rank, 1};
  if (group_size == 0) return ShardGroup{0, cp};
  return ShardGroup{group_first, group_size};
}

int PlacedSequence::Code(int cp) const {
  if (!distributed()) return cp_rank;
  if (!on_sub_group(cp)) return kDistributed;
  return SubGroupCode(group_first, group_size);
}

PlacedSequence PlacedSequence::FromCode(int64_t id, int64_t length, int code, int cp) {
  PlacedSequence s{id, length, code >= 0 ? code : kDistributed};
  if (code < kDistributed) {
    const ShardGroup g = GroupOfCode(code, cp);
    if (g.size != cp) {
      s.group_first = g.first;
      s.group_size = g.size;
    }
  }
  return s;
}

void FillDerived(MicroBatch& mb, int cp, const CostModel& cost) {
  mb.cp_rank_tokens.assign(static_cast<size_t>(cp), 0);
  mb.cp_rank_flops.assign(static_cast<size_t>(cp), 0.0);
  for (const PlacedSequence& s : mb.sequences) {
    const ShardGroup g = s.Group(cp);
    SKRULL_CHECK(g.first >= 0 && g.first + g.size <= cp)
        << "sequence " << s.id << " on ranks [" << g.first << ", " << g.first + g.size << ") cp "
        << cp;
    const double flops =
        g.size == 1 ? cost.FlopsPerSequence(s.length) : cost.FlopsSharded(s.length, g.size);
    for (int i = 0; i < g.size; ++i) {
      mb.cp_rank_tokens[g.first + i] += ZigZagRankTokens(s.length, g.size, i);
      mb.cp_rank_flops[g.first + i] += flops;
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
        if (!s.distributed()) continue;
        os << " " << s.id << "(" << s.length << ")";
        const ShardGroup g = s.Group(topology.cp);
        if (g.size != topology.cp) os << "@cp" << g.first << ".." << g.first + g.size - 1;
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
        if (!s.distributed() && (s.group_size != 0 || s.group_first != 0)) {
          return InternalError(Where(mb) + ": sequence id " + std::to_string(s.id) +
                               " is local on CP rank " + std::to_string(s.cp_rank) +
                               " but names a sub-group (group_size " +
                               std::to_string(s.group_size) + ")");
        }
        if (s.on_sub_group(cp) && !IsAlignedSubGroup(s.group_first, s.group_size, cp)) {
          return InternalError(
              Where(mb) + ": sequence id " + std::to_string(s.id) + " sub-group [" +
              std::to_string(s.group_first) + ", +" + std::to_string(s.group_size) +
              ") is not an aligned power-of-two sub-group of CP " + std::to_string(cp));
        }
        if (s.distributed() && s.group_size == cp && s.group_first != 0) {
          return InternalError(Where(mb) + ": sequence id " + std::to_string(s.id) +
                               " spans all CP ranks but group_first is " +
                               std::to_string(s.group_first));
        }
        const ShardGroup g = s.Group(cp);
        for (int i = 0; i < g.size; ++i) {
          tokens[g.first + i] += ZigZagRankTokens(s.length, g.size, i);
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
