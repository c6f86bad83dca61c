// The Grafana dashboard against the exporter: it parses, every panel has a
// PromQL query, every metric it names is exported, the panels the users need
// are there, and the recording rules are exactly what the dashboard implies.
// Regenerate the rules after editing the dashboard:
//   SKRULL_UPDATE_GOLDEN=1 build/bin/metrics_unit_test --gtest_filter='Dashboard.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <regex>

#include "common/file_util.h"
#include "tests/trainer/metrics_dashboard_util.h"
#include "tests/trainer/metrics_testing.h"
#include "trainer/metrics/metric_names.h"
#include "trainer/metrics/trainer_metrics.h"

namespace skrull::testing {
namespace {

nlohmann::json LoadDashboard() {
  StatusOr<std::string> text = ReadFileToString(SourcePath(kDashboardPath));
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return nlohmann::json();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << kDashboardPath << " is not valid JSON";
  return j;
}

std::vector<PanelQuery> LoadQueries() {
  StatusOr<std::vector<PanelQuery>> q = DashboardQueries(LoadDashboard());
  EXPECT_TRUE(q.ok()) << q.status();
  return q.ok() ? *q : std::vector<PanelQuery>{};
}

// Exported family name -> type, from a fresh TrainerMetrics.
std::map<std::string, std::string> ExportedFamilies() {
  auto m = metrics::TrainerMetrics::Create(TestMetricsOptions());
  EXPECT_TRUE(m.ok());
  std::map<std::string, std::string> families;
  std::istringstream in((*m)->Exposition());
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

const nlohmann::json* Variable(const nlohmann::json& dashboard, const std::string& name) {
  for (const auto& v : dashboard["templating"]["list"]) {
    if (v.value("name", "") == name) return &v;
  }
  return nullptr;
}

TEST(Dashboard, ParsesWithSchemaVersionAndTheJobAndDatasourceVariables) {
  nlohmann::json d = LoadDashboard();
  ASSERT_TRUE(d.is_object());
  EXPECT_GE(d.value("schemaVersion", 0), 36);
  EXPECT_LE(d.value("schemaVersion", 0), 41);
  EXPECT_FALSE(d.value("uid", "").empty());
  const nlohmann::json* ds = Variable(d, "datasource");
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ((*ds)["type"], "datasource");
  EXPECT_EQ((*ds)["query"], "prometheus");
  const nlohmann::json* job = Variable(d, "job");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ((*job)["type"], "query");
  EXPECT_EQ((*job)["query"]["query"], "label_values(skrull_train_steps_total, job)");
  EXPECT_EQ((*job)["datasource"]["uid"], "${datasource}");
}

TEST(Dashboard, EveryPanelHasAPromQLTargetOnTheDatasourceVariable) {
  nlohmann::json d = LoadDashboard();
  StatusOr<std::vector<PanelQuery>> queries = DashboardQueries(d);
  ASSERT_TRUE(queries.ok()) << queries.status();
  EXPECT_GE(queries->size(), 15u);
  std::set<int> ids;
  for (const auto& panel : d["panels"]) {
    EXPECT_TRUE(ids.insert(panel.value("id", -1)).second) << "panel ids are unique";
    if (panel["type"] == "row") continue;
    EXPECT_EQ(panel["datasource"]["uid"], "${datasource}") << panel["title"];
    for (const auto& t : panel["targets"]) {
      EXPECT_EQ(t["datasource"]["uid"], "${datasource}") << panel["title"];
      std::string expr = t["expr"];
      EXPECT_NE(expr.find("$job"), std::string::npos)
          << panel["title"] << ": every query is filtered by the job variable";
    }
  }
}

TEST(Dashboard, EveryMetricNameIsAnExportedFamily) {
  const std::map<std::string, std::string> families = ExportedFamilies();
  static const std::regex kHistogramSeries("(.*)_(bucket|sum|count)");
  for (const PanelQuery& q : LoadQueries()) {
    std::set<std::string> names = MetricNamesIn(q.expr);
    EXPECT_FALSE(names.empty()) << q.panel_title;
    for (const std::string& name : names) {
      std::smatch m;
      std::string family = name;
      if (std::regex_match(name, m, kHistogramSeries) && families.count(m[1].str()) &&
          families.at(m[1].str()) == "histogram") {
        family = m[1].str();
      }
      EXPECT_TRUE(families.count(family)) << q.panel_title << ": " << name << " is not exported";
      if (families.count(family) && families.at(family) == "histogram") {
        EXPECT_NE(name, family) << q.panel_title << ": query a histogram's _bucket/_sum/_count";
      }
    }
  }
}

TEST(Dashboard, HasThePanelsUsersNeed) {
  std::string all;
  for (const PanelQuery& q : LoadQueries()) all += q.expr + "\n";
  const std::vector<std::pair<std::string, std::string>> needed = {
      {"tokens/s per rank", R"(sum by \(job, rank\) \(rate\(skrull_train_tokens_total)"},
      {"MFU per rank", R"(by \(job, rank\) \(skrull_mfu_ratio)"},
      {"HFU per rank", R"(by \(job, rank\) \(skrull_hfu_ratio)"},
      {"step time breakdown by phase",
       R"(sum by \(job, phase\) \(rate\(skrull_time_seconds_total)"},
      {"FLOPs balance max/mean",
       R"(max by \(job\) \(rate\(skrull_model_flops_total[^\n]*/ avg by \(job\) \(rate\(skrull_model_flops_total)"},
      {"peak memory per rank", R"(by \(job, rank\) \(skrull_memory_peak_bytes)"},
      {"capacity per rank", R"(by \(job, rank\) \(skrull_memory_capacity_bytes)"},
      {"BucketSize per rank", R"(by \(job, rank\) \(skrull_bucket_size_tokens)"},
      {"tokens held per rank", R"(by \(job, rank\) \(skrull_rank_tokens_peak)"},
      {"roll-backs per minute by level",
       R"(60 \* sum by \(job, level\) \(rate\(skrull_scheduler_rollbacks_total)"},
      {"sequences by placement", R"(sum by \(job, placement\) \(rate\(skrull_sequences_total)"},
      {"loss", R"(skrull_train_loss)"},
      {"validation loss", R"(max by \(job\) \(skrull_eval_loss)"},
      {"step p50",
       R"(histogram_quantile\(0\.5, sum by \(job, le\) \(rate\(skrull_step_duration_seconds_bucket)"},
      {"step p99",
       R"(histogram_quantile\(0\.99, sum by \(job, le\) \(rate\(skrull_step_duration_seconds_bucket)"},
      {"scheduler p99",
       R"(histogram_quantile\(0\.99, sum by \(job, le\) \(rate\(skrull_scheduler_duration_seconds_bucket)"},
  };
  for (const auto& [what, pattern] : needed) {
    EXPECT_TRUE(std::regex_search(all, std::regex(pattern))) << "no panel shows " << what;
  }
}

TEST(Dashboard, RuleExprDropsVariableMatchersAndFixesTheWindow) {
  EXPECT_EQ(
      *RuleExpr(R"(sum by (job) (rate(x_total{job=~"$job", rank=~"$rank"}[$__rate_interval])))"),
      "sum by (job) (rate(x_total[2m]))");
  EXPECT_EQ(*RuleExpr(R"(max by (job) (g{job=~"$job", le="1"}))"), R"(max by (job) (g{le="1"}))");
  EXPECT_EQ(*RuleExpr(R"(g{le="1", job=~"${job}"})"), R"(g{le="1"})");
  EXPECT_EQ(*RuleExpr(R"(g{a="1", rank=~"$rank", b="2"})"), R"(g{a="1", b="2"})");
  EXPECT_EQ(RuleExpr("rate(x[$__interval])").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SubstituteVariables(R"(x{job=~"$job"}[${__rate_interval}] $other)",
                                {{"job", "j1"}, {"__rate_interval", "30s"}}),
            R"(x{job=~"j1"}[30s] $other)");
}

TEST(Dashboard, MetricNamesSkipRecordingRules) {
  EXPECT_EQ(MetricNamesIn("skrull:panel_x + skrull_a_total / on() skrull_b"),
            (std::set<std::string>{"skrull_a_total", "skrull_b"}));
}

TEST(Dashboard, RecordingRulesFileIsGeneratedFromTheDashboard) {
  StatusOr<std::string> want = DashboardRecordingRulesYaml(LoadQueries());
  ASSERT_TRUE(want.ok()) << want.status();
  const std::string path = SourcePath(kRecordingRulesPath);
  const char* update = std::getenv("SKRULL_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    ASSERT_TRUE(WriteFileAtomically(path, *want).ok());
  }
  StatusOr<std::string> have = ReadFileToString(path);
  ASSERT_TRUE(have.ok()) << have.status();
  EXPECT_EQ(*have, *want) << kRecordingRulesPath << " is stale. Regenerate it with\n"
                          << "  SKRULL_UPDATE_GOLDEN=1 build/bin/metrics_unit_test "
                             "--gtest_filter='Dashboard.*'";
  // One rule per panel query.
  size_t rules = 0;
  for (size_t at = have->find("- record: "); at != std::string::npos;
       at = have->find("- record: ", at + 1)) {
    ++rules;
  }
  EXPECT_EQ(rules, LoadQueries().size());
}

}  // namespace
}  // namespace skrull::testing
