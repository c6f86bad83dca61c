// ZeroPartition: how ZeRO stages 1 and 2 split the trainable parameters'
// elements over the ranks of the world group (DP x CP; CP ranks hold the same
// parameters, so they share the work like DP ranks). Torch-free index math.
//
// The parameters are packed, in REVERSE order (the order backward produces
// their gradients), into buckets of about `bucket_numel` elements (a larger
// parameter is a bucket of its own). A bucket's flat layout is its members'
// elements one after the other; it is padded to a multiple of the world size
// W and split into W equal slices: rank r owns slice r of every bucket. A
// rank's shard is the concatenation of its slices, bucket by bucket
// (shard_numel() elements, padding included). So one reduce-scatter per
// bucket leaves each rank its slice of the summed gradient, and one
// all-gather per bucket rebuilds every parameter.
//
// The partition depends only on the parameters' sizes, W and bucket_numel,
// so every rank computes the same one and a checkpoint's shards can be mapped
// back to parameters (Pieces) at any other world size.
#ifndef SKRULL_TRAINER_TRAIN_ZERO_PARTITION_H_
#define SKRULL_TRAINER_TRAIN_ZERO_PARTITION_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace skrull::train {

struct ZeroBucket {
  std::vector<size_t> params;          // parameter indices, in flat-layout order
  std::vector<int64_t> param_offsets;  // where each member starts in the flat layout
  int64_t numel = 0;                   // members' elements (without padding)
  int64_t slice_numel = 0;             // ceil(numel / W): each rank's slice
  int64_t shard_offset = 0;            // where this bucket's slice starts in a shard
};

// A run of a rank's shard that holds consecutive elements of one parameter.
struct ZeroPiece {
  size_t param = 0;
  int64_t param_offset = 0;  // first element, in the flattened parameter
  int64_t shard_offset = 0;  // first element, in the rank's shard
  int64_t numel = 0;
};

class ZeroPartition {
 public:
  // REQUIRES: world_size >= 1, bucket_numel >= 1, every numel >= 0.
  ZeroPartition(std::vector<int64_t> param_numel, int world_size, int64_t bucket_numel);

  int world_size() const { return world_size_; }
  int64_t bucket_numel() const { return bucket_numel_; }
  const std::vector<ZeroBucket>& buckets() const { return buckets_; }
  size_t bucket_of(size_t param) const { return bucket_of_[param]; }
  const std::vector<int64_t>& param_numel() const { return param_numel_; }
  // Elements of each rank's shard, padding included.
  int64_t shard_numel() const { return shard_numel_; }
  // The parameter elements rank `rank` owns, in shard order (padding is in
  // no piece). Over all ranks every element of every parameter is in exactly
  // one piece.
  std::vector<ZeroPiece> Pieces(int rank) const;

 private:
  std::vector<int64_t> param_numel_;
  int world_size_;
  int64_t bucket_numel_;
  std::vector<ZeroBucket> buckets_;
  std::vector<size_t> bucket_of_;
  int64_t shard_numel_ = 0;
};

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_ZERO_PARTITION_H_
