#include "bench/bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace skrull::bench {

std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::ostringstream out;
  auto emit = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      if (c > 0) out << "  ";
      if (c == 0) {
        out << std::left;
      } else {
        out << std::right;
      }
      out << std::setw(static_cast<int>(width[c])) << row[c];
    }
    out << "\n";
  };
  emit(header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out << std::string(total > 2 ? total - 2 : 0, '-') << "\n";
  for (const auto& row : rows) emit(row);
  return out.str();
}

std::string Fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

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
