// The work budget of one chat-template rendering: whatever a template does,
// rendering it ends, in bounded time and memory, with its output or an error
// naming the limit it hit. Chat templates come from model folders, which are
// untrusted input like a data line.
//
//   max_bytes    no string or list the rendering builds (its output included)
//                is larger: a string counts its bytes, a list kItemBytes per
//                item. Checked before anything that large is allocated.
//   max_steps    every operation costs steps: 1 per expression or statement
//                evaluated, 1 per kStepBytes bytes of string built or
//                scanned, kItemBytes / kStepBytes per list item or dict entry
//                built, 1 per comparison or item visited by a filter. A step
//                is about 16 bytes of memory, so all the values a rendering
//                builds add up to at most kStepBytes x max_steps bytes.
//   max_seconds  wall-clock deadline of the rendering (checked every
//                kClockSteps steps and between steps of long operations).
//
// Nesting is bounded too: the tree a template parses to (kMaxTemplateNesting,
// parser.cc), the interpreter's recursion (kMaxRenderDepth: expressions,
// statements and macro calls together) and the values it walks to print,
// compare or serialize them (kMaxValueDepth; a namespace may contain itself).
//
// Errors are sticky: once a limit is hit, every later charge fails with the
// same status, so code that cannot return a Status (printing a value, a sort
// comparator) stops early and the interpreter reports the status after the
// operation. The interpreter installs the rendering's budget for its thread
// (Budget::Scope) so value printing, comparison and tojson (value.h) charge
// it; outside a rendering they use their own default budget.
//
// Thread safety: a Budget belongs to one rendering on one thread.
#ifndef SKRULL_TOKENIZER_JINJA_BUDGET_H_
#define SKRULL_TOKENIZER_JINJA_BUDGET_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace skrull::jinja {

// Limits of one rendering; the defaults let real chat templates (Qwen2.5,
// Qwen3, Llama-3.x, Mistral) render a conversation of 128K tokens with room
// to spare (docs/tokenizer.md has the measurements). spec.data can raise them
// (templateMaxBytes, templateMaxSteps, templateMaxSeconds).
struct RenderLimits {
  static constexpr int64_t kDefaultMaxBytes = int64_t{64} << 20;  // 64 MiB
  static constexpr int64_t kDefaultMaxSteps = int64_t{1} << 24;   // ~16.8 million
  static constexpr double kDefaultMaxSeconds = 3.0;

  int64_t max_bytes = kDefaultMaxBytes;
  int64_t max_steps = kDefaultMaxSteps;
  double max_seconds = kDefaultMaxSeconds;
};

inline constexpr size_t kStepBytes = 16;  // bytes built or scanned per step
inline constexpr size_t kItemBytes = 64;  // what a list item counts against max_bytes
inline constexpr int kClockSteps = 4096;  // steps between clock reads
inline constexpr int kMaxTemplateNesting = 64;
inline constexpr int kMaxRenderDepth = 512;
inline constexpr int kMaxValueDepth = 128;

class Budget {
 public:
  explicit Budget(const RenderLimits& limits);
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

  // Charges `n` steps. False (with the sticky error set) when the steps are
  // spent, the deadline has passed, or an earlier charge failed.
  bool Step(int64_t n = 1);
  // Charges scanning `bytes` (1 step per kStepBytes).
  bool Scan(size_t bytes) { return Step(static_cast<int64_t>(bytes / kStepBytes)); }
  // Whether a string of `bytes` (a list of `items`) may be built: within
  // max_bytes and within the steps left. Charges nothing (building the value
  // does, through Built*); call it before allocating a result whose size is
  // known in advance.
  bool FitsString(size_t bytes, const char* what);
  bool FitsList(size_t items, const char* what);
  // Charges a string of `bytes` (a list or dict of `items`) just built, and
  // checks it against max_bytes.
  bool BuiltString(size_t bytes);
  bool BuiltList(size_t items);

  // Recursion of the interpreter (Enter/Leave) and of value walks
  // (EnterValue/LeaveValue); Enter* returns false past the bound (the caller
  // must still call the matching Leave*).
  bool Enter();
  void Leave() { --depth_; }
  bool EnterValue();
  void LeaveValue() { --value_depth_; }
  // Whether a value built with `depth` levels is within kMaxValueDepth.
  bool FitsDepth(int depth);

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  int64_t steps() const { return steps_; }
  const RenderLimits& limits() const { return limits_; }

  // The budget of the rendering running on this thread, for a value walk;
  // outside a rendering, a thread-local budget that bounds only nesting.
  static Budget& ForWalk();
  // The budget of the rendering running on this thread, or nullptr. Value
  // factories (value.h) charge the values they build to it.
  static Budget* Active();

  // Installs `budget` as Current() for this thread while alive.
  class Scope {
   public:
    explicit Scope(Budget* budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Budget* previous_;
  };

 private:
  bool Fail(std::string message);

  RenderLimits limits_;
  std::chrono::steady_clock::time_point deadline_;
  int64_t steps_ = 0;
  int64_t next_clock_ = 0;
  int depth_ = 0;
  int value_depth_ = 0;
  Status status_;
};

}  // namespace skrull::jinja

#endif  // SKRULL_TOKENIZER_JINJA_BUDGET_H_
