#include "api/diagnostics.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace skrull::api {

std::string ParentPath(const std::string& path) {
  if (path.empty()) return "";
  size_t cut = path.back() == ']' ? path.rfind('[') : path.rfind('.');
  return cut == std::string::npos ? "" : path.substr(0, cut);
}

SourcePos FieldIndex::PositionOf(const std::string& path) const {
  for (std::string p = path; !p.empty(); p = ParentPath(p)) {
    auto it = positions.find(p);
    if (it != positions.end()) return it->second;
  }
  return SourcePos{};
}

void Diagnostics::Add(SourcePos pos, std::string path, std::string message) {
  errors_.push_back(Error{pos, std::move(path), std::move(message)});
}

Status Diagnostics::ToStatus(const std::string& origin) const {
  if (errors_.empty()) return OkStatus();
  std::vector<Error> sorted = errors_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Error& a, const Error& b) {
    if (a.pos.known() != b.pos.known()) return a.pos.known();
    if (a.pos.line != b.pos.line) return a.pos.line < b.pos.line;
    return a.pos.column < b.pos.column;
  });
  std::string text;
  for (size_t i = 0; i < sorted.size() && i < kMaxReportedErrors; ++i) {
    const Error& e = sorted[i];
    if (!text.empty()) text += '\n';
    text += origin;
    if (e.pos.known()) {
      text += ':' + std::to_string(e.pos.line + 1) + ':' + std::to_string(e.pos.column + 1);
    }
    text += ": ";
    if (!e.path.empty()) text += e.path + ": ";
    text += e.message;
  }
  if (sorted.size() > kMaxReportedErrors) {
    text += "\n" + origin + ": ... and " + std::to_string(sorted.size() - kMaxReportedErrors) +
            " more errors (fix these first)";
  }
  return InvalidArgumentError(std::move(text));
}

std::string JoinPath(const std::string& parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return parent + "." + std::string(key);
}

namespace {

std::string Folded(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance (Levenshtein plus adjacent swaps), over
// three rolling rows, or `limit` + 1 once it is sure to exceed `limit` (a row
// whose every cell exceeds it). REQUIRES: b.size() <= kMaxEchoBytes.
size_t EditDistance(const std::string& a, const std::string& b, size_t limit) {
  const size_t m = b.size();
  if ((a.size() > m ? a.size() - m : m - a.size()) > limit) return limit + 1;
  std::array<size_t, kMaxEchoBytes + 1> rows[3];
  size_t* before = rows[0].data();  // row i - 2
  size_t* prev = rows[1].data();    // row i - 1
  size_t* cur = rows[2].data();     // row i
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t row_min = cur[0];
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], before[j - 2] + 1);
      }
      row_min = std::min(row_min, cur[j]);
    }
    // A swap reaches back two rows, so stop only when two rows are over.
    if (row_min > limit && i > 1 && *std::min_element(prev, prev + m + 1) > limit) {
      return limit + 1;
    }
    std::swap(before, prev);  // before = row i - 1 ...
    std::swap(prev, cur);     // ... prev = row i; cur is reused
  }
  return std::min(prev[m], limit + 1);
}

}  // namespace

std::string ClosestMatch(std::string_view got, const std::vector<std::string>& candidates) {
  if (got.size() > kMaxEchoBytes) return "";
  const std::string folded = Folded(got);
  for (const std::string& c : candidates) {
    if (c.size() <= kMaxEchoBytes && !folded.empty() && Folded(c) == folded) return c;
  }
  const std::string lower = Lower(got);
  const size_t limit = std::max<size_t>(1, got.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    if (c.size() > kMaxEchoBytes) continue;
    size_t distance = EditDistance(lower, Lower(c), best_distance - 1);
    if (distance < best_distance) {
      best = c;
      best_distance = distance;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view got, const std::vector<std::string>& candidates) {
  std::string match = ClosestMatch(got, candidates);
  if (match.empty()) return "";
  return "; did you mean '" + match + "'?";
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

std::string FormatDouble(double value) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

std::string Abbreviate(std::string_view value) {
  if (value.size() <= kMaxEchoBytes) return std::string(value);
  return std::string(value.substr(0, kMaxEchoBytes)) + "... (" + std::to_string(value.size()) +
         " bytes)";
}

std::string Quote(std::string_view value) {
  if (value.size() <= kMaxEchoBytes) return "'" + std::string(value) + "'";
  return "'" + std::string(value.substr(0, kMaxEchoBytes)) + "...' (" +
         std::to_string(value.size()) + " bytes)";
}

}  // namespace skrull::api
