#include "controller/tuner/tuner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace skrull::tuner {
namespace {

// The binding candidate: one rank's fit and what its budget allows.
struct RankAnswer {
  const RankObservation* rank = nullptr;
  MemoryFit fit;
  double budget_bytes = 0;
  double tokens = 0;
};

std::string Percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g%%", 100 * fraction);
  return buf;
}

// "+30.8%" / "-20.0%" of `to` relative to `from`.
std::string Change(int64_t from, int64_t to) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%+.1f%%",
                100.0 * static_cast<double>(to - from) / static_cast<double>(from));
  return buf;
}

std::string Tokens(double tokens) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", std::floor(tokens));
  return buf;
}

// Rounds down to the granularity and puts the result in [min, max]: never
// above max, never below min (min rounded up to the granularity when that
// stays within max, else max).
int64_t RoundIntoBounds(double tokens, const api::TuningSpec& spec, int64_t granularity) {
  const int64_t lo = spec.min_bucket_size_tokens;
  const int64_t hi = spec.max_bucket_size_tokens;
  const double capped = std::min(tokens, static_cast<double>(hi));
  int64_t r =
      capped <= 0 ? 0 : static_cast<int64_t>(std::floor(capped / granularity)) * granularity;
  if (r < lo) {
    const int64_t up = (lo + granularity - 1) / granularity * granularity;
    r = up <= hi ? up : hi;
  }
  return std::min(r, hi);
}

// "rank 3: peak 61.2 GiB of 80.0 GiB at 26624 tokens; fitted 1.9 MiB/token +
// 11.3 GiB over 5 points; target 90% (72.0 GiB) -> 34930 tokens"
std::string DescribeAnswer(const RankAnswer& a, double target_fraction) {
  const MemoryFit& f = a.fit;
  std::string s = "rank " + std::to_string(a.rank->rank) + ": peak " +
                  FormatBytes(static_cast<double>(f.peak.bytes)) + " of " +
                  FormatBytes(static_cast<double>(a.rank->capacity_bytes));
  if (!a.rank->capacity_note.empty()) s += " (" + a.rank->capacity_note + ")";
  s += " at " + std::to_string(f.peak.tokens) + " tokens; ";
  if (f.method == FitMethod::kLeastSquares) {
    s += "fitted " + FormatBytes(f.bytes_per_token) + "/token + " + FormatBytes(f.static_bytes) +
         " over " + std::to_string(f.points) + " points";
  } else {
    s += f.why_no_line + ", so scaled by the headroom ratio (" + FormatBytes(f.bytes_per_token) +
         "/token, all memory assumed to grow with tokens)";
  }
  s += "; target " + Percent(target_fraction) + " (" + FormatBytes(a.budget_bytes) + ") -> ";
  if (a.tokens <= 0) {
    s += "nothing fits: the fitted static " + FormatBytes(f.static_bytes) +
         " alone exceeds the budget";
  } else {
    s += Tokens(a.tokens) + " tokens";
  }
  return s;
}

