#include "trainer/metrics/step_record.h"

#include <climits>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/json_fields.h"

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
  j["memory_peak_allocated_bytes"] = r.memory_peak_allocated_bytes;
  j["memory_capacity_bytes"] = r.memory_capacity_bytes;
  j["memory_static_bytes"] = r.memory_static_bytes;
  j["rollbacks_dacp"] = r.rollbacks.dacp;
  j["rollbacks_gds"] = r.rollbacks.gds;
  j["local_sequences"] = r.local_sequences;
  j["distributed_sequences"] = r.distributed_sequences;
  j["micro_batches"] = r.micro_batches;
  if (std::isfinite(r.learning_rate)) j["learning_rate"] = r.learning_rate;
  if (std::isfinite(r.grad_norm)) j["grad_norm"] = r.grad_norm;
  if (std::isfinite(r.eval_loss)) j["eval_loss"] = r.eval_loss;
  if (!r.source_samples.empty()) {
    j["source_samples"] = r.source_samples;
    j["source_tokens"] = r.source_tokens;
  }
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
  const JsonFields f(j, "metrics.jsonl");
  SKRULL_ASSIGN_OR_RETURN(const int64_t schema, f.RequiredInt("schema"));
  if (schema != kStepLineSchema) {
    return f.Error("schema", "unsupported version " + std::to_string(schema) +
                                 " (this build reads " + std::to_string(kStepLineSchema) + ")");
  }
  // Numbers: NaN and Inf were written as null (Number above) and read back as NaN.
  auto read_double = [&f](const char* key, double* out) -> Status {
    if (f.IsNull(key)) {
      *out = std::numeric_limits<double>::quiet_NaN();
      return OkStatus();
    }
    SKRULL_ASSIGN_OR_RETURN(*out, f.RequiredDouble(key));
    return OkStatus();
  };
  auto read_rank = [&f](const char* key, int* out) -> Status {
    SKRULL_ASSIGN_OR_RETURN(const int64_t rank, f.RequiredInt(key, 0, INT_MAX));
    *out = static_cast<int>(rank);
    return OkStatus();
  };
  StepLine line;
  StepRecord& r = line.record;
  SKRULL_RETURN_IF_ERROR(read_double("time_unix_seconds", &line.time_unix_seconds));
  SKRULL_ASSIGN_OR_RETURN(line.job, f.RequiredString("job"));
  SKRULL_RETURN_IF_ERROR(read_rank("rank", &line.rank));
  SKRULL_RETURN_IF_ERROR(read_rank("dp_rank", &line.dp_rank));
  SKRULL_RETURN_IF_ERROR(read_rank("cp_rank", &line.cp_rank));
  SKRULL_ASSIGN_OR_RETURN(line.node, f.RequiredString("node"));
  SKRULL_ASSIGN_OR_RETURN(r.step, f.RequiredInt("step"));
  SKRULL_RETURN_IF_ERROR(read_double("loss", &r.loss));
  SKRULL_ASSIGN_OR_RETURN(r.tokens, f.RequiredUint("tokens"));
  SKRULL_ASSIGN_OR_RETURN(r.padding_tokens, f.RequiredUint("padding_tokens"));
  SKRULL_RETURN_IF_ERROR(read_double("model_flops", &r.model_flops));
  SKRULL_RETURN_IF_ERROR(read_double("hardware_flops", &r.hardware_flops));
  SKRULL_RETURN_IF_ERROR(read_double("step_seconds", &r.step_seconds));
  SKRULL_RETURN_IF_ERROR(read_double("scheduler_seconds", &r.scheduler_seconds));
  SKRULL_RETURN_IF_ERROR(read_double("compute_seconds", &r.phase_seconds.compute));
  SKRULL_RETURN_IF_ERROR(read_double("cp_comm_wait_seconds", &r.phase_seconds.cp_comm_wait));
  SKRULL_RETURN_IF_ERROR(read_double("dp_comm_wait_seconds", &r.phase_seconds.dp_comm_wait));
  SKRULL_RETURN_IF_ERROR(read_double("idle_seconds", &r.phase_seconds.idle));
  SKRULL_ASSIGN_OR_RETURN(r.rank_tokens_peak, f.RequiredUint("rank_tokens_peak"));
  SKRULL_ASSIGN_OR_RETURN(r.bucket_size_tokens, f.RequiredUint("bucket_size_tokens"));
  SKRULL_ASSIGN_OR_RETURN(r.memory_peak_bytes, f.RequiredUint("memory_peak_bytes"));
  // Added within schema 1: lines from older trainers have none.
  SKRULL_ASSIGN_OR_RETURN(r.memory_peak_allocated_bytes,
                          f.OptionalUint("memory_peak_allocated_bytes", 0));
  SKRULL_ASSIGN_OR_RETURN(r.memory_capacity_bytes, f.RequiredUint("memory_capacity_bytes"));
  SKRULL_ASSIGN_OR_RETURN(r.memory_static_bytes, f.OptionalUint("memory_static_bytes", 0));
  SKRULL_ASSIGN_OR_RETURN(r.rollbacks.dacp, f.RequiredUint("rollbacks_dacp"));
  SKRULL_ASSIGN_OR_RETURN(r.rollbacks.gds, f.RequiredUint("rollbacks_gds"));
  SKRULL_ASSIGN_OR_RETURN(r.local_sequences, f.RequiredUint("local_sequences"));
  SKRULL_ASSIGN_OR_RETURN(r.distributed_sequences, f.RequiredUint("distributed_sequences"));
  SKRULL_ASSIGN_OR_RETURN(r.micro_batches, f.RequiredUint("micro_batches"));
  SKRULL_RETURN_IF_ERROR(read_double("peak_flops_per_second", &r.peak_flops_per_second));
  SKRULL_RETURN_IF_ERROR(read_double("tokens_per_second", &line.rates.tokens_per_second));
  SKRULL_RETURN_IF_ERROR(read_double("mfu", &line.rates.mfu));
  SKRULL_RETURN_IF_ERROR(read_double("hfu", &line.rates.hfu));
  return line;
}

}  // namespace skrull::metrics
