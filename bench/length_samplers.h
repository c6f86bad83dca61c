// Sequence-length distributions for benchmarks: the three datasets of the
// Skrull paper (Table 1 CDFs) and a Llama-3-style long-tail mix.
//
// Units: tokens. "K" is 1024 tokens throughout (Table 1's "<1K" is "< 1024
// tokens", its "Longest 78K" is 79872 tokens).
//
// A distribution is a piecewise CDF over knots (length, P(L < length)). Between
// two knots the length is log-uniform, so each segment's probability mass is
// exactly the CDF step and the empirical CDF at every knot matches the table.
// The first knot (CDF 0) is the shortest sequence, the last (CDF 1) the longest;
// a sample never exceeds the last knot. A zero-mass segment is allowed (it
// leaves a gap, which is how the two-component Llama-3 mix is written).
//
// Thread safety: a LengthSampler is immutable; Sample() takes the caller's RNG.
#ifndef SKRULL_BENCH_LENGTH_SAMPLERS_H_
#define SKRULL_BENCH_LENGTH_SAMPLERS_H_

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace skrull::bench {

inline constexpr int64_t kTokensPerK = 1024;

struct CdfKnot {
  int64_t length_tokens = 0;
  double cumulative = 0.0;  // P(length < length_tokens); 1.0 at the longest
};

class LengthSampler {
 public:
  // REQUIRES (else InvalidArgument): >= 2 knots, lengths strictly increasing and
  // >= 1, cumulative non-decreasing from exactly 0 to exactly 1.
  static StatusOr<LengthSampler> FromCdf(std::string name, std::string description,
                                         std::vector<CdfKnot> knots);

  // One length in [knots.front().length_tokens, knots.back().length_tokens].
  int64_t Sample(std::mt19937_64& rng) const;
  // `n` lengths from a generator seeded with `seed` (same seed, same lengths).
  std::vector<int64_t> SampleMany(int64_t n, uint64_t seed) const;

  // The model's P(length < tokens).
  double Cdf(double tokens) const;
  // Analytic mean length in tokens (continuous approximation).
  double MeanTokens() const;

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::vector<CdfKnot>& knots() const { return knots_; }
  int64_t LongestTokens() const { return knots_.back().length_tokens; }

 private:
  LengthSampler(std::string name, std::string description, std::vector<CdfKnot> knots)
      : name_(std::move(name)), description_(std::move(description)), knots_(std::move(knots)) {}

  std::string name_;
  std::string description_;
  std::vector<CdfKnot> knots_;
};

// Dataset names accepted by Dataset(): "wikipedia", "lmsyschat1m", "chatqa2",
// "llama3-mix".
std::vector<std::string> DatasetNames();

// The paper's Table 1 datasets (shortest sequence assumed to be 16 tokens, not
// stated in the paper) and the Llama-3 mix: 99.89% short, log-uniform in
// [64, 3072] (mean ~777 tokens), 0.11% long, log-uniform in [16K, 72K] (mean
// ~37.2K). NotFound for an unknown name, listing the known ones.
StatusOr<LengthSampler> Dataset(const std::string& name);

}  // namespace skrull::bench

#endif  // SKRULL_BENCH_LENGTH_SAMPLERS_H_
