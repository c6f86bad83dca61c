#include "bench/bench_util.h"

#include <algorithm>
#include <cmath>

namespace skrull::bench {

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

std::vector<int64_t> Truncate(const std::vector<int64_t>& lengths, int64_t max_tokens,
                              int64_t* truncated) {
  std::vector<int64_t> out = lengths;
  int64_t n = 0;
  for (int64_t& l : out) {
    if (l > max_tokens) {
      l = max_tokens;
      ++n;
    }
  }
  if (truncated != nullptr) *truncated = n;
  return out;
}

}  // namespace skrull::bench
