#include "scheduler/gds.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <queue>

#include "scheduler/layout.h"
#include "scheduler/packing.h"
#include "scheduler/parallel_for.h"
#include "scheduler/pricing.h"

namespace skrull::scheduler {
namespace {

using Groups = std::vector<std::vector<Sequence>>;

// One micro-batch's sequences and where each goes (kDistributed or a rank).
struct PlacedGroup {
  std::vector<Sequence> sequences;  // ascending length: execution order
  std::vector<int> placement;
  int64_t dacp_rollbacks = 0;
  double seconds = 0;  // estimated (cost-aware mode only)

  // Keeps `candidate` (a rollback-free placement) when it is priced faster.
  void KeepIfFaster(const std::vector<int>& candidate, double candidate_seconds) {
    if (candidate_seconds >= seconds) return;
    seconds = candidate_seconds;
    placement = candidate;
    dacp_rollbacks = 0;
  }
};

// A DP rank's micro-batches and the GDS roll-backs it took to find them.
struct Batching {
  std::vector<PlacedGroup> groups;
  int64_t gds_rollbacks = 0;
  double seconds = 0;  // estimated, all micro-batches (cost-aware mode only)

  // The rank's iteration with the gradient all-reduce, its costliest
  // micro-batch run last (RunGds orders them so).
  double IterationSeconds(const GradientSync& sync) const {
    double costliest = 0;
    for (const PlacedGroup& g : groups) costliest = std::max(costliest, g.seconds);
    return sync.RankSeconds(seconds, costliest);
  }
};

bool ByLength(const Sequence& a, const Sequence& b) {
  return a.length != b.length ? a.length < b.length : a.id < b.id;
}

std::vector<Sequence> Ascending(std::vector<Sequence> items) {
  std::stable_sort(items.begin(), items.end(), ByLength);
  return items;
}

std::vector<int64_t> Lengths(const std::vector<Sequence>& group) {
  std::vector<int64_t> lengths;
  lengths.reserve(group.size());
  for (const Sequence& s : group) lengths.push_back(s.length);
  return lengths;
}

// The cost-aware alternative to DACP's placement: distribute the `d` longest
// sequences, then place the rest by LPT on FLOPs (longest first onto the
// least-loaded rank that has room). False when it does not fit.
// `longest_first` orders the indices of `lengths`; `flops` is per index;
// `shards` is the d longest sequences' shard tokens. Writes `placement`.
bool LongestDistributed(const std::vector<int64_t>& lengths, const std::vector<double>& flops,
                        const std::vector<size_t>& longest_first, size_t d, int64_t shards, int cp,
                        int64_t bucket, std::vector<int>* placement) {
  placement->assign(lengths.size(), kDistributed);
  thread_local std::vector<int64_t> room;
  thread_local std::vector<double> load;
  room.assign(static_cast<size_t>(cp), bucket - shards);
  load.assign(static_cast<size_t>(cp), 0.0);
  for (size_t i = d; i < longest_first.size(); ++i) {
    const size_t k = longest_first[i];
    int best = -1;
    for (int r = 0; r < cp; ++r) {
      if (room[r] >= lengths[k] && (best < 0 || load[r] < load[best])) best = r;
    }
    if (best < 0) return false;
    (*placement)[k] = best;
    room[best] -= lengths[k];
    load[best] += flops[k];
  }
  return true;
}

// Scratch of SubGroupLpt: per CP rank, tokens left and FLOPs placed.
struct RankLoads {
  std::vector<int64_t> room;
  std::vector<double> load;
};

// The first rank of the aligned group of `size` ranks with room for `tokens`
// on each rank whose most-loaded rank is least loaded (ties: lowest); -1 if
// none has room.
int LeastLoadedGroup(const RankLoads& ranks, int size, int64_t tokens) {
  const int cp = static_cast<int>(ranks.room.size());
  int best = -1;
  double best_load = 0;
  for (int first = 0; first + size <= cp; first += size) {
    bool fits = true;
    double load = 0;
    for (int r = first; r < first + size && fits; ++r) {
      fits = ranks.room[r] >= tokens;
      load = std::max(load, ranks.load[r]);
    }
    if (fits && (best < 0 || load < best_load)) {
      best = first;
      best_load = load;
    }
  }
  return best;
}

// The sub-group alternative: the `d` longest sequences over all CP ranks,
// then, longest first, each other sequence on the least-loaded aligned group
// (LeastLoadedGroup) of the smallest size whose shard fits BucketSize,
// widened `widen` times (x2, at most cp) when that size is not 1; a size
// with no room moves on to the next. False when a sequence fits no group.
bool SubGroupLpt(const std::vector<int64_t>& lengths, const std::vector<double>& flops,
                 const std::vector<size_t>& longest_first, size_t d, int widen, int cp,
                 int64_t bucket, std::vector<int>* placement) {
  placement->assign(lengths.size(), kDistributed);
  thread_local RankLoads ranks;
  ranks.room.assign(static_cast<size_t>(cp), bucket);
  ranks.load.assign(static_cast<size_t>(cp), 0.0);
  for (size_t i = 0; i < longest_first.size(); ++i) {
    const size_t k = longest_first[i];
    int size = i < d ? cp : 1;
    while (ShardTokens(lengths[k], size) > bucket) size = NextGroupSize(size, cp);
    for (int w = 0; w < widen && size > 1 && size < cp; ++w) size = NextGroupSize(size, cp);
    int first = -1;
    for (; size != 0; size = NextGroupSize(size, cp)) {
      first = LeastLoadedGroup(ranks, size, ShardTokens(lengths[k], size));
      if (first >= 0) break;
    }
    if (first < 0) return false;
    (*placement)[k] = size == 1 ? first : size == cp ? kDistributed : SubGroupCode(first, size);
    for (int r = first; r < first + size; ++r) {
      ranks.room[r] -= ShardTokens(lengths[k], size);
      ranks.load[r] += flops[k] / size;
    }
  }
  return true;
}

// Packs by FLOPs balance under a token capacity: longest first, each onto
// the micro-batch with the least FLOPs whose shards still fit BucketSize
// (so every micro-batch fits even fully distributed). Starts at the fewest
// micro-batches the shards allow and adds one whenever a sequence fits none.
Groups CapacityLpt(const std::vector<Sequence>& ascending, int cp, int64_t bucket,
                   const CostModel& cost, int64_t* added) {
  int64_t shards = 0;
  for (const Sequence& s : ascending) shards += ShardTokens(s.length, cp);
  for (int64_t m = std::max<int64_t>(1, (shards + bucket - 1) / bucket);; ++m, ++*added) {
    Groups groups(static_cast<size_t>(m));
    std::vector<int64_t> used(groups.size(), 0);
    std::vector<double> load(groups.size(), 0.0);
    bool fits = true;
    for (auto it = ascending.rbegin(); it != ascending.rend() && fits; ++it) {
      const int64_t shard = ShardTokens(it->length, cp);
      int best = -1;
      for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
        if (used[g] + shard <= bucket && (best < 0 || load[g] < load[best])) best = g;
      }
      fits = best >= 0;
      if (!fits) break;
      groups[best].push_back(*it);
      used[best] += shard;
      load[best] += cost.FlopsPerSequence(it->length);
    }
    if (!fits) continue;
    for (auto& g : groups) std::reverse(g.begin(), g.end());  // ascending again
    return groups;
  }
}

// The d values Refine prices: every d up to 16 (a batch's few long
// sequences), then a geometric ladder (x1.25), and d = K (static CP).
bool WorthPricing(size_t d, size_t k) {
  if (d <= 16 || d == k) return true;
  size_t step = 16;
  while (step < d) step = step + std::max<size_t>(1, step / 4);
  return step == d;
}

class RankScheduler {
 public:
  RankScheduler(const GdsOptions& options, const CostModel& cost) : options_(options), cost_(cost) {
    if (options.cost_aware) {
      sync_ = MakeGradientSync(cost, *options.hardware, options.topology.WorldSize());
    }
    dacp_.cp = options.topology.cp;
    dacp_.bucket_size_tokens = static_cast<double>(options.bucket_size_tokens);
    dacp_.rule = options.rule;
    dacp_.flops = [&cost](int64_t s) { return cost.FlopsPerSequence(s); };
    dacp_.sharded_flops = [&cost](int64_t s, int n) { return cost.FlopsSharded(s, n); };
  }

