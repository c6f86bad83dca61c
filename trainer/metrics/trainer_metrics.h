// TrainerMetrics: one rank's training metrics, exported three ways.
//  * Prometheus pull: GET /metrics on bind_address:port
//    (metrics_http_server.h), text format 0.0.4.
//  * metrics.jsonl: one JSON line per step (step_record.h), flushed after
//    every step so a job without Prometheus can be analysed afterwards.
//  * Pushgateway: PushFinal() pushes the final state once, at the end.
//
// Families, labels and units are listed in metric_names.h and
// docs/metrics.md. Every series carries the labels job, rank, dp_rank,
// cp_rank and node; none carries a per-step or per-sequence label.
//
// Scraping: the exported `job` label collides with Prometheus's target label
// `job`; scrape configs (and PodMonitors) must set honor_labels: true or the
// value lands in `exported_job` and the dashboard finds nothing.
//
// Usage (trainer):
//   MetricsOptions o;
//   o.job = spec.name; o.rank = rank; ...; o.port = spec.metrics.port + local_rank;
//   o.bind_address = "0.0.0.0"; o.jsonl_path = run_dir + "/metrics.jsonl";
//   SKRULL_ASSIGN_OR_RETURN(auto metrics, TrainerMetrics::Create(o));
//   for (...) { ...; Status s = metrics->RecordStep(record); /* log if !ok */ }
//   Status pushed = metrics->PushFinal();
//
// Thread safety: every method may be called from any thread. RecordStep calls
// are serialized, and a scrape (on the server's threads) or a push sees whole
// steps: never the counters of a step half applied.
#ifndef SKRULL_TRAINER_METRICS_TRAINER_METRICS_H_
#define SKRULL_TRAINER_METRICS_TRAINER_METRICS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/metrics/step_record.h"

namespace skrull::metrics {

// MetricsOptions::port value that binds an ephemeral port (tests); read the
// port back with TrainerMetrics::port().
inline constexpr int kEphemeralPort = -1;

struct MetricsOptions {
  // Identity: labels on every series and fields of every metrics.jsonl line.
  std::string job;  // the SkrullJob name. REQUIRED: non-empty.
  int rank = 0;     // global rank, >= 0
  int dp_rank = 0;  // data-parallel rank, >= 0
  int cp_rank = 0;  // context-parallel rank, >= 0
  // Kubernetes node (or host) name. "": this host's name (gethostname), so the
  // label is never empty (Prometheus treats an empty label as absent).
  std::string node;

  // Labels of skrull_info (value 1).
  std::string version;  // default "": this build's version (CMake PROJECT_VERSION)
  std::string policy;   // scheduling policy, e.g. "skrull", "round_robin"
  int dp = 1;           // data-parallel degree, >= 1
  int cp = 1;           // context-parallel degree, >= 1

  // Serving GET /metrics. 0: do not serve. 1..65535: serve there (the trainer
  // passes spec.metrics.port + local_rank). kEphemeralPort: a free port.
  int port = 0;
  std::string bind_address = "127.0.0.1";  // "0.0.0.0" in pods; IPv6 ok ("::")
  int server_threads = 2;                  // threads answering scrapes, >= 1

  // Pushgateway base URL, e.g. "http://pushgateway.monitoring:9091" (a path
  // prefix is kept). "": PushFinal() does nothing. Without a port the
  // scheme's default (80 / 443) is used.
  std::string pushgateway_url;
  double push_timeout_seconds = 30;  // PushFinal gives up after this long, > 0

  // metrics.jsonl path; "": no file. Opened for append (a resumed run adds to
  // it); missing parent directories are created.
  std::string jsonl_path;

  // Folder for TensorBoard event files (tensorboard_events.h); "": none.
  // Every RecordStep adds train/loss, train/learning_rate, train/grad_norm,
  // eval/loss (when measured), perf/tokens_per_second, perf/mfu and
  // memory/peak_bytes at its step.
  std::string tensorboard_dir;

  // Wall clock in Unix seconds, for skrull_last_step_timestamp_seconds and
  // metrics.jsonl. Empty: the system clock. Tests inject a fixed one.
  std::function<double()> now_unix_seconds;
};

// Bucket upper bounds of skrull_step_duration_seconds (10 ms .. 10 min) and
// skrull_scheduler_duration_seconds (1 us .. 10 s), in seconds; +Inf is implied.
const std::vector<double>& StepDurationBucketsSeconds();
const std::vector<double>& SchedulerDurationBucketsSeconds();

// Returns every problem with `options` at once ("metrics.port: must be 0, -1
// or in 1..65535 (got 70000); metrics.job: must not be empty"), or OK.
Status ValidateMetricsOptions(const MetricsOptions& options);

class TrainerMetrics {
 public:
  // Validates `options`, registers every family (all label combinations
  // pre-created at 0), opens jsonl_path and, when a port is set, starts
  // serving. Errors: InvalidArgument (options), IoError (jsonl_path cannot be
  // opened), Unavailable (the port cannot be bound; the message names it).
  static StatusOr<std::unique_ptr<TrainerMetrics>> Create(MetricsOptions options);

  TrainerMetrics(const TrainerMetrics&) = delete;
  TrainerMetrics& operator=(const TrainerMetrics&) = delete;
  ~TrainerMetrics();  // stops serving; closes metrics.jsonl

  // Applies one step: counters grow by the step's amounts, gauges take the
  // step's values (rates from ComputeStepRates), histograms observe
  // step_seconds and scheduler_seconds; then appends and flushes one line to
  // metrics.jsonl. Prometheus is updated even if the file write fails, which
  // returns IoError naming the path.
  // REQUIRES: StepRecordProblem(r) is empty (checked; a bad record is a bug).
  Status RecordStep(const StepRecord& r);

  // Pushes the current state of every family to the Pushgateway with PUT
  // (replacing the group job=<job>/rank=<rank>). OK without doing anything
  // when no pushgateway_url is set. Unavailable when the gateway cannot be
  // reached, answers an error status, or does not answer within
  // push_timeout_seconds (the request is then abandoned in the background).
  Status PushFinal();

  // The port /metrics is served on (the bound one for kEphemeralPort), or 0
  // when not serving.
  int port() const;

  // The text exposition (format 0.0.4) a scrape gets.
  std::string Exposition() const;

  const MetricsOptions& options() const;

 private:
  struct Impl;
  explicit TrainerMetrics(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_TRAINER_METRICS_H_
