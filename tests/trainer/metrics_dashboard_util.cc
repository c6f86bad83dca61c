#include "tests/trainer/metrics_dashboard_util.h"

#include <regex>
#include <sstream>

namespace skrull::testing {

namespace {

Status AddPanelQueries(const nlohmann::json& panel, std::set<std::string>* ref_ids,
                       std::vector<PanelQuery>* out) {
  const std::string title = panel.value("title", "(untitled)");
  if (panel.value("type", "") == "row") {
    for (const auto& nested : panel.value("panels", nlohmann::json::array())) {
      SKRULL_RETURN_IF_ERROR(AddPanelQueries(nested, ref_ids, out));
    }
    return OkStatus();
  }
  const auto targets = panel.value("targets", nlohmann::json::array());
  if (!targets.is_array() || targets.empty()) {
    return InvalidArgumentError("panel \"" + title + "\": no targets");
  }
  static const std::regex kRefId("[a-z0-9_]+");
  for (const auto& t : targets) {
    PanelQuery q{title, t.value("refId", ""), t.value("expr", "")};
    if (q.expr.empty())
      return InvalidArgumentError("panel \"" + title + "\": a target has no expr");
    if (!std::regex_match(q.ref_id, kRefId)) {
      return InvalidArgumentError("panel \"" + title + "\": refId \"" + q.ref_id +
                                  "\" must match [a-z0-9_]+ (it names a recording rule)");
    }
    if (!ref_ids->insert(q.ref_id).second) {
      return InvalidArgumentError("panel \"" + title + "\": refId \"" + q.ref_id +
                                  "\" is used twice in the dashboard");
    }
    out->push_back(std::move(q));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<PanelQuery>> DashboardQueries(const nlohmann::json& dashboard) {
  if (!dashboard.contains("panels") || !dashboard["panels"].is_array()) {
    return InvalidArgumentError("dashboard: no panels array");
  }
  std::vector<PanelQuery> out;
  std::set<std::string> ref_ids;
  for (const auto& panel : dashboard["panels"]) {
    SKRULL_RETURN_IF_ERROR(AddPanelQueries(panel, &ref_ids, &out));
  }
  return out;
}

std::string SubstituteVariables(const std::string& expr,
                                const std::map<std::string, std::string>& values) {
  static const std::regex kVariable(R"(\$\{(\w+)\}|\$(\w+))");
  std::string out;
  auto begin = std::sregex_iterator(expr.begin(), expr.end(), kVariable);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    std::string name = m[1].matched ? m[1].str() : m[2].str();
    out += expr.substr(last, m.position() - last);
    auto v = values.find(name);
    out += v != values.end() ? v->second : m.str();
    last = m.position() + m.length();
  }
  return out + expr.substr(last);
}

StatusOr<std::string> RuleExpr(const std::string& panel_expr) {
  static const std::regex kVariableMatcher(R"(\w+\s*(=~|!~|!=|=)\s*"\$\{?\w+\}?")");
  static const std::regex kOpenComma(R"(\{\s*,\s*)");
  static const std::regex kDoubleComma(R"(,\s*,\s*)");
  static const std::regex kCommaClose(R"(\s*,\s*\})");
  static const std::regex kEmptyBraces(R"(\{\s*\})");
  std::string e = std::regex_replace(panel_expr, kVariableMatcher, "");
  e = std::regex_replace(e, kOpenComma, "{");
  e = std::regex_replace(e, kDoubleComma, ", ");
  e = std::regex_replace(e, kCommaClose, "}");
  e = std::regex_replace(e, kEmptyBraces, "");
  e = SubstituteVariables(e, {{"__rate_interval", kRuleRateWindow}});
  if (e.find('$') != std::string::npos) {
    return InvalidArgumentError("cannot turn into a recording rule (a variable is left): " + e);
  }
  return e;
}

std::string RuleName(const PanelQuery& q) { return "skrull:panel_" + q.ref_id; }

StatusOr<std::string> DashboardRecordingRulesYaml(const std::vector<PanelQuery>& queries) {
  std::ostringstream out;
  out << "# GENERATED from " << kDashboardPath << "; do not edit by hand.\n"
      << "# Regenerate: SKRULL_UPDATE_GOLDEN=1 <build>/bin/metrics_unit_test "
         "--gtest_filter='Dashboard.*'\n"
      << "# One recording rule per dashboard panel query (record: skrull:panel_<refId>):\n"
      << "# matchers on dashboard variables ($job, $rank) dropped, $__rate_interval fixed\n"
      << "# at " << kRuleRateWindow << ". Every rule keeps the job label. Evaluated at the\n"
      << "# server's evaluation_interval.\n"
      << "groups:\n"
      << "  - name: skrull-dashboard-panels\n"
      << "    rules:\n";
  for (const PanelQuery& q : queries) {
    SKRULL_ASSIGN_OR_RETURN(std::string expr, RuleExpr(q.expr));
    // A JSON string is a valid YAML double-quoted scalar.
    out << "      # " << q.panel_title << "\n"
        << "      - record: " << RuleName(q) << "\n"
        << "        expr: " << nlohmann::json(expr).dump() << "\n";
  }
  return out.str();
}

std::set<std::string> MetricNamesIn(const std::string& expr) {
  // A name is preceded by neither a word character nor ':' (recording rules).
  static const std::regex kName(R"((^|[^\w:])(skrull_[a-z0-9_]+))");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kName);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[2].str());
  }
  return names;
}

}  // namespace skrull::testing
