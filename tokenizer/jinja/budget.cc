#include "tokenizer/jinja/budget.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace skrull::jinja {
namespace {

thread_local Budget* current = nullptr;

std::string Num(int64_t v) { return std::to_string(v); }

std::string Seconds(double s) {
  std::string text = std::to_string(s);
  while (text.size() > 1 && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

Budget::Budget(const RenderLimits& limits) : limits_(limits) {
  const double seconds = std::isfinite(limits.max_seconds) ? limits.max_seconds : 1e9;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(std::min(seconds, 1e9)));
  next_clock_ = kClockSteps;
}

bool Budget::Fail(std::string message) {
  if (status_.ok()) status_ = InvalidArgumentError(std::move(message));
  return false;
}

bool Budget::Step(int64_t n) {
  if (!status_.ok()) return false;
  steps_ += n;
  if (steps_ > limits_.max_steps) {
    return Fail("the rendering took over " + Num(limits_.max_steps) +
                " steps (spec.data.templateMaxSteps; a step is one expression, one item "
                "or 16 bytes of work)");
  }
  if (steps_ >= next_clock_) {
    next_clock_ = steps_ + kClockSteps;
    if (std::chrono::steady_clock::now() > deadline_) {
      return Fail("the rendering took over " + Seconds(limits_.max_seconds) +
                  " s (spec.data.templateMaxSeconds)");
    }
  }
  return true;
}

bool Budget::FitsString(size_t bytes, const char* what) {
  if (!status_.ok()) return false;
  if (bytes > static_cast<uint64_t>(limits_.max_bytes)) {
    return Fail(std::string(what) + " would be " + std::to_string(bytes) + " bytes, over " +
                Num(limits_.max_bytes) + " (spec.data.templateMaxBytes)");
  }
  if (static_cast<int64_t>(bytes / kStepBytes) > limits_.max_steps - steps_) {
    return Step(static_cast<int64_t>(bytes / kStepBytes));  // reports the steps
  }
  return true;
}

bool Budget::FitsList(size_t items, const char* what) {
  if (!status_.ok()) return false;
  if (items > static_cast<uint64_t>(limits_.max_bytes) / kItemBytes) {
    return Fail(std::string(what) + " would have " + std::to_string(items) + " items, over " +
                Num(limits_.max_bytes / static_cast<int64_t>(kItemBytes)) + " (" +
                Num(limits_.max_bytes) + " bytes at " + std::to_string(kItemBytes) +
                " per item; spec.data.templateMaxBytes)");
  }
  const auto cost = static_cast<int64_t>(items * (kItemBytes / kStepBytes));
  if (cost > limits_.max_steps - steps_) return Step(cost);
  return true;
}

bool Budget::BuiltString(size_t bytes) {
  return FitsString(bytes, "a string") && Step(1 + static_cast<int64_t>(bytes / kStepBytes));
}

bool Budget::BuiltList(size_t items) {
  return FitsList(items, "a list") &&
         Step(1 + static_cast<int64_t>(items * (kItemBytes / kStepBytes)));
}

bool Budget::Enter() {
  if (++depth_ > kMaxRenderDepth) {
    return Fail("the template nests calls, blocks and expressions deeper than " +
                Num(kMaxRenderDepth) + " levels while rendering");
  }
  return status_.ok();
}

bool Budget::EnterValue() { return FitsDepth(++value_depth_); }

bool Budget::FitsDepth(int depth) {
  if (depth > kMaxValueDepth) {
    return Fail("a value is nested deeper than " + Num(kMaxValueDepth) +
                " levels (or contains itself)");
  }
  return status_.ok();
}

Budget& Budget::ForWalk() {
  if (current != nullptr) return *current;
  // Outside a rendering only the nesting bounds apply; a walk that starts
  // (nothing entered) starts afresh.
  thread_local Budget fallback(
      RenderLimits{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max(), 1e9});
  if (fallback.value_depth_ == 0 && fallback.depth_ == 0) {
    fallback.status_ = OkStatus();
    fallback.steps_ = 0;
    fallback.next_clock_ = kClockSteps;
  }
  return fallback;
}

Budget* Budget::Active() { return current; }

Budget::Scope::Scope(Budget* budget) : previous_(current) { current = budget; }
Budget::Scope::~Scope() { current = previous_; }

}  // namespace skrull::jinja