  const GradientSync& sync() const { return sync_; }

  // Micro-batches of one DP rank's sequences, `sub` in the order the DP
  // split produced them. Cost-aware candidates are compared by the rank's
  // iteration with the gradient all-reduce (GradientSync::RankSeconds); an
  // iteration is the maximum of that over DP ranks, so choosing per rank is
  // optimal for the DP split at hand.
  Batching Run(const std::vector<Sequence>& sub) {
    placed_.clear();
    if (sub.empty()) return {};
    const int cp = options_.topology.cp;
    const int64_t bucket = options_.bucket_size_tokens;
    const int64_t capacity = bucket * cp;
    const std::vector<Sequence> ascending = Ascending(sub);
    int64_t total = 0;
    for (const Sequence& s : sub) total += s.length;
    // The paper's search: fewest micro-batches, one more per failure.
    int64_t added = 0;
    int m = static_cast<int>(std::max<int64_t>(1, (total + capacity - 1) / capacity));
    std::optional<Batching> best;
    while (!(best = Deal(ascending, m))) {
      ++m;
      ++added;
      SKRULL_CHECK(m <= static_cast<int>(sub.size()))
          << "GDS found no batching; a sequence exceeds BucketSize x CP";
    }
    best->gds_rollbacks = added;
    if (!options_.cost_aware) return std::move(*best);

    auto consider = [&](std::optional<Batching> candidate) {
      if (candidate && candidate->IterationSeconds(sync_) < best->IterationSeconds(sync_)) {
        best = std::move(candidate);
      }
    };
    const int last = std::min<int>(m + options_.extra_micro_batch_counts, sub.size());
    for (int more = m + 1; more <= last; ++more) consider(Deal(ascending, more));
    // The deal packs loosely when sequences are long relative to C x N;
    // packings that fill micro-batches tighter are priced too.
    int64_t lpt_added = 0;
    consider(Place(CapacityLpt(ascending, cp, bucket, cost_, &lpt_added), lpt_added));
    consider(Place(PackFirstFitDecreasing(sub, cp, bucket), 0));
    return std::move(*best);
  }

