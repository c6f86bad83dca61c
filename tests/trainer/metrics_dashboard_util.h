// Test support: reads the Grafana dashboard (charts/skrull/dashboards/
// skrull.json) and derives the Prometheus recording rules from it, so the two
// cannot drift (charts/skrull/dashboards/recording-rules.yaml is checked
// against DashboardRecordingRulesYaml by metrics_dashboard_test).
#ifndef SKRULL_TESTS_TRAINER_METRICS_DASHBOARD_UTIL_H_
#define SKRULL_TESTS_TRAINER_METRICS_DASHBOARD_UTIL_H_

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::testing {

inline constexpr char kDashboardPath[] = "charts/skrull/dashboards/skrull.json";
inline constexpr char kRecordingRulesPath[] = "charts/skrull/dashboards/recording-rules.yaml";
// The fixed window that replaces Grafana's $__rate_interval in the rules.
inline constexpr char kRuleRateWindow[] = "2m";

// One PromQL query of one panel.
struct PanelQuery {
  std::string panel_title;
  std::string ref_id;  // unique across the dashboard; names the recording rule
  std::string expr;
};

// Every target of every panel (rows excluded, nested row panels included), in
// order. InvalidArgument when a panel has no target, a target has no expr,
// or a refId is missing, malformed ([a-z0-9_]+) or used twice.
StatusOr<std::vector<PanelQuery>> DashboardQueries(const nlohmann::json& dashboard);

// Replaces $name and ${name} by values[name]; unknown variables stay.
std::string SubstituteVariables(const std::string& expr,
                                const std::map<std::string, std::string>& values);

// The recording-rule form of a panel query: label matchers that compare with
// a dashboard variable (job=~"$job") are dropped, $__rate_interval becomes
// kRuleRateWindow. InvalidArgument if any '$' is left.
StatusOr<std::string> RuleExpr(const std::string& panel_expr);

// "skrull:panel_<refId>".
std::string RuleName(const PanelQuery& q);

// The whole recording-rules file for `queries`, one rule per query.
StatusOr<std::string> DashboardRecordingRulesYaml(const std::vector<PanelQuery>& queries);

// Metric names (skrull_...) that `expr` mentions, recording rules excluded.
std::set<std::string> MetricNamesIn(const std::string& expr);

}  // namespace skrull::testing

#endif  // SKRULL_TESTS_TRAINER_METRICS_DASHBOARD_UTIL_H_
