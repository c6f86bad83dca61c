#include "scheduler/hardware_profile.h"

#include <algorithm>

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

HardwareProfile::Collective& IntraCollective(HardwareProfile::IntraNode& n, CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllGather:
      return n.all_gather;
    case CollectiveOp::kReduceScatter:
      return n.reduce_scatter;
    case CollectiveOp::kAllReduce:
      break;
  }
  return n.all_reduce;
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

HardwareProfile::Collective ReadCollective(const JsonFields& f, const std::string& key,
                                           const json& object, FieldErrors* errors) {
  const JsonFields cf = f.Nested(key, object);
  HardwareProfile::Collective c;
  c.latency_seconds = errors->Take(cf.RequiredDouble("latency_seconds", 0));
  c.bandwidth_bytes_per_second = errors->Take(cf.RequiredDouble("bandwidth_bytes_per_second", 0));
  if (object.contains("bandwidth_bytes_per_second") && c.bandwidth_bytes_per_second == 0) {
    errors->Add(key + ".bandwidth_bytes_per_second", "must be > 0");
  }
  return c;
}

json CollectiveToJson(const HardwareProfile::Collective& c) {
  return {{"latency_seconds", c.latency_seconds},
          {"bandwidth_bytes_per_second", c.bandwidth_bytes_per_second}};
}

// The optional terms (hardware_profile.h): absent fields keep 0 / empty.
void ReadOptionalTerms(const json& j, const JsonFields& f, HardwareProfile* p,
                       FieldErrors* errors) {
  p->memory_bytes_per_second = errors->Take(f.OptionalDouble("memory_bytes_per_second", 0, 0));
  p->cpu_seconds_per_kernel = errors->Take(f.OptionalDouble("cpu_seconds_per_kernel", 0, 0));
  p->attention_kernel = errors->Take(f.OptionalString("attention_kernel"));
  int* whole[] = {&p->multiprocessors, &p->gemm_tile_rows, &p->gemm_tile_cols};
  const char* whole_keys[] = {"multiprocessors", "gemm_tile_rows", "gemm_tile_cols"};
  for (int i = 0; i < 3; ++i) {
    const double v = errors->Take(f.OptionalDouble(whole_keys[i], 0, 0));
    if (v != static_cast<double>(static_cast<int64_t>(v)) || v > 1 << 20) {
      errors->Add(whole_keys[i], "must be a whole number up to 1048576");
    } else {
      *whole[i] = static_cast<int>(v);
    }
  }
  const double gpus = errors->Take(f.OptionalDouble("gpus_per_node", 0, 0));
  if (gpus != static_cast<double>(static_cast<int64_t>(gpus)) || gpus > 1 << 20) {
    errors->Add("gpus_per_node", "must be a whole number of GPUs up to 1048576");
  } else {
    p->gpus_per_node = static_cast<int>(gpus);
  }
  if (!j.contains("intra_node")) {
    if (p->gpus_per_node > 0) errors->Add("intra_node", "required when gpus_per_node > 0");
    return;
  }
  const json* intra = errors->Take(f.RequiredObject("intra_node"));
  if (intra == nullptr) return;
  const JsonFields nf = f.Nested("intra_node", *intra);
  for (CollectiveOp op : kOps) {
    const std::string key = CollectiveOpName(op);
    const json* object = errors->Take(nf.RequiredObject(key.c_str()));
    if (object != nullptr)
      IntraCollective(p->intra_node, op) = ReadCollective(nf, key, *object, errors);
  }
}

void WriteOptionalTerms(const HardwareProfile& p, json& j) {
  if (p.memory_bytes_per_second > 0) j["memory_bytes_per_second"] = p.memory_bytes_per_second;
  if (p.cpu_seconds_per_kernel > 0) j["cpu_seconds_per_kernel"] = p.cpu_seconds_per_kernel;
  if (!p.attention_kernel.empty()) j["attention_kernel"] = p.attention_kernel;
  if (p.multiprocessors > 0) j["multiprocessors"] = p.multiprocessors;
  if (p.gemm_tile_rows > 0) j["gemm_tile_rows"] = p.gemm_tile_rows;
  if (p.gemm_tile_cols > 0) j["gemm_tile_cols"] = p.gemm_tile_cols;
  if (p.gpus_per_node <= 0) return;
  j["gpus_per_node"] = p.gpus_per_node;
  auto& intra = const_cast<HardwareProfile::IntraNode&>(p.intra_node);
  for (CollectiveOp op : kOps) {
    j["intra_node"][CollectiveOpName(op)] = CollectiveToJson(IntraCollective(intra, op));
  }
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
  const bool intra = gpus_per_node > 0 && group_size <= gpus_per_node;
  const Collective& c =
      intra ? IntraCollective(const_cast<IntraNode&>(intra_node), op) : collective(op);
  return c.latency_seconds + bytes * factor / c.bandwidth_bytes_per_second;
}

double HardwareProfile::GemmSeconds(int64_t m, int64_t k, int64_t n) const {
  if (m <= 0 || k <= 0 || n <= 0) return 0;
  const double dm = static_cast<double>(m), dk = static_cast<double>(k),
               dn = static_cast<double>(n);
  double efficiency = Interpolate(gemm_efficiency, m);
  if (gemm_tile_rows > 0 && gemm_tile_cols > 0) {
    const int64_t tiles =
        ((m + gemm_tile_rows - 1) / gemm_tile_rows) * ((n + gemm_tile_cols - 1) / gemm_tile_cols);
    const double tile_area = static_cast<double>(gemm_tile_rows) * gemm_tile_cols;
    efficiency *= dm * dn / (static_cast<double>(tiles) * tile_area);
    if (multiprocessors > 0) {
      const int64_t waves = (tiles + multiprocessors - 1) / multiprocessors;
      efficiency *= static_cast<double>(tiles) / static_cast<double>(waves * multiprocessors);
    }
  }
  const double compute = 2.0 * dm * dk * dn / (peak_flops_per_second * efficiency);
  return std::max(compute, MemorySeconds(2.0 * (dm * dk + dk * dn + dm * dn)));
}

double HardwareProfile::MemorySeconds(double bytes) const {
  if (memory_bytes_per_second <= 0 || bytes <= 0) return 0;
  return bytes / memory_bytes_per_second;
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
    const std::string key = CollectiveOpName(op);
    const json* object = errors.Take(f.RequiredObject(key));
    if (object != nullptr) MutableCollective(p, op) = ReadCollective(f, key, *object, &errors);
  }
  p.kernel_launch_seconds = errors.Take(f.RequiredDouble("kernel_launch_seconds", 0));
  p.device_memory_bytes = errors.Take(f.OptionalDouble("device_memory_bytes", 0, 0));
  ReadOptionalTerms(j, f, &p, &errors);
  if (p.kernel_launch_seconds > 0 && p.cpu_seconds_per_kernel > 0) {
    errors.Add("kernel_launch_seconds",
               "must be 0 when cpu_seconds_per_kernel is set (that floor already counts each "
               "launch); set one of the two");
  }
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
    j[CollectiveOpName(op)] = CollectiveToJson(p.collective(op));
  }
  j["kernel_launch_seconds"] = p.kernel_launch_seconds;
  if (p.device_memory_bytes > 0) j["device_memory_bytes"] = p.device_memory_bytes;
  WriteOptionalTerms(p, j);
  j["source_notes"] = p.source_notes;
  return j.dump(2) + "\n";
}

}  // namespace skrull::scheduler
