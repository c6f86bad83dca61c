#include "bench/length_samplers.h"

#include <algorithm>
#include <cmath>

namespace skrull::bench {
namespace {

constexpr int64_t K = kTokensPerK;
constexpr int64_t kShortestTokens = 16;

}  // namespace

StatusOr<LengthSampler> LengthSampler::FromCdf(std::string name, std::string description,
                                               std::vector<CdfKnot> knots) {
  if (knots.size() < 2) return InvalidArgumentError(name + ": need at least 2 CDF knots");
  if (knots.front().cumulative != 0.0 || knots.back().cumulative != 1.0) {
    return InvalidArgumentError(name + ": CDF must start at 0 and end at 1");
  }
  for (size_t i = 0; i < knots.size(); ++i) {
    if (knots[i].length_tokens < 1) {
      return InvalidArgumentError(name + ": knot " + std::to_string(i) + ": length must be >= 1");
    }
    if (i > 0 && (knots[i].length_tokens <= knots[i - 1].length_tokens ||
                  knots[i].cumulative < knots[i - 1].cumulative)) {
      return InvalidArgumentError(name + ": knot " + std::to_string(i) +
                                  ": lengths must increase and the CDF must not decrease");
    }
  }
  return LengthSampler(std::move(name), std::move(description), std::move(knots));
}

int64_t LengthSampler::Sample(std::mt19937_64& rng) const {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double u = uniform(rng);
  // First segment whose upper CDF exceeds u (zero-mass segments are skipped).
  size_t i = 1;
  while (i + 1 < knots_.size() && knots_[i].cumulative <= u) ++i;
  const CdfKnot& lo = knots_[i - 1];
  const CdfKnot& hi = knots_[i];
  const double mass = hi.cumulative - lo.cumulative;
  const double f = mass > 0 ? std::clamp((u - lo.cumulative) / mass, 0.0, 1.0) : 0.0;
  const double log_lo = std::log(static_cast<double>(lo.length_tokens));
  const double log_hi = std::log(static_cast<double>(hi.length_tokens));
  const double x = std::exp(log_lo + f * (log_hi - log_lo));
  // Floor keeps P(L < knot) exact; the last knot is the longest, inclusive.
  int64_t length = static_cast<int64_t>(std::floor(x));
  return std::clamp(length, lo.length_tokens, knots_.back().length_tokens);
}

std::vector<int64_t> LengthSampler::SampleMany(int64_t n, uint64_t seed) const {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, n)));
  for (int64_t i = 0; i < n; ++i) out.push_back(Sample(rng));
  return out;
}

double LengthSampler::Cdf(double tokens) const {
  if (tokens <= knots_.front().length_tokens) return 0.0;
  if (tokens > knots_.back().length_tokens) return 1.0;
  for (size_t i = 1; i < knots_.size(); ++i) {
    if (tokens <= knots_[i].length_tokens) {
      const CdfKnot& lo = knots_[i - 1];
      const CdfKnot& hi = knots_[i];
      const double f = std::log(tokens / lo.length_tokens) /
                       std::log(static_cast<double>(hi.length_tokens) / lo.length_tokens);
      return lo.cumulative + f * (hi.cumulative - lo.cumulative);
    }
  }
  return 1.0;
}

double LengthSampler::MeanTokens() const {
  double mean = 0.0;
  for (size_t i = 1; i < knots_.size(); ++i) {
    const double a = static_cast<double>(knots_[i - 1].length_tokens);
    const double b = static_cast<double>(knots_[i].length_tokens);
    const double mass = knots_[i].cumulative - knots_[i - 1].cumulative;
    mean += mass * (b - a) / std::log(b / a);  // mean of a log-uniform on [a, b]
  }
  return mean;
}

std::vector<std::string> DatasetNames() {
  return {"wikipedia", "lmsyschat1m", "chatqa2", "llama3-mix"};
}

StatusOr<LengthSampler> Dataset(const std::string& name) {
  if (name == "wikipedia") {
    return LengthSampler::FromCdf(
        name, "Wikipedia (pleisto/wikipedia-cn-20230720-filtered), paper Table 1, long-tail",
        {{kShortestTokens, 0.0},
         {1 * K, 0.8788},
         {4 * K, 0.9934},
         {8 * K, 0.9992},
         {32 * K, 0.9999},
         {78 * K, 1.0}});
  }
  if (name == "lmsyschat1m") {
    return LengthSampler::FromCdf(name, "LMsysChat1M, paper Table 1, long-tail",
                                  {{kShortestTokens, 0.0},
                                   {1 * K, 0.8712},
                                   {4 * K, 0.9935},
                                   {8 * K, 0.9987},
                                   {32 * K, 0.9998},
                                   {128 * K, 0.9999},
                                   {1643 * K, 1.0}});
  }
  if (name == "chatqa2") {
    return LengthSampler::FromCdf(
        name, "ChatQA2-Long-SFT (nvidia/ChatQA2-Long-SFT-data), paper Table 1, bimodal",
        {{kShortestTokens, 0.0},
         {1 * K, 0.2192},
         {4 * K, 0.3148},
         {8 * K, 0.4043},
         {32 * K, 0.9986},
         {99 * K, 1.0}});
  }
  if (name == "llama3-mix") {
    return LengthSampler::FromCdf(
        name, "Llama-3-style SFT mix: 99.89% short (mean ~0.8K), 0.11% long (mean ~37K)",
        {{64, 0.0}, {3 * K, 0.9989}, {16 * K, 0.9989}, {72 * K, 1.0}});
  }
  std::string known;
  for (const std::string& n : DatasetNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFoundError("unknown dataset '" + name + "'; known: " + known);
}

}  // namespace skrull::bench
