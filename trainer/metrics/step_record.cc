#include "trainer/metrics/step_record.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace skrull::metrics {

namespace {

using Json = nlohmann::json;

void CheckSecondsOrFlops(const char* field, double value, std::ostringstream& problems) {
  if (!std::isfinite(value) || value < 0) {
    problems << (problems.tellp() > 0 ? "; " : "") << field << " must be finite and >= 0 (got "
             << value << ")";
  }
}

// nlohmann writes NaN / Inf as null; keep that explicit so the reader can
// mirror it.
Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Status FieldError(const std::string& field, const std::string& what) {
  return InvalidArgumentError("metrics.jsonl: field \"" + field + "\": " + what);
}

Status ReadDouble(const Json& j, const std::string& field, double* out) {
  auto it = j.find(field);
  if (it == j.end()) return FieldError(field, "missing");
  if (it->is_null()) {
    *out = std::numeric_limits<double>::quiet_NaN();
    return OkStatus();
  }
  if (!it->is_number()) return FieldError(field, "expected a number");
  *out = it->get<double>();
  return OkStatus();
}

Status ReadUint(const Json& j, const std::string& field, uint64_t* out) {
  auto it = j.find(field);
  if (it == j.end()) return FieldError(field, "missing");
  if (!it->is_number_unsigned()) return FieldError(field, "expected an unsigned integer");
  *out = it->get<uint64_t>();
  return OkStatus();
}

Status ReadInt(const Json& j, const std::string& field, int64_t* out) {
  auto it = j.find(field);
  if (it == j.end()) return FieldError(field, "missing");
  if (!it->is_number_integer()) return FieldError(field, "expected an integer");
  *out = it->get<int64_t>();
  return OkStatus();
}

Status ReadRank(const Json& j, const std::string& field, int* out) {
  int64_t v = 0;
  SKRULL_RETURN_IF_ERROR(ReadInt(j, field, &v));
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    return FieldError(field, "out of range (got " + std::to_string(v) + ")");
  }
  *out = static_cast<int>(v);
  return OkStatus();
}

Status ReadString(const Json& j, const std::string& field, std::string* out) {
  auto it = j.find(field);
  if (it == j.end()) return FieldError(field, "missing");
  if (!it->is_string()) return FieldError(field, "expected a string");
  *out = it->get<std::string>();
  return OkStatus();
}

}  // namespace

std::string StepRecordProblem(const StepRecord& r) {
  std::ostringstream problems;
  if (r.step < 0) problems << "step must be >= 0 (got " << r.step << ")";
  CheckSecondsOrFlops("model_flops", r.model_flops, problems);
  CheckSecondsOrFlops("hardware_flops", r.hardware_flops, problems);
  CheckSecondsOrFlops("step_seconds", r.step_seconds, problems);
  CheckSecondsOrFlops("scheduler_seconds", r.scheduler_seconds, problems);
  CheckSecondsOrFlops("phase_seconds.compute", r.phase_seconds.compute, problems);
  CheckSecondsOrFlops("phase_seconds.cp_comm_wait", r.phase_seconds.cp_comm_wait, problems);
  CheckSecondsOrFlops("phase_seconds.dp_comm_wait", r.phase_seconds.dp_comm_wait, problems);
  CheckSecondsOrFlops("phase_seconds.idle", r.phase_seconds.idle, problems);
  CheckSecondsOrFlops("peak_flops_per_second", r.peak_flops_per_second, problems);
  if (r.hardware_flops < r.model_flops) {
    problems << (problems.tellp() > 0 ? "; " : "") << "hardware_flops (" << r.hardware_flops
             << ") must be >= model_flops (" << r.model_flops << ")";
  }
  return problems.str();
}

StepRates ComputeStepRates(const StepRecord& r) {
  StepRates rates;
  if (r.step_seconds <= 0) return rates;
  rates.tokens_per_second = static_cast<double>(r.tokens) / r.step_seconds;
  if (r.peak_flops_per_second > 0) {
    rates.mfu = r.model_flops / r.step_seconds / r.peak_flops_per_second;
    rates.hfu = r.hardware_flops / r.step_seconds / r.peak_flops_per_second;
  }
  return rates;
}

