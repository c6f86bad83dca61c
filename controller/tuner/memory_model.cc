#include "controller/tuner/memory_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/status.h"

namespace skrull::tuner {

std::vector<MemoryPoint> UpperEnvelope(const std::vector<MemoryPoint>& steps) {
  std::map<int64_t, uint64_t> highest;  // tokens -> highest memory paired with them
  MemoryPoint run;                      // the current high-water-mark run's maxima
  uint64_t last_bytes = 0;
  for (const MemoryPoint& s : steps) {
    if (s.tokens <= 0) continue;
    if (s.bytes < last_bytes) run = MemoryPoint{};  // memory fell: a new run
    last_bytes = s.bytes;
    run.tokens = std::max(run.tokens, s.tokens);
    run.bytes = std::max(run.bytes, s.bytes);
    uint64_t& h = highest[run.tokens];
    h = std::max(h, run.bytes);
  }
  std::vector<MemoryPoint> out;
  for (const auto& [tokens, bytes] : highest) out.push_back({tokens, bytes});
  return out;
}

const char* FitMethodName(FitMethod method) {
  switch (method) {
    case FitMethod::kNone:
      return "none";
    case FitMethod::kLeastSquares:
      return "least-squares";
    case FitMethod::kHeadroomRatio:
      return "headroom-ratio";
  }
  return "?";
}

MemoryFit FitMemoryModel(const std::vector<MemoryPoint>& steps, double min_token_spread) {
  MemoryFit fit;
  const std::vector<MemoryPoint> env = UpperEnvelope(steps);
  fit.points = static_cast<int>(env.size());
  for (const MemoryPoint& p : env) {
    if (p.bytes >= fit.peak.bytes) fit.peak = p;
  }
  if (fit.peak.bytes == 0) {
    fit.why_no_line = "no step with tokens held and memory measured";
    return fit;
  }
  const auto ratio_fallback = [&](std::string why) {
    fit.method = FitMethod::kHeadroomRatio;
    fit.bytes_per_token =
        static_cast<double>(fit.peak.bytes) / static_cast<double>(fit.peak.tokens);
    fit.static_bytes = 0;
    fit.why_no_line = std::move(why);
    return fit;
  };
  if (env.size() < 2) {
    return ratio_fallback("one token count (" + std::to_string(fit.peak.tokens) + ")");
  }
  const double lo = static_cast<double>(env.front().tokens);
  const double hi = static_cast<double>(env.back().tokens);
  if ((hi - lo) / hi < min_token_spread) {
    char buf[160];
    std::snprintf(
        buf, sizeof(buf), "token counts %lld..%lld span %.1f%%, under the %.0f%% a slope needs",
        static_cast<long long>(env.front().tokens), static_cast<long long>(env.back().tokens),
        100 * (hi - lo) / hi, 100 * min_token_spread);
    return ratio_fallback(buf);
  }
  // Distinct token counts (the envelope has one point per count), so the fit
  // is a true least-squares line.
  std::vector<double> tokens, bytes;
  for (const MemoryPoint& p : env) {
    tokens.push_back(static_cast<double>(p.tokens));
    bytes.push_back(static_cast<double>(p.bytes));
  }
  const scheduler::LinearFit line = scheduler::FitLine(tokens, bytes);
  const double slope = line.slope;
  if (!std::isfinite(slope) || slope <= 0) {
    return ratio_fallback("slope not positive over " + std::to_string(env.size()) +
                          " points: memory did not grow with tokens");
  }
  fit.method = FitMethod::kLeastSquares;
  fit.bytes_per_token = slope;
  fit.static_bytes = line.intercept;
  return fit;
}

double TokensForBudget(const MemoryFit& fit, double budget_bytes) {
  SKRULL_CHECK(fit.method != FitMethod::kNone) << "TokensForBudget needs a fit";
  return fit.line().TokensWithin(budget_bytes);
}

}  // namespace skrull::tuner
