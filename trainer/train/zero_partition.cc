#include "trainer/train/zero_partition.h"

#include <algorithm>

#include "common/status.h"

namespace skrull::train {

ZeroPartition::ZeroPartition(std::vector<int64_t> param_numel, int world_size, int64_t bucket_numel)
    : param_numel_(std::move(param_numel)),
      world_size_(world_size),
      bucket_numel_(bucket_numel),
      bucket_of_(param_numel_.size()) {
  SKRULL_CHECK(world_size_ >= 1 && bucket_numel_ >= 1)
      << "world_size=" << world_size_ << " bucket_numel=" << bucket_numel_;
  for (size_t j = param_numel_.size(); j-- > 0;) {
    SKRULL_CHECK(param_numel_[j] >= 0) << "parameter " << j << " numel " << param_numel_[j];
    if (buckets_.empty() || buckets_.back().numel + param_numel_[j] > bucket_numel_) {
      if (buckets_.empty() || !buckets_.back().params.empty()) buckets_.emplace_back();
    }
    ZeroBucket& b = buckets_.back();
    bucket_of_[j] = buckets_.size() - 1;
    b.params.push_back(j);
    b.param_offsets.push_back(b.numel);
    b.numel += param_numel_[j];
  }
  for (ZeroBucket& b : buckets_) {
    b.slice_numel = (b.numel + world_size_ - 1) / world_size_;
    b.shard_offset = shard_numel_;
    shard_numel_ += b.slice_numel;
  }
}

std::vector<ZeroPiece> ZeroPartition::Pieces(int rank) const {
  SKRULL_CHECK(rank >= 0 && rank < world_size_) << "rank " << rank << " of " << world_size_;
  std::vector<ZeroPiece> pieces;
  for (const ZeroBucket& b : buckets_) {
    const int64_t lo = rank * b.slice_numel;
    const int64_t hi = std::min(b.numel, lo + b.slice_numel);
    for (size_t m = 0; m < b.params.size(); ++m) {
      const int64_t begin = std::max(lo, b.param_offsets[m]);
      const int64_t end = std::min(hi, b.param_offsets[m] + param_numel_[b.params[m]]);
      if (begin >= end) continue;
      pieces.push_back(
          {b.params[m], begin - b.param_offsets[m], b.shard_offset + begin - lo, end - begin});
    }
  }
  return pieces;
}

}  // namespace skrull::train
