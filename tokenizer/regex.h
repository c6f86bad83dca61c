// A compiled PCRE2 regular expression (UTF + Unicode properties, JIT when the
// library has it) for the pre-tokenizer's Split patterns.
//
// Hugging Face tokenizers compile these patterns with Oniguruma. The one
// difference in the syntax real tokenizer.json files use is `\s`: Oniguruma's
// includes U+0085 (NEL), PCRE2's (PCRE2_UCP) does not. Compile() rewrites `\s`
// and `\S` so both engines agree (tests/tokenizer compares against the real
// library). Unicode tables: PCRE2 10.42 has Unicode 14, Oniguruma 6.9.8 has
// 15.0 (docs/tokenizer.md lists what that changes).
//
// Matching is bounded by the subject's length, whatever the pattern (a
// tokenizer.json may hold one that backtracks exponentially): a subject of n
// bytes gets a budget of MatchBudget(n) PCRE2 match steps (its match and
// depth limits), spent across the successive matches of FindAll; each match
// starts with a limit of kFirstMatchLimit and doubles it on a retry, and is
// charged the limit it ran under. Real patterns need far less than a step per
// byte; a pattern that needs more than the budget is an error naming it.
//
// Private to tokenizer/. Thread safety: FindAll is safe to call concurrently on
// one Regex (match data and JIT stack are per call / per thread).
#ifndef SKRULL_TOKENIZER_REGEX_H_
#define SKRULL_TOKENIZER_REGEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace skrull::tokenizer {

inline constexpr uint64_t kFirstMatchLimit = 256;
inline constexpr uint64_t kMatchStepsPerByte = 1024;
inline constexpr uint64_t kMatchStepsBase = uint64_t{1} << 20;
// The PCRE2 match steps FindAll may spend on a subject of `subject_bytes`.
uint64_t MatchBudget(size_t subject_bytes);

class Regex {
 public:
  // InvalidArgument naming the pattern and PCRE2's message (with offset) when
  // it does not compile.
  static StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the [begin, end) byte ranges of the successive non-overlapping
  // matches in `subject`, leftmost first (after an empty match the search
  // resumes one code point later, as Oniguruma's find_iter does).
  // InvalidArgument naming the pattern and the budget when matching needs
  // more than MatchBudget(subject.size()) steps.
  // REQUIRES: subject is valid UTF-8 (not re-checked).
  Status FindAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>* matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(std::string pattern, void* code) : pattern_(std::move(pattern)), code_(code) {}
  std::string pattern_;  // as written in tokenizer.json
  void* code_;           // pcre2_code_8*
};

// The PCRE2 spelling of an Oniguruma pattern (see above). Exposed for tests.
std::string TranslateOnigurumaPattern(std::string_view pattern);

}  // namespace skrull::tokenizer

#endif  // SKRULL_TOKENIZER_REGEX_H_
