// The memory model the BucketSize tuner fits to what a run measured, one
// rank at a time:
//
//   memory_bytes(tokens) = static_bytes + bytes_per_token * tokens
//
// `tokens` is the most tokens the rank held in one micro-batch of a step
// (metrics.jsonl `rank_tokens_peak`, gauge skrull_rank_tokens_peak) and
// `memory_bytes` the rank's memory peak (`memory_peak_bytes`,
// skrull_memory_peak_bytes). It is the paper's Mem_act(S) = alpha*S + beta
// (Skrull App. C.1) with beta and the static memory (weights, gradients,
// optimizer state, runtime) folded into one intercept, because a run measures
// only their sum. Packing makes a rank's activation memory depend on the sum
// of its tokens only, so one line per rank describes every micro-batch.
//
// The fit runs over the *upper envelope* of a rank's steps. The trainer's
// memory_peak_bytes is a high-water mark on CPU (VmHWM since the process
// started): it belongs to the most tokens held so far, not to the step's own
// tokens. So the steps are read as runs of a high-water mark: within a run
// (memory never falls), each step gives (most tokens held so far in the run,
// highest memory so far); memory falling starts a new run (a restarted
// process, or a per-step peak that followed fewer tokens). The envelope keeps,
// per token count, the highest memory any run paired with it. For a
// high-water mark this pairs every value with the tokens that caused it; for
// per-step peaks (each step's own peak, which falls when the tokens do) every
// step is its own point; either way memory is never paired with more tokens
// than were held when it was reached.
//
// The line and the budget arithmetic are the scheduler's
// (scheduler/memory_model.h), which also derives BucketSize from a model's
// architecture; this file only fits the line to measurements.
//
// Thread safety: pure functions on values.
#ifndef SKRULL_CONTROLLER_TUNER_MEMORY_MODEL_H_
#define SKRULL_CONTROLLER_TUNER_MEMORY_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/memory_model.h"

namespace skrull::tuner {

using scheduler::FormatBytes;

// One step of one rank: the most tokens it held in a micro-batch, and its
// memory peak as reported for that step.
struct MemoryPoint {
  int64_t tokens = 0;
  uint64_t bytes = 0;
  bool operator==(const MemoryPoint& o) const { return tokens == o.tokens && bytes == o.bytes; }
};

// The upper envelope of `steps` (in step order; see above), one point per
// token count, ascending in tokens. Steps with tokens <= 0 (a rank that held
// nothing, e.g. an empty padding micro-batch) carry no information and are
// skipped.
std::vector<MemoryPoint> UpperEnvelope(const std::vector<MemoryPoint>& steps);

enum class FitMethod {
  kNone,           // no usable point
  kLeastSquares,   // a line through >= 2 envelope points with a positive slope
  kHeadroomRatio,  // one usable token count: all memory assumed to scale with tokens
};
const char* FitMethodName(FitMethod method);  // "none", "least-squares", "headroom-ratio"

struct MemoryFit {
  FitMethod method = FitMethod::kNone;
  // kLeastSquares: the fitted line. kHeadroomRatio: bytes_per_token is
  // peak.bytes / peak.tokens and static_bytes 0 (the ratio's implied line).
  double bytes_per_token = 0;
  double static_bytes = 0;  // may come out negative on noisy data; reported as fitted
  int points = 0;           // envelope points the fit saw
  MemoryPoint peak;         // the envelope point with the highest memory (most tokens on a tie)
  // kHeadroomRatio: why no line was fitted ("one token count (480)", "slope
  // not positive over 3 points: memory did not grow with tokens", ...).
  std::string why_no_line;

  // The fitted line, or the ratio's implied line (static 0).
  scheduler::MemoryLine line() const { return {static_bytes, bytes_per_token}; }
};

// Fits the model to a rank's steps (in step order). A line needs at least two
// envelope points whose token counts span at least `min_token_spread` of the
// largest ((max - min) / max; closer counts make the slope noise) and a
// positive, finite slope; otherwise the fit falls back to the headroom ratio
// through the peak point. The line is scheduler::FitLine (centred least
// squares), the one the profile fits too.
MemoryFit FitMemoryModel(const std::vector<MemoryPoint>& steps, double min_token_spread = 0.1);

// Tokens a rank can hold within `budget_bytes` under `fit`, before rounding
// or clamping: fit.line().TokensWithin(budget), i.e. (budget - static) /
// bytes_per_token for a line, peak.tokens x budget / peak.bytes for the
// ratio. Can be <= 0 (nothing fits). REQUIRES: fit.method != kNone.
double TokensForBudget(const MemoryFit& fit, double budget_bytes);

}  // namespace skrull::tuner

#endif  // SKRULL_CONTROLLER_TUNER_MEMORY_MODEL_H_
