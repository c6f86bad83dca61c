#include "trainer/dist/run_summary.h"

#include <algorithm>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace skrull::dist {
namespace {

using nlohmann::json;

struct Stats {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  int count = 0;
  void Add(double v) {
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
    ++count;
  }
};

// Numeric leaves of nested objects, keyed by dotted path (arrays are skipped:
// their elements have no stable meaning across ranks).
void CollectNumbers(const json& j, const std::string& prefix, std::map<std::string, Stats>* out) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_number()) {
      (*out)[key].Add(it->get<double>());
    } else if (it->is_object()) {
      CollectNumbers(*it, key, out);
    }
  }
}

json ReadJsonOrNull(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return nullptr;
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json(nullptr) : j;
}

}  // namespace

std::string RunSummaryJson(const LaunchOptions& options, const LaunchResult& result,
                           int world_size) {
  json j;
  j["job"] = options.job_name;
  j["ok"] = result.ok;
  j["world_size"] = world_size;
  j["nnodes"] = options.nnodes;
  j["node_rank"] = options.node_rank;
  j["procs_per_node"] = options.procs_per_node;
  j["wall_seconds"] = result.wall_seconds;
  j["teardown_seconds"] = result.teardown_seconds;
  j["interrupted_by_signal"] = result.interrupted_by_signal;
  if (result.failure) {
    const RankOutcome& f = *result.failure;
    j["failure"] = {{"rank", f.rank},          {"exit_code", f.exit.exit_code},
                    {"signal", f.exit.signal}, {"description", f.exit.Describe()},
                    {"log", f.log_path},       {"log_tail", result.failure_log_tail}};
  } else {
    j["failure"] = nullptr;
  }
  std::map<std::string, Stats> stats;
  json ranks = json::array();
  for (const auto& r : result.ranks) {
    json summary = options.output_dir.empty()
                       ? json(nullptr)
                       : ReadJsonOrNull(RankSummaryPath(options.output_dir, r.rank));
    CollectNumbers(summary, "", &stats);
    ranks.push_back({{"rank", r.rank},
                     {"local_rank", r.local_rank},
                     {"exit_code", r.exit.exit_code},
                     {"signal", r.exit.signal},
                     {"stopped_by_launcher", r.stopped_by_launcher},
                     {"log", r.log_path},
                     {"summary", summary}});
  }
  j["ranks"] = ranks;
  // The trainer's summary contract (steps, initial_loss, final_loss, tokens,
  // tokens_per_second, policy, dp, cp, rollbacks, ...) at the top level too,
  // so a multi-process run reads like a single-process one. Every rank runs
  // the same plan and all-reduced loss, so the lowest rank's values stand for
  // the job; memory is per rank, so the peak is the maximum over ranks.
  for (const auto& r : ranks) {
    const json& summary = r["summary"];
    if (!summary.is_object()) continue;
    for (const auto& [key, value] : summary.items()) {
      if (!j.contains(key)) j[key] = value;
    }
    break;
  }
  for (const char* key : {"peak_memory_bytes", "peak_memory_allocated_bytes"}) {
    if (auto it = stats.find(key); it != stats.end()) {
      j[key] = static_cast<int64_t>(it->second.max);
    }
  }
  json agg = json::object();
  for (const auto& [key, s] : stats) {
    agg[key] = {{"min", s.min},
                {"max", s.max},
                {"mean", s.sum / s.count},
                {"sum", s.sum},
                {"count", s.count}};
  }
  j["aggregate"] = agg;
  return j.dump(2) + "\n";
}

Status WriteRunSummary(const std::string& path, const LaunchOptions& options,
                       const LaunchResult& result, int world_size) {
  return WriteFileAtomically(path, RunSummaryJson(options, result, world_size));
}

}  // namespace skrull::dist
