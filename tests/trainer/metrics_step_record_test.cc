// StepRecord, its derived rates and the metrics.jsonl line format, and the
// file TrainerMetrics writes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "tests/trainer/metrics_testing.h"
#include "trainer/metrics/metric_names.h"
#include "trainer/metrics/step_record.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::metrics {
namespace {

using ::skrull::testing::ParseExposition;
using ::skrull::testing::SampleValue;
using ::skrull::testing::TestMetricsOptions;
using ::skrull::testing::TestStepRecord;

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "skrull-metrics-XXXXXX").string();
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

void ExpectSameRecord(const StepRecord& a, const StepRecord& b) {
  EXPECT_EQ(a.step, b.step);
  if (std::isnan(a.loss)) {
    EXPECT_TRUE(std::isnan(b.loss));
  } else {
    EXPECT_EQ(a.loss, b.loss);
  }
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.padding_tokens, b.padding_tokens);
  EXPECT_EQ(a.model_flops, b.model_flops);
  EXPECT_EQ(a.hardware_flops, b.hardware_flops);
  EXPECT_EQ(a.step_seconds, b.step_seconds);
  EXPECT_EQ(a.scheduler_seconds, b.scheduler_seconds);
  EXPECT_EQ(a.phase_seconds.compute, b.phase_seconds.compute);
  EXPECT_EQ(a.phase_seconds.cp_comm_wait, b.phase_seconds.cp_comm_wait);
  EXPECT_EQ(a.phase_seconds.dp_comm_wait, b.phase_seconds.dp_comm_wait);
  EXPECT_EQ(a.phase_seconds.idle, b.phase_seconds.idle);
  EXPECT_EQ(a.rank_tokens_peak, b.rank_tokens_peak);
  EXPECT_EQ(a.bucket_size_tokens, b.bucket_size_tokens);
  EXPECT_EQ(a.memory_peak_bytes, b.memory_peak_bytes);
  EXPECT_EQ(a.memory_peak_allocated_bytes, b.memory_peak_allocated_bytes);
  EXPECT_EQ(a.memory_capacity_bytes, b.memory_capacity_bytes);
  EXPECT_EQ(a.memory_static_bytes, b.memory_static_bytes);
  EXPECT_EQ(a.rollbacks.dacp, b.rollbacks.dacp);
  EXPECT_EQ(a.rollbacks.gds, b.rollbacks.gds);
  EXPECT_EQ(a.local_sequences, b.local_sequences);
  EXPECT_EQ(a.distributed_sequences, b.distributed_sequences);
  EXPECT_EQ(a.micro_batches, b.micro_batches);
  EXPECT_EQ(a.peak_flops_per_second, b.peak_flops_per_second);
}

TEST(StepRates, AreTokensAndFlopsOverStepTimeAndPeak) {
  StepRecord r = TestStepRecord(1);
  r.tokens = 600;
  r.step_seconds = 0.5;
  r.model_flops = 2e14;
  r.hardware_flops = 3e14;
  r.peak_flops_per_second = 1e15;
  StepRates rates = ComputeStepRates(r);
  EXPECT_DOUBLE_EQ(rates.tokens_per_second, 1200);
  EXPECT_DOUBLE_EQ(rates.mfu, 0.4);
  EXPECT_DOUBLE_EQ(rates.hfu, 0.6);
  r.peak_flops_per_second = 0;
  EXPECT_EQ(ComputeStepRates(r).mfu, 0) << "no profile: no MFU, not infinity";
  EXPECT_DOUBLE_EQ(ComputeStepRates(r).tokens_per_second, 1200);
  r.step_seconds = 0;
  EXPECT_EQ(ComputeStepRates(r).tokens_per_second, 0);
}

TEST(StepRecordProblem, ListsEveryProblem) {
  EXPECT_EQ(StepRecordProblem(TestStepRecord(1)), "");
  StepRecord r = TestStepRecord(1);
  r.step = -1;
  r.scheduler_seconds = NAN;
  r.phase_seconds.idle = -0.5;
  std::string p = StepRecordProblem(r);
  EXPECT_NE(p.find("step must be >= 0 (got -1)"), std::string::npos) << p;
  EXPECT_NE(p.find("scheduler_seconds must be finite and >= 0"), std::string::npos) << p;
  EXPECT_NE(p.find("phase_seconds.idle must be finite and >= 0 (got -0.5)"), std::string::npos)
      << p;
  r = TestStepRecord(1);
  r.loss = NAN;
  EXPECT_EQ(StepRecordProblem(r), "") << "a NaN loss is a training fact, not a bug";
}

