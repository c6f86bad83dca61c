#include "trainer/metrics/process_memory.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "common/file_util.h"

namespace skrull::metrics {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Parses a non-empty run of decimal digits; false on anything else or overflow.
bool ParseUint(std::string_view digits, uint64_t* out) {
  if (digits.empty()) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

}  // namespace

StatusOr<uint64_t> ParseProcKilobytesField(std::string_view text, std::string_view field) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() <= field.size() || line.substr(0, field.size()) != field ||
        line[field.size()] != ':') {
      continue;
    }
    std::string_view value = Trim(line.substr(field.size() + 1));
    uint64_t kib = 0;
    if (value.size() < 3 || value.substr(value.size() - 3) != " kB" ||
        !ParseUint(Trim(value.substr(0, value.size() - 3)), &kib) ||
        kib > std::numeric_limits<uint64_t>::max() / 1024) {
      return InvalidArgumentError(std::string(field) + ": expected \"<n> kB\", got \"" +
                                  std::string(value) + "\"");
    }
    return kib * 1024;
  }
  return NotFoundError(std::string(field) + ": no such field");
}

namespace {

// One "<field>: <n> kB" value of a /proc/<pid>/status file, in bytes.
StatusOr<uint64_t> ReadStatusField(const std::string& proc_status_path, std::string_view field) {
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(proc_status_path));
  StatusOr<uint64_t> bytes = ParseProcKilobytesField(text, field);
  if (!bytes.ok()) return bytes.status().WithContext(proc_status_path);
  return bytes;
}

}  // namespace

StatusOr<uint64_t> ReadProcessPeakRssBytes(const std::string& proc_status_path) {
  return ReadStatusField(proc_status_path, "VmHWM");
}

StatusOr<uint64_t> ReadProcessRssBytes(const std::string& proc_status_path) {
  return ReadStatusField(proc_status_path, "VmRSS");
}

StatusOr<uint64_t> ReadHostMemoryCapacityBytes(const std::string& meminfo_path,
                                               const std::string& cgroup_memory_max_path) {
  SKRULL_ASSIGN_OR_RETURN(std::string meminfo, ReadFileToString(meminfo_path));
  StatusOr<uint64_t> total = ParseProcKilobytesField(meminfo, "MemTotal");
  if (!total.ok()) return total.status().WithContext(meminfo_path);
  StatusOr<std::string> limit_text = ReadFileToString(cgroup_memory_max_path);
  uint64_t limit = 0;
  // "max" (no limit), a missing file (cgroup v1, no cgroupfs) or junk: MemTotal stands.
  if (limit_text.ok() && ParseUint(Trim(*limit_text), &limit) && limit > 0) {
    return std::min(*total, limit);
  }
  return total;
}

}  // namespace skrull::metrics
