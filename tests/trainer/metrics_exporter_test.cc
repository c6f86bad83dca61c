// TrainerMetrics as seen through its exposition: families, labels, counters,
// gauges, histograms, escaping, options validation, serving.
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <map>
#include <set>

#include "tests/trainer/metrics_testing.h"
#include "tests/trainer/prometheus_harness.h"
#include "trainer/metrics/metric_names.h"
#include "trainer/metrics/snapshot_collectable.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::metrics {
namespace {

using ::skrull::testing::ParseExposition;
using ::skrull::testing::Sample;
using ::skrull::testing::SampleValue;
using ::skrull::testing::TestMetricsOptions;
using ::skrull::testing::TestStepRecord;

std::unique_ptr<TrainerMetrics> MakeMetrics(MetricsOptions o = TestMetricsOptions()) {
  StatusOr<std::unique_ptr<TrainerMetrics>> m = TrainerMetrics::Create(std::move(o));
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<Sample> Samples(const TrainerMetrics& m) {
  StatusOr<std::vector<Sample>> s = ParseExposition(m.Exposition());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : std::vector<Sample>{};
}

double Value(const TrainerMetrics& m, const std::string& name,
             const std::map<std::string, std::string>& labels = {}) {
  StatusOr<double> v = SampleValue(Samples(m), name, labels);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : std::nan("");
}

// name -> type, from the "# TYPE" lines.
std::map<std::string, std::string> Families(const std::string& exposition) {
  std::map<std::string, std::string> families;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    std::string name, type;
    fields >> name >> type;
    families[name] = type;
  }
  return families;
}

TEST(TrainerMetrics, RegistersEveryContractFamilyWithItsTypeBeforeAnyStep) {
  auto m = MakeMetrics();
  const std::map<std::string, std::string> want = {
      {kTrainStepsTotal, "counter"},
      {kTrainTokensTotal, "counter"},
      {kPaddingTokensTotal, "counter"},
      {kModelFlopsTotal, "counter"},
      {kHardwareFlopsTotal, "counter"},
      {kMicroBatchesTotal, "counter"},
      {kSchedulerRollbacksTotal, "counter"},
      {kSequencesTotal, "counter"},
      {kTimeSecondsTotal, "counter"},
      {kTrainStep, "gauge"},
      {kTrainLoss, "gauge"},
      {kTokensPerSecond, "gauge"},
      {kMfuRatio, "gauge"},
      {kEvalLoss, "gauge"},
      {kHfuRatio, "gauge"},
      {kPeakFlopsPerSecond, "gauge"},
      {kMemoryPeakBytes, "gauge"},
      {kMemoryPeakAllocatedBytes, "gauge"},
      {kMemoryCapacityBytes, "gauge"},
      {kMemoryStaticBytes, "gauge"},
      {kBucketSizeTokens, "gauge"},
      {kRankTokensPeak, "gauge"},
      {kLastStepTimestampSeconds, "gauge"},
      {kInfo, "gauge"},
      {kStepDurationSeconds, "histogram"},
      {kSchedulerDurationSeconds, "histogram"},
  };
  EXPECT_EQ(Families(m->Exposition()), want);
  for (const auto& [name, type] : want) {
    EXPECT_EQ(type == "counter", name.size() > 6 && name.substr(name.size() - 6) == "_total")
        << name << ": counters and only counters end in _total";
  }
}

TEST(TrainerMetrics, EverySeriesCarriesTheIdentityLabels) {
  auto m = MakeMetrics();
  ASSERT_TRUE(m->RecordStep(TestStepRecord(1)).ok());
  std::vector<Sample> samples = Samples(*m);
  ASSERT_GT(samples.size(), 60u);
  for (const Sample& s : samples) {
    EXPECT_EQ(s.labels.at(kLabelJob), "test-job") << s.name;
    EXPECT_EQ(s.labels.at(kLabelRank), "3") << s.name;
    EXPECT_EQ(s.labels.at(kLabelDpRank), "1") << s.name;
    EXPECT_EQ(s.labels.at(kLabelCpRank), "1") << s.name;
    EXPECT_EQ(s.labels.at(kLabelNode), "node-a") << s.name;
  }
}

TEST(TrainerMetrics, LabelledFamiliesPreCreateEveryValueAtZero) {
  auto m = MakeMetrics();
  for (const char* level : {kLevelDacp, kLevelGds}) {
    EXPECT_EQ(Value(*m, kSchedulerRollbacksTotal, {{kLabelLevel, level}}), 0) << level;
  }
  for (const char* placement : {kPlacementLocal, kPlacementDistributed}) {
    EXPECT_EQ(Value(*m, kSequencesTotal, {{kLabelPlacement, placement}}), 0) << placement;
  }
  for (const char* phase : {kPhaseCompute, kPhaseCpCommWait, kPhaseDpCommWait, kPhaseIdle}) {
    EXPECT_EQ(Value(*m, kTimeSecondsTotal, {{kLabelPhase, phase}}), 0) << phase;
  }
  EXPECT_TRUE(std::isnan(Value(*m, kTrainLoss))) << "no step yet: a gap, not a zero loss";
}

TEST(TrainerMetrics, CountersAccumulateTheStepsAmounts) {
  auto m = MakeMetrics();
  const StepRecord r = TestStepRecord(1);
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(m->RecordStep(TestStepRecord(i)).ok());
  EXPECT_EQ(Value(*m, kTrainStepsTotal), 3);
  EXPECT_EQ(Value(*m, kTrainTokensTotal), 3.0 * r.tokens);
  EXPECT_EQ(Value(*m, kPaddingTokensTotal), 3.0 * r.padding_tokens);
  EXPECT_DOUBLE_EQ(Value(*m, kModelFlopsTotal), 3 * r.model_flops);
  EXPECT_DOUBLE_EQ(Value(*m, kHardwareFlopsTotal), 3 * r.hardware_flops);
  EXPECT_EQ(Value(*m, kMicroBatchesTotal), 3.0 * r.micro_batches);
  EXPECT_EQ(Value(*m, kSchedulerRollbacksTotal, {{kLabelLevel, kLevelDacp}}),
            3.0 * r.rollbacks.dacp);
  EXPECT_EQ(Value(*m, kSchedulerRollbacksTotal, {{kLabelLevel, kLevelGds}}), 3.0 * r.rollbacks.gds);
  EXPECT_EQ(Value(*m, kSequencesTotal, {{kLabelPlacement, kPlacementLocal}}),
            3.0 * r.local_sequences);
  EXPECT_EQ(Value(*m, kSequencesTotal, {{kLabelPlacement, kPlacementDistributed}}),
            3.0 * r.distributed_sequences);
  EXPECT_DOUBLE_EQ(Value(*m, kTimeSecondsTotal, {{kLabelPhase, kPhaseCompute}}),
                   3 * r.phase_seconds.compute);
  EXPECT_DOUBLE_EQ(Value(*m, kTimeSecondsTotal, {{kLabelPhase, kPhaseCpCommWait}}),
                   3 * r.phase_seconds.cp_comm_wait);
  EXPECT_DOUBLE_EQ(Value(*m, kTimeSecondsTotal, {{kLabelPhase, kPhaseDpCommWait}}),
                   3 * r.phase_seconds.dp_comm_wait);
  EXPECT_DOUBLE_EQ(Value(*m, kTimeSecondsTotal, {{kLabelPhase, kPhaseIdle}}),
                   3 * r.phase_seconds.idle);
}

TEST(TrainerMetrics, GaugesTakeTheLastStepAndDerivedRates) {
  auto m = MakeMetrics();
  ASSERT_TRUE(m->RecordStep(TestStepRecord(1)).ok());
  StepRecord r = TestStepRecord(2);
  r.loss = 1.25;
  r.tokens = 3000;
  r.step_seconds = 1.5;
  r.model_flops = 7.5e14;
  r.hardware_flops = 1e15;
  r.peak_flops_per_second = 1e15;
  r.memory_peak_bytes = 123456789012;
  r.memory_peak_allocated_bytes = 98765432109;
  r.memory_static_bytes = 98765;
  r.rank_tokens_peak = 777;
  r.bucket_size_tokens = 4096;
  ASSERT_TRUE(m->RecordStep(r).ok());
  EXPECT_EQ(Value(*m, kTrainStep), 2);
  EXPECT_EQ(Value(*m, kTrainLoss), 1.25);
  EXPECT_DOUBLE_EQ(Value(*m, kTokensPerSecond), 2000);
  EXPECT_DOUBLE_EQ(Value(*m, kMfuRatio), 0.5);
  EXPECT_DOUBLE_EQ(Value(*m, kHfuRatio), 1e15 / 1.5 / 1e15);
  EXPECT_EQ(Value(*m, kPeakFlopsPerSecond), 1e15);
  EXPECT_EQ(Value(*m, kMemoryPeakBytes), 123456789012.0) << "printed exactly, not rounded";
  EXPECT_EQ(Value(*m, kMemoryPeakAllocatedBytes), 98765432109.0);
  EXPECT_EQ(Value(*m, kMemoryCapacityBytes), static_cast<double>(r.memory_capacity_bytes));
  EXPECT_EQ(Value(*m, kMemoryStaticBytes), 98765);
  EXPECT_EQ(Value(*m, kRankTokensPeak), 777);
  EXPECT_EQ(Value(*m, kBucketSizeTokens), 4096);
  EXPECT_EQ(Value(*m, kLastStepTimestampSeconds), 1.7e9) << "from the injected clock";
}

TEST(TrainerMetrics, HistogramObservationsLandInTheFirstBucketAtOrAboveThem) {
  auto m = MakeMetrics();
  const std::vector<double> step_seconds = {0.004, 0.01, 0.3, 7, 599.9, 1000};
  const std::vector<double> scheduler_seconds = {5e-7, 2e-6, 2e-4, 0.05, 20, 1e-6};
  for (size_t i = 0; i < step_seconds.size(); ++i) {
    StepRecord r = TestStepRecord(static_cast<int64_t>(i));
    r.step_seconds = step_seconds[i];
    r.scheduler_seconds = scheduler_seconds[i];
    ASSERT_TRUE(m->RecordStep(r).ok());
  }
  auto check = [&](const char* family, const std::vector<double>& bounds,
                   const std::vector<double>& observed) {
    std::vector<Sample> samples = Samples(*m);
    const std::string bucket = std::string(family) + "_bucket";
    size_t seen = 0;
    for (const Sample& s : samples) {
      if (s.name != bucket) continue;
      ++seen;
      const std::string& le = s.labels.at("le");
      double bound = le == "+Inf" ? INFINITY : std::stod(le);
      double want = 0;
      for (double v : observed) want += v <= bound ? 1 : 0;  // le is inclusive
      EXPECT_EQ(s.value, want) << family << " le=" << le;
    }
    EXPECT_EQ(seen, bounds.size() + 1) << family << ": every bound plus +Inf";
    EXPECT_EQ(*SampleValue(samples, std::string(family) + "_count"), observed.size());
    double sum = 0;
    for (double v : observed) sum += v;
    EXPECT_NEAR(*SampleValue(samples, std::string(family) + "_sum"), sum, 1e-9 * sum);
  };
  check(kStepDurationSeconds, StepDurationBucketsSeconds(), step_seconds);
  check(kSchedulerDurationSeconds, SchedulerDurationBucketsSeconds(), scheduler_seconds);
  EXPECT_EQ(StepDurationBucketsSeconds().front(), 0.01);
  EXPECT_EQ(StepDurationBucketsSeconds().back(), 600);
  EXPECT_EQ(SchedulerDurationBucketsSeconds().front(), 1e-6);
}

TEST(TrainerMetrics, LabelValuesWithBackslashQuoteAndNewlineAreEscaped) {
  MetricsOptions o = TestMetricsOptions();
  o.job = "a\\b\"c\nd";
  o.node = "rack\\7";
  auto m = MakeMetrics(o);
  const std::string text = m->Exposition();
  EXPECT_NE(text.find(R"(job="a\\b\"c\nd")"), std::string::npos) << text.substr(0, 400);
  EXPECT_NE(text.find(R"(node="rack\\7")"), std::string::npos);
  for (const Sample& s : Samples(*m)) {
    EXPECT_EQ(s.labels.at(kLabelJob), o.job) << "round-trips through the escaping";
  }
}

TEST(Exposition, HelpBackslashAndNewlineAreEscaped) {
  EXPECT_EQ(EscapeHelpText("plain"), "plain");
  EXPECT_EQ(EscapeHelpText("a\\b\nc"), "a\\\\b\\nc");
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("x_total")
      .Help("first line\nC:\\path")
      .Register(*registry)
      .Add({})
      .Increment();
  SnapshotCollectable collectable(registry);
  const std::string text = collectable.Serialize();
  EXPECT_NE(text.find("# HELP x_total first line\\nC:\\\\path\n"), std::string::npos) << text;
  // prometheus-cpp alone writes it raw (the reason SnapshotCollectable exists).
  const std::string raw = prometheus::TextSerializer().Serialize(registry->Collect());
  EXPECT_NE(raw.find("# HELP x_total first line\nC:\\path\n"), std::string::npos) << raw;
}

TEST(TrainerMetrics, EveryHelpLineIsOneEscapedLine) {
  auto m = MakeMetrics();
  std::istringstream in(m->Exposition());
  std::string line;
  int help_lines = 0;
  std::string previous;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      ++help_lines;
      EXPECT_GT(line.size(), 20u) << "HELP text is written: " << line;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_EQ(previous.rfind("# HELP " + line.substr(7, line.find(' ', 7) - 7) + " ", 0), 0u)
          << "TYPE follows its HELP: " << line;
    }
    previous = line;
  }
  EXPECT_EQ(help_lines, static_cast<int>(Families(m->Exposition()).size()));
}

