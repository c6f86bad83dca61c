#include "scheduler/plan_json.h"

#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/json_fields.h"

namespace skrull::scheduler {
using nlohmann::json;
namespace {

// The optional "group_size" / "group_first" of a distributed sequence.
Status ReadSubGroup(const JsonFields& sf, const json& s, int cp, PlacedSequence* ps) {
  SKRULL_ASSIGN_OR_RETURN(const int64_t size, sf.OptionalInt("group_size", 0, 0, cp));
  SKRULL_ASSIGN_OR_RETURN(const int64_t first, sf.OptionalInt("group_first", 0, 0, cp - 1));
  if (size == 0 && first == 0) return OkStatus();
  if (!ps->distributed()) {
    return sf.Error("group_size", "only a distributed sequence (cp_rank -1) has a sub-group",
                    s.contains("group_size") ? &s.at("group_size") : nullptr);
  }
  if (size == cp && first == 0) return OkStatus();  // all ranks
  if (!IsAlignedSubGroup(static_cast<int>(first), static_cast<int>(size), cp)) {
    return sf.Error("group_size",
                    "group_first " + std::to_string(first) + " / group_size " +
                        std::to_string(size) +
                        " must name an aligned sub-group: a power of two in [2, " +
                        std::to_string(cp) + ") with group_first a multiple of it",
                    s.contains("group_size") ? &s.at("group_size") : nullptr);
  }
  ps->group_size = static_cast<int>(size);
  ps->group_first = static_cast<int>(first);
  return OkStatus();
}

}  // namespace

std::string PlanToJson(const Plan& plan) {
  json micro_batches = json::array();
  for (const DpRankPlan& rank : plan.ranks) {
    for (const MicroBatch& mb : rank.micro_batches) {
      json sequences = json::array();
      for (const PlacedSequence& s : mb.sequences) {
        json seq = {{"id", s.id}, {"length", s.length}, {"cp_rank", s.cp_rank}};
        if (s.on_sub_group(plan.topology.cp)) {
          seq["group_first"] = s.group_first;
          seq["group_size"] = s.group_size;
        }
        sequences.push_back(std::move(seq));
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
  const JsonFields f(j, "plan");
  Plan plan;
  SKRULL_ASSIGN_OR_RETURN(plan.policy, f.RequiredString("policy"));
  SKRULL_ASSIGN_OR_RETURN(const int64_t dp, f.RequiredInt("dp", 1, INT32_MAX));
  SKRULL_ASSIGN_OR_RETURN(const int64_t cp, f.RequiredInt("cp", 1, INT32_MAX));
  SKRULL_ASSIGN_OR_RETURN(plan.bucket_size_tokens, f.RequiredInt("bucket_size"));
  plan.topology.dp = static_cast<int>(dp);
  plan.topology.cp = static_cast<int>(cp);
  plan.ranks.resize(static_cast<size_t>(dp));

  SKRULL_ASSIGN_OR_RETURN(const json* mbs, f.RequiredArray("micro_batches"));
  for (size_t i = 0; i < mbs->size(); ++i) {
    const json& m = (*mbs)[i];
    const JsonFields mf = f.Nested("micro_batches[" + std::to_string(i) + "]", m);
    if (!m.is_object()) return mf.Error("", "must be an object", &m);
    SKRULL_ASSIGN_OR_RETURN(const int64_t dp_rank, mf.RequiredInt("dp_rank", 0, dp - 1));
    SKRULL_ASSIGN_OR_RETURN(const int64_t index, mf.RequiredInt("index"));
    auto& rank_mbs = plan.ranks[dp_rank].micro_batches;
    if (index != static_cast<int64_t>(rank_mbs.size())) {
      return mf.Error("index", "micro-batches of dp_rank " + std::to_string(dp_rank) +
                                   " must be listed in order; want " +
                                   std::to_string(rank_mbs.size()) + " (got " +
                                   std::to_string(index) + ")");
    }
    MicroBatch mb;
    mb.dp_rank = static_cast<int>(dp_rank);
    mb.index = static_cast<int>(index);
    SKRULL_ASSIGN_OR_RETURN(const json* seqs, mf.RequiredArray("sequences"));
    for (size_t k = 0; k < seqs->size(); ++k) {
      const json& s = (*seqs)[k];
      const JsonFields sf = mf.Nested("sequences[" + std::to_string(k) + "]", s);
      if (!s.is_object()) return sf.Error("", "must be an object", &s);
      PlacedSequence ps;
      SKRULL_ASSIGN_OR_RETURN(ps.id, sf.RequiredInt("id"));
      SKRULL_ASSIGN_OR_RETURN(ps.length, sf.RequiredInt("length", 1));
      SKRULL_ASSIGN_OR_RETURN(const int64_t cp_rank, sf.RequiredInt("cp_rank"));
      if (cp_rank < kDistributed || cp_rank >= cp) {
        return sf.Error("cp_rank", "must be -1 or in [0, " + std::to_string(cp) + ")",
                        &s.at("cp_rank"));
      }
      ps.cp_rank = static_cast<int>(cp_rank);
      SKRULL_RETURN_IF_ERROR(ReadSubGroup(sf, s, static_cast<int>(cp), &ps));
      mb.sequences.push_back(ps);
    }
    FillDerived(mb, plan.topology.cp, cost);
    rank_mbs.push_back(std::move(mb));
  }
  SKRULL_ASSIGN_OR_RETURN(const json* rb, f.OptionalObject("rollbacks"));
  if (rb != nullptr) {
    const JsonFields rf = f.Nested("rollbacks", *rb);
    SKRULL_ASSIGN_OR_RETURN(plan.rollbacks.dacp, rf.RequiredInt("dacp"));
    SKRULL_ASSIGN_OR_RETURN(plan.rollbacks.gds, rf.RequiredInt("gds"));
  }
  SKRULL_ASSIGN_OR_RETURN(plan.schedule_seconds, f.OptionalDouble("schedule_seconds", 0));
  return plan;
}

}  // namespace skrull::scheduler
