#include "scheduler/local_if_fits.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "scheduler/gds.h"
#include "scheduler/layout.h"
#include "scheduler/packing.h"

namespace skrull::scheduler {
namespace {

// One DP rank's micro-batches while local sequences are added: tokens used
// per CP rank in each.
struct RankBatches {
  std::vector<MicroBatch> micro_batches;
  std::vector<std::vector<int64_t>> used;  // [micro-batch][cp rank]
};

// Puts a whole sequence on `cp_rank` in the first micro-batch with room, or
// a new one.
void AddLocal(const Sequence& s, int cp_rank, int cp, int64_t bucket, RankBatches& rank) {
  size_t i = 0;
  while (i < rank.used.size() && rank.used[i][cp_rank] + s.length > bucket) ++i;
  if (i == rank.used.size()) {
    rank.used.emplace_back(static_cast<size_t>(cp), 0);
    rank.micro_batches.emplace_back();
  }
  rank.used[i][cp_rank] += s.length;
  rank.micro_batches[i].sequences.push_back(PlacedSequence::FromCode(s.id, s.length, cp_rank, cp));
}

}  // namespace

void ScheduleLocalIfFits(const std::vector<Sequence>& batch, const CostModel& cost, Plan& plan) {
  const int dp = plan.topology.dp;
  const int cp = plan.topology.cp;
  const int64_t bucket = plan.bucket_size_tokens;
  std::vector<Sequence> sharded, local;
  for (const Sequence& s : batch) (s.length > bucket ? sharded : local).push_back(s);

  // The sharded sequences: LPT over DP ranks.
  std::vector<double> weights;
  for (const Sequence& s : sharded) weights.push_back(cost.FlopsPerSequence(s.length));
  const auto bins = LptBinPack(weights, dp);
  std::vector<double> gpu_load(static_cast<size_t>(dp) * cp, 0.0);
  std::vector<RankBatches> ranks(static_cast<size_t>(dp));
  for (int d = 0; d < dp; ++d) {
    std::vector<Sequence> mine;
    for (int k : bins[d]) {
      mine.push_back(sharded[k]);
      for (int r = 0; r < cp; ++r) gpu_load[d * cp + r] += weights[k] / cp;
    }
    RankBatches& rank = ranks[d];
    rank.micro_batches = AllDistributed(PackFirstFitDecreasing(mine, cp, bucket), d);
    for (const MicroBatch& mb : rank.micro_batches) {
      rank.used.emplace_back(static_cast<size_t>(cp), 0);
      for (const PlacedSequence& s : mb.sequences) {
        for (int r = 0; r < cp; ++r) rank.used.back()[r] += ShardTokens(s.length, cp);
      }
    }
  }

  // The rest: LPT over every GPU, longest first.
  std::stable_sort(local.begin(), local.end(), [](const Sequence& a, const Sequence& b) {
    return a.length != b.length ? a.length > b.length : a.id < b.id;
  });
  using Entry = std::pair<double, int>;  // (FLOPs, GPU): the lightest, lowest index on ties
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> lightest;
  for (int g = 0; g < dp * cp; ++g) lightest.push({gpu_load[g], g});
  for (const Sequence& s : local) {
    auto [load, gpu] = lightest.top();
    lightest.pop();
    AddLocal(s, gpu % cp, cp, bucket, ranks[gpu / cp]);
    lightest.push({load + cost.FlopsPerSequence(s.length), gpu});
  }
  for (int d = 0; d < dp; ++d) {
    plan.ranks[d].micro_batches = std::move(ranks[d].micro_batches);
    for (size_t i = 0; i < plan.ranks[d].micro_batches.size(); ++i) {
      plan.ranks[d].micro_batches[i].dp_rank = d;
      plan.ranks[d].micro_batches[i].index = static_cast<int>(i);
    }
  }
}

}  // namespace skrull::scheduler