std::string Join(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

StatusOr<TuningDecision> Tune(const TuningInput& input, const api::TuningSpec& spec,
                              const TunerOptions& options) {
  const int64_t cur = input.bucket_size_tokens;
  if (cur <= 0) {
    return InvalidArgumentError(input.source + ": the BucketSize the run used is unknown (got " +
                                std::to_string(cur) +
                                "); read it from the run's summary.json \"bucket_size_tokens\" or "
                                "the skrull_bucket_size_tokens gauge");
  }
  const int64_t g = std::max<int64_t>(1, options.granularity_tokens);
  const int64_t lo = spec.min_bucket_size_tokens;
  const int64_t hi = spec.max_bucket_size_tokens;

  std::optional<RankAnswer> best;
  std::vector<int> no_steps, no_capacity;
  for (const RankObservation& r : input.ranks) {
    MemoryFit fit = FitMemoryModel(r.steps, options.min_token_spread);
    if (fit.method == FitMethod::kNone) {
      no_steps.push_back(r.rank);
      continue;
    }
    if (r.capacity_bytes == 0) {
      no_capacity.push_back(r.rank);
      continue;
    }
    RankAnswer a;
    a.rank = &r;
    a.budget_bytes = spec.target_memory_fraction * static_cast<double>(r.capacity_bytes);
    a.tokens = TokensForBudget(fit, a.budget_bytes);
    a.fit = std::move(fit);
    if (!best || a.tokens < best->tokens) best = std::move(a);
  }
  if (!best && !input.died_of_memory) {
    std::string why;
    if (input.ranks.empty()) {
      why = "no rank reported any step";
    } else {
      if (!no_steps.empty()) {
        why = "rank(s) " + Join(no_steps) +
              " recorded no step with tokens held and memory measured (the run ended before "
              "its first step?)";
      }
      if (!no_capacity.empty()) {
        why += std::string(why.empty() ? "" : "; ") + "rank(s) " + Join(no_capacity) +
               " reported no memory capacity (memory_capacity_bytes 0: the trainer reports it "
               "on CPU only); give the capacity, e.g. from a `skrull-trainer --profile` "
               "profile's memory.capacity_bytes";
      }
    }
    return FailedPreconditionError(input.source + ": cannot tune bucketSize: " + why);
  }

  TuningDecision d;
  d.current_bucket_size_tokens = cur;
  d.recommended_bucket_size_tokens = cur;
  std::string measured;
  if (best) {
    d.method = best->fit.method;
    d.bytes_per_token = best->fit.bytes_per_token;
    d.static_bytes = best->fit.static_bytes;
    d.points = best->fit.points;
    d.binding_rank = best->rank->rank;
    d.peak_tokens = best->fit.peak.tokens;
    d.peak_memory_bytes = best->fit.peak.bytes;
    d.capacity_bytes = best->rank->capacity_bytes;
    d.model_tokens = best->tokens;
    measured = DescribeAnswer(*best, spec.target_memory_fraction);
    std::vector<int> unused = no_steps;
    unused.insert(unused.end(), no_capacity.begin(), no_capacity.end());
    std::sort(unused.begin(), unused.end());
    if (!unused.empty()) {
      measured += " (rank(s) " + Join(unused) + " not used: no step measured or no capacity)";
    }
  }
  const auto decide = [&](int64_t rec, const std::string& what) {
    d.recommended_bucket_size_tokens = rec;
    d.change = rec != cur;
    d.reason = measured.empty() ? what : measured + "; " + what;
    return d;
  };
  const std::string cur_s = std::to_string(cur);

  // 1. Out of memory: down, never up.
  if (input.died_of_memory) {
    const std::string died =
        "run died of memory" + (input.failure.empty() ? "" : " (" + input.failure + ")");
    measured = measured.empty() ? died : died + "; " + measured;
    const double backoff = std::floor(static_cast<double>(cur) * options.oom_step_down);
    const bool fit_lower = best && best->tokens < backoff;
    const int64_t rec = RoundIntoBounds(fit_lower ? best->tokens : backoff, spec, g);
    if (rec >= cur) {
      return decide(cur, "keeping bucketSize " + cur_s +
                             ": cannot step down below spec.tuning.minBucketSizeTokens (" +
                             std::to_string(lo) +
                             "); lower it, or lower the memory per token (LoRA, a larger "
                             "contextParallel, recompute)");
    }
    return decide(
        rec, "stepping bucketSize down " + cur_s + " -> " + std::to_string(rec) + " (" +
                 Change(cur, rec) + ", " +
                 (fit_lower ? "to the fit"
                            : "the out-of-memory step of " + Percent(1 - options.oom_step_down)) +
                 ")");
  }

  // 2. Memory at the current bound would exceed the target, or the bound is
  //    above the allowed maximum: down.
  if (best->tokens < static_cast<double>(cur) || cur > hi) {
    const int64_t rec = RoundIntoBounds(best->tokens, spec, g);
    if (rec >= cur) {
      return decide(cur, "keeping bucketSize " + cur_s +
                             ": memory asks for fewer tokens but spec.tuning.minBucketSizeTokens "
                             "is " +
                             std::to_string(lo));
    }
    std::string why;
    if (best->tokens >= static_cast<double>(cur)) {
      why = ": above spec.tuning.maxBucketSizeTokens (" + std::to_string(hi) + ")";
    } else if (static_cast<double>(rec) > best->tokens) {
      why = ", held at spec.tuning.minBucketSizeTokens (" + std::to_string(lo) +
            ") although memory asks for fewer";
    }
    return decide(rec, "lowering bucketSize " + cur_s + " -> " + std::to_string(rec) + " (" +
                           Change(cur, rec) + ")" + why);
  }

  // 3. Raise, bounded by the growth cap, damped by the hysteresis band.
  const double growth_cap = static_cast<double>(cur) * options.max_growth_factor;
  const bool capped = best->tokens > growth_cap;
  const int64_t rec = RoundIntoBounds(std::min(best->tokens, growth_cap), spec, g);
  if (rec <= cur) {
    return decide(cur, "keeping bucketSize " + cur_s +
                           (rec == hi ? ": at spec.tuning.maxBucketSizeTokens"
                                      : ": rounding to " + std::to_string(g) +
                                            " tokens leaves no room to grow"));
  }
  if (cur >= lo &&
      static_cast<double>(rec - cur) < options.min_relative_change * static_cast<double>(cur)) {
    return decide(cur, "keeping bucketSize " + cur_s + ": " + std::to_string(rec) + " (" +
                           Change(cur, rec) + ") is within the " +
                           Percent(options.min_relative_change) + " hysteresis band");
  }
  std::string how;
  if (std::min(best->tokens, growth_cap) >= static_cast<double>(hi)) {
    how = ", capped at spec.tuning.maxBucketSizeTokens";
  } else if (capped) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), ", capped at %gx per run", options.max_growth_factor);
    how = buf;
  }
  return decide(rec, "raising bucketSize " + cur_s + " -> " + std::to_string(rec) + " (" +
                         Change(cur, rec) + how + ")");
}

nlohmann::json TuningDecisionToJson(const TuningDecision& d) {
  return {{"current_bucket_size_tokens", d.current_bucket_size_tokens},
          {"recommended_bucket_size_tokens", d.recommended_bucket_size_tokens},
          {"change", d.change},
          {"method", FitMethodName(d.method)},
          {"bytes_per_token", d.bytes_per_token},
          {"static_bytes", d.static_bytes},
          {"points", d.points},
          {"binding_rank", d.binding_rank},
          {"peak_tokens", d.peak_tokens},
          {"peak_memory_bytes", d.peak_memory_bytes},
          {"capacity_bytes", d.capacity_bytes},
          {"model_tokens", std::isfinite(d.model_tokens) ? nlohmann::json(d.model_tokens)
                                                         : nlohmann::json(nullptr)},
          {"reason", d.reason}};
}

}  // namespace skrull::tuner
