// MixtureSampler: the global batches of a run over several data sources
// mixed by weight (docs/job-spec.md, spec.data.sources).
//
// Each source is an endless stream of its own epochs (Sampler with a global
// batch of 1: epoch e of source s is a permutation drawn from (seed_s, e),
// seed_0 = seed, seed_s = MixSeed(seed, s) for s > 0). Position p of the run's
// stream (step x global batch + k) draws its source from (seed, p) alone: u =
// SplitMix64(MixSeed(seed, p)) in [0, 1) picks the source whose share of the
// cumulative weights holds u (so source s fills weight_s / sum of weights of
// the samples on average, as Hugging Face `interleave_datasets(probabilities)`
// does), and takes that source's next sample.
//
//   - Deterministic: every rank computes the same batches from (sizes,
//     weights, global batch, seed) alone.
//   - Resumable: the state after step s is (s, each source's cursor = samples
//     it has given). The trainer saves it in the checkpoint and Restore()
//     continues from it; a sampler asked for another step replays from the
//     start (cheap: one random number per sample), so both give the same
//     sequence.
//   - With one source the batches are exactly Sampler's (same seed), so a
//     job with one `path` samples as it always did.
//
// Thread safety: not thread-safe (GlobalBatch advances the state).
#ifndef SKRULL_TRAINER_DATA_MIXTURE_SAMPLER_H_
#define SKRULL_TRAINER_DATA_MIXTURE_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "trainer/data/sampler.h"

namespace skrull::data {

struct MixtureState {
  int64_t step = 0;              // the next step GlobalBatch would draw
  std::vector<int64_t> cursors;  // per source: samples drawn in steps < step
};

// One sample of a global batch: its source and index within that source.
struct MixtureDraw {
  int source = 0;
  int64_t index = 0;
};

class MixtureSampler {
 public:
  // REQUIRES: sizes and weights of equal, non-zero length; every size >= 1
  // and weight > 0 and finite; global_batch_size >= 1.
  MixtureSampler(std::vector<int64_t> sizes, std::vector<double> weights, int64_t global_batch_size,
                 uint64_t seed);

  // The draws of step `step`'s global batch, in stream order. Afterwards
  // state().step == step + 1. REQUIRES: step >= 0.
  std::vector<MixtureDraw> GlobalBatch(int64_t step);

  const MixtureState& state() const { return state_; }
  // Continues from a saved state. InvalidArgument when it does not belong to
  // these sources (count, or a cursor outside [0, step x global batch]).
  Status Restore(const MixtureState& state);

  int64_t global_batch_size() const { return global_batch_size_; }
  int num_sources() const { return static_cast<int>(sources_.size()); }

 private:
  int PickSource(int64_t position) const;
  void Rewind();

  std::vector<std::unique_ptr<Sampler>> sources_;  // global batch 1 each
  std::vector<double> cumulative_;                 // normalised, last = 1
  int64_t global_batch_size_;
  uint64_t seed_;
  MixtureState state_;
};

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_MIXTURE_SAMPLER_H_
