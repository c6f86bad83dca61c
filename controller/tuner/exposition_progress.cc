#include "controller/tuner/exposition_progress.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "trainer/metrics/metric_names.h"

namespace skrull::tuner {
namespace {

using nlohmann::json;

// One sample line: its metric name and value; false for comments, blank
// lines and lines that do not parse. Labels are skipped (quoted values may
// hold '}' or spaces).
bool ParseSample(std::string_view line, std::string_view* name, double* value) {
  if (line.empty() || line[0] == '#') return false;
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  *name = line.substr(0, i);
  if (i < line.size() && line[i] == '{') {
    bool quoted = false;
    for (++i; i < line.size(); ++i) {
      if (quoted && line[i] == '\\') {
        ++i;
      } else if (line[i] == '"') {
        quoted = !quoted;
      } else if (!quoted && line[i] == '}') {
        break;
      }
    }
    if (i >= line.size()) return false;
    ++i;
  }
  while (i < line.size() && line[i] == ' ') ++i;
  const std::string text(line.substr(i, line.find(' ', i) - i));
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && std::isfinite(*value);
}

}  // namespace

const ProgressGauge kProgressGauges[5] = {
    {"step", metrics::kTrainStep, "max"},    {"loss", metrics::kTrainLoss, "max"},
    {"evalLoss", metrics::kEvalLoss, "max"}, {"tokensPerSecond", metrics::kTokensPerSecond, "sum"},
    {"mfu", metrics::kMfuRatio, "avg"},
};

json ProgressSkeleton(const api::JobSpec& spec) {
  json progress = json::object();
  if (spec.training.steps > 0) progress["totalSteps"] = spec.training.steps;
  return progress;
}

void SetProgressField(const std::string& field, double value, json* progress) {
  (*progress)[field] =
      field == "step" ? json(static_cast<int64_t>(value)) : json(std::round(value * 1e4) / 1e4);
}

StatusOr<json> ProgressFromExposition(std::string_view text, const api::JobSpec& spec) {
  if (text.size() > kMaxExpositionBytes) {
    return InvalidArgumentError("metrics page of " + std::to_string(text.size()) +
                                " bytes; at most " + std::to_string(kMaxExpositionBytes));
  }
  std::map<std::string_view, const char*> fields;  // metric -> field
  for (const ProgressGauge& g : kProgressGauges) fields[g.metric] = g.field;
  const std::string duration_sum = std::string(metrics::kStepDurationSeconds) + "_sum";
  const std::string duration_count = std::string(metrics::kStepDurationSeconds) + "_count";
  std::map<std::string, double> largest;
  double seconds = 0, steps_timed = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view name;
    double value = 0;
    if (ParseSample(text.substr(start, end - start), &name, &value)) {
      if (auto f = fields.find(name); f != fields.end()) {
        auto [it, added] = largest.emplace(f->second, value);
        if (!added && value > it->second) it->second = value;
      } else if (name == duration_sum) {
        seconds += value;
      } else if (name == duration_count) {
        steps_timed += value;
      }
    }
    start = end + 1;
  }
  json progress = ProgressSkeleton(spec);
  for (const auto& [field, value] : largest) SetProgressField(field, value, &progress);
  if (spec.training.steps > 0 && progress.contains("step") && steps_timed > 0) {
    const double remaining = static_cast<double>(spec.training.steps) - largest["step"];
    progress["etaSeconds"] = std::round(std::max(0.0, remaining) * seconds / steps_timed);
  }
  return progress;
}

}  // namespace skrull::tuner
