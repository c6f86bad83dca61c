#include "scheduler/dynamic_cp.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <utility>

#include "common/status.h"
#include "scheduler/layout.h"

namespace skrull::scheduler {
namespace {

// next_hdp_group's balance tolerance: a micro-batch may close once every
// GPU's load is within this fraction of the busiest.
constexpr double kBalanceDelta = 0.05;

struct Group {
  int dp_rank = 0;
  int first = 0;  // first CP rank
  int size = 1;
  int64_t used_tokens = 0;      // per member rank
  std::vector<size_t> members;  // indices into the sorted batch, placement order
  bool Contains(int cp_rank) const { return cp_rank >= first && cp_rank < first + size; }
};

using LoadEntry = std::pair<double, int>;  // (load, index), min-heap
using MinHeap = std::priority_queue<LoadEntry, std::vector<LoadEntry>, std::greater<LoadEntry>>;

// Forms micro-batches one at a time over all dp x cp GPUs (header comment).
class MicroBatchFormer {
 public:
  MicroBatchFormer(const std::vector<Sequence>& sorted, const std::vector<int>& need,
                   const std::vector<double>& flops, const Topology& topology, int64_t bucket)
      : sorted_(sorted),
        need_(need),
        flops_(flops),
        dp_(topology.dp),
        cp_(topology.cp),
        bucket_(bucket) {}

  // Places what fits of `waiting` (indices into the sorted batch, longest
  // first) in one micro-batch; returns its groups and leaves the rest in
  // `waiting`. REQUIRES: waiting not empty.
  std::vector<Group> Form(std::vector<size_t>& waiting) {
    Reset();
    std::vector<size_t> left;
    bool closed = false;
    int first_need = 0;
    bool check_balance = false;
    for (size_t k : waiting) {
      if (closed || !Place(k)) {
        left.push_back(k);
        continue;
      }
      if (first_need == 0) first_need = need_[k];
      check_balance = check_balance || need_[k] < first_need;
      closed = check_balance && Balanced();
    }
    SKRULL_CHECK(left.size() < waiting.size()) << "dynamic-cp placed nothing in a micro-batch";
    waiting = std::move(left);
    FillEmptyGpus();
    return std::move(groups_);
  }

 private:
  int Gpu(int dp_rank, int cp_rank) const { return dp_rank * cp_ + cp_rank; }
  // Aligned slots of `size` on one DP rank: cp / size (one when size == cp).
  int SlotsPerRank(int size) const { return size == cp_ ? 1 : cp_ / size; }

  void Reset() {
    groups_.clear();
    busy_.assign(static_cast<size_t>(dp_) * cp_, 0);
    load_.assign(busy_.size(), 0.0);
    idle_ = static_cast<int64_t>(busy_.size());
    max_load_ = 0;
    min_load_ = MinHeap();
    cursor_.clear();
    open_.clear();
    rooms_.clear();
  }

  bool SlotFree(int dp_rank, int first, int size) const {
    for (int r = first; r < first + size; ++r) {
      if (busy_[Gpu(dp_rank, r)]) return false;
    }
    return true;
  }

  // The first free aligned slot of `size` (a GPU once busy stays busy, so a
  // per-size cursor only moves forward). Returns false when none is free.
  bool FreeSlot(int size, int* dp_rank, int* first) {
    const int per_rank = SlotsPerRank(size);
    int64_t& cursor = cursor_[size];
    for (; cursor < int64_t{dp_} * per_rank; ++cursor) {
      const int d = static_cast<int>(cursor / per_rank);
      const int f = static_cast<int>(cursor % per_rank) * size;
      if (SlotFree(d, f, size)) {
        *dp_rank = d;
        *first = f;
        return true;
      }
    }
    return false;
  }

  double GroupLoad(const Group& g) const { return load_[Gpu(g.dp_rank, g.first)]; }

  // The least-loaded open group of `size` with room for `shard` tokens per
  // rank (lowest index on ties), or -1.
  int LeastLoadedOpenGroup(int size, int64_t shard) {
    const std::multiset<int64_t>& rooms = rooms_[size];
    if (rooms.empty() || *rooms.rbegin() < shard) return -1;  // no group has room
    MinHeap& heap = open_[size];
    std::vector<LoadEntry> no_room;
    int found = -1;
    while (!heap.empty()) {
      const LoadEntry top = heap.top();
      heap.pop();
      const Group& g = groups_[static_cast<size_t>(top.second)];
      if (top.first != GroupLoad(g)) continue;  // stale entry
      if (g.used_tokens + shard <= bucket_) {
        found = top.second;
        break;
      }
      if (g.used_tokens < bucket_) no_room.push_back(top);  // full groups drop out
    }
    for (const LoadEntry& e : no_room) heap.push(e);
    return found;
  }

