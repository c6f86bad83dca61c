#include "scheduler/plan_json.h"

#include <nlohmann/json.hpp>

namespace skrull::scheduler {
namespace {

using nlohmann::json;

// Reads an integer member of `j` at `path`; records the first error.
bool GetInt(const json& j, const std::string& path, const char* key, int64_t* out, Status* error) {
  auto it = j.find(key);
  const std::string field = path.empty() ? key : path + "." + key;
  if (it == j.end()) {
    *error = InvalidArgumentError(field + ": required field missing");
    return false;
  }
  if (!it->is_number_integer()) {
    *error = InvalidArgumentError(field + ": must be an integer (got " + it->dump() + ")");
    return false;
  }
  *out = it->get<int64_t>();
  return true;
}

}  // namespace

std::string PlanToJson(const Plan& plan) {
  json micro_batches = json::array();
  for (const DpRankPlan& rank : plan.ranks) {
    for (const MicroBatch& mb : rank.micro_batches) {
      json sequences = json::array();
      for (const PlacedSequence& s : mb.sequences) {
        sequences.push_back({{"id", s.id}, {"length", s.length}, {"cp_rank", s.cp_rank}});
      }
      micro_batches.push_back(
          {{"dp_rank", mb.dp_rank}, {"index", mb.index}, {"sequences", std::move(sequences)}});
    }
  }
  json j;
  j["policy"] = plan.policy;
  j["dp"] = plan.topology.dp;
  j["cp"] = plan.topology.cp;
  j["bucket_size"] = plan.bucket_size_tokens;
  j["micro_batches"] = std::move(micro_batches);
  j["rollbacks"] = {{"dacp", plan.rollbacks.dacp}, {"gds", plan.rollbacks.gds}};
  j["schedule_seconds"] = plan.schedule_seconds;
  return j.dump();
}

StatusOr<Plan> PlanFromJson(const std::string& text, const CostModel& cost) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidArgumentError(std::string("plan: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return InvalidArgumentError("plan: must be a JSON object");
  Status error;
  Plan plan;
  if (!j.contains("policy") || !j["policy"].is_string()) {
    return InvalidArgumentError("policy: required string");
  }
  plan.policy = j["policy"].get<std::string>();
  int64_t dp = 0, cp = 0;
  if (!GetInt(j, "", "dp", &dp, &error) || !GetInt(j, "", "cp", &cp, &error) ||
      !GetInt(j, "", "bucket_size", &plan.bucket_size_tokens, &error)) {
    return error;
  }
  if (dp < 1) return InvalidArgumentError("dp: must be >= 1 (got " + std::to_string(dp) + ")");
  if (cp < 1) return InvalidArgumentError("cp: must be >= 1 (got " + std::to_string(cp) + ")");
  plan.topology.dp = static_cast<int>(dp);
  plan.topology.cp = static_cast<int>(cp);
  plan.ranks.resize(static_cast<size_t>(dp));

  auto mbs = j.find("micro_batches");
  if (mbs == j.end() || !mbs->is_array())
    return InvalidArgumentError("micro_batches: required array");
  for (size_t i = 0; i < mbs->size(); ++i) {
    const json& m = (*mbs)[i];
    const std::string path = "micro_batches[" + std::to_string(i) + "]";
    if (!m.is_object()) return InvalidArgumentError(path + ": must be an object");
    int64_t dp_rank = 0, index = 0;
    if (!GetInt(m, path, "dp_rank", &dp_rank, &error) ||
        !GetInt(m, path, "index", &index, &error)) {
      return error;
    }
    if (dp_rank < 0 || dp_rank >= dp) {
      return InvalidArgumentError(path + ".dp_rank: must be in [0, " + std::to_string(dp) +
                                  ") (got " + std::to_string(dp_rank) + ")");
    }
    auto& rank_mbs = plan.ranks[dp_rank].micro_batches;
    if (index != static_cast<int64_t>(rank_mbs.size())) {
      return InvalidArgumentError(path + ".index: micro-batches of dp_rank " +
                                  std::to_string(dp_rank) + " must be listed in order; want " +
                                  std::to_string(rank_mbs.size()) + " (got " +
                                  std::to_string(index) + ")");
    }
    MicroBatch mb;
    mb.dp_rank = static_cast<int>(dp_rank);
    mb.index = static_cast<int>(index);
    auto seqs = m.find("sequences");
    if (seqs == m.end() || !seqs->is_array()) {
      return InvalidArgumentError(path + ".sequences: required array");
    }
    for (size_t k = 0; k < seqs->size(); ++k) {
      const json& s = (*seqs)[k];
      const std::string spath = path + ".sequences[" + std::to_string(k) + "]";
      if (!s.is_object()) return InvalidArgumentError(spath + ": must be an object");
      PlacedSequence ps;
      int64_t cp_rank = 0;
      if (!GetInt(s, spath, "id", &ps.id, &error) ||
          !GetInt(s, spath, "length", &ps.length, &error) ||
          !GetInt(s, spath, "cp_rank", &cp_rank, &error)) {
        return error;
      }
      if (ps.length <= 0) {
        return InvalidArgumentError(spath + ".length: must be > 0 (got " +
                                    std::to_string(ps.length) + ")");
      }
      if (cp_rank < kDistributed || cp_rank >= cp) {
        return InvalidArgumentError(spath + ".cp_rank: must be -1 or in [0, " + std::to_string(cp) +
                                    ") (got " + std::to_string(cp_rank) + ")");
      }
      ps.cp_rank = static_cast<int>(cp_rank);
      mb.sequences.push_back(ps);
    }
    FillDerived(mb, plan.topology.cp, cost);
    rank_mbs.push_back(std::move(mb));
  }
  auto rb = j.find("rollbacks");
  if (rb != j.end()) {
    if (!rb->is_object()) return InvalidArgumentError("rollbacks: must be an object");
    if (!GetInt(*rb, "rollbacks", "dacp", &plan.rollbacks.dacp, &error) ||
        !GetInt(*rb, "rollbacks", "gds", &plan.rollbacks.gds, &error)) {
      return error;
    }
  }
  auto ss = j.find("schedule_seconds");
  if (ss != j.end()) {
    if (!ss->is_number()) return InvalidArgumentError("schedule_seconds: must be a number");
    plan.schedule_seconds = ss->get<double>();
  }
  return plan;
}

}  // namespace skrull::scheduler