TEST(StepLine, FormatParseFormatRoundTripsRandomRecords) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < 300; ++i) {
    StepLine line;
    line.job = "job-" + std::to_string(rng() % 100);
    line.rank = static_cast<int>(rng() % 1024);
    line.dp_rank = static_cast<int>(rng() % 64);
    line.cp_rank = static_cast<int>(rng() % 16);
    line.node = i % 2 ? "node-\"quoted\"\n" : "";
    line.time_unix_seconds = 1.7e9 + unit(rng) * 1e6;
    StepRecord& r = line.record;
    r.step = static_cast<int64_t>(rng() % 1000000);
    r.loss = i % 5 == 0 ? NAN : unit(rng) * 10;
    r.tokens = rng() % (1ull << 40);
    r.padding_tokens = rng() % 1000;
    r.model_flops = unit(rng) * 1e18;
    r.hardware_flops = r.model_flops * (1 + unit(rng));
    r.step_seconds = unit(rng) * 600;
    r.scheduler_seconds = unit(rng) * 1e-3;
    r.phase_seconds = {unit(rng), unit(rng), unit(rng), unit(rng)};
    r.rank_tokens_peak = rng() % 200000;
    r.bucket_size_tokens = rng() % 200000;
    r.memory_peak_bytes = rng();
    r.memory_peak_allocated_bytes = rng();
    r.memory_capacity_bytes = rng();
    r.memory_static_bytes = rng();
    r.rollbacks = {rng() % 10, rng() % 10};
    r.local_sequences = rng() % 100;
    r.distributed_sequences = rng() % 100;
    r.micro_batches = rng() % 16;
    r.peak_flops_per_second = 989e12;
    line.rates = ComputeStepRates(r);

    const std::string text = FormatStepLine(line);
    ASSERT_EQ(text.back(), '\n');
    ASSERT_EQ(text.find('\n'), text.size() - 1) << "one line: " << text;
    StatusOr<StepLine> parsed = ParseStepLine(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
    EXPECT_EQ(parsed->job, line.job);
    EXPECT_EQ(parsed->rank, line.rank);
    EXPECT_EQ(parsed->dp_rank, line.dp_rank);
    EXPECT_EQ(parsed->cp_rank, line.cp_rank);
    EXPECT_EQ(parsed->node, line.node);
    EXPECT_EQ(parsed->time_unix_seconds, line.time_unix_seconds);
    ExpectSameRecord(parsed->record, r);
    EXPECT_EQ(parsed->rates.mfu, line.rates.mfu);
    EXPECT_EQ(FormatStepLine(*parsed), text);
  }
}

TEST(StepLine, NanLossIsWrittenAsNull) {
  StepLine line;
  line.record = TestStepRecord(1);
  line.record.loss = NAN;
  EXPECT_NE(FormatStepLine(line).find("\"loss\":null"), std::string::npos);
}

