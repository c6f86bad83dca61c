// Host memory of this process, for CPU runs (the trainer reports device
// memory itself on GPU runs). Torch-free; reads procfs / cgroupfs. The paths
// are parameters so tests can point them at fixtures.
#ifndef SKRULL_TRAINER_METRICS_PROCESS_MEMORY_H_
#define SKRULL_TRAINER_METRICS_PROCESS_MEMORY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace skrull::metrics {

// Value in bytes of a "<field>:   <n> kB" line of /proc/<pid>/status or
// /proc/meminfo text. NotFound when the field is absent; InvalidArgument when
// its value is not "<n> kB".
StatusOr<uint64_t> ParseProcKilobytesField(std::string_view text, std::string_view field);

// Peak resident set size (VmHWM) of this process since it started, in bytes.
StatusOr<uint64_t> ReadProcessPeakRssBytes(
    const std::string& proc_status_path = "/proc/self/status");

// Resident set size (VmRSS) of this process now, in bytes.
StatusOr<uint64_t> ReadProcessRssBytes(const std::string& proc_status_path = "/proc/self/status");

// Memory this process can use, in bytes: MemTotal of /proc/meminfo, lowered to
// the cgroup v2 limit (memory.max) when that file exists and holds a number.
StatusOr<uint64_t> ReadHostMemoryCapacityBytes(
    const std::string& meminfo_path = "/proc/meminfo",
    const std::string& cgroup_memory_max_path = "/sys/fs/cgroup/memory.max");

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_PROCESS_MEMORY_H_
