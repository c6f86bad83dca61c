// Sampler: which dataset indices make up the global batch of a step.
//
// The data order is one endless stream: epoch e is a permutation of
// 0..dataset_size-1 drawn from (seed, e), epochs follow each other, and the
// global batch of step s is stream positions [s * gbs, (s + 1) * gbs). So:
//   - every rank computes the same batch from (dataset_size, gbs, seed, step)
//     alone, with no communication;
//   - each index appears exactly once per epoch, and no sample is dropped;
//   - a batch that straddles an epoch boundary takes the rest of one epoch and
//     the start of the next, so it may hold an index twice (once per epoch), as
//     does any batch when gbs > dataset_size. Identify sequences by their
//     position in the batch, not by dataset index;
//   - resuming needs only the step.
// Permutations are Fisher-Yates driven by SplitMix64 (rng.h), the same on every
// platform; std::shuffle is not used because its output is library-defined.
//
// Thread safety: GlobalBatch may be called concurrently (the per-epoch
// permutation cache is locked).
#ifndef SKRULL_TRAINER_DATA_SAMPLER_H_
#define SKRULL_TRAINER_DATA_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace skrull::data {

class Sampler {
 public:
  // REQUIRES: dataset_size >= 1, global_batch_size >= 1.
  Sampler(int64_t dataset_size, int64_t global_batch_size, uint64_t seed);

  // Dataset indices of step `step`'s global batch, in stream order
  // (global_batch_size of them). REQUIRES: step >= 0 and
  // (step + 1) * global_batch_size fits int64.
  std::vector<int64_t> GlobalBatch(int64_t step) const;

  // Epoch of the first sample of step `step`: floor(step * gbs / size).
  int64_t Epoch(int64_t step) const;

  int64_t dataset_size() const { return dataset_size_; }
  int64_t global_batch_size() const { return global_batch_size_; }
  uint64_t seed() const { return seed_; }

  // The permutation of 0..size-1 for (seed, epoch). Pure.
  static std::vector<int64_t> EpochPermutation(int64_t size, uint64_t seed, int64_t epoch);

 private:
  std::shared_ptr<const std::vector<int64_t>> Permutation(int64_t epoch) const;

  int64_t dataset_size_;
  int64_t global_batch_size_;
  uint64_t seed_;
  // The two most recently used epochs (a batch spans at most two unless
  // gbs > dataset_size).
  mutable std::mutex mu_;
  mutable int64_t cached_epoch_[2] = {-1, -1};
  mutable std::shared_ptr<const std::vector<int64_t>> cached_[2];
  mutable int next_slot_ = 0;
};

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_SAMPLER_H_