// rollbacks_runtime left within schema 1 (no plan is re-split at run time):
// lines written before still parse, and new lines do not carry it.
TEST(StepLine, ALineWithTheOldRuntimeRollbacksStillParses) {
  StepLine line;
  line.record = TestStepRecord(1);
  auto j = nlohmann::json::parse(FormatStepLine(line));
  EXPECT_FALSE(j.contains("rollbacks_runtime"));
  j["rollbacks_runtime"] = 0;
  StatusOr<StepLine> parsed = ParseStepLine(j.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(FormatStepLine(*parsed), FormatStepLine(line));
}

// memory_peak_allocated_bytes came within schema 1: older lines still parse.
TEST(StepLine, ALineWithoutTheAllocatedPeakReadsItAsZero) {
  StepLine line;
  line.record = TestStepRecord(1);
  auto j = nlohmann::json::parse(FormatStepLine(line));
  ASSERT_EQ(j.erase("memory_peak_allocated_bytes"), 1u);
  StatusOr<StepLine> parsed = ParseStepLine(j.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->record.memory_peak_allocated_bytes, 0u);
  EXPECT_EQ(parsed->record.memory_peak_bytes, line.record.memory_peak_bytes);
}

TEST(StepLine, ParseErrorsNameTheField) {
  StepLine line;
  line.job = "j";
  line.record = TestStepRecord(4);
  std::string text = FormatStepLine(line);

  std::string negative = text;
  negative.replace(negative.find("\"tokens\":1000"), 13, "\"tokens\":-5");
  EXPECT_EQ(ParseStepLine(negative).status().message(),
            "metrics.jsonl: tokens: must be >= 0 (got -5)");

  std::string missing = text;
  missing.replace(missing.find("\"micro_batches\""), 15, "\"micro_batchez\"");
  EXPECT_EQ(ParseStepLine(missing).status().message(),
            "metrics.jsonl: micro_batches: required field missing");

  std::string future = text;
  future.replace(future.find("\"schema\":1"), 10, "\"schema\":9");
  EXPECT_NE(ParseStepLine(future).status().message().find("unsupported version 9"),
            std::string::npos);

  EXPECT_EQ(ParseStepLine("{not json").status().message(), "metrics.jsonl: line is not valid JSON");
  EXPECT_EQ(ParseStepLine("[1]").status().message(), "metrics.jsonl: line is not a JSON object");
}

TEST(TrainerMetricsJsonl, LinesParseAndCarryTheSameNumbersAsPrometheus) {
  TempDir dir;
  MetricsOptions o = TestMetricsOptions();
  o.jsonl_path = dir.path() + "/run/sub/metrics.jsonl";  // parents created
  auto m = TrainerMetrics::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<StepRecord> records;
  for (int i = 1; i <= 5; ++i) {
    StepRecord r = TestStepRecord(i);
    r.tokens = 100 * static_cast<uint64_t>(i);
    r.step_seconds = 0.1 * i;
    r.loss = 3.0 / i;
    records.push_back(r);
    ASSERT_TRUE((*m)->RecordStep(r).ok());
    // Flushed after every step: the file is complete without closing it.
    StatusOr<std::string> now = ReadFileToString(o.jsonl_path);
    ASSERT_TRUE(now.ok());
    EXPECT_EQ(Lines(*now).size(), static_cast<size_t>(i));
  }
  StatusOr<std::string> text = ReadFileToString(o.jsonl_path);
  ASSERT_TRUE(text.ok()) << text.status();
  std::vector<std::string> lines = Lines(*text);
  ASSERT_EQ(lines.size(), records.size());
  double tokens = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    StatusOr<StepLine> line = ParseStepLine(lines[i]);
    ASSERT_TRUE(line.ok()) << line.status() << "\n" << lines[i];
    EXPECT_EQ(line->job, "test-job");
    EXPECT_EQ(line->rank, 3);
    EXPECT_EQ(line->dp_rank, 1);
    EXPECT_EQ(line->cp_rank, 1);
    EXPECT_EQ(line->node, "node-a");
    EXPECT_EQ(line->time_unix_seconds, 1.7e9);
    ExpectSameRecord(line->record, records[i]);
    StepRates want = ComputeStepRates(records[i]);
    EXPECT_EQ(line->rates.tokens_per_second, want.tokens_per_second);
    EXPECT_EQ(line->rates.mfu, want.mfu);
    EXPECT_EQ(line->rates.hfu, want.hfu);
    tokens += static_cast<double>(line->record.tokens);
  }
  StatusOr<std::vector<testing::Sample>> samples = ParseExposition((*m)->Exposition());
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ(*SampleValue(*samples, kTrainTokensTotal), tokens);
  StatusOr<StepLine> last = ParseStepLine(lines.back());
  EXPECT_EQ(*SampleValue(*samples, kMfuRatio), last->rates.mfu);
  EXPECT_EQ(*SampleValue(*samples, kTokensPerSecond), last->rates.tokens_per_second);
  EXPECT_EQ(*SampleValue(*samples, kTrainLoss), last->record.loss);
}

TEST(TrainerMetricsJsonl, ResumedRunAppends) {
  TempDir dir;
  MetricsOptions o = TestMetricsOptions();
  o.jsonl_path = dir.path() + "/metrics.jsonl";
  for (int run = 0; run < 2; ++run) {
    auto m = TrainerMetrics::Create(o);
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_TRUE((*m)->RecordStep(TestStepRecord(run)).ok());
  }
  StatusOr<std::string> text = ReadFileToString(o.jsonl_path);
  ASSERT_TRUE(text.ok());
  ASSERT_EQ(Lines(*text).size(), 2u);
  EXPECT_EQ(ParseStepLine(Lines(*text)[1])->record.step, 1);
}

TEST(TrainerMetricsJsonl, UnopenablePathIsAnIoErrorNamingIt) {
  TempDir dir;
  MetricsOptions o = TestMetricsOptions();
  o.jsonl_path = dir.path();  // a directory
  StatusOr<std::unique_ptr<TrainerMetrics>> m = TrainerMetrics::Create(o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kIoError);
  EXPECT_NE(m.status().message().find(dir.path() + ": cannot open for append"), std::string::npos)
      << m.status();
}

}  // namespace
}  // namespace skrull::metrics