  // Static CP on `sub`: greedy in-order packing, every sequence distributed.
  Batching StaticCp(const std::vector<Sequence>& sub) const {
    Batching b;
    for (auto& sequences : PackInOrder(sub, options_.topology.cp, options_.bucket_size_tokens)) {
      PlacedGroup g{std::move(sequences), {}, 0, 0};
      g.placement.assign(g.sequences.size(), kDistributed);
      g.seconds =
          MicroBatchPricer(Lengths(g.sequences), options_.topology.cp, cost_, *options_.hardware)
              .Seconds(g.placement);
      b.seconds += g.seconds;
      b.groups.push_back(std::move(g));
    }
    return b;
  }

 private:
  // The interleaved deal into m micro-batches; nullopt when one of them is
  // over C x N tokens or DACP cannot place it (a GDS roll-back).
  std::optional<Batching> Deal(const std::vector<Sequence>& ascending, int m) {
    const int64_t capacity = options_.bucket_size_tokens * options_.topology.cp;
    Groups groups = InterleavedDeal(ascending, m);
    for (const auto& g : groups) {
      int64_t sum = 0;
      for (const Sequence& s : g) sum += s.length;
      if (sum > capacity) return std::nullopt;
    }
    return Place(std::move(groups), 0);
  }

  // Runs DACP on every group (refined when cost-aware); nullopt when DACP
  // cannot place one of them.
  std::optional<Batching> Place(Groups groups, int64_t gds_rollbacks) {
    Batching b;
    b.gds_rollbacks = gds_rollbacks;
    for (auto& sequences : groups) {
      std::stable_sort(sequences.begin(), sequences.end(), ByLength);
      std::vector<int64_t> key;
      for (const Sequence& s : sequences) key.push_back(s.id);
      auto cached = placed_.find(key);
      if (cached == placed_.end()) {
        cached = placed_.emplace(std::move(key), PlaceGroup(std::move(sequences))).first;
      }
      if (!cached->second) return std::nullopt;
      b.seconds += cached->second->seconds;
      b.groups.push_back(*cached->second);
    }
    return b;
  }

