// The dashboard against a real job. `skrull-trainer --job FILE` launches a
// 2-rank DP1 x CP2 job of the tiny model on CPU (short documents run local,
// long ones are CP-sharded), serving /metrics on a free port P (rank 0) and
// P+1 (rank 1). While it trains:
//  * each rank's /metrics, fetched over HTTP, passes `promtool check metrics`
//    with no lint problem and carries the identity labels of that rank;
//  * a real Prometheus scrapes both ranks every 500 ms with honor_labels and
//    evaluates the recording rules.
// After the launcher exits 0 (summary.json, metrics.jsonl of both ranks),
// every dashboard panel query ($job substituted) and every recording rule is
// evaluated as a Grafana time-series panel does: a range query over the run,
// $__rate_interval as Grafana computes it. Each must parse and return data.
// The query window is the run itself, so nothing depends on the job still
// running when the queries are made.
//
// Needs build/bin/skrull-trainer and skrull-make-data next to this binary, and
// prometheus + promtool on PATH (Debian package `prometheus`); missing tools
// fail the test. Every wait has a deadline; the job and Prometheus are
// stopped on any failure. About 15-40 s on an idle 2-core machine.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/file_util.h"
#include "tests/trainer/metrics_dashboard_util.h"
#include "tests/trainer/metrics_testing.h"
#include "tests/trainer/prometheus_harness.h"
#include "trainer/metrics/metric_names.h"
#include "trainer/metrics/step_record.h"

namespace skrull::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kJob[] = "metrics-live";
constexpr int kRanks = 2;
// At 0.02-0.05 s per step on a 2-core machine the ranks serve /metrics for
// 10-25 s: 20-50 scrapes at kScrapeSeconds, well above the 4 asserted below.
// Slower machines only scrape more.
constexpr int kSteps = 500;
constexpr double kScrapeSeconds = 0.5;
constexpr double kJobTimeoutSeconds = 420;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double SecondsUntil(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Where skrull-trainer and skrull-make-data are: $SKRULL_BIN_DIR (CTest) or
// this binary's directory.
std::string BinDir() {
  if (const char* dir = std::getenv("SKRULL_BIN_DIR"); dir != nullptr && *dir != '\0') return dir;
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? fs::path(std::string(buf, static_cast<size_t>(n))).parent_path().string() : ".";
}

// Pids whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...; comm may contain spaces and parentheses.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) out.push_back(std::stoi(name));
  }
  return out;
}

// `skrull-trainer --job FILE` as a child, output to a log file. The
// destructor stops it and its ranks if it is still running.
class LauncherProcess {
 public:
  LauncherProcess() = default;
  LauncherProcess(const LauncherProcess&) = delete;
  LauncherProcess& operator=(const LauncherProcess&) = delete;
  ~LauncherProcess() { Stop(); }

  Status Start(const std::vector<std::string>& argv, const std::string& log_path) {
    log_path_ = log_path;
    StatusOr<pid_t> pid = SpawnProcess(argv, "", log_path);
    if (!pid.ok()) return pid.status();
    pid_ = *pid;
    return OkStatus();
  }

  bool Running() {
    Reap(WNOHANG);
    return pid_ > 0;
  }

  // Waits until the launcher exits or the deadline passes; its exit code
  // (128 + signal when killed), or nullopt on timeout.
  std::optional<int> WaitUntil(Clock::time_point deadline) {
    while (Running() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (pid_ > 0) return std::nullopt;
    return exit_code_;
  }

  // SIGTERM to the launcher (it forwards it to the ranks and waits for them),
  // then SIGKILL to the launcher and every rank left. Idempotent.
  void Stop() {
    if (!Running()) return;
    std::vector<pid_t> ranks = ChildrenOf(pid_);
    ::kill(pid_, SIGTERM);
    WaitUntil(After(20));
    for (pid_t rank : ChildrenOf(pid_)) ranks.push_back(rank);
    for (pid_t rank : ranks) ::kill(rank, SIGKILL);  // pids the launcher may not have reaped
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      Reap(0);
    }
  }

