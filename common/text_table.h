// Plain-text output helpers shared by the command-line tools and the
// benchmarks: aligned tables, thousands separators, printf-style numbers.
#ifndef SKRULL_COMMON_TEXT_TABLE_H_
#define SKRULL_COMMON_TEXT_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace skrull {

// A table: the header row, a dashed rule as wide as the table, then `rows`.
// The first column is left-aligned, the others right-aligned (numbers);
// columns are two spaces apart. Cells past the header's width are dropped.
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

// 1234567 -> "1,234,567"; -1234 -> "-1,234". Defined for every int64_t.
std::string WithCommas(int64_t n);

// printf-style formatting of one double, e.g. Fmt("%.2f", x). Output is cut
// at 63 characters.
std::string Fmt(const char* format, double value);

}  // namespace skrull

#endif  // SKRULL_COMMON_TEXT_TABLE_H_