TEST(TrainerMetrics, InfoGaugeCarriesVersionPolicyAndTopology) {
  auto m = MakeMetrics();
  StatusOr<std::vector<Sample>> samples = ParseExposition(m->Exposition());
  ASSERT_TRUE(samples.ok());
  StatusOr<double> v =
      SampleValue(*samples, kInfo, {{kLabelPolicy, "skrull"}, {kLabelDp, "2"}, {kLabelCp, "2"}});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 1);
  for (const Sample& s : *samples) {
    if (s.name == kInfo) {
      EXPECT_EQ(s.labels.at(kLabelVersion), "0.1.0") << "defaults to the build's";
    }
  }
}

TEST(TrainerMetrics, ValidationReportsEveryProblemAtOnce) {
  MetricsOptions o = TestMetricsOptions();
  o.job = "";
  o.rank = -1;
  o.dp = 2;
  o.dp_rank = 2;
  o.port = 70000;
  o.pushgateway_url = "pushgateway:9091";
  Status s = ValidateMetricsOptions(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("metrics.job: must not be empty"), std::string::npos) << s;
  EXPECT_NE(s.message().find("metrics.rank: must be >= 0 (got -1)"), std::string::npos) << s;
  EXPECT_NE(s.message().find("metrics.dpRank: must be < dp (2 >= 2)"), std::string::npos) << s;
  EXPECT_NE(
      s.message().find("metrics.port: must be 0 (off), -1 (ephemeral) or in 1..65535 (got 70000)"),
      std::string::npos)
      << s;
  EXPECT_NE(s.message().find("scheme must be http or https"), std::string::npos) << s;
  EXPECT_EQ(TrainerMetrics::Create(o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateMetricsOptions(TestMetricsOptions()).ok());
}

TEST(TrainerMetricsDeathTest, MalformedStepRecordIsABug) {
  auto m = MakeMetrics();
  StepRecord r = TestStepRecord(1);
  r.step_seconds = -1;
  EXPECT_DEATH((void)m->RecordStep(r), "step_seconds must be finite and >= 0");
  r = TestStepRecord(1);
  r.hardware_flops = r.model_flops / 2;
  EXPECT_DEATH((void)m->RecordStep(r), "hardware_flops .* must be >= model_flops");
}

TEST(TrainerMetrics, NotServingByDefault) {
  auto m = MakeMetrics();
  EXPECT_EQ(m->port(), 0);
}

TEST(TrainerMetrics, EphemeralPortServesTheSameExpositionOverHttp) {
  MetricsOptions o = TestMetricsOptions();
  o.port = kEphemeralPort;
  auto m = MakeMetrics(o);
  ASSERT_GT(m->port(), 0);
  ASSERT_TRUE(m->RecordStep(TestStepRecord(1)).ok());
  StatusOr<testing::HttpResponse> r = testing::HttpGet("127.0.0.1", m->port(), "/metrics");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->headers.find("Content-Type: text/plain; version=0.0.4"), std::string::npos)
      << r->headers;
  EXPECT_EQ(r->body, m->Exposition());
}