  std::string LogTail(size_t max_bytes = 6000) const {
    StatusOr<std::string> log = ReadFileToString(log_path_);
    if (!log.ok()) return "(no launcher log: " + log.status().ToString() + ")";
    return log->size() > max_bytes ? log->substr(log->size() - max_bytes) : *log;
  }

  std::optional<int> exit_code() const { return exit_code_; }

 private:
  void Reap(int flags) {
    if (pid_ <= 0) return;
    int wstatus = 0;
    pid_t r = ::waitpid(pid_, &wstatus, flags);
    if (r == pid_) {
      exit_code_ = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
      pid_ = -1;
    } else if (r < 0 && errno == ECHILD) {
      pid_ = -1;
    }
  }

  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string log_path_;
};

// "{job=..., rank=...}" of a result series, for messages.
std::string LabelsOf(const nlohmann::json& series) { return series["metric"].dump(); }

// A Prometheus duration in whole milliseconds.
std::string Millis(double seconds) {
  return std::to_string(std::max(1L, std::lround(seconds * 1000))) + "ms";
}

class MetricsLiveJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("skrull-metrics-live-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  void TearDown() override {
    if (launcher_) launcher_->Stop();
    if (prom_) prom_->Stop();
    if (HasFailure()) {
      std::cerr << "kept " << dir_ << " for inspection\n";
      if (launcher_) std::cerr << "launcher log tail:\n" << launcher_->LogTail() << "\n";
      if (prom_) std::cerr << "prometheus log tail:\n" << prom_->LogTail() << "\n";
    } else {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }

  std::string WriteJob(int port) {
    std::ostringstream y;
    y << "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata:\n  name: " << kJob << "\n"
      << "spec:\n"
      << "  model:\n    config: " << SourcePath("examples/models/tiny/config.json") << "\n"
      << "  data:\n    path: data.jsonl\n    format: tokenized-jsonl\n"
      << "  parallelism: {nodes: 1, procsPerNode: " << kRanks
      << ", dataParallel: 1, contextParallel: 2}\n"
      // 256 tokens per rank: documents of 48-128 tokens stay local, those of
      // 300-480 are sharded across the CP pair.
      << "  scheduler: {policy: skrull, bucketSize: 256, batchSize: 8, seed: 1}\n"
      << "  training: {steps: " << kSteps
      << ", learningRate: 1e-3, warmupSteps: 2, outputDir: out, logEvery: 100}\n"
      << "  resources: {gpusPerProc: 0}\n"
      << "  metrics: {port: " << port << "}\n";
    const std::string path = (dir_ / "job.yaml").string();
    std::ofstream(path) << y.str();
    return path;
  }

  fs::path dir_;
  std::unique_ptr<LauncherProcess> launcher_;
  std::unique_ptr<PrometheusHarness> prom_;
};

