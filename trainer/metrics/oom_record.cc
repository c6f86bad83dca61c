#include "trainer/metrics/oom_record.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace skrull::metrics {

std::string FormatOomRecord(const OomRecord& r) {
  nlohmann::ordered_json j;
  j["schema"] = kOomRecordSchema;
  j["rank"] = r.rank;
  j["step"] = r.step;
  j["device"] = r.device;
  j["bucket_size_tokens"] = r.bucket_size_tokens;
  j["rank_tokens_planned"] = r.rank_tokens_planned;
  j["memory_peak_bytes"] = r.memory_peak_bytes;
  j["memory_peak_allocated_bytes"] = r.memory_peak_allocated_bytes;
  j["memory_capacity_bytes"] = r.memory_capacity_bytes;
  // An allocator message is ASCII; replace anything else rather than throw.
  j["message"] = r.message;
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

StatusOr<std::string> WriteOomRecord(const std::string& output_dir, const OomRecord& record) {
  const std::string path =
      (std::filesystem::path(output_dir) / OomRecordFileName(record.rank)).string();
  SKRULL_RETURN_IF_ERROR(WriteFileAtomically(path, FormatOomRecord(record)));
  return path;
}

}  // namespace skrull::metrics
