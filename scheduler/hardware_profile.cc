#include "scheduler/hardware_profile.h"

#include <nlohmann/json.hpp>

#include "common/json_fields.h"

namespace skrull::scheduler {
namespace {

using nlohmann::json;
using Table = std::vector<std::pair<int64_t, double>>;

constexpr CollectiveOp kOps[] = {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                                 CollectiveOp::kAllReduce};

json TableToJson(const Table& table) {
  json out = json::array();
  for (const auto& [x, y] : table) out.push_back(json::array({x, y}));
  return out;
}

Table ReadTable(const JsonFields& f, const char* key, FieldErrors* errors) {
  Table table;
  const json* array = errors->Take(f.RequiredArray(key));
  if (array == nullptr) return table;
  if (array->empty()) {
    errors->Add(key, "must be a non-empty array of [tokens, fraction_of_peak] pairs");
    return table;
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const json& row = (*array)[i];
    const std::string path = std::string(key) + "[" + std::to_string(i) + "]";
    if (!row.is_array() || row.size() != 2 || !row[0].is_number_integer() || !row[1].is_number()) {
      errors->Add(path, "must be [integer tokens, fraction] (got " + row.dump() + ")");
      continue;
    }
    const int64_t x = row[0].get<int64_t>();
    const double y = row[1].get<double>();
    if (y <= 0 || y > 1)
      errors->Add(path, "fraction of peak must be in (0, 1] (got " + row[1].dump() + ")");
    if (!table.empty() && x <= table.back().first) {
      errors->Add(path, "tokens must be strictly ascending (got " + std::to_string(x) + " after " +
                            std::to_string(table.back().first) + ")");
    }
    table.emplace_back(x, y);
  }
  return table;
}

HardwareProfile::Collective& MutableCollective(HardwareProfile& p, CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllGather:
      return p.all_gather;
    case CollectiveOp::kReduceScatter:
      return p.reduce_scatter;
    case CollectiveOp::kAllReduce:
      break;
  }
  return p.all_reduce;
}

}  // namespace

const char* CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllReduce:
      return "all_reduce";
  }
  return "?";
}

double HardwareProfile::Interpolate(const Table& table, int64_t x) {
  SKRULL_CHECK(!table.empty());
  if (x <= table.front().first) return table.front().second;
  if (x >= table.back().first) return table.back().second;
  size_t hi = 1;
  while (table[hi].first < x) ++hi;
  const auto& [x0, y0] = table[hi - 1];
  const auto& [x1, y1] = table[hi];
  const double t = static_cast<double>(x - x0) / static_cast<double>(x1 - x0);
  return y0 + t * (y1 - y0);
}

double HardwareProfile::ComputeSeconds(double flops, int64_t tokens_in_kernel) const {
  if (flops <= 0) return 0;
  return flops / (peak_flops_per_second * Interpolate(gemm_efficiency, tokens_in_kernel));
}

double HardwareProfile::AttentionSeconds(double flops, int64_t query_tokens) const {
  if (flops <= 0) return 0;
  return flops / (peak_flops_per_second * Interpolate(attention_efficiency, query_tokens));
}

const HardwareProfile::Collective& HardwareProfile::collective(CollectiveOp op) const {
  return MutableCollective(const_cast<HardwareProfile&>(*this), op);
}

double HardwareProfile::CollectiveSeconds(CollectiveOp op, double bytes, int group_size) const {
  if (group_size <= 1 || bytes <= 0) return 0;
  const double n = group_size;
  const double factor = op == CollectiveOp::kAllReduce ? 2.0 * (n - 1) / n : (n - 1) / n;
  const Collective& c = collective(op);
  return c.latency_seconds + bytes * factor / c.bandwidth_bytes_per_second;
}

