// Test support for the metrics tests: builders, an exposition parser, a
// child-process runner (promtool) and a fake HTTP server (Pushgateway).
#ifndef SKRULL_TESTS_TRAINER_METRICS_TESTING_H_
#define SKRULL_TESTS_TRAINER_METRICS_TESTING_H_

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "trainer/metrics/step_record.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::testing {

// Options for a test rank: job "test-job", rank 3 (dp_rank 1, cp_rank 1 of
// dp 2 x cp 2), node "node-a", not serving, no file, clock fixed at 1.7e9.
metrics::MetricsOptions TestMetricsOptions();

// A plausible step with every field non-zero and distinct, so a test can
// tell which field landed where. `step` scales nothing; it is just recorded.
metrics::StepRecord TestStepRecord(int64_t step);

// One sample line of a text exposition.
struct Sample {
  std::string name;                           // e.g. "skrull_time_seconds_total"
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;
};

// Parses the sample lines of a 0.0.4 exposition (comments skipped). Label
// values are unescaped. InvalidArgument names the first bad line.
StatusOr<std::vector<Sample>> ParseExposition(const std::string& text);

// The value of the one sample named `name` whose labels include `labels`;
// NotFound / FailedPrecondition (several match) otherwise.
StatusOr<double> SampleValue(const std::vector<Sample>& samples, const std::string& name,
                             const std::map<std::string, std::string>& labels = {});

// `path` relative to the source tree ($SKRULL_SOURCE_DIR, set by CTest).
std::string SourcePath(const std::string& path);

struct ProcessResult {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string output;  // stdout and stderr interleaved
};

// Runs argv[0] (looked up on PATH) with stdin from `stdin_path` ("" =
// /dev/null) and waits for it. FailedPrecondition when the binary is missing.
StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                   const std::string& stdin_path = "");

// Absolute path of promtool, or a FailedPrecondition telling to install the
// Debian `prometheus` package.
StatusOr<std::string> FindPromtool();

// A loopback HTTP/1.1 server that records each request and answers with a
// fixed status and empty body. For the Pushgateway tests.
class FakeHttpServer {
 public:
  struct Request {
    std::string method;
    std::string target;
    std::string headers;
    std::string body;
  };

  // Listens on 127.0.0.1:<ephemeral>. `delay_ms` delays each answer.
  explicit FakeHttpServer(int status = 200, int delay_ms = 0);
  ~FakeHttpServer();
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Request> requests() const;

 private:
  void Serve();
  void Handle(int fd);

  int status_;
  int delay_ms_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<Request> requests_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace skrull::testing

#endif  // SKRULL_TESTS_TRAINER_METRICS_TESTING_H_