  bool Place(size_t k) {
    const int size = need_[k];
    const int64_t shard = ShardTokens(sorted_[k].length, size);
    int index = -1, dp_rank = 0, first = 0;
    if (FreeSlot(size, &dp_rank, &first)) {
      index = static_cast<int>(groups_.size());
      groups_.push_back(Group{dp_rank, first, size, 0, {}});
      for (int r = first; r < first + size; ++r) {
        busy_[Gpu(dp_rank, r)] = 1;
        --idle_;
      }
    } else {
      index = LeastLoadedOpenGroup(size, shard);
      if (index < 0) return false;
    }
    Group& g = groups_[static_cast<size_t>(index)];
    std::multiset<int64_t>& rooms = rooms_[size];
    if (!g.members.empty()) rooms.erase(rooms.find(bucket_ - g.used_tokens));
    g.used_tokens += shard;
    rooms.insert(bucket_ - g.used_tokens);
    g.members.push_back(k);
    for (int r = g.first; r < g.first + size; ++r) {
      const int gpu = Gpu(g.dp_rank, r);
      load_[gpu] += flops_[k] / size;
      max_load_ = std::max(max_load_, load_[gpu]);
      min_load_.push({load_[gpu], gpu});
    }
    open_[size].push({GroupLoad(g), index});
    return true;
  }

  // Every GPU busy and within kBalanceDelta of the busiest.
  bool Balanced() {
    if (idle_ > 0) return false;
    while (min_load_.top().first != load_[min_load_.top().second]) min_load_.pop();
    return max_load_ - min_load_.top().first <= kBalanceDelta * max_load_;
  }

  // Widens the smallest groups into free aligned blocks until none can.
  void FillEmptyGpus() {
    for (bool widened = idle_ > 0; widened && idle_ > 0;) {
      widened = false;
      std::vector<size_t> order(groups_.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return groups_[a].size < groups_[b].size; });
      for (size_t i : order) {
        if (Widen(groups_[i])) {
          widened = true;
          break;
        }
      }
    }
  }

  bool Widen(Group& g) {
    const int next = NextGroupSize(g.size, cp_);
    if (next == 0) return false;
    const int block = next == cp_ ? 0 : g.first - g.first % next;
    if (next != cp_ && !IsAlignedSubGroup(block, next, cp_)) return false;  // runs past cp
    for (int r = block; r < block + next; ++r) {
      if (!g.Contains(r) && busy_[Gpu(g.dp_rank, r)]) return false;
    }
    int64_t used = 0;
    for (size_t k : g.members) used += ShardTokens(sorted_[k].length, next);
    if (used > bucket_) return false;
    for (int r = block; r < block + next; ++r) {
      const int gpu = Gpu(g.dp_rank, r);
      if (!busy_[gpu]) --idle_;
      busy_[gpu] = 1;
      load_[gpu] = 0;
      for (size_t k : g.members) load_[gpu] += flops_[k] / next;
    }
    g.first = block;
    g.size = next;
    g.used_tokens = used;
    return true;
  }

  const std::vector<Sequence>& sorted_;
  const std::vector<int>& need_;
  const std::vector<double>& flops_;
  const int dp_, cp_;
  const int64_t bucket_;
  // Per micro-batch.
  std::vector<Group> groups_;
  std::vector<char> busy_;    // per GPU (dp_rank * cp + cp_rank)
  std::vector<double> load_;  // FLOPs per GPU
  int64_t idle_ = 0;
  double max_load_ = 0;
  MinHeap min_load_;                             // lazy: stale entries skipped
  std::map<int, int64_t> cursor_;                // per group size
  std::map<int, MinHeap> open_;                  // per group size: (load, group index)
  std::map<int, std::multiset<int64_t>> rooms_;  // per group size: tokens left per group
};

}  // namespace

void ScheduleDynamicCp(const std::vector<Sequence>& batch, const CostModel& cost, Plan& plan) {
  const Topology& topology = plan.topology;
  std::vector<Sequence> sorted = batch;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Sequence& a, const Sequence& b) {
    return a.length != b.length ? a.length > b.length : a.id < b.id;
  });
  std::vector<int> need(sorted.size());
  std::vector<double> flops(sorted.size());
  for (size_t k = 0; k < sorted.size(); ++k) {
    need[k] = SmallestGroupSize(sorted[k].length, topology.cp, plan.bucket_size_tokens);
    SKRULL_CHECK(need[k] > 0) << "sequence " << sorted[k].id << " fits no CP group";
    flops[k] = cost.FlopsPerSequence(sorted[k].length);
  }
  std::vector<size_t> waiting(sorted.size());
  for (size_t k = 0; k < waiting.size(); ++k) waiting[k] = k;
  MicroBatchFormer former(sorted, need, flops, topology, plan.bucket_size_tokens);
  while (!waiting.empty()) {
    const std::vector<Group> groups = former.Form(waiting);
    for (int d = 0; d < topology.dp; ++d) {
      MicroBatch mb;
      mb.dp_rank = d;
      mb.index = static_cast<int>(plan.ranks[d].micro_batches.size());
      plan.ranks[d].micro_batches.push_back(std::move(mb));
    }
    for (const Group& g : groups) {
      const int code = g.size == 1             ? g.first
                       : g.size == topology.cp ? kDistributed
                                               : SubGroupCode(g.first, g.size);
      MicroBatch& mb = plan.ranks[g.dp_rank].micro_batches.back();
      for (size_t k : g.members) {
        mb.sequences.push_back(
            PlacedSequence::FromCode(sorted[k].id, sorted[k].length, code, topology.cp));
      }
    }
  }
}

}  // namespace skrull::scheduler
