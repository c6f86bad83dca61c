// End to end against a real Prometheus: two TrainerMetrics ranks on loopback
// record synthetic steps, Prometheus scrapes them every second and evaluates
// the recording rules; every dashboard panel query (with $job substituted)
// must parse and return data, and every rule must produce series that keep
// the job label. Bounded: about 10-20 s, at most ~60 s.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/file_util.h"
#include "tests/trainer/metrics_dashboard_util.h"
#include "tests/trainer/metrics_testing.h"
#include "tests/trainer/prometheus_harness.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::testing {
namespace {

constexpr char kJob[] = "metrics-it";

std::unique_ptr<metrics::TrainerMetrics> MakeRank(int rank) {
  metrics::MetricsOptions o;
  o.job = kJob;
  o.rank = rank;
  o.dp = 1;
  o.cp = 2;
  o.cp_rank = rank;
  o.node = "node-" + std::to_string(rank);
  o.policy = "skrull";
  o.port = metrics::kEphemeralPort;
  auto m = metrics::TrainerMetrics::Create(o);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(m).value() : nullptr;
}

class PrometheusEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    ranks_.push_back(MakeRank(0));
    ranks_.push_back(MakeRank(1));
    ASSERT_TRUE(ranks_[0] && ranks_[1]);
    // Steps every 100 ms until TearDown; rank 1 does 1.5x rank 0's FLOPs.
    writer_ = std::thread([this] {
      for (int64_t step = 1; !stop_; ++step) {
        for (size_t r = 0; r < ranks_.size(); ++r) {
          metrics::StepRecord rec = TestStepRecord(step);
          rec.model_flops *= 1 + 0.5 * static_cast<double>(r);
          rec.hardware_flops = rec.model_flops * 4 / 3;
          rec.step_seconds = 0.1 + 0.05 * static_cast<double>(step % 7);
          rec.scheduler_seconds = 1e-4 * static_cast<double>(1 + step % 5);
          rec.loss = 3.0 / static_cast<double>(step);
          EXPECT_TRUE(ranks_[r]->RecordStep(rec).ok());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    PrometheusHarness::Options o;
    for (const auto& m : ranks_) o.targets.push_back("127.0.0.1:" + std::to_string(m->port()));
    o.rule_files = {SourcePath(kRecordingRulesPath)};
    o.scrape_interval_seconds = 1;
    StatusOr<std::unique_ptr<PrometheusHarness>> prom = PrometheusHarness::Start(o);
    ASSERT_TRUE(prom.ok()) << prom.status();
    prom_ = std::move(prom).value();
  }

  void TearDown() override {
    stop_ = true;
    if (writer_.joinable()) writer_.join();
    if (prom_) prom_->Stop();
  }

  double SecondsLeft() const {
    return std::chrono::duration<double>(deadline_ - std::chrono::steady_clock::now()).count();
  }

  std::vector<std::unique_ptr<metrics::TrainerMetrics>> ranks_;
  std::atomic<bool> stop_{false};
  std::thread writer_;
  std::unique_ptr<PrometheusHarness> prom_;
  const std::chrono::steady_clock::time_point deadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(50);
};

TEST_F(PrometheusEndToEnd, EveryDashboardPanelAndRecordingRuleReturnsData) {
  // honor_labels keeps the trainer's job label: the dashboard's job variable.
  StatusOr<nlohmann::json> jobs =
      prom_->QueryUntilNonEmpty("group by (job) (skrull_train_steps_total)", SecondsLeft());
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->at("result").size(), 1u) << jobs->dump() << "\n" << prom_->LogTail();
  EXPECT_EQ(jobs->at("result")[0]["metric"]["job"], kJob);

  // Wait until both ranks have 3+ samples, so every rate() sees both.
  bool both_ranks_ready = false;
  while (!both_ranks_ready && SecondsLeft() > 0) {
    StatusOr<nlohmann::json> ready = prom_->Query(
        R"(count(count_over_time(skrull_train_steps_total{job="metrics-it"}[1m]) >= 3))");
    ASSERT_TRUE(ready.ok()) << ready.status();
    const nlohmann::json& result = ready->at("result");
    both_ranks_ready = !result.empty() && result[0]["value"][1] == "2";
    if (!both_ranks_ready) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_TRUE(both_ranks_ready) << "Prometheus did not scrape both ranks 3 times; log:\n"
                                << prom_->LogTail();

  StatusOr<nlohmann::json> dashboard_text = []() -> StatusOr<nlohmann::json> {
    SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(SourcePath(kDashboardPath)));
    return nlohmann::json::parse(text);
  }();
  ASSERT_TRUE(dashboard_text.ok());
  StatusOr<std::vector<PanelQuery>> queries = DashboardQueries(*dashboard_text);
  ASSERT_TRUE(queries.ok()) << queries.status();

  const std::map<std::string, std::string> vars = {
      {"job", kJob}, {"rank", ".*"}, {"__rate_interval", "30s"}};
  for (const PanelQuery& q : *queries) {
    const std::string expr = SubstituteVariables(q.expr, vars);
    StatusOr<nlohmann::json> data = prom_->QueryUntilNonEmpty(expr, std::max(1.0, SecondsLeft()));
    ASSERT_TRUE(data.ok()) << q.panel_title << " (" << q.ref_id << "): " << data.status();
    EXPECT_FALSE(data->at("result").empty())
        << q.panel_title << " (" << q.ref_id << ") returned no data: " << expr;
    for (const auto& series : data->at("result")) {
      if (series["metric"].contains("job")) {
        EXPECT_EQ(series["metric"]["job"], kJob) << expr;
      }
    }
  }

  for (const PanelQuery& q : *queries) {
    const std::string rule = RuleName(q);
    StatusOr<nlohmann::json> data = prom_->QueryUntilNonEmpty(rule, std::max(1.0, SecondsLeft()));
    ASSERT_TRUE(data.ok()) << rule << ": " << data.status();
    EXPECT_FALSE(data->at("result").empty()) << rule << " recorded nothing";
    for (const auto& series : data->at("result")) {
      EXPECT_EQ(series["metric"].value("job", ""), kJob) << rule << " keeps the job label";
    }
  }

  // Rank 1 does 1.5x rank 0's FLOPs per step, so max/mean over the two is
  // 1.2. FLOPs per step shows it exactly (each target is scraped atomically);
  // the panel's rate() over a few samples is noisier but must show imbalance.
  auto scalar = [&](const std::string& promql) {
    StatusOr<nlohmann::json> r = prom_->Query(SubstituteVariables(promql, vars));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->at("result").size() != 1) return std::nan("");
    return std::stod(r->at("result")[0]["value"][1].get<std::string>());
  };
  EXPECT_NEAR(
      scalar(
          R"(max by (job) (skrull_model_flops_total{job=~"$job"} / skrull_train_steps_total{job=~"$job"}) / avg by (job) (skrull_model_flops_total{job=~"$job"} / skrull_train_steps_total{job=~"$job"}))"),
      1.2, 1e-9);
  for (const PanelQuery& q : *queries) {
    if (q.ref_id != "job_flops_balance") continue;
    double panel = scalar(q.expr);
    EXPECT_GT(panel, 1.0) << q.expr;
    EXPECT_LE(panel, 2.0) << q.expr;
  }
}

}  // namespace
}  // namespace skrull::testing
