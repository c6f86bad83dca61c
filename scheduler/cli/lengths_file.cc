#include "scheduler/cli/lengths_file.h"

#include <cctype>
#include <limits>

#include "common/file_util.h"
#include "scheduler/policy.h"

namespace skrull::scheduler::cli {
namespace {

constexpr int kMaxReportedErrors = 10;

std::string Trim(const std::string& s) {
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(s[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
  return s.substr(begin, end - begin);
}

// Returns an empty string on success, else what is wrong with `field`.
std::string ParsePositiveInt(const std::string& field, int64_t* out) {
  if (field.empty()) return "empty length";
  int64_t value = 0;
  for (char c : field) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return "not a non-negative integer token count";
    }
    int digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return "length overflows int64";
    value = value * 10 + digit;
  }
  if (value <= 0) return "length must be > 0";
  if (value > kMaxSequenceTokens) {
    return "length exceeds the scheduler's maximum of " + std::to_string(kMaxSequenceTokens) +
           " tokens";
  }
  *out = value;
  return "";
}

}  // namespace

StatusOr<std::vector<int64_t>> ParseLengths(const std::string& text, const std::string& origin) {
  std::vector<int64_t> lengths;
  std::vector<std::string> errors;
  int total_errors = 0;
  size_t pos = 0;
  int line_number = 0;
  while (pos <= text.size()) {
    size_t newline = text.find('\n', pos);
    if (newline == std::string::npos) newline = text.size();
    std::string raw = text.substr(pos, newline - pos);
    pos = newline + 1;
    ++line_number;
    if (newline == text.size() && raw.empty()) break;
    std::string line = raw;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    int64_t value = 0;
    std::string problem = ParsePositiveInt(line, &value);
    if (!problem.empty()) {
      ++total_errors;
      if (static_cast<int>(errors.size()) < kMaxReportedErrors) {
        errors.push_back(origin + ":" + std::to_string(line_number) + ": " + problem + " (got '" +
                         Trim(raw) +
                         "'); expected one positive integer per line (blank lines and " +
                         "'#' comments are allowed)");
      }
      continue;
    }
    lengths.push_back(value);
  }
  if (total_errors > 0) {
    std::string message;
    for (const std::string& e : errors) message += (message.empty() ? "" : "\n") + e;
    if (total_errors > kMaxReportedErrors) {
      message += "\n" + origin + ": ... and " + std::to_string(total_errors - kMaxReportedErrors) +
                 " more bad lines";
    }
    return InvalidArgumentError(message);
  }
  if (lengths.empty()) {
    return InvalidArgumentError(
        origin + ": no sequence lengths found; expected one positive integer per line");
  }
  return lengths;
}

StatusOr<std::vector<int64_t>> ReadLengthsFile(const std::string& path) {
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseLengths(text, path);
}

std::string FormatLengths(const std::vector<int64_t>& lengths, const std::string& comment) {
  std::string out;
  out.reserve(lengths.size() * 6 + comment.size() + 4);
  if (!comment.empty()) out += "# " + comment + "\n";
  for (int64_t length : lengths) {
    out += std::to_string(length);
    out += '\n';
  }
  return out;
}

}  // namespace skrull::scheduler::cli
