// The Prometheus source against a real Prometheus (Debian package
// `prometheus`, started by tests/trainer/prometheus_harness.h): two trainer
// metrics exporters (the trainer's own TrainerMetrics) record steps whose
// memory follows a known line, Prometheus scrapes them every 250 ms with
// honor_labels, and HttpPrometheusApi + ReadPrometheus + Tune must recover
// the line from the real API's JSON. Bounded: about 5-10 s, at most ~60 s.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "controller/tuner/prometheus_source.h"
#include "tests/trainer/prometheus_harness.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::tuner {
namespace {

constexpr char kJob[] = "tuner-live";
constexpr double kStaticBytes = 3.0 * (1 << 30);
constexpr double kBytesPerToken = 96.0 * 1024;
constexpr double kCapacityBytes = 64.0 * (1 << 30);

class PrometheusSourceLive : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int rank = 0; rank < 2; ++rank) {
      metrics::MetricsOptions o;
      o.job = kJob;
      o.rank = rank;
      o.cp_rank = rank;
      o.cp = 2;
      o.node = "node-a";
      o.policy = "skrull";
      o.port = metrics::kEphemeralPort;
      auto m = metrics::TrainerMetrics::Create(o);
      ASSERT_TRUE(m.ok()) << m.status();
      ranks_.push_back(std::move(m).value());
    }
    // A step every 50 ms; tokens cycle through 8 values, rank 1 holds 10% more.
    writer_ = std::thread([this] {
      for (int64_t step = 0; !stop_; ++step) {
        for (size_t r = 0; r < ranks_.size(); ++r) {
          metrics::StepRecord rec;
          rec.step = step;
          rec.loss = 1;
          rec.step_seconds = 0.05;
          rec.rank_tokens_peak = static_cast<uint64_t>((1000 + 500 * (step % 8)) * (1 + 0.1 * r));
          rec.tokens = rec.rank_tokens_peak;
          rec.bucket_size_tokens = 8192;
          rec.memory_peak_bytes = static_cast<uint64_t>(
              kStaticBytes + kBytesPerToken * static_cast<double>(rec.rank_tokens_peak));
          rec.memory_capacity_bytes = static_cast<uint64_t>(kCapacityBytes);
          EXPECT_TRUE(ranks_[r]->RecordStep(rec).ok());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    testing::PrometheusHarness::Options po;
    for (const auto& m : ranks_) po.targets.push_back("127.0.0.1:" + std::to_string(m->port()));
    po.scrape_interval_seconds = 0.25;
    auto prom = testing::PrometheusHarness::Start(po);
    ASSERT_TRUE(prom.ok()) << prom.status();
    prom_ = std::move(prom).value();
  }

  void TearDown() override {
    stop_ = true;
    if (writer_.joinable()) writer_.join();
    if (prom_) {
      if (HasFailure()) std::cerr << "prometheus log tail:\n" << prom_->LogTail() << "\n";
      prom_->Stop();
    }
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(prom_->port()); }

  std::vector<std::unique_ptr<metrics::TrainerMetrics>> ranks_;
  std::atomic<bool> stop_{false};
  std::thread writer_;
  std::unique_ptr<testing::PrometheusHarness> prom_;
};

TEST_F(PrometheusSourceLive, RecoversTheMemoryLineFromARealPrometheus) {
  // Wait for enough scrapes of both ranks to see several token counts.
  const std::string enough =
      std::string("count_over_time(skrull_rank_tokens_peak{job=\"") + kJob + "\"}[1m]) >= 6";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
  for (;;) {
    StatusOr<nlohmann::json> r = prom_->Query(enough);
    ASSERT_TRUE(r.ok()) << r.status();
    if ((*r)["result"].size() == 2) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "Prometheus did not scrape both ranks 6 times in 45 s: " << r->dump();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }

  StatusOr<std::unique_ptr<HttpPrometheusApi>> api = HttpPrometheusApi::Create(Url());
  ASSERT_TRUE(api.ok()) << api.status();
  PrometheusSourceOptions o;
  o.job = kJob;
  o.window = "5m";
  o.host_memory_shared = true;  // both ranks report node-a's host memory
  StatusOr<TuningInput> in = ReadPrometheus(api->get(), o);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->source, Url() + " job=\"" + kJob + "\"");
  EXPECT_EQ(in->bucket_size_tokens, 8192);
  ASSERT_EQ(in->ranks.size(), 2u);
  for (const RankObservation& r : in->ranks) {
    EXPECT_GE(r.steps.size(), 6u) << "rank " << r.rank;
    EXPECT_EQ(r.capacity_bytes, static_cast<uint64_t>(kCapacityBytes / 2)) << "rank " << r.rank;
    EXPECT_EQ(r.capacity_note, "host memory 64.0 GiB shared by 2 ranks on node node-a");
    const MemoryFit fit = FitMemoryModel(r.steps);
    ASSERT_EQ(fit.method, FitMethod::kLeastSquares) << fit.why_no_line;
    EXPECT_NEAR(fit.bytes_per_token, kBytesPerToken, kBytesPerToken * 1e-6) << "rank " << r.rank;
    EXPECT_NEAR(fit.static_bytes, kStaticBytes, kStaticBytes * 1e-6) << "rank " << r.rank;
  }

  // The decision: (0.9 x 32 GiB - 3 GiB) / 96 KiB = 281804.8 tokens; from
  // 8192 the 2x growth cap gives 16384.
  api::TuningSpec spec;
  spec.enabled = true;
  StatusOr<TuningDecision> d = Tune(*in, spec);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NEAR(d->model_tokens, (0.9 * kCapacityBytes / 2 - kStaticBytes) / kBytesPerToken, 1);
  EXPECT_EQ(d->recommended_bucket_size_tokens, 16384);
  EXPECT_TRUE(d->change);
}

TEST_F(PrometheusSourceLive, ABadQueryCarriesTheServersError) {
  StatusOr<std::unique_ptr<HttpPrometheusApi>> api = HttpPrometheusApi::Create(Url());
  ASSERT_TRUE(api.ok()) << api.status();
  StatusOr<nlohmann::json> r = (*api)->Query("skrull_memory_peak_bytes{", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("GET " + Url() + "/api/v1/query: HTTP 400: bad_data: ", 0),
            0u)
      << r.status();
}

}  // namespace
}  // namespace skrull::tuner