  std::optional<PlacedGroup> PlaceGroup(std::vector<Sequence> sequences) const {
    const std::vector<int64_t> lengths = Lengths(sequences);
    auto dacp = RunDacp(lengths, dacp_);
    if (!dacp) return std::nullopt;
    PlacedGroup g{std::move(sequences), std::move(dacp->placement), dacp->rollbacks, 0};
    if (options_.cost_aware) Refine(lengths, g);
    return g;
  }

  // Keeps DACP's placement unless distributing the d longest sequences (and
  // LPT-placing the rest) is estimated faster, for the d values WorthPricing names.
  void Refine(const std::vector<int64_t>& lengths, PlacedGroup& g) const {
    const int cp = options_.topology.cp;
    const int64_t bucket = options_.bucket_size_tokens;
    const MicroBatchPricer pricer(lengths, cp, cost_, *options_.hardware);
    g.seconds = pricer.Seconds(g.placement);
    std::vector<int> placement;
    std::vector<size_t> longest_first(lengths.size());
    std::iota(longest_first.begin(), longest_first.end(), 0);
    std::stable_sort(longest_first.begin(), longest_first.end(),
                     [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
    std::vector<double> flops;
    flops.reserve(lengths.size());
    for (int64_t s : lengths) flops.push_back(cost_.FlopsPerSequence(s));
    int64_t shards = 0;  // of the d longest
    for (size_t d = 0; d <= lengths.size(); ++d) {
      if (d > 0) shards += ShardTokens(lengths[longest_first[d - 1]], cp);
      if (shards > bucket) break;  // only grows with d
      if (!WorthPricing(d, lengths.size())) continue;
      if (!LongestDistributed(lengths, flops, longest_first, d, shards, cp, bucket, &placement)) {
        continue;
      }
      g.KeepIfFaster(placement, pricer.Seconds(placement));
    }
    // Sub-groups only change placements where a sequence does not fit one rank.
    if (options_.sub_groups && cp > 2 && !lengths.empty() && lengths[longest_first[0]] > bucket) {
      RefineSubGroups(lengths, flops, longest_first, pricer, g);
    }
  }

  // Prices the sub-group candidates (GdsOptions::sub_groups) against g.
  void RefineSubGroups(const std::vector<int64_t>& lengths, const std::vector<double>& flops,
                       const std::vector<size_t>& longest_first, const MicroBatchPricer& pricer,
                       PlacedGroup& g) const {
    const int cp = options_.topology.cp;
    std::vector<int> placement;
    for (size_t d : {0, 1, 2, 4}) {
      if (d > lengths.size()) break;
      for (int widen = 0; widen <= 1; ++widen) {
        if (!SubGroupLpt(lengths, flops, longest_first, d, widen, cp, options_.bucket_size_tokens,
                         &placement)) {
          continue;
        }
        g.KeepIfFaster(placement, pricer.Seconds(placement));
      }
    }
  }

  const GdsOptions& options_;
  const CostModel& cost_;
  GradientSync sync_;  // cost-aware mode only
  DacpOptions dacp_;
  // Candidate batchings share micro-batches (all of them are one micro-batch
  // when the rank's tokens fit C x N), so placements are computed once per
  // set of sequence ids.
  std::map<std::vector<int64_t>, std::optional<PlacedGroup>> placed_;
};

// One DP split's per-rank batchings; `seconds` is the iteration's (the
// slowest rank's with the gradient all-reduce; cost-aware mode only).
struct SplitResult {
  std::vector<Batching> ranks;
  double seconds = 0;
  void Add(Batching b, const GradientSync& sync) {
    seconds = std::max(seconds, b.IterationSeconds(sync));
    ranks.push_back(std::move(b));
  }
};

// Threads RunGds uses: one below kParallelMinSequences (starting threads
// costs more than it saves on a small batch), else options.threads (0 =
// DefaultSchedulerThreads()).
int GdsThreads(const GdsOptions& options, size_t sequences) {
  if (sequences < kParallelMinSequences) return 1;
  return options.threads > 0 ? options.threads : DefaultSchedulerThreads();
}

}  // namespace

std::vector<std::vector<int>> LptBinPack(const std::vector<double>& weights, int bins) {
  SKRULL_CHECK(bins >= 1) << "bins=" << bins;
  std::vector<int> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return weights[a] > weights[b]; });
  std::vector<std::vector<int>> out(static_cast<size_t>(bins));
  // Min-heap of (total, bin): the lightest bin, lowest index on ties.
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> lightest;
  for (int b = 0; b < bins; ++b) lightest.push({0.0, b});
  for (int item : order) {
    auto [total, b] = lightest.top();
    lightest.pop();
    out[b].push_back(item);
    lightest.push({total + weights[item], b});
  }
  return out;
}

