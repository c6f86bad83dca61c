// promtool (Debian package `prometheus`) on what we ship: a live scrape of
// TrainerMetrics over loopback HTTP, and the recording rules. Missing
// promtool is a failure, not a skip.
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <filesystem>

#include "common/file_util.h"
#include "tests/trainer/metrics_dashboard_util.h"
#include "tests/trainer/metrics_testing.h"
#include "tests/trainer/prometheus_harness.h"
#include "trainer/metrics/snapshot_collectable.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::testing {
namespace {

// Runs `promtool check metrics` on `exposition`.
ProcessResult CheckMetrics(const std::string& exposition) {
  StatusOr<std::string> promtool = FindPromtool();
  EXPECT_TRUE(promtool.ok()) << promtool.status();
  if (!promtool.ok()) return {};
  const std::string path =
      (std::filesystem::temp_directory_path() / ("skrull-exposition-" + std::to_string(::getpid())))
          .string();
  EXPECT_TRUE(WriteFileAtomically(path, exposition).ok());
  StatusOr<ProcessResult> r = RunProcess({*promtool, "check", "metrics"}, path);
  std::filesystem::remove(path);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ProcessResult{};
}

TEST(Promtool, IsInstalled) {
  StatusOr<std::string> promtool = FindPromtool();
  ASSERT_TRUE(promtool.ok()) << promtool.status();
}

TEST(Promtool, LoopbackScrapePassesCheckMetrics) {
  metrics::MetricsOptions o = TestMetricsOptions();
  o.port = metrics::kEphemeralPort;
  o.job = "sft \"llama\" \\ run\n2";  // label values that need escaping
  auto m = metrics::TrainerMetrics::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE((*m)->RecordStep(TestStepRecord(i)).ok());
  metrics::StepRecord nan_loss = TestStepRecord(4);
  nan_loss.loss = NAN;
  ASSERT_TRUE((*m)->RecordStep(nan_loss).ok());

  StatusOr<HttpResponse> scrape = HttpGet("127.0.0.1", (*m)->port(), "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_EQ(scrape->status, 200);
  EXPECT_NE(scrape->headers.find("Content-Type: text/plain"), std::string::npos) << scrape->headers;
  ProcessResult r = CheckMetrics(scrape->body);
  EXPECT_EQ(r.exit_code, 0) << "promtool check metrics:\n" << r.output << "\non:\n" << scrape->body;
}

TEST(Promtool, EscapedHelpPassesAndRawHelpWouldNot) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("skrull_example_total")
      .Help("first line\nsecond \\ line")
      .Register(*registry)
      .Add({})
      .Increment();
  metrics::SnapshotCollectable collectable(registry);
  ProcessResult escaped = CheckMetrics(collectable.Serialize());
  EXPECT_EQ(escaped.exit_code, 0) << escaped.output;
  ProcessResult raw = CheckMetrics(prometheus::TextSerializer().Serialize(registry->Collect()));
  EXPECT_NE(raw.exit_code, 0) << "prometheus-cpp's raw HELP breaks the format:\n" << raw.output;
}

TEST(Promtool, RecordingRulesPassCheckRules) {
  StatusOr<std::string> promtool = FindPromtool();
  ASSERT_TRUE(promtool.ok()) << promtool.status();
  StatusOr<ProcessResult> r =
      RunProcess({*promtool, "check", "rules", SourcePath(kRecordingRulesPath)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_NE(r->output.find("SUCCESS"), std::string::npos) << r->output;
}

}  // namespace
}  // namespace skrull::testing
