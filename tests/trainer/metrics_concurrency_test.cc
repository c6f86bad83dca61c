// A writer records steps while scrapers read, in process and over HTTP: every
// scrape must see whole steps (never the counters of a step half applied) and
// counters that never go backwards. Run under TSAN with -fsanitize=thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/trainer/metrics_testing.h"
#include "tests/trainer/prometheus_harness.h"
#include "trainer/metrics/metric_names.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::metrics {
namespace {

using ::skrull::testing::ParseExposition;
using ::skrull::testing::Sample;
using ::skrull::testing::SampleValue;
using ::skrull::testing::TestMetricsOptions;
using ::skrull::testing::TestStepRecord;

// Checks that one scrape is the state after exactly `steps` whole steps of
// TestStepRecord; returns `steps` (or -1 after reporting a failure).
double CheckWholeSteps(const std::string& text) {
  StatusOr<std::vector<Sample>> samples = ParseExposition(text);
  EXPECT_TRUE(samples.ok()) << samples.status();
  if (!samples.ok()) return -1;
  const StepRecord r = TestStepRecord(0);
  auto value = [&](const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    StatusOr<double> v = SampleValue(*samples, name, labels);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : -1.0;
  };
  const double steps = value(kTrainStepsTotal);
  EXPECT_EQ(value(kTrainTokensTotal), steps * r.tokens);
  EXPECT_EQ(value(kPaddingTokensTotal), steps * r.padding_tokens);
  EXPECT_EQ(value(kMicroBatchesTotal), steps * r.micro_batches);
  EXPECT_EQ(value(kSchedulerRollbacksTotal, {{kLabelLevel, kLevelGds}}), steps * r.rollbacks.gds);
  EXPECT_EQ(value(kSequencesTotal, {{kLabelPlacement, kPlacementDistributed}}),
            steps * r.distributed_sequences);
  EXPECT_EQ(value(std::string(kStepDurationSeconds) + "_count"), steps);
  EXPECT_EQ(value(std::string(kSchedulerDurationSeconds) + "_count"), steps);
  EXPECT_NEAR(value(kTimeSecondsTotal, {{kLabelPhase, kPhaseCompute}}),
              steps * r.phase_seconds.compute, 1e-6 * (steps + 1));
  EXPECT_EQ(value(kTrainStep), steps) << "the gauge moves with the counters";
  return steps;
}

TEST(TrainerMetricsConcurrency, ScrapesSeeWholeStepsWhileAWriterRecords) {
  MetricsOptions o = TestMetricsOptions();
  o.port = kEphemeralPort;
  StatusOr<std::unique_ptr<TrainerMetrics>> created = TrainerMetrics::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  TrainerMetrics& m = **created;

  // The writer keeps recording until the scrapers have done enough scrapes
  // (bounded by a deadline), so reads really overlap writes.
  std::atomic<bool> done{false};
  std::atomic<int> in_process_scrapes{0};
  std::atomic<int> http_scrapes{0};
  std::atomic<int> steps_recorded{0};
  std::atomic<bool> saw_mid_run{false};
  std::thread writer([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int i = 1; std::chrono::steady_clock::now() < deadline; ++i) {
      if (in_process_scrapes >= 200 && http_scrapes >= 30) break;
      EXPECT_TRUE(m.RecordStep(TestStepRecord(i)).ok());
      steps_recorded = i;
    }
    done = true;
  });

  auto scrape_loop = [&](bool http, std::atomic<int>* count) {
    double last = 0;
    while (!done) {
      std::string text;
      if (http) {
        StatusOr<testing::HttpResponse> r = testing::HttpGet("127.0.0.1", m.port(), "/metrics", 5);
        ASSERT_TRUE(r.ok()) << r.status();
        ASSERT_EQ(r->status, 200);
        text = r->body;
      } else {
        text = m.Exposition();
      }
      const bool writer_running = !done;
      double steps = CheckWholeSteps(text);
      EXPECT_GE(steps, last) << "counters never go backwards";
      last = steps;
      if (writer_running && steps > 0) saw_mid_run = true;
      ++*count;
    }
  };
  std::thread a(scrape_loop, false, &in_process_scrapes);
  std::thread b(scrape_loop, false, &in_process_scrapes);
  std::thread c(scrape_loop, true, &http_scrapes);
  writer.join();
  a.join();
  b.join();
  c.join();
  EXPECT_EQ(CheckWholeSteps(m.Exposition()), steps_recorded.load());
  EXPECT_GE(in_process_scrapes.load(), 200);
  EXPECT_GE(http_scrapes.load(), 30);
  EXPECT_TRUE(saw_mid_run) << "some scrape landed while the writer was running";
}

TEST(TrainerMetricsConcurrency, ConcurrentWritersLoseNoStep) {
  StatusOr<std::unique_ptr<TrainerMetrics>> created = TrainerMetrics::Create(TestMetricsOptions());
  ASSERT_TRUE(created.ok()) << created.status();
  TrainerMetrics& m = **created;
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&m] {
      for (int i = 0; i < 500; ++i) EXPECT_TRUE(m.RecordStep(TestStepRecord(i)).ok());
    });
  }
  for (auto& t : writers) t.join();
  StatusOr<std::vector<Sample>> samples = ParseExposition(m.Exposition());
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ(*SampleValue(*samples, kTrainStepsTotal), 2000);
  EXPECT_EQ(*SampleValue(*samples, kTrainTokensTotal), 2000.0 * TestStepRecord(0).tokens);
}

}  // namespace
}  // namespace skrull::metrics
