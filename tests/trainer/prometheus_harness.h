// Test support: a real Prometheus server (the Debian `prometheus` binary) on
// loopback, scraping given targets, plus a minimal HTTP/1.0 client to query
// it. Used by the metrics integration tests, including the live 2-rank
// trainer job (metrics_live_job_test). Loopback only; every wait is bounded.
//
//   PrometheusHarness::Options o;
//   o.targets = {"127.0.0.1:" + std::to_string(metrics->port())};
//   SKRULL_ASSIGN_OR_RETURN(auto prom, PrometheusHarness::Start(o));
//   StatusOr<nlohmann::json> r = prom->QueryUntilNonEmpty("skrull_train_steps_total", 20);
//
// The scrape config sets honor_labels: true, as a Skrull deployment must: the
// trainer's own `job` label would otherwise be renamed `exported_job`.
//
// Thread safety: a harness is used from one thread.
#ifndef SKRULL_TESTS_TRAINER_PROMETHEUS_HARNESS_H_
#define SKRULL_TESTS_TRAINER_PROMETHEUS_HARNESS_H_

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace skrull::testing {

struct HttpResponse {
  int status = 0;
  std::string headers;  // raw header block, lines joined by "\r\n"
  std::string body;     // de-chunked
};

// GET http://<host>:<port><target> with HTTP/1.0 and Connection: close.
// Unavailable on connect / read failure or when `timeout_seconds` passes.
StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& target,
                               double timeout_seconds = 10);

// Percent-encodes a query-string component (RFC 3986 unreserved kept).
std::string UrlEncode(std::string_view s);

// The first of `count` consecutive TCP ports (1..64) that were free a moment
// ago, picked at random below the kernel's ephemeral port range so that no
// outgoing connection or bind-to-0 elsewhere takes one before the caller's
// server binds it. Still racy against another picker; rare.
StatusOr<int> PickFreePortRun(int count);

// PickFreePortRun(1).
StatusOr<int> PickFreeLoopbackPort();

// Absolute path of `name` on $PATH, or "" if not found.
std::string FindOnPath(const std::string& name);

// Starts argv[0] (a path) with this environment, stdin from `stdin_path`
// ("" = /dev/null) and stdout + stderr to `output_path` (created; truncated,
// or appended to when `append`). Returns the child's pid; the caller waits
// for it. Unavailable when the spawn fails.
StatusOr<pid_t> SpawnProcess(const std::vector<std::string>& argv, const std::string& stdin_path,
                             const std::string& output_path, bool append = false);

class PrometheusHarness {
 public:
  struct Options {
    std::vector<std::string> targets;     // "127.0.0.1:<port>", scraped at /metrics
    std::vector<std::string> rule_files;  // absolute paths of rule files to load
    // Also the rule evaluation interval; written in whole milliseconds.
    double scrape_interval_seconds = 1;
    std::string binary = "prometheus";  // looked up on $PATH unless it has a '/'
    double start_timeout_seconds = 30;  // until /-/ready answers 200
  };

  // Writes prometheus.yml into a fresh temp dir, starts Prometheus on a free
  // loopback port and waits until it is ready. FailedPrecondition when the
  // binary is missing (the message says to install the `prometheus` package);
  // Unavailable when it exits or is not ready in time (the message carries
  // the tail of its log).
  static StatusOr<std::unique_ptr<PrometheusHarness>> Start(Options options);

  PrometheusHarness(const PrometheusHarness&) = delete;
  PrometheusHarness& operator=(const PrometheusHarness&) = delete;
  ~PrometheusHarness();  // Stop() and remove the temp dir

  // Instant query through /api/v1/query, at `time_unix_seconds` (0: now).
  // Returns the "data" object ({"resultType": ..., "result": ...}).
  // InvalidArgument carries Prometheus's error for a query that does not
  // parse or evaluate.
  StatusOr<nlohmann::json> Query(const std::string& promql, double time_unix_seconds = 0);

  // Range query through /api/v1/query_range over [start, end] (Unix
  // seconds) every `step_seconds`, as a Grafana time-series panel asks.
  // Returns the "data" object ({"resultType": "matrix", "result": [...]});
  // errors as for Query.
  StatusOr<nlohmann::json> QueryRange(const std::string& promql, double start_unix_seconds,
                                      double end_unix_seconds, double step_seconds);

  // Repeats Query until its result is non-empty or `timeout_seconds` pass;
  // returns the last data object either way (check data["result"]), or the
  // first query error.
  StatusOr<nlohmann::json> QueryUntilNonEmpty(const std::string& promql, double timeout_seconds);

  // SIGTERM, wait up to 10 s, then SIGKILL. Idempotent.
  void Stop();

  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  // The last `max_bytes` of Prometheus's combined stdout/stderr.
  std::string LogTail(size_t max_bytes = 4000) const;

 private:
  PrometheusHarness() = default;

  std::string dir_;
  std::string log_path_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace skrull::testing

#endif  // SKRULL_TESTS_TRAINER_PROMETHEUS_HARNESS_H_
