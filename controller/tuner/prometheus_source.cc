#include "controller/tuner/prometheus_source.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "trainer/metrics/metric_names.h"

namespace skrull::tuner {
namespace {

using nlohmann::json;

// A sample value as Prometheus writes it ("123", "1.5e+10", "NaN").
bool SampleValue(const json& pair, int64_t* ts_ms, double* value) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_string()) {
    return false;
  }
  const std::string text = pair[1].get<std::string>();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return false;
  *ts_ms = std::llround(pair[0].get<double>() * 1000);
  *value = v;
  return true;
}

struct Series {
  int rank = 0;
  std::string node;
  std::vector<std::pair<int64_t, double>> samples;  // (timestamp ms, value), finite values only
};

// The result array of one query's data, as Series. `type` is "matrix" or "vector".
StatusOr<std::vector<Series>> ParseSeries(const json& data, const char* type,
                                          const std::string& query) {
  const std::string where = "query `" + query + "`";
  if (!data.is_object() || !data.contains("resultType") || !data.contains("result") ||
      !data["result"].is_array()) {
    return InvalidArgumentError(
        where + ": answer has no resultType / result: " + data.dump().substr(0, 200));
  }
  if (data["resultType"] != type) {
    return InvalidArgumentError(where + ": expected a " + std::string(type) + " result (got " +
                                data["resultType"].dump() + ")");
  }
  std::vector<Series> out;
  for (const json& s : data["result"]) {
    const json& metric = s.contains("metric") ? s["metric"] : json();
    if (!metric.is_object() || !metric.contains(metrics::kLabelRank) ||
        !metric[metrics::kLabelRank].is_string()) {
      return InvalidArgumentError(where + ": series " + metric.dump() + " has no \"" +
                                  metrics::kLabelRank + "\" label; scrape the ranks with " +
                                  "honor_labels: true (docs/metrics.md)");
    }
    Series series;
    const std::string rank = metric[metrics::kLabelRank].get<std::string>();
    char* end = nullptr;
    const long r = std::strtol(rank.c_str(), &end, 10);
    if (rank.empty() || *end != '\0' || r < 0) {
      return InvalidArgumentError(where + ": series " + metric.dump() +
                                  ": rank label is not a rank number");
    }
    series.rank = static_cast<int>(r);
    if (metric.contains(metrics::kLabelNode) && metric[metrics::kLabelNode].is_string()) {
      series.node = metric[metrics::kLabelNode].get<std::string>();
    }
    const bool matrix = std::string(type) == "matrix";
    const json& values = matrix ? s["values"] : json::array({s["value"]});
    if (!values.is_array()) {
      return InvalidArgumentError(where + ": series " + metric.dump() + " has no " +
                                  (matrix ? "values" : "value"));
    }
    for (const json& pair : values) {
      int64_t ts = 0;
      double v = 0;
      if (!SampleValue(pair, &ts, &v)) {
        return InvalidArgumentError(where + ": series " + metric.dump() + ": bad sample " +
                                    pair.dump());
      }
      if (std::isfinite(v)) series.samples.emplace_back(ts, v);
    }
    out.push_back(std::move(series));
  }
  return out;
}

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

uint64_t ToUint(double v) { return v <= 0 ? 0 : static_cast<uint64_t>(std::llround(v)); }

}  // namespace

StatusOr<json> ParseQueryResponse(int http_status, const std::string& body,
                                  const std::string& request) {
  const std::string where = request + ": HTTP " + std::to_string(http_status);
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("status")) {
    const std::string text = body.substr(0, 200);
    if (http_status >= 400 && http_status < 500) {
      return InvalidArgumentError(where + ": not the Prometheus API (" + text +
                                  "); is the URL a Prometheus server, with its path prefix?");
    }
    return UnavailableError(where + ": not the Prometheus API's JSON: " + text);
  }
  if (j["status"] == "success" && http_status == 200) {
    if (!j.contains("data") || !j["data"].is_object()) {
      return UnavailableError(where + ": success without a data object");
    }
    return j["data"];
  }
  const std::string detail = j.value("errorType", std::string("error")) + ": " +
                             j.value("error", std::string("(no message)"));
  if (http_status == 400 || http_status == 422) return InvalidArgumentError(where + ": " + detail);
  return UnavailableError(where + ": " + detail);
}

StatusOr<json> FakePrometheusApi::Query(const std::string& promql, double) {
  queries_.push_back(promql);
  if (auto e = errors_.find(promql); e != errors_.end()) return e->second;
  if (auto d = data_.find(promql); d != data_.end()) return d->second;
  const bool range = !promql.empty() && promql.back() == ']';
  return json{{"resultType", range ? "matrix" : "vector"}, {"result", json::array()}};
}

