// Small helpers shared by the bench/ binaries: percentiles, truncation and
// the plan check every timed plan goes through. Text tables and number formatting (FormatTable,
// Fmt, WithCommas) are common/text_table.h, declared here for the benches.
#ifndef SKRULL_BENCH_BENCH_UTIL_H_
#define SKRULL_BENCH_BENCH_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/text_table.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"

namespace skrull::bench {

using skrull::Fmt;
using skrull::FormatTable;
using skrull::WithCommas;

// p in [0, 100]; nearest-rank on a copy. REQUIRES: !values.empty().
double Percentile(std::vector<double> values, double p);

// Returns the lengths with every value above `max_tokens` set to `max_tokens`
// (SFT truncation to the longest trainable sequence); `truncated` counts them.
std::vector<int64_t> Truncate(const std::vector<int64_t>& lengths, int64_t max_tokens,
                              int64_t* truncated);

// `plan`, Schedule()'s result for `batch` under `policy`, once VerifyPlan
// accepts it. Aborts, printing why, when scheduling failed or the plan breaks
// an invariant: a benchmark never reports a time for a wrong plan.
scheduler::Plan VerifiedOrAbort(scheduler::Policy policy, StatusOr<scheduler::Plan> plan,
                                const std::vector<scheduler::Sequence>& batch);

}  // namespace skrull::bench

#endif  // SKRULL_BENCH_BENCH_UTIL_H_