StatusOr<HardwareProfile> ParseHardwareProfileJson(const std::string& text,
                                                   const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidArgumentError(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return InvalidArgumentError(origin + ": must be a JSON object");
  FieldErrors errors(origin);
  const JsonFields f(j, origin);
  HardwareProfile p;
  p.name = errors.Take(f.RequiredString("name"));
  p.peak_flops_per_second = errors.Take(f.RequiredDouble("peak_flops_per_second", 0));
  if (j.contains("peak_flops_per_second") && p.peak_flops_per_second == 0) {
    errors.Add("peak_flops_per_second", "must be > 0");
  }
  p.gemm_efficiency = ReadTable(f, "gemm_efficiency", &errors);
  p.attention_efficiency = ReadTable(f, "attention_efficiency", &errors);
  for (CollectiveOp op : kOps) {
    const char* key = CollectiveOpName(op);
    const json* object = errors.Take(f.RequiredObject(key));
    if (object == nullptr) continue;
    const JsonFields cf = f.Nested(key, *object);
    HardwareProfile::Collective c;
    c.latency_seconds = errors.Take(cf.RequiredDouble("latency_seconds", 0));
    c.bandwidth_bytes_per_second = errors.Take(cf.RequiredDouble("bandwidth_bytes_per_second", 0));
    if (object->contains("bandwidth_bytes_per_second") && c.bandwidth_bytes_per_second == 0) {
      errors.Add(std::string(key) + ".bandwidth_bytes_per_second", "must be > 0");
    }
    MutableCollective(p, op) = c;
  }
  p.kernel_launch_seconds = errors.Take(f.RequiredDouble("kernel_launch_seconds", 0));
  p.device_memory_bytes = errors.Take(f.OptionalDouble("device_memory_bytes", 0, 0));
  p.source_notes = errors.Take(f.OptionalString("source_notes"));
  if (!errors.empty()) return errors.ToStatus();
  return p;
}

std::string ToJson(const HardwareProfile& p) {
  json j;
  j["name"] = p.name;
  j["peak_flops_per_second"] = p.peak_flops_per_second;
  j["gemm_efficiency"] = TableToJson(p.gemm_efficiency);
  j["attention_efficiency"] = TableToJson(p.attention_efficiency);
  for (CollectiveOp op : kOps) {
    const auto& c = p.collective(op);
    j[CollectiveOpName(op)] = {{"latency_seconds", c.latency_seconds},
                               {"bandwidth_bytes_per_second", c.bandwidth_bytes_per_second}};
  }
  j["kernel_launch_seconds"] = p.kernel_launch_seconds;
  if (p.device_memory_bytes > 0) j["device_memory_bytes"] = p.device_memory_bytes;
  j["source_notes"] = p.source_notes;
  return j.dump(2) + "\n";
}

HardwareProfile H100Profile() {
  HardwareProfile p;
  p.name = "h100-sxm-80gb";
  p.peak_flops_per_second = 989e12;
  // Rows of the activation matrix -> fraction of peak for the dense layers.
  p.gemm_efficiency = {{128, 0.10},  {512, 0.30},  {1024, 0.40},  {2048, 0.50},
                       {4096, 0.56}, {8192, 0.60}, {16384, 0.62}, {65536, 0.64}};
  // Query tokens per sequence -> fraction of peak, causal, fwd+bwd.
  p.attention_efficiency = {{64, 0.04},    {128, 0.08},   {256, 0.15},
                            {512, 0.251},  {1024, 0.364}, {2048, 0.448},
                            {4096, 0.498}, {8192, 0.517}, {16384, 0.529}};
  p.all_gather = {43.9e-6, 133.8e9};
  p.reduce_scatter = {51.5e-6, 143.2e9};
  p.all_reduce = {64.4e-6, 147.5e9};
  p.kernel_launch_seconds = 5e-6;
  p.device_memory_bytes = 81559.0 * (1 << 20);
  p.source_notes =
      "peak_flops_per_second: NVIDIA H100 SXM datasheet, 989 TFLOP/s dense BF16. "
      "attention_efficiency 512..16384: FlashAttention-3 paper (arXiv 2407.08608, Fig. 'Attention "
      "forward speed, head dim 128', causal, H100 SXM5 BF16): 292, 423, 521, 579, 602, 616 "
      "TFLOP/s, "
      "times 0.85 for the slower backward (an estimate), over 989; 64..256 extrapolated toward "
      "launch-bound kernels (estimate). "
      "gemm_efficiency: estimate, not measured: about 62-64% of peak for large bf16 GEMMs (cuBLAS "
      "on H100 reaches roughly 600-700 TFLOP/s on large shapes) falling toward launch-bound small "
      "row counts; consistent with 35-45% end-to-end MFU reported for dense LLM training on H100 "
      "(the Llama 3 report, arXiv 2407.21783: 38-43% BF16 MFU on 16K H100s). Replace with a "
      "profile of the target model. "
      "all_gather / reduce_scatter / all_reduce: alpha-beta fit to Skrull's Table 5 (arXiv "
      "2505.19609; 2..1024 MB, MB = 2^20 bytes; the paper's testbed: 4x8 H100, 900 GB/s NVLink, "
      "InfiniBand), least squares on relative error, assuming the table's group size was 8: "
      "all_gather 43.9 us + bytes*(n-1)/n / 133.8 GB/s (max error 23%), reduce_scatter 51.5 us + "
      "bytes*(n-1)/n / 143.2 GB/s (13%), all_reduce 64.4 us + bytes*2(n-1)/n / 147.5 GB/s (16%). "
      "kernel_launch_seconds: typical CUDA launch plus dispatch gap, about 5 us (estimate). "
      "device_memory_bytes: 81,559 MiB, the total NVML (nvidia-smi) reports for an H100 80GB "
      "(Modal, 'Why does an NVIDIA H100 80GB card offer 85.52 GB?', "
      "thundergolfer.com/blog/nvidia-gpu-memory-capacity).";
  return p;
}

}  // namespace skrull::scheduler
