#include "scheduler/dacp.h"

#include <algorithm>
#include <numeric>

#include "common/status.h"
#include "scheduler/plan.h"

namespace skrull::scheduler {
namespace {

constexpr int kUnassigned = -2;  // must alias neither kDistributed nor a rank
// Budgets are exact integers with the default ceil shards; the tolerance
// only matters for injected fractional shard costs (S / N).
constexpr double kEps = 1e-9;

class Dacp {
 public:
  Dacp(const std::vector<int64_t>& lengths, const DacpOptions& o)
      : n_(o.cp), order_(lengths.size()) {
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
    for (size_t k : order_) {
      const int64_t s = lengths[k];
      length_.push_back(s);
      flops_.push_back(o.flops(s));
      shard_flops_.push_back(o.sharded_flops ? o.sharded_flops(s, n_) : flops_.back() / n_);
      shard_tokens_.push_back(o.shard_tokens ? o.shard_tokens(s, n_)
                                             : static_cast<double>((s + n_ - 1) / n_));
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
          PlaceLocal(i++, t);
          continue;
        }
      }
      const int roomiest = ArgMax(rb_);
      if (rb_[roomiest] + kEps >= s) {
        PlaceLocal(i++, roomiest);
        continue;
      }
      const int tightest = ArgMin(rb_);
      if (rb_[tightest] + kEps >= shard_tokens_[i]) {
        PlaceDistributed(i++);
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

  void PlaceLocal(size_t i, int rank) {
    ret_[i] = rank;
    rb_[rank] -= static_cast<double>(length_[i]);
    load_[rank] += flops_[i];
  }

  void PlaceDistributed(size_t i) {
    ret_[i] = kDistributed;
    for (int r = 0; r < n_; ++r) {
      rb_[r] -= shard_tokens_[i];
      load_[r] += shard_flops_[i];
    }
  }

  // Turns the shortest local sequence on `rank` distributed (the notes'
  // corrected RollBack: it frees the sequence there and charges a shard on
  // every rank). A rank pushed below zero is rolled back in turn. False when
  // a rank that must give room holds no local sequence.
  bool RollBack(int rank) {
    while (true) {
      size_t victim = ret_.size();
      for (size_t i = 0; i < ret_.size(); ++i) {
        if (ret_[i] == rank) {
          victim = i;
          break;
        }
      }
      if (victim == ret_.size()) return false;
      rb_[rank] += static_cast<double>(length_[victim]);
      load_[rank] -= flops_[victim];
      PlaceDistributed(victim);
      ++rollbacks_;
      const int tightest = ArgMin(rb_);
      if (rb_[tightest] + kEps >= 0) return true;
      rank = tightest;
    }
  }

  const int n_;
  std::vector<size_t> order_;  // sorted position -> input index
  std::vector<int64_t> length_;
  std::vector<double> flops_, shard_flops_, shard_tokens_;
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
