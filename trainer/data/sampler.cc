#include "trainer/data/sampler.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "common/status.h"
#include "trainer/data/rng.h"

namespace skrull::data {

Sampler::Sampler(int64_t dataset_size, int64_t global_batch_size, uint64_t seed)
    : dataset_size_(dataset_size), global_batch_size_(global_batch_size), seed_(seed) {
  SKRULL_CHECK(dataset_size >= 1) << "dataset_size " << dataset_size;
  SKRULL_CHECK(global_batch_size >= 1) << "global_batch_size " << global_batch_size;
}

std::vector<int64_t> Sampler::EpochPermutation(int64_t size, uint64_t seed, int64_t epoch) {
  SKRULL_CHECK(size >= 0 && epoch >= 0) << "size " << size << " epoch " << epoch;
  std::vector<int64_t> perm(static_cast<size_t>(size));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  SplitMix64 rng(MixSeed(seed, static_cast<uint64_t>(epoch)));
  for (int64_t i = size - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(i) + 1));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

std::shared_ptr<const std::vector<int64_t>> Sampler::Permutation(int64_t epoch) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (int s = 0; s < 2; ++s) {
    if (cached_epoch_[s] == epoch) return cached_[s];
  }
  auto perm =
      std::make_shared<const std::vector<int64_t>>(EpochPermutation(dataset_size_, seed_, epoch));
  cached_epoch_[next_slot_] = epoch;
  cached_[next_slot_] = perm;
  next_slot_ ^= 1;
  return perm;
}

int64_t Sampler::Epoch(int64_t step) const {
  SKRULL_CHECK(step >= 0) << "step " << step;
  SKRULL_CHECK(step <= std::numeric_limits<int64_t>::max() / global_batch_size_ - 1)
      << "step " << step << " x global batch " << global_batch_size_ << " overflows";
  return step * global_batch_size_ / dataset_size_;
}

std::vector<int64_t> Sampler::GlobalBatch(int64_t step) const {
  (void)Epoch(step);  // checks step's range
  std::vector<int64_t> batch;
  batch.reserve(static_cast<size_t>(global_batch_size_));
  int64_t position = step * global_batch_size_;
  const int64_t end = position + global_batch_size_;
  while (position < end) {
    const int64_t epoch = position / dataset_size_;
    const int64_t offset = position % dataset_size_;
    const int64_t take = std::min(end - position, dataset_size_ - offset);
    auto perm = Permutation(epoch);
    batch.insert(batch.end(), perm->begin() + offset, perm->begin() + offset + take);
    position += take;
  }
  return batch;
}

}  // namespace skrull::data
