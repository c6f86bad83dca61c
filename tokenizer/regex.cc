#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdint>

namespace skrull::tokenizer {
namespace {

// Oniguruma's \s for Unicode: PCRE2's (\p{Z}, \t\n\v\f\r) plus NEL.
constexpr char kSpaceInClass[] = "\\s\\x{85}";

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// A JIT stack per thread, large enough for long whitespace runs.
pcre2_jit_stack* ThreadJitStack() {
  struct Holder {
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    ~Holder() {
      if (stack != nullptr) pcre2_jit_stack_free(stack);
    }
  };
  thread_local Holder holder;
  return holder.stack;
}

}  // namespace

std::string TranslateOnigurumaPattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      ++i;
      if (e == 's') {
        out += in_class ? kSpaceInClass : std::string("[") + kSpaceInClass + "]";
      } else if (e == 'S' && !in_class) {
        out += std::string("[^") + kSpaceInClass + "]";
      } else {
        out.push_back('\\');
        out.push_back(e);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      // A POSIX class such as [:alpha:] inside a class: copy it whole.
      const size_t close = p.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(p.substr(i, close + 2 - i));
        i = close + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
  const std::string translated = TranslateOnigurumaPattern(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
  if (code == nullptr) {
    return InvalidArgumentError("regex " + std::string(pattern) + " does not compile (PCRE2: " +
                                Pcre2Message(error) + " at offset " + std::to_string(offset) + ")");
  }
  // JIT is an optimisation: without it (no JIT support) matching is slower, not different.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::unique_ptr<Regex>(new Regex(std::string(pattern), code));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Status Regex::FindAll(std::string_view subject,
                      std::vector<std::pair<size_t, size_t>>* matches) const {
  auto* code = static_cast<pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> data(
      pcre2_match_data_create_from_pattern(code, nullptr), pcre2_match_data_free);
  std::unique_ptr<pcre2_match_context, void (*)(pcre2_match_context*)> context(
      pcre2_match_context_create(nullptr), pcre2_match_context_free);
  if (data == nullptr || context == nullptr) return InternalError("PCRE2: out of memory");
  if (pcre2_jit_stack* stack = ThreadJitStack()) {
    pcre2_jit_stack_assign(context.get(), nullptr, stack);
  }
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const size_t n = subject.size();
  // The subject's match budget (module comment): each call starts with a
  // small PCRE2 match limit, doubled on a retry, and is charged the limit it
  // ran under; the calls together may not exceed the budget.
  const uint64_t budget = MatchBudget(n);
  uint64_t spent = 0;
  size_t start = 0;
  uint64_t limit = kFirstMatchLimit;
  while (start <= n) {
    limit = std::min({limit, budget - spent, uint64_t{UINT32_MAX}});
    pcre2_set_match_limit(context.get(), static_cast<uint32_t>(limit));
    pcre2_set_depth_limit(context.get(), static_cast<uint32_t>(limit));
    int rc = pcre2_match(code, s, n, start, PCRE2_NO_UTF_CHECK, data.get(), context.get());
    spent += limit;
    if ((rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT) && spent < budget) {
      limit *= 2;  // retry this match with more room
      continue;
    }
    limit = kFirstMatchLimit;
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT) {
      return InvalidArgumentError("regex " + pattern_ + ": over its match budget at byte " +
                                  std::to_string(start) + " of a " + std::to_string(n) +
                                  "-byte piece (" + std::to_string(budget) +
                                  " PCRE2 match steps: " + std::to_string(kMatchStepsPerByte) +
                                  " per byte + " + std::to_string(kMatchStepsBase) +
                                  "); the pattern backtracks too much to tokenize in linear time");
    }
    if (rc < 0) {
      return InternalError("regex " + pattern_ + ": matching failed at byte " +
                           std::to_string(start) + " (PCRE2: " + Pcre2Message(rc) + ")");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
    matches->emplace_back(ov[0], ov[1]);
    start = ov[1];
    if (ov[0] == ov[1]) {  // an empty match: resume after the next code point
      if (start >= n) break;
      ++start;
      while (start < n && (s[start] & 0xC0) == 0x80) ++start;
    }
  }
  return OkStatus();
}

uint64_t MatchBudget(size_t subject_bytes) {
  return kMatchStepsBase + kMatchStepsPerByte * static_cast<uint64_t>(subject_bytes);
}

}  // namespace skrull::tokenizer
