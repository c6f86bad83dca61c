#include "scheduler/dacp.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "common/status.h"
#include "scheduler/layout.h"
#include "scheduler/plan.h"

namespace skrull::scheduler {
namespace {

constexpr int kUnassigned = std::numeric_limits<int>::min();  // aliases no placement code
// Budgets are exact integers with the default shards; the tolerance
// only matters for injected fractional shard costs (S / N).
constexpr double kEps = 1e-9;

class Dacp {
 public:
  Dacp(const std::vector<int64_t>& lengths, const DacpOptions& o)
      : n_(o.cp), options_(o), order_(lengths.size()) {
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
    for (size_t k : order_) {
      const int64_t s = lengths[k];
      length_.push_back(s);
      flops_.push_back(o.flops(s));
      shard_tokens_.push_back(o.shard_tokens ? o.shard_tokens(s, n_)
                                             : static_cast<double>(scheduler::ShardTokens(s, n_)));
      shard_flops_.push_back(o.sharded_flops ? o.sharded_flops(s, n_) : flops_.back() / n_);
    }
    ret_.assign(length_.size(), kUnassigned);
    rb_.assign(static_cast<size_t>(n_), o.bucket_size_tokens);
    load_.assign(static_cast<size_t>(n_), 0.0);
  }

  bool Run(DacpRule rule) {
    size_t i = 0;
    while (i < length_.size()) {
      const double s = static_cast<double>(length_[i]);
      if (rule == DacpRule::kComputeBalanced) {
        const int t = ArgMin(load_);
        if (rb_[t] + kEps >= s) {
          Place(i++, t);
          continue;
        }
      }
      const int roomiest = ArgMax(rb_);
      if (rb_[roomiest] + kEps >= s) {
        Place(i++, roomiest);
        continue;
      }
      if (options_.sub_groups) {
        const int code = SmallestSubGroup(i);
        if (code != kUnassigned) {
          Place(i++, code);
          continue;
        }
      }
      const int tightest = ArgMin(rb_);
      if (rb_[tightest] + kEps >= ShardTokens(i, n_)) {
        Place(i++, kDistributed);
        continue;
      }
      if (!RollBack(tightest)) return false;
      // Retry the same sequence with the freed room.
    }
    return true;
  }

  DacpResult Result() const {
    DacpResult r;
    r.placement.resize(ret_.size());
    for (size_t i = 0; i < ret_.size(); ++i) r.placement[order_[i]] = ret_[i];
    r.remaining_tokens = rb_;
    r.load_flops = load_;
    r.rollbacks = rollbacks_;
    return r;
  }

 private:
  static int ArgMin(const std::vector<double>& v) {
    return static_cast<int>(std::min_element(v.begin(), v.end()) - v.begin());
  }
  static int ArgMax(const std::vector<double>& v) {
    return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
  }

  double ShardTokens(size_t i, int size) const {
    if (size == n_) return shard_tokens_[i];
    const int64_t s = length_[i];
    return options_.shard_tokens ? options_.shard_tokens(s, size)
                                 : static_cast<double>(scheduler::ShardTokens(s, size));
  }
  double ShardFlops(size_t i, int size) const {
    if (size == n_) return shard_flops_[i];
    return options_.sharded_flops ? options_.sharded_flops(length_[i], size) : flops_[i] / size;
  }

  // Adds (sign +1) or removes (-1) sequence i placed by `code`.
  void Charge(size_t i, int code, double sign) {
    const ShardGroup g = GroupOfCode(code, n_);
    const double tokens = g.size == 1 ? static_cast<double>(length_[i]) : ShardTokens(i, g.size);
    const double flops = g.size == 1 ? flops_[i] : ShardFlops(i, g.size);
    for (int r = g.first; r < g.first + g.size; ++r) {
      rb_[r] -= sign * tokens;
      load_[r] += sign * flops;
    }
  }

  void Place(size_t i, int code) {
    ret_[i] = code;
    Charge(i, code, +1);
  }

  void Move(size_t i, int code) {
    Charge(i, ret_[i], -1);
    Place(i, code);
  }

  // Step 3: the placement code of the least-loaded aligned sub-group of the
  // smallest size whose tightest rank holds sequence i's shard, or kUnassigned.
  int SmallestSubGroup(size_t i) const {
    for (int size = 2; size < n_; size *= 2) {
      const double shard = ShardTokens(i, size);
      int best = -1;
      double best_load = 0;
      for (int first = 0; first + size <= n_; first += size) {
        double room = rb_[first], load = 0;
        for (int r = first; r < first + size; ++r) {
          room = std::min(room, rb_[r]);
          load += load_[r];
        }
        if (room + kEps >= shard && (best < 0 || load < best_load)) {
          best = first;
          best_load = load;
        }
      }
      if (best >= 0) return SubGroupCode(best, size);
    }
    return kUnassigned;
  }

  // The sequence rank `rank` gives up: its shortest local one, else the
  // shortest one on a sub-group holding it; ret_.size() when neither.
  size_t Victim(int rank) const {
    size_t on_sub_group = ret_.size();
    for (size_t i = 0; i < ret_.size(); ++i) {
      if (ret_[i] == rank) return i;
      if (on_sub_group == ret_.size() && ret_[i] < kDistributed && ret_[i] != kUnassigned &&
          GroupOfCode(ret_[i], n_).Contains(rank)) {
        on_sub_group = i;
      }
    }
    return on_sub_group;
  }

  // Turns the victim of `rank` distributed over all N (the notes' corrected
  // RollBack: it frees the sequence there and charges a shard on every
  // rank). A rank pushed below zero is rolled back in turn. False when a
  // rank that must give room has no victim.
  bool RollBack(int rank) {
    while (true) {
      const size_t victim = Victim(rank);
      if (victim == ret_.size()) return false;
      Move(victim, kDistributed);
      ++rollbacks_;
      const int tightest = ArgMin(rb_);
      if (rb_[tightest] + kEps >= 0) return true;
      rank = tightest;
    }
  }

  const int n_;
  const DacpOptions& options_;
  std::vector<size_t> order_;  // sorted position -> input index
  std::vector<int64_t> length_;
  std::vector<double> flops_, shard_tokens_, shard_flops_;  // the last two: over all N
  std::vector<int> ret_;
  std::vector<double> rb_, load_;
  int64_t rollbacks_ = 0;
};

}  // namespace

std::optional<DacpResult> RunDacp(const std::vector<int64_t>& lengths, const DacpOptions& options) {
  SKRULL_CHECK(options.cp >= 1) << "cp=" << options.cp;
  SKRULL_CHECK(options.flops) << "DacpOptions.flops is required";
  Dacp dacp(lengths, options);
  if (!dacp.Run(options.rule)) return std::nullopt;
  return dacp.Result();
}

}  // namespace skrull::scheduler