GdsResult RunGds(const std::vector<Sequence>& batch, const GdsOptions& options,
                 const CostModel& cost) {
  SKRULL_CHECK(!options.cost_aware || options.hardware != nullptr)
      << "cost-aware GDS needs a HardwareProfile";
  const int dp = options.topology.dp;
  std::vector<double> weights;
  weights.reserve(batch.size());
  for (const Sequence& s : batch) weights.push_back(cost.FlopsPerSequence(s.length));
  const auto bins = LptBinPack(weights, dp);

  // DP ranks are independent after the split: each index is scheduled on
  // its own RankScheduler and stored by index, so the plan is the same for
  // any thread count (parallel_for.h).
  const int threads = GdsThreads(options, batch.size());
  std::vector<Batching> ranks(static_cast<size_t>(dp));
  ParallelFor(dp, threads, [&](int d) {
    std::vector<Sequence> sub;
    for (int k : bins[d]) sub.push_back(batch[k]);
    ranks[d] = RankScheduler(options, cost).Run(sub);
  });
  const RankScheduler scheduler(options, cost);
  SplitResult best;
  for (Batching& b : ranks) best.Add(std::move(b), scheduler.sync());
  if (options.cost_aware) {
    // FLOPs balance and the local/shard choices are estimates; static CP's
    // own plan (contiguous DP split, in-order packing, all distributed) is
    // priced too and kept when it is estimated faster.
    const SequenceGroups parts = ContiguousSplit(batch, dp);
    std::vector<Batching> static_ranks(parts.size());
    ParallelFor(static_cast<int>(parts.size()), threads,
                [&](int d) { static_ranks[d] = scheduler.StaticCp(parts[d]); });
    SplitResult static_cp;
    for (Batching& b : static_ranks) static_cp.Add(std::move(b), scheduler.sync());
    if (static_cp.seconds < best.seconds) best = std::move(static_cp);
  }

  GdsResult result;
  result.ranks.resize(static_cast<size_t>(dp));
  for (int d = 0; d < dp; ++d) {
    Batching& batching = best.ranks[d];
    result.rollbacks.gds += batching.gds_rollbacks;
    if (options.cost_aware && !batching.groups.empty()) {
      // The costliest micro-batch last: its backward hides the most of the
      // gradient all-reduce (see pricing.h). The rest keep their order.
      auto costliest = std::max_element(
          batching.groups.begin(), batching.groups.end(),
          [](const PlacedGroup& a, const PlacedGroup& b) { return a.seconds < b.seconds; });
      std::rotate(costliest, costliest + 1, batching.groups.end());
    }
    auto& mbs = result.ranks[d].micro_batches;
    for (PlacedGroup& g : batching.groups) {
      MicroBatch mb;
      mb.dp_rank = d;
      mb.index = static_cast<int>(mbs.size());
      for (size_t k = 0; k < g.sequences.size(); ++k) {
        mb.sequences.push_back(PlacedSequence::FromCode(g.sequences[k].id, g.sequences[k].length,
                                                        g.placement[k], options.topology.cp));
      }
      result.rollbacks.dacp += g.dacp_rollbacks;
      mbs.push_back(std::move(mb));
    }
  }
  return result;
}

}  // namespace skrull::scheduler
