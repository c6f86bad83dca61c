// SplitMix64: a small portable PRNG. Same seed -> the same stream on every
// platform and standard library (unlike std::shuffle and the std
// distributions, whose outputs are implementation-defined). Used where every
// rank must draw the same numbers: the sampler's permutations and the example
// data generator.
//
// Thread safety: a value; do not share one instance across threads.
#ifndef SKRULL_TRAINER_DATA_RNG_H_
#define SKRULL_TRAINER_DATA_RNG_H_

#include <cstdint>

namespace skrull::data {

// The SplitMix64 output function (Steele, Lea, Flood 2014): a bijective mix.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Combines two values into a seed (for per-epoch / per-sample streams).
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  return Mix64(a ^ Mix64(b + 0x9e3779b97f4a7c15ULL));
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return Mix64(state_);
  }

  // Uniform in [0, bound), unbiased (rejection). REQUIRES: bound > 0.
  uint64_t Below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    while (true) {
      uint64_t r = Next();
      if (r >= threshold) return r % bound;
    }
  }

  // Uniform in [lo, hi]. REQUIRES: lo <= hi, hi - lo < INT64_MAX.
  int64_t Between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo) + 1));
  }

  // Uniform in [0, 1) with 53 random bits (exact in IEEE double).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_RNG_H_