std::string FormatStepLine(const StepLine& line) {
  const StepRecord& r = line.record;
  // nlohmann::ordered_json keeps the fields in the order written, so a line
  // reads top-down like the struct.
  nlohmann::ordered_json j;
  j["schema"] = kStepLineSchema;
  j["time_unix_seconds"] = Number(line.time_unix_seconds);
  j["job"] = line.job;
  j["rank"] = line.rank;
  j["dp_rank"] = line.dp_rank;
  j["cp_rank"] = line.cp_rank;
  j["node"] = line.node;
  j["step"] = r.step;
  j["loss"] = Number(r.loss);
  j["tokens"] = r.tokens;
  j["padding_tokens"] = r.padding_tokens;
  j["model_flops"] = Number(r.model_flops);
  j["hardware_flops"] = Number(r.hardware_flops);
  j["step_seconds"] = Number(r.step_seconds);
  j["scheduler_seconds"] = Number(r.scheduler_seconds);
  j["compute_seconds"] = Number(r.phase_seconds.compute);
  j["cp_comm_wait_seconds"] = Number(r.phase_seconds.cp_comm_wait);
  j["dp_comm_wait_seconds"] = Number(r.phase_seconds.dp_comm_wait);
  j["idle_seconds"] = Number(r.phase_seconds.idle);
  j["rank_tokens_peak"] = r.rank_tokens_peak;
  j["bucket_size_tokens"] = r.bucket_size_tokens;
  j["memory_peak_bytes"] = r.memory_peak_bytes;
  j["memory_capacity_bytes"] = r.memory_capacity_bytes;
  j["rollbacks_dacp"] = r.rollbacks.dacp;
  j["rollbacks_gds"] = r.rollbacks.gds;
  j["rollbacks_runtime"] = r.rollbacks.runtime;
  j["local_sequences"] = r.local_sequences;
  j["distributed_sequences"] = r.distributed_sequences;
  j["micro_batches"] = r.micro_batches;
  j["peak_flops_per_second"] = Number(r.peak_flops_per_second);
  j["tokens_per_second"] = Number(line.rates.tokens_per_second);
  j["mfu"] = Number(line.rates.mfu);
  j["hfu"] = Number(line.rates.hfu);
  return j.dump() + "\n";
}

StatusOr<StepLine> ParseStepLine(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  Json j = Json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("metrics.jsonl: line is not valid JSON");
  if (!j.is_object()) return InvalidArgumentError("metrics.jsonl: line is not a JSON object");
  int64_t schema = 0;
  SKRULL_RETURN_IF_ERROR(ReadInt(j, "schema", &schema));
  if (schema != kStepLineSchema) {
    return FieldError("schema", "unsupported version " + std::to_string(schema) +
                                    " (this build reads " + std::to_string(kStepLineSchema) + ")");
  }
  StepLine line;
  StepRecord& r = line.record;
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "time_unix_seconds", &line.time_unix_seconds));
  SKRULL_RETURN_IF_ERROR(ReadString(j, "job", &line.job));
  SKRULL_RETURN_IF_ERROR(ReadRank(j, "rank", &line.rank));
  SKRULL_RETURN_IF_ERROR(ReadRank(j, "dp_rank", &line.dp_rank));
  SKRULL_RETURN_IF_ERROR(ReadRank(j, "cp_rank", &line.cp_rank));
  SKRULL_RETURN_IF_ERROR(ReadString(j, "node", &line.node));
  SKRULL_RETURN_IF_ERROR(ReadInt(j, "step", &r.step));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "loss", &r.loss));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "tokens", &r.tokens));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "padding_tokens", &r.padding_tokens));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "model_flops", &r.model_flops));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "hardware_flops", &r.hardware_flops));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "step_seconds", &r.step_seconds));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "scheduler_seconds", &r.scheduler_seconds));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "compute_seconds", &r.phase_seconds.compute));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "cp_comm_wait_seconds", &r.phase_seconds.cp_comm_wait));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "dp_comm_wait_seconds", &r.phase_seconds.dp_comm_wait));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "idle_seconds", &r.phase_seconds.idle));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "rank_tokens_peak", &r.rank_tokens_peak));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "bucket_size_tokens", &r.bucket_size_tokens));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "memory_peak_bytes", &r.memory_peak_bytes));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "memory_capacity_bytes", &r.memory_capacity_bytes));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "rollbacks_dacp", &r.rollbacks.dacp));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "rollbacks_gds", &r.rollbacks.gds));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "rollbacks_runtime", &r.rollbacks.runtime));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "local_sequences", &r.local_sequences));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "distributed_sequences", &r.distributed_sequences));
  SKRULL_RETURN_IF_ERROR(ReadUint(j, "micro_batches", &r.micro_batches));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "peak_flops_per_second", &r.peak_flops_per_second));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "tokens_per_second", &line.rates.tokens_per_second));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "mfu", &line.rates.mfu));
  SKRULL_RETURN_IF_ERROR(ReadDouble(j, "hfu", &line.rates.hfu));
  return line;
}

}  // namespace skrull::metrics