TEST(TrainerMetrics, OtherPathsAre404AndOtherMethods405) {
  MetricsOptions o = TestMetricsOptions();
  o.port = kEphemeralPort;
  auto m = MakeMetrics(o);
  StatusOr<testing::HttpResponse> r = testing::HttpGet("127.0.0.1", m->port(), "/");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  r = testing::HttpGet("127.0.0.1", m->port(), "/metrics?name[]=x");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200) << "a query string is ignored";
}

TEST(TrainerMetrics, EmptyNodeBecomesTheHostName) {
  MetricsOptions o = TestMetricsOptions();
  o.node = "";
  auto m = MakeMetrics(o);
  EXPECT_FALSE(m->options().node.empty());
  EXPECT_EQ(m->Exposition().find("node=\"\""), std::string::npos)
      << "Prometheus drops an empty label: node must have a value";
}

TEST(TrainerMetrics, PortInUseIsUnavailableAndNamesTheAddress) {
  MetricsOptions o = TestMetricsOptions();
  o.port = kEphemeralPort;
  auto first = MakeMetrics(o);
  o.port = first->port();
  StatusOr<std::unique_ptr<TrainerMetrics>> second = TrainerMetrics::Create(o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("127.0.0.1:" + std::to_string(o.port)),
            std::string::npos)
      << second.status();
}

}  // namespace
}  // namespace skrull::metrics