TEST_F(MetricsLiveJob, EveryPanelAndRuleReturnsDataFromARealTwoRankJob) {
  const auto deadline = After(kJobTimeoutSeconds + 120);
  StatusOr<std::string> promtool = FindPromtool();
  ASSERT_TRUE(promtool.ok()) << promtool.status();
  ASSERT_FALSE(FindOnPath("prometheus").empty())
      << "prometheus not found on PATH; install the Debian package `prometheus` "
         "(scripts/lib.sh does in CI)";
  const std::string trainer = BinDir() + "/skrull-trainer";
  const std::string make_data = BinDir() + "/skrull-make-data";
  ASSERT_EQ(::access(trainer.c_str(), X_OK), 0)
      << trainer << " is missing; build the skrull-trainer target";
  ASSERT_EQ(::access(make_data.c_str(), X_OK), 0)
      << make_data << " is missing; build the skrull-make-data target";

  // 1. Data and job.
  StatusOr<ProcessResult> data =
      RunProcess({make_data, "--out", (dir_ / "data.jsonl").string(), "--n", "64", "--seed", "1",
                  "--short-min", "48", "--short-max", "128", "--long-min", "300", "--long-max",
                  "480", "--long-fraction", "0.2"});
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->exit_code, 0) << data->output;
  StatusOr<int> port = PickFreePortRun(kRanks);
  ASSERT_TRUE(port.ok()) << port.status();
  const std::string job_file = WriteJob(*port);

  // 2. Prometheus first, so it scrapes from the first step on.
  PrometheusHarness::Options po;
  for (int r = 0; r < kRanks; ++r) po.targets.push_back("127.0.0.1:" + std::to_string(*port + r));
  po.rule_files = {SourcePath(kRecordingRulesPath)};
  po.scrape_interval_seconds = kScrapeSeconds;
  StatusOr<std::unique_ptr<PrometheusHarness>> prom = PrometheusHarness::Start(po);
  ASSERT_TRUE(prom.ok()) << prom.status();
  prom_ = std::move(prom).value();

  const double run_start = UnixNow();
  launcher_ = std::make_unique<LauncherProcess>();
  ASSERT_TRUE(
      launcher_->Start({trainer, "--job", job_file}, (dir_ / "launcher.log").string()).ok());

  // 3. While it trains: each rank's page, once it has recorded a step.
  for (int r = 0; r < kRanks; ++r) {
    std::string body;
    std::vector<Sample> samples;
    while (true) {
      ASSERT_TRUE(launcher_->Running())
          << "the job ended before rank " << r << " served a step on :" << *port + r;
      ASSERT_GT(SecondsUntil(deadline), 0) << "rank " << r << " served no step in time";
      StatusOr<HttpResponse> page = HttpGet("127.0.0.1", *port + r, "/metrics", 5);
      if (page.ok() && page->status == 200) {
        StatusOr<std::vector<Sample>> parsed = ParseExposition(page->body);
        ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << page->body;
        StatusOr<double> steps = SampleValue(*parsed, metrics::kTrainStepsTotal);
        if (steps.ok() && *steps >= 1) {
          body = page->body;
          samples = *std::move(parsed);
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const std::string path = (dir_ / ("rank-" + std::to_string(r) + ".prom")).string();
    ASSERT_TRUE(WriteFileAtomically(path, body).ok());
    StatusOr<ProcessResult> check = RunProcess({*promtool, "check", "metrics"}, path);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_EQ(check->exit_code, 0) << "promtool check metrics, rank " << r << ":\n"
                                   << check->output;
    EXPECT_EQ(check->output.find_first_not_of(" \r\n\t"), std::string::npos)
        << "promtool lint, rank " << r << ":\n"
        << check->output;
    for (const Sample& s : samples) {
      EXPECT_EQ(s.name.rfind("skrull_", 0), 0u) << s.name << ": only skrull_* families";
      EXPECT_EQ(s.labels.count(metrics::kLabelJob) ? s.labels.at(metrics::kLabelJob) : "", kJob)
          << s.name;
      EXPECT_EQ(s.labels.count(metrics::kLabelRank) ? s.labels.at(metrics::kLabelRank) : "",
                std::to_string(r))
          << s.name;
      EXPECT_EQ(s.labels.count(metrics::kLabelCpRank) ? s.labels.at(metrics::kLabelCpRank) : "",
                std::to_string(r))
          << s.name;
      EXPECT_EQ(s.labels.count(metrics::kLabelDpRank) ? s.labels.at(metrics::kLabelDpRank) : "",
                "0")
          << s.name;
      EXPECT_FALSE(s.labels.count(metrics::kLabelNode) == 0 ||
                   s.labels.at(metrics::kLabelNode).empty())
          << s.name << " has no node label";
    }
  }

  // 4. The job ends on its own and succeeds.
  std::optional<int> exit_code = launcher_->WaitUntil(
      After(std::min(kJobTimeoutSeconds, std::max(1.0, SecondsUntil(deadline) - 60))));
  ASSERT_TRUE(exit_code.has_value())
      << "the job did not finish within " << kJobTimeoutSeconds << " s";
  ASSERT_EQ(*exit_code, 0) << launcher_->LogTail();
  const double run_end = UnixNow() + 2 * kScrapeSeconds;
  const fs::path out = dir_ / "out";
  StatusOr<std::string> summary_text = ReadFileToString((out / "summary.json").string());
  ASSERT_TRUE(summary_text.ok()) << summary_text.status();
  const nlohmann::json summary = nlohmann::json::parse(*summary_text);
  EXPECT_TRUE(summary.value("ok", false)) << *summary_text;
  EXPECT_EQ(summary.value("steps", 0), kSteps) << *summary_text;
  int64_t local_sequences = 0;
  int64_t distributed_sequences = 0;
  for (int r = 0; r < kRanks; ++r) {
    const fs::path jsonl = out / (r == 0 ? std::string("metrics.jsonl")
                                         : "metrics-rank" + std::to_string(r) + ".jsonl");
    StatusOr<std::string> text = ReadFileToString(jsonl.string());
    ASSERT_TRUE(text.ok()) << text.status();
    std::istringstream lines(*text);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
      StatusOr<metrics::StepLine> parsed = metrics::ParseStepLine(line);
      ASSERT_TRUE(parsed.ok()) << jsonl << ":" << n + 1 << ": " << parsed.status();
      EXPECT_EQ(parsed->rank, r);
      EXPECT_EQ(parsed->record.step, n);
      local_sequences += parsed->record.local_sequences;
      distributed_sequences += parsed->record.distributed_sequences;
      ++n;
    }
    EXPECT_EQ(n, kSteps) << jsonl;
  }
  EXPECT_GT(local_sequences, 0) << "no document ran local: the job does not exercise DACP";
  EXPECT_GT(distributed_sequences, 0) << "no document was CP-sharded";

  // 5. What Prometheus saw: both ranks, scraped several times while training,
  // with the identity labels (honor_labels keeps the trainer's job).
  const double window = run_end - run_start + 5;
  const std::string window_s = Millis(window);
  StatusOr<nlohmann::json> seen =
      prom_->Query(std::string("max_over_time(skrull_train_steps_total{job=\"") + kJob + "\"}[" +
                       window_s + "])",
                   run_end);
  ASSERT_TRUE(seen.ok()) << seen.status();
  std::map<std::string, std::set<std::string>> label_values;
  for (const auto& series : seen->at("result")) {
    for (const char* label : {metrics::kLabelJob, metrics::kLabelRank, metrics::kLabelDpRank,
                              metrics::kLabelCpRank, metrics::kLabelNode}) {
      if (series["metric"].contains(label)) {
        label_values[label].insert(series["metric"][label].get<std::string>());
      }
    }
    EXPECT_GE(std::stod(series["value"][1].get<std::string>()), 2)
        << "Prometheus saw fewer than 2 steps of " << LabelsOf(series);
  }
  ASSERT_EQ(seen->at("result").size(), static_cast<size_t>(kRanks)) << seen->dump();
  EXPECT_EQ(label_values[metrics::kLabelJob], std::set<std::string>({kJob}));
  EXPECT_EQ(label_values[metrics::kLabelRank], std::set<std::string>({"0", "1"}));
  EXPECT_EQ(label_values[metrics::kLabelCpRank], std::set<std::string>({"0", "1"}));
  EXPECT_EQ(label_values[metrics::kLabelDpRank], std::set<std::string>({"0"}));
  EXPECT_EQ(label_values[metrics::kLabelNode].size(), 1u) << "one host runs both ranks";
  StatusOr<nlohmann::json> scrapes =
      prom_->Query(std::string("count_over_time(skrull_train_steps_total{job=\"") + kJob + "\"}[" +
                       window_s + "])",
                   run_end);
  ASSERT_TRUE(scrapes.ok()) << scrapes.status();
  ASSERT_EQ(scrapes->at("result").size(), static_cast<size_t>(kRanks)) << scrapes->dump();
  for (const auto& series : scrapes->at("result")) {
    EXPECT_GE(std::stod(series["value"][1].get<std::string>()), 4)
        << "Prometheus scraped " << LabelsOf(series) << " fewer than 4 times";
  }
  StatusOr<nlohmann::json> placements =
      prom_->Query(std::string("max by (placement) (max_over_time(skrull_sequences_total{job=\"") +
                       kJob + "\"}[" + window_s + "]))",
                   run_end);
  ASSERT_TRUE(placements.ok()) << placements.status();
  ASSERT_EQ(placements->at("result").size(), 2u) << placements->dump();
  for (const auto& series : placements->at("result")) {
    EXPECT_GT(std::stod(series["value"][1].get<std::string>()), 0)
        << "Prometheus saw no " << LabelsOf(series) << " sequence";
  }

  // 6. Every panel, as Grafana asks: a range query over the run with
  // $__rate_interval = max(step + scrape interval, 4 x scrape interval).
  StatusOr<std::string> dashboard_text = ReadFileToString(SourcePath(kDashboardPath));
  ASSERT_TRUE(dashboard_text.ok()) << dashboard_text.status();
  StatusOr<std::vector<PanelQuery>> queries =
      DashboardQueries(nlohmann::json::parse(*dashboard_text));
  ASSERT_TRUE(queries.ok()) << queries.status();
  ASSERT_FALSE(queries->empty());
  const double start = run_start - 1;
  const double step = std::max(kScrapeSeconds, (run_end - start) / 500);
  const std::map<std::string, std::string> vars = {
      {"job", kJob},
      {"rank", ".*"},
      {"__rate_interval", Millis(std::max(step + kScrapeSeconds, 4 * kScrapeSeconds))}};
  auto check_range = [&](const std::string& what, const std::string& expr, bool per_job) {
    StatusOr<nlohmann::json> data = prom_->QueryRange(expr, start, run_end, step);
    ASSERT_TRUE(data.ok()) << what << ": " << data.status();
    const nlohmann::json& result = data->at("result");
    EXPECT_FALSE(result.empty()) << what << " returned no data over the run: " << expr;
    std::set<std::string> ranks;
    size_t points = 0;
    for (const auto& series : result) {
      points += series["values"].size();
      if (per_job || series["metric"].contains(metrics::kLabelJob)) {
        EXPECT_EQ(series["metric"].value(metrics::kLabelJob, ""), kJob) << what << " keeps job";
      }
      if (series["metric"].contains(metrics::kLabelRank)) {
        ranks.insert(series["metric"][metrics::kLabelRank].get<std::string>());
      }
    }
    if (!ranks.empty()) {
      EXPECT_EQ(ranks, std::set<std::string>({"0", "1"})) << what << " per rank: " << expr;
    }
    std::cout << "  " << what << ": " << result.size() << " series, " << points << " points\n";
  };
  for (const PanelQuery& q : *queries) {
    check_range("panel \"" + q.panel_title + "\" (" + q.ref_id + ")",
                SubstituteVariables(q.expr, vars), /*per_job=*/false);
  }
  // 7. Every recording rule, evaluated by Prometheus while the job ran.
  for (const PanelQuery& q : *queries) {
    check_range("rule " + RuleName(q), RuleName(q), /*per_job=*/true);
  }
  std::cout << "run " << run_end - run_start << " s, queried every " << step << " s\n";
}

}  // namespace
}  // namespace skrull::testing
