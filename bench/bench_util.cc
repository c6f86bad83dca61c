#include "bench/bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <utility>

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

scheduler::Plan VerifiedOrAbort(scheduler::Policy policy, StatusOr<scheduler::Plan> plan,
                                const std::vector<scheduler::Sequence>& batch) {
  const std::string name = scheduler::PolicyName(policy);
  if (!plan.ok()) {
    std::cerr << "Schedule(" << name << ") failed: " << plan.status() << "\n";
    std::abort();
  }
  const Status ok = scheduler::VerifyPlan(*plan, batch);
  if (!ok.ok()) {
    std::cerr << "VerifyPlan FAILED for " << name << ": " << ok << "\n" << plan->DebugString();
    std::abort();
  }
  return std::move(*plan);
}

}  // namespace skrull::bench
