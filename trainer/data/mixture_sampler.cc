#include "trainer/data/mixture_sampler.h"

#include <cmath>

#include "trainer/data/rng.h"

namespace skrull::data {

MixtureSampler::MixtureSampler(std::vector<int64_t> sizes, std::vector<double> weights,
                               int64_t global_batch_size, uint64_t seed)
    : global_batch_size_(global_batch_size), seed_(seed) {
  SKRULL_CHECK(!sizes.empty() && sizes.size() == weights.size() && global_batch_size >= 1);
  double total = 0;
  for (size_t s = 0; s < sizes.size(); ++s) {
    SKRULL_CHECK(sizes[s] >= 1 && weights[s] > 0 && std::isfinite(weights[s]))
        << "source " << s << " size " << sizes[s] << " weight " << weights[s];
    const uint64_t source_seed = s == 0 ? seed : MixSeed(seed, s);
    sources_.push_back(std::make_unique<Sampler>(sizes[s], 1, source_seed));
    total += weights[s];
  }
  double sum = 0;
  for (double w : weights) cumulative_.push_back((sum += w) / total);
  cumulative_.back() = 1.0;
  Rewind();
}

void MixtureSampler::Rewind() {
  state_.step = 0;
  state_.cursors.assign(sources_.size(), 0);
}

int MixtureSampler::PickSource(int64_t position) const {
  if (sources_.size() == 1) return 0;
  SplitMix64 rng(MixSeed(seed_ ^ 0x6d6978ULL, static_cast<uint64_t>(position)));
  const double u = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53;  // [0, 1)
  int s = 0;
  while (s + 1 < static_cast<int>(cumulative_.size()) && u >= cumulative_[s]) ++s;
  return s;
}

std::vector<MixtureDraw> MixtureSampler::GlobalBatch(int64_t step) {
  SKRULL_CHECK(step >= 0) << "step " << step;
  if (step < state_.step) Rewind();
  std::vector<MixtureDraw> draws;
  while (state_.step <= step) {
    draws.clear();
    for (int64_t k = 0; k < global_batch_size_; ++k) {
      const int s = PickSource(state_.step * global_batch_size_ + k);
      const int64_t cursor = state_.cursors[s]++;
      draws.push_back({s, sources_[s]->GlobalBatch(cursor)[0]});
    }
    ++state_.step;
  }
  return draws;
}

Status MixtureSampler::Restore(const MixtureState& state) {
  int64_t drawn = 0;
  bool in_range = state.step >= 0 && state.cursors.size() == sources_.size();
  for (int64_t c : state.cursors) {
    in_range &= c >= 0;
    drawn += c;
  }
  if (!in_range || drawn != state.step * global_batch_size_) {
    return InvalidArgumentError(
        "the checkpoint's data sampler state (step " + std::to_string(state.step) + ", " +
        std::to_string(state.cursors.size()) + " source cursors summing to " +
        std::to_string(drawn) + ") does not fit this job's " + std::to_string(sources_.size()) +
        " spec.data.sources at a global batch of " + std::to_string(global_batch_size_) +
        "; resume with the sources and batch size that wrote it, or start fresh");
  }
  state_ = state;
  return OkStatus();
}

}  // namespace skrull::data
