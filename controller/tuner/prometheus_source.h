// The tuner's Prometheus source: a running or finished job's memory, tokens
// held and BucketSize, read from the Prometheus HTTP API
// (GET /api/v1/query) by the SkrullJob's `job` label. For Kubernetes jobs,
// whose ranks' files are in pods; the scrape must keep the trainer's labels
// (honor_labels: true, docs/metrics.md).
//
// Instant queries only; a range selector in an instant query returns every
// sample of the window, which gives the fit one point per scrape:
//   skrull_memory_peak_bytes{job="J"}[W]                          matrix
//   skrull_rank_tokens_peak{job="J"}[W]                           matrix
//   max_over_time(skrull_memory_capacity_bytes{job="J"}[W])       vector
//   last_over_time(skrull_bucket_size_tokens{job="J"}[W])         vector
// Memory and tokens of one rank are paired by sample timestamp: both gauges
// come from the same scrape of the same target, so their timestamps match.
// Series are grouped by the `rank` label (a rank restarted on another node is
// one rank). Prometheus cannot tell how a pod died: an out-of-memory end
// (pod status OOMKilled) is passed in by the caller.
//
// Thread safety: ReadPrometheus is a function; an HttpPrometheusApi may be
// used from several threads; FakePrometheusApi from one.
#ifndef SKRULL_CONTROLLER_TUNER_PROMETHEUS_SOURCE_H_
#define SKRULL_CONTROLLER_TUNER_PROMETHEUS_SOURCE_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "controller/tuner/tuner.h"

namespace skrull::tuner {

// The seam: one PromQL instant query.
class PrometheusApi {
 public:
  virtual ~PrometheusApi() = default;
  // Evaluates `promql` at `time_unix_seconds` (0 = the server's now) and
  // returns the response's "data" object: {"resultType", "result"}.
  // Errors: Unavailable when the server cannot be reached, times out, answers
  // 5xx or something that is not the API's JSON; InvalidArgument with the
  // server's errorType and error for a query it rejects (HTTP 400 / 422).
  virtual StatusOr<nlohmann::json> Query(const std::string& promql, double time_unix_seconds) = 0;
  // The server, for messages ("http://prometheus:9090").
  virtual std::string Describe() const = 0;
};

// Turns one /api/v1/query HTTP answer into the "data" object (errors as for
// PrometheusApi::Query). `request` names the call in messages, e.g.
// "GET http://prom:9090/api/v1/query?query=...".
StatusOr<nlohmann::json> ParseQueryResponse(int http_status, const std::string& body,
                                            const std::string& request);

// The real client (cpprestsdk). Each Query is one HTTP GET, bounded by
// `timeout`.
class HttpPrometheusApi : public PrometheusApi {
 public:
  // `base_url`: http(s)://host[:port][/prefix] of the Prometheus server.
  // InvalidArgument for anything else, naming the flag or field the caller
  // passes as `what` (e.g. "--prometheus").
  static StatusOr<std::unique_ptr<HttpPrometheusApi>> Create(
      const std::string& base_url, std::chrono::milliseconds timeout = std::chrono::seconds(10),
      const std::string& what = "prometheus URL");
  ~HttpPrometheusApi() override;

  StatusOr<nlohmann::json> Query(const std::string& promql, double time_unix_seconds) override;
  std::string Describe() const override { return base_url_; }

  // Ends queries in flight now and makes later ones fail at once
  // (Unavailable, "cancelled"): serve's shutdown. Thread-safe; not undone.
  void CancelAll();

 private:
  struct Impl;
  HttpPrometheusApi(std::string base_url, std::unique_ptr<Impl> impl);
  std::string base_url_;
  std::unique_ptr<Impl> impl_;
};

// In memory, for tests and dry runs: answers each PromQL text from a table.
// A query not in the table answers what Prometheus answers for series it does
// not have: an empty matrix for a range selector (text ending in ']'), an
// empty vector otherwise.
class FakePrometheusApi : public PrometheusApi {
 public:
  void SetData(const std::string& promql, nlohmann::json data) { data_[promql] = std::move(data); }
  void SetError(const std::string& promql, Status error) { errors_[promql] = std::move(error); }

  StatusOr<nlohmann::json> Query(const std::string& promql, double time_unix_seconds) override;
  std::string Describe() const override { return "fake-prometheus"; }
  // Every query received, in order.
  const std::vector<std::string>& queries() const { return queries_; }

 private:
  std::map<std::string, nlohmann::json> data_;
  std::map<std::string, Status> errors_;
  std::vector<std::string> queries_;
};

struct PrometheusSourceOptions {
  std::string job;               // the SkrullJob's metadata.name: the `job` label (required)
  std::string window = "1h";     // PromQL duration of samples read back from the evaluation time
  double time_unix_seconds = 0;  // evaluation time (the run's end); 0 = now
  // CPU jobs: each rank reports host (or pod cgroup) memory, which the ranks
  // with the same `node` label share; each rank's capacity is divided by
  // their number. Set it for spec.resources.gpusPerProc == 0.
  bool host_memory_shared = false;
  // Per-rank capacity when the gauge reports none (CUDA runs). 0 = none.
  uint64_t capacity_bytes_override = 0;
  std::string capacity_override_note;
  // How the run ended, from outside Prometheus (e.g. a pod OOMKilled).
  bool died_of_memory = false;
  std::string failure;
};

// The PromQL ReadPrometheus sends, in the order above (for tests and docs).
// REQUIRES: options.job is not empty.
std::vector<std::string> PrometheusSourceQueries(const PrometheusSourceOptions& options);

// Reads the tuner's input for `options.job` through `api`. NotFound when
// Prometheus has no memory or tokens series for the job in the window (the
// message says to check honor_labels and the window); query errors as
// PrometheusApi::Query, with the query; InvalidArgument for a result that is
// not the expected shape (names the query and the series).
StatusOr<TuningInput> ReadPrometheus(PrometheusApi* api, const PrometheusSourceOptions& options);

}  // namespace skrull::tuner

#endif  // SKRULL_CONTROLLER_TUNER_PROMETHEUS_SOURCE_H_
