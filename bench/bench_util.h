// Small helpers shared by the bench/ binaries: text tables, percentiles,
// number formatting and the paper's experiment settings.
#ifndef SKRULL_BENCH_BENCH_UTIL_H_
#define SKRULL_BENCH_BENCH_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace skrull::bench {

// Left-aligned first column, right-aligned others, a dashed rule under the header.
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

// printf-style formatting of one double.
std::string Fmt(const char* format, double value);

// p in [0, 100]; nearest-rank on a copy. REQUIRES: !values.empty().
double Percentile(std::vector<double> values, double p);

// Returns the lengths with every value above `max_tokens` set to `max_tokens`
// (SFT truncation to the longest trainable sequence); `truncated` counts them.
std::vector<int64_t> Truncate(const std::vector<int64_t>& lengths, int64_t max_tokens,
                              int64_t* truncated);

}  // namespace skrull::bench

#endif  // SKRULL_BENCH_BENCH_UTIL_H_