std::vector<std::string> PrometheusSourceQueries(const PrometheusSourceOptions& o) {
  SKRULL_CHECK(!o.job.empty()) << "PrometheusSourceOptions::job is required";
  const std::string job = std::string(metrics::kLabelJob) + "=\"" + Escape(o.job) + "\"";
  const std::string w = "[" + o.window + "]";
  const auto sel = [&](const char* family) { return std::string(family) + "{" + job + "}" + w; };
  return {sel(metrics::kMemoryPeakBytes), sel(metrics::kRankTokensPeak),
          "max_over_time(" + sel(metrics::kMemoryCapacityBytes) + ")",
          "last_over_time(" + sel(metrics::kBucketSizeTokens) + ")"};
}

StatusOr<TuningInput> ReadPrometheus(PrometheusApi* api, const PrometheusSourceOptions& options) {
  if (options.job.empty()) return InvalidArgumentError("prometheus source: job name is required");
  const std::vector<std::string> q = PrometheusSourceQueries(options);
  std::vector<std::vector<Series>> results;
  for (size_t i = 0; i < q.size(); ++i) {
    StatusOr<json> data = api->Query(q[i], options.time_unix_seconds);
    if (!data.ok()) return data.status().WithContext("query `" + q[i] + "`");
    SKRULL_ASSIGN_OR_RETURN(std::vector<Series> series,
                            ParseSeries(*data, i < 2 ? "matrix" : "vector", q[i]));
    results.push_back(std::move(series));
  }
  const std::vector<Series>& memory = results[0];
  const std::vector<Series>& tokens = results[1];
  if (memory.empty() || tokens.empty()) {
    return NotFoundError(api->Describe() + ": no " +
                         (memory.empty() ? metrics::kMemoryPeakBytes : metrics::kRankTokensPeak) +
                         " series with job=\"" + options.job + "\" in the " + options.window +
                         " before the evaluation time; is Prometheus scraping the ranks with "
                         "honor_labels: true (else the label is exported_job), and did the run "
                         "record a step in that window?");
  }

  TuningInput input;
  input.source = api->Describe() + " job=\"" + options.job + "\"";
  input.died_of_memory = options.died_of_memory;
  input.failure = options.failure;
  std::map<int, std::map<int64_t, double>> mem_by_rank, tok_by_rank;
  std::map<int, std::string> node_of;
  for (const Series& s : memory) {
    for (const auto& [ts, v] : s.samples) mem_by_rank[s.rank][ts] = v;
    if (!s.node.empty()) node_of[s.rank] = s.node;
  }
  for (const Series& s : tokens) {
    for (const auto& [ts, v] : s.samples) tok_by_rank[s.rank][ts] = v;
  }
  std::map<int, uint64_t> capacity;
  for (const Series& s : results[2]) {
    for (const auto& sample : s.samples) {
      capacity[s.rank] = std::max(capacity[s.rank], ToUint(sample.second));
    }
  }
  for (const Series& s : results[3]) {
    for (const auto& sample : s.samples) {
      input.bucket_size_tokens =
          std::max<int64_t>(input.bucket_size_tokens, static_cast<int64_t>(ToUint(sample.second)));
    }
  }
  std::map<std::string, int> ranks_on_node;
  for (const auto& [rank, node] : node_of) ++ranks_on_node[node];

  for (const auto& [rank, mem] : mem_by_rank) {
    RankObservation r;
    r.rank = rank;
    const auto& tok = tok_by_rank[rank];
    for (const auto& [ts, bytes] : mem) {
      auto t = tok.find(ts);
      if (t != tok.end())
        r.steps.push_back({static_cast<int64_t>(ToUint(t->second)), ToUint(bytes)});
    }
    uint64_t cap = capacity[rank];
    const int sharing = node_of.count(rank) ? ranks_on_node[node_of[rank]] : 1;
    if (cap > 0 && options.host_memory_shared && sharing > 1) {
      r.capacity_note = "host memory " + FormatBytes(static_cast<double>(cap)) + " shared by " +
                        std::to_string(sharing) + " ranks on node " + node_of[rank];
      cap /= static_cast<uint64_t>(sharing);
    }
    if (cap == 0 && options.capacity_bytes_override > 0) {
      cap = options.capacity_bytes_override;
      r.capacity_note = options.capacity_override_note;
    }
    r.capacity_bytes = cap;
    input.ranks.push_back(std::move(r));
  }
  return input;
}

}  // namespace skrull::tuner
